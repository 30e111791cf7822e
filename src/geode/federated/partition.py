r"""Non-IID client partitions: Dirichlet label skew, and the label mix of each client.

:func:`dirichlet_partition` is the standard label-skew split of the federated-learning literature
(Hsu et al. 2019; the NIID-Bench and FedLab implementations): for every class :math:`c`, client
proportions :math:`p_c \sim \operatorname{Dir}(\alpha \mathbf 1_K)` split that class's examples.
Small :math:`\alpha` gives clients dominated by one or two classes; large :math:`\alpha` approaches IID.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_array, check_int, check_positive

__all__ = ["dirichlet_partition", "label_distribution"]


def dirichlet_partition(
    labels: np.ndarray,
    n_clients: int,
    alpha: float,
    *,
    min_size: int = 1,
    seed: int | np.random.Generator | None = 0,
    balance: bool = True,
    max_retries: int = 1000,
) -> list[np.ndarray]:
    r"""Split example indices among clients with Dirichlet label skew.

    For every class :math:`c` (examples shuffled), draw :math:`p_c \sim \operatorname{Dir}(\alpha
    \mathbf 1_K)` over the :math:`K` clients and cut the class's examples at the cumulative proportions.
    With ``balance`` (the NIID-Bench rule), a client that already holds :math:`\ge N/K` examples gets
    proportion 0 for the next classes, which keeps client sizes from exploding at small :math:`\alpha`.
    The whole draw is repeated until every client holds at least ``min_size`` examples.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
        Class label of every example.
    n_clients : int
        Number of clients :math:`K \ge 1`.
    alpha : float
        Dirichlet concentration :math:`\alpha > 0`.
    min_size : int
        Minimum number of examples per client (``0`` accepts empty clients).
    seed : int or numpy Generator
        Randomness; the same seed gives the same partition.
    balance : bool
        Apply the NIID-Bench size cap described above.
    max_retries : int
        Number of draws before giving up.

    Returns
    -------
    list of ndarray of int64
        ``n_clients`` sorted index arrays that partition ``range(N)``.

    Raises
    ------
    ValueError
        ``alpha <= 0``, ``n_clients * min_size > N`` (impossible), or no draw met ``min_size`` within
        ``max_retries`` (the message says which size was reached and what to change).

    Examples
    --------
    >>> parts = dirichlet_partition([0, 0, 1, 1, 2, 2, 2, 2], 2, alpha=1.0, seed=0)
    >>> sorted(int(i) for p in parts for i in p)
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    y = check_array("labels", labels, ndim=1, dtype=None, finite=False)
    if y.size == 0:
        raise ValueError("labels must not be empty")
    if not np.issubdtype(y.dtype, np.integer):
        if np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(np.int64)
        else:
            raise TypeError(f"labels must be integer class labels; got dtype {y.dtype}")
    n_clients = check_int("n_clients", n_clients, low=1)
    alpha = check_positive("alpha", alpha)
    min_size = check_int("min_size", min_size, low=0)
    max_retries = check_int("max_retries", max_retries, low=1)
    n = y.size
    if n_clients * min_size > n:
        raise ValueError(
            f"impossible partition: {n_clients} clients x min_size {min_size} = {n_clients * min_size} "
            f"> {n} examples; lower min_size or n_clients"
        )
    rng = as_generator(seed)
    classes = np.unique(y)
    by_class = [np.flatnonzero(y == c) for c in classes]
    cap = n / n_clients
    best = -1
    for _ in range(max_retries):
        sizes = np.zeros(n_clients, dtype=np.int64)
        pieces: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for idx in by_class:
            idx = rng.permutation(idx)
            p = rng.dirichlet(np.full(n_clients, alpha))
            if balance:
                p = p * (sizes < cap)
                total = p.sum()
                p = p / total if total > 0 else np.full(n_clients, 1.0 / n_clients)
            cuts = (np.cumsum(p)[:-1] * idx.size).astype(np.int64)
            for k, part in enumerate(np.split(idx, cuts)):
                pieces[k].append(part)
                sizes[k] += part.size
        smallest = int(sizes.min())
        best = max(best, smallest)
        if smallest >= min_size:
            return [np.sort(np.concatenate(p)).astype(np.int64) for p in pieces]
    raise ValueError(
        f"no Dirichlet(alpha={alpha:g}) partition of {n} examples into {n_clients} clients gave every client "
        f">= {min_size} examples in {max_retries} draws (the best draw's smallest client had {best}); "
        "lower min_size, raise alpha or max_retries, or use fewer clients"
    )


def label_distribution(labels: np.ndarray, partitions: list[np.ndarray], n_classes: int | None = None) -> np.ndarray:
    r"""Each client's label mix :math:`p_k(c)`: the fraction of its examples in class :math:`c`.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    partitions : list of index arrays
        One per client (e.g. from :func:`dirichlet_partition`).
    n_classes : int, optional
        Number of classes (default ``max(labels) + 1``).

    Returns
    -------
    ndarray, shape (K, n_classes)
        Rows sum to 1 (a client without examples gets a row of zeros).
    """
    y = check_array("labels", labels, ndim=1, dtype=np.int64)
    if np.any(y < 0):
        raise ValueError("labels must be non-negative class indices")
    c = int(y.max()) + 1 if n_classes is None else check_int("n_classes", n_classes, low=int(y.max()) + 1)
    if isinstance(partitions, (str, bytes)) or not isinstance(partitions, Sequence) or len(partitions) == 0:
        raise ValueError("partitions must be a non-empty list of index arrays, one per client")
    out = np.zeros((len(partitions), c))
    for k, idx in enumerate(partitions):
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size:
            out[k] = np.bincount(y[idx], minlength=c) / idx.size
    return out
