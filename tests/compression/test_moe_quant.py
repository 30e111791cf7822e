from __future__ import annotations

import itertools

import pytest
import torch

from geode.compression import (
    E2M1_VALUES,
    MoELM,
    QuantAdapterLinear,
    allocate_ranks,
    expert_error_spectra,
    expert_loads,
    load_weighted_error,
    mxfp4_moe,
    mxfp4_quantize,
    record_routes,
    routing_replay_qat,
    set_replay,
    topk_agreement,
)


def _model(seed=0, **kw):
    return MoELM(
        17, d_model=32, n_layers=2, n_heads=2, d_ff=32, n_experts=4, top_k=2, max_positions=16, seed=seed, **kw
    )


def _ids(seed=0, b=4, t=16):
    return torch.randint(0, 17, (b, t), generator=torch.Generator().manual_seed(seed))


def test_mxfp4_is_exact_on_its_grid_and_idempotent():
    g = torch.Generator().manual_seed(0)
    vals = torch.tensor(E2M1_VALUES)
    codes = vals[torch.randint(0, 8, (4, 64), generator=g)] * (torch.randint(0, 2, (4, 64), generator=g) * 2 - 1)
    codes[:, ::32] = 6.0  # every block reaches the top of the grid, so its scale is 2^(2-2) * 2^e
    w = codes * 2.0**-3
    assert torch.equal(mxfp4_quantize(w), w)
    x = torch.randn(8, 64, generator=g)
    q = mxfp4_quantize(x)
    assert torch.equal(mxfp4_quantize(q), q)
    # every element is an E2M1 value times its block's power-of-two scale
    blocks = x.reshape(8, 2, 32)
    scale = torch.exp2(torch.floor(torch.log2(blocks.abs().amax(-1, keepdim=True))) - 2)
    ratio = (q.reshape(8, 2, 32) / scale).abs()
    assert torch.isin(ratio, vals).all()
    # nearest grid value: the error is at most half the largest gap (2) times the scale, or the clip at 6
    err = (q - x).reshape(8, 2, 32).abs()
    assert (err <= torch.where(blocks.abs() / scale > 6, 2.0, 1.0) * scale + 1e-7).all()


def test_mxfp4_bad_input():
    with pytest.raises(ValueError, match="block_size"):
        mxfp4_quantize(torch.randn(4, 30))
    with pytest.raises(TypeError, match="weight"):
        mxfp4_quantize(torch.ones(4, 32, dtype=torch.int64))


def test_adapter_init_is_the_truncated_svd_and_full_rank_is_exact():
    g = torch.Generator().manual_seed(1)
    w = torch.randn(12, 8, generator=g, dtype=torch.float64)
    wq = torch.round(w)
    full = QuantAdapterLinear(wq, None, 8)
    full.init_from_error(w - wq)
    assert torch.allclose(full.effective_weight(), w, atol=1e-10)
    x = torch.randn(5, 8, generator=g, dtype=torch.float64)
    assert torch.allclose(full(x), x @ w.T, atol=1e-10)
    low = QuantAdapterLinear(wq, None, 3)
    low.init_from_error(w - wq)
    s = torch.linalg.svdvals(w - wq)
    assert torch.isclose((w - low.effective_weight()).pow(2).sum(), s[3:].pow(2).sum())
    with pytest.raises(ValueError, match="rank"):
        QuantAdapterLinear(wq, None, 9)


def test_greedy_allocation_is_optimal_against_brute_force():
    g = torch.Generator().manual_seed(2)
    spectra = [torch.sort(torch.rand(4, generator=g), descending=True).values for _ in range(3)]
    p = torch.rand(3, generator=g)
    for budget in range(0, 13):
        r = allocate_ranks(spectra, p, budget)
        assert sum(r) == budget

        def gain(rr):
            return sum(float(p[e]) * float(spectra[e][: rr[e]].sum()) for e in range(3))

        best = max(gain(c) for c in itertools.product(range(5), repeat=3) if sum(c) == budget)
        assert gain(r) == pytest.approx(best)
    with pytest.raises(ValueError, match="budget"):
        allocate_ranks(spectra, p, 13)
    with pytest.raises(ValueError, match="weights"):
        allocate_ranks(spectra, [1.0, 1.0], 2)


def test_load_weighted_error_falls_monotonically_with_the_budget():
    model = _model()
    loads = expert_loads(model, [_ids(0), _ids(1)])
    assert torch.allclose(loads.sum(1), torch.ones(2, dtype=torch.float64))
    spectra = expert_error_spectra(model)
    prev = None
    for per_expert in range(0, 5):
        ranks = [allocate_ranks(spectra[li], loads[li], 4 * per_expert) for li in range(2)]
        err = load_weighted_error(mxfp4_moe(model, ranks), model, loads)
        if prev is not None:
            assert err < prev
        prev = err
    # load-aware beats uniform on the load-weighted error at the same total rank (it is the optimum)
    la = [allocate_ranks(spectra[li], loads[li], 8) for li in range(2)]
    uni = [[2] * 4, [2] * 4]
    assert (
        load_weighted_error(mxfp4_moe(model, la), model, loads)
        <= load_weighted_error(mxfp4_moe(model, uni), model, loads) + 1e-9
    )


def test_replay_forces_routes_and_own_routes_are_identical():
    model = _model(3)
    ids = _ids(4)
    own = record_routes(model, ids)
    set_replay(model, own)
    with torch.no_grad():
        replayed_logits = model(ids)
    set_replay(model, None)
    with torch.no_grad():
        free_logits = model(ids)
    assert torch.allclose(replayed_logits, free_logits)
    assert topk_agreement(own, own) == 1.0
    other = [torch.flip(r, dims=[0]) for r in own]
    set_replay(model, other)
    with torch.no_grad():
        model(ids)
    assert all(torch.equal(m.last_routes, o) for m, o in zip(model.moe_layers, other, strict=True))
    set_replay(model, None)
    assert topk_agreement(own, other) < 1.0
    with pytest.raises(ValueError, match="routes"):
        set_replay(model, own[:1])


def test_replay_qat_trains_only_adapters_and_freezes_the_router():
    ref = _model(5)
    q = mxfp4_moe(ref, [[2] * 4, [2] * 4])
    router0 = [m.router.weight.clone() for m in q.moe_layers]
    a0 = [ex.up.A.detach().clone() for m in q.moe_layers for ex in m.experts]
    losses = routing_replay_qat(q, ref, lambda t: _ids(10 + t), steps=5, lr=1e-2, replay=True)
    assert len(losses) == 5 and all(torch.isfinite(torch.tensor(losses)))
    assert all(torch.equal(m.router.weight, r) for m, r in zip(q.moe_layers, router0, strict=True))
    assert any(not torch.equal(ex.up.A, a) for ex, a in zip([e for m in q.moe_layers for e in m.experts], a0))
    q2 = mxfp4_moe(ref, [[2] * 4, [2] * 4])
    routing_replay_qat(q2, ref, lambda t: _ids(10 + t), steps=5, lr=1e-2, replay=False)
    assert not torch.equal(q2.moe_layers[0].router.weight, router0[0])
    with pytest.raises(ValueError, match="nothing to train"):
        routing_replay_qat(mxfp4_moe(ref), ref, lambda t: _ids(t), steps=1, lr=1e-3)


def test_full_rank_compensation_recovers_the_float_model():
    ref = _model(6)
    q = mxfp4_moe(ref, [[32] * 4, [32] * 4], quantize_attention=False)
    ids = _ids(7)
    with torch.no_grad():
        assert torch.allclose(q(ids), ref(ids), atol=1e-4)
