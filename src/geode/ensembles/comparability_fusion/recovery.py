"""Pre-fusion comparability recovery: oracle-specific rectifiers on the simplex and the shared consensus.

Notation: oracle :math:`m \\in \\{1..M\\}` gives :math:`p_m(x) \\in \\Delta^{C-1}`;
:math:`z_m(x) = \\operatorname{clr}(p_m(x))` are its Aitchison (centred log-ratio) coordinates.

**Rectifier family.** :math:`R_m(p) = \\operatorname{softmax}(a_m \\operatorname{clr}(p) + b_m)` with a radial
scale :math:`a_m \\in [a_{\\min}, a_{\\max}]`, a bias :math:`b_m \\in \\mathbb{R}^C` with
:math:`\\sum_c b_{m,c} = 0` (zero unless ``bias=True``), and the gauge constraint
:math:`\\frac1M \\sum_m \\log a_m = 0`, which fixes the common scale that no label-free method can identify.

**Closed form (frozen descriptors).** A geometry descriptor :math:`\\delta_m` is computed once from each
oracle's raw outputs, and :math:`a_m` equalises it across oracles:

* ``descriptor="clr_norm"`` (default): the clr norm on the *shared support*. For sample :math:`i`,
  :math:`S_i = \\{c : p_{m,c}(x_i) > s \\text{ for every oracle } m\\}` (``support_floor`` :math:`s = 10^{-4}`),
  :math:`\\operatorname{clr}_{S}(p)_c = \\log p_c - \\frac{1}{|S|}\\sum_{c' \\in S} \\log p_{c'}` for :math:`c \\in S`,
  and :math:`\\delta_m = \\operatorname{mean}_{i : |S_i| \\ge 2} \\|\\operatorname{clr}_{S_i}(p_m(x_i))\\|_2`. The
  log-ratios inside one set of classes scale exactly with the temperature (the normaliser cancels), so
  it is homogeneous of degree one in the scale, and :math:`a_m = \\delta^\\star / \\delta_m` with
  :math:`\\delta^\\star` the geometric mean of the :math:`\\delta_m` (closed form). Probabilities at or near the
  log floor :math:`\\varepsilon` never enter it: revision 1's full clr norm (``"clr_norm_floored"``,
  :math:`\\frac1N \\sum_i \\|z_m(x_i)\\|_2`) was dominated by :math:`\\log \\varepsilon` wherever an oracle put
  (near) zero mass on a class: on the digits oracles 87 % of naive Bayes' and 32 % of the random forest's
  probabilities are below :math:`10^{-6}`, and it measured how many classes were zeroed, not sharpness
  (fitted scales about 1); it also broke exact recovery whenever a probability fell below the floor. The
  shared support keeps exact recovery there, because the set is the same for every oracle under
  matched radial distortion. Without any sample with two shared classes, all scales stay 1;
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
from sklearn.base import BaseEstimator

from geode.core.validation import check_array, check_choice, check_int, check_real
from geode.ensembles.fusion import FUSION_RULES, direct_fusion, fit_inverse_temperature
from geode.ensembles.simplex import DEFAULT_EPS, _clr, _softmax, as_oracle_stack, nll

__all__ = ["DESCRIPTORS", "VARIANTS", "ComparabilityRecovery", "geometry_descriptor", "project_log_scales"]

VARIANTS = ("closed_form", "alternating")
DESCRIPTORS = ("clr_norm", "clr_norm_floored", "entropy", "max_prob")
_HOMOGENEOUS = ("clr_norm", "clr_norm_floored")
DEFAULT_SUPPORT_FLOOR = 1e-4


def geometry_descriptor(
    P: Any, descriptor: str = "clr_norm", *, eps: float = DEFAULT_EPS, support_floor: float = DEFAULT_SUPPORT_FLOOR
) -> np.ndarray:
    """Per-oracle geometry descriptor :math:`\\delta_m` of soft outputs ``P`` (M, N, C).

    ``"clr_norm"``: the mean clr norm on the classes every oracle gives more than ``support_floor``
    (samples with fewer than two such classes are skipped; NaN when none is left; module docstring);
    ``"clr_norm_floored"``: :math:`\\frac1N\\sum_i \\|\\operatorname{clr}(p_{m,i})\\|_2` over all classes with the
    log floor ``eps``; ``"entropy"``: :math:`\\frac1N\\sum_i H(p_{m,i})`; ``"max_prob"``:
    :math:`\\frac1N\\sum_i \\max_c p_{m,i,c}`.

    Returns
    -------
    numpy.ndarray, shape (M,)
    """
    check_choice("descriptor", descriptor, DESCRIPTORS)
    support_floor = check_real("support_floor", support_floor, low=0.0, high=1.0, high_inclusive=False)
    eps = check_real("eps", eps, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    P = as_oracle_stack("P", P, atol=1e-4)
    return _descriptor(P, descriptor, eps, support_floor)


def _shared_support_clr_norm(P: np.ndarray, eps: float, floor: float) -> np.ndarray:
    mask = np.all(P > floor, axis=0)  # (N, C): classes every oracle gives mass above the floor
    count = mask.sum(axis=-1)
    valid = count >= 2
    if not np.any(valid):
        return np.full(P.shape[0], np.nan)
    logp = np.log(np.maximum(P[:, valid], eps)) * mask[valid]  # (M, n, C), zero off the support
    m, cnt = mask[valid], count[valid][None, :, None]
    centred = (logp - logp.sum(axis=-1, keepdims=True) / cnt) * m
    return np.linalg.norm(centred, axis=-1).mean(axis=-1)


def _descriptor(P: np.ndarray, descriptor: str, eps: float, floor: float = DEFAULT_SUPPORT_FLOOR) -> np.ndarray:
    if descriptor == "clr_norm":
        return _shared_support_clr_norm(P, eps, floor)
    if descriptor == "clr_norm_floored":
        return np.linalg.norm(_clr(P, eps), axis=-1).mean(axis=-1)
    if descriptor == "entropy":
        return -np.sum(np.where(P > 0, P * np.log(np.maximum(P, 1e-300)), 0.0), axis=-1).mean(axis=-1)
    return P.max(axis=-1).mean(axis=-1)


def project_log_scales(log_a: Any, low: float, high: float, *, n_iter: int = 100) -> np.ndarray:
    """Euclidean projection of :math:`u = \\log a` onto :math:`\\{x : \\sum_m x_m = 0,\\ low \\le x_m \\le high\\}`.

    The projection is :math:`x_m = \\operatorname{clip}(u_m - \\nu, low, high)` with the scalar
    :math:`\\nu` such that :math:`\\sum_m x_m = 0` (found by bisection; the sum is non-increasing in :math:`\\nu`).
    Requires ``low <= 0 <= high`` and a finite, non-empty 1-D ``log_a``.
    """
    u = check_array("log_a", log_a, ndim=1)
    if u.shape[0] == 0:
        raise ValueError("log_a must hold at least one log-scale; got an empty array")
    low = check_real("low", low)
    high = check_real("high", high)
    n_iter = check_int("n_iter", n_iter, low=1)
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


class ComparabilityRecovery(BaseEstimator):
    """Comparability recovery before soft-output fusion (an sklearn estimator: ``fit`` / ``transform`` / ``fuse``).

    Learns oracle-specific rectifiers :math:`R_m(p) = \\operatorname{softmax}(a_m \\operatorname{clr}(p) + b_m)`
    under :math:`\\frac1M\\sum_m \\log a_m = 0` so that the oracles' outputs live in one probability geometry
    before they are pooled. See the module docstring for the closed form, the alternating refinement and the
    exact-recovery property.

    It follows sklearn's estimator contract: parameters are stored as given and validated at ``fit``
    (``get_params``, ``set_params``, ``sklearn.base.clone``); with ``layout="samples"`` the input is
    (N, M, C), samples first, so ``GridSearchCV`` splits samples, and :meth:`score` (the mean
    log-likelihood of the fused distribution) lets it select, e.g., the descriptor on labelled data.

    Parameters
    ----------
    variant : {"closed_form", "alternating"}
        Frozen geometry descriptors (closed form), or alternating refinement against the consensus.
    descriptor : {"clr_norm", "clr_norm_floored", "entropy", "max_prob"}
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
    support_floor : float
        ``"clr_norm"`` only: a class enters a sample's shared support when every oracle gives it more than
        this probability.
    pool : {"mean", "log", "vote"}
        Default rule of :meth:`fuse` and :meth:`score`.
    layout : {"oracles", "samples"}
        Input layout: (M, N, C) (default) or (N, M, C) (sklearn's samples-first; outputs follow it).

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
        support_floor: float = DEFAULT_SUPPORT_FLOOR,
        pool: str = "mean",
        layout: str = "oracles",
    ) -> None:
        # sklearn's contract: store the parameters as given (clone checks identity); validate them now and at fit
        self.variant = variant
        self.descriptor = descriptor
        self.bias = bias
        self.scale_bounds = scale_bounds
        self.max_iter = max_iter
        self.tol = tol
        self.eps = eps
        self.support_floor = support_floor
        self.pool = pool
        self.layout = layout
        self._validate()

    def _validate(self) -> None:
        check_choice("variant", self.variant, VARIANTS)
        check_choice("descriptor", self.descriptor, DESCRIPTORS)
        if not isinstance(self.bias, bool):
            raise TypeError(f"bias must be a bool; got {type(self.bias).__name__}")
        sb = self.scale_bounds
        if not (isinstance(sb, (tuple, list)) and len(sb) == 2):
            raise TypeError(f"scale_bounds must be a pair (a_min, a_max); got {sb!r}")
        check_real("scale_bounds[0]", sb[0], low=0.0, high=1.0, low_inclusive=False)
        check_real("scale_bounds[1]", sb[1], low=1.0)
        check_int("max_iter", self.max_iter, low=1)
        check_real("tol", self.tol, low=0.0, low_inclusive=False)
        check_real("eps", self.eps, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        check_real("support_floor", self.support_floor, low=0.0, high=1.0, high_inclusive=False)
        check_choice("pool", self.pool, FUSION_RULES)
        check_choice("layout", self.layout, ("oracles", "samples"))

    @property
    def _bounds(self) -> tuple[float, float]:
        return float(self.scale_bounds[0]), float(self.scale_bounds[1])

    def _stack(self, P: Any, normalize: bool) -> np.ndarray:
        if self.layout == "samples":
            arr = np.asarray(P, dtype=float)
            if arr.ndim != 3:
                raise ValueError(f"P must have shape (N, M, C) with layout='samples'; got shape {arr.shape}")
            P = np.swapaxes(arr, 0, 1)
        return as_oracle_stack("P", P, normalize=normalize)

    def _out(self, R: np.ndarray) -> np.ndarray:
        return np.swapaxes(R, 0, 1) if self.layout == "samples" else R

    # --- fitting ---------------------------------------------------------------------------------------------

    def _project(self, log_a: np.ndarray) -> np.ndarray:
        return project_log_scales(log_a, float(np.log(self._bounds[0])), float(np.log(self._bounds[1])))

    def _closed_form_log_scales(self, P: np.ndarray, Z: np.ndarray) -> np.ndarray:
        delta = _descriptor(P, self.descriptor, self.eps, self.support_floor)
        self.descriptors_ = delta
        if self.descriptor in _HOMOGENEOUS:
            if not np.all(np.isfinite(delta)):  # no shared support: no geometry to compare, scales stay 1
                return np.zeros(P.shape[0])
            # degree-one homogeneous: a_m = delta* / delta_m; the gauge projection fixes delta* (Eq. closed form)
            return -np.log(np.maximum(delta, 1e-300))
        # monotone descriptor: solve delta(softmax(a_m z_m)) = mean_m delta_m by bisection on log a_m
        target = float(delta.mean())
        increasing = self.descriptor == "max_prob"  # entropy decreases with the scale, max-prob increases
        lo = np.full(Z.shape[0], np.log(self._bounds[0]) - 2.0)
        hi = np.full(Z.shape[0], np.log(self._bounds[1]) + 2.0)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            val = _descriptor(_softmax(np.exp(mid)[:, None, None] * Z), self.descriptor, self.eps, self.support_floor)
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
        P : array_like, shape (M, N, C), or a sequence of M arrays (N, C); (N, M, C) with ``layout="samples"``
            The oracles' soft outputs on the same samples; rows must be on the simplex.
        y : None
            Ignored (the method is label-free); present for sklearn compatibility.
        normalize : bool
            Renormalise rows that do not sum to one instead of raising.
        """
        self._validate()
        P = self._stack(P, normalize)
        Z = _clr(P, self.eps)
        mu = Z.mean(axis=1)  # (M, C), mean clr vector per oracle
        log_a = self._project(self._closed_form_log_scales(P, Z))
        b = self._biases(np.exp(log_a), mu, None)
        self.n_iter_ = 0
        if self.variant == "alternating":
            lo, hi = self._bounds
            for it in range(1, self.max_iter + 1):
                qbar = _softmax(np.exp(log_a)[:, None, None] * Z + b[:, None, :]).mean(axis=0)  # consensus
                targets = np.broadcast_to(qbar, P.shape)
                beta = fit_inverse_temperature(Z, targets, bias=b, low=lo * 1e-2, high=hi * 1e2)
                new = self._project(np.log(beta))
                b = self._biases(np.exp(new), mu, _clr(qbar, self.eps).mean(axis=0))
                step = float(np.max(np.abs(new - log_a)))
                log_a = new
                self.n_iter_ = it
                if step < self.tol:
                    break
        self.scales_ = np.exp(log_a)
        self.biases_ = b
        self.n_features_in_ = P.shape[2]
        self._n_oracles, self._n_classes = P.shape[0], P.shape[2]
        return self

    # --- using the rectifiers -----------------------------------------------------------------------------

    def _check_fitted(self, P: Any, normalize: bool) -> np.ndarray:
        if getattr(self, "scales_", None) is None:
            raise RuntimeError("ComparabilityRecovery is not fitted: call fit(P) first")
        P = self._stack(P, normalize)
        if P.shape[0] != self._n_oracles or P.shape[2] != self._n_classes:
            raise ValueError(
                f"P must have {self._n_oracles} oracles and {self._n_classes} classes as in fit; got shape {P.shape}"
            )
        return P

    def transform(self, P: Any, *, normalize: bool = False) -> np.ndarray:
        """Rectified outputs :math:`R_m(p_m(x))`, shape (M, N, C) (or (N, M, C)); rows on the simplex."""
        P = self._check_fitted(P, normalize)
        return self._out(self._rectify(P))

    def _rectify(self, P: np.ndarray) -> np.ndarray:
        return _softmax(self.scales_[:, None, None] * _clr(P, self.eps) + self.biases_[:, None, :])

    def fit_transform(self, P: Any, y: Any = None, *, normalize: bool = False) -> np.ndarray:
        """:meth:`fit` then :meth:`transform` on the same outputs."""
        return self.fit(P, normalize=normalize).transform(P, normalize=normalize)

    def fuse(self, P: Any, *, rule: str | None = None, weights: Any = None, normalize: bool = False) -> np.ndarray:
        """The fused distribution: rule ``"mean"`` (linear pool), ``"log"`` or ``"vote"`` of the rectified
        outputs (default: the ``pool`` parameter), shape (N, C)."""
        rule = self.pool if rule is None else rule
        check_choice("rule", rule, FUSION_RULES)
        return direct_fusion(self._rectify(self._check_fitted(P, normalize)), rule, weights)

    def score(self, P: Any, y: Any, *, normalize: bool = False) -> float:
        """Mean log-likelihood of the labels ``y`` under the fused distribution (higher is better)."""
        return -nll(self.fuse(P, normalize=normalize), y, eps=self.eps)
