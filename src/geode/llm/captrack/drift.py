r"""Relative drift between a base and a post-trained model, per metric and per capability, with bootstrap CIs.

The authors' ``compute_relative_difference`` (``evaluation/plotting_utils.py``) measures, per metric,

.. math::

    d_m = 100\,\frac{\bar s_m^\text{adapted} - \bar s_m^\text{base}}{\bar s_m^\text{base}},

and ``aggregate_metrics`` averages the :math:`d_m` of a capability's metrics (with their standard deviation
across metrics). We add what a single pair of models needs to be read as more than a number: a paired
bootstrap over the probe items (base and adapted scored on the same probes, the same resampled indices for
both), giving each metric's and each capability's drift a standard error, a 95% percentile interval and
:math:`z = d / \operatorname{se}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_array, check_int

__all__ = ["DriftReport", "drift_report", "relative_drift"]


def relative_drift(base: Any, adapted: Any) -> float:
    r"""Relative difference :math:`100\,(\bar a - \bar b) / |\bar b|` of the mean scores, in percent.

    ``base`` and ``adapted`` are per-item scores of any shape (their means are used), or already their means. A zero
    base mean raises: the relative difference is undefined there (use an absolute difference instead).
    """
    if np.size(base) == 0 or np.size(adapted) == 0:
        raise ValueError(f"base and adapted must hold scores; got {np.size(base)} and {np.size(adapted)} values")
    b = float(np.mean(check_array("base", base, finite=False)))
    a = float(np.mean(check_array("adapted", adapted, finite=False)))
    if not (np.isfinite(a) and np.isfinite(b)):
        raise ValueError("base and adapted scores must be finite")
    if b == 0:
        raise ValueError("base: the mean score is 0, so the relative drift is undefined")
    return 100.0 * (a - b) / abs(b)


@dataclass
class DriftReport:
    """Drift of one adapted model against its base.

    ``metrics`` and ``capabilities`` are lists of rows (dicts) with ``drift`` (percent), ``se``, ``lo``,
    ``hi`` (95% percentile bootstrap interval), ``z`` and, for metrics, ``base`` and ``adapted`` means. A plain
    record built by :func:`drift_report`: it stores what it is given without checking.
    """

    metrics: list[dict[str, Any]]
    capabilities: list[dict[str, Any]]

    def capability(self, code: str) -> dict[str, Any]:
        for row in self.capabilities:
            if row["capability"] == code:
                return row
        raise KeyError(f"capability {code!r} is not in this report")

    def mean_abs_drift(self, codes: Any) -> float:
        """Mean over the given capabilities of the absolute capability drift."""
        vals = [abs(self.capability(c)["drift"]) for c in codes]
        if not vals:
            raise ValueError("codes: no capability given")
        return float(np.mean(vals))

    def table(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.capabilities]


def drift_report(
    base: Mapping[str, Any],
    adapted: Mapping[str, Any],
    capability_of: Mapping[str, str],
    *,
    n_boot: int = 1000,
    seed: int | np.random.Generator = 0,
) -> DriftReport:
    r"""Per-metric and per-capability relative drift with a paired bootstrap over probe items.

    Parameters
    ----------
    base, adapted : dict of metric name -> per-item scores (1-D, the same probes in the same order)
    capability_of : dict of metric name -> capability code
        A capability's drift is the mean of its metrics' drifts (the authors' aggregation).
    n_boot : int
        Bootstrap resamples (>= 100).
    seed : int or numpy Generator

    Returns
    -------
    DriftReport
    """
    n_boot = check_int("n_boot", n_boot, low=100)
    names = list(base)
    if set(names) != set(adapted):
        raise ValueError(f"adapted must score the same metrics as base; got {sorted(adapted)} vs {sorted(names)}")
    missing = [m for m in names if m not in capability_of]
    if missing:
        raise ValueError(f"capability_of has no capability for {missing}")
    rng = as_generator(seed)
    rows, boots = [], {}
    for m in names:
        b = np.asarray(base[m], dtype=float)
        a = np.asarray(adapted[m], dtype=float)
        if b.ndim != 1 or a.shape != b.shape or len(b) < 2:
            raise ValueError(f"{m}: base and adapted must be 1-D per-item scores of one length >= 2")
        # a zero base mean leaves the relative drift undefined: NaN, which the caller's floors must catch
        d = relative_drift(b, a) if b.mean() != 0 else float("nan")
        idx = rng.integers(0, len(b), (n_boot, len(b)))
        bb, ab = b[idx].mean(1), a[idx].mean(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            bd = 100.0 * (ab - bb) / np.abs(bb)
        bd = bd[np.isfinite(bd)]
        boots[m] = bd if len(bd) else np.array([d, d])
        rows.append(
            {
                "metric": m,
                "capability": capability_of[m],
                "base": float(b.mean()),
                "adapted": float(a.mean()),
                "drift": d,
                **_summary(d, boots[m]),
            }
        )
    caps = []
    for code in dict.fromkeys(capability_of[m] for m in names):
        ms = [m for m in names if capability_of[m] == code]
        d = float(np.mean([r["drift"] for r in rows if r["metric"] in ms]))
        k = min(len(boots[m]) for m in ms)
        bd = np.mean([boots[m][:k] for m in ms], axis=0)
        caps.append({"capability": code, "metrics": ", ".join(ms), "drift": d, **_summary(d, bd)})
    return DriftReport(rows, caps)


def _summary(d: float, boot: Any) -> dict[str, float]:
    if not np.isfinite(d):
        return {"se": float("nan"), "lo": float("nan"), "hi": float("nan"), "z": float("nan")}
    se = float(np.std(boot, ddof=1)) if len(boot) > 1 else 0.0
    lo, hi = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
    z = d / se if se > 0 else (0.0 if d == 0 else float(np.sign(d)) * np.inf)
    return {"se": se, "lo": lo, "hi": hi, "z": float(z)}
