"""Latent community model of functional connectomes, graph construction, and the GCN-vs-ridge pipeline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from geode.core.validation import check_array, check_int, check_real

__all__ = [
    "ConnectomeSample",
    "LatentCommunityModel",
    "cv_r2",
    "eiv_decomposition",
    "gcn_features",
    "knn_graph",
    "normalized_adjacency",
    "raw_features",
    "sample_correlation",
]


@dataclass
class ConnectomeSample:
    """One cohort drawn from the model.

    Attributes
    ----------
    a : (n, K) array
        Community loadings ``a_ik`` (the latent, community-smooth part of each subject).
    delta : (n, p) array
        Node deviations ``delta_ij`` (the rough part).
    loadings : (n, p) array
        ``L_ij = a_{i,k(j)} + delta_ij`` (clipped to ``[-max_loading, max_loading]``).
    true_corr : (n, p, p) array
        The latent connectomes ``C_i``.
    corr : (n, p, p) array
        Sample correlations ``Ĉ_i`` of a scan of ``T`` points.
    corr_indep : (n, p, p) array
        Sample correlations of a second, independent scan of the same subjects (same ``L``).
    """

    a: np.ndarray
    delta: np.ndarray
    loadings: np.ndarray
    true_corr: np.ndarray
    corr: np.ndarray
    corr_indep: np.ndarray


class LatentCommunityModel:
    r"""Latent community model: ``p`` regions in ``K`` communities, time series of length ``T``.

    For subject ``i`` and region ``j`` in community ``k(j)``,

    .. math::

        L_{ij} = a_{i,k(j)} + \delta_{ij}, \qquad
        x_{j,t} = L_{ij} f_{k(j),t} + \sqrt{1 - L_{ij}^2}\,\varepsilon_{j,t},

    with community factors :math:`f_{\cdot,t} \sim N(0, \Phi)` (unit variances, correlation ``phi``
    between communities), :math:`\varepsilon \sim N(0, I)`, :math:`a_{ik} \sim U(a_{lo}, a_{hi})` and
    :math:`\delta_{ij} \sim N(0, \sigma_\delta^2)`. The latent connectome is
    :math:`C_{i,jl} = L_{ij} L_{il} \Phi_{k(j)k(l)}` off the diagonal and 1 on it; the observed one is the
    sample correlation of the ``T`` points, a noisy estimate of it (the errors-in-variables view).

    Parameters
    ----------
    p, K : int
        Regions and communities (``p`` a multiple of ``K``; communities are contiguous blocks).
    loading_range : (float, float)
        ``(a_lo, a_hi)``.
    delta_sd : float
        :math:`\sigma_\delta`.
    phi : float
        Correlation between community factors, in ``[0, 1)``.
    max_loading : float
        Loadings are clipped to ``[-max_loading, max_loading]`` (``< 1`` so the noise variance stays > 0).
    """

    def __init__(
        self,
        p: int = 60,
        K: int = 6,
        *,
        loading_range: tuple[float, float] = (0.2, 0.8),
        delta_sd: float = 0.15,
        phi: float = 0.2,
        max_loading: float = 0.95,
    ) -> None:
        if not isinstance(K, int) or K < 1:
            raise ValueError(f"K must be a positive int, got {K!r}")
        if not isinstance(p, int) or p < 2 or p % K:
            raise ValueError(f"p must be an int >= 2 and a multiple of K={K}, got {p!r}")
        if not isinstance(loading_range, (tuple, list)) or len(loading_range) != 2:
            raise ValueError(f"loading_range must be a pair (lo, hi) with -1 < lo <= hi < 1, got {loading_range!r}")
        lo, hi = (check_real("loading_range", v) for v in loading_range)
        delta_sd = check_real("delta_sd", delta_sd)
        phi = check_real("phi", phi)
        max_loading = check_real("max_loading", max_loading)
        if not -1 < lo <= hi < 1:
            raise ValueError(f"loading_range must satisfy -1 < lo <= hi < 1, got {loading_range}")
        if delta_sd < 0:
            raise ValueError(f"delta_sd must be >= 0, got {delta_sd}")
        if not 0 <= phi < 1:
            raise ValueError(f"phi must be in [0, 1), got {phi}")
        if not 0 < max_loading < 1:
            raise ValueError(f"max_loading must be in (0, 1), got {max_loading}")
        self.p, self.K = p, K
        self.loading_range, self.delta_sd, self.phi, self.max_loading = (lo, hi), delta_sd, phi, max_loading
        self.community = np.repeat(np.arange(K), p // K)
        self.Phi = np.full((K, K), phi) + (1 - phi) * np.eye(K)
        self._chol = np.linalg.cholesky(self.Phi)

    def true_correlation(self, loadings: np.ndarray) -> np.ndarray:
        """``C`` for loadings of shape ``(p,)`` or ``(n, p)``."""
        L = np.atleast_2d(loadings)
        if L.shape[-1] != self.p:
            raise ValueError(f"loadings must have {self.p} columns, got shape {np.shape(loadings)}")
        P = self.Phi[np.ix_(self.community, self.community)]
        C = L[:, :, None] * L[:, None, :] * P
        idx = np.arange(self.p)
        C[:, idx, idx] = 1.0
        return C if np.ndim(loadings) == 2 else C[0]

    def time_series(self, loadings: np.ndarray, T: int, rng: np.random.Generator) -> np.ndarray:
        """One scan per subject: an array ``(n, T, p)`` of the model's time series."""
        if not isinstance(T, int) or T < 3:
            raise ValueError(f"T must be an int >= 3, got {T!r}")
        n = loadings.shape[0]
        f = rng.standard_normal((n, T, self.K)) @ self._chol.T
        eps = rng.standard_normal((n, T, self.p))
        return loadings[:, None, :] * f[:, :, self.community] + np.sqrt(1 - loadings**2)[:, None, :] * eps

    def sample(self, n: int, T: int, rng: np.random.Generator | int) -> ConnectomeSample:
        """Draw ``n`` subjects and two independent scans of ``T`` points each."""
        if not isinstance(n, int) or n < 2:
            raise ValueError(f"n must be an int >= 2, got {n!r}")
        rng = np.random.default_rng(rng)
        a = rng.uniform(*self.loading_range, size=(n, self.K))
        delta = rng.normal(0.0, self.delta_sd, size=(n, self.p))
        L = np.clip(a[:, self.community] + delta, -self.max_loading, self.max_loading)
        return ConnectomeSample(
            a=a,
            delta=delta,
            loadings=L,
            true_corr=self.true_correlation(L),
            corr=sample_correlation(self.time_series(L, T, rng)),
            corr_indep=sample_correlation(self.time_series(L, T, rng)),
        )


