"""The contract every implemented paper's claim check must honour, run in smoke mode.

Parametrised over the catalogue: a paper becomes part of this matrix by having a ``claim.py``.
"""

from __future__ import annotations

import math

import pytest

from geode import catalog
from geode.claims import VERDICTS, load_claim
from geode.claims.bench import has_bench
from geode.claims.runner import Task, execute
from geode.claims.store import ResultStore

IMPLEMENTED = [p.slug for p in catalog.papers(status="implemented")]


@pytest.fixture(scope="module")
def smoke_runs():
    cache: dict[str, tuple[dict, dict]] = {}

    def get(slug: str) -> tuple[dict, dict]:
        if slug not in cache:
            cache[slug] = execute(Task(slug, "smoke", 0))
        return cache[slug]

    return get


def test_there_is_a_contract_matrix():
    # the matrix is empty only while no paper is implemented; the harness tests cover the rest
    assert len(catalog.papers()) == 57


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_claim_is_registered_and_described(slug):
    c = load_claim(slug)
    p = catalog.get(slug)
    assert (c.slug, c.title, c.field) == (p.slug, p.title, p.field)
    assert c.module == f"{p.module}.claim"
    assert c.claim and c.paper_figure and c.baselines, "claim, paper figure and baselines are required"
    assert c.doc, f"{p.module} needs a docstring: the paper, the claim and what was inferred"


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_claim_follows_the_protocol(slug):
    """Validity floors, a negative control for a verdict threshold, and a benchmark (protocol v2).

    Every claim follows it: the last four written before the protocol (svf, safecut, inr-error, sds-lora)
    were reworked, so there is no exemption list any more.
    """
    c = load_claim(slug)
    assert c.validity, "declare validity floors: register(..., validity='floor_a and floor_b')"
    floors = set(c.validity.replace("(", " ").replace(")", " ").split()) - {"and", "or", "not"}
    assert any(t.controls for t in c.thresholds if t.name not in floors), "give a verdict threshold a control"
    assert c.min_seeds >= 3 or c.replication
    assert has_bench(slug), f"add {catalog.get(slug).module}.bench with cases(size)"


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_smoke_run_succeeds_with_finite_metrics_and_a_verdict(slug, smoke_runs):
    rec, figs = smoke_runs(slug)
    assert rec["status"] == "ok", rec["error"]
    assert rec["verdict"] in VERDICTS
    assert rec["metrics"] and all(math.isfinite(v) for v in rec["metrics"].values())
    needed = {t["metric"] for t in rec["claim"]["thresholds"]}
    needed |= {c for t in rec["claim"]["thresholds"] for c in t["control"]}
    missing = needed - set(rec["metrics"])
    assert not missing, f"thresholds or controls refer to metrics the run does not produce: {sorted(missing)}"
    assert rec["claim"]["key_metric"] in rec["metrics"]
    assert rec["summary"], "the outcome needs a one-line summary"
    assert all(png.startswith(b"\x89PNG") for png in figs.values())


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_same_seed_gives_identical_metrics(slug, smoke_runs):
    rec, _ = smoke_runs(slug)
    again, _ = execute(Task(slug, "smoke", 0))
    assert again["status"] == "ok", again["error"]
    timing = set(rec["claim"]["timing_metrics"])  # wall-clock speed-ups are the only exemption
    assert timing <= set(rec["metrics"]), f"timing_metrics not produced: {sorted(timing - set(rec['metrics']))}"
    assert {k: v for k, v in again["metrics"].items() if k not in timing} == {
        k: v for k, v in rec["metrics"].items() if k not in timing
    }


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_result_round_trips_through_the_store(slug, smoke_runs, tmp_path):
    rec, figs = smoke_runs(slug)
    store = ResultStore(tmp_path)
    path = store.write(rec, figs)
    back = store.read(path)
    assert back["metrics"] == rec["metrics"] and back["verdict"] == rec["verdict"]
    assert back["table"] == rec["table"]
    assert set(back["figures"]) == set(figs)


WITH_BENCH = [s for s in IMPLEMENTED if has_bench(s)]


@pytest.mark.parametrize("slug", WITH_BENCH)
def test_benchmark_runs_at_smoke_size(slug):
    from geode.claims.bench import run_bench

    rec = run_bench(slug, "smoke", repeats=1)
    assert rec["cases"] and rec["headline"]["ratio"] > 0
    assert all(b["peak_mib"] >= 0 for c in rec["cases"] for b in c["baselines"])
