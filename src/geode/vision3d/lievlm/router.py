"""Lie routing of visual semantics by 3D geometry (LieVLM), and the fusion baselines it is compared with.

The LieVLM block, for a visual token ``v`` (d_vis) and its geometry token ``g`` (d_geo):

1. *Lie states*: ``h = MLP(g)``; latent rotation states in the Lie algebra, one per triplet,
   ``w_m = sum_e a_e(h) A_{e,m}`` with learnable so(3) generators ``A`` (E x M x 3) and coefficients
   ``a = W_a h``; routing coefficients ``rho = sigmoid(W_rho h)`` in (0, 1)^M.
2. *Triplet-wise group action*: the projected semantics ``z = P v`` (M triplets of R^3) are routed by
   ``z'_m = rho_m exp([w_m]_x) z_m + (1 - rho_m) z_m`` (Rodrigues' formula for ``exp``).
3. *Routed fusion* of three paths with gates ``gamma = softmax(MLP([v, g]))`` (3 per token):
   ``out = v + W_o (gamma_sem v + gamma_3d W_g g + gamma_lie W_b z')``, ``W_o`` zero-initialised, so the block is
   the identity at initialisation (the pretrained semantics are preserved).
"""

from __future__ import annotations

import torch
from torch import nn

from geode.core.validation import check_tensor

__all__ = ["AdditiveFusion", "ConcatFusion", "LieRouter", "MLPFusion", "so3_exp", "so3_hat"]


def so3_hat(w: torch.Tensor) -> torch.Tensor:
    """The skew-symmetric matrix ``[w]_x`` of rotation vectors ``w`` (..., 3) -> (..., 3, 3).

    An empty batch gives an empty output; values are not checked (NaN propagates like torch's own layers).
    """
    check_tensor("w", w, finite=False, nonempty=False)
    if w.ndim == 0 or w.shape[-1] != 3:
        raise ValueError(f"w must have a last dimension of 3; got shape {tuple(w.shape)}")
    z = torch.zeros_like(w[..., 0])
    return torch.stack(
        [
            torch.stack([z, -w[..., 2], w[..., 1]], -1),
            torch.stack([w[..., 2], z, -w[..., 0]], -1),
            torch.stack([-w[..., 1], w[..., 0], z], -1),
        ],
        -2,
    )


def so3_exp(w: torch.Tensor) -> torch.Tensor:
    """The exponential map so(3) -> SO(3) (Rodrigues), batched and differentiable, exact at ``w = 0``.

    ``exp([w]_x) = I + A(t) [w]_x + B(t) [w]_x^2`` with ``t = |w|``, ``A = sin t / t``, ``B = (1 - cos t) / t^2``,
    both evaluated by their Taylor series for ``t < 1e-3`` so the gradient is finite at the identity.
    An empty batch gives an empty output; values are not checked (NaN propagates like torch's own layers).
    """
    K = so3_hat(w)
    t2 = (w * w).sum(-1)
    small = t2 < 1e-6
    t2s = torch.where(small, torch.ones_like(t2), t2)
    ts = torch.sqrt(t2s)
    a = torch.where(small, 1 - t2 / 6 + t2 * t2 / 120, torch.sin(ts) / ts)
    b = torch.where(small, 0.5 - t2 / 24 + t2 * t2 / 720, (1 - torch.cos(ts)) / t2s)
    eye = torch.eye(3, dtype=w.dtype, device=w.device).expand(K.shape)
    return eye + a[..., None, None] * K + b[..., None, None] * (K @ K)


def _mlp(d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, d_out)
    )


def _check_dims(**dims: int) -> None:
    for k, v in dims.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{k} must be an int >= 1; got {v!r}")


def _check_inputs(v: torch.Tensor, g: torch.Tensor, d_vis: int, d_geo: int) -> None:
    # per-step forwards: types and shapes only, no scan of the values (NaN propagates like torch's own layers)
    check_tensor("v", v, finite=False, nonempty=False)
    check_tensor("g", g, finite=False, nonempty=False)
    if v.shape[-1] != d_vis:
        raise ValueError(f"v must have last dimension d_vis={d_vis}; got shape {tuple(v.shape)}")
    if g.shape[-1] != d_geo:
        raise ValueError(f"g must have last dimension d_geo={d_geo}; got shape {tuple(g.shape)}")
    if v.shape[:-1] != g.shape[:-1]:
        raise ValueError(
            f"v and g must share their leading (token) dimensions; got {tuple(v.shape)}, {tuple(g.shape)}"
        )


