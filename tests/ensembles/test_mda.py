"""MDA and the merging baselines: identities, limit cases, invariances, bad input."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from geode.ensembles import (  # noqa: E402
    MDA,
    align_task_vectors,
    average_merge,
    mda_tensor,
    task_arithmetic,
    ties_tensor,
)


def _mlp(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4), torch.nn.ReLU())


def _orth(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.linalg.qr(torch.randn(n, n, generator=g))[0]


def test_orthogonal_task_subspaces_recover_task_arithmetic():
    u, v = _orth(8, 0), _orth(6, 1)
    base = torch.randn(8, 6)
    taus = [3.0 * torch.outer(u[:, k], v[:, k]) + 1.0 * torch.outer(u[:, k + 3], v[:, k + 3]) for k in range(3)]
    merged = mda_tensor(base, [base + t for t in taus], lam=0.7, rank_frac=1.0)  # r = 6 // 3 = 2
    assert torch.allclose(merged, base + 0.7 * sum(taus), atol=1e-5)


def test_identical_models_return_the_model():
    g = torch.Generator().manual_seed(3)
    base = torch.randn(10, 7, generator=g)
    tau = torch.randn(10, 2, generator=g) @ torch.randn(2, 7, generator=g)  # rank 2 <= r = 7 // 3
    out = mda_tensor(base, [base + tau] * 3, lam=1.0)
    assert torch.allclose(out, base + tau, atol=1e-5)
    sd = average_merge(_mlp(0), [_mlp(1)] * 4)
    assert all(torch.allclose(sd[k], _mlp(1).state_dict()[k]) for k in sd)


def test_alignment_removes_interference_and_keeps_singular_values():
    g = torch.Generator().manual_seed(4)
    taus = [torch.randn(12, 9, generator=g) for _ in range(3)]
    al = align_task_vectors(taus, rank_frac=1.0)  # r = 3
    for i in range(3):
        for j in range(i + 1, 3):
            assert abs(float((al[i] * al[j]).sum())) < 1e-4  # orthogonal subspaces: zero Frobenius inner product
        s_al = torch.linalg.svdvals(al[i])[:3]
        assert torch.allclose(s_al, torch.linalg.svdvals(taus[i])[:3], rtol=1e-4)
    # a non-trivial change: raw task vectors do interfere
    assert abs(float((taus[0] * taus[1]).sum())) > 1e-2


def test_task_arithmetic_limits_and_ties_full_density():
    base, fts = _mlp(0), [_mlp(s) for s in (1, 2, 3)]
    ta = task_arithmetic(base, fts, lam=1 / 3)
    avg = average_merge(base, fts)
    assert all(torch.allclose(ta[k], avg[k], atol=1e-6) for k in ta)
    b = torch.zeros(5)
    ts = [torch.tensor([1.0, 2, -1, 0, 3]), torch.tensor([3.0, 1, -2, 0, 1])]
    assert torch.allclose(ties_tensor(b, ts, density=1.0, lam=1.0), (ts[0] + ts[1]) / 2)
    # sign election drops the minority entry
    t3 = [torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([-0.5])]
    assert torch.allclose(ties_tensor(torch.zeros(1), t3, density=1.0), torch.tensor([1.5]))


def test_mda_without_alignment_and_data_is_task_arithmetic():
    base, fts = _mlp(0), [_mlp(s) for s in (1, 2)]
    m = MDA(lam=0.4, align=False).merge(base, fts)
    ta = task_arithmetic(base, fts, lam=0.4)
    assert all(torch.allclose(m.state_dict()[k], ta[k], atol=1e-6) for k in ta)


def test_mda_with_data_zero_steps_is_data_free_and_rotations_orthogonal():
    base, fts = _mlp(0), [_mlp(s) for s in (1, 2)]
    heads = [torch.nn.Linear(4, 3), torch.nn.Linear(4, 2)]
    data = [torch.randn(16, 6), torch.randn(16, 6)]
    free = MDA(lam=0.5).merge(base, fts)
    zero = MDA(lam=0.5, steps=0).merge(base, fts, data=data, heads=heads)
    assert all(torch.allclose(free.state_dict()[k], zero.state_dict()[k], atol=1e-6) for k in free.state_dict())
    mda = MDA(lam=0.5, steps=20, lr=0.05)
    mda.merge(base, fts, data=data, heads=heads)
    for r in mda.rotations_:
        assert torch.allclose(r.T @ r, torch.eye(4), atol=1e-5)
        assert not torch.allclose(r, torch.eye(4))


def test_bad_input_names_the_argument():
    base = _mlp(0)
    other = torch.nn.Sequential(torch.nn.Linear(6, 9), torch.nn.ReLU(), torch.nn.Linear(9, 4))
    with pytest.raises(ValueError, match="finetuned_models\\[1\\]"):
        MDA().merge(base, [_mlp(1), other])
    with pytest.raises(ValueError, match="non-empty"):
        MDA().merge(base, [])
    with pytest.raises(ValueError, match="data\\[0\\]"):
        MDA().merge(base, [_mlp(1)], data=[torch.randn(5, 7)], heads=[torch.nn.Linear(4, 2)])
    with pytest.raises(ValueError, match="heads"):
        MDA().merge(base, [_mlp(1)], data=[torch.randn(5, 6)])
    with pytest.raises(ValueError, match="rank_frac"):
        MDA(rank_frac=0)
    with pytest.raises(ValueError, match="density"):
        ties_tensor(torch.zeros(2), [torch.ones(2)], density=0)
