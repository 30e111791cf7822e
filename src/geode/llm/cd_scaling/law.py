r"""Compute-Data (CD) scaling laws: token effectiveness, fitting, regimes and allocation.

The three laws below share the Chinchilla core (Hoffmann et al. 2022) written on an *effective* number of
training tokens :math:`D_{\mathrm{eff}}`:

.. math::

    L(N, D, U) = E + \frac{A}{N^{\alpha}} + \frac{B}{D_{\mathrm{eff}}^{\beta}}, \qquad
    D_{\mathrm{eff}} = U + \eta \, D_{\mathrm{der}}, \qquad D_{\mathrm{der}} = D - U,

with :math:`N` parameters, :math:`D` training tokens of which :math:`U` are unique (fresh) and
:math:`D_{\mathrm{der}}` *derived* (repeated or paraphrased), and the *token effectiveness*
:math:`\eta \in [0, 1]`, the worth of a derived token relative to a fresh one. Writing :math:`R = D/U - 1`
(derived tokens per unique token),

.. math::

    \eta(R; R^*) = \frac{R^* (1 - e^{-R/R^*})}{R} \quad (\eta = 1 \text{ at } R = 0),

so that :math:`D_{\mathrm{eff}} = U + U R^* (1 - e^{-R/R^*})` saturates at :math:`U (1 + R^*)` as the corpus
is expanded. The laws differ in :math:`R^*`:

- :class:`ChinchillaLaw`: :math:`\eta \equiv 1` (every token counted as fresh; ``tokens="unique"`` gives the
  other limit :math:`\eta \equiv 0`, :math:`D_{\mathrm{eff}} = U`);
- :class:`MuennighoffLaw`: one constant :math:`R^*_s` per expansion strategy :math:`s` (the data term of
  Muennighoff et al. 2023, "Scaling Data-Constrained Language Models");
- :class:`CDScalingLaw`: :math:`R^*_s(N, \rho) = r_{0,s} (N/N_{\mathrm{ref}})^{-a_s}
  (\rho/\rho_{\mathrm{ref}})^{-b_s}` with the tokens-per-parameter ratio :math:`\rho = D/N`, so that
  :math:`\eta` depends jointly on model size, :math:`\rho` and the amount of derived data, and saturates.

Limits: at fresh data (:math:`D = U`) every law is Chinchilla; :class:`CDScalingLaw` with
:math:`a_s = b_s = 0` is :class:`MuennighoffLaw`; :math:`R^* \to \infty` gives :math:`\eta = 1`.

Fitting follows Hoffmann et al.: Huber loss (``delta``) on the residual of the log loss, the loss written
as a log-sum-exp of :math:`(e, a - \alpha \log N, b - \beta \log D_{\mathrm{eff}})`, L-BFGS-B from
``n_starts`` initialisations drawn from fixed boxes, the best final objective kept. Every law gets the same
``n_starts`` and ``maxiter`` (equal fitting budget).

Inferred (the paper's text gives no formula for :math:`\eta`): the Muennighoff-nesting form above, the
power-law dependence of :math:`R^*` on :math:`N` and :math:`\rho`, the reference point
(:math:`N_{\mathrm{ref}}`, :math:`\rho_{\mathrm{ref}}` = geometric means of the fitted data), the regime
rule of :meth:`CDScalingLaw.regime` (marginal effectiveness ``tau``), and the data term only (Muennighoff's
excess-parameter term :math:`N'` is omitted; :func:`muennighoff_loss` has it, for reference).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from scipy.special import huber, logsumexp

from geode.core.validation import check_real

__all__ = [
    "MUENNIGHOFF_C4",
    "CDScalingLaw",
    "ChinchillaLaw",
    "MuennighoffLaw",
    "effective_data",
    "estimate_token_effectiveness",
    "muennighoff_loss",
    "token_effectiveness",
]

# Muennighoff et al. (2023) fit on C4 (log A, log B, log E, alpha, beta, R_D*, R_N*), datablations README
MUENNIGHOFF_C4: dict[str, float] = dict(
    a=6.255414, b=7.3049974, e=0.6254804, alpha=0.3526596, beta=0.3526596, rd_star=15.387756, rn_star=5.309743
)
"""Muennighoff et al.'s fitted C4 parameters (``huggingface/datablations`` README), the default of
:func:`muennighoff_loss`."""


def _positive(name: str, x: Any) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be array-like of numbers; got {type(x).__name__}") from None
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0; got {x!r}" if arr.size < 8 else f"{name} must be > 0")
    return arr


def _ratio(D: np.ndarray, U: np.ndarray) -> np.ndarray:
    try:
        np.broadcast_shapes(D.shape, U.shape)
    except ValueError:
        raise ValueError(f"D and U must broadcast together; got shapes {D.shape} and {U.shape}") from None
    if np.any(U > D * (1 + 1e-12)):
        raise ValueError("U (unique tokens) must be <= D (training tokens); pass U = D for fresh data")
    return np.maximum(D / U - 1.0, 0.0)


def token_effectiveness(D: Any, U: Any, r_star: Any) -> np.ndarray:
    r"""Average worth of a derived token, :math:`\eta = R^*(1 - e^{-R/R^*})/R` with :math:`R = D/U - 1`.

    Parameters
    ----------
    D, U : array_like
        Training tokens and unique tokens (:math:`U \le D`), broadcastable (any shapes that broadcast; empty
        arrays give an empty result).
    r_star : array_like
        Saturation constant :math:`R^* > 0` (``np.inf`` gives :math:`\eta = 1`).

    Returns
    -------
    ndarray
        :math:`\eta \in (0, 1]`, equal to 1 where :math:`R = 0`.
    """
    D, U = _positive("D", D), _positive("U", U)
    try:
        rs = np.asarray(r_star, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"r_star must be a number or array of numbers; got {type(r_star).__name__}") from None
    if np.any(~(rs > 0)):
        raise ValueError("r_star must be > 0")
    R = _ratio(D, U)
    x = R / rs
    with np.errstate(invalid="ignore", divide="ignore"):
        eta = np.where(x > 1e-8, -np.expm1(-x) / np.where(x > 0, x, 1.0), 1.0 - x / 2)
    return np.clip(eta, 0.0, 1.0)


def effective_data(D: Any, U: Any, r_star: Any) -> np.ndarray:
    r""":math:`D_{\mathrm{eff}} = U + U R^*(1 - e^{-R/R^*})`, the fresh-token equivalent of ``D`` tokens.

    Equals ``D`` for fresh data (``U = D``) and saturates at :math:`U(1 + R^*)` as :math:`D \to \infty`.
    ``D``, ``U`` and ``r_star`` broadcast as in :func:`token_effectiveness` (``r_star = np.inf``: every token counts).
    """
    D, U = _positive("D", D), _positive("U", U)
    _ratio(D, U)
    return U + token_effectiveness(D, U, r_star) * (D - U)


def muennighoff_loss(N: Any, D: Any, U: Any, params: dict[str, float] | None = None) -> np.ndarray:
    r"""The full data-constrained law of Muennighoff et al. (2023), with its excess-parameter term.

    :math:`L = E + A / N'^{\alpha} + B / D'^{\beta}` with :math:`D' = U + U R_D^*(1 - e^{-R_D/R_D^*})`,
    :math:`U_N = \min(N, N_{\mathrm{opt}}(U))`, :math:`R_N = N/U_N - 1` and
    :math:`N' = U_N + U_N R_N^*(1 - e^{-R_N/R_N^*})`; ``params`` defaults to :data:`MUENNIGHOFF_C4`.
    ``N``, ``D`` and ``U`` are positive and broadcast together (any shapes that broadcast; empty arrays give an empty
    result).
    """
    p = dict(MUENNIGHOFF_C4 if params is None else params)
    N, D, U = _positive("N", N), _positive("D", D), _positive("U", U)
    A, B, E = np.exp(p["a"]), np.exp(p["b"]), np.exp(p["e"])
    alpha, beta = p["alpha"], p["beta"]
    G = ((alpha * A) / (beta * B)) ** (1 / (alpha + beta))
    n_opt_u = (U * G) ** (beta / alpha) * G  # compute-optimal N for U tokens
    UN = np.minimum(N, n_opt_u)
    RN = np.maximum(N / UN - 1, 0)
    n_eff = UN + UN * p["rn_star"] * -np.expm1(-RN / p["rn_star"])
    return E + A / n_eff**alpha + B / effective_data(D, U, p["rd_star"]) ** beta


def estimate_token_effectiveness(
    D_fresh: Any, L_fresh: Any, D: Any, U: Any, L: Any, *, clip: bool = False
) -> np.ndarray:
    r"""Non-parametric token effectiveness of runs on derived data, against a fresh-data curve of one model size.

    :math:`\hat\eta = (D_{\mathrm{eq}} - U) / (D - U)`, where :math:`D_{\mathrm{eq}}` is the number of fresh
    tokens that reaches loss ``L`` on the fresh curve (log-log linear interpolation of ``L_fresh`` against
    ``D_fresh``, extrapolated linearly in log-log outside it).

    Parameters
    ----------
    D_fresh, L_fresh : array_like, shape (m,)
        Fresh-data runs of one model size (``m >= 2`` distinct ``D``).
    D, U, L : array_like, shape (k,)
        Runs of the same size on ``U`` unique tokens expanded to ``D > U`` tokens, and their losses (``U`` may be
        one number for every run).
    clip : bool
        Clip the estimate to [0, 1] (noise can push it outside).
    """
    Df, Lf = _positive("D_fresh", D_fresh).ravel(), _positive("L_fresh", L_fresh).ravel()
    if Df.shape != Lf.shape or np.unique(Df).size < 2:
        raise ValueError("D_fresh and L_fresh need the same length and >= 2 distinct D_fresh")
    if np.ndim(D_fresh) != 1 or np.ndim(L_fresh) != 1:
        raise ValueError(
            f"D_fresh and L_fresh must be 1-D arrays; got shapes {np.shape(D_fresh)} and {np.shape(L_fresh)}"
        )
    D, U, L = _positive("D", D), _positive("U", U), _positive("L", L)
    if D.ndim != 1 or D.size == 0:
        raise ValueError(f"D must be a non-empty 1-D array; got shape {D.shape}")
    for name, x in (("U", U), ("L", L)):
        if x.shape != D.shape and not (name == "U" and x.ndim == 0):
            raise ValueError(f"{name} must have the shape of D {D.shape}; got {x.shape}")
    if np.any(D <= U):
        raise ValueError("D must exceed U for every derived run")
    order = np.argsort(Df)
    x, y = np.log(Df[order]), np.log(Lf[order])
    # loss decreases in D: interpolate log D as a function of log L on the monotone (running-min) curve
    y = np.minimum.accumulate(y)
    keep = np.concatenate([[True], np.diff(y) < 0])
    x, y = x[keep], y[keep]
    if x.size < 2:
        raise ValueError("the fresh-data curve does not decrease; cannot invert it")
    ly = np.log(L)
    lo = x[0] + (ly - y[0]) * (x[1] - x[0]) / (y[1] - y[0])
    hi = x[-1] + (ly - y[-1]) * (x[-1] - x[-2]) / (y[-1] - y[-2])
    mid = np.interp(-ly, -y, x)
    log_deq = np.where(ly > y[0], lo, np.where(ly < y[-1], hi, mid))
    eta = (np.exp(log_deq) - U) / (D - U)
    return np.clip(eta, 0.0, 1.0) if clip else eta


class _Law:
    """Shared core: Chinchilla on an effective token count, Huber fit in log space (subclasses give R*)."""

    _core_names = ("e", "a", "alpha", "b", "beta")
    _core_box = ((-3.0, 0.0), (0.0, 10.0), (0.1, 1.5), (0.0, 10.0), (0.1, 1.5))  # e relative to log min(L)
    _core_bounds = ((-30.0, 10.0), (-20.0, 60.0), (0.01, 3.0), (-20.0, 60.0), (0.01, 3.0))

    def __init__(
        self,
        strategies: Sequence[str] = ("repeat",),
        *,
        delta: float = 1e-3,
        n_starts: int = 16,
        maxiter: int = 500,
        seed: int = 0,
    ) -> None:
        strategies = tuple(strategies)
        if not strategies or any(not isinstance(s, str) or s == "fresh" for s in strategies):
            raise ValueError(f"strategies must be non-empty names other than 'fresh'; got {strategies!r}")
        if len(set(strategies)) != len(strategies):
            raise ValueError(f"strategies must be distinct; got {strategies!r}")
        check_real("delta", delta, low=0.0, low_inclusive=False)
        if n_starts < 1 or maxiter < 1:
            raise ValueError(f"n_starts and maxiter must be >= 1; got {n_starts}, {maxiter}")
        self.strategies = strategies
        self.delta, self.n_starts, self.maxiter, self.seed = float(delta), int(n_starts), int(maxiter), int(seed)
        self.params_: dict[str, float] | None = None

    # -- per-law pieces -------------------------------------------------------------------------------
    def _strategy_names(self) -> tuple[str, ...]:
        return ()

    def _strategy_box(self) -> tuple[tuple[float, float], ...]:
        return ()

    def _strategy_bounds(self) -> tuple[tuple[float, float], ...]:
        return ()

    def _r_star(self, p: dict[str, float], N: np.ndarray, D: np.ndarray, s: str) -> np.ndarray:
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------------------
    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the fitted parameters, in the order of the optimiser's vector."""
        return self._core_names + tuple(f"{n}[{s}]" for s in self.strategies for n in self._strategy_names())

    @property
    def n_params(self) -> int:
        """Number of fitted parameters."""
        return len(self.param_names)

    def _check(self, N: Any, D: Any, U: Any, strategy: Any) -> tuple[np.ndarray, ...]:
        N, D, U = _positive("N", N), _positive("D", D), _positive("U", U)
        try:
            N, D, U = np.broadcast_arrays(N, D, U)
        except ValueError as err:
            raise ValueError(f"N, D, U must broadcast together; got shapes {N.shape}, {D.shape}, {U.shape}") from err
        _ratio(D, U)
        if strategy is None:
            if len(self.strategies) > 1:
                raise ValueError(f"strategy is required with several strategies {self.strategies}")
            strategy = self.strategies[0]
        s = np.broadcast_to(np.asarray(strategy, dtype=object), N.shape)
        bad = set(s[D > U].ravel().tolist()) - set(self.strategies)
        if bad:
            raise ValueError(f"strategy {sorted(map(str, bad))} not in {self.strategies} (runs with D > U need one)")
        return N, D, U, s

    def _unpack(self, theta: np.ndarray) -> dict[str, float]:
        return dict(zip(self.param_names, map(float, theta)))

    def _eta(self, p: dict[str, float], N: np.ndarray, D: np.ndarray, U: np.ndarray, s: np.ndarray) -> np.ndarray:
        eta = np.ones_like(D)
        for name in self.strategies:
            m = (s == name) & (D > U)
            if np.any(m):
                rs = self._r_star(p, N[m], D[m], name)
                eta[m] = token_effectiveness(D[m], U[m], np.clip(rs, 1e-12, 1e12))
        return eta

    def _log_loss(self, p: dict[str, float], N, D, U, s) -> np.ndarray:
        d_eff = U + self._eta(p, N, D, U, s) * (D - U)
        terms = np.stack(
            [np.full_like(N, p["e"]), p["a"] - p["alpha"] * np.log(N), p["b"] - p["beta"] * np.log(d_eff)]
        )
        return logsumexp(terms, axis=0)

    def fit(self, N: Any, D: Any, U: Any, loss: Any, strategy: Any = None) -> _Law:
        """Fit the law to runs ``(N, D, U) -> loss`` (Huber on log-loss residuals, L-BFGS-B, multi-start).

        Parameters
        ----------
        N, D, U, loss : array_like, shape (n,)
            Parameters, training tokens, unique tokens (``U = D`` for fresh data) and final loss of each run.
        strategy : str or array_like of str, optional
            The expansion strategy of each run (ignored where ``D == U``); required with several strategies.

        Returns
        -------
        self
            With ``params_`` (dict), ``objective_`` and ``ref_`` set.
        """
        N, D, U, s = self._check(N, D, U, strategy)
        L = _positive("loss", loss)
        if L.shape != N.shape:
            raise ValueError(f"loss must have the shape of N ({N.shape}); got {L.shape}")
        N, D, U, s, L = (x.ravel() for x in (N, D, U, s, L))
        if N.size < self.n_params:
            raise ValueError(f"need at least {self.n_params} runs to fit {self.n_params} parameters; got {N.size}")
        self.ref_ = {"N": float(np.exp(np.mean(np.log(N)))), "rho": float(np.exp(np.mean(np.log(D / N))))}
        y = np.log(L)
        names = self.param_names

        def objective(theta: np.ndarray) -> float:
            pred = self._log_loss(dict(zip(names, theta)), N, D, U, s)
            r = pred - y
            return float(np.sum(huber(self.delta, r))) if np.all(np.isfinite(r)) else 1e30

        box = list(self._core_box) + [b for _ in self.strategies for b in self._strategy_box()]
        bounds = list(self._core_bounds) + [b for _ in self.strategies for b in self._strategy_bounds()]
        rng = np.random.default_rng(self.seed)
        best: tuple[float, np.ndarray] | None = None
        for _ in range(self.n_starts):
            x0 = np.array([rng.uniform(lo, hi) for lo, hi in box])
            x0[0] += float(np.log(L.min()))
            res = minimize(objective, x0, method="L-BFGS-B", bounds=bounds, options={"maxiter": self.maxiter})
            if best is None or res.fun < best[0]:
                best = (float(res.fun), res.x)
        assert best is not None
        self.objective_ = best[0]
        self.params_ = self._unpack(best[1])
        return self

    def _fitted(self) -> dict[str, float]:
        if self.params_ is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(...) or set_params(...) first")
        return self.params_

    def set_params(self, ref: dict[str, float] | None = None, **params: float) -> _Law:
        """Set the law's parameters by name (e.g. to evaluate a known law); all of ``param_names`` needed."""
        missing = set(self.param_names) - set(params)
        if missing:
            raise ValueError(f"missing parameters {sorted(missing)}")
        self.params_ = {k: float(params[k]) for k in self.param_names}
        self.ref_ = dict(ref or {"N": 1.0, "rho": 1.0})
        return self

    def predict(self, N: Any, D: Any, U: Any = None, strategy: Any = None) -> np.ndarray:
        """Predicted loss :math:`E + A/N^\\alpha + B/D_{\\mathrm{eff}}^\\beta` (``U=None`` means fresh data).

        ``N``, ``D`` and ``U`` broadcast together (any shapes that broadcast)."""
        p = self._fitted()
        N, D, U, s = self._check(N, D, D if U is None else U, strategy)
        return np.exp(self._log_loss(p, N, D, U, s))

    def eta(self, N: Any, D: Any, U: Any, strategy: Any = None) -> np.ndarray:
        """Fitted average token effectiveness of the derived tokens of ``(N, D, U)`` (1 where ``D == U``)."""
        p = self._fitted()
        N, D, U, s = self._check(N, D, U, strategy)
        return self._eta(p, N, D, U, s)

    def effective_data(self, N: Any, D: Any, U: Any, strategy: Any = None) -> np.ndarray:
        """Fresh-token equivalent :math:`D_{\\mathrm{eff}} = U + \\eta (D - U)`."""
        N, D, U, s = self._check(N, D, U, strategy)
        return U + self.eta(N, D, U, s) * (D - U)

    def marginal_effectiveness(self, N: Any, D: Any, U: Any, strategy: Any = None, rel: float = 1e-4) -> np.ndarray:
        """Worth of one more derived token, :math:`\\partial D_{\\mathrm{eff}} / \\partial D` (forward difference)."""
        N, D, U, s = self._check(N, D, U, strategy)
        D2 = D * (1 + rel)
        return (self.effective_data(N, D2, U, s) - self.effective_data(N, D, U, s)) / (D2 - D)

    def regime(self, N: Any, D: Any, U: Any, strategy: Any = None, tau: float = 0.1) -> np.ndarray:
        """``"compute-bound"`` (D <= U), ``"data-bound"`` (derived tokens still pay: marginal effectiveness
        >= ``tau``) or ``"model-bound"`` (derived data saturated: only a larger model lowers the loss)."""
        if not 0 < tau < 1:
            raise ValueError(f"tau must be in (0, 1); got {tau!r}")
        N, D, U, s = self._check(N, D, U, strategy)
        m = self.marginal_effectiveness(N, D, U, s)
        return np.where(D <= U, "compute-bound", np.where(m >= tau, "data-bound", "model-bound"))

    def optimal_allocation(self, C: float, U: float | None = None, strategy: str | None = None) -> tuple[float, float]:
        """Loss-minimising ``(N, D)`` at compute ``C = 6 N D`` with ``U`` unique tokens (None: unlimited).

        Minimises the law over :math:`\\log N` (``scipy.optimize.minimize_scalar``, bounded) with
        :math:`D = C / (6N)` and :math:`U` capped at :math:`D`.
        """
        self._fitted()
        if not C > 6:
            raise ValueError(f"C must exceed 6 (one parameter, one token); got {C!r}")
        if U is not None and not U > 0:
            raise ValueError(f"U must be > 0; got {U!r}")

        def f(log_n: float) -> float:
            n = np.exp(log_n)
            d = C / (6 * n)
            u = d if U is None else min(U, d)
            return float(self.predict(n, d, u, strategy if strategy is not None else self.strategies[0]))

        res = minimize_scalar(f, bounds=(0.0, float(np.log(C / 6))), method="bounded", options={"xatol": 1e-6})
        n = float(np.exp(res.x))
        return n, C / (6 * n)


