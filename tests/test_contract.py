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
    """Floors, a negative control for a verdict threshold, a benchmark, and the v3 declarations.

    Protocol v3: the paper's method is named (a floor on it is refused at registration), and every arm a
    threshold compares is declared, tuned (its coverage checked in every run) or untuned with a reason.
    """
    c = load_claim(slug)
    assert c.floors, "declare validity floors: register(..., floors=(Threshold(...), ...))"
    assert any(t.controls for t in c.thresholds), "give a verdict threshold a negative control"
    assert c.min_seeds >= 3 or c.replication
    assert c.rules.method, "name the paper's own method: register(..., method='...')"
    assert c.rules.tuned or c.rules.untuned, "declare the tuned methods (tuned=) or why none is tuned (untuned=)"
    assert has_bench(slug), f"add {catalog.get(slug).module}.bench with cases(size)"


# Protocol v3 asks every headline for its idea ablation (the method without its key idea) and every learned
# arm for its untrained and trivial references. Which control is the ablation and what the untrained reference
# is are judgement calls of each claim's rework (issues 45-50). These lists are the claims still missing them:
# a claim that gains the declaration (or says why none applies: no_ablation= / no_learned=) must leave its list,
# and no claim may join it, so the lists can only shrink.
_ALL_57 = (
    "ada",
    "agop-engagement",
    "bridge-ad",
    "bvpo",
    "bytedistill",
    "camel",
    "captrack",
    "castor",
    "causal-pieces",
    "cd-scaling",
    "chord",
    "comparability-fusion",
    "compose",
    "conformal-abstention",
    "connectome-eiv",
    "cpa",
    "craft",
    "fb-abstraction",
    "fed-prior-bank",
    "fm-tube-lipschitz",
    "ga-srmc",
    "gae",
    "gard",
    "gckan",
    "hamjepa",
    "hozo",
    "inr-error",
    "lfp-geossl",
    "lievlm",
    "mda",
    "moe-quant",
    "msa",
    "neural-qst",
    "ot-sampling-error",
    "pack3d",
    "pde-pretrain",
    "polar-vbll",
    "reef-gp",
    "residual-can",
    "rise",
    "rubiconv",
    "safecut",
    "sama",
    "sara",
    "sd-lora",
    "sds-lora",
    "specalign",
    "specblock",
    "specdrop",
    "sphquant",
    "spirit",
    "sr-grpo",
    "stac-r",
    "svf",
    "ufcod",
    "virtualrect",
    "weight-drift",
)
MISSING_ABLATION = set(_ALL_57)  # 57 of 57 on 2026-12-02 (harness v3)
MISSING_LEARNED = set(_ALL_57)  # 57 of 57 on 2026-12-02 (harness v3)


def _missing(attr: str) -> set[str]:
    out = set()
    for slug in IMPLEMENTED:
        c = load_claim(slug)
        if attr == "ablation":
            declared = bool(c.rules.ablations()) or bool(c.no_ablation)
        else:
            declared = bool(c.rules.learned) or bool(c.no_learned)
        if not declared:
            out.add(slug)
    return out


@pytest.mark.parametrize(("attr", "listed"), [("ablation", MISSING_ABLATION), ("learned", MISSING_LEARNED)])
def test_the_claims_still_missing_a_v3_declaration_can_only_shrink(attr, listed):
    missing = _missing(attr)
    assert missing <= listed, f"new claims without a declared {attr}: {sorted(missing - listed)}"
    assert listed <= missing, f"declared now: remove from the list: {sorted(listed - missing)}"


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
