r"""STAC-R: saved activations of linear layers as tracked low-rank coefficients plus a sparse int8 residual.

For a wrapped linear layer :math:`y = x W^\top + b` with inputs :math:`X \in \mathbb{R}^{N \times d}`
(all tokens of the batch), the tensor autograd would keep for the weight gradient, :math:`X`, is replaced by

.. math::

    X \approx C B^\top + R, \qquad C = X B \in \mathbb{R}^{N \times r}, \qquad
    R = \operatorname{Q}_{8}\big(\operatorname{top}_{\rho}(X - C B^\top)\big),

where :math:`B \in \mathbb{R}^{d \times r}` is an orthonormal basis *tracked* across steps (warm-started
subspace iteration :math:`B \leftarrow \operatorname{qr}(X^\top X B)` every ``update_every`` calls,
initialised from the top-:math:`r` right singular vectors of the first batch), and
:math:`\operatorname{top}_\rho` keeps the ``residual_frac`` largest-magnitude entries of the residual,
stored as int32 flat indices and int8 values with one float scale (absmax / 127). The backward pass
contracts the weight gradient from the factors without rebuilding :math:`X`,

.. math::

    \nabla_W = G^\top X \approx (G^\top C) B^\top + G^\top R, \qquad \nabla_x = G W, \qquad \nabla_b = G^\top 1,

(the input gradient needs no activation). The *Saved-Surface Predictor*
:math:`\mathrm{SSP} = A_C^+ / P` is the bytes of the replaceable saved tensors (the wrapped layers'
inputs) live at the peak over the peak itself: an upper bound on the fraction of the peak that
compression can remove. The *gradient bridge*: with :math:`\varepsilon = \|G^\top (X - \hat X)\|_F /
\|G^\top X\|_F`, the weight-gradient cosine is at least :math:`\sqrt{1 - \varepsilon^2}` when
:math:`\varepsilon < 1` (the error is the only difference between the two gradients).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from geode.compression._checks import check_input
from geode.core.validation import check_int, check_real, check_tensor

__all__ = [
    "ActivationCompressor",
    "StacrLinear",
    "bridge_cosine_bound",
    "saved_bytes",
    "stacr_unwrap",
    "stacr_wrap",
]


class ActivationCompressor:
    """The per-layer state of STAC-R: a tracked orthonormal basis and the compression rule.

    Parameters
    ----------
    rank : int
        :math:`r`, at most the feature dimension.
    residual_frac : float
        Fraction :math:`\\rho \\in [0, 1]` of the residual's entries kept (int8).
    update_every : int
        Calls between two subspace-iteration updates of the basis (1: every step).
    mode : {"tracked", "untracked", "svd"}
        ``tracked`` is STAC-R; ``untracked`` draws a fresh random orthonormal basis every call (the paper's
        control); ``svd`` takes the exact top-``rank`` right singular vectors of every batch (the per-step
        SVD control; the basis is then stored per step).
    seed : int
        Seeds the random bases (``untracked``).
    """

    def __init__(
        self,
        rank: int,
        residual_frac: float = 0.01,
        *,
        update_every: int = 1,
        mode: str = "tracked",
        seed: int = 0,
    ) -> None:
        self.rank = check_int("rank", rank, low=1)
        self.residual_frac = check_real("residual_frac", residual_frac, low=0.0, high=1.0)
        self.update_every = check_int("update_every", update_every, low=1)
        if mode not in ("tracked", "untracked", "svd"):
            raise ValueError(f"mode must be 'tracked', 'untracked' or 'svd'; got {mode!r}")
        self.mode = mode
        self.basis: torch.Tensor | None = None
        self.calls = 0
        self.track = True
        self._gen = torch.Generator().manual_seed(int(seed))

    def _update_basis(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[1]
        if self.rank > d:
            raise ValueError(f"rank {self.rank} exceeds the feature dimension {d}")
        if self.mode == "untracked":
            q, _ = torch.linalg.qr(torch.randn(d, self.rank, generator=self._gen).to(x.dtype))
            return q
        if self.mode == "svd" or self.basis is None:
            _, _, vh = torch.linalg.svd(x.detach(), full_matrices=False)
            b = vh[: self.rank].T.contiguous()
            if self.mode == "tracked":
                if b.shape[1] < self.rank:  # fewer rows than the rank (a small first batch, an MoE expert's few
                    # tokens): complete the basis with random orthogonal directions, which the tracking refines
                    extra = torch.randn(d, self.rank - b.shape[1], generator=self._gen).to(x.dtype)
                    b, _ = torch.linalg.qr(torch.cat([b, extra], 1))
                self.basis = b
            return b
        if self.track and self.calls % self.update_every == 0:
            q, _ = torch.linalg.qr(x.detach().T @ (x.detach() @ self.basis))
            self.basis = q
        return self.basis

    @torch.no_grad()
    def compress(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(C, B, idx, q, scale)`` of a 2-D input ``x`` (N, d).

        Runs at every training forward: the type and shape of ``x`` are checked, its values are not; a NaN or inf
        propagates, except where it reaches the SVD of the basis, which then raises a ``ValueError`` naming ``x``.
        """
        check_tensor("x", x, ndim=2, finite=False, nonempty=False, floating=True)
        try:
            b = self._update_basis(x)
        except torch.linalg.LinAlgError as exc:
            raise ValueError(f"x must be finite: the SVD of the activations failed ({exc})") from None
        if self.track:
            self.calls += 1
        c = x @ b
        r = x - c @ b.T
        k = int(math.ceil(self.residual_frac * r.numel())) if self.residual_frac > 0 else 0
        if k:
            vals, idx = torch.topk(r.reshape(-1).abs(), k, sorted=False)
            v = r.reshape(-1)[idx]
            scale = (v.abs().max() / 127.0).clamp_min(1e-12).reshape(1)
            q = torch.round(v / scale).clamp(-127, 127).to(torch.int8)
            idx = idx.to(torch.int32)
        else:
            idx = torch.zeros(0, dtype=torch.int32)
            q = torch.zeros(0, dtype=torch.int8)
            scale = torch.ones(1, dtype=x.dtype)
        return c, b, idx, q, scale

    @staticmethod
    def decompress(c: torch.Tensor, b: torch.Tensor, idx: torch.Tensor, q: torch.Tensor, scale: torch.Tensor) -> Any:
        """:math:`\\hat X = C B^\\top + R` (for tests and the bridge; the backward pass never builds it)."""
        x = c @ b.T
        x.view(-1).index_add_(0, idx.long(), q.to(x.dtype) * scale)
        return x


