"""Tests of the chiplet simulator and the CHoRD / RR / CLAP / LADM policies (hand-computed cases, invariants)."""

from __future__ import annotations

import numpy as np
import pytest

from geode.inference.chord import (
    CLAP,
    LADM,
    RR,
    WORKLOADS,
    Access,
    ChipletGPU,
    ChordPolicy,
    Kernel,
    KernelDAG,
    Plan,
    make_workload,
    simulate_chiplets,
    tile_pages,
)

PB = 4096


def _one_kernel(home: int, chiplets: int = 2) -> tuple[KernelDAG, ChipletGPU, Plan]:
    # one workgroup reading one full page, 0 flops
    k = Kernel("k", 1, 0.0, reads=[Access("a", [0], [0], [PB])])
    dag = KernelDAG({"a": PB}, [k])
    gpu = ChipletGPU(
        chiplets=chiplets, local_bw=1024.0, remote_bw=256.0, local_latency=1.0, remote_latency=2.0, launch=3.0
    )
    plan = Plan([np.array([0])], np.array([home]), np.zeros(1, bool))
    return dag, gpu, plan


def test_hand_computed_local_and_remote_time():
    dag, gpu, plan = _one_kernel(home=0)
    r = simulate_chiplets(dag, gpu, plan)
    assert r.makespan == pytest.approx(3.0 + PB / 1024.0 + 1.0)  # launch + local bytes + local latency
    assert (r.local_bytes, r.remote_bytes) == (PB, 0.0)
    dag, gpu, plan = _one_kernel(home=1)
    r = simulate_chiplets(dag, gpu, plan)
    assert r.makespan == pytest.approx(3.0 + PB / 256.0 + 1.0 + 2.0)
    assert (r.local_bytes, r.remote_bytes) == (0.0, PB)


def test_waves_and_compute_roofline():
    # 5 workgroups of 100 flops on a chiplet of 2 CUs at 10 flop/us: 3 waves of 10 us
    k = Kernel("k", 5, 100.0, reads=[Access("a", np.arange(5), np.zeros(5), np.ones(5))])
    dag = KernelDAG({"a": 16}, [k], page_bytes=16)
    gpu = ChipletGPU(chiplets=1, cus=2, cu_flops=10.0, local_latency=0, remote_latency=0, launch=0, page_bytes=16)
    r = simulate_chiplets(dag, gpu, Plan([np.zeros(5, np.int64)], np.zeros(1, np.int64), np.zeros(1, bool)))
    assert r.makespan == pytest.approx(30.0)
    assert not r.memory_bound[0]


def test_l2_dedup_and_replication():
    # two workgroups on one chiplet read the same page: fetched once; replication makes it local
    k = Kernel("k", 2, 0.0, reads=[Access("a", [0, 1], [0, 0], [PB, PB])])
    dag = KernelDAG({"a": PB}, [k])
    gpu = ChipletGPU(chiplets=2)
    r = simulate_chiplets(dag, gpu, Plan([np.array([1, 1])], np.array([0]), np.zeros(1, bool)))
    assert r.remote_bytes == PB and r.requested_bytes == 2 * PB
    r2 = simulate_chiplets(dag, gpu, Plan([np.array([1, 1])], np.array([0]), np.ones(1, bool)))
    assert r2.remote_bytes == 0 and r2.local_bytes == PB


def test_tile_pages_counts_bytes():
    pages, nb = tile_pages((64, 1024), (0, 64), (0, 1024), 2, PB)  # 64 rows x 2 KiB = 32 pages
    assert pages.tolist() == list(range(32)) and nb.sum() == 64 * 1024 * 2 and np.all(nb == PB)
    pages, nb = tile_pages((8, 3000), (1, 3), (100, 2100), 2, PB)
    assert nb.sum() == 2 * 2000 * 2


