from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from geode.compression import (
    DigitDenoiser,
    SaraOnline,
    SVDLinear,
    apply_sara,
    ddim_sample,
    lrae_table,
    sara_dp,
    set_block_ranks,
)


def _small():
    return apply_sara(DigitDenoiser(width=32, hidden=48, n_blocks=2, seed=0))


def test_svd_linear_full_rank_is_dense_and_rank_r_is_the_truncated_svd():
    g = torch.Generator().manual_seed(0)
    lin = nn.Linear(12, 8)
    x = torch.randn(5, 12, generator=g)
    s = SVDLinear.from_linear(lin)
    with torch.no_grad():
        assert torch.allclose(s(x), lin(x), atol=1e-6)
        s.set_rank(3)
        u, sv, vh = torch.linalg.svd(lin.weight.double(), full_matrices=False)
        w3 = (u[:, :3] * sv[:3]) @ vh[:3]
        assert torch.allclose(s(x).double(), x.double() @ w3.T + lin.bias.double(), atol=1e-5)
    assert s.macs() == 3 * (12 + 8)
    s.set_rank(8)  # the full rank: dense again
    assert s.rank is None and s.macs() == 96
    with pytest.raises(ValueError, match="rank"):
        s.set_rank(9)
    with pytest.raises(TypeError, match="rank"):
        s.set_rank(2.0)


def test_dp_is_optimal_against_brute_force_and_respects_the_budget():
    rng = np.random.default_rng(1)
    err = np.sort(rng.random((5, 4)), axis=1)[:, ::-1]  # cheaper option = larger error
    costs = np.array([1.0, 2.0, 3.5, 5.0])
    for budget in (5.0, 9.0, 12.5, 25.0):
        picks = sara_dp(err, costs, budget, resolution=int(2 * budget))  # unit 0.5: costs are whole units
        assert costs[picks].sum() <= budget + 1e-9
        best = min(
            sum(err[i, c[i]] for i in range(5))
            for c in itertools.product(range(4), repeat=5)
            if costs[list(c)].sum() <= budget
        )
        assert err[np.arange(5), picks].sum() == pytest.approx(best)
    with pytest.raises(ValueError, match="budget"):
        sara_dp(err, costs, 4.0)


def test_online_rank_fraction_follows_the_output_spectrum():
    ctl = SaraOnline(0.0, [32, 32])
    u = torch.randn(10, 8, 1, generator=torch.Generator().manual_seed(2))
    v = torch.randn(10, 1, 8, generator=torch.Generator().manual_seed(3))
    rank1 = (u @ v).reshape(10, 64)
    assert ctl.fraction(rank1) == pytest.approx(1 / 8)
    assert ctl(1, rank1) == [4, 4]
    assert ctl(0, None) == [None, None]  # first step: full rank
    assert 0 < SaraOnline(0.999, [32]).fraction(torch.randn(10, 64)) < 1 / 8  # continuous below one rank
    lo, hi = SaraOnline(0.3, [32]).fraction(torch.randn(10, 64)), SaraOnline(0.2, [32]).fraction(torch.randn(10, 64))
    assert 0 < lo < hi < 1  # a smaller tolerance asks for more rank
    assert SaraOnline(1e-9, [32]).fraction(torch.randn(10, 64)) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="tau"):
        SaraOnline(1.0, [32])
    with pytest.raises(ValueError, match="reading"):
        SaraOnline(0.1, [32], reading="tokens")


def test_full_rank_schedule_cache_and_lrae_limits():
    model = _small()
    noise = torch.randn(6, 64, generator=torch.Generator().manual_seed(4))
    x_free, macs_free = ddim_sample(model, noise, steps=5)
    x_full, macs_full = ddim_sample(model, noise, steps=5, schedule=[[None, None]] * 5)
    assert torch.allclose(x_free, x_full) and macs_free == macs_full
    _, macs_cache = ddim_sample(model, noise, steps=5, cache_steps=(1, 3))
    assert macs_cache == pytest.approx(macs_free * 3 / 5)
    x_low, macs_low = ddim_sample(model, noise, steps=5, schedule=[[4, 4]] * 5)
    assert macs_low < macs_free and not torch.allclose(x_low, x_free)
    table = lrae_table(model, noise, (4, 16, None), steps=5)
    assert table.shape == (5, 2, 3)
    assert torch.all(table[..., 2] == 0)  # full rank: no error
    assert torch.all(table[..., 0] >= table[..., 1] - 1e-12)  # error grows as the rank falls (here)
    sample_table = lrae_table(model, noise, (4, 16, None), steps=5, measure="sample")
    assert torch.all(sample_table[..., 2].abs() < 1e-10) and torch.all(sample_table[..., 0] > 0)
    with pytest.raises(ValueError, match="measure"):
        lrae_table(model, noise, (4,), steps=5, measure="trajectory")
    with pytest.raises(ValueError, match="per block"):
        set_block_ranks(model, [4])
    with pytest.raises(TypeError, match="apply_sara"):
        set_block_ranks(DigitDenoiser(width=32, hidden=48, n_blocks=1), [4])
