"""Pre-fusion comparability recovery: oracle-specific rectifiers on the simplex and the shared consensus.

Notation: oracle :math:`m \\in \\{1..M\\}` gives :math:`p_m(x) \\in \\Delta^{C-1}`;
:math:`z_m(x) = \\operatorname{clr}(p_m(x))` are its Aitchison (centred log-ratio) coordinates.

**Rectifier family.** :math:`R_m(p) = \\operatorname{softmax}(a_m \\operatorname{clr}(p) + b_m)` with a radial
scale :math:`a_m \\in [a_{\\min}, a_{\\max}]`, a bias :math:`b_m \\in \\mathbb{R}^C` with
:math:`\\sum_c b_{m,c} = 0` (zero unless ``bias=True``), and the gauge constraint
:math:`\\frac1M \\sum_m \\log a_m = 0`, which fixes the common scale that no label-free method can identify.

**Closed form (frozen descriptors).** A geometry descriptor :math:`\\delta_m` is computed once from each
oracle's raw outputs, and :math:`a_m` equalises it across oracles:

* ``descriptor="clr_norm"``: :math:`\\delta_m = \\frac1N \\sum_i \\|z_m(x_i)\\|_2`. It is homogeneous of degree
  one in the scale, so :math:`a_m = \\delta^\\star / \\delta_m` with :math:`\\delta^\\star` the geometric mean of
  the :math:`\\delta_m` (closed form);
* ``descriptor="entropy"`` (mean Shannon entropy) or ``"max_prob"`` (mean top-class probability): not
  homogeneous, but monotone in the scale; :math:`a_m` solves
  :math:`\\delta(\\operatorname{softmax}(a_m z_m)) = \\bar\\delta` (the oracles' mean) by bisection.

Then :math:`\\log a` is projected (Euclidean) onto :math:`\\{\\sum_m \\log a_m = 0\\} \\cap [\\log a_{\\min},
\\log a_{\\max}]^M`. With ``bias=True``, :math:`b_m = \\bar c - a_m \\mu_m`, where :math:`\\mu_m` is oracle
:math:`m`'s mean clr vector and :math:`\\bar c = \\frac1M \\sum_{m'} a_{m'} \\mu_{m'}` (the rectified mean clr
vectors are matched).

**Exact recovery under matched radial distortion.** If :math:`p_m = \\operatorname{softmax}(\\tau_m
\\operatorname{clr}(q))` for one latent :math:`q` and scales :math:`\\tau_m > 0`, then every descriptor above gives
:math:`a_m = \\bar\\tau / \\tau_m` with :math:`\\bar\\tau = (\\prod_m \\tau_m)^{1/M}` (within the bounds) and
:math:`R_m(p_m) = \\operatorname{softmax}(\\bar\\tau \\operatorname{clr}(q))` for every :math:`m`: all oracles
agree exactly, up to the one common scale :math:`\\bar\\tau`.

**Alternating refinement (consensus-dependent descriptors).** Start from the closed form, then repeat
:math:`\\bar q(x) = \\frac1M \\sum_m R_m(p_m(x))` and

.. math::

    a_m \\leftarrow \\arg\\min_{a > 0} \\frac1N \\sum_i
        \\mathrm{KL}\\bigl(\\bar q(x_i) \\,\\|\\, \\operatorname{softmax}(a z_m(x_i) + b_m)\\bigr),

a convex one-dimensional problem (:func:`geode.ensembles.fusion.fit_inverse_temperature`), followed by the
same projection (and :math:`b_m = \\mathbb{E}[\\operatorname{clr}(\\bar q)] - a_m \\mu_m` with ``bias=True``),
until :math:`\\max_m |\\Delta \\log a_m| <` ``tol``. The exact-recovery solution is a fixed point.

**Fusion.** :meth:`ComparabilityRecovery.fuse` pools the rectified outputs (linear pool by default). The
common scale :math:`\\bar\\tau` is left as it is; a global temperature fitted on a few labels
(:class:`geode.ensembles.TemperatureScaling`) anchors it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_choice, check_int, check_real
from geode.ensembles.fusion import FUSION_RULES, direct_fusion, fit_inverse_temperature
from geode.ensembles.simplex import DEFAULT_EPS, as_oracle_stack, clr, softmax

__all__ = ["DESCRIPTORS", "VARIANTS", "ComparabilityRecovery", "geometry_descriptor", "project_log_scales"]

VARIANTS = ("closed_form", "alternating")
DESCRIPTORS = ("clr_norm", "entropy", "max_prob")


def geometry_descriptor(P: Any, descriptor: str = "clr_norm", *, eps: float = DEFAULT_EPS) -> np.ndarray:
    """Per-oracle geometry descriptor :math:`\\delta_m` of soft outputs ``P`` (M, N, C).

    ``"clr_norm"``: :math:`\\frac1N\\sum_i \\|\\operatorname{clr}(p_{m,i})\\|_2`; ``"entropy"``:
    :math:`\\frac1N\\sum_i H(p_{m,i})`; ``"max_prob"``: :math:`\\frac1N\\sum_i \\max_c p_{m,i,c}`.

    Returns
    -------
    numpy.ndarray, shape (M,)
    """
    check_choice("descriptor", descriptor, DESCRIPTORS)
    P = as_oracle_stack("P", P, atol=1e-4)
    return _descriptor(P, descriptor, eps)


def _descriptor(P: np.ndarray, descriptor: str, eps: float) -> np.ndarray:
    if descriptor == "clr_norm":
        return np.linalg.norm(clr(P, eps=eps), axis=-1).mean(axis=-1)
    if descriptor == "entropy":
        return -np.sum(np.where(P > 0, P * np.log(np.maximum(P, 1e-300)), 0.0), axis=-1).mean(axis=-1)
    return P.max(axis=-1).mean(axis=-1)


def project_log_scales(log_a: Any, low: float, high: float, *, n_iter: int = 100) -> np.ndarray:
    """Euclidean projection of :math:`u = \\log a` onto :math:`\\{x : \\sum_m x_m = 0,\\ low \\le x_m \\le high\\}`.

    The projection is :math:`x_m = \\operatorname{clip}(u_m - \\nu, low, high)` with the scalar
    :math:`\\nu` such that :math:`\\sum_m x_m = 0` (found by bisection; the sum is non-increasing in :math:`\\nu`).
    Requires ``low <= 0 <= high``.
    """
    u = np.asarray(log_a, dtype=float)
    if not (low <= 0.0 <= high):
        raise ValueError(f"log-scale bounds must satisfy low <= 0 <= high; got [{low}, {high}]")
    lo, hi = float(u.min() - high), float(u.max() - low)
    for _ in range(n_iter):
        nu = 0.5 * (lo + hi)
        if np.clip(u - nu, low, high).sum() > 0:
            lo = nu
        else:
            hi = nu
    return np.clip(u - 0.5 * (lo + hi), low, high)


class ComparabilityRecovery:
    """Comparability recovery before soft-output fusion (sklearn-style ``fit`` / ``transform`` / ``fuse``).

    Learns oracle-specific rectifiers :math:`R_m(p) = \\operatorname{softmax}(a_m \\operatorname{clr}(p) + b_m)`
    under :math:`\\frac1M\\sum_m \\log a_m = 0` so that the oracles' outputs live in one probability geometry
    before they are pooled. See the module docstring for the closed form, the alternating refinement and the
    exact-recovery property.

    Parameters
    ----------
    variant : {"closed_form", "alternating"}
        Frozen geometry descriptors (closed form), or alternating refinement against the consensus.
    descriptor : {"clr_norm", "entropy", "max_prob"}
        Geometry descriptor of the closed form (and of the alternating variant's initialisation).
    bias : bool
        Also learn the zero-sum biases :math:`b_m` (tail-mass / class-prior offsets); default False.
    scale_bounds : (float, float)
        :math:`[a_{\\min}, a_{\\max}]`, must contain 1.
    max_iter : int
        Maximum alternating rounds.
    tol : float
        Stopping tolerance on :math:`\\max_m |\\Delta \\log a_m|`.
    eps : float
        Probability floor inside logarithms (hard 0/1 outputs stay finite).

    Attributes
    ----------
    scales_ : numpy.ndarray, shape (M,)
        The radial scales :math:`a_m` (geometric mean one).
    biases_ : numpy.ndarray, shape (M, C)
        The biases :math:`b_m` (zero when ``bias=False``).
    descriptors_ : numpy.ndarray, shape (M,)
        The raw oracles' descriptors :math:`\\delta_m`.
    n_iter_ : int
        Alternating rounds run (0 for the closed form).

    Examples
    --------
    >>> import numpy as np
    >>> from geode.ensembles.simplex import clr, softmax
    >>> q = softmax(np.random.default_rng(0).normal(size=(100, 4)))
    >>> P = np.stack([softmax(t * clr(q)) for t in (0.5, 1.0, 2.0)])
    >>> cr = ComparabilityRecovery().fit(P)
    >>> np.round(cr.scales_, 6).tolist()
    [2.0, 1.0, 0.5]
    >>> bool(np.allclose(cr.transform(P), q))
    True
    """

    def __init__(
        self,
        variant: str = "closed_form",
        descriptor: str = "clr_norm",
        *,
        bias: bool = False,
        scale_bounds: tuple[float, float] = (1e-2, 1e2),
        max_iter: int = 50,
        tol: float = 1e-6,
        eps: float = DEFAULT_EPS,
    ) -> None:
        self.variant = check_choice("variant", variant, VARIANTS)
        self.descriptor = check_choice("descriptor", descriptor, DESCRIPTORS)
        if not isinstance(bias, bool):
            raise TypeError(f"bias must be a bool; got {type(bias).__name__}")
        self.bias = bias
        if not (isinstance(scale_bounds, (tuple, list)) and len(scale_bounds) == 2):
            raise TypeError(f"scale_bounds must be a pair (a_min, a_max); got {scale_bounds!r}")
        a_min = check_real("scale_bounds[0]", scale_bounds[0], low=0.0, high=1.0, low_inclusive=False)
        a_max = check_real("scale_bounds[1]", scale_bounds[1], low=1.0)
        self.scale_bounds = (a_min, a_max)
        self.max_iter = check_int("max_iter", max_iter, low=1)
        self.tol = check_real("tol", tol, low=0.0, low_inclusive=False)
        self.eps = check_real("eps", eps, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        self.scales_: np.ndarray | None = None
        self.biases_: np.ndarray | None = None
        self.descriptors_: np.ndarray | None = None
        self.n_iter_ = 0

    # --- fitting ---------------------------------------------------------------------------------------------

    def _project(self, log_a: np.ndarray) -> np.ndarray:
        return project_log_scales(log_a, float(np.log(self.scale_bounds[0])), float(np.log(self.scale_bounds[1])))

    def _closed_form_log_scales(self, P: np.ndarray, Z: np.ndarray) -> np.ndarray:
        delta = _descriptor(P, self.descriptor, self.eps)
        self.descriptors_ = delta
        if self.descriptor == "clr_norm":
            # degree-one homogeneous: a_m = delta* / delta_m; the gauge projection fixes delta* (Eq. closed form)
            return -np.log(np.maximum(delta, 1e-300))
        # monotone descriptor: solve delta(softmax(a_m z_m)) = mean_m delta_m by bisection on log a_m
        target = float(delta.mean())
        increasing = self.descriptor == "max_prob"  # entropy decreases with the scale, max-prob increases
        lo = np.full(Z.shape[0], np.log(self.scale_bounds[0]) - 2.0)
        hi = np.full(Z.shape[0], np.log(self.scale_bounds[1]) + 2.0)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            val = _descriptor(softmax(np.exp(mid)[:, None, None] * Z), self.descriptor, self.eps)
            too_big = (val > target) if increasing else (val < target)
            hi = np.where(too_big, mid, hi)
            lo = np.where(too_big, lo, mid)
        return 0.5 * (lo + hi)

    def _biases(self, a: np.ndarray, mu: np.ndarray, center: np.ndarray | None) -> np.ndarray:
        if not self.bias:
            return np.zeros_like(mu)
        c_bar = (a[:, None] * mu).mean(axis=0) if center is None else center
        return c_bar[None, :] - a[:, None] * mu

    def fit(self, P: Any, y: Any = None, *, normalize: bool = False) -> ComparabilityRecovery:
        """Learn the rectifiers from unlabelled soft outputs ``P`` of shape (M, N, C).

        Parameters
        ----------
        P : array_like, shape (M, N, C), or a sequence of M arrays (N, C)
            The oracles' soft outputs on the same samples; rows must be on the simplex.
        y : None
            Ignored (the method is label-free); present for sklearn compatibility.
        normalize : bool
            Renormalise rows that do not sum to one instead of raising.
        """
        P = as_oracle_stack("P", P, normalize=normalize)
        Z = clr(P, eps=self.eps)
        mu = Z.mean(axis=1)  # (M, C), mean clr vector per oracle
        log_a = self._project(self._closed_form_log_scales(P, Z))
        b = self._biases(np.exp(log_a), mu, None)
        self.n_iter_ = 0
        if self.variant == "alternating":
            lo, hi = self.scale_bounds
            for it in range(1, self.max_iter + 1):
                qbar = softmax(np.exp(log_a)[:, None, None] * Z + b[:, None, :]).mean(axis=0)  # consensus
                targets = np.broadcast_to(qbar, P.shape)
                beta = fit_inverse_temperature(Z, targets, bias=b, low=lo * 1e-2, high=hi * 1e2)
                new = self._project(np.log(beta))
                b = self._biases(np.exp(new), mu, clr(qbar, eps=self.eps).mean(axis=0))
                step = float(np.max(np.abs(new - log_a)))
                log_a = new
                self.n_iter_ = it
                if step < self.tol:
                    break
        self.scales_ = np.exp(log_a)
        self.biases_ = b
        self._n_oracles, self._n_classes = P.shape[0], P.shape[2]
        return self

    # --- using the rectifiers -----------------------------------------------------------------------------

    def _check_fitted(self, P: Any, normalize: bool) -> np.ndarray:
        if self.scales_ is None:
            raise RuntimeError("ComparabilityRecovery is not fitted: call fit(P) first")
        P = as_oracle_stack("P", P, normalize=normalize)
        if P.shape[0] != self._n_oracles or P.shape[2] != self._n_classes:
            raise ValueError(
                f"P must have {self._n_oracles} oracles and {self._n_classes} classes as in fit; got shape {P.shape}"
            )
        return P

    def transform(self, P: Any, *, normalize: bool = False) -> np.ndarray:
        """Rectified outputs :math:`R_m(p_m(x))`, shape (M, N, C); rows on the simplex."""
        P = self._check_fitted(P, normalize)
        return softmax(self.scales_[:, None, None] * clr(P, eps=self.eps) + self.biases_[:, None, :])

    def fit_transform(self, P: Any, y: Any = None, *, normalize: bool = False) -> np.ndarray:
        """:meth:`fit` then :meth:`transform` on the same outputs."""
        return self.fit(P, normalize=normalize).transform(P, normalize=normalize)

    def fuse(self, P: Any, *, rule: str = "mean", weights: Any = None, normalize: bool = False) -> np.ndarray:
        """The fused distribution: rule ``"mean"`` (linear pool, default), ``"log"`` or ``"vote"`` of the
        rectified outputs, shape (N, C)."""
        check_choice("rule", rule, FUSION_RULES)
        return direct_fusion(self.transform(P, normalize=normalize), rule, weights)