def test_hazards_serialise_and_overlap_runs_independent_kernels_together():
    acc = lambda b: Access(b, [0], [0], [PB])  # noqa: E731
    ks = [
        Kernel("a", 1, 0.0, reads=[acc("x")], writes=[acc("y")]),
        Kernel("b", 1, 0.0, reads=[acc("x")], writes=[acc("z")]),  # independent of a
        Kernel("c", 1, 0.0, reads=[acc("y"), acc("z")], writes=[acc("w")]),  # RAW on both
    ]
    dag = KernelDAG({b: PB for b in "xyzw"}, ks)
    assert dag.preds == [[], [], [0, 1]]
    gpu = ChipletGPU(chiplets=2)
    home = np.zeros(4, np.int64)
    d = [np.array([0]), np.array([1]), np.array([0])]
    ser = simulate_chiplets(dag, gpu, Plan(d, home, np.ones(4, bool), overlap=False))
    ovl = simulate_chiplets(dag, gpu, Plan(d, home, np.ones(4, bool), overlap=True))
    assert ovl.start[1] == 0.0 and ser.start[1] == pytest.approx(ser.finish[0])
    assert ovl.makespan < ser.makespan
    assert ovl.start[2] == pytest.approx(max(ovl.finish[0], ovl.finish[1]))


def test_war_hazard_and_cycle_error():
    acc = lambda b: Access(b, [0], [0], [1.0])  # noqa: E731
    ks = [Kernel("r", 1, 0.0, reads=[acc("x")], writes=[acc("y")]), Kernel("w", 1, 0.0, writes=[acc("x")])]
    assert KernelDAG({"x": 8, "y": 8}, ks).preds == [[], [0]]  # WAR
    with pytest.raises(ValueError, match="cycle"):
        KernelDAG({"x": 8, "y": 8}, ks, deps=[("w", "r")])


def test_bad_input_errors():
    with pytest.raises(ValueError, match="chiplets"):
        ChipletGPU(chiplets=0)
    with pytest.raises(ValueError, match="unknown buffer"):
        KernelDAG({"x": 8}, [Kernel("k", 1, 0.0, reads=[Access("nope", [0], [0], [1])])])
    with pytest.raises(ValueError, match="workgroup"):
        Kernel("k", 1, 0.0, reads=[Access("x", [3], [0], [1])])
    with pytest.raises(ValueError, match="mode"):
        ChordPolicy("dynamic")
    with pytest.raises(ValueError, match="group"):
        CLAP(group=0)
    dag, gpu, plan = _one_kernel(0)
    with pytest.raises(ValueError, match="plan.home"):
        simulate_chiplets(dag, gpu, Plan(plan.dispatch, np.array([5]), plan.replicated))


def test_rr_plan_is_round_robin_interleaved():
    dag = make_workload("mlp", np.random.default_rng(0))
    plan = RR().plan(dag, ChipletGPU(chiplets=4))
    assert plan.dispatch[0].tolist()[:6] == [0, 1, 2, 3, 0, 1]
    assert plan.home[:6].tolist() == [0, 1, 2, 3, 0, 1] and not plan.overlap


@pytest.mark.parametrize("name", WORKLOADS)
def test_conservation_of_bytes(name):
    dag = make_workload(name, np.random.default_rng(1))
    gpu = ChipletGPU(chiplets=4)
    plans = [p.plan(dag, gpu) for p in (RR(), CLAP(4), LADM(), ChordPolicy("static"), ChordPolicy("profiled"))]
    res = [simulate_chiplets(dag, gpu, p) for p in plans]
    req = {r.requested_bytes for r in res}
    assert len(req) == 1  # requested bytes do not depend on the plan
    # for a fixed dispatch, the fetched bytes do not depend on the placement (only their split)
    rr, clap = res[0], res[1]
    assert rr.local_bytes + rr.remote_bytes == pytest.approx(clap.local_bytes + clap.remote_bytes)
    for r in res:
        assert r.fetched.sum() == pytest.approx(r.local_bytes + r.remote_bytes)
        assert r.local_bytes + r.remote_bytes <= r.requested_bytes + 1e-6
    # interleaved pages: RR's remote share is close to (C-1)/C on a dense workload
    if name == "mlp":
        assert rr.remote_fraction == pytest.approx(0.75, abs=0.05)


