"""The report's figures: one per paper (its verdict thresholds against their bounds) and an overview.

Each paper's figure has one panel per verdict threshold: the per-seed statistic of the method (points), the
bound (a dashed line), the 90% interval of the mean where the threshold uses one (a bar), and beside them the
negative controls and the idea ablation on the same scale. The title of a panel is the threshold's state. Axes
are linear unless the values span more than three decades (then logarithmic, with a labelled tick at every
decade). The overview counts the papers of each field by verdict.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

from geode.claims.types import Threshold

__all__ = ["overview_png", "paper_png"]

COLOURS = {
    "reproduced": "#1a7f37",
    "partial": "#b08800",
    "not reproduced": "#cf222e",
    "inconclusive": "#0969da",
    "error": "#8250df",
    "timeout": "#8250df",
    "stale": "#bc4c00",
    "not run": "#afb8c1",
    "planned": "#d0d7de",
}
_STATE_COLOUR = {
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "unresolved": "#b08800",
    "unknown": "#0969da",
    "missing": "#6e7781",
}
_MAX_PANELS = 8


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series(check: Mapping[str, Any], runs: Sequence[Mapping[str, float]]) -> list[tuple[str, list[float], str]]:
    """(label, per-seed values, colour) for the method, its controls and its idea ablation."""
    t = Threshold.from_dict(check)
    out = [(t.metric, [t.statistic(r) for r in runs], "#0969da")]
    for c in t.controls:
        out.append((f"control: {c}", [t.statistic(r, c) for r in runs], "#6e7781"))
    if t.ablation:
        out.append((f"ablation: {t.ablation}", [t.statistic(r, t.ablation) for r in runs], "#bc4c00"))
    return [(label, [v for v in vals if v is not None], colour) for label, vals, colour in out]


def _log_scale(ax: Any, values: list[float], bound: float) -> None:
    positive = [v for v in [*values, bound] if v > 0]
    if len(positive) == len(values) + 1 and positive and max(positive) / min(positive) > 1e3:
        from matplotlib.ticker import LogFormatterSciNotation, LogLocator

        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=30))
        ax.yaxis.set_major_formatter(LogFormatterSciNotation(base=10, labelOnlyBase=True))


def paper_png(checks: Sequence[Mapping[str, Any]], runs: Sequence[Mapping[str, float]], title: str) -> bytes | None:
    """The figure of one paper's verdict thresholds over its seeds (PNG bytes), or None without thresholds."""
    verdict = [c for c in checks if c.get("role") == "verdict"][:_MAX_PANELS]
    if not verdict or not runs:
        return None
    plt = _pyplot()
    n = len(verdict)
    cols = min(n, 4)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.9 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax, check in zip(axes.flat, verdict):
        series = _series(check, runs)
        allv: list[float] = []
        for i, (_, vals, colour) in enumerate(series):
            xs = [i + 0.08 * (j - (len(vals) - 1) / 2) for j in range(len(vals))]
            ax.scatter(xs, vals, s=22, color=colour, zorder=3)
            allv += vals
        iv = check.get("interval")
        if iv and all(v is not None for v in iv):
            point = check.get("point")
            ax.errorbar(
                [0.3],
                [point],
                yerr=[[point - iv[0]], [iv[1] - point]],
                fmt="D",
                color="#0969da",
                ms=4,
                capsize=4,
                zorder=4,
                label="mean, 90% interval",
            )
        t = Threshold.from_dict(check)
        ax.axhline(t.bound, color="#cf222e", ls="--", lw=1, zorder=2)
        if allv:
            _log_scale(ax, allv, t.bound)
        ax.set_xticks(range(len(series)))
        ax.set_xticklabels([s[0] for s in series], rotation=20, ha="right", fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        state = check.get("effective") or check.get("state", "")
        ax.set_title(f"{check['name']}: {state}", fontsize=9, color=_STATE_COLOUR.get(str(state), "#1f2328"))
        rule = f"{check.get('agg', 'mean')} {t.op} {'0' if t.paired else f'{t.bound:g}'}"
        ax.set_ylabel(("paired difference" if t.paired else t.metric)[:38] + f"\n({rule})", fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _png(fig)


def overview_png(states_by_field: Mapping[str, Mapping[str, int]]) -> bytes:
    """The papers of each field by verdict, as stacked horizontal bars (PNG bytes)."""
    plt = _pyplot()
    fields = sorted(states_by_field)
    order = [s for s in COLOURS if any(states_by_field[f].get(s) for f in fields)]
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(fields) + 1.2))
    left = [0] * len(fields)
    for state in order:
        counts = [states_by_field[f].get(state, 0) for f in fields]
        ax.barh(fields, counts, left=left, color=COLOURS[state], label=state, edgecolor="white")
        left = [a + b for a, b in zip(left, counts)]
    ax.invert_yaxis()
    ax.set_xlabel("papers")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.legend(ncol=min(5, len(order)), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    ax.set_title(f"{sum(left)} papers by field and verdict", fontsize=10)
    fig.tight_layout()
    return _png(fig)