class _StacrLinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: Any, comp: ActivationCompressor) -> Any:
        x2 = x.reshape(-1, x.shape[-1])
        c, b, idx, q, scale = comp.compress(x2)
        ctx.save_for_backward(weight, c, b, idx, q, scale)
        ctx.has_bias = bias is not None
        ctx.in_shape = x.shape
        return nn.functional.linear(x, weight, bias)

    @staticmethod
    def backward(ctx: Any, gy: torch.Tensor) -> Any:
        weight, c, b, idx, q, scale = ctx.saved_tensors
        g = gy.reshape(-1, gy.shape[-1])
        gx = (g @ weight).reshape(ctx.in_shape) if ctx.needs_input_grad[0] else None
        gw = None
        if ctx.needs_input_grad[1]:
            gw = (g.T @ c) @ b.T  # (G^T C) B^T
            if idx.numel():
                d = b.shape[0]
                rows, cols = idx.long() // d, idx.long() % d
                vals = q.to(g.dtype) * scale
                gw.index_add_(1, cols, g[rows].T * vals)  # G^T R, R sparse
        gb = g.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return gx, gw, gb, None


class StacrLinear(nn.Module):
    """Wraps an ``nn.Linear`` (or a Hugging Face ``Conv1D``) so that its saved input is STAC-R-compressed.

    ``enabled=False`` runs the wrapped layer unchanged (exact gradients), for fidelity checks. The forward checks
    its input's type and shape, not its values (it runs at every step): NaN propagates like torch's own layers,
    except into the compressor's SVD (a ``ValueError`` naming ``x``); an empty batch gives an empty output.
    """

    def __init__(self, layer: nn.Module, compressor: ActivationCompressor) -> None:
        super().__init__()
        if isinstance(layer, nn.Linear):
            self.transposed = False
        elif type(layer).__name__ == "Conv1D" and hasattr(layer, "nf"):
            self.transposed = True  # HF Conv1D: y = x @ W + b with W (n_in, n_out)
        else:
            raise TypeError(f"layer must be an nn.Linear or a transformers Conv1D; got {type(layer).__name__}")
        if not isinstance(compressor, ActivationCompressor):
            raise TypeError(f"compressor must be an ActivationCompressor; got {type(compressor).__name__}")
        self.layer = layer
        self.compressor = compressor
        self.enabled = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input("x", x, self.layer.weight.shape[0] if self.transposed else self.layer.in_features)
        if not self.enabled or not torch.is_grad_enabled():
            return self.layer(x)
        w = self.layer.weight.T if self.transposed else self.layer.weight
        return _StacrLinearFn.apply(x, w, self.layer.bias, self.compressor)


