"""A synthetic "math universe" for grounded future-claim generation, and its TF-IDF/SVD text embeddings.

The universe (an inferred stand-in for the paper's arXiv + Mathlib data, which are not released):

- **concepts** ``c00 .. c{K-1}`` and **topics**: each topic ``t`` is a trajectory ``c[t, 0], ..., c[t, L-1]`` of
  distinct concepts. Every consecutive pair (bigram) is unique over all topics, but a concept appears in
  several topics, so a paper's own concept does not say which concept comes next: its citation history does.
- **papers**: ``papers_per_step`` papers for every (topic, step). A paper's text names its concept, two filler
  words and, with probability ``noise_word``, a random other concept. A paper at step ``s`` cites two papers of
  step ``s-1`` and one of step ``s-2`` of its topic and, with probability ``noise_cite``, one paper of another
  topic.
- **formal theorem DAG**: ``n_theorems`` theorems, each named by a distinct pair of symbols ``(s_i, s_j)``
  (statement text ``"thm s_i s_j"``); theorem ``k`` depends on one or two theorems of lower index.
- **anchors**: papers at steps ``2 .. L-2``. Anchor ``a`` has a citation subgraph (the anchor, root at index 0,
  and its citations up to two hops, at most ``max_paper_nodes`` nodes; edge ``(u, v)``: ``u`` cites ``v``) and an
  aligned formal subgraph: a seed theorem drawn independently of the paper (the stand-in for the top-1 Mathlib
  theorem retrieved for it) at index 0 and its dependencies by BFS up to two hops (edge ``(u, v)``: ``u``
  depends on ``v``).
- **the future claim** of an anchor: ``"next <A> extends <s_i> <s_j>"``, a new child theorem of the seed on the
  next concept ``A = c[t, s+1]`` of the anchor's topic. ``A`` is recoverable from the citation graph (the bigram
  of a cited step-``s-1`` concept and the anchor's concept names the topic) and not from the formal graph; the
  symbols are recoverable from the formal graph (its root) and not from the citation graph. The claim is thus
  determined by both graphs and by neither alone (:func:`oracle_claim` recovers it from both;
  ``tests/llm/test_compose.py`` checks the rest).

This tests the *mechanism* (a model that conditions on both graphs can recover what neither gives alone), not
the scientific claim that real future mathematics is predictable this way. The paper's data pairs 108K arXiv
citation graphs with Mathlib dependency graphs; ours is designed so that both sources are needed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_int, check_probability

__all__ = ["Anchor", "MathUniverse", "claim_pool", "generate_universe", "oracle_claim", "tfidf_svd"]

FILLERS = ("lemma", "bound", "space", "operator", "estimate", "group", "measure", "flow")


@dataclass
class Anchor:
    """One anchor paper with its two graphs and its future claim (a plain record: it stores what it is given).

    Attributes
    ----------
    paper : int
        Index of the anchor in :attr:`MathUniverse.papers`.
    paper_nodes : list of int
        Papers of the citation subgraph, the anchor first.
    paper_edges : numpy.ndarray of shape (E, 2)
        Local edges ``(u, v)``: node ``u`` cites node ``v``.
    formal_nodes : list of int
        Theorems of the formal subgraph, the seed first.
    formal_edges : numpy.ndarray of shape (F, 2)
        Local edges ``(u, v)``: theorem ``u`` depends on theorem ``v``.
    next_concept : int
        The concept ``A`` of the future claim.
    claim : str
        ``"next <A> extends <s_i> <s_j>"``.
    """

    paper: int
    paper_nodes: list[int]
    paper_edges: np.ndarray
    formal_nodes: list[int]
    formal_edges: np.ndarray
    next_concept: int
    claim: str


@dataclass
class MathUniverse:
    """A generated universe: topics, papers with citations, a theorem DAG and anchors (see the module doc).

    A plain record built by :func:`generate_universe`: it stores what it is given without checking.
    """

    concepts: list[str]
    symbols: list[str]
    trajectories: np.ndarray  # (T, L) concept ids
    paper_topic: np.ndarray
    paper_step: np.ndarray
    paper_concept: np.ndarray
    paper_text: list[str]
    paper_cites: list[list[int]]
    theorem_symbols: np.ndarray  # (M, 2) symbol ids
    theorem_deps: list[list[int]]
    theorem_text: list[str]
    anchors: list[Anchor] = field(default_factory=list)

    def render_claim(self, concept: int, theorem: int) -> str:
        """The claim string of next concept ``concept`` extending theorem ``theorem``."""
        i, j = self.theorem_symbols[theorem]
        return f"next {self.concepts[concept]} extends {self.symbols[i]} {self.symbols[j]}"


def _trajectories(rng: np.random.Generator, n_topics: int, n_concepts: int, length: int) -> np.ndarray:
    seen: set[tuple[int, int]] = set()
    out = np.zeros((n_topics, length), dtype=np.int64)
    for t in range(n_topics):
        for _ in range(1000):
            traj = rng.choice(n_concepts, size=length, replace=False)
            pairs = {(int(traj[s - 1]), int(traj[s])) for s in range(1, length)}
            if not pairs & seen:
                seen |= pairs
                out[t] = traj
                break
        else:  # pragma: no cover - only for universes far too dense to exist
            raise ValueError(
                f"cannot draw {n_topics} trajectories of length {length} with unique bigrams over {n_concepts} "
                "concepts; use more concepts or fewer topics"
            )
    return out


def _bfs(start: int, nbrs: list[list[int]], hops: int, cap: int) -> list[int]:
    order, depth = [start], {start: 0}
    queue = deque([start])
    while queue and len(order) < cap:
        u = queue.popleft()
        if depth[u] >= hops:
            continue
        for v in nbrs[u]:
            if v not in depth and len(order) < cap:
                depth[v] = depth[u] + 1
                order.append(v)
                queue.append(v)
    return order


def _local_edges(nodes: list[int], nbrs: list[list[int]]) -> np.ndarray:
    pos = {n: i for i, n in enumerate(nodes)}
    edges = [(pos[u], pos[v]) for u in nodes for v in nbrs[u] if v in pos]
    return np.asarray(edges, dtype=np.int64).reshape(-1, 2)


def generate_universe(
    *,
    n_topics: int = 16,
    n_concepts: int = 24,
    length: int = 6,
    papers_per_step: int = 16,
    n_symbols: int = 20,
    n_theorems: int = 120,
    noise_cite: float = 0.3,
    noise_word: float = 0.3,
    max_paper_nodes: int = 8,
    max_formal_nodes: int = 7,
    seed: int | np.random.Generator = 0,
) -> MathUniverse:
    """Generate a math universe whose anchors' future claims need both graphs (see the module docstring).

    Parameters
    ----------
    n_topics, n_concepts, length : int
        Topics, concepts and the length of each topic's concept trajectory (``length >= 4``: anchors need two
        steps of history and a next step).
    papers_per_step : int
        Papers per (topic, step); the anchors are the papers of steps ``2 .. length-2``.
    n_symbols, n_theorems : int
        Formal symbols and theorems (each theorem a distinct symbol pair, so
        ``n_theorems <= n_symbols (n_symbols - 1) / 2``).
    noise_cite, noise_word : float
        Probability that a paper cites a paper of another topic, and that its text names a random concept.
    max_paper_nodes, max_formal_nodes : int
        Caps of the two subgraphs.
    seed : int or numpy.random.Generator

    Returns
    -------
    MathUniverse
    """
    n_topics = check_int("n_topics", n_topics, low=2)
    n_concepts = check_int("n_concepts", n_concepts, low=4)
    length = check_int("length", length, low=4, high=n_concepts)
    papers_per_step = check_int("papers_per_step", papers_per_step, low=3)
    n_symbols = check_int("n_symbols", n_symbols, low=3)
    n_theorems = check_int("n_theorems", n_theorems, low=8, high=n_symbols * (n_symbols - 1) // 2)
    noise_cite = check_probability("noise_cite", noise_cite)
    noise_word = check_probability("noise_word", noise_word)
    max_paper_nodes = check_int("max_paper_nodes", max_paper_nodes, low=2)
    max_formal_nodes = check_int("max_formal_nodes", max_formal_nodes, low=2)
    rng = as_generator(seed)
    concepts = [f"c{k:02d}" for k in range(n_concepts)]
    symbols = [f"s{k:02d}" for k in range(n_symbols)]
    traj = _trajectories(rng, n_topics, n_concepts, length)

    # papers, by (topic, step)
    ids = np.arange(n_topics * length * papers_per_step).reshape(n_topics, length, papers_per_step)
    n_papers = ids.size
    topic = np.repeat(np.arange(n_topics), length * papers_per_step)
    step = np.tile(np.repeat(np.arange(length), papers_per_step), n_topics)
    concept = traj[topic, step]
    texts, cites = [], []
    for p in range(n_papers):
        words = [concepts[concept[p]], *rng.choice(FILLERS, size=2, replace=False)]
        if rng.random() < noise_word:
            words.append(concepts[int(rng.integers(n_concepts))])
        texts.append(" ".join(str(w) for w in words))
        t, s = int(topic[p]), int(step[p])
        c: list[int] = []
        if s >= 1:
            c += [int(x) for x in rng.choice(ids[t, s - 1], size=2, replace=False)]
        if s >= 2:
            c.append(int(rng.choice(ids[t, s - 2])))
        if s >= 1 and rng.random() < noise_cite:
            other = int(rng.choice([x for x in range(n_topics) if x != t]))
            c.append(int(rng.choice(ids[other, : max(s, 1)].ravel())))
        cites.append(c)

    # formal DAG
    pairs = np.array([(i, j) for i in range(n_symbols) for j in range(i + 1, n_symbols)], dtype=np.int64)
    thm_sym = pairs[rng.choice(len(pairs), size=n_theorems, replace=False)]
    deps: list[list[int]] = [[]]
    for k in range(1, n_theorems):
        deps.append(sorted(int(x) for x in rng.choice(k, size=min(k, int(rng.integers(1, 3))), replace=False)))
    thm_text = [f"thm {symbols[i]} {symbols[j]}" for i, j in thm_sym]

    uni = MathUniverse(
        concepts, symbols, traj, topic, step, concept, texts, cites, thm_sym, deps, thm_text, anchors=[]
    )
    seeds_from = n_theorems // 4  # seeds with some dependencies
    for p in np.flatnonzero((step >= 2) & (step <= length - 2)):
        p = int(p)
        pn = _bfs(p, cites, 2, max_paper_nodes)
        seed_thm = int(rng.integers(seeds_from, n_theorems))
        fn = _bfs(seed_thm, deps, 2, max_formal_nodes)
        nxt = int(traj[topic[p], step[p] + 1])
        uni.anchors.append(
            Anchor(p, pn, _local_edges(pn, cites), fn, _local_edges(fn, deps), nxt, uni.render_claim(nxt, seed_thm))
        )
    return uni


def oracle_claim(uni: MathUniverse, anchor: Anchor) -> str | None:
    """Recover an anchor's claim from its two graphs alone, by the universe's rules (None if ambiguous).

    The next concept: the (topic, step) whose trajectory matches the anchor's concept and is supported by the
    most cited papers (one hop: the previous concept; two hops: the one before); the symbols: those of the
    formal graph's root. Used by the tests to check that the ground truth is consistent.
    """
    concept = uni.paper_concept[anchor.paper_nodes]
    root_c = int(concept[0])
    hop1 = [int(v) for u, v in anchor.paper_edges if u == 0]
    hop2 = [int(v) for u, v in anchor.paper_edges if u in hop1 and v not in hop1 and v != 0]
    scores: dict[int, int] = {}
    for t in range(uni.trajectories.shape[0]):
        tr = uni.trajectories[t]
        for s in range(2, tr.size - 1):
            if tr[s] == root_c:
                sc = sum(int(concept[v]) == tr[s - 1] for v in hop1) + sum(int(concept[v]) == tr[s - 2] for v in hop2)
                nxt = int(tr[s + 1])
                scores[nxt] = max(scores.get(nxt, 0), sc)
    if not scores:
        return None
    best = max(scores.values())
    nexts = {c for c, sc in scores.items() if sc == best}
    if len(nexts) != 1:
        return None
    return uni.render_claim(nexts.pop(), anchor.formal_nodes[0])


def claim_pool(
    uni: MathUniverse, anchors: list[Anchor], *, hard: int = 15, seed: int | np.random.Generator = 0
) -> tuple[list[str], np.ndarray]:
    """The retrieval pool of the anchors' true claims and hard distractors; returns (pool, index of each truth).

    For every anchor the pool holds its claim, ``hard`` claims with the same theorem and another next concept
    (what a formal-graph-only model cannot exclude) and ``hard`` claims with the same next concept and another
    theorem (what a citation-graph-only model cannot exclude). Duplicates are merged.
    """
    hard = check_int("hard", hard, low=0)
    if len(anchors) == 0:
        raise ValueError("anchors must hold at least one anchor")
    rng = as_generator(seed)
    n_c, n_t = len(uni.concepts), uni.theorem_symbols.shape[0]
    pool: dict[str, int] = {}

    def add(s: str) -> int:
        if s not in pool:
            pool[s] = len(pool)
        return pool[s]

    truth = np.array([add(a.claim) for a in anchors], dtype=np.int64)
    for a in anchors:
        thm = a.formal_nodes[0]
        for c in rng.choice([c for c in range(n_c) if c != a.next_concept], size=min(hard, n_c - 1), replace=False):
            add(uni.render_claim(int(c), thm))
        for t in rng.choice([t for t in range(n_t) if t != thm], size=min(hard, n_t - 1), replace=False):
            add(uni.render_claim(a.next_concept, int(t)))
    return list(pool), truth


def tfidf_svd(fit_texts: list[str], texts: list[str], dim: int, *, seed: int = 0) -> np.ndarray:
    """L2-normalised TF-IDF + truncated-SVD embeddings of ``texts``, the model fitted on ``fit_texts``.

    The stand-in for the paper's E5 / DeepSeek-Math embeddings. The number of components is
    ``min(dim, vocabulary size)``; words are whitespace-separated tokens.
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    dim = check_int("dim", dim, low=1)
    if not fit_texts:
        raise ValueError("fit_texts must be a non-empty list of strings")
    if len(texts) == 0:
        raise ValueError("texts must be a non-empty list of strings")
    vec = TfidfVectorizer(token_pattern=r"\S+", lowercase=False)
    x_fit = vec.fit_transform(fit_texts)
    k = max(1, min(dim, x_fit.shape[1]))
    svd = TruncatedSVD(n_components=k, random_state=seed).fit(x_fit)
    z = svd.transform(vec.transform(texts))
    z /= np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
    return z.astype(np.float32)
