r"""SaMA: the generalised-Kronecker (perfect-shuffle, relaxed shared blocks) adapter, and Jacobian nullity.

Kronecker products factor through the perfect shuffle. For :math:`A \in \mathbb{R}^{d \times p}`,
:math:`B \in \mathbb{R}^{c \times b}`,

.. math::

    A \otimes B = (A \otimes I_c)(I_p \otimes B)
                = S_{out}^\top \operatorname{blockdiag}(A, \dots, A)\, S\, \operatorname{blockdiag}(B, \dots, B),

with :math:`p` copies of :math:`B` on the input blocks, :math:`c` copies of :math:`A`, and :math:`S` the
stride permutation that turns the index :math:`(j, i)` into :math:`(i, j)`. SaMA relaxes the sharing:
every copy gets its own weights, and every block carries an inner width :math:`k`,

.. math::

    \Delta W = s\, S_{out}^\top \operatorname{blockdiag}(L_1, \dots, L_c)\, S\,
               \operatorname{blockdiag}(R_1, \dots, R_p),
    \qquad R_j \in \mathbb{R}^{ck \times b},\ L_i \in \mathbb{R}^{d \times pk},

for a weight of shape :math:`(m, n) = (dc, pb)`; entrywise
:math:`\Delta W_{o c + i,\, j b + \beta} = s \sum_{t<k} L_i[o, (j, t)]\, R_j[(i, t), \beta]`.

- Shared blocks (all :math:`L_i` equal, all :math:`R_j` equal) give :math:`\sum_{t<k} A_t \otimes B_t`
  (LoKr/KronA; one Kronecker product for :math:`k = 1`).
- :math:`p = c = 1` gives LoRA of rank :math:`k`.
- Trainable parameters: :math:`k(cn + pm)` (relaxed) or :math:`k(cb + dp)` (shared); the rank of
  :math:`\Delta W` is at most :math:`\min(m, n, pck)`: at :math:`m = n`, :math:`p = c` and the budget of
  LoRA of rank :math:`r = kp`, SaMA reaches rank :math:`kp^2 = rp` (quadratic in the budget, LoRA linear).
- Invariances: each of the :math:`pc` pairs :math:`(i, j)` contributes the rank-:math:`k` product
  :math:`L_i[:, (j, \cdot)]\, R_j[(i, \cdot), :]`, so :math:`GL(k)` acts on each pair and the generic
  nullity of the Jacobian :math:`\partial \operatorname{vec}\Delta W / \partial \theta` is :math:`pck^2`
  (:func:`sama_nullity_theory`); for :math:`k = 1` this is the diagonal group :math:`(\mathbb{R}^*)^{pc}`,
  against LoRA's :math:`GL(r)`, :math:`r^2`.

Inferred details (no code or equations of the paper were available; see the package docstring): the
block layout above (input blocks contiguous, output blocks interleaved with stride :math:`c`, as the
Kronecker ordering demands), the inner width :math:`k` as the budget dial, initialisation (:math:`R`
uniform with bound :math:`1/\sqrt{b}`, :math:`L = 0`, so the wrapped layer starts as the base layer),
scaling :math:`s = \alpha / k`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from geode.adapters.lora import AdapterLinear, inject_adapters
from geode.core.validation import check_int, check_positive, check_real, check_tensor

__all__ = [
    "SaMAConfig",
    "SaMALinear",
    "effective_rank",
    "inject_sama",
    "jacobian_nullity",
    "lora_nullity_theory",
    "sama_delta",
    "sama_nullity_theory",
]


def sama_delta(left: torch.Tensor, right: torch.Tensor, scaling: float = 1.0) -> torch.Tensor:
    r"""The SaMA update ΔW from its blocks.

    Parameters
    ----------
    left : tensor, shape (c, d, p, k) or (d, p, k) (shared)
        :math:`L_i[o, (j, t)]`.
    right : tensor, shape (p, c, k, b) or (c, k, b) (shared)
        :math:`R_j[(i, t), \beta]`.
    scaling : float
        A finite number.

    Returns
    -------
    tensor, shape (d c, p b)

    Raises
    ------
    TypeError, ValueError
        ``left`` or ``right`` not a finite, non-empty tensor of the layouts above, block sizes that do not agree,
        or a non-finite ``scaling``.
    """
    check_tensor("left", left, finite=False, nonempty=False)
    check_tensor("right", right, finite=False, nonempty=False)
    if left.ndim not in (3, 4):
        raise ValueError(f"left must have 3 (shared) or 4 dimensions; got shape {tuple(left.shape)}")
    if right.ndim != left.ndim:
        raise ValueError(
            f"right must have {left.ndim} dimensions like left ({'shared' if left.ndim == 3 else 'relaxed'} blocks);"
            f" got shape {tuple(right.shape)}"
        )
    lt, rt = tuple(left.shape), tuple(right.shape)
    if left.ndim == 4 and (lt[0], lt[2], lt[3]) != (rt[1], rt[0], rt[2]):
        raise ValueError(
            f"right must have shape (p, c, k, b) = ({lt[2]}, {lt[0]}, {lt[3]}, *) for left {lt}; got {rt}"
        )
    if left.ndim == 3 and lt[2] != rt[1]:
        raise ValueError(f"right must have shape (c, k, b) with k = {lt[2]} for left {lt}; got {rt}")
    check_tensor("left", left)
    check_tensor("right", right)
    return _sama_delta(left, right, check_real("scaling", scaling))


def _sama_delta(left: torch.Tensor, right: torch.Tensor, scaling: float) -> torch.Tensor:
    """:func:`sama_delta` without the checks (the layer's own blocks)."""
    if left.dim() == 3:
        dw = torch.einsum("ojt,itb->oijb", left, right)
    elif left.dim() == 4:
        dw = torch.einsum("iojt,jitb->oijb", left, right)
    else:
        raise ValueError(f"left must have 3 (shared) or 4 dimensions; got shape {tuple(left.shape)}")
    d, c, p, b = dw.shape
    return scaling * dw.reshape(d * c, p * b)


class SaMALinear(AdapterLinear):
    r"""SaMA around a frozen ``nn.Linear`` (see the module docstring for the math).

    Parameters
    ----------
    base : nn.Linear
        The frozen layer, weight of shape (out, in) = (m, n).
    blocks_in : int
        :math:`p`, the number of input blocks; must divide ``in_features``.
    blocks_out : int
        :math:`c`, the number of (interleaved) output blocks; must divide ``out_features``.
    rank : int
        :math:`k`, the inner width of every block pair (default 1).
    alpha : float, optional
        Scaling :math:`s = \alpha / k` (default ``alpha = k``, ``s = 1``).
    shared : bool
        Share the blocks (the Kronecker/LoKr limit :math:`\sum_t A_t \otimes B_t`).
    generator : torch.Generator, optional
        Random source of :math:`R`'s initialisation.

    Attributes
    ----------
    sama_L : nn.Parameter, shape (c, d, p, k) or (d, p, k)
    sama_R : nn.Parameter, shape (p, c, k, b) or (c, k, b)
    """

    def __init__(
        self,
        base: nn.Linear,
        blocks_in: int,
        blocks_out: int,
        rank: int = 1,
        alpha: float | None = None,
        *,
        shared: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__(base)
        p = check_int("blocks_in", blocks_in)
        c = check_int("blocks_out", blocks_out)
        k = check_int("rank", rank)
        m, n = base.out_features, base.in_features
        if p < 1 or n % p:
            raise ValueError(f"blocks_in must be a positive divisor of in_features={n}; got {p}")
        if c < 1 or m % c:
            raise ValueError(f"blocks_out must be a positive divisor of out_features={m}; got {c}")
        if k < 1:
            raise ValueError(f"rank must be >= 1; got {k}")
        self.p, self.c, self.k, self.shared = p, c, k, bool(shared)
        self.d, self.b = m // c, n // p
        self.alpha = float(k) if alpha is None else check_positive("alpha", alpha)
        self.scaling = self.alpha / k
        w = base.weight
        rshape = (c, k, self.b) if self.shared else (p, c, k, self.b)
        lshape = (self.d, p, k) if self.shared else (c, self.d, p, k)
        r = torch.empty(rshape, dtype=w.dtype, device=w.device)
        bound = 1.0 / math.sqrt(self.b)
        r.uniform_(-bound, bound, generator=generator)
        self.sama_R = nn.Parameter(r)
        self.sama_L = nn.Parameter(torch.zeros(lshape, dtype=w.dtype, device=w.device))

    @property
    def max_rank(self) -> int:
        """The largest rank :math:`\\Delta W` can reach: ``min(m, n, p c k)``."""
        return min(self.out_features, self.in_features, self.p * self.c * self.k)

    def delta_weight(self) -> torch.Tensor:
        return _sama_delta(self.sama_L, self.sama_R, self.scaling)

    def adapter_output(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        xb = x.reshape(-1, self.p, self.b)  # input blocks j
        if self.shared:
            h = torch.einsum("njb,itb->nijt", xb, self.sama_R)
            y = torch.einsum("nijt,ojt->noi", h, self.sama_L)
        else:
            h = torch.einsum("njb,jitb->nijt", xb, self.sama_R)  # blockdiag(R) then the shuffle
            y = torch.einsum("nijt,iojt->noi", h, self.sama_L)
        return self.scaling * y.reshape(*lead, self.out_features)

    def lora_factors(self) -> tuple[torch.Tensor, torch.Tensor, float]:
        r"""The exact LoRA form of rank :math:`pck`: :math:`\Delta W = s B A` (for PEFT export).

        :math:`A = S\,\operatorname{blockdiag}(R)` of shape (pck, n), :math:`B = S_{out}^\top
        \operatorname{blockdiag}(L)` of shape (m, pck), inner index :math:`(j, i, t)`.
        """
        p, c, k, d, b = self.p, self.c, self.k, self.d, self.b
        eye_p = torch.eye(p, dtype=self.sama_R.dtype, device=self.sama_R.device)
        eye_c = torch.eye(c, dtype=self.sama_R.dtype, device=self.sama_R.device)
        rr = self.sama_R.expand(p, c, k, b) if self.shared else self.sama_R
        ll = self.sama_L.expand(c, d, p, k) if self.shared else self.sama_L
        a = torch.einsum("jitb,jJ->jitJb", rr, eye_p).reshape(p * c * k, p * b)
        bmat = torch.einsum("iojt,iI->oIjit", ll, eye_c).reshape(d * c, p * c * k)
        return a, bmat, self.scaling

    def extra_repr(self) -> str:
        return (
            f"{super().extra_repr()}, blocks_in={self.p}, blocks_out={self.c}, rank={self.k}, "
            f"shared={self.shared}, scaling={self.scaling:g}"
        )


@dataclass
class SaMAConfig:
    """PEFT-style configuration of SaMA: which linear layers, and the block layout.

    ``blocks_in``/``blocks_out`` are used as given when they divide the layer, else the largest divisor of
    the layer's dimension not above them (so one config fits layers of several shapes). The fields are checked
    when the config is made: ``target_modules`` a regular expression or a non-empty list of names,
    ``blocks_in``, ``blocks_out``, ``rank`` integers >= 1, ``alpha`` None or a finite number > 0.
    """

    target_modules: str | Sequence[str] = field(default_factory=lambda: ("q_proj", "v_proj"))
    blocks_in: int = 8
    blocks_out: int = 8
    rank: int = 1
    alpha: float | None = None
    shared: bool = False

    def __post_init__(self) -> None:
        t = self.target_modules
        if isinstance(t, str):
            if not t:
                raise ValueError("target_modules must be a regular expression or a non-empty list of names; got ''")
        else:
            try:
                names = list(t)
            except TypeError:
                raise TypeError(
                    f"target_modules must be a regular expression or a list of names; got {type(t).__name__}"
                ) from None
            if not names or not all(isinstance(n, str) and n for n in names):
                raise ValueError(
                    f"target_modules must be a regular expression or a non-empty list of names; got {t!r}"
                )
        check_int("blocks_in", self.blocks_in, low=1)
        check_int("blocks_out", self.blocks_out, low=1)
        check_int("rank", self.rank, low=1)
        if self.alpha is not None:
            check_positive("alpha", self.alpha)


def _divisor_at_most(n: int, q: int) -> int:
    return max(v for v in range(1, min(n, q) + 1) if n % v == 0)


def inject_sama(model: nn.Module, config: SaMAConfig, *, seed: int = 0) -> list[str]:
    """Wrap the linear layers of ``model`` named by ``config.target_modules`` with :class:`SaMALinear`."""
    if not isinstance(config, SaMAConfig):
        raise TypeError(f"config must be a SaMAConfig; got {type(config).__name__}")
    g = torch.Generator().manual_seed(seed)

    def factory(lin: nn.Linear) -> SaMALinear:
        return SaMALinear(
            lin,
            _divisor_at_most(lin.in_features, config.blocks_in),
            _divisor_at_most(lin.out_features, config.blocks_out),
            config.rank,
            config.alpha,
            shared=config.shared,
            generator=g,
        )

    return inject_adapters(model, config.target_modules, factory)


def effective_rank(w: torch.Tensor) -> float:
    r"""Roy-Vetterli effective rank of a matrix: the exponential of the entropy of its normalised singular values.

    :math:`\exp(-\sum_i \bar\sigma_i \log \bar\sigma_i)`.

    :math:`\bar\sigma = \sigma / \sum_i \sigma_i`, the normalised singular values of ``w``, a finite, non-empty
    matrix (0 for the zero matrix).
    """
    check_tensor("w", w, ndim=2)
    s = torch.linalg.svdvals(w.detach().double())
    if float(s.sum()) <= 0:
        return 0.0
    q = s / s.sum()
    q = q[q > 0]
    return float(torch.exp(-(q * q.log()).sum()))


def jacobian_nullity(adapter: AdapterLinear, *, tol: float = 1e-8) -> int:
    r"""Number of flat directions of an adapter: the nullity of the Jacobian of ΔW in its parameters.

    Dimension of the kernel of :math:`\partial \operatorname{vec}\Delta W / \partial \theta` at the adapter's
    current parameters (float64, relative singular-value tolerance ``tol``, a finite number > 0). Meant for small
    layers."""
    if not isinstance(adapter, AdapterLinear):
        raise TypeError(
            f"adapter must be an AdapterLinear (e.g. SaMALinear, LoRALinear); got {type(adapter).__name__}"
        )
    tol = check_positive("tol", tol)
    names = [n for n, p in adapter.named_parameters() if p.requires_grad]
    params = tuple(p.detach().double() for n, p in adapter.named_parameters() if p.requires_grad)

    def f(*ps: torch.Tensor) -> torch.Tensor:
        saved = {n: getattr(adapter, n) for n in names}
        try:
            for n, v in zip(names, ps):
                adapter._parameters[n] = v  # type: ignore[assignment]
            return adapter.delta_weight().reshape(-1)
        finally:
            for n, v in saved.items():
                adapter._parameters[n] = v

    jac = torch.autograd.functional.jacobian(f, params)
    j = torch.cat([t.reshape(t.shape[0], -1) for t in jac], dim=1)
    s = torch.linalg.svdvals(j)
    rank = int((s > tol * s.max()).sum()) if s.numel() else 0
    return j.shape[1] - rank


def sama_nullity_theory(blocks_in: int, blocks_out: int, rank: int, d: int, b: int) -> int:
    r"""Generic Jacobian nullity of relaxed SaMA: p·c·k² (GL(k) per block pair), when k ≤ min(d, b).

    :math:`k = 1` gives the diagonal group. All arguments are integers >= 1."""
    for name, v in (("blocks_in", blocks_in), ("blocks_out", blocks_out), ("rank", rank), ("d", d), ("b", b)):
        check_int(name, v, low=1)
    if rank > min(d, b):
        raise ValueError(f"rank must be <= min(d, b) = {min(d, b)} for the generic formula; got {rank}")
    return blocks_in * blocks_out * rank * rank


def lora_nullity_theory(r: int, m: int, n: int) -> int:
    r"""Generic Jacobian nullity of LoRA: r² (the GL(r) gauge), when r ≤ min(m, n) (all integers >= 1)."""
    for name, v in (("r", r), ("m", m), ("n", n)):
        check_int(name, v, low=1)
    if r > min(m, n):
        raise ValueError(f"r must be <= min(m, n) = {min(m, n)}; got {r}")
    return r * r
