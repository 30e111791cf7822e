"""The cut statistic: a label-free reliability score of pseudo-labels on a k-nearest-neighbour graph.

Muhlenbach, Lallich and Zighed (2004), as used for weak-supervision subset selection by Lang,
Vijayaraghavan and Sontag (NeurIPS 2022). On the directed kNN graph of a representation
:math:`z_1, \\dots, z_N` (self excluded) with weights :math:`w_{ij} = 1/(1 + \\|z_i - z_j\\|_2)`:

.. math::

    J_i = \\sum_{j \\in \\mathcal{N}_k(i)} w_{ij}\\, \\mathbb{1}[\\hat y_j \\ne \\hat y_i], \\qquad
    \\mu_i = (1 - \\pi_{\\hat y_i}) \\sum_j w_{ij}, \\qquad
    \\sigma_i^2 = \\pi_{\\hat y_i} (1 - \\pi_{\\hat y_i}) \\sum_j w_{ij}^2, \\qquad
    Z_i = \\frac{J_i - \\mu_i}{\\sigma_i},

where :math:`\\pi_y` is the frequency of pseudo-label :math:`y`. :math:`(\\mu_i, \\sigma_i)` are the mean and
standard deviation of :math:`J_i` under the null hypothesis that the neighbours' labels are drawn
independently with the label frequencies. A *low* :math:`Z_i` (far fewer cut edges than chance) marks a
pseudo-label that agrees with its neighbourhood: a reliable one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_array, check_int

__all__ = ["CutStatistic", "cut_statistic", "knn_graph"]


def knn_graph(
    features: Any, k: int, *, chunk: int = 1024, metric: str = "euclidean", backend: str = "brute"
) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest neighbours of every row (self excluded).

    Parameters
    ----------
    features : array_like, shape (N, d)
        The representation.
    k : int
        Neighbours per point, ``1 <= k <= N - 1``.
    chunk : int
        Rows per block of the distance matrix (memory ``chunk * N`` floats; ``"brute"`` only).
    metric : {"euclidean", "cosine"}
        ``"cosine"``: the distance :math:`1 - \\cos(z_i, z_j)` (rows are L2-normalised first; CLIP-style
        features are compared this way). Zero rows are rejected.
    backend : {"brute", "sklearn"}
        ``"brute"``: numpy in row chunks; ``"sklearn"``: :class:`sklearn.neighbors.NearestNeighbors`
        (a KD/ball tree in low dimension, blocked BLAS otherwise). Both are exact; ties may be ordered
        differently.

    Returns
    -------
    indices : numpy.ndarray of int, shape (N, k)
        Neighbours sorted by increasing distance (ties by index for ``"brute"``).
    distances : numpy.ndarray, shape (N, k)
        Their Euclidean or cosine distances.
    """
    from geode.core.validation import check_choice

    metric = check_choice("metric", metric, ("euclidean", "cosine"))
    backend = check_choice("backend", backend, ("brute", "sklearn"))
    X = check_array("features", features, ndim=2)
    if metric == "cosine":
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        if np.any(norms == 0):
            raise ValueError("features has an all-zero row: its cosine distance is undefined")
        X = X / norms
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"features must have at least 2 rows to build a kNN graph; got {n}")
    k = check_int("k", k, low=1)
    if k > n - 1:
        raise ValueError(f"k must be <= n_samples - 1 = {n - 1} (self is excluded); got {k}")
    chunk = check_int("chunk", chunk, low=1)
    if backend == "sklearn":
        from sklearn.neighbors import NearestNeighbors

        dist, idx = NearestNeighbors(n_neighbors=k).fit(X).kneighbors()  # kneighbors() excludes each query point
        return idx.astype(np.int64), (0.5 * dist**2 if metric == "cosine" else dist)
    sq = np.einsum("ij,ij->i", X, X)
    idx = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k))
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        d2 = sq[start:stop, None] + sq[None, :] - 2.0 * X[start:stop] @ X.T
        np.maximum(d2, 0.0, out=d2)
        d2[np.arange(stop - start), np.arange(start, stop)] = np.inf  # exclude self
        part = np.argpartition(d2, k - 1, axis=1)[:, :k] if k < n - 1 else np.argsort(d2, axis=1)[:, :k]
        vals = np.take_along_axis(d2, part, axis=1)
        order = np.lexsort((part, vals), axis=1)  # by distance, then by index
        idx[start:stop] = np.take_along_axis(part, order, axis=1)
        dist[start:stop] = np.sqrt(np.take_along_axis(vals, order, axis=1))
    if metric == "cosine":  # unit rows: ||a - b||^2 = 2 (1 - cos)
        dist = 0.5 * dist**2
    return idx, dist


