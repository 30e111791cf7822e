r"""Negative weight drift and activation sparsity: the measurements and the activation zoo.

The paper (Shvetsov et al., "Bug or Feature²: Weight Drift, Activation Sparsity and Spikes") shows that
under MSE or cross-entropy loss the gradient with respect to a *positive* pre-activation is non-negative in
expectation at initialisation,

.. math::

    \mathbb{E}\left[\frac{\partial L}{\partial z}\,\middle|\, z > 0\right] \;\ge\; 0,

so a weight :math:`W` that consumes a non-negative activation :math:`a = \sigma(z)` (ReLU, and mostly GELU and
SiLU) gets the gradient :math:`\delta a^\top` with :math:`\mathbb{E}[\delta] \ge 0`: gradient descent drives the
mean of :math:`W` negative, which pushes later pre-activations negative and, with ReLU, raises sparsity.

What this module measures:

- :func:`downstream_drift` -- the drift of the mean of each weight matrix over a training history,
  :math:`\Delta_l(t) = (\overline{W_l(t)} - \overline{W_l(0)}) / \operatorname{std}(W_l(0))` (in units of
  the initial weight scale, so layers of any width compare);
- :func:`expected_preactivation_gradient` -- the statistic of the paper's proposition,
  :math:`\mathbb{E}[\partial L / \partial z \mid z > 0]` at every activation of a network, from one batch;
- :class:`SparsityMonitor` -- forward hooks that record the fraction of zero (or ``|a| <= eps``) outputs of
  every activation module, and the spike ratio :math:`\max|a| / \operatorname{median}|a|`;
- the activations :class:`QuantileReLU` (a target sparsity), :class:`ReLU2`, :class:`ClippedReLU2`,
  :class:`GELU2`, :class:`ClippedGELU2`.

Inferred details (the paper's text gives none of them; the authors' release is named where it decides):

- drift is reported relative to the initial standard deviation of the matrix (the paper plots raw means);
- :class:`QuantileReLU` follows the authors' default (``modifiers/activations.py``): the threshold is the
  batch quantile of each unit along dimension 0 and the output is :math:`x\,\mathbb{1}[x \ge q]` (mode
  ``"mask"``); ``"continuous"`` is their :math:`\operatorname{relu}(x - q)` variant. At evaluation the
  quantile is still taken over the batch given (as in the release), so a batch of one row is refused;
- the clipped squares follow the release's GPT model file: :math:`\min(\operatorname{relu}(x)^2, c)` with the
  gradient zero above the clip, default ``c = 50``; ``GELU2`` is :math:`\operatorname{gelu}(x)^2` (the paper
  names it; the release defines no closed form we could find) and its clipped form clips the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_real

__all__ = [
    "ACTIVATIONS",
    "GELU2",
    "ClippedGELU2",
    "ClippedReLU2",
    "QuantileReLU",
    "ReLU2",
    "SparsityMonitor",
    "downstream_drift",
    "expected_preactivation_gradient",
    "make_activation",
]


class QuantileReLU(nn.Module):
    r"""A ReLU whose threshold is the batch quantile, so a fraction ``sparsity`` of each unit's outputs is zero.

    For an input :math:`x \in \mathbb{R}^{B \times \dots}` and level :math:`s`, :math:`q = \operatorname{quantile}
    (x, s)` along dimension 0 (per unit), and

    - ``mode="mask"`` (the authors' default): :math:`y = x\,\mathbb{1}[x \ge q]`;
    - ``mode="continuous"``: :math:`y = \operatorname{relu}(x - q)`.

    Parameters
    ----------
    sparsity : float
        Target fraction of zeros, in ``[0, 1)``. ``0`` keeps every entry in ``"mask"`` mode (a linear layer).
    mode : {"mask", "continuous"}
        See above.

    The input is a tensor of any shape with the batch along dimension 0 (the quantile is per entry of the
    other dimensions). A NaN or inf in it is refused: it would move the batch quantile of its unit and a NaN
    would silently become a zero.

    Raises
    ------
    ValueError
        ``sparsity`` outside ``[0, 1)``, an unknown ``mode``, or an input with fewer than 2 rows or a NaN/inf.
    """

    def __init__(self, sparsity: float, mode: str = "mask") -> None:
        super().__init__()
        if not isinstance(sparsity, (int, float)) or not 0.0 <= float(sparsity) < 1.0:
            raise ValueError(f"sparsity must be a number in [0, 1); got {sparsity!r}")
        if mode not in ("mask", "continuous"):
            raise ValueError(f"mode must be 'mask' or 'continuous'; got {mode!r}")
        self.sparsity = float(sparsity)
        self.mode = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x)
        if x.ndim == 0 or x.shape[0] < 2:
            raise ValueError(
                f"x must hold a batch of >= 2 rows along dimension 0 (QuantileReLU); got shape {tuple(x.shape)}"
            )
        if not bool(torch.isfinite(x.detach()).all()):
            raise ValueError("x must contain only finite values (found NaN or inf)")
        q = torch.quantile(x.detach().float(), self.sparsity, dim=0, keepdim=True).to(x.dtype)
        if self.mode == "mask":
            return x * (x >= q).to(x.dtype)
        return torch.relu(x - q)

    def extra_repr(self) -> str:
        return f"sparsity={self.sparsity}, mode={self.mode!r}"


class _ClippedSquare(torch.autograd.Function):
    """``min(y, c)`` of a non-negative ``y`` with zero gradient above ``c`` (the release's clipped ReLU²)."""

    @staticmethod
    def forward(ctx: Any, y: torch.Tensor, clip: float) -> torch.Tensor:
        mask = ~(y > clip)  # a NaN is kept (not replaced by the clip)
        ctx.save_for_backward(mask)
        return torch.where(mask, y, torch.full_like(y, clip))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (mask,) = ctx.saved_tensors
        return grad * mask.to(grad.dtype), None


def _check_input(x: Any) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch tensor; got {type(x).__name__}")


def _check_clip(clip: float) -> float:
    if not isinstance(clip, (int, float)) or not float(clip) > 0 or not np.isfinite(clip):
        raise ValueError(f"clip must be a finite number > 0; got {clip!r}")
    return float(clip)


class ReLU2(nn.Module):
    r"""Squared ReLU, :math:`y = \operatorname{relu}(x)^2` (gradient :math:`2\operatorname{relu}(x)`).

    Elementwise on a tensor of any shape (an empty one gives an empty output). Like torch's own activations it
    does not scan its input for NaN or inf (a training step pays nothing extra): a NaN propagates to the output
    (and the loss, where the training loop sees it) and ``inf`` follows the formula.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x)
        return torch.relu(x).square()


class ClippedReLU2(nn.Module):
    r"""Clipped squared ReLU, :math:`y = \min(\operatorname{relu}(x)^2, c)`, zero gradient where clipped.

    Elementwise on a tensor of any shape (an empty one gives an empty output). Like torch's own activations it
    does not scan its input for NaN or inf (a training step pays nothing extra): a NaN propagates to the output
    (and the loss, where the training loop sees it); ``inf`` is clipped to ``c``, as the formula says.

    Parameters
    ----------
    clip : float
        The clip :math:`c > 0` (the release uses 50).
    """

    def __init__(self, clip: float = 50.0) -> None:
        super().__init__()
        self.clip = _check_clip(clip)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x)
        return _ClippedSquare.apply(torch.relu(x).square(), self.clip)

    def extra_repr(self) -> str:
        return f"clip={self.clip}"


class GELU2(nn.Module):
    r"""Squared GELU, :math:`y = \operatorname{gelu}(x)^2`.

    Elementwise on a tensor of any shape (an empty one gives an empty output). Like torch's own activations it
    does not scan its input for NaN or inf (a training step pays nothing extra): a NaN propagates to the output
    (and the loss, where the training loop sees it) and ``inf`` follows the formula.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x)
        return nn.functional.gelu(x).square()


class ClippedGELU2(nn.Module):
    r"""Clipped squared GELU, :math:`y = \min(\operatorname{gelu}(x)^2, c)`, zero gradient where clipped.

    Elementwise on a tensor of any shape (an empty one gives an empty output). Like torch's own activations it
    does not scan its input for NaN or inf (a training step pays nothing extra): a NaN propagates to the output
    (and the loss, where the training loop sees it); ``inf`` is clipped to ``c``, as the formula says.

    Parameters
    ----------
    clip : float
        The clip :math:`c > 0` (default 50, as the release's clipped ReLU²).
    """

    def __init__(self, clip: float = 50.0) -> None:
        super().__init__()
        self.clip = _check_clip(clip)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x)
        return _ClippedSquare.apply(nn.functional.gelu(x).square(), self.clip)

    def extra_repr(self) -> str:
        return f"clip={self.clip}"


