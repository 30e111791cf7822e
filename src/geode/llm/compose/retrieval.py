"""Future-claim retrieval: rank a pool of claims by TF-IDF cosine to a generated claim; recall@k and MRR.

The paper embeds each generated claim with E5 and ranks 47K real future papers (H@k, MRR). Here a TF-IDF
vectoriser (fitted on the training claims) stands in for E5. Ties are common with short template claims, so
ranks are taken **in expectation over a uniformly random order of the tied items**: with ``g`` pool items
scoring above the truth and ``t`` items (the truth included) scoring equal to it, the truth's rank is uniform
on ``g+1 .. g+t``, so ``recall@k = clip((k - g) / t, 0, 1)`` and the reciprocal rank is the mean of ``1/r``
over that range. This is deterministic and neither rewards nor punishes a constant output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_array, check_int, check_real

__all__ = ["ClaimRetriever", "mean_reciprocal_rank", "rank_counts", "recall_at_k"]


def rank_counts(scores: Any, truth: Any, *, tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the number of pool items scoring above the truth (``g``) and equal to it, truth included (``t``).

    Parameters
    ----------
    scores : array_like of shape (Q, P)
        Similarity of each query to each pool item (higher is better).
    truth : array_like of int, shape (Q,)
        Index of each query's true item in the pool.
    tol : float
        Scores within ``tol`` of the truth's count as ties.
    """
    tol = check_real("tol", tol, low=0.0)
    s = check_array("scores", scores, finite=False)
    if s.ndim != 2 or s.shape[0] == 0 or s.shape[1] == 0:
        raise ValueError(f"scores must be a (n_queries, pool_size) array; got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    y = np.asarray(truth)
    if y.shape != (s.shape[0],) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"truth must hold one integer pool index per query of scores ({s.shape[0]}); got {y!r}")
    if y.size and (y.min() < 0 or y.max() >= s.shape[1]):
        raise ValueError(f"truth must index the pool 0..{s.shape[1] - 1}")
    ts = s[np.arange(s.shape[0]), y][:, None]
    greater = (s > ts + tol).sum(1)
    ties = (np.abs(s - ts) <= tol).sum(1)
    return greater, ties


def recall_at_k(scores: Any, truth: Any, k: int) -> float:
    """Mean recall@k (hit rate at k) over the queries, ties broken uniformly at random in expectation.

    Examples
    --------
    >>> recall_at_k([[0.9, 0.1, 0.5]], [2], 1), recall_at_k([[0.9, 0.1, 0.5]], [2], 2)
    (0.0, 1.0)
    >>> recall_at_k([[0.5, 0.5, 0.5, 0.5]], [0], 1)  # four-way tie
    0.25
    """
    k = check_int("k", k, low=1)
    g, t = rank_counts(scores, truth)
    return float(np.mean(np.clip((k - g) / t, 0.0, 1.0)))


def mean_reciprocal_rank(scores: Any, truth: Any) -> float:
    """Mean reciprocal rank, in expectation over a random order of ties.

    Examples
    --------
    >>> mean_reciprocal_rank([[0.9, 0.1, 0.5], [0.2, 0.8, 0.1]], [2, 1])
    0.75
    """
    g, t = rank_counts(scores, truth)
    rr = [np.mean(1.0 / np.arange(gi + 1, gi + ti + 1)) for gi, ti in zip(g, t)]
    return float(np.mean(rr))


class ClaimRetriever:
    """TF-IDF cosine retrieval of claims (the stand-in for the paper's E5 retrieval of future papers).

    Parameters
    ----------
    fit_texts : list of str
        Texts the vectoriser is fitted on (the training claims: no test text is seen).
    """

    def __init__(self, fit_texts: list[str]) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not fit_texts or not all(isinstance(t, str) for t in fit_texts):
            raise ValueError("fit_texts must be a non-empty list of strings")
        self.vec = TfidfVectorizer(token_pattern=r"\S+", lowercase=False).fit(fit_texts)

    def scores(self, queries: list[str], pool: list[str]) -> np.ndarray:
        """Cosine similarities ``(len(queries), len(pool))``; an empty or out-of-vocabulary query scores 0."""
        if not pool:
            raise ValueError("pool must be a non-empty list of claims")
        if len(queries) == 0:
            raise ValueError("queries must be a non-empty list of texts")
        q = self.vec.transform(list(queries))
        p = self.vec.transform(list(pool))
        return np.asarray((q @ p.T).todense(), dtype=float)

    def evaluate(self, queries: list[str], pool: list[str], truth: Any, ks: tuple[int, ...] = (1, 10)) -> dict:
        """``{"r@1": ..., "r@10": ..., "mrr": ...}`` of generated ``queries`` against ``pool``."""
        if len(queries) != len(truth):
            raise ValueError(f"one query per truth index is needed; got {len(queries)} and {len(truth)}")
        s = self.scores(queries, pool)
        out = {f"r@{k}": recall_at_k(s, truth, k) for k in ks}
        out["mrr"] = mean_reciprocal_rank(s, truth)
        return out