class ChinchillaLaw(_Law):
    r"""Chinchilla, :math:`L = E + A/N^\alpha + B/D^\beta`, blind to repetition.

    ``tokens="all"`` counts every token as fresh (:math:`\eta \equiv 1`, the compute-optimal law applied
    as-is); ``tokens="unique"`` counts only unique tokens (:math:`\eta \equiv 0`). Five parameters.
    """

    def __init__(self, strategies: Sequence[str] = ("repeat",), *, tokens: str = "all", **kw: Any) -> None:
        if tokens not in ("all", "unique"):
            raise ValueError(f"tokens must be 'all' or 'unique'; got {tokens!r}")
        super().__init__(strategies, **kw)
        self.tokens = tokens

    def _eta(self, p, N, D, U, s):  # noqa: ANN001
        return np.ones_like(D) if self.tokens == "all" else np.where(D > U, 0.0, 1.0)


class MuennighoffLaw(_Law):
    r"""Data-constrained law with one constant :math:`R^*_s` per strategy (Muennighoff et al. 2023, data term).

    Parameters: the Chinchilla core plus ``log_rstar[s]`` for each strategy.
    """

    def _strategy_names(self):
        return ("log_rstar",)

    def _strategy_box(self):
        return ((0.0, 4.0),)

    def _strategy_bounds(self):
        return ((-6.0, 12.0),)

    def _r_star(self, p, N, D, s):  # noqa: ANN001
        return np.full_like(N, np.exp(p[f"log_rstar[{s}]"]))


