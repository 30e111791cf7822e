"""A small mesh graph network (encoder + replaceable head) and the batching of meshes into one disjoint graph.

:class:`MeshGNN` is an encoder-processor-decoder on the mesh's edges. Node features :math:`x_i` are lifted by
an MLP to :math:`h_i \\in \\mathbb R^H`; each of ``layers`` residual blocks aggregates the neighbours' states
with the mean and with three first-moment (directional) operators,

.. math::

    (S h)_i = \\tfrac{1}{|N(i)|} \\sum_{j \\in N(i)} h_j, \\qquad
    (S_d h)_i = \\tfrac{1}{|N(i)|} \\sum_{j \\in N(i)} \\frac{(p_j - p_i)_d}{\\bar\\ell} (h_j - h_i),
    \\quad d = x, y, z,

and updates :math:`h_i \\leftarrow h_i + U\\,\\sigma(V[h_i, (Sh)_i, (S_xh)_i, (S_yh)_i, (S_zh)_i])` (a first-order
mesh convolution: the mean, and a discrete gradient-like term carrying the edge geometry; :math:`\\bar\\ell` is
the mesh's mean edge length). An MLP *head* maps :math:`h_i` to the per-vertex output. The messages are
linear in the neighbours' states, so a block is one sparse product with a stacked ``(4N, N)`` operator plus
node-level dense layers, :math:`O(|E| H + |V| H^2)`, with no per-edge activation (a MeshGraphNet-style
per-edge MLP was about 3x slower on one CPU core at the claim's sizes, which decided the choice). The product
runs on CSR copies of the operator and of its transpose, built once per batch (:meth:`GraphBatch.aggregate`):
the same sums in the same order as the COO product, ~8x faster forward + backward on one CPU core.

The paper does not specify its network (the notes suggest a kNN GNN or a Transolver-like point
transformer); we use mesh edges rather than kNN because the tasks are intrinsic PDEs on the surface, whose
coupling runs along the surface (a kNN graph in space would join the two sides of a thin torus).
Pre-training trains encoder and head on a pretext target; fine-tuning keeps the encoder and, where the
output changes, puts a fresh head on it (:meth:`MeshGNN.with_new_head`).
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from geode.core import check_int
from geode.sciml.pde_pretrain.mesh import Mesh

__all__ = ["GraphBatch", "MeshGNN", "PointMLP", "collate"]


@dataclass
class GraphBatch:
    """Several meshes as one disjoint graph: node features, directed edges, and per-node bookkeeping.

    Attributes
    ----------
    x : Tensor (N, d)         node features
    operator : sparse Tensor (4N, N)  the stacked aggregation operators [S; S_x; S_y; S_z] (module docstring)
    senders, receivers : Tensor (E,) int64 directed edges j -> i (both directions of every mesh edge)
    graph : Tensor (N,) int64  which mesh each node belongs to
    mass : Tensor (N,)         lumped vertex areas (for mass-weighted errors)
    """

    x: Tensor
    operator: Tensor
    senders: Tensor
    receivers: Tensor
    graph: Tensor
    mass: Tensor

    def with_features(self, x: Any) -> GraphBatch:
        """The same graphs with new node features ``x`` of shape ``(N, d)``."""
        x = torch.as_tensor(x, dtype=self.x.dtype, device=self.x.device)
        if x.ndim != 2 or x.shape[0] != self.x.shape[0]:
            raise ValueError(f"x must have shape ({self.x.shape[0]}, d); got {tuple(x.shape)}")
        new = dataclasses.replace(self, x=x)
        if "_csr" in self.__dict__:  # same operator: share its CSR copies
            new.__dict__["_csr"] = self.__dict__["_csr"]
        return new

    def aggregate(self, h: Tensor) -> Tensor:
        """``operator @ h``, shape ``(4N, H)``: the stacked :math:`[Sh; S_xh; S_yh; S_zh]`.

        On CPU and CUDA a COO operator that needs no gradient is multiplied in CSR form, and the backward
        pass multiplies by a cached CSR transpose (the COO product transposes and coalesces the operator on
        every backward call). Both CSR copies are built on first use and reused while ``operator`` is the same
        tensor. The result equals ``torch.sparse.mm(operator, h)`` (same sums, in the same order).
        """
        op = self.operator
        if op.layout != torch.sparse_coo or op.requires_grad or op.device.type not in ("cpu", "cuda"):
            return torch.sparse.mm(op, h)
        cached = self.__dict__.get("_csr")
        if cached is None or cached[0] is not op:
            with warnings.catch_warnings():  # "sparse CSR support is in beta": we use only the product
                warnings.simplefilter("ignore", UserWarning)
                a = op if op.is_coalesced() else op.coalesce()
                cached = (op, _csr(a), _csr(a.t().coalesce()))
            self.__dict__["_csr"] = cached
        return _CSRProduct.apply(h, cached[1], cached[2])

    def to(self, device: Any) -> GraphBatch:
        """The same batch on ``device``."""
        return GraphBatch(**{k: getattr(self, k).to(device) for k in self.__dataclass_fields__})

    @property
    def n_graphs(self) -> int:
        return int(self.graph.max()) + 1 if self.graph.numel() else 0


def collate(meshes: Sequence[Mesh], features: Sequence[Any], *, dtype: torch.dtype = torch.float32) -> GraphBatch:
    """Batch meshes and their per-vertex feature arrays ``(n_i, d)`` into one :class:`GraphBatch`.

    Raises
    ------
    ValueError
        If there are no meshes (an empty data set), or the feature arrays do not match the meshes or hold a
        NaN or an infinity.
    """
    if len(meshes) == 0:
        raise ValueError("meshes is empty: a batch needs at least one mesh (is the data set empty?)")
    if len(features) != len(meshes):
        raise ValueError(f"features must have one array per mesh; got {len(features)} for {len(meshes)} meshes")
    xs, snd, rcv, rel, gid, mass = [], [], [], [], [], []
    off = 0
    d = None
    for g, (m, x) in enumerate(zip(meshes, features)):
        if not isinstance(m, Mesh):
            raise TypeError(f"meshes[{g}] must be a Mesh; got {type(m).__name__}")
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[0] != m.n_vertices or (d is not None and x.shape[1] != d):
            raise ValueError(f"features[{g}] must have shape ({m.n_vertices}, d) with the same d for all meshes")
        if not np.isfinite(x).all():
            raise ValueError(f"features[{g}] must contain only finite values (found NaN or inf)")
        d = x.shape[1]
        e = m.edges()
        s = np.concatenate([e[:, 0], e[:, 1]])
        r = np.concatenate([e[:, 1], e[:, 0]])
        xs.append(x)
        snd.append(s + off)
        rcv.append(r + off)
        d_rel = m.vertices[s] - m.vertices[r]
        rel.append(d_rel / np.linalg.norm(d_rel, axis=1).mean())  # per mesh, so batching changes nothing
        gid.append(np.full(m.n_vertices, g))
        mass.append(m.mass)
        off += m.n_vertices
    s_all, r_all, rel_all = np.concatenate(snd), np.concatenate(rcv), np.concatenate(rel)
    n = off
    inv = 1.0 / np.bincount(r_all, minlength=n)
    # [S; S_x; S_y; S_z]: (S_d h)_i = sum_j w_ij h_j - (sum_j w_ij) h_i with w_ij = rel_d / |N(i)|
    rows, cols, vals = [r_all], [s_all], [inv[r_all]]
    for k in range(3):
        w = inv[r_all] * rel_all[:, k]
        rows += [r_all + (k + 1) * n, np.arange(n) + (k + 1) * n]
        cols += [s_all, np.arange(n)]
        vals += [w, -np.bincount(r_all, weights=w, minlength=n)]
    op = torch.sparse_coo_tensor(
        torch.as_tensor(np.stack([np.concatenate(rows), np.concatenate(cols)])),
        torch.as_tensor(np.concatenate(vals), dtype=dtype),
        (4 * n, n),
        check_invariants=False,  # the indices are ours and in range; saying so silences torch's UserWarning
    ).coalesce()

    def t(a: list[np.ndarray], dt: Any = dtype) -> Tensor:
        return torch.as_tensor(np.concatenate(a), dtype=dt)

    return GraphBatch(
        x=t(xs),
        operator=op,
        senders=torch.as_tensor(s_all),
        receivers=torch.as_tensor(r_all),
        graph=t(gid, torch.int64),
        mass=t(mass),
    )


def _csr(a: Tensor) -> Tensor:
    """The coalesced COO matrix ``a`` in CSR form, with int32 indices where they fit (~15% faster on CPU)."""
    c = a.to_sparse_csr()
    if max(a.shape[0], a.shape[1], a._nnz()) < 2**31 - 1:
        c = torch.sparse_csr_tensor(c.crow_indices().int(), c.col_indices().int(), c.values(), c.shape)
    return c


class _CSRProduct(torch.autograd.Function):
    """:math:`A h` with :math:`A` and :math:`A^\\top` given as CSR tensors; the gradient flows to ``h`` only."""

    @staticmethod
    def forward(ctx: Any, h: Tensor, a: Tensor, a_t: Tensor) -> Tensor:
        ctx.a_t = a_t
        return a @ h

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None]:
        return (ctx.a_t @ grad if ctx.needs_input_grad[0] else None), None, None


class _Block(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.v = nn.Linear(5 * hidden, hidden)
        self.u = nn.Linear(hidden, hidden)
        self.act = nn.GELU()

    def forward(self, h: Tensor, g: GraphBatch) -> Tensor:
        n = h.shape[0]
        agg = g.aggregate(h).reshape(4, n, -1)
        z = torch.cat([h, *agg.unbind(0)], 1)  # unbind: one backward copy (indexing agg[k] zero-fills 4N x H 4 times)
        return h + self.u(self.act(self.v(z)))


class MeshGNN(nn.Module):
    """Encoder (lift + ``layers`` message-passing blocks) and a head, on a :class:`GraphBatch`.

    Parameters
    ----------
    in_dim : int
        Node feature size.
    out_dim : int
        Outputs per vertex.
    hidden : int
        Width H.
    layers : int
        Message-passing blocks (the receptive field in edges).
    seed : int
        Initialisation seed.

    Examples
    --------
    >>> from geode.sciml.pde_pretrain.mesh import Mesh, icosphere
    >>> m = Mesh(*icosphere(1))
    >>> g = collate([m], [m.vertices])
    >>> MeshGNN(3, 2, hidden=8, layers=2)(g).shape
    torch.Size([42, 2])
    """

    def __init__(self, in_dim: int, out_dim: int, *, hidden: int = 32, layers: int = 4, seed: int = 0) -> None:
        super().__init__()
        self.in_dim = check_int("in_dim", in_dim, low=1)
        self.out_dim = check_int("out_dim", out_dim, low=1)
        self.hidden = check_int("hidden", hidden, low=1)
        n = check_int("layers", layers, low=0)
        g = torch.random.fork_rng(devices=[])
        with g:
            torch.manual_seed(check_int("seed", seed, low=0))
            self.lift = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden))
            self.blocks = nn.ModuleList(_Block(hidden) for _ in range(n))
            self.head = self._make_head(out_dim)

    def _make_head(self, out_dim: int) -> nn.Module:
        return nn.Sequential(nn.Linear(self.hidden, self.hidden), nn.GELU(), nn.Linear(self.hidden, out_dim))

    def encode(self, g: GraphBatch) -> Tensor:
        """The node embeddings ``(N, H)``."""
        if g.x.shape[1] != self.in_dim:
            raise ValueError(f"node features have {g.x.shape[1]} columns; this network expects in_dim={self.in_dim}")
        h = self.lift(g.x)
        for blk in self.blocks:
            h = blk(h, g)
        return h

    def forward(self, g: GraphBatch) -> Tensor:
        return self.head(self.encode(g))

    def with_new_head(self, out_dim: int, *, seed: int = 0) -> MeshGNN:
        """A copy with the same encoder weights and a freshly initialised head of ``out_dim`` outputs."""
        new = copy.deepcopy(self)
        new.out_dim = check_int("out_dim", out_dim, low=1)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(check_int("seed", seed, low=0))
            new.head = new._make_head(out_dim)
        return new


class PointMLP(nn.Module):
    """The same lift and head without message passing: each vertex sees only its own features (a baseline)."""

    def __init__(self, in_dim: int, out_dim: int, *, hidden: int = 32, layers: int = 4, seed: int = 0) -> None:
        super().__init__()
        check_int("layers", layers, low=0)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(check_int("seed", seed, low=0))
            mods: list[nn.Module] = [nn.Linear(check_int("in_dim", in_dim, low=1), hidden), nn.GELU()]
            for _ in range(layers):
                mods += [nn.Linear(hidden, hidden), nn.GELU()]
            mods.append(nn.Linear(hidden, check_int("out_dim", out_dim, low=1)))
            self.net = nn.Sequential(*mods)

    def forward(self, g: GraphBatch) -> Tensor:
        return self.net(g.x)