class CutStatistic:
    """The parts of the cut statistic (see the module docstring), one entry per sample.

    Attributes
    ----------
    z : numpy.ndarray, shape (N,)
        :math:`Z_i` (0 where :math:`\\sigma_i = 0`, i.e. one pseudo-label covers every sample).
    cut : numpy.ndarray, shape (N,)
        :math:`J_i`, the weight of cut edges.
    mean, std : numpy.ndarray, shape (N,)
        :math:`\\mu_i` and :math:`\\sigma_i` under the null hypothesis.
    neighbors : numpy.ndarray of int, shape (N, k)
    weights : numpy.ndarray, shape (N, k)
        :math:`w_{ij}`.
    """

    def __init__(
        self,
        z: np.ndarray,
        cut: np.ndarray,
        mean: np.ndarray,
        std: np.ndarray,
        neighbors: np.ndarray,
        weights: np.ndarray,
    ) -> None:
        self.z, self.cut, self.mean, self.std = z, cut, mean, std
        self.neighbors, self.weights = neighbors, weights


def cut_statistic(
    features: Any,
    pseudo_labels: Any,
    k: int = 20,
    *,
    n_classes: int | None = None,
    return_parts: bool = False,
    metric: str = "euclidean",
    backend: str = "brute",
) -> np.ndarray | CutStatistic:
    """Cut statistic :math:`Z_i` of pseudo-labels on the kNN graph of ``features`` (low = reliable).

    Parameters
    ----------
    features : array_like, shape (N, d)
        The representation the graph is built in.
    pseudo_labels : array_like of int, shape (N,)
        Labels to score (e.g. a model's arg-max predictions), in ``[0, n_classes)``.
    k : int
        Neighbours per sample (default 20), ``1 <= k <= N - 1``.
    n_classes : int, optional
        Number of classes (default ``max(pseudo_labels) + 1``).
    return_parts : bool
        Return a :class:`CutStatistic` with :math:`J, \\mu, \\sigma`, the graph and ``z``.
    metric, backend : str
        Passed to :func:`knn_graph` (``metric="cosine"`` makes :math:`w_{ij} = 1/(1 + 1 - \\cos)`).

    Returns
    -------
    numpy.ndarray, shape (N,), or CutStatistic

    Notes
    -----
    The label frequencies :math:`\\pi_y` are those of ``pseudo_labels`` themselves. Unlike the weak-supervision
    reference code, a sample is not its own neighbour. The graph is the directed kNN graph (no symmetrisation),
    as in the reference code.

    Examples
    --------
    Two well separated clusters labelled by cluster: no edge is cut, every :math:`Z_i < 0`.

    >>> import numpy as np
    >>> x = np.array([[0.0], [0.1], [0.2], [10.0], [10.1], [10.2]])
    >>> bool(np.all(cut_statistic(x, [0, 0, 0, 1, 1, 1], k=2) < 0))
    True
    """
    X = check_array("features", features, ndim=2)
    y = check_array("pseudo_labels", pseudo_labels, ndim=1, dtype=None)
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"pseudo_labels must hold integer class labels; got dtype {y.dtype}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"pseudo_labels must have one label per row of features ({X.shape[0]}); got {y.shape[0]}")
    if y.size and y.min() < 0:
        raise ValueError(f"pseudo_labels must be non-negative; got min {y.min()}")
    c = int(y.max()) + 1 if n_classes is None else check_int("n_classes", n_classes, low=int(y.max()) + 1)
    nbr, d = knn_graph(X, k, metric=metric, backend=backend)
    w = 1.0 / (1.0 + d)  # w_ij = 1 / (1 + ||z_i - z_j||)
    cut = np.sum(w * (y[nbr] != y[:, None]), axis=1)  # J_i
    pi = np.bincount(y, minlength=c) / y.shape[0]
    p = pi[y]  # frequency of sample i's own label
    mean = (1.0 - p) * w.sum(axis=1)  # mu_i
    std = np.sqrt(p * (1.0 - p) * np.sum(w * w, axis=1))  # sigma_i
    z = np.divide(cut - mean, std, out=np.zeros_like(cut), where=std > 0)
    if return_parts:
        return CutStatistic(z, cut, mean, std, nbr, w)
    return z