class CDScalingLaw(_Law):
    r"""Compute-Data scaling law: Chinchilla on :math:`D_{\mathrm{eff}} = U + \eta(N, \rho, R)\,(D - U)`.

    :math:`\eta = R^*(1 - e^{-R/R^*})/R`, :math:`R = D/U - 1`,
    :math:`R^*_s = \exp(\log r_{0,s}) \, (N/N_{\mathrm{ref}})^{-a_s} (\rho/\rho_{\mathrm{ref}})^{-b_s}`,
    :math:`\rho = D/N`. Parameters: ``e, a, alpha, b, beta`` (:math:`E = e^e`, :math:`A = e^a`,
    :math:`B = e^b`) and ``log_r0[s], a_N[s], b_rho[s]`` per strategy ``s``; ``a_N > 0`` means larger models
    get less from derived tokens. See the module docstring for the limits and what is inferred.

    Examples
    --------
    >>> import numpy as np
    >>> law = CDScalingLaw().set_params(e=0.0, a=2.0, alpha=0.3, b=3.0, beta=0.3,
    ...                                 **{"log_r0[repeat]": 2.0, "a_N[repeat]": 0.2, "b_rho[repeat]": 0.1})
    >>> float(law.eta(100.0, 1000.0, 1000.0))  # fresh data
    1.0
    >>> bool(law.eta(100.0, 8000.0, 1000.0) < law.eta(100.0, 2000.0, 1000.0))  # falls with repetition
    True
    """

    def _strategy_names(self):
        return ("log_r0", "a_N", "b_rho")

    def _strategy_box(self):
        return ((0.0, 4.0), (-0.5, 1.0), (-0.5, 1.0))

    def _strategy_bounds(self):
        return ((-6.0, 12.0), (-3.0, 3.0), (-3.0, 3.0))

    def _r_star(self, p, N, D, s):  # noqa: ANN001
        log_rs = (
            p[f"log_r0[{s}]"]
            - p[f"a_N[{s}]"] * np.log(N / self.ref_["N"])
            - p[f"b_rho[{s}]"] * np.log(D / N / self.ref_["rho"])
        )
        return np.exp(np.clip(log_rs, -25, 25))
