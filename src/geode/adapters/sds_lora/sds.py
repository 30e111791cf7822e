r"""SDS-LoRA: LoRA's forward, with a backward that goes through orthonormal bases of B and Aᵀ only.

Let :math:`\Delta W = s B A` (:math:`B \in \mathbb{R}^{m \times r}`, :math:`A \in \mathbb{R}^{r \times n}`) and
let :math:`G = \partial \mathcal{L} / \partial W` be the full fine-tuning gradient. LoRA's gradients are

.. math::

    \nabla_A = s B^\top G = s R_B^\top Q_B^\top G, \qquad \nabla_B = s G A^\top = s G Q_A R_A,

with the thin QR decompositions :math:`B = Q_B R_B` and :math:`A^\top = Q_A R_A`: the singular values of
:math:`B` (of :math:`A`) rescale :math:`G` anisotropically. SDS-LoRA keeps the forward and replaces them by

.. math::

    \nabla_A = s Q_B^\top G, \qquad \nabla_B = s G Q_A,

with :math:`Q_B, Q_A` recomputed (outside autograd) at every backward from the current factors, with
:math:`\operatorname{diag}(R) \ge 0` (:func:`geode.core.sign_fixed_qr`) or as polar factors
(:func:`geode.core.polar`). For a batch of inputs :math:`x_i` and output gradients :math:`g_i`,
:math:`G = \sum_i g_i x_i^\top`, so neither :math:`G` nor :math:`\Delta W` is ever formed:

.. math::

    \nabla_A = s\, (g Q_B)^\top x, \qquad \nabla_B = s\, g^\top (x Q_A), \qquad \nabla_x = s\, (g B) A ,

the last being the exact input gradient (the layers below see the true gradient).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from geode.adapters.lora import LoRALinear
from geode.core.linalg import polar, sign_fixed_qr
from geode.core.validation import check_choice, check_real, check_tensor

__all__ = [
    "BASES",
    "SDSDualLoRALinear",
    "SDSLoRALinear",
    "orthonormal_basis",
    "sds_lora_config",
    "sds_lora_delta",
    "sds_lora_gradients",
]

BASES = ("qr", "polar")
"""The orthonormalisations SDS-LoRA can use: the polar factor (default) or sign-fixed thin QR."""


def orthonormal_basis(m: torch.Tensor, method: str = "polar") -> torch.Tensor:
    r"""Orthonormal basis :math:`Q` (shape (p, r)) of the columns of ``m`` (shape (p, r), ``p >= r``).

    ``"qr"``: the Q of the thin QR with :math:`\operatorname{diag}(R) \ge 0`, the Gram-Schmidt basis
    (a smooth function of ``m``; plain Householder QR flips column signs from step to step, which
    makes the induced update of :math:`\Delta W` no descent direction). ``"polar"``: :math:`U V^\top`
    from the SVD :math:`m = U \Sigma V^\top`, the orthonormal matrix closest to ``m``. For a
    rank-deficient ``m`` (e.g. :math:`B = 0` at initialisation) the basis is still orthonormal but
    its extra columns are arbitrary (deterministic).

    Only the polar basis guarantees that the step SDS-LoRA induces on :math:`\Delta W` is a descent
    direction: with it :math:`B Q_B^\top = U \Sigma U^\top` and :math:`Q_A A = V \Sigma V^\top` are positive
    semi-definite, so :math:`\langle G, B Q_B^\top G + G Q_A A\rangle \ge 0`. With QR,
    :math:`B Q_B^\top = Q R Q^\top` is not symmetric and the inner product can be negative (e.g.
    :math:`R = [[1, 10], [0, 1]]`; tested), which is why ``"polar"`` is the default.

    ``m`` must be a finite, non-empty tensor of shape (..., p, r) with ``p >= r`` (leading dimensions are a batch).
    """
    check_choice("method", method, BASES)
    _check_frame("m", m)
    return _basis(m, method)


def _check_frame(name: str, m: object) -> None:
    check_tensor(name, m, finite=False, nonempty=False)
    if m.ndim < 2:
        raise ValueError(f"{name} must be a matrix (or a batch of matrices); got shape {tuple(m.shape)}")
    if m.shape[-2] < m.shape[-1]:
        raise ValueError(
            f"{name} must be tall (p >= r) to have an orthonormal basis of its columns; got shape {tuple(m.shape)}"
        )
    check_tensor(name, m)


def _basis(m: torch.Tensor, method: str) -> torch.Tensor:
    """:func:`orthonormal_basis` without the argument checks (the layer's backward)."""
    with torch.no_grad():
        q = sign_fixed_qr(m)[0] if method == "qr" else polar(m)[0]
    return q


def sds_lora_gradients(
    grad_weight: torch.Tensor, lora_A: torch.Tensor, lora_B: torch.Tensor, scaling: float, basis: str = "polar"
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The closed-form SDS-LoRA gradients (s Q_Bᵀ G, s G Q_A) of the factors, from a full gradient G.

    Parameters
    ----------
    grad_weight : torch.Tensor, shape (..., m, n)
        :math:`G = \partial\mathcal{L}/\partial W` (batched over leading dimensions).
    lora_A : shape (..., r, n)
    lora_B : shape (..., m, r)
    scaling : float
    basis : {"qr", "polar"}

    Returns
    -------
    grad_A : shape (..., r, n)
    grad_B : shape (..., m, r)

    Raises
    ------
    TypeError, ValueError
        A tensor that is not finite and non-empty, shapes that do not fit together (``r <= min(m, n)``), or a
        non-finite ``scaling``; each message names the argument.
    """
    check_choice("basis", basis, BASES)
    for name, t in (("grad_weight", grad_weight), ("lora_A", lora_A), ("lora_B", lora_B)):
        check_tensor(name, t, finite=False)
        if t.ndim < 2:
            raise ValueError(f"{name} must be a matrix (or a batch of matrices); got shape {tuple(t.shape)}")
    m, n = grad_weight.shape[-2:]
    r = lora_A.shape[-2]
    if lora_A.shape[-1] != n:
        raise ValueError(f"lora_A must have shape (..., r, n = {n}) to match grad_weight; got {tuple(lora_A.shape)}")
    if tuple(lora_B.shape[-2:]) != (m, r):
        raise ValueError(f"lora_B must have shape (..., m = {m}, r = {r}); got {tuple(lora_B.shape)}")
    _check_frame("lora_B", lora_B)
    _check_frame("lora_A.mT", lora_A.mT)
    check_tensor("grad_weight", grad_weight)
    scaling = check_real("scaling", scaling)
    q_b = _basis(lora_B, basis)
    q_a = _basis(lora_A.mT, basis)
    return scaling * (q_b.mT @ grad_weight), scaling * (grad_weight @ q_a)


class _SDSFunction(torch.autograd.Function):
    """``y = s (x Aᵀ) Bᵀ`` with SDS-LoRA's backward for A and B and the exact backward for x."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, scaling: float, basis: str) -> Any:
        ctx.save_for_backward(x, a, b)
        ctx.scaling, ctx.basis = scaling, basis
        return scaling * ((x @ a.T) @ b.T)

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> Any:
        x, a, b = ctx.saved_tensors
        s = ctx.scaling
        r = a.shape[0]
        g = grad_out.reshape(-1, grad_out.shape[-1])  # (N, m)
        x2 = x.reshape(-1, x.shape[-1])  # (N, n)
        need_x, need_a, need_b = ctx.needs_input_grad[:3]
        grad_x = grad_a = grad_b = None
        if need_a:
            q_b = _basis(b, ctx.basis)
            gq = g @ torch.cat([b, q_b], dim=1) if need_x else g @ q_b  # one GEMM for g B and g Q_B
            g_qb = gq[:, -r:]
            grad_a = s * (g_qb.T @ x2)  # s Q_Bᵀ G
            g_b = gq[:, :r] if need_x else None
        else:
            g_b = g @ b if need_x else None
        if need_b:
            q_a = _basis(a.T, ctx.basis)
            grad_b = s * (g.T @ (x2 @ q_a))  # s G Q_A
        if need_x:
            grad_x = (s * (g_b @ a)).reshape(x.shape)
        return grad_x, grad_a, grad_b, None, None


def sds_lora_delta(
    x: torch.Tensor, lora_A: torch.Tensor, lora_B: torch.Tensor, scaling: float, basis: str = "polar"
) -> torch.Tensor:
    r"""The adapter output s·B A x (LoRA's value) with SDS-LoRA's backward (a functional form of the layer).

    Parameters
    ----------
    x : torch.Tensor, shape (..., n)
    lora_A : shape (r, n)
    lora_B : shape (m, r)
    scaling : float
    basis : {"qr", "polar"}

    Returns
    -------
    torch.Tensor, shape (..., m)
        Gradients reaching ``lora_A``/``lora_B`` are :math:`s Q_B^\top G` and :math:`s G Q_A`; the
        gradient reaching ``x`` is the exact :math:`s A^\top B^\top g`.

    Notes
    -----
    This is a layer's forward: types, shapes and ``scaling`` are checked (errors name the argument), but like
    :class:`~geode.adapters.AdapterLinear` the tensors' values are not: a NaN or infinity in ``x`` gives
    non-finite outputs in its rows (and in the factors, everywhere), because a finiteness test would cost a device
    synchronisation per layer and step. An empty batch ``x`` gives an empty output.
    """
    check_choice("basis", basis, BASES)
    check_tensor("x", x, finite=False, nonempty=False)
    check_tensor("lora_A", lora_A, finite=False)
    check_tensor("lora_B", lora_B, finite=False)
    scaling = check_real("scaling", scaling)
    if lora_A.ndim != 2 or lora_B.ndim != 2 or lora_B.shape[1] != lora_A.shape[0]:
        raise ValueError(
            f"lora_A must be (r, n) and lora_B (m, r); got {tuple(lora_A.shape)} and {tuple(lora_B.shape)}"
        )
    if x.shape[-1] != lora_A.shape[1]:
        raise ValueError(f"x must end in n = {lora_A.shape[1]} features; got shape {tuple(x.shape)}")
    return _SDSFunction.apply(x, lora_A, lora_B, float(scaling), basis)


class SDSLoRALinear(LoRALinear):
    r"""SDS-LoRA around a frozen ``nn.Linear``: LoRA's forward :math:`y = W x + b + s B A x`, SDS backward.

    Same constructor, attributes (``lora_A`` (r, in), ``lora_B`` (out, r), ``scaling``), initialisation,
    merging and checkpoint format as :class:`geode.adapters.LoRALinear`; only the gradients of
    ``lora_A`` and ``lora_B`` differ: :math:`s Q_B^\top G` and :math:`s G Q_A` (see :mod:`.sds`).

    Parameters
    ----------
    base, r, alpha, dropout, use_rslora, init, generator
        As :class:`~geode.adapters.LoRALinear`.
    basis : {"polar", "qr"}
        Orthonormalisation of :math:`B` and :math:`A^\top` in the backward (default ``"polar"``, the one
        that guarantees a descent step; see :func:`orthonormal_basis`).

    Examples
    --------
    >>> layer = SDSLoRALinear(nn.Linear(8, 6), r=2)
    >>> layer(torch.ones(3, 8)).shape
    torch.Size([3, 6])
    """

    def __init__(self, base: nn.Linear, r: int, alpha: float | None = None, *, basis: str = "polar", **kwargs: Any):
        super().__init__(base, r, alpha, **kwargs)
        self.basis = check_choice("basis", basis, BASES)

    def adapter_output(self, x: torch.Tensor) -> torch.Tensor:
        return sds_lora_delta(self.dropout(x), self.lora_A, self.lora_B, self.scaling, self.basis)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, basis={self.basis!r}"


def sds_lora_config(*, basis: str = "polar", **lora_config_kwargs: Any) -> Any:
    """A ``peft.LoraConfig`` whose ``nn.Linear`` targets become SDS-LoRA layers (needs ``peft``).

    Any other targeted layer type (GPT-2's ``Conv1D``, embeddings, convolutions) makes ``get_peft_model``
    raise a ``TypeError`` instead of silently becoming a plain LoRA layer.

    Uses PEFT's experimental custom-module hook ``LoraConfig._register_custom_module``. Checkpoints
    saved from the resulting model are ordinary LoRA checkpoints (load them with a plain
    ``LoraConfig`` for inference, or with this config to keep training with SDS-LoRA).

    Parameters
    ----------
    basis : {"polar", "qr"}
    **lora_config_kwargs
        Passed to ``peft.LoraConfig`` (``r``, ``lora_alpha``, ``target_modules``, ...).

    Examples
    --------
    >>> from peft import get_peft_model  # doctest: +SKIP
    >>> model = get_peft_model(model, sds_lora_config(r=8, lora_alpha=16, target_modules=["q_proj"]))  # doctest: +SKIP
    """
    check_choice("basis", basis, BASES)
    try:
        from peft import LoraConfig
    except ImportError:  # pragma: no cover - peft is in the llm extra
        raise ImportError("SDS-LoRA in PEFT needs peft: pip install 'geode[llm]'") from None
    from geode.adapters.sds_lora.peft_layer import SDSPeftLinear, SDSPeftLinearPolar, refused_layer_types

    if lora_config_kwargs.get("use_dora"):
        raise ValueError("use_dora: SDS-LoRA supports plain LoRA only")
    cfg = LoraConfig(**lora_config_kwargs)
    mapping: dict[type, type] = {nn.Linear: SDSPeftLinear if basis == "qr" else SDSPeftLinearPolar}
    mapping.update(refused_layer_types())
    cfg._register_custom_module(mapping)
    return cfg


class SDSDualLoRALinear(LoRALinear):
    r"""The dual-branch reading of SDS-LoRA (the paper's Equation 8 as a third-party release reads it).

    For the first ``warmup`` optimiser steps the layer is plain LoRA, :math:`\Delta W = s B A` with
    :math:`s = \alpha / r`. :meth:`reparameterize` then rewrites the current update with its rank-``r``
    SVD :math:`U_r \Sigma_r V_r^\top` as two branches over frozen orthonormal bases,

    .. math::

        \Delta W = s' (Q_B A + B Q_A^\top), \qquad Q_B = U_r,\; Q_A = V_r,\;
        A = \Sigma_r V_r^\top / (2 s'),\; B = U_r \Sigma_r / (2 s'),\; s' = (\alpha / r) \sqrt{r},

    so the gradients are :math:`\nabla_A = s' Q_B^\top G` and :math:`\nabla_B = s' G Q_A` (the bases are
    buffers: constants in the backward pass), the same form as :class:`SDSLoRALinear`'s but with a
    forward that is linear in each factor. Each later call (the trainer calls it on
    :func:`~geode.adapters.sds_lora.experiment.refresh_schedule`) re-parameterises the current
    :math:`\Delta W` (rank up to :math:`2r`) the same way; the truncation residual is merged into the
    frozen base weight, so the layer's function never jumps. The parameters are updated in place, so an
    optimiser holding them keeps working (and keeps its moments).

    Parameters
    ----------
    base, r, alpha, dropout, init, generator
        As :class:`~geode.adapters.LoRALinear` (``use_rslora`` is not supported).

    Attributes
    ----------
    dual : bool
        Whether the layer has been re-parameterised (False during the warm-up).
    q_a : buffer, shape (in, r)
    q_b : buffer, shape (out, r)
    dual_scaling : float
        :math:`s' = (\alpha / r) \sqrt{r}`.

    Notes
    -----
    Not a LoRA checkpoint: after a re-parameterisation the update lives in the two branches and the
    merged residual; use :meth:`delta_weight` and ``base.weight`` together.
    """

    def __init__(self, base: nn.Linear, r: int, alpha: float | None = None, **kwargs: Any):
        if kwargs.get("use_rslora"):
            raise ValueError("use_rslora: the dual-branch reading fixes its own scale (alpha / r) * sqrt(r)")
        super().__init__(base, r, alpha, **kwargs)
        self.dual_scaling = self.scaling * float(self.r) ** 0.5
        w = base.weight
        self.register_buffer("q_a", torch.zeros(self.in_features, self.r, dtype=w.dtype, device=w.device))
        self.register_buffer("q_b", torch.zeros(self.out_features, self.r, dtype=w.dtype, device=w.device))
        self.dual = False

    def delta_weight(self) -> torch.Tensor:
        if not self.dual:
            return super().delta_weight()
        return self.dual_scaling * (self.q_b @ self.lora_A + self.lora_B @ self.q_a.T)

    def adapter_output(self, x: torch.Tensor) -> torch.Tensor:
        if not self.dual:
            return super().adapter_output(x)
        x = self.dropout(x)
        return self.dual_scaling * ((x @ self.lora_A.T) @ self.q_b.T + (x @ self.q_a) @ self.lora_B.T)

    @torch.no_grad()
    def reparameterize(self) -> None:
        """Rewrite the current update as two branches over the bases of its rank-r SVD (see the class)."""
        m = self.delta_weight().detach()
        u, sv, vh = torch.linalg.svd(m, full_matrices=False)
        u, sv, vh = u[:, : self.r], sv[: self.r], vh[: self.r]
        s = self.dual_scaling
        self.q_b.copy_(u)
        self.q_a.copy_(vh.T)
        self.lora_A.copy_(sv[:, None] * vh / (2 * s))
        self.lora_B.copy_(u * sv[None, :] / (2 * s))
        self.base.weight.add_(m - (u * sv[None, :]) @ vh)
        self.dual = True

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, dual={self.dual}"