def test_one_chiplet_all_policies_agree():
    # with C = 1 there is nothing to place or map: every serialising plan gives RR's makespan
    dag = make_workload("bert", np.random.default_rng(2))
    gpu = ChipletGPU(chiplets=1)
    base = simulate_chiplets(dag, gpu, RR().plan(dag, gpu)).makespan
    for p in (CLAP(16), LADM("main"), ChordPolicy("static", overlap=False), ChordPolicy("profiled", overlap=False)):
        r = simulate_chiplets(dag, gpu, p.plan(dag, gpu))
        assert r.makespan == pytest.approx(base) and r.remote_bytes == 0


def test_chord_aligns_consumer_with_producer():
    # a chain of row-block GEMMs: CHoRD keeps each row block on one chiplet, so activations stay local
    dag = make_workload("mlp", np.random.default_rng(0))
    gpu = ChipletGPU(chiplets=4)
    plan = ChordPolicy("static", replicate=False, overlap=False).plan(dag, gpu)
    rr_plan = RR().plan(dag, gpu)
    r, rr = simulate_chiplets(dag, gpu, plan), simulate_chiplets(dag, gpu, rr_plan)
    act = ~dag.read_only_pages()  # activations (pages some kernel writes)

    def remote_act(res, pl):
        remote = np.arange(4)[:, None] != pl.home[None, :]
        return float((res.fetched * remote)[:, act].sum())

    assert remote_act(r, plan) < 0.2 * remote_act(rr, rr_plan)
    assert r.makespan <= rr.makespan


def test_profiled_sees_dynamic_accesses():
    # the paged KV cache is invisible to static analysis; the profile places it with its reader
    dag = make_workload("gpt-decode", np.random.default_rng(0))
    gpu = ChipletGPU(chiplets=4)
    st = simulate_chiplets(dag, gpu, ChordPolicy("static").plan(dag, gpu))
    pr = simulate_chiplets(dag, gpu, ChordPolicy("profiled").plan(dag, gpu))
    assert pr.remote_bytes < st.remote_bytes


def test_ladm_first_touch_and_clap_locality_by_hand():
    # 4 workgroups, chunked over 2 chiplets (0, 0, 1, 1); page p read by workgroup p only
    k = Kernel("k", 4, 0.0, reads=[Access("a", np.arange(4), np.arange(4), np.full(4, PB))])
    dag = KernelDAG({"a": 4 * PB}, [k])
    gpu = ChipletGPU(chiplets=2)
    plan = LADM("first").plan(dag, gpu)
    assert plan.dispatch[0].tolist() == [0, 0, 1, 1] and plan.home.tolist() == [0, 0, 1, 1]
    assert simulate_chiplets(dag, gpu, plan).remote_bytes == 0
    # RR dispatch (0, 1, 0, 1) equals the interleaving: every page already local, CLAP keeps it
    assert CLAP(group=1).plan(dag, gpu).home.tolist() == [0, 1, 0, 1]
    # a group of 2 pages read by two chiplets half each has no chiplet-locality: it stays interleaved
    assert CLAP(group=2).plan(dag, gpu).home.tolist() == [0, 1, 0, 1]


def test_misaligned_control_is_worse_on_a_memory_bound_chain():
    from geode.inference.chord.claim import _misaligned

    dag = make_workload("mlp", np.random.default_rng(0))
    gpu = ChipletGPU(chiplets=4, remote_bw=8e3)
    plan = ChordPolicy("profiled").plan(dag, gpu)
    good = simulate_chiplets(dag, gpu, plan)
    bad = simulate_chiplets(dag, gpu, _misaligned(plan, 4))
    assert bad.remote_bytes > good.remote_bytes and bad.makespan > good.makespan
    assert bad.requested_bytes == good.requested_bytes
