r"""Target densities for samplers: anisotropic Gaussians and Bayesian logistic-regression posteriors.

Every target exposes batched callables, so that many chains run as one array:

- ``log_prob(x)``: :math:`\log \pi(x)` up to a constant, ``x`` of shape ``(..., d)`` -> ``(...)``;
- ``grad_log_prob(x)``: the score :math:`s(x) = \nabla_x \log \pi(x)`, ``(..., d)`` -> ``(..., d)``;
- ``hvp(x, v)``: the Hessian-vector product :math:`\nabla^2 \log \pi(x)\, v`, ``(..., d)`` -> ``(..., d)``.

Logistic posteriors come from the official SRMC synthetic set (n = 200, d = 10, seed 42) and from
data sets that scikit-learn ships (``load_breast_cancer``, ``load_digits``); nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geode.core.linalg import sign_fixed_qr
from geode.core.random import as_generator
from geode.core.validation import check_array, check_choice, check_int, check_positive, check_real

__all__ = [
    "GaussianTarget",
    "LogisticRegressionTarget",
    "anisotropic_gaussian",
    "breast_cancer_logistic",
    "digits_logistic",
    "synthetic_logistic",
]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """:math:`\\sigma(z) = (1 + \\tanh(z/2))/2` (several times faster than ``scipy.special.expit``)."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _softplus(z: np.ndarray) -> np.ndarray:
    """:math:`\\log(1 + e^z)`, computed stably as :math:`\\max(z, 0) + \\log(1 + e^{-|z|})`."""
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def _check_x(x: Any, dim: int, name: str = "x") -> np.ndarray:
    """Positions of shape (..., dim). Not checked for finiteness: see the targets' class docstrings."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be array-like of float64 with shape (..., {dim}); got {type(x).__name__}"
        ) from exc
    if arr.ndim == 0 or arr.shape[-1] != dim:
        raise ValueError(f"{name} must have shape (..., {dim}); got {arr.shape}")
    return arr


@dataclass(frozen=True, eq=False)
class GaussianTarget:
    r"""Gaussian :math:`\pi = \mathcal N(\mu, \Sigma)`, with its score, Hessian and Fisher information.

    .. math::

        \log \pi(x) = -\tfrac12 (x - \mu)^\top P (x - \mu) + \text{const}, \quad
        s(x) = -P (x - \mu), \quad \nabla^2 \log \pi = -P, \quad
        S = \mathbb{E}_\pi[s s^\top] = P,

    with the precision :math:`P = \Sigma^{-1}`.

    ``log_prob``, ``grad_log_prob`` and ``hvp`` take positions of shape ``(..., d)`` (any batch, an empty one
    gives an empty result) and do not check them for finiteness: NaN in, NaN out (and an infinite position
    gives a non-finite value). They are the samplers' inner loop, and the kernels treat a NaN log density at
    a proposal as a divergence (rejected and flagged in ``info.is_divergent``); the initial position is
    checked by ``kernel.init``.

    Parameters
    ----------
    mean : array_like, shape (d,)
    cov : array_like, shape (d, d)
        Symmetric positive definite.
    """

    mean: np.ndarray
    cov: np.ndarray
    precision: np.ndarray = field(init=False, repr=False)
    _chol: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        mean = check_array("mean", self.mean, ndim=1, min_rows=1)
        d = mean.shape[0]
        cov = check_array("cov", self.cov, shape=(d, d))
        if not np.allclose(cov, cov.T, rtol=1e-10, atol=1e-12 * np.abs(cov).max()):
            raise ValueError("cov must be symmetric")
        cov = 0.5 * (cov + cov.T)
        try:
            chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            raise ValueError("cov must be positive definite") from None
        prec = np.linalg.inv(cov)
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "cov", cov)
        object.__setattr__(self, "precision", 0.5 * (prec + prec.T))
        object.__setattr__(self, "_chol", chol)

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])

    @property
    def variance(self) -> np.ndarray:
        """Marginal variances :math:`\\operatorname{diag} \\Sigma`."""
        return np.diag(self.cov).copy()

    @property
    def fisher(self) -> np.ndarray:
        """Fisher information :math:`S = \\mathbb{E}_\\pi[s s^\\top] = P`."""
        return self.precision

    def log_prob(self, x: Any) -> Any:
        r""":math:`\log \pi(x)` up to a constant, ``x`` of shape ``(..., d)`` -> ``(...)``.

        ``x`` of another last axis or not numeric raises a ``ValueError``/``TypeError`` naming it. Not checked
        for finiteness (the samplers' hot path): a NaN or infinite position gives a NaN or -inf log density,
        which the kernels reject as a divergence; an empty batch gives an empty result.
        """
        z = _check_x(x, self.dim) - self.mean
        return -0.5 * np.einsum("...i,...i->...", z @ self.precision, z)

    def grad_log_prob(self, x: Any) -> np.ndarray:
        return -((_check_x(x, self.dim) - self.mean) @ self.precision)

    def hvp(self, x: Any, v: Any) -> np.ndarray:
        _check_x(x, self.dim)
        return -(_check_x(v, self.dim, "v") @ self.precision)

    def sample(self, seed: int | np.random.Generator | None, n: int) -> np.ndarray:
        """``n`` exact draws, shape (n, d)."""
        rng = as_generator(seed)
        n = check_int("n", n, low=1)
        return self.mean + rng.standard_normal((n, self.dim)) @ self._chol.T


def anisotropic_gaussian(
    kappa: float, dim: int = 10, *, rotated: bool = False, seed: int = 0, mean: Any = None
) -> GaussianTarget:
    r"""Anisotropic Gaussian with condition number ``kappa``: variances log-spaced over :math:`[1, \kappa]`.

    .. math::

        \Sigma = Q \operatorname{diag}(\sigma_1^2, \dots, \sigma_d^2) Q^\top, \qquad
        \sigma_i^2 = \kappa^{(i-1)/(d-1)},

    with :math:`Q = I` (diagonal) or a Haar-random rotation drawn from ``seed`` (rotated). The steepest
    direction has unit variance, so a step size tuned to unit precision suits every ``kappa``.

    Parameters
    ----------
    kappa : float
        Condition number :math:`\sigma^2_{\max} / \sigma^2_{\min}`, >= 1.
    dim : int
        Dimension d >= 1 (``dim = 1`` gives variance 1 whatever ``kappa``).
    rotated : bool
        Rotate the axes by a random orthogonal matrix.
    seed : int
        Seed of the rotation.
    mean : array_like, optional
        Mean (default 0).
    """
    kappa = check_real("kappa", kappa, low=1.0)
    dim = check_int("dim", dim, low=1)
    var = kappa ** (np.arange(dim) / max(dim - 1, 1)) if dim > 1 else np.ones(1)
    mu = np.zeros(dim) if mean is None else check_array("mean", mean, shape=(dim,))
    if not rotated:
        return GaussianTarget(mu, np.diag(var))
    q, _ = sign_fixed_qr(as_generator(seed).standard_normal((dim, dim)))  # Haar rotation
    return GaussianTarget(mu, (q * var) @ q.T)


@dataclass(frozen=True, eq=False)
class LogisticRegressionTarget:
    r"""Posterior of Bayesian logistic regression with a Gaussian prior :math:`\beta \sim \mathcal N(0, \sigma_0^2 I)`.

    .. math::

        \log \pi(\beta) = \sum_{j=1}^n \big[y_j\, x_j^\top\beta - \log(1 + e^{x_j^\top\beta})\big]
            - \frac{\|\beta\|^2}{2\sigma_0^2}, \qquad
        s(\beta) = X^\top (y - \sigma(X\beta)) - \beta/\sigma_0^2,

        \nabla^2 \log\pi(\beta)\, v = -X^\top\big(w \odot Xv\big) - v/\sigma_0^2, \quad
        w = \sigma(X\beta)\,(1 - \sigma(X\beta)).

    Parameters
    ----------
    X : array_like, shape (n, d)
        Design matrix (include a column of ones for an intercept).
    y : array_like, shape (n,)
        Labels in {0, 1}.
    prior_scale : float
        :math:`\sigma_0 > 0`.
    name : str
        Label for reports.

    Notes
    -----
    As for :class:`GaussianTarget`, ``log_prob``, ``grad_log_prob`` and ``hvp`` take ``beta`` of shape
    ``(..., d)`` (an empty batch gives an empty result) and do not check it for finiteness: NaN in, NaN out.
    They are the samplers' inner loop, and the kernels treat a NaN log density at a proposal as a divergence.
    """

    X: np.ndarray
    y: np.ndarray
    prior_scale: float = 1.0
    name: str = "logistic"

    def __post_init__(self) -> None:
        X = check_array("X", self.X, ndim=2, min_rows=1)
        y = check_array("y", self.y, shape=(X.shape[0],))
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("y must hold labels 0 or 1")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "prior_scale", check_positive("prior_scale", self.prior_scale))

    @property
    def dim(self) -> int:
        return int(self.X.shape[1])

    def log_prob(self, beta: Any) -> Any:
        r""":math:`\log \pi(\beta)` up to a constant, ``beta`` of shape ``(..., d)`` -> ``(...)``.

        ``beta`` of another last axis or not numeric raises a ``ValueError``/``TypeError`` naming it. Not
        checked for finiteness (the samplers' hot path): a NaN or infinite ``beta`` gives a non-finite log
        density, which the kernels reject as a divergence; an empty batch gives an empty result.
        """
        b = _check_x(beta, self.dim, "beta")
        z = b @ self.X.T  # (..., n)
        ll = z @ self.y - np.sum(_softplus(z), axis=-1)
        return ll - 0.5 * np.sum(b * b, axis=-1) / self.prior_scale**2

    def grad_log_prob(self, beta: Any) -> np.ndarray:
        b = _check_x(beta, self.dim, "beta")
        return (self.y - _sigmoid(b @ self.X.T)) @ self.X - b / self.prior_scale**2

    def hvp(self, beta: Any, v: Any) -> np.ndarray:
        b = _check_x(beta, self.dim, "beta")
        v = _check_x(v, self.dim, "v")
        p = _sigmoid(b @ self.X.T)
        return -((p * (1.0 - p) * (v @ self.X.T)) @ self.X) - v / self.prior_scale**2

    def hessian(self, beta: Any) -> np.ndarray:
        """Hessian :math:`\\nabla^2 \\log \\pi(\\beta) = -X^\\top W X - I/\\sigma_0^2`, shape (d, d) (one point)."""
        b = check_array("beta", beta, shape=(self.dim,))
        p = _sigmoid(self.X @ b)
        return -(self.X.T * (p * (1.0 - p))) @ self.X - np.eye(self.dim) / self.prior_scale**2

    def map_estimate(self, *, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
        """The posterior mode, by Newton's method with backtracking (the log posterior is strictly concave)."""
        b = np.zeros(self.dim)
        f = float(self.log_prob(b))
        for _ in range(max_iter):
            g = self.grad_log_prob(b)
            step = np.linalg.solve(-self.hessian(b), g)
            t = 1.0
            while True:
                f_new = float(self.log_prob(b + t * step))
                if f_new >= f + 1e-4 * t * float(g @ step) or t < 1e-10:
                    break
                t *= 0.5
            b, f = b + t * step, f_new
            if float(np.sqrt(g @ step)) < tol:  # Newton decrement
                break
        return b


def synthetic_logistic(n: int = 200, dim: int = 10, seed: int = 42) -> LogisticRegressionTarget:
    r"""The SRMC paper's synthetic logistic regression (official defaults n = 200, d = 10, seed 42).

    With ``rng = numpy.random.default_rng(seed)``: :math:`X_{jk} \sim \mathcal N(0, 1)` (shape (n, d)),
    then :math:`\beta^\star \sim \mathcal N(0, I_d)`, then
    :math:`y_j \sim \mathrm{Bernoulli}(\sigma(x_j^\top\beta^\star))`, in this order;
    prior :math:`\mathcal N(0, I)`, no intercept.
    """
    n = check_int("n", n, low=1)
    dim = check_int("dim", dim, low=1)
    rng = as_generator(seed)
    X = rng.normal(size=(n, dim))
    beta = rng.normal(size=dim)
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(X @ beta)))).astype(float)
    return LogisticRegressionTarget(X, y, 1.0, name="synthetic")


