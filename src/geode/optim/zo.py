r"""Zeroth-order optimisers with the MeZO seed trick: the base class, MeZO and QZO.

Two-point SPSA (Spall, 1992) as MeZO (Malladi et al., 2023) runs it: at step :math:`t` a seed
:math:`s_t` regenerates a Gaussian direction :math:`z \sim \mathcal{N}(0, I)` as often as needed, so the
direction is never stored. One step calls the loss closure twice, with no backward pass:

.. math::

    \ell_\pm = f(\theta \pm \epsilon z), \qquad
    d = \frac{\ell_+ - \ell_-}{2 \epsilon}, \qquad
    \theta \leftarrow \theta - \eta\, d\, z ,

perturbing the parameters in place (:math:`+\epsilon z`, then :math:`-2\epsilon z`, then :math:`+\epsilon z`
to restore them) and regenerating :math:`z` from :math:`s_t` for the update. The optimiser's state is
:math:`O(1)`: the step count, the base seed, the last projected gradient :math:`d` and the last loss
(:func:`optimizer_state_bytes` measures it).

- :class:`MeZO`: the update above, with optional weight decay and an optional floor ``clamp_min`` applied
  after the update (``clamp_min=0`` gives "MeZO on scales + clamp").
- :class:`QZO` (Shang et al., 2025, arXiv 2505.13430): MeZO on the quantisation scales with *directional
  derivative clipping* :math:`d \leftarrow \operatorname{clip}(d, -C, C)` and the projection
  :math:`\Delta \leftarrow \max(\Delta, 0)`.

Subclasses define the perturbation and the update (:class:`ZerothOrderOptimizer`); HoZO (the Riemannian
version on the positive orthant) lives in :mod:`geode.optim.hozo`.

The closure is called under ``torch.no_grad()`` and must return a finite scalar loss (a Python number
or a one-element tensor) without calling ``backward()`` (a closure that does gets a ``RuntimeError`` saying
so); anything else raises after the parameters have been restored. Every step
also counts *boundary violations* of positive parameters: entries that a perturbation (``perturb``) or
an update before any projection (``update``) left :math:`\le 0`; they are kept in
``optimizer.violations`` (plain integers, O(1)).

Floating point: the restoration :math:`(\theta + \epsilon z) - 2\epsilon z + \epsilon z` regenerates a
bit-identical :math:`z` but is exact only up to the rounding of three in-place additions (a few ulps); a
bit-exact restoration would need a copy of the parameters, which the :math:`O(1)` state excludes. MeZO's
release does the same.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import torch

from geode.core.validation import check_int, check_positive, check_real

__all__ = ["QZO", "MeZO", "ZerothOrderOptimizer", "check_loss", "optimizer_state_bytes", "step_seed"]


_MASK64 = (1 << 64) - 1


def step_seed(seed: int, step: int) -> int:
    """The seed of step ``step`` of an optimiser whose base seed is ``seed``: a 63-bit SplitMix64 hash of both."""
    x = (int(seed) * 0x9E3779B97F4A7C15 + int(step) + 1) & _MASK64
    for _ in range(2):  # two SplitMix64 rounds
        x = (x + 0x9E3779B97F4A7C15) & _MASK64
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
        x ^= x >> 31
    return x >> 1


def check_loss(value: Any, where: str = "closure") -> float:
    """A loss returned by a closure as a finite float; ``TypeError``/``ValueError`` naming ``where`` otherwise."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{where} must return a scalar loss value; got a tensor of shape {tuple(value.shape)}")
        x = float(value.detach().reshape(()).item())
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        x = float(value)
    else:
        raise TypeError(f"{where} must return a scalar loss value (a number or a one-element tensor); got {value!r}")
    if not math.isfinite(x):
        raise ValueError(f"{where} returned a non-finite loss value ({x}); the parameters were restored")
    return x


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes held in ``optimizer.state`` (tensors by storage, Python numbers as 8 bytes each).

    Adam holds two tensors per parameter (:math:`2 \\times` the parameters' bytes plus a step count); the
    zeroth-order optimisers hold a handful of numbers whatever the number of parameters.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer; got {type(optimizer).__name__}")
    total = 0
    for st in optimizer.state.values():
        for v in st.values():
            if isinstance(v, torch.Tensor):
                total += v.numel() * v.element_size()
            elif isinstance(v, (numbers.Number, np.generic)):
                total += 8
    return int(total)


class ZerothOrderOptimizer(torch.optim.Optimizer):
    """Base class of the two-point zeroth-order optimisers with the seed trick.

    Parameters
    ----------
    params : iterable of Parameter or dicts
        What to optimise (torch parameter groups allowed).
    lr : float
        Learning rate :math:`\\eta \\ge 0`.
    eps : float
        Perturbation size :math:`\\epsilon > 0`.
    clip : float or None
        Directional derivative clipping threshold :math:`C > 0` (None: no clipping).
    seed : int
        Base seed; step ``t`` uses :func:`step_seed` ``(seed, t)``, so a run is deterministic.
    **defaults
        Further per-group settings of a subclass.

    Subclasses implement :meth:`_perturb` (in place, by ``sign * eps`` along the direction) and
    :meth:`_update` (in place, returning the number of entries the update left ``<= 0`` before any
    projection).
    """

    #: whether the parameters must stay strictly positive (violations are counted either way)
    positive: bool = False

    def __init__(
        self,
        params: Iterable[Any],
        *,
        lr: float,
        eps: float,
        clip: float | None = None,
        seed: int = 0,
        **defaults: Any,
    ) -> None:
        check_real("lr", lr, low=0.0)
        check_positive("eps", eps)
        if clip is not None:
            check_positive("clip", clip)
        seed = check_int("seed", seed, low=0)
        if not isinstance(params, torch.Tensor):  # torch's own message names params for a bare tensor
            params = list(params)
            if not params:
                raise ValueError("params must hold at least one tensor: nothing to optimise (an empty parameter list)")
            for i, p in enumerate(params):
                if isinstance(p, torch.Tensor) and not p.is_leaf:
                    raise ValueError(
                        f"params[{i}] must be a leaf tensor (an nn.Parameter or a tensor you created); got the "
                        "result of an operation"
                    )
        super().__init__(params, dict(lr=float(lr), eps=float(eps), clip=clip, **defaults))
        for group in self.param_groups:
            check_real("lr", group["lr"], low=0.0)
            check_positive("eps", group["eps"])
            if group["clip"] is not None:
                check_positive("clip", group["clip"])
        self._validate_params()
        first = self._params()[0]
        self.state[first].update(step=0, seed=seed, projected_grad=0.0, loss=math.nan)
        self.violations = {"perturb": 0, "update": 0}

    # -- helpers ------------------------------------------------------------------------------------------
    def _params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _validate_params(self) -> None:
        if not self._params():
            raise ValueError("params: nothing to optimise")
        for i, p in enumerate(self._params()):
            if not p.is_floating_point():
                raise TypeError("params must be floating-point tensors")
            if not bool(torch.isfinite(p).all()):
                where = " (a point of the positive orthant: finite and strictly positive)" if self.positive else ""
                raise ValueError(f"params[{i}] must contain only finite values{where}; found NaN or inf")

    @property
    def _zo_state(self) -> dict[str, Any]:
        return self.state[self._params()[0]]

    @property
    def projected_grad(self) -> float:
        """The (clipped) projected gradient :math:`d` of the last step."""
        return float(self._zo_state["projected_grad"])

    def _directions(self, seed: int) -> Iterator[tuple[dict[str, Any], torch.Tensor, torch.Tensor]]:
        """Yield ``(group, p, z)`` for every parameter, with ``z`` regenerated from ``seed`` (bit-identical)."""
        gens: dict[Any, torch.Generator] = {}
        for group in self.param_groups:
            for p in group["params"]:
                g = gens.get(p.device)
                if g is None:
                    g = gens[p.device] = torch.Generator(device=p.device)
                    g.manual_seed(seed)
                yield group, p, torch.randn(p.shape, generator=g, device=p.device, dtype=p.dtype)

    def directions(self, step: int | None = None) -> list[torch.Tensor]:
        """The directions :math:`z` of step ``step`` (default: the last step), one tensor per parameter."""
        st = self._zo_state
        t = st["step"] - 1 if step is None else check_int("step", step, low=0)
        return [z for _, _, z in self._directions(step_seed(st["seed"], max(t, 0)))]

    def _perturb_all(self, seed: int, sign: float) -> None:
        for group, p, z in self._directions(seed):
            self._perturb(group, p, z, sign)

    def _count_perturb_violations(self) -> None:
        if self.positive:
            self.violations["perturb"] += int(sum(int((p <= 0).sum()) for p in self._params()))

    # -- subclass hooks -----------------------------------------------------------------------------------
    def _perturb(self, group: dict[str, Any], p: torch.Tensor, z: torch.Tensor, sign: float) -> None:
        raise NotImplementedError

    def _update(self, group: dict[str, Any], p: torch.Tensor, z: torch.Tensor, d: float) -> int:
        raise NotImplementedError

    # -- the step -----------------------------------------------------------------------------------------
    def _call(self, closure: Callable[[], Any]) -> Any:
        """``closure()``; a closure that calls ``backward()`` (a torch habit) gets an error saying what to do."""
        try:
            return closure()
        except RuntimeError as exc:
            msg = str(exc)
            if "does not require grad" not in msg and "does not have a grad_fn" not in msg:
                raise
            raise RuntimeError(
                f"{type(self).__name__} is zeroth-order: the closure must return the loss without calling "
                "backward(). step() evaluates it twice under torch.no_grad() (no graph, no gradients), so write "
                "`def closure(): return loss_fn(model(x), y)` with no zero_grad() or backward(). The parameters "
                f"were restored. (torch said: {msg})"
            ) from exc

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> float:  # type: ignore[override]
        """One two-point step; ``closure()`` returns the loss of the current parameters (no backward).

        Returns
        -------
        float
            The mean of the two perturbed losses :math:`(\\ell_+ + \\ell_-)/2`.
        """
        if closure is None or not callable(closure):
            raise TypeError("closure must be a callable returning the loss; zeroth-order steps need it")
        for key in ("eps", "clip"):
            if len({g[key] for g in self.param_groups}) > 1:
                raise ValueError(
                    f"{key} must be the same in every parameter group (one projected gradient serves all)"
                )
        st = self._zo_state
        seed = step_seed(st["seed"], st["step"])
        state = 0  # how far the parameters are from where they started, in units of +eps
        try:
            self._perturb_all(seed, +1.0)
            state = 1
            self._count_perturb_violations()
            lp = check_loss(self._call(closure), "closure (at +eps)")
            self._perturb_all(seed, -2.0)
            state = -1
            self._count_perturb_violations()
            lm = check_loss(self._call(closure), "closure (at -eps)")
        finally:
            if state:
                self._perturb_all(seed, -float(state))
        d = (lp - lm) / (2.0 * self.param_groups[0]["eps"])
        clip = self.param_groups[0]["clip"]
        if clip is not None:
            d = min(max(d, -clip), clip)
        for group, p, z in self._directions(seed):
            self.violations["update"] += self._update(group, p, z, d)
        st["step"] += 1
        st["projected_grad"] = float(d)
        st["loss"] = 0.5 * (lp + lm)
        return st["loss"]


class MeZO(ZerothOrderOptimizer):
    """MeZO: SPSA with the seed trick, :math:`\\theta \\leftarrow \\theta - \\eta (d z + \\lambda \\theta)`.

    Parameters
    ----------
    params : iterable of Parameter or dicts
    lr : float
        Learning rate :math:`\\eta` (MeZO's full fine-tuning uses 1e-6 .. 1e-7; scales need far larger).
    eps : float
        Perturbation :math:`\\epsilon` (MeZO's default 1e-3).
    weight_decay : float
        :math:`\\lambda \\ge 0`.
    clamp_min : float or None
        If given, parameters are clamped to ``>= clamp_min`` after each update ("MeZO + clamp"); entries the
        update took to ``<= 0`` before the clamp are counted as boundary violations.
    clip : float or None
        Directional derivative clipping (None: plain MeZO).
    seed : int
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-6,
        eps: float = 1e-3,
        *,
        weight_decay: float = 0.0,
        clamp_min: float | None = None,
        clip: float | None = None,
        seed: int = 0,
    ) -> None:
        check_real("weight_decay", weight_decay, low=0.0)
        if clamp_min is not None:
            check_real("clamp_min", clamp_min)
        self.positive = clamp_min is not None
        super().__init__(
            params, lr=lr, eps=eps, clip=clip, seed=seed, weight_decay=float(weight_decay), clamp_min=clamp_min
        )

    def _perturb(self, group: dict[str, Any], p: torch.Tensor, z: torch.Tensor, sign: float) -> None:
        p.add_(z, alpha=sign * group["eps"])

    def _update(self, group: dict[str, Any], p: torch.Tensor, z: torch.Tensor, d: float) -> int:
        lr, wd = group["lr"], group["weight_decay"]
        if wd:
            p.mul_(1.0 - lr * wd)
        p.add_(z, alpha=-lr * d)
        if group["clamp_min"] is None:
            return 0
        n = int((p <= 0).sum())
        p.clamp_(min=group["clamp_min"])
        return n


class QZO(MeZO):
    """QZO: MeZO on quantisation scales with directional derivative clipping and a projection onto the orthant.

    :math:`d \\leftarrow \\operatorname{clip}(d, -C, C)`, :math:`\\Delta \\leftarrow \\max(\\Delta - \\eta d z, 0)`
    (Shang et al., 2025). Entries the update takes to ``<= 0`` are counted as boundary violations.

    Parameters
    ----------
    params : iterable of Parameter or dicts
        The positive scales (e.g. :func:`geode.optim.scale_parameters`).
    lr : float
    eps : float
    clip : float
        :math:`C > 0`.
    clamp_min : float
        The projection floor (0 in the paper).
    seed : int
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-6,
        eps: float = 1e-3,
        *,
        clip: float = 100.0,
        clamp_min: float = 0.0,
        seed: int = 0,
    ) -> None:
        if clip is None:
            raise ValueError("clip must be > 0 for QZO (use MeZO for no clipping)")
        super().__init__(params, lr=lr, eps=eps, clamp_min=clamp_min, clip=clip, seed=seed)
