r"""Episode-level few-shot classifiers on frozen features: the prior-bank method and its baselines.

All follow scikit-learn's idiom, ``fit(support_features, support_labels) -> self`` and
``predict(features) -> labels``, and are refit for every N-way K-shot episode:

- :class:`ProtoNet`: nearest class mean of the support (Snell et al., 2017), Euclidean.
- :class:`SupportLogReg`: logistic regression on the support features alone.
- :class:`DistributionCalibration` (Yang, Liu and Xu, ICLR 2021), as published
  (``ShuoYang-1998/Few_Shot_Distribution_Calibration``): Tukey's power transform
  :math:`\tilde x = x^\beta` (:math:`\beta = 0.5`) of support and query features; for each support
  feature the ``k`` nearest bank classes by Euclidean distance give
  :math:`\mu' = (\sum_i \mu_i + \tilde x)/(k+1)` and :math:`\Sigma' = \frac1k\sum_i \Sigma_i + \alpha`
  (:math:`\alpha` added to *every* entry, as the authors' code does); 750 features per class sampled from
  :math:`\mathcal N(\mu', \Sigma')` plus the support train a logistic regression on the raw
  (unstandardised) features.
- :class:`PriorBankClassifier` (the paper's method): retrieve priors from the bank by the class's
  label-phrase embedding (or, as the ablation "MAP with feature retrieval", by the support mean), MAP
  shrinkage (:func:`~geode.federated.fed_prior_bank.map_shrinkage`) with the support statistics, then
  features sampled from :math:`\mathcal N(\hat\mu, \hat\Sigma)` plus the support train the episode's
  logistic regression.

The other episode classifiers' logistic regression standardises its training features and uses
scikit-learn's ``LogisticRegression(C=1)``; sampling draws from the classifier's own seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_array, check_choice, check_int, check_positive, check_real
from geode.federated.fed_prior_bank.bank import PriorBank, map_shrinkage

__all__ = [
    "DistributionCalibration",
    "PriorBankClassifier",
    "ProtoNet",
    "SupportLogReg",
    "sample_episode",
]


def _check_support(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xa = check_array("support_features", x, ndim=2, min_rows=1)
    ya = check_array("support_labels", y, shape=(xa.shape[0],), dtype=np.int64)
    classes = np.unique(ya)
    return xa, ya, classes


def _fit_logreg(x: np.ndarray, y: np.ndarray, c: float, standardize: bool = True) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if not standardize:
        return LogisticRegression(C=c, max_iter=1000).fit(x, y)
    return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000)).fit(x, y)


def tukey(x: np.ndarray, beta: float | None) -> np.ndarray:
    """Tukey's ladder-of-powers transform :math:`x^\beta` (sign-preserving; ``None`` or 1: identity)."""
    if beta is None or beta == 1.0:
        return x
    if beta == 0.0:
        return np.sign(x) * np.log1p(np.abs(x))
    return np.sign(x) * np.abs(x) ** beta


def _gaussian_samples(rng: np.random.Generator, mu: np.ndarray, cov: np.ndarray, n: int) -> np.ndarray:
    # eigen-factor (robust to a singular covariance): x = mu + V diag(sqrt(max(λ, 0))) ξ
    lam, vec = np.linalg.eigh(0.5 * (cov + cov.T))
    root = vec * np.sqrt(np.clip(lam, 0.0, None))
    return mu + rng.standard_normal((n, mu.size)) @ root.T


class ProtoNet:
    """Nearest class mean (prototype) of the support set, Euclidean distance."""

    def fit(self, support_features: Any, support_labels: Any) -> ProtoNet:  # noqa: D102
        x, y, classes = _check_support(support_features, support_labels)
        self.classes_ = classes
        self.prototypes_ = np.stack([x[y == c].mean(0) for c in classes])
        return self

    def predict(self, features: Any) -> np.ndarray:  # noqa: D102
        z = check_array("features", features, shape=(None, self.prototypes_.shape[1]))
        d2 = ((z[:, None, :] - self.prototypes_[None]) ** 2).sum(-1)
        return self.classes_[np.argmin(d2, axis=1)]


class SupportLogReg:
    """Logistic regression on the support features only (standardised, ``C`` the inverse L2 strength)."""

    def __init__(self, C: float = 1.0) -> None:
        self.C = check_positive("C", C)

    def fit(self, support_features: Any, support_labels: Any) -> SupportLogReg:  # noqa: D102
        x, y, _ = _check_support(support_features, support_labels)
        self.model_ = _fit_logreg(x, y, self.C)
        return self

    def predict(self, features: Any) -> np.ndarray:  # noqa: D102
        return self.model_.predict(check_array("features", features, ndim=2))