def sample_correlation(x: np.ndarray) -> np.ndarray:
    """Pearson correlation over the time axis: ``(n, T, p) -> (n, p, p)`` (or ``(T, p) -> (p, p)``)."""
    x = check_array("x", x)
    if x.ndim not in (2, 3) or x.shape[-2] < 3 or 0 in x.shape:
        raise ValueError(f"x must have shape (T, p) or (n, T, p) with T >= 3 and n, p >= 1, got {x.shape}")
    xc = x - x.mean(axis=-2, keepdims=True)
    cov = np.swapaxes(xc, -1, -2) @ xc
    sd = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    return cov / (sd[..., :, None] * sd[..., None, :])


def knn_graph(m: np.ndarray, k: int) -> np.ndarray:
    """Symmetric 0/1 kNN graph(s) on ``|m|``: each region links to the ``k`` others of largest ``|m_jl|``.

    ``m`` is ``(p, p)`` or ``(n, p, p)``; the result is symmetrised by union, with a zero diagonal.
    """
    m = np.abs(check_array("m", m))
    if m.ndim not in (2, 3) or m.shape[-1] != m.shape[-2]:
        raise ValueError(f"m must be a square matrix or a stack of them, got shape {m.shape}")
    p = m.shape[-1]
    if not isinstance(k, int) or not 1 <= k < p:
        raise ValueError(f"k must be an int in [1, {p - 1}], got {k!r}")
    m = m.copy()
    idx = np.arange(p)
    m[..., idx, idx] = -np.inf
    nn = np.argpartition(-m, k - 1, axis=-1)[..., :k]
    A = np.zeros(m.shape)
    np.put_along_axis(A, nn, 1.0, axis=-1)
    return np.maximum(A, np.swapaxes(A, -1, -2))