def _standardise_with_intercept(X: np.ndarray) -> np.ndarray:
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return np.hstack([np.ones((X.shape[0], 1)), Z])


def _sklearn_data(name: str) -> np.ndarray | None:
    """A CSV that scikit-learn ships (``sklearn/datasets/data/<name>``), read without importing sklearn."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / name
    if not path.is_file():
        return None
    return np.loadtxt(path, delimiter=",", skiprows=1 if name == "breast_cancer.csv" else 0)


def breast_cancer_logistic(prior_scale: float = 1.0) -> LogisticRegressionTarget:
    """Logistic regression on scikit-learn's ``load_breast_cancer`` (n = 569).

    The 30 features are standardised, plus an intercept: d = 31. The label is 1 for benign. The CSV
    is read straight from the installed scikit-learn (importing ``sklearn.datasets`` takes seconds).
    """
    raw = _sklearn_data("breast_cancer.csv")
    if raw is None:  # pragma: no cover - layout of a future scikit-learn
        from sklearn.datasets import load_breast_cancer

        data = load_breast_cancer()
        X, y = np.asarray(data.data, dtype=float), np.asarray(data.target, dtype=float)
    else:
        X, y = raw[:, :-1], raw[:, -1]
    return LogisticRegressionTarget(_standardise_with_intercept(X), y, prior_scale, name="breast_cancer")


def digits_logistic(
    classes: tuple[int, int] | str = "odd-even", *, max_rows: int | None = None, prior_scale: float = 1.0
) -> LogisticRegressionTarget:
    r"""Binary logistic regression on scikit-learn's ``load_digits`` (8x8 images): d = 65, a stand-in for MNIST.

    Features are the 64 pixel intensities scaled to [0, 1] plus an intercept (constant pixels stay 0,
    so their coefficients keep the prior: the posterior is strongly anisotropic, like MNIST's).

    Parameters
    ----------
    classes : (int, int) or "odd-even"
        Two digit classes (the first is labelled 1), or all 1797 images labelled by parity (odd = 1).
    max_rows : int, optional
        Keep only the first ``max_rows`` images (in the data set's order), to make the posterior cheaper.
    prior_scale : float
    """
    raw = _sklearn_data("digits.csv.gz")
    if raw is None:  # pragma: no cover - layout of a future scikit-learn
        from sklearn.datasets import load_digits

        data = load_digits()
        raw = np.hstack([data.data, data.target[:, None]])
    X = np.asarray(raw[:, :-1], dtype=float) / 16.0
    t = raw[:, -1].astype(int)
    if isinstance(classes, str):
        check_choice("classes", classes, ("odd-even",))
        y = (t % 2 == 1).astype(float)
    else:
        if len(classes) != 2 or classes[0] == classes[1] or not all(0 <= int(c) <= 9 for c in classes):
            raise ValueError(f"classes must be two different digits in 0..9 or 'odd-even'; got {classes!r}")
        keep = (t == classes[0]) | (t == classes[1])
        X, y = X[keep], (t[keep] == classes[0]).astype(float)
    if max_rows is not None:
        max_rows = check_int("max_rows", max_rows, low=1)
        X, y = X[:max_rows], y[:max_rows]
    X = np.hstack([np.ones((X.shape[0], 1)), X])
    return LogisticRegressionTarget(X, y, prior_scale, name="digits")