def stacr_wrap(
    model: nn.Module,
    *,
    rank: int = 32,
    residual_frac: float = 0.01,
    update_every: int = 1,
    mode: str = "tracked",
    targets: Callable[[str, nn.Module], bool] | None = None,
    seed: int = 0,
) -> list[str]:
    """Wrap the linear layers of ``model`` in place (default: every ``nn.Linear``/``Conv1D`` but ``lm_head``).

    ``rank`` must not exceed any wrapped layer's input dimension (``ValueError`` naming ``rank``).
    Returns the wrapped layers' names.
    """
    check_int("rank", rank, low=1)
    chosen = []
    for name, mod in model.named_modules():
        is_lin = isinstance(mod, nn.Linear) or (type(mod).__name__ == "Conv1D" and hasattr(mod, "nf"))
        if not is_lin or "lm_head" in name or isinstance(mod, StacrLinear):
            continue
        if targets is not None and not targets(name, mod):
            continue
        n_in = mod.in_features if isinstance(mod, nn.Linear) else mod.weight.shape[0]
        if rank > n_in:
            raise ValueError(f"rank {rank} exceeds the input dimension {n_in} of {name}")
        chosen.append(name)
    if not chosen:
        raise ValueError("stacr_wrap: no linear layer to wrap")
    for i, name in enumerate(chosen):
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        comp = ActivationCompressor(rank, residual_frac, update_every=update_every, mode=mode, seed=seed * 1000 + i)
        setattr(parent, child, StacrLinear(getattr(parent, child), comp))
    return chosen


def stacr_unwrap(model: nn.Module) -> None:
    """Undo :func:`stacr_wrap` in place."""
    for name, mod in list(model.named_modules()):
        if isinstance(mod, StacrLinear):
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, mod.layer)


@contextmanager
def saved_bytes(exclude: Sequence[torch.Tensor] = ()) -> Iterator[dict[str, int]]:
    """Count the bytes autograd saves for backward inside the block (unique storages; ``exclude`` e.g. parameters).

    Yields a dict whose ``"bytes"`` is filled in as the block runs (``torch.autograd.graph.saved_tensors_hooks``).
    ``exclude``'s tensors are matched by storage, so their values (and shapes) do not matter; empty excludes nothing.
    """
    ok = not isinstance(exclude, (torch.Tensor, str)) and hasattr(exclude, "__iter__")
    exclude = list(exclude) if ok else []
    if not ok or not all(isinstance(t, torch.Tensor) for t in exclude):
        raise TypeError("exclude must be a sequence of tensors (e.g. list(model.parameters()))")
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen: set[int] = set()
    out = {"bytes": 0, "tensors": 0}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        key = st.data_ptr()
        if key not in skip and key not in seen:
            seen.add(key)
            out["bytes"] += st.nbytes()
            out["tensors"] += 1
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield out


def bridge_cosine_bound(g: torch.Tensor, x: torch.Tensor, x_hat: torch.Tensor) -> float:
    """The gradient bridge: a lower bound on the cosine between :math:`G^\\top X` and :math:`G^\\top \\hat X`,

    .. math:: \\sqrt{1 - \\varepsilon^2}, \\qquad
        \\varepsilon = \\|G^\\top (X - \\hat X)\\|_F / \\|G^\\top X\\|_F ,

    and 0 when :math:`\\varepsilon \\ge 1`. ``g`` is ``(N, d_out)``, ``x`` and ``x_hat`` are ``(N, d_in)``.
    """
    check_tensor("g", g, ndim=2, floating=True)
    check_tensor("x", x, ndim=2, floating=True)
    check_tensor("x_hat", x_hat, shape=tuple(x.shape), floating=True)
    if g.shape[0] != x.shape[0]:
        raise ValueError(f"g and x must have one row per sample; got {g.shape[0]} and {x.shape[0]}")
    exact = g.T @ x
    eps = float((g.T @ (x - x_hat)).norm() / exact.norm().clamp_min(1e-30))
    return math.sqrt(1.0 - eps**2) if eps < 1 else 0.0