class DistributionCalibration:
    r"""Distribution Calibration (Yang et al., 2021) with the prior bank's base-class statistics, as published.

    Follows the authors' ``evaluate_DC.py``: support and query features go through Tukey's transform
    :math:`x^\beta`; each support feature :math:`\tilde x` retrieves the ``k`` nearest base classes
    (Euclidean, to the bank's means), :math:`\mu' = (\sum_i \mu_i + \tilde x)/(k+1)` and
    :math:`\Sigma' = \frac1k \sum_i \Sigma_i + \alpha` with :math:`\alpha` added to every entry;
    ``n_samples`` features per class (split evenly over its support features, the authors'
    ``750 / n_shot`` each) are drawn from :math:`\mathcal N(\mu', \Sigma')` and, with the support, train
    ``LogisticRegression(max_iter=1000)`` on unstandardised features. The authors' base statistics are
    those of untransformed features (as the bank's); pass a bank built from transformed features for
    the other reading.

    Parameters
    ----------
    bank : PriorBank
        Base-class means and covariances.
    k : int
        Base classes retrieved per support feature (DC's default 2).
    alpha : float
        Covariance inflation :math:`\alpha`, added to every entry (DC's default 0.21).
    n_samples : int
        Sampled features per class (split evenly over the class's support features; DC's 750).
    C : float
        Inverse L2 strength of the logistic regression.
    tukey_beta : float or None
        Tukey's :math:`\beta` (DC's 0.5; ``None``: no transform).
    seed : int
        Seeds the sampling.
    """

    def __init__(
        self,
        bank: PriorBank,
        *,
        k: int = 2,
        alpha: float = 0.21,
        n_samples: int = 750,
        C: float = 1.0,
        tukey_beta: float | None = 0.5,
        seed: int = 0,
    ) -> None:
        if not isinstance(bank, PriorBank):
            raise TypeError(f"bank must be a PriorBank; got {type(bank).__name__}")
        self.bank = bank
        self.k = check_int("k", k, low=1)
        self.alpha = check_real("alpha", alpha, low=0.0)
        self.n_samples = check_int("n_samples", n_samples, low=0)
        self.C = check_positive("C", C)
        self.tukey_beta = None if tukey_beta is None else check_real("tukey_beta", tukey_beta, low=0.0)
        self.seed = seed

    def fit(self, support_features: Any, support_labels: Any) -> DistributionCalibration:  # noqa: D102
        x, y, classes = _check_support(support_features, support_labels)
        if x.shape[1] != self.bank.dim:
            raise ValueError(f"support_features have dimension {x.shape[1]}; the bank has {self.bank.dim}")
        x = tukey(x, self.tukey_beta)
        rng = as_generator(self.seed)
        k = min(self.k, len(self.bank.names))
        xs, ys = [x], [y]
        for c in classes:
            pts = x[y == c]
            per = -(-self.n_samples // len(pts)) if self.n_samples else 0
            for p in pts:
                near = np.argsort(np.linalg.norm(self.bank.means - p, axis=1), kind="stable")[:k]
                mu = (self.bank.means[near].sum(0) + p) / (k + 1)
                cov = self.bank.covs[near].mean(0) + self.alpha  # alpha on every entry (the authors' code)
                if per:
                    xs.append(_gaussian_samples(rng, mu, cov, per))
                    ys.append(np.full(per, c))
        self.model_ = _fit_logreg(np.concatenate(xs), np.concatenate(ys), self.C, standardize=False)
        return self

    def predict(self, features: Any) -> np.ndarray:  # noqa: D102
        return self.model_.predict(tukey(check_array("features", features, ndim=2), self.tukey_beta))


class PriorBankClassifier:
    """The paper's episode classifier: retrieved priors, MAP shrinkage, sampled features, logistic regression.

    Parameters
    ----------
    bank : PriorBank
        The server's prior bank.
    retrieval : {"text", "feature"}
        Key for retrieval: the class's label-phrase embedding (the method) or the support mean (the
        "MAP with feature retrieval" baseline).
    k : int
        Priors retrieved per class.
    temperature : float
        Softmax temperature :math:`\\tau` of the retrieval weights.
    kappa0 : float
        :math:`\\kappa_0`, prior strength of the mean in pseudo-observations.
    nu0 : float, optional
        :math:`\\nu_0` (default :math:`4d`).
    n_samples : int
        Features sampled per class from :math:`\\mathcal N(\\hat\\mu, \\hat\\Sigma)`.
    C : float
        Inverse L2 strength of the logistic regression.
    seed : int
        Seeds the sampling.
    """

    def __init__(
        self,
        bank: PriorBank,
        *,
        retrieval: str = "text",
        k: int = 3,
        temperature: float = 0.1,
        kappa0: float = 1.0,
        nu0: float | None = None,
        n_samples: int = 300,
        C: float = 1.0,
        seed: int = 0,
    ) -> None:
        if not isinstance(bank, PriorBank):
            raise TypeError(f"bank must be a PriorBank; got {type(bank).__name__}")
        self.bank = bank
        self.retrieval = check_choice("retrieval", retrieval, ("text", "feature"))
        self.k = check_int("k", k, low=1)
        self.temperature = check_positive("temperature", temperature)
        self.kappa0 = check_positive("kappa0", kappa0)
        self.nu0 = nu0
        self.n_samples = check_int("n_samples", n_samples, low=0)
        self.C = check_positive("C", C)
        self.seed = seed

    def fit(self, support_features: Any, support_labels: Any, class_embeddings: Any = None) -> PriorBankClassifier:
        """Adapt one Gaussian per class and train the episode's classifier.

        ``class_embeddings`` (shape ``(n_classes, e)``, row ``c`` for label ``c``) is required for
        text retrieval.
        """
        x, y, classes = _check_support(support_features, support_labels)
        if x.shape[1] != self.bank.dim:
            raise ValueError(f"support_features have dimension {x.shape[1]}; the bank has {self.bank.dim}")
        if self.retrieval == "text":
            if class_embeddings is None:
                raise ValueError("text retrieval needs class_embeddings (one label-phrase embedding per class)")
            emb = check_array("class_embeddings", class_embeddings, ndim=2)
            if emb.shape[0] <= classes.max():
                raise ValueError(f"class_embeddings has {emb.shape[0]} rows; labels go up to {classes.max()}")
        rng = as_generator(self.seed)
        xs, ys = [x], [y]
        self.adapted_: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.retrieved_: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for c in classes:
            pts = x[y == c]
            key = emb[c] if self.retrieval == "text" else pts.mean(0)
            idx, w = self.bank.retrieve(key, k=self.k, temperature=self.temperature, by=self.retrieval)
            mu0, sigma0 = self.bank.prior(idx, w)
            mu, cov = map_shrinkage(pts, mu0, sigma0, kappa0=self.kappa0, nu0=self.nu0)
            self.adapted_[int(c)] = (mu, cov)
            self.retrieved_[int(c)] = (idx, w)
            if self.n_samples:
                xs.append(_gaussian_samples(rng, mu, cov, self.n_samples))
                ys.append(np.full(self.n_samples, c))
        self.model_ = _fit_logreg(np.concatenate(xs), np.concatenate(ys), self.C)
        return self

    def predict(self, features: Any) -> np.ndarray:  # noqa: D102
        return self.model_.predict(check_array("features", features, ndim=2))


def sample_episode(
    labels: Any, n_way: int, k_shot: int, n_query: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw an N-way K-shot episode from a labelled pool.

    Returns
    -------
    classes : ndarray, shape (n_way,)
        The episode's classes (pool labels), in episode order: episode label ``i`` is ``classes[i]``.
    support : ndarray, shape (n_way, k_shot)
        Pool indices of the support examples.
    query : ndarray, shape (n_way, n_query)
        Pool indices of the query examples (disjoint from the support).
    """
    y = check_array("labels", labels, ndim=1, dtype=np.int64)
    n_way = check_int("n_way", n_way, low=2)
    k_shot = check_int("k_shot", k_shot, low=1)
    n_query = check_int("n_query", n_query, low=1)
    pool = np.unique(y)
    if pool.size < n_way:
        raise ValueError(f"n_way={n_way} exceeds the {pool.size} classes in the pool")
    classes = rng.choice(pool, size=n_way, replace=False)
    support, query = [], []
    for c in classes:
        idx = np.flatnonzero(y == c)
        if idx.size < k_shot + n_query:
            raise ValueError(
                f"class {c} has {idx.size} examples; an episode needs k_shot + n_query = {k_shot + n_query}"
            )
        pick = rng.choice(idx, size=k_shot + n_query, replace=False)
        support.append(pick[:k_shot])
        query.append(pick[k_shot:])
    return classes, np.stack(support), np.stack(query)
