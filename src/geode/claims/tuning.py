"""Equal tuning: every method in a comparison gets the same budget, selected on validation.

The protocol (``shared/notes/claim-protocol.md``, section 1): the paper's method and each baseline get the
same tuning budget over a grid written in ``claim.py``, selected on a validation split (never the test
split); a value selected on the edge of its grid means the grid was too small; the selected values are
stored in the outcome and shown in the report. :func:`tune` does exactly that::

    def fit(method, params):                 # trains on the training split, scores on validation
        model = train(method, lr=params["lr"], wd=params["wd"], data=train_split)
        return accuracy(model, val_split), model   # (score, anything to keep)

    res = tune(fit, {"lora": {"lr": [1e-4, 3e-4, 1e-3, 3e-3], "wd": [0, 1e-2]},
                     "sds-lora": {"lr": [1e-4, 3e-4, 1e-3, 3e-3], "wd": [0, 1e-2]}}, extend=2)
    model = res.payload("sds-lora")          # then evaluate on the test split, once
    Outcome(metrics=..., tuned=res.table(), notes=res.notes())
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TuneResult", "Tuned", "tune"]

Grid = Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]


@dataclass
class Tuned:
    """The selection for one method: its values, validation score, trials spent and edge warnings."""

    method: str
    params: dict[str, Any]
    score: float
    trials: int
    grid_size: int
    edges: list[str] = field(default_factory=list)  # "lr at the upper edge of [1e-4, 3e-3]"
    payload: Any = None
    axes: dict[str, int] = field(default_factory=dict)  # numeric knob -> distinct values tried (>= 2 only)


@dataclass
class TuneResult:
    """What :func:`tune` found; ``table()`` goes into :attr:`Outcome.tuned`, ``notes()`` into its notes."""

    best: dict[str, Tuned]
    trials: list[dict[str, Any]]
    maximize: bool
    budget: int
    extend: int = 0

    def params(self, method: str) -> dict[str, Any]:
        """The selected values of ``method``."""
        return dict(self.best[method].params)

    def payload(self, method: str) -> Any:
        """What the evaluation function returned beside the score for the selected values (or None)."""
        return self.best[method].payload

    def score(self, method: str) -> float:
        """The validation score of the selected values."""
        return self.best[method].score

    def table(self) -> list[dict[str, Any]]:
        """One row per method: selected values, validation score, trials, grid size, budget and edge warnings.

        ``budget`` and ``extend`` are the configurations every method was given (the same for all), and ``axes``
        the number of distinct values tried on each numeric knob (``"lr:4, wd:3"``): the harness checks them
        against the claim's declared tuned methods (protocol v3, section 1).
        """
        return [
            {
                "method": t.method,
                "selected": ", ".join(f"{k}={_fmt(v)}" for k, v in t.params.items()),
                "val_score": t.score,
                "trials": t.trials,
                "grid": t.grid_size,
                "budget": self.budget,
                "extend": self.extend,
                "axes": ", ".join(f"{k}:{n}" for k, n in t.axes.items()),
                "edge": "; ".join(t.edges),
            }
            for t in self.best.values()
        ]

    def notes(self) -> list[str]:
        """Sentences for the outcome's notes: the budget, and every selection left on a grid's edge."""
        out = [
            f"Equal tuning: each method evaluated up to {self.budget} configurations on validation "
            f"({'higher' if self.maximize else 'lower'} is better); selected values in the tuned table."
        ]
        for t in self.best.values():
            if t.trials < min(self.budget, t.grid_size):
                out.append(f"{t.method}: only {t.trials} of {min(self.budget, t.grid_size)} trials were run.")
            for e in t.edges:
                out.append(f"{t.method}: {e} (the grid may be too small).")
        return out

    @property
    def on_edge(self) -> list[str]:
        """Methods whose selection lies on a grid edge that could not be extended."""
        return [m for m, t in self.best.items() if t.edges]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _configs(grid: Grid, method: str) -> list[dict[str, Any]]:
    if isinstance(grid, Mapping):
        keys = list(grid)
        for k in keys:
            vals = grid[k]
            if isinstance(vals, (str, bytes)) or not isinstance(vals, Sequence) or len(vals) == 0:
                raise ValueError(f"grid of {method!r}: {k!r} must be a non-empty list of values; got {vals!r}")
        return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))] or [{}]
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence):
        raise ValueError(f"grid of {method!r} must be a dict of lists or a list of dicts; got {type(grid).__name__}")
    configs = [dict(c) for c in grid]
    if not configs or not all(isinstance(c, dict) for c in configs):
        raise ValueError(f"grid of {method!r} must be a non-empty list of dicts")
    return configs


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v)


def _axis_values(configs: list[dict[str, Any]], key: str) -> list[float]:
    vals = {c[key] for c in configs if key in c and _numeric(c[key])}
    return sorted(vals)


def _beyond(values: list[float], upper: bool, limit: tuple[float, float] | None) -> float | None:
    """The next value past an edge of a sorted axis: geometric when the axis is positive, else arithmetic."""
    a, b = (values[-2], values[-1]) if upper else (values[1], values[0])
    if a > 0 and b > 0:
        new = b * (b / a)
    else:
        new = b + (b - a)
    if all(isinstance(v, (int, np.integer)) for v in values):
        new = round(new)
        if new == b:
            new = b + (1 if upper else -1)
    if limit is not None:
        new = min(max(new, limit[0]), limit[1])
    return None if new == b else new


def _tied(x: float, y: float) -> bool:
    """Scores equal up to float noise (relative 1e-6): a flat optimum, not a preference."""
    return math.isfinite(x) and math.isfinite(y) and math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-12)


def _better(x: float, y: float, maximize: bool) -> bool:
    return x > y if maximize else x < y


def tune(
    evaluate: Callable[[str, dict[str, Any]], float | tuple[float, Any]],
    grids: Mapping[str, Grid],
    *,
    budget: int | None = None,
    maximize: bool = True,
    extend: int = 0,
    limits: Mapping[str, tuple[float, float]] | None = None,
    seed: int = 0,
) -> TuneResult:
    """Tune every method with the same budget on a validation score; flag selections on a grid's edge.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(method, params) -> score`` or ``-> (score, payload)``: trains ``method`` with ``params`` on
        the training split and scores it on the validation split. The payload (a trained model, say) of the
        selected configuration is kept. A non-finite score (a diverged run) counts as the worst.
    grids : dict of method -> grid
        A grid is a dict of parameter -> list of values (their Cartesian product) or a list of dicts.
    budget : int, optional
        Configurations per method. Default: the size of the largest grid. A grid larger than the budget is
        subsampled (uniformly, from ``seed``), so no method gets more trials than another.
    maximize : bool
        Whether a higher validation score is better.
    extend : int
        Extra trials per method, spent past a grid's edge: while the selection sits on the edge of a
        numeric axis with at least 3 values, the next value beyond it (geometric on positive axes) is tried
        with the other values held. Every method gets the same ``extend``.
    limits : dict of parameter -> (low, high), optional
        Hard bounds (momentum < 1, a probability in [0, 1]); a selection at its limit is not an edge.

    Notes
    -----
    Every numeric axis with two or more values is checked for a selection on its edge (an axis of two
    values has no interior, so its selection is always flagged unless it sits at a ``limits`` bound);
    only axes with at least 3 values are extended, so adding the flag did not change any selection. A
    selection on an edge is not flagged when a configuration with an interior value of that knob scored as
    well up to float noise (relative 1e-6: a flat optimum; the first of the tied configurations is kept).
    seed : int
        Seed of the subsampling.

    Returns
    -------
    TuneResult
    """
    if not isinstance(grids, Mapping) or not grids:
        raise ValueError("grids must be a non-empty dict of method name -> grid")
    if not callable(evaluate):
        raise TypeError("evaluate must be callable as evaluate(method, params)")
    if isinstance(extend, bool) or not isinstance(extend, int) or extend < 0:
        raise ValueError(f"extend must be an int >= 0; got {extend!r}")
    limits = dict(limits or {})
    all_configs = {str(m): _configs(g, str(m)) for m, g in grids.items()}
    size = max(len(c) for c in all_configs.values())
    if budget is None:
        budget = size
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be an int >= 1; got {budget!r}")
    rng = np.random.default_rng(seed)
    worst = -math.inf if maximize else math.inf
    trials: list[dict[str, Any]] = []
    best: dict[str, Tuned] = {}

    def run(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        out = evaluate(method, dict(params))
        score, payload = (out if isinstance(out, tuple) else (out, None))[:2]
        try:
            score = float(score)
        except (TypeError, ValueError):
            raise TypeError(f"evaluate({method!r}, ...) must return a number or (number, payload)") from None
        trials.append({"method": method, "params": dict(params), "score": score})
        return (score if math.isfinite(score) else worst), payload

    for method, configs in all_configs.items():
        chosen = configs
        if len(configs) > budget:
            idx = sorted(rng.choice(len(configs), size=budget, replace=False))
            chosen = [configs[i] for i in idx]
        top: tuple[float, dict[str, Any], Any] | None = None
        for params in chosen:
            score, payload = run(method, params)
            if top is None or _better(score, top[0], maximize):
                top = (score, params, payload)
        assert top is not None
        n = len(chosen)
        tried = list(chosen)
        for _ in range(extend):
            step = None
            for key in top[1]:
                axis = _axis_values(tried, key)
                if len(axis) < 3 or not _numeric(top[1][key]) or top[1][key] not in (axis[0], axis[-1]):
                    continue
                upper = top[1][key] == axis[-1]
                new = _beyond(axis, upper, limits.get(key))
                if new is not None:
                    step = (key, new)
                    break
            if step is None:
                break
            params = {**top[1], step[0]: step[1]}
            tried.append(params)
            score, payload = run(method, params)
            n += 1
            if _better(score, top[0], maximize):
                top = (score, params, payload)
        edges = []
        axes = {}
        for key in dict.fromkeys(k for c in tried for k in c):
            n_values = len(_axis_values(tried, key))
            if n_values >= 2:
                axes[key] = n_values
        ties = [t["params"] for t in trials if t["method"] == method and _tied(t["score"], top[0])]
        for key, v in top[1].items():
            axis = _axis_values(tried, key)
            if len(axis) < 2 or not _numeric(v) or v not in (axis[0], axis[-1]):
                continue
            lim = limits.get(key)
            if lim is not None and v in lim:
                continue
            if any(_numeric(c.get(key)) and axis[0] < c[key] < axis[-1] for c in ties):
                continue  # an interior value scores exactly as well: the optimum is flat, not past the edge
            side = "upper" if v == axis[-1] else "lower"
            what = "edge of" if len(axis) > 2 else "end of the two-value axis"
            edges.append(f"{key}={_fmt(v)} at the {side} {what} [{_fmt(axis[0])}, {_fmt(axis[-1])}]")
        score = top[0] if math.isfinite(top[0]) else math.nan
        best[method] = Tuned(method, dict(top[1]), score, n, len(configs), edges, top[2], axes)
    return TuneResult(best=best, trials=trials, maximize=maximize, budget=budget, extend=extend)
