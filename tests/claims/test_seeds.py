"""Seeds as a count, a list or a range; seeds added while a verdict is underpowered."""

from __future__ import annotations

import pytest

import geode.claims._testing  # noqa: F401
from geode.claims import load_claim
from geode.claims.runner import Task, execute, run_tasks
from geode.claims.seeds import SeedAdder, current_records, parse_seeds
from geode.claims.store import ResultStore

M = "geode.claims._testing"


@pytest.mark.parametrize(
    "spec, seeds",
    [
        ("3", [0, 1, 2]),
        ("7,8,9", [7, 8, 9]),
        ("10-12", [10, 11, 12]),
        ("0-2,7", [0, 1, 2, 7]),
        ("5-5", [5]),
        (4, [0, 1, 2, 3]),
    ],
)
def test_seeds_are_a_count_a_list_or_a_range(spec, seeds):
    assert parse_seeds(spec) == seeds


@pytest.mark.parametrize("spec", ["", "0", "x", "3-1", "1,,2", "-1", "1-2-3", "0-5000", "1000000000-1000000001"])
def test_bad_seeds_are_refused_with_a_message_naming_the_option(spec):
    with pytest.raises(ValueError, match="--seeds"):
        parse_seeds(spec)


def _run(store, slug, seeds, max_seeds):
    """The runner's loop in this process (no worker processes): run each task, store it, ask for more."""
    tasks = [Task(slug, "smoke", s, M) for s in seeds]
    added = []
    adder = SeedAdder(store, tasks, max_seeds, on_add=lambda t, why: added.append((t.seed, why)))
    queue = list(tasks)
    while queue:
        task = queue.pop(0)
        if not store.is_done(task.slug, task.mode, task.seed):
            store.write(*execute(task))
        queue += adder.done(task)
    return sorted(r["seed"] for r in store.scan(slug).records), added


def test_the_runner_adds_seeds_through_more(tmp_path):
    store = ResultStore(tmp_path)
    tasks = [Task("_noisy", "smoke", s, M) for s in range(3)]
    run_tasks(tasks, store, jobs=2, more=SeedAdder(store, tasks, 10).done)
    recs = store.scan("_noisy").records
    assert sorted((r["seed"], r["status"]) for r in recs) == [(0, "ok"), (1, "ok"), (2, "ok"), (3, "ok")]


def test_seeds_are_added_while_underpowered_and_stop_once_resolved(tmp_path):
    store = ResultStore(tmp_path)
    seeds, added = _run(store, "_noisy", [0, 1, 2], max_seeds=10)
    assert seeds == [0, 1, 2, 3] and added == [(3, ["gain"])]  # the fourth seed resolves the interval
    ev = load_claim("_noisy", M).evaluate(current_records(store, load_claim("_noisy", M), "smoke"))
    assert ev.verdict == "reproduced" and ev.seeds == [0, 1, 2, 3]


def test_seeds_stop_at_max_seeds_when_the_verdict_never_resolves(tmp_path):
    store = ResultStore(tmp_path)
    seeds, added = _run(store, "_coin", [0, 1, 2], max_seeds=5)
    assert seeds == [0, 1, 2, 3, 4] and [s for s, _ in added] == [3, 4]
    ev = load_claim("_coin", M).evaluate(current_records(store, load_claim("_coin", M), "smoke"))
    assert ev.label == "inconclusive (underpowered: gain)"
    # a second run over the same folder adds nothing more: the claim already has max_seeds seeds
    assert _run(store, "_coin", [0, 1, 2], max_seeds=5) == ([0, 1, 2, 3, 4], [])


def test_fresh_seeds_run_exactly_and_added_seeds_follow_them(tmp_path):
    store = ResultStore(tmp_path)
    assert _run(store, "_ok", [7, 8, 9], max_seeds=10) == ([7, 8, 9], [])  # resolved: nothing added
    seeds, added = _run(store, "_coin", [10, 11, 12], max_seeds=4)
    assert seeds == [10, 11, 12, 13] and added[0][0] == 13


def test_no_seed_is_added_without_max_seeds_room_or_for_a_decided_claim(tmp_path):
    store = ResultStore(tmp_path)
    assert _run(store, "_coin", [0, 1, 2], max_seeds=3) == ([0, 1, 2], [])
    assert _run(store, "_seeded", [0, 1, 2], max_seeds=10)[1] == []
    with pytest.raises(ValueError, match="max_seeds"):
        SeedAdder(store, [], 0)


def test_added_seeds_that_fail_still_count_against_max_seeds(tmp_path):
    store = ResultStore(tmp_path)
    seeds, added = _run(store, "_flaky", [0, 1, 2], max_seeds=5)
    assert seeds == [0, 1, 2, 3, 4] and [s for s, _ in added] == [3, 4]
    assert {r["seed"]: r["status"] for r in store.scan("_flaky").records}[4] == "error"


def test_a_seed_another_run_holds_leaves_the_claim_to_that_run(tmp_path):
    store = ResultStore(tmp_path)
    tasks = [Task("_noisy", "smoke", s, M) for s in range(4)]
    held = store.lock("_noisy", "smoke", 3)  # another run is computing seed 3
    try:
        run_tasks(tasks, store, jobs=2, more=SeedAdder(store, tasks, 10).done)
    finally:
        held.release()
    assert sorted(r["seed"] for r in store.scan("_noisy").records) == [0, 1, 2]  # nothing added meanwhile