class LieRouter(nn.Module):
    """Geometry-conditioned Lie routing of visual tokens (the LieVLM block).

    Its forward checks the types and shapes of ``v`` and ``g``, not their values: NaN propagates like torch's own
    layers.

    Parameters
    ----------
    d_vis : int
        Width of the visual (2D semantic) tokens.
    d_geo : int
        Width of the geometry tokens (camera pose encoding, point position, ...).
    n_triplets : int
        M, the number of 3-vectors the semantics are projected to (``P: d_vis -> 3M``).
    n_generators : int
        E, the number of learnable so(3) generators per triplet whose combination is the rotation state.
    hidden : int
        Width of the geometry and gate MLPs.
    routed : bool
        False disables the group action (``z' = z``): the ablation "without Lie routing", same parameters.

    Shapes: ``v`` (..., d_vis), ``g`` (..., d_geo) -> (..., d_vis).

    Examples
    --------
    >>> import torch
    >>> block = LieRouter(d_vis=24, d_geo=7, n_triplets=8)
    >>> v, g = torch.randn(2, 5, 24), torch.randn(2, 5, 7)
    >>> torch.equal(block(v, g), v)  # W_o is zero at initialisation
    True
    """

    def __init__(
        self, d_vis: int, d_geo: int, n_triplets: int = 8, n_generators: int = 4, hidden: int = 64, routed: bool = True
    ) -> None:
        super().__init__()
        _check_dims(d_vis=d_vis, d_geo=d_geo, n_triplets=n_triplets, n_generators=n_generators, hidden=hidden)
        self.d_vis, self.d_geo, self.M, self.E = d_vis, d_geo, n_triplets, n_generators
        self.routed = bool(routed)
        self.geo = _mlp(d_geo, hidden, hidden)
        self.coef = nn.Linear(hidden, n_generators)  # a_e(h): coefficients on the generators
        self.generators = nn.Parameter(0.5 * torch.randn(n_generators, n_triplets, 3))  # A
        self.route = nn.Linear(hidden, n_triplets)  # rho_m = sigmoid(.)
        self.proj = nn.Linear(d_vis, 3 * n_triplets, bias=False)  # P
        self.back = nn.Linear(3 * n_triplets, d_vis)  # W_b
        self.ctx = nn.Linear(d_geo, d_vis)  # W_g: the direct 3D context path
        self.gate = _mlp(d_vis + d_geo, hidden, 3)
        self.out = nn.Linear(d_vis, d_vis)  # W_o, zero-initialised
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def lie_states(self, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotation states ``w`` (..., M, 3) in so(3) and routing coefficients ``rho`` (..., M) of geometry ``g``."""
        h = self.geo(g)
        w = torch.einsum("...e,emk->...mk", self.coef(h), self.generators)
        return w, torch.sigmoid(self.route(h))

    def act(self, v: torch.Tensor, w: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
        """The routed projected semantics ``z'`` (..., M, 3) of ``v`` under states ``w`` and coefficients ``rho``."""
        z = self.proj(v).unflatten(-1, (self.M, 3))
        if not self.routed:
            return z
        zr = (so3_exp(w) @ z.unsqueeze(-1)).squeeze(-1)
        return rho.unsqueeze(-1) * zr + (1 - rho.unsqueeze(-1)) * z

    def forward(self, v: torch.Tensor, g: torch.Tensor, return_states: bool = False):
        _check_inputs(v, g, self.d_vis, self.d_geo)
        w, rho = self.lie_states(g)
        z = self.act(v, w, rho)
        gam = torch.softmax(self.gate(torch.cat([v, g], -1)), -1)
        mixed = gam[..., 0:1] * v + gam[..., 1:2] * self.ctx(g) + gam[..., 2:3] * self.back(z.flatten(-2))
        out = v + self.out(mixed)
        if return_states:
            return out, {"w": w, "rho": rho, "gates": gam}
        return out


class AdditiveFusion(nn.Module):
    """Additive geometry fusion (VG-LLM style): ``out = v + W_o MLP(g)``, ``W_o`` zero-initialised.

    Its forward checks the types and shapes of ``v`` and ``g``, not their values: NaN propagates like torch's own
    layers.
    """

    def __init__(self, d_vis: int, d_geo: int, hidden: int = 64) -> None:
        super().__init__()
        _check_dims(d_vis=d_vis, d_geo=d_geo, hidden=hidden)
        self.d_vis, self.d_geo = d_vis, d_geo
        self.geo = _mlp(d_geo, hidden, hidden)
        self.out = nn.Linear(hidden, d_vis)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        _check_inputs(v, g, self.d_vis, self.d_geo)
        return v + self.out(self.geo(g))


class MLPFusion(nn.Module):
    """Channel-concatenation fusion through an MLP: ``out = v + W_o MLP([v, g])`` (a generic nonlinear fuser).

    Its forward checks the types and shapes of ``v`` and ``g``, not their values: NaN propagates like torch's own
    layers.
    """

    def __init__(self, d_vis: int, d_geo: int, hidden: int = 64) -> None:
        super().__init__()
        _check_dims(d_vis=d_vis, d_geo=d_geo, hidden=hidden)
        self.d_vis, self.d_geo = d_vis, d_geo
        self.net = _mlp(d_vis + d_geo, hidden, hidden)
        self.out = nn.Linear(hidden, d_vis)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        _check_inputs(v, g, self.d_vis, self.d_geo)
        return v + self.out(self.net(torch.cat([v, g], -1)))


class ConcatFusion(nn.Module):
    """Geometry as additional tokens: the sequence ``[v_1..v_n, W g_1..W g_n]`` (n -> 2n tokens) for the LM.

    Its forward checks the types and shapes of ``v`` and ``g``, not their values: NaN propagates like torch's own
    layers.
    """

    def __init__(self, d_vis: int, d_geo: int, hidden: int = 64) -> None:
        super().__init__()
        _check_dims(d_vis=d_vis, d_geo=d_geo, hidden=hidden)
        self.d_vis, self.d_geo = d_vis, d_geo
        self.geo = _mlp(d_geo, hidden, d_vis)

    def forward(self, v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        _check_inputs(v, g, self.d_vis, self.d_geo)
        if v.dim() < 2:
            raise ValueError(f"ConcatFusion needs a token dimension: v of shape (..., n, d_vis); got {tuple(v.shape)}")
        return torch.cat([v, self.geo(g)], -2)