ACTIVATIONS: dict[str, Any] = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
    "tanh": nn.Tanh,
    "relu2": ReLU2,
    "clipped_relu2": ClippedReLU2,
    "gelu2": GELU2,
    "clipped_gelu2": ClippedGELU2,
}
"""Names accepted by :func:`make_activation` (besides ``"quantile_relu"``)."""


def make_activation(name: str, **kwargs: Any) -> nn.Module:
    """A fresh activation module by name (``ACTIVATIONS`` or ``"quantile_relu"`` with ``sparsity=``).

    Raises
    ------
    ValueError
        An unknown ``name`` (the message lists the known ones).
    """
    if name == "quantile_relu":
        return QuantileReLU(**kwargs)
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation name {name!r}; known: {sorted([*ACTIVATIONS, 'quantile_relu'])}")
    return ACTIVATIONS[name](**kwargs)


def downstream_drift(
    history: Sequence[Mapping[str, Any]] | Sequence[Sequence[Any]], *, relative: bool = True
) -> dict[str, np.ndarray]:
    r"""The drift of the mean of each weight matrix over a training history.

    .. math::

        \Delta_l(t) = \frac{\overline{W_l(t)} - \overline{W_l(0)}}{\operatorname{std}(W_l(0))}

    (without the denominator when ``relative=False``).

    Parameters
    ----------
    history : sequence of mappings name -> tensor (or of sequences of tensors)
        Snapshots of the weights, the first one at initialisation; every snapshot has the same keys
        (or the same length) and shapes.
    relative : bool
        Divide by the initial standard deviation of each matrix (default) or report raw mean changes.

    Returns
    -------
    dict
        name (or index as a string) -> array of length ``len(history)``, starting at 0.

    Raises
    ------
    ValueError
        An empty history, snapshots with different keys or shapes, an empty or non-finite matrix, or a constant
        initial matrix with ``relative=True``.
    """
    if len(history) == 0:
        raise ValueError("history must hold at least one snapshot (the initial weights)")

    def items(snap: Any) -> dict[str, Any]:
        if isinstance(snap, Mapping):
            return dict(snap)
        if isinstance(snap, (str, bytes)) or not isinstance(snap, Iterable):
            raise ValueError(f"each history snapshot must be a mapping or a sequence of tensors; got {type(snap)}")
        return {str(i): w for i, w in enumerate(snap)}

    def weights(t: int, k: Any, w: Any) -> torch.Tensor:
        try:
            wt = torch.as_tensor(w).detach().double()
        except (TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(f"history[{t}][{k!r}] must be a tensor of weights; got {type(w).__name__}") from exc
        if wt.numel() == 0:
            raise ValueError(f"history[{t}][{k!r}] is empty")
        if not bool(torch.isfinite(wt).all()):
            raise ValueError(f"history[{t}][{k!r}] must contain only finite values (found NaN or inf)")
        return wt

    first = items(history[0])
    if not first:
        raise ValueError("history[0] holds no weights")
    out = {k: np.zeros(len(history)) for k in first}
    base = {}
    for k, w in first.items():
        w0 = weights(0, k, w)
        sd = float(w0.std()) if w0.numel() > 1 else 0.0
        if relative and not sd > 0:
            raise ValueError(f"history[0][{k!r}] has zero spread; use relative=False")
        base[k] = (float(w0.mean()), sd if relative else 1.0, tuple(w0.shape))
    for t, snap in enumerate(history):
        cur = items(snap)
        if set(cur) != set(first):
            raise ValueError(f"history[{t}] has keys {sorted(cur)}; history[0] has {sorted(first)}")
        for k, w in cur.items():
            wt = weights(t, k, w)
            m0, sd, shape = base[k]
            if tuple(wt.shape) != shape:
                raise ValueError(f"history[{t}][{k!r}] has shape {tuple(wt.shape)}; history[0] has {shape}")
            out[k][t] = (float(wt.mean()) - m0) / sd
    return out


def _activation_modules(model: nn.Module, types: tuple[type, ...] | None) -> dict[str, nn.Module]:
    kinds = types or (nn.ReLU, nn.GELU, nn.SiLU, nn.Tanh, QuantileReLU, ReLU2, ClippedReLU2, GELU2, ClippedGELU2)
    found = {n: m for n, m in model.named_modules() if isinstance(m, kinds)}
    if not found:
        raise ValueError(f"model has no activation module of types {[k.__name__ for k in kinds]}")
    return found


def expected_preactivation_gradient(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss: str = "ce", *, types: tuple[type, ...] | None = None
) -> dict[str, float]:
    r"""The paper's statistic :math:`\mathbb{E}[\partial L/\partial z \mid z > 0]` at every activation module.

    One forward/backward pass of ``loss`` (the mean over the batch) through ``model``; at each activation
    module, :math:`z` is its input and the expectation is the mean over the entries with :math:`z > 0`,
    multiplied by the batch size (so the value is the per-example gradient, independent of the batch size).

    Parameters
    ----------
    model : nn.Module
        Holds the activation modules (``nn.ReLU``, ``nn.GELU``, ``nn.SiLU``, ``nn.Tanh`` and this module's own).
    x, y : Tensor
        A batch of inputs and targets (class indices for ``"ce"``; targets of the output's shape, or class
        indices turned into one-hot vectors, for ``"mse"``): non-empty, one target per input, finite.
    loss : {"ce", "mse"}
    types : tuple of module types, optional
        Which modules count as activations.

    Returns
    -------
    dict
        module name -> the statistic (``nan`` where no entry is positive).
    """
    if loss not in ("ce", "mse"):
        raise ValueError(f"loss must be 'ce' or 'mse'; got {loss!r}")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch nn.Module; got {type(model).__name__}")
    for name, v in (("x", x), ("y", y)):
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor; got {type(v).__name__}")
        if v.ndim == 0 or v.shape[0] == 0:
            raise ValueError(f"{name} must hold a non-empty batch (along dimension 0); got shape {tuple(v.shape)}")
        if v.is_floating_point() and not bool(torch.isfinite(v).all()):
            raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"y must have one target per row of x ({x.shape[0]}); got shape {tuple(y.shape)}")
    mods = _activation_modules(model, types)
    inputs: dict[str, torch.Tensor] = {}

    def hook(name: str) -> Any:
        def f(_m: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
            z = args[0]
            if z.requires_grad:
                z.retain_grad()
            inputs[name] = z

        return f

    handles = [m.register_forward_pre_hook(hook(n)) for n, m in mods.items()]
    try:
        model.zero_grad(set_to_none=True)
        try:
            out = model(x)
        except RuntimeError as exc:
            raise ValueError(f"x of shape {tuple(x.shape)} does not fit the model: {exc}") from exc
        if loss == "ce":
            value = nn.functional.cross_entropy(out, y)
        else:
            target = y
            if y.shape != out.shape:
                target = nn.functional.one_hot(y.long(), out.shape[-1]).to(out.dtype)
            value = nn.functional.mse_loss(out, target)
        value.backward()
    finally:
        for h in handles:
            h.remove()
    res = {}
    for name, z in inputs.items():
        if z.grad is None:
            res[name] = float("nan")
            continue
        pos = z.detach() > 0
        res[name] = float(z.grad[pos].mean() * z.shape[0]) if pos.any() else float("nan")
    model.zero_grad(set_to_none=True)
    return res


class SparsityMonitor:
    r"""Forward hooks that record activation sparsity and spikes at every activation module.

    Per call of a monitored module it records the fraction of outputs with :math:`|a| \le \epsilon` and the
    spike ratio :math:`\max|a| / \operatorname{median}|a|` (``inf`` where the median is 0); ``summary()``
    averages the recorded calls. Use as a context manager, or call ``remove()``.

    Parameters
    ----------
    model : nn.Module
    eps : float
        Outputs with :math:`|a| \le \epsilon` count as zero (default 0: exact zeros).
    types : tuple of module types, optional
        Which modules count as activations (default: the ones of this module and torch's ReLU/GELU/SiLU/Tanh).
    """

    def __init__(self, model: nn.Module, *, eps: float = 0.0, types: tuple[type, ...] | None = None) -> None:
        self.eps = check_real("eps", eps, low=0.0)
        self.modules = _activation_modules(model, types)
        self.records: dict[str, list[tuple[float, float, float]]] = {n: [] for n in self.modules}
        self._handles = [m.register_forward_hook(self._hook(n)) for n, m in self.modules.items()]

    def _hook(self, name: str) -> Any:
        def f(_m: nn.Module, _args: Any, out: torch.Tensor) -> None:
            a = out.detach().abs().float()
            sparsity = float((a <= self.eps).float().mean())
            mx = float(a.max())
            med = float(a.median())
            self.records[name].append((sparsity, mx, mx / med if med > 0 else float("inf")))

        return f

    def summary(self) -> dict[str, dict[str, float]]:
        """name -> mean ``sparsity``, maximum ``max_abs`` and mean ``spike_ratio`` over the recorded calls."""
        out = {}
        for n, rec in self.records.items():
            if rec:
                r = np.asarray(rec, dtype=float)
                out[n] = {
                    "sparsity": float(r[:, 0].mean()),
                    "max_abs": float(r[:, 1].max()),
                    "spike_ratio": float(r[:, 2].mean()),
                }
        return out

    def reset(self) -> None:
        """Forget the recorded calls."""
        for rec in self.records.values():
            rec.clear()

    def remove(self) -> None:
        """Remove the hooks."""
        for h in self._handles:
            h.remove()
        self._handles = []

    def __enter__(self) -> SparsityMonitor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
