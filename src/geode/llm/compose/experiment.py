"""The experiment driver of the COMPOSE claim check: data preparation, two-stage training, retrieval evaluation.

Variants (all share the decoder, the losses, the optimiser and the tuning budget):

- ``dual``: both graphs, bridge, bidirectional fusion (COMPOSE);
- ``no_fusion``: both graphs concatenated, fusion skipped (the authors' ``no_fusion``);
- ``paper_only``: the citation graph only; ``formal_only``: the formal graph only;
- ``text_only``: the anchor's own text only (its citation graph cut to the root node);
- ``nn_retrieval`` (no training): the claim of the nearest training anchor by TF-IDF cosine of its context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.llm.compose.retrieval import ClaimRetriever
from geode.llm.compose.universe import MathUniverse, claim_pool, generate_universe, tfidf_svd

__all__ = ["VARIANTS", "Prepared", "evaluate_model", "nn_retrieval", "prepare", "train_variant"]

VARIANTS: dict[str, dict[str, Any]] = {
    "dual": dict(use_paper=True, use_formal=True, fusion=True),
    "no_fusion": dict(use_paper=True, use_formal=True, fusion=False),
    "paper_only": dict(use_paper=True, use_formal=False),
    "formal_only": dict(use_paper=False, use_formal=True),
    "text_only": dict(use_paper=True, use_formal=False),
}
SPECIAL = ("<pad>", "<bos>", "<eos>", "next", "extends")
FUSED = 64  # fused width: formal embedding + formal structural vector


@dataclass
class Prepared:
    """Everything a run needs: the universe, splits, token ids, graphs, pools and the retriever."""

    uni: MathUniverse
    split: dict[str, list[int]]  # anchor indices
    vocab: list[str]
    tokens: dict[str, Any]
    paper: dict[str, Any]  # GraphBatch per split
    paper_root: dict[str, Any]  # root-only graphs (text-only)
    formal: dict[str, Any]
    claim_target: Any
    pool: dict[str, tuple[list[str], np.ndarray]]
    retriever: ClaimRetriever
    paper_dim: int
    formal_dim: int
    claim_dim: int

    def words(self) -> dict[str, int]:
        """Token id of each word."""
        return {w: i for i, w in enumerate(self.vocab)}


def prepare(cfg: dict[str, Any], seed: int) -> Prepared:
    """Generate the universe of ``seed``, split its anchors and build graphs, tokens, pools and embeddings."""
    import torch

    from geode.llm.compose.model import batch_graphs

    uni = generate_universe(seed=seed, **cfg["universe"])
    rng = np.random.default_rng(seed + 7)
    order = rng.permutation(len(uni.anchors))
    nv, nt = cfg["n_val"], cfg["n_test"]
    split = {"val": order[:nv].tolist(), "test": order[nv : nv + nt].tolist(), "train": order[nv + nt :].tolist()}
    vocab = [*SPECIAL, *uni.concepts, *uni.symbols]
    ids = {w: i for i, w in enumerate(vocab)}
    # text embeddings (TF-IDF + SVD; papers and theorems embedded separately, as the paper uses E5 / DeepSeek)
    pz = tfidf_svd(uni.paper_text, uni.paper_text, cfg["paper_dim"], seed=seed)
    tz = tfidf_svd(uni.theorem_text, uni.theorem_text, cfg["formal_dim"], seed=seed)
    train_claims = [uni.anchors[i].claim for i in split["train"]]
    cz = tfidf_svd(train_claims, train_claims, cfg["claim_dim"], seed=seed)
    tokens, paper, paper_root, formal, pool = {}, {}, {}, {}, {}
    for name, idx in split.items():
        an = [uni.anchors[i] for i in idx]
        tokens[name] = torch.tensor([[ids["<bos>"], *(ids[w] for w in a.claim.split()), ids["<eos>"]] for a in an])
        paper[name] = batch_graphs([pz[a.paper_nodes] for a in an], [a.paper_edges for a in an])
        paper_root[name] = batch_graphs([pz[a.paper_nodes[:1]] for a in an], [np.zeros((0, 2)) for _ in an])
        formal[name] = batch_graphs([tz[a.formal_nodes] for a in an], [a.formal_edges for a in an])
        if name != "train":
            pool[name] = claim_pool(uni, an, hard=cfg["hard"], seed=seed + (1 if name == "val" else 2))
    return Prepared(
        uni,
        split,
        vocab,
        tokens,
        paper,
        paper_root,
        formal,
        torch.tensor(cz),
        pool,
        ClaimRetriever(train_claims),
        pz.shape[1],
        tz.shape[1],
        cz.shape[1],
    )


def _inputs(prep: Prepared, variant: str, split: str) -> tuple[Any, Any]:
    v = VARIANTS[variant]
    paper = (prep.paper_root if variant == "text_only" else prep.paper)[split] if v["use_paper"] else None
    formal = prep.formal[split] if v["use_formal"] else None
    return paper, formal


def build_model(prep: Prepared, variant: str, cfg: dict[str, Any]) -> Any:
    """A fresh :class:`ComposeModel` of ``variant`` sized by ``cfg``."""
    from geode.llm.compose.model import ComposeModel

    v = {k: val for k, val in VARIANTS[variant].items()}
    return ComposeModel(
        prep.paper_dim,
        prep.formal_dim,
        len(prep.vocab),
        formal_struct_dim=FUSED - prep.formal_dim,
        struct_dim=cfg["struct_dim"],
        d_model=cfg["d_model"],
        n_layers=cfg["n_layers"],
        max_len=8,
        claim_dim=prep.claim_dim,
        **v,
    )


def train_variant(
    prep: Prepared, variant: str, params: dict[str, Any], cfg: dict[str, Any], seed: int, *, stage1: bool = True
) -> tuple[Any, dict[str, float]]:
    """Train ``variant`` (stage 1 then stage 2, AdamW at ``params["lr"]``); returns the model and loss stats."""
    import torch

    torch.manual_seed(seed)
    model = build_model(prep, variant, cfg).to(cfg["device"])
    gen = torch.Generator().manual_seed(seed + 1)
    paper, formal = _inputs(prep, variant, "train")
    paper = paper.to(cfg["device"]) if paper is not None else None
    formal = formal.to(cfg["device"]) if formal is not None else None
    toks = prep.tokens["train"].to(cfg["device"])
    target = prep.claim_target.to(cfg["device"])
    n, bs, lr = toks.shape[0], cfg["batch"], float(params["lr"])
    stats: dict[str, float] = {}
    model.train()

    def batch() -> tuple[Any, ...]:
        i = torch.randint(n, (bs,), generator=gen).to(cfg["device"])
        return (
            toks[i],
            paper.index(i) if paper is not None else None,
            formal.index(i) if formal is not None else None,
            target[i],
        )

    if stage1 and cfg["stage1_steps"]:
        enc_params = [p for name, p in model.named_parameters() if not name.startswith(("decoder.", "fused_proj"))]
        opt1 = torch.optim.AdamW(enc_params, lr=lr, weight_decay=0.01)
        for _ in range(cfg["stage1_steps"]):
            t, pg, fg, ct = batch()
            loss, parts = model.loss(t, pg, fg, stage=1, claim_target=ct)
            opt1.zero_grad()
            loss.backward()
            opt1.step()
        stats["stage1_align"] = parts["align"]
    opt = torch.optim.AdamW(
        [p for name, p in model.named_parameters() if not name.startswith("align_proj")], lr=lr, weight_decay=0.01
    )
    ce_hist = []
    for _ in range(cfg["steps"]):
        t, pg, fg, _ = batch()
        loss, parts = model.loss(t, pg, fg, stage=2)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ce_hist.append(parts["ce"])
    stats["final_ce"] = float(np.mean(ce_hist[-20:]))
    stats["finite"] = float(all(bool(torch.isfinite(p).all()) for p in model.parameters()))
    return model, stats


def _decode(prep: Prepared, ids: Any) -> list[str]:
    out = []
    for row in ids.tolist():
        words = []
        for i in row:
            if i in (0, 2):  # pad or eos
                break
            words.append(prep.vocab[i])
        out.append(" ".join(words))
    return out


def _parts(prep: Prepared, texts: list[str], split: str) -> dict[str, float]:
    conc = "|".join(prep.uni.concepts)
    sym = "|".join(prep.uni.symbols)
    pat = re.compile(rf"^next ({conc}) extends ({sym}) ({sym})$")
    ok = [bool(pat.match(t)) for t in texts]
    claims = [prep.uni.anchors[i].claim.split() for i in prep.split[split]]
    gen = [t.split() for t in texts]
    a = [len(g) > 1 and g[1] == c[1] for g, c in zip(gen, claims)]
    f = [len(g) >= 5 and g[3:5] == c[3:5] for g, c in zip(gen, claims)]
    return {"wellformed": float(np.mean(ok)), "concept_acc": float(np.mean(a)), "theorem_acc": float(np.mean(f))}


def evaluate_model(
    prep: Prepared,
    model: Any,
    variant: str,
    split: str,
    *,
    shuffle: str | None = None,
    seed: int = 0,
    device: str = "cpu",
) -> dict[str, float]:
    """Generate a claim for every anchor of ``split`` and score it against the split's pool.

    ``shuffle="formal"`` (or ``"paper"``) gives every anchor the formal (citation) graph of another anchor of the
    split (a random derangement): the negative control of a model that really uses that graph.
    """
    import torch

    paper, formal = _inputs(prep, variant, split)
    if shuffle is not None:
        n = prep.tokens[split].shape[0]
        perm = np.random.default_rng(seed).permutation(n)
        der = torch.as_tensor(np.roll(perm, 1)[np.argsort(perm)])  # i -> perm[perm^-1(i) - 1] != i
        if shuffle == "formal":
            formal = formal.index(der)
        elif shuffle == "paper":
            paper = paper.index(der)
        else:
            raise ValueError(f"shuffle must be 'formal', 'paper' or None; got {shuffle!r}")
    model.eval()
    w = prep.words()
    ids = model.generate(
        paper.to(device) if paper is not None else None,
        formal.to(device) if formal is not None else None,
        bos=w["<bos>"],
        eos=w["<eos>"],
        max_new=7,
    )
    texts = _decode(prep, ids.cpu())
    pool, truth = prep.pool[split]
    out = prep.retriever.evaluate(texts, pool, truth)
    out.update(_parts(prep, texts, split))
    return out


def nn_retrieval(prep: Prepared, split: str, context: str) -> dict[str, float]:
    """Nearest-neighbour baseline: the claim of the training anchor whose context is closest by TF-IDF cosine.

    ``context``: ``"anchor"`` (the anchor's text), ``"paper"`` (all texts of its citation graph) or ``"both"``
    (citation-graph texts and formal-graph statements).
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    uni = prep.uni

    def text(i: int) -> str:
        a = uni.anchors[i]
        nodes = a.paper_nodes[:1] if context == "anchor" else a.paper_nodes
        s = " ".join(uni.paper_text[p] for p in nodes)
        if context == "both":
            s += " " + " ".join(uni.theorem_text[t] for t in a.formal_nodes)
        return s

    if context not in ("anchor", "paper", "both"):
        raise ValueError(f"context must be 'anchor', 'paper' or 'both'; got {context!r}")
    vec = TfidfVectorizer(token_pattern=r"\S+", lowercase=False)
    xtr = vec.fit_transform([text(i) for i in prep.split["train"]])
    xq = vec.transform([text(i) for i in prep.split[split]])
    best = np.asarray((xq @ xtr.T).todense()).argmax(1)
    texts = [uni.anchors[prep.split["train"][j]].claim for j in best]
    pool, truth = prep.pool[split]
    out = prep.retriever.evaluate(texts, pool, truth)
    out.update(_parts(prep, texts, split))
    return out
