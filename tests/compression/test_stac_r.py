from __future__ import annotations

import pytest
import torch
from torch import nn

from geode.compression import (
    ActivationCompressor,
    StacrLinear,
    bridge_cosine_bound,
    saved_bytes,
    stacr_unwrap,
    stacr_wrap,
)


def _grads(model, x):
    model.zero_grad(set_to_none=True)
    model(x).pow(2).sum().backward()
    return [p.grad.clone() for p in model.parameters()]


def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 8))


def test_full_rank_compression_is_lossless_and_gives_identical_gradients():
    model = _mlp()
    x = torch.randn(2, 10, 16)
    exact = _grads(model, x)
    stacr_wrap(model, rank=16, residual_frac=0.0, targets=lambda n, m: m.in_features == 16)
    approx = _grads(model, x)
    for a, b in zip(exact, approx):
        assert torch.allclose(a, b, atol=1e-5)


def test_residual_of_all_entries_recovers_the_gradient_up_to_int8_rounding():
    model = _mlp(1)
    x = torch.randn(40, 16)
    exact = _grads(model, x)
    stacr_wrap(model, rank=1, residual_frac=1.0, targets=lambda n, m: m.in_features == 16)
    approx = _grads(model, x)
    cos = torch.nn.functional.cosine_similarity(exact[0].flatten(), approx[0].flatten(), dim=0)
    assert cos > 0.999


def test_unwrap_restores_the_layers():
    model = _mlp()
    names = stacr_wrap(model, rank=4)
    assert names == ["0", "2"] and isinstance(model[0], StacrLinear)
    stacr_unwrap(model)
    assert isinstance(model[0], nn.Linear)


def test_compress_decompress_and_the_tracked_basis_stays_orthonormal():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(200, 6, generator=gen) @ torch.randn(6, 24, generator=gen)  # rank 6
    comp = ActivationCompressor(6, 0.0)
    for _ in range(3):
        c, b, idx, q, s = comp.compress(x)
    assert torch.allclose(b.T @ b, torch.eye(6), atol=1e-5)
    assert torch.allclose(ActivationCompressor.decompress(c, b, idx, q, s), x, atol=1e-3)
    assert idx.dtype == torch.int32 and q.dtype == torch.int8


def test_tracked_beats_untracked_on_low_rank_inputs():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(300, 4, generator=gen) @ torch.randn(4, 64, generator=gen)
    errs = {}
    for mode in ("tracked", "untracked"):
        comp = ActivationCompressor(4, 0.0, mode=mode)
        xh = ActivationCompressor.decompress(*comp.compress(x))
        errs[mode] = float((x - xh).norm() / x.norm())
    assert errs["tracked"] < 1e-3 < errs["untracked"]


def test_saved_bytes_drop_when_wrapped():
    model = _mlp()
    x = torch.randn(256, 16)
    params = list(model.parameters())
    with saved_bytes(params) as base:
        model(x).sum()
    stacr_wrap(model, rank=2, residual_frac=0.0)
    with saved_bytes(params) as comp:
        model(x).sum()
    assert 0 < comp["bytes"] < base["bytes"]


def test_bridge_bound_holds():
    gen = torch.Generator().manual_seed(4)
    g, x = torch.randn(50, 8, generator=gen), torch.randn(50, 12, generator=gen)
    xh = x + 0.1 * torch.randn(50, 12, generator=gen)
    cos = torch.nn.functional.cosine_similarity((g.T @ x).flatten(), (g.T @ xh).flatten(), dim=0)
    assert float(cos) >= bridge_cosine_bound(g, x, xh) - 1e-6
    assert bridge_cosine_bound(g, x, x) == 1.0


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="rank"):
        stacr_wrap(_mlp(), rank=64)
    with pytest.raises(ValueError, match="residual_frac"):
        ActivationCompressor(2, 1.5)
    with pytest.raises(ValueError, match="mode"):
        ActivationCompressor(2, mode="exact")
    with pytest.raises(TypeError, match="layer"):
        StacrLinear(nn.ReLU(), ActivationCompressor(2))


def test_a_first_batch_with_fewer_rows_than_the_rank_does_not_lock_the_basis_below_it():
    """An MoE expert that gets 4 tokens in the first step: the tracked basis still has ``rank`` columns.

    The basis used to keep the first batch's 4 directions for good, silently reconstructing later rank-16
    activations with a 73% error.
    """
    g = torch.Generator().manual_seed(0)
    comp = ActivationCompressor(rank=16, residual_frac=0.0)
    _, b, *_ = comp.compress(torch.randn(4, 64, generator=g))
    assert b.shape == (64, 16)
    assert torch.allclose(b.T @ b, torch.eye(16), atol=1e-5)
    x = torch.randn(512, 16, generator=g) @ torch.randn(16, 64, generator=g)  # rank-16 activations later
    for _ in range(5):
        c, b, *_ = comp.compress(x)
    assert float((x - c @ b.T).norm() / x.norm()) < 1e-3
