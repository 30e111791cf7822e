import math

import pytest
import torch

from geode.ssl.specalign import SDRSampler, SpecAlignLoss, cf_discrepancy, info_nce, rbf_mmd2


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
