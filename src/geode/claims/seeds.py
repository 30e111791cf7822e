"""Which seeds run: ``--seeds`` as a count, a list or a range, and seeds added while a verdict is underpowered.

Protocol v3, section 2: a threshold whose interval still contains its bound is *unresolved*; when an
unresolved threshold decides the verdict, the claim is ``inconclusive (underpowered)``, and ``geode
reproduce`` adds one seed at a time to that claim until the verdict is decided or the claim has
``max_seeds`` seeds of the mode. A verdict must also survive seeds nobody looked at: ``--seeds 10-12`` runs
exactly those.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from geode.claims.runner import Task
from geode.claims.store import ResultStore

__all__ = ["MAX_SEED", "SeedAdder", "current_records", "parse_seeds"]

MAX_SEED = 10**9 - 1
_MAX_LISTED = 1000


def parse_seeds(spec: str | int) -> list[int]:
    """The seeds a ``--seeds`` value names, in order, without repeats.

    ``"3"`` (a count) is seeds 0, 1, 2; ``"7,8,9"`` a list; ``"10-12"`` a range (both ends included); parts
    combine: ``"0-2,7"``. A single number is always a count; write ``"5-5"`` for seed 5 alone.

    Raises
    ------
    ValueError
        For an empty, malformed or out-of-range value, or more than 1000 seeds, with a message naming ``--seeds``.
    """
    text = str(spec).strip()
    if re.fullmatch(r"\d+", text):
        n = int(text)
        if not 1 <= n <= _MAX_LISTED:
            raise ValueError(f"--seeds as a count must be between 1 and {_MAX_LISTED}; got {text}")
        return list(range(n))
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text.replace(" ", "")):
        raise ValueError(f"--seeds must be a count (3), a list (7,8,9) or a range (10-12); got {spec!r}")
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if b < a:
            raise ValueError(f"--seeds range {part} is empty (write the smaller seed first)")
        if b > MAX_SEED:
            raise ValueError(f"--seeds must be below {MAX_SEED + 1}; got {b}")
        if b - a + 1 + len(out) > _MAX_LISTED:
            raise ValueError(f"--seeds names more than {_MAX_LISTED} seeds")
        out.extend(range(a, b + 1))
    return list(dict.fromkeys(out))


def current_records(store: ResultStore, claim: Any, mode: str) -> list[dict[str, Any]]:
    """The successful records of ``claim`` in ``mode`` made by its current definition (revision), by seed."""
    digest = claim.definition_hash()
    recs = [
        r
        for r in store.scan(claim.slug).records
        if r["mode"] == mode and r["status"] == "ok" and r.get("claim_hash") == digest
    ]
    return sorted(recs, key=lambda r: r["seed"])


class SeedAdder:
    """Adds one seed at a time to a claim whose verdict is underpowered, up to ``max_seeds`` seeds of its mode.

    Tell it each task that ends (:meth:`done`: stored, or skipped because its result is already stored; a task
    another run is running is not ended here, and its claim is left to that run). Once every seed asked for a
    claim has ended, it judges the claim over all its current stored records of that mode and returns the task
    of the next seed (the smallest one above every seed tried) when the verdict is ``inconclusive
    (underpowered)`` and fewer than ``max_seeds`` seeds of the mode were tried (failed ones count).

    Parameters
    ----------
    store : ResultStore
    requested : iterable of Task
        The tasks asked for (their seeds are outstanding until they end).
    max_seeds : int
        The most seeds of a mode a claim may reach by adding (seeds asked for explicitly always run).
    on_add : callable, optional
        Called with each added task and the thresholds that made the claim underpowered.
    """

    def __init__(
        self,
        store: ResultStore,
        requested: Iterable[Task],
        max_seeds: int,
        on_add: Callable[[Task, list[str]], None] | None = None,
    ) -> None:
        if isinstance(max_seeds, bool) or not isinstance(max_seeds, int) or max_seeds < 1:
            raise ValueError(f"max_seeds must be an int >= 1; got {max_seeds!r}")
        self.store = store
        self.max_seeds = max_seeds
        self.on_add = on_add
        self.outstanding: dict[tuple[str, str], set[int]] = {}
        self.used: dict[tuple[str, str], set[int]] = {}
        self.added: list[Task] = []
        for t in requested:
            self.outstanding.setdefault((t.slug, t.mode), set()).add(t.seed)
            self.used.setdefault((t.slug, t.mode), set()).add(t.seed)

    def done(self, task: Task) -> list[Task]:
        """Note that ``task`` ended (ran or was skipped); the seed to add, if the claim is underpowered."""
        key = (task.slug, task.mode)
        pending = self.outstanding.get(key)
        if pending is None:
            return []
        pending.discard(task.seed)
        if pending:
            return []
        try:
            from geode.claims.registry import load_claim

            claim = load_claim(task.slug, task.module)
            recs = current_records(self.store, claim, task.mode)
            ev = claim.evaluate(recs)
        except Exception:  # a claim that cannot load or judge gets no added seed; its error is stored
            return []
        # every seed tried in this mode counts against max_seeds (failed ones too, and those still running),
        # so a claim whose added seeds fail cannot add seeds for ever
        digest = claim.definition_hash()
        stored = [r for r in self.store.scan(task.slug).records if r["mode"] == task.mode]
        tried = {r["seed"] for r in stored if r["status"] != "ok" or r.get("claim_hash") == digest} | self.used[key]
        if ev.verdict != "inconclusive" or not ev.underpowered or len(tried) >= self.max_seeds:
            return []
        seed = max(tried) + 1
        if seed > MAX_SEED:
            return []
        new = Task(task.slug, task.mode, seed, task.module)
        pending.add(seed)
        self.used[key].add(seed)
        self.added.append(new)
        if self.on_add is not None:
            self.on_add(new, list(ev.underpowered))
        return [new]
