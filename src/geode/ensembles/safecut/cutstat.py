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

__all__ = ["CutStatistic", "GraphCache", "cut_reliability", "cut_statistic", "knn_graph", "mutual_mask"]

DTYPES = ("float64", "float32")


def knn_graph(
    features: Any,
    k: int,
    *,
    chunk: int = 1024,
    metric: str = "euclidean",
    backend: str = "brute",
    zero_rows: str = "raise",
    dtype: str = "float64",
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
        features are compared this way).
    zero_rows : {"raise", "orthogonal"}
        With ``metric="cosine"``: reject all-zero rows, or treat them as torch's ``F.normalize`` does (a zero
        vector, cosine 0 with every row: distance 1), as the SafeCut release does for dead ReLU features.
    backend : {"brute", "sklearn", "torch"}
        ``"brute"``: numpy in row chunks; ``"sklearn"``: :class:`sklearn.neighbors.NearestNeighbors`
        (a KD/ball tree in low dimension, blocked BLAS otherwise); ``"torch"``: row chunks of one matrix
        product and ``torch.topk``, for ``"cosine"`` taken on the similarity (no ``1 - cos`` pass over the
        block; the release's GPU path). All are exact; ties may be ordered differently.
    dtype : {"float64", "float32"}
        Precision of the products (``"brute"`` and ``"torch"``). ``"float32"`` is about twice as fast but
        rounds the similarities to about 1e-7, so near-ties may swap, and a neighbour set may change
        where the k-th and (k+1)-th are that close; distances are then accurate to about 1e-7. The default
        ``"float64"`` is the one the claim runs.

    Returns
    -------
    indices : numpy.ndarray of int, shape (N, k)
        Neighbours sorted by increasing distance (ties by index for ``"brute"``).
    distances : numpy.ndarray, shape (N, k)
        Their Euclidean or cosine distances.
    """
    from geode.core.validation import check_choice

    metric = check_choice("metric", metric, ("euclidean", "cosine"))
    backend = check_choice("backend", backend, ("brute", "sklearn", "torch"))
    X = check_array("features", features, ndim=2)
    zero_rows = check_choice("zero_rows", zero_rows, ("raise", "orthogonal"))
    cosine = metric == "cosine"
    if cosine:
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        if np.any(norms == 0) and zero_rows == "raise":
            raise ValueError("features has an all-zero row: its cosine distance is undefined")
        X = X / np.where(norms == 0, 1.0, norms)  # zero rows stay zero (cosine 0 with everything)
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"features must have at least 2 rows to build a kNN graph; got {n}")
    k = check_int("k", k, low=1)
    if k > n - 1:
        raise ValueError(f"k must be <= n_samples - 1 = {n - 1} (self is excluded); got {k}")
    chunk = check_int("chunk", chunk, low=1)
    dtype = check_choice("dtype", dtype, DTYPES)
    if backend == "sklearn":
        from sklearn.neighbors import NearestNeighbors

        nn = NearestNeighbors(n_neighbors=k, metric="cosine" if cosine else "minkowski")
        dist, idx = nn.fit(X).kneighbors()  # kneighbors() excludes each query point; cosine: 1 - cos
        return idx.astype(np.int64), dist
    if backend == "torch":
        return _knn_torch(X, k, chunk, cosine, dtype)
    if dtype == "float32":
        X = X.astype(np.float32)
    sq = np.einsum("ij,ij->i", X, X)
    idx = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k))
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        if cosine:  # d = 1 - cos directly (exact for zero rows too), in place
            d2 = X[start:stop] @ X.T
            np.subtract(1.0, d2, out=d2)
        else:
            d2 = sq[start:stop, None] + sq[None, :] - 2.0 * X[start:stop] @ X.T
        np.maximum(d2, 0.0, out=d2)
        d2[np.arange(stop - start), np.arange(start, stop)] = np.inf  # exclude self
        part = np.argpartition(d2, k - 1, axis=1)[:, :k] if k < n - 1 else np.argsort(d2, axis=1)[:, :k]
        vals = np.take_along_axis(d2, part, axis=1)
        order = np.lexsort((part, vals), axis=1)  # by distance, then by index
        idx[start:stop] = np.take_along_axis(part, order, axis=1)
        vals = np.take_along_axis(vals, order, axis=1)
        dist[start:stop] = vals if cosine else np.sqrt(vals)
    return idx, dist


def _knn_torch(X: np.ndarray, k: int, chunk: int, cosine: bool, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`knn_graph`'s ``"torch"`` backend (rows already unit-normalised when ``cosine``).

    Cosine: the k largest similarities of each row (self set to -inf), then :math:`d = \\max(1 - s, 0)` on
    those k only: the same values as ``1 - s`` over the whole block, and the same neighbours up to ties
    (two similarities that differ by less than an ulp of 1 give the same distance). Memory: one block of
    ``chunk`` x N products.
    """
    import torch

    n = X.shape[0]
    xt = torch.as_tensor(X, dtype=torch.float32 if dtype == "float32" else torch.float64)
    idx = torch.empty((n, k), dtype=torch.int64)
    dist = torch.empty((n, k), dtype=torch.float64)
    if cosine:
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            sim = xt[start:stop] @ xt.T
            rows = torch.arange(stop - start)
            sim[rows, rows + start] = -float("inf")  # exclude self
            vals, part = torch.topk(sim, k, dim=1, largest=True, sorted=True)
            idx[start:stop], dist[start:stop] = part, (1.0 - vals.double()).clamp_(min=0.0)
        return idx.numpy(), dist.numpy()
    sq = (xt * xt).sum(dim=1)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        d = sq[start:stop, None] + sq[None, :] - 2.0 * (xt[start:stop] @ xt.T)
        d.clamp_(min=0.0)
        rows = torch.arange(stop - start)
        d[rows, rows + start] = float("inf")  # exclude self
        vals, part = torch.topk(d, k, dim=1, largest=False, sorted=True)
        idx[start:stop], dist[start:stop] = part, vals.double().sqrt()
    return idx.numpy(), dist.numpy()


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


def mutual_mask(neighbors: Any) -> np.ndarray:
    """Which directed kNN edges are mutual: ``mask[i, a]`` when ``i`` is also a neighbour of ``neighbors[i, a]``.

    Parameters
    ----------
    neighbors : array_like of int, shape (N, k)
        Neighbour lists (self excluded), e.g. from :func:`knn_graph`.

    Returns
    -------
    numpy.ndarray of bool, shape (N, k)
    """
    nbr = check_array("neighbors", neighbors, ndim=2, dtype=np.int64)
    n, k = nbr.shape
    if nbr.size and (nbr.min() < 0 or nbr.max() >= n):
        raise ValueError(f"neighbors must hold row indices in [0, {n - 1}]")
    rows = np.repeat(np.arange(n, dtype=np.int64), k)
    keys = np.sort(rows * n + nbr.ravel())  # the edge i -> j as the key i * N + j
    back = nbr.ravel() * n + rows  # the reverse edge j -> i
    pos = np.minimum(np.searchsorted(keys, back), keys.size - 1)
    return (keys[pos] == back).reshape(n, k)


class GraphCache:
    """The last mutual cosine kNN graph of :func:`cut_reliability`, reused while its input is unchanged.

    SafeCut's partner has frozen features: its graph is the same at every epoch's refresh, and building it is
    nearly all of the refresh's cost. Pass one cache per feature set (``cache=`` of :func:`cut_reliability`):
    a call whose features equal the stored copy (``numpy.array_equal``, :math:`O(Nd)`) and whose graph
    settings (k, backend, dtype) match reuses the neighbours, distances and mutual mask bit for bit; any other
    call rebuilds and replaces them. The stored copy of the features makes in-place edits of the caller's array
    invalidate the cache too.

    Attributes
    ----------
    hits, misses : int
        Calls that reused the graph / built it.
    """

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._features: np.ndarray | None = None
        self._graph: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.hits = 0
        self.misses = 0

    def graph(self, X: np.ndarray, key: tuple[Any, ...], build: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(neighbors, distances, mutual mask)`` of ``X`` (read-only arrays), from the cache or ``build()``."""
        f = self._features
        if self._graph is not None and key == self._key and f is not None and f.shape == X.shape:
            if np.array_equal(f, X):
                self.hits += 1
                return self._graph
        self.misses += 1
        graph = tuple(build())
        for a in graph:
            a.setflags(write=False)
        self._key, self._features, self._graph = key, np.array(X, copy=True), graph  # type: ignore[assignment]
        return graph  # type: ignore[return-value]

    def clear(self) -> None:
        """Forget the stored graph."""
        self._key = self._features = self._graph = None


def cut_reliability(
    features: Any,
    pseudo_labels: Any,
    k: int = 50,
    *,
    tau_sim: float = 0.1,
    isolated: float = 0.1,
    fallback_knn: bool = True,
    backend: str = "brute",
    dtype: str = "float64",
    cache: GraphCache | None = None,
    return_parts: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SafeCut's reliability :math:`r_i = \\exp(-\\mathrm{cut}_i)` of pseudo-labels on a mutual cosine kNN graph.

    The form of the authors' release (``SeongJunLee-net/SafeCut_NIPS26``, ``cut_stat.py``): on the cosine kNN
    graph (self excluded), keep the *mutual* edges (:math:`j \\in \\mathcal N_k(i)` and :math:`i \\in \\mathcal
    N_k(j)`), weight them :math:`w_{ij} = \\exp(-(1 - \\cos(z_i, z_j))/\\tau_{sim})`, and score the fraction of
    the weight that is cut:

    .. math::

        \\mathrm{cut}_i = \\frac{\\sum_j w_{ij}\\, \\mathbb 1[\\hat y_j \\ne \\hat y_i]}{\\sum_j w_{ij} + 10^{-8}},
        \\qquad r_i = \\exp(-\\mathrm{cut}_i) \\in [e^{-1}, 1].

    High :math:`r` = reliable (the opposite orientation of :func:`cut_statistic`'s :math:`Z`). There is no null
    model: the ratio is not standardised by the label frequencies.

    Parameters
    ----------
    features : array_like, shape (N, d)
        The representation (compared by cosine; zero rows are rejected).
    pseudo_labels : array_like of int, shape (N,)
        Labels to score.
    k : int
        Neighbours per sample before the mutual filter (release default 50), ``1 <= k <= N - 1``.
    tau_sim : float
        Similarity temperature :math:`\\tau_{sim} > 0` (release default 0.1). An all-zero feature row (a
        dead ReLU layer) has cosine 0 with every row, as under torch's ``F.normalize``.
    isolated : float
        Reliability of a sample with no weighted edge (release ``isolated_baseline``, 0.1).
    fallback_knn : bool
        A sample without mutual neighbours keeps all its k neighbours (the release's run scripts pass
        ``--isolated_fallback_regular_knn``); else it is isolated.
    backend : {"brute", "sklearn", "torch"}
        :func:`knn_graph`'s backend.
    dtype : {"float64", "float32"}
        :func:`knn_graph`'s precision (default float64, the claim's; float32 is about twice as fast and
        may swap near-tied neighbours).
    cache : GraphCache, optional
        Reuse the graph of the previous call on the same features (a frozen representation); the result is
        bit-identical to building it again.
    return_parts : bool
        Also return ``cut`` and the degree :math:`\\sum_j w_{ij}`.

    Returns
    -------
    numpy.ndarray, shape (N,), or (reliability, cut, degree)

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> cut_reliability(x, [0, 0, 1, 1], k=1).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    y = check_array("pseudo_labels", pseudo_labels, ndim=1, dtype=None)
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"pseudo_labels must hold integer class labels; got dtype {y.dtype}")
    X = check_array("features", features, ndim=2)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"pseudo_labels must have one label per row of features ({X.shape[0]}); got {y.shape[0]}")
    from geode.core.validation import check_real

    tau_sim = check_real("tau_sim", tau_sim, low=0.0, low_inclusive=False)
    isolated = check_real("isolated", isolated, low=0.0, high=1.0)
    k = check_int("k", k, low=1)

    def build() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        nbr, d = knn_graph(X, k, metric="cosine", backend=backend, zero_rows="orthogonal", dtype=dtype)  # 1 - cos
        return nbr, d, mutual_mask(nbr)

    if cache is None:
        nbr, d, mask = build()
    else:
        if not isinstance(cache, GraphCache):
            raise TypeError(f"cache must be a GraphCache or None; got {type(cache).__name__}")
        nbr, d, mask = cache.graph(X, (k, backend, dtype), build)
        mask = mask.copy()
    if fallback_knn:
        mask[~mask.any(axis=1)] = True
    w = np.exp(-d / tau_sim) * mask
    degree = w.sum(axis=1)
    cut = np.sum(w * (y[nbr] != y[:, None]), axis=1) / (degree + 1e-8)
    r = np.exp(-cut)
    r[degree == 0] = isolated
    if return_parts:
        return r, cut, degree
    return r
