"""Tests of SaMA: identities that can fail (Kronecker limit, LoRA limit, merge, ranks, nullity, gradients)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from geode.adapters import (
    LoRALinear,
    SaMAConfig,
    SaMALinear,
    effective_rank,
    inject_sama,
    jacobian_nullity,
    merge_adapters,
    sama_delta,
    sama_nullity_theory,
    unmerge_adapters,
)


def _randomise(layer: nn.Module, seed: int = 0) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in layer.parameters():
            if p.requires_grad:
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))


def test_shared_blocks_reduce_to_kronecker_product():
    layer = SaMALinear(nn.Linear(12, 10), blocks_in=3, blocks_out=2, rank=1, shared=True)
    _randomise(layer)
    a, b = layer.sama_L[:, :, 0], layer.sama_R[:, 0, :]  # A (d x p) = (5 x 3), B (c x b) = (2 x 4)
    torch.testing.assert_close(layer.delta_weight(), torch.kron(a, b))
    # k > 1 shared: a sum of k Kronecker products
    layer2 = SaMALinear(nn.Linear(12, 10), 3, 2, rank=2, alpha=2.0, shared=True)
    _randomise(layer2, 1)
    want = sum(torch.kron(layer2.sama_L[:, :, t], layer2.sama_R[:, t, :]) for t in range(2))
    torch.testing.assert_close(layer2.delta_weight(), want)


def test_relaxed_blocks_equal_to_shared_when_copies_agree():
    shared = SaMALinear(nn.Linear(12, 10), 3, 2, rank=2, shared=True)
    _randomise(shared)
    relaxed = SaMALinear(nn.Linear(12, 10), 3, 2, rank=2)
    with torch.no_grad():
        relaxed.sama_L.copy_(shared.sama_L.expand(2, 5, 3, 2))
        relaxed.sama_R.copy_(shared.sama_R.expand(3, 2, 2, 4))
    torch.testing.assert_close(relaxed.delta_weight(), shared.delta_weight())


def test_one_block_is_lora():
    sama = SaMALinear(nn.Linear(9, 7), 1, 1, rank=3)
    _randomise(sama)
    left, right = sama.sama_L[0, :, 0, :], sama.sama_R[0, 0]  # B (7 x 3), A (3 x 9)
    torch.testing.assert_close(sama.delta_weight(), left @ right)


def test_forward_matches_delta_and_starts_at_base():
    base = nn.Linear(12, 8)
    layer = SaMALinear(base, 4, 2, rank=2, alpha=3.0)
    x = torch.randn(2, 5, 12)
    torch.testing.assert_close(layer(x), base(x))  # L = 0
    _randomise(layer)
    torch.testing.assert_close(layer.adapter_output(x), x @ layer.delta_weight().T, atol=1e-5, rtol=1e-5)


def test_merge_unmerge_identity_and_lora_export():
    model = nn.Sequential(nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 16))
    w0 = [m.weight.detach().clone() for m in (model[0], model[2])]
    names = inject_sama(model, SaMAConfig(target_modules=("0", "2"), blocks_in=4, blocks_out=4, rank=1))
    assert names == ["0", "2"]
    for m in (model[0], model[2]):
        _randomise(m, 3)
    x = torch.randn(6, 16)
    before = model(x)
    merge_adapters(model)
    torch.testing.assert_close(model(x), before, atol=1e-5, rtol=1e-5)
    unmerge_adapters(model)
    for m, w in zip((model[0], model[2]), w0):
        torch.testing.assert_close(m.weight, w, atol=1e-6, rtol=1e-6)
        a, b, s = m.lora_factors()
        torch.testing.assert_close(s * b @ a, m.delta_weight(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model(x), before)


def test_rank_limits_low_to_full():
    g = torch.Generator().manual_seed(0)
    for p, c, k, want in [(1, 1, 2, 2), (4, 4, 1, 16), (8, 8, 1, 32), (2, 2, 2, 8)]:
        layer = SaMALinear(nn.Linear(32, 32, dtype=torch.float64), p, c, rank=k, generator=g)
        _randomise(layer, p + c + k)
        assert layer.max_rank == want
        assert int(torch.linalg.matrix_rank(layer.delta_weight())) == want
    # budget: LoRA of rank r = k p costs what SaMA(p = c) costs; SaMA reaches rank r p
    sama = SaMALinear(nn.Linear(64, 64), 8, 8, rank=1)
    lora = LoRALinear(nn.Linear(64, 64), r=8)
    n_s = sum(p.numel() for p in sama.parameters() if p.requires_grad)
    n_l = sum(p.numel() for p in lora.parameters() if p.requires_grad)
    assert n_s == n_l == 1024 and sama.max_rank == 64


def test_jacobian_nullity_matches_theory():
    sama = SaMALinear(nn.Linear(12, 8, dtype=torch.float64), 3, 2, rank=1)
    _randomise(sama)
    assert jacobian_nullity(sama) == sama_nullity_theory(3, 2, 1, 4, 4) == 6  # diagonal group
    sama2 = SaMALinear(nn.Linear(12, 8, dtype=torch.float64), 3, 2, rank=2)
    _randomise(sama2)
    assert jacobian_nullity(sama2) == 24
    lora = LoRALinear(nn.Linear(12, 8, dtype=torch.float64), r=3)
    _randomise(lora)
    assert jacobian_nullity(lora) == 9


def test_gradients_finite_differences():
    left = torch.randn(2, 3, 4, 2, dtype=torch.float64, requires_grad=True)
    right = torch.randn(4, 2, 2, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: sama_delta(a, b, 0.7), (left, right))
    layer = SaMALinear(nn.Linear(20, 6, dtype=torch.float64), 4, 2, rank=2)
    _randomise(layer)
    x = torch.randn(3, 20, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda z: layer.adapter_output(z), (x,))


def test_effective_rank_closed_forms():
    assert effective_rank(torch.eye(7)) == pytest.approx(7.0)
    assert effective_rank(torch.outer(torch.ones(5), torch.arange(1.0, 4.0))) == pytest.approx(1.0)


def test_bad_inputs():
    with pytest.raises(ValueError, match="blocks_in"):
        SaMALinear(nn.Linear(10, 8), 3, 2)
    with pytest.raises(ValueError, match="blocks_out"):
        SaMALinear(nn.Linear(12, 8), 3, 3)
    with pytest.raises(ValueError, match="rank"):
        SaMALinear(nn.Linear(12, 8), 3, 2, rank=0)
    with pytest.raises(TypeError, match="config"):
        inject_sama(nn.Linear(4, 4), {"blocks_in": 2})


def test_peft_lora_round_trip(tmp_path):
    from geode.adapters import load_peft_lora, save_peft_lora

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 16))
    fresh = nn.Sequential(nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 16))
    fresh.load_state_dict(model.state_dict())
    inject_sama(model, SaMAConfig(target_modules=("0", "2"), blocks_in=2, blocks_out=2, rank=1))
    for m in (model[0], model[2]):
        _randomise(m, 5)
    x = torch.randn(4, 16)
    save_peft_lora(model, tmp_path / "ckpt")
    load_peft_lora(fresh, tmp_path / "ckpt")
    torch.testing.assert_close(fresh(x), model(x), atol=1e-5, rtol=1e-5)