def normalized_adjacency(A: np.ndarray) -> np.ndarray:
    """``Â = D^{-1/2}(A + I)D^{-1/2}`` for a symmetric ``A`` (p, p) of non-negative weights (or a stack (n, p, p)).

    ``A`` must be finite, square and symmetric; any of these failing raises a ``ValueError`` naming ``A``.
    """
    A = check_array("A", A, ndim=(2, 3))
    if A.shape[-1] != A.shape[-2] or A.shape[-1] == 0:
        raise ValueError(f"A must be a square (p, p) adjacency, or a stack (n, p, p) of them; got shape {A.shape}")
    if np.any(A < 0):
        raise ValueError("A must have non-negative edge weights")
    if not np.allclose(A, np.swapaxes(A, -1, -2)):
        raise ValueError("A must be symmetric (an undirected graph)")
    p = A.shape[-1]
    Ah = A + np.eye(p)
    d = Ah.sum(-1)
    s = 1.0 / np.sqrt(d)
    return s[..., :, None] * Ah * s[..., None, :]


def gcn_features(corr: np.ndarray, graph_from: np.ndarray, k: int) -> np.ndarray:
    """One linear graph convolution ``Ĥ_i = Â_i Ĉ_i`` per subject, flattened: ``(n, p * p)``.

    ``graph_from`` is the matrix the kNN graph is built from: the latent ``C_i`` (oracle), an
    independent scan (independent-sample) or ``Ĉ_i`` itself (same-sample, double dipping).
    """
    corr = check_array("corr", corr)
    graph_from = check_array("graph_from", graph_from)
    if corr.ndim != 3 or np.shape(graph_from) != corr.shape or 0 in corr.shape:
        raise ValueError(
            f"corr and graph_from must both have shape (n, p, p); got {corr.shape}, {np.shape(graph_from)}"
        )
    H = normalized_adjacency(knn_graph(graph_from, k)) @ corr
    return H.reshape(len(corr), -1)


def raw_features(corr: np.ndarray) -> np.ndarray:
    """The graph-agnostic baseline's features: the flattened ``Ĉ_i`` of ``corr`` (n, p, p), ``(n, p * p)``."""
    corr = check_array("corr", corr, ndim=3)
    if 0 in corr.shape:
        raise ValueError(f"corr must have shape (n, p, p) with n, p >= 1; got {corr.shape}")
    return corr.reshape(len(corr), -1)


def cv_r2(X: np.ndarray, y: np.ndarray, *, folds: int = 5, alphas: np.ndarray | None = None, seed: int = 0) -> float:
    """Out-of-sample R² of ridge regression (``RidgeCV``, alpha by GCV inside each training fold), k-fold CV."""
    from sklearn.linear_model import RidgeCV
    from sklearn.model_selection import KFold, cross_val_predict

    X, y = check_array("X", X, ndim=2), check_array("y", y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,), got {X.shape}, {y.shape}")
    folds = check_int("folds", folds, low=2)
    if X.shape[0] < folds or X.shape[1] == 0:
        raise ValueError(f"X must have at least folds={folds} rows and one column; got shape {X.shape}")
    if alphas is not None:
        a = check_array("alphas", alphas, ndim=1)
        if a.size == 0 or np.any(a <= 0):
            raise ValueError(f"alphas must be a non-empty array of positive ridge strengths; got {a}")
    alphas = np.logspace(-3, 5, 17) if alphas is None else alphas
    pred = cross_val_predict(RidgeCV(alphas=alphas), X, y, cv=KFold(folds, shuffle=True, random_state=seed))
    return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))


def eiv_decomposition(r2_raw: float, r2_oracle: float, r2_indep: float, r2_same: float) -> dict[str, float]:
    """The three mechanisms, read empirically from the four pipelines (they telescope to ``same - raw``).

    - ``smoothing``: oracle graph vs raw (smoothing bias minus variance reduction, the graph known exactly);
    - ``graph_estimation``: independent-scan graph vs oracle (the cost of estimating the graph);
    - ``double_dipping``: same-sample graph vs independent (one noisy matrix sets topology and features).
    """
    r2_raw, r2_oracle, r2_indep, r2_same = (
        check_real(k, v)
        for k, v in (("r2_raw", r2_raw), ("r2_oracle", r2_oracle), ("r2_indep", r2_indep), ("r2_same", r2_same))
    )
    return {
        "smoothing": r2_oracle - r2_raw,
        "graph_estimation": r2_indep - r2_oracle,
        "double_dipping": r2_same - r2_indep,
        "total": r2_same - r2_raw,
    }
