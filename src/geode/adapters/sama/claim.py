"""Claim check of SaMA: quadratic rank at LoRA's budget, lower error on flat spectra, diagonal invariance.

Thresholds (fixed by the issue, before any run): ``reproduced`` if at equal parameter budgets SaMA's fitted
:math:`\\Delta W` has >= 2x LoRA's effective rank and lower error on flat-spectrum targets, and the Jacobian
nullity matches theory; ``partial`` if the rank result holds.

The experiment (the notes' matrix-approximation benchmark): the adapter's update is fitted to a target
:math:`T` (``d x d``, random orthogonal singular vectors) by Adam on :math:`\\lVert \\Delta W - T\\rVert_F^2 /
\\lVert T\\rVert_F^2`, every method from its own initialisation (``B = 0`` / ``L = 0``). Spectra: *flat*
(all singular values 1; the verdict's target), *power-law* (:math:`\\sigma_i = i^{-1}`) and *exact rank r*
(flat on r values), the last two reported only. Equal budgets: LoRA of rank r, SaMA with
``p = c = r`` blocks and inner width 1 (``2 r d`` parameters each), and the shared-block Kronecker adapter
(LoKr-like, ``p = c = r``, inner width ``r``: again ``2 r d``), the strongest structured baseline; the
Eckart-Young optimum of rank r (what any rank-r adapter can reach) is reported beside them. Equal tuning:
Adam's learning rate of every method on a validation target of the same spectrum (another draw), the test
target scored at the selected value.

Added before the first run (the protocol needs them; the issue names none):

- *margins and aggregation*: "lower error" is read as SaMA's error <= 0.99 x LoRA's; rank and error
  thresholds must hold in every seed (``all``); the nullity comparison is exact (``all``);
- *validity floors*: LoRA fits an exact rank-r target to relative error <= 0.05, and SaMA fits a target
  drawn from its own family to <= 0.05 (each at its tuned learning rate), so both optimisations work;
- *negative controls*: for rank and error, a second LoRA run from another initialisation (the noise floor of
  the ratios) and SaMA in its one-block limit (``p = c = 1``, inner width r: LoRA written as SaMA, same
  budget); for the nullity, the prediction of LoRA's :math:`GL(\\cdot)` gauge applied to SaMA's exact LoRA
  form (rank ``p c k``), which must not match.

The Jacobian nullity is measured in float64 at random parameters for small layers (LoRA r in {2, 3};
SaMA with k in {1, 2} and several block counts) against :math:`r^2` and :math:`p c k^2`.

Quick-mode verdict (revision 1, seeds 0-2, d = 128, r = 8, 2048 parameters per method, ~20 CPU-s per
seed): **reproduced** in every seed. Effective rank of the fitted update on the flat target: SaMA 60.5-60.7
against LoRA 8.0 (ratio 7.56-7.58; controls: LoRA replicate 1.00, one-block SaMA 1.00); relative error SaMA
0.897 against LoRA 0.968 (= the rank-8 Eckart-Young optimum; ratio 0.926, controls 1.00); nullity mismatch 0
(LoRA-gauge prediction off by 254). Floors: LoRA fits the rank-8 target to 5e-4, SaMA its own family to
4e-4. Not judged, reported: the shared-block Kronecker adapter at the same budget does slightly *better*
than SaMA on the flat target (0.889-0.891, effective rank ~102; its learning rate sat at the grid's upper
edge), and SaMA is far worse than LoRA on power-law (0.587 vs 0.259) and exact rank-8 targets (0.784 vs
5e-4): the structure trades the top of the spectrum for breadth, as the notes expected.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **reproduced**
(the v2 harness read reproduced on the same runs). No idea ablation or learned-arm reference is declared yet
(protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(d=32, r=4, steps=60, lrs=[1e-2, 3e-2]),
    "quick": dict(d=128, r=8, steps=500, lrs=[1e-3, 3e-3, 1e-2, 3e-2, 1e-1]),
    # full: a larger layer for a GPU machine (runs on CPU in tens of minutes)
    "full": dict(d=1024, r=32, steps=3000, lrs=[3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]),
}
SPECTRA = ("flat", "powerlaw", "lowrank")
METHODS = ("lora", "sama", "kron", "sama_one_block")
_NAMES = {
    "lora": "LoRA",
    "sama": "SaMA",
    "kron": "Kronecker (shared blocks, LoKr-like)",
    "sama_one_block": "SaMA one-block limit (control)",
    "lora_replicate": "LoRA, other initialisation (control)",
}
FIT_FLOOR = 0.05
ERROR_MARGIN = 0.99


def _target(d: int, r: int, spectrum: str, gen: Any, device: Any) -> Any:
    import torch

    u, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
    v, _ = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
    i = torch.arange(1, d + 1, dtype=torch.float64)
    s = {"flat": torch.ones(d), "powerlaw": 1.0 / i, "lowrank": (i <= r).double()}[spectrum].double()
    s = s * math.sqrt(d) / s.norm()  # ||T||_F = sqrt(d) for every spectrum
    return ((u * s) @ v.T).float().to(device)


def _adapter(method: str, d: int, r: int, seed: int, device: Any) -> Any:
    import torch
    from torch import nn

    from geode.adapters import LoRALinear
    from geode.adapters.sama import SaMALinear

    g = torch.Generator().manual_seed(seed)
    base = nn.Linear(d, d, bias=False)
    if method == "lora":
        layer = LoRALinear(base, r, generator=g)
    elif method == "sama":
        layer = SaMALinear(base, r, r, 1, generator=g)
    elif method == "kron":
        layer = SaMALinear(base, r, r, r, shared=True, generator=g)
    elif method == "sama_one_block":
        layer = SaMALinear(base, 1, 1, r, generator=g)
    else:
        raise ValueError(f"unknown method {method!r}")
    return layer.to(device)


def _fit(method: str, target: Any, r: int, lr: float, steps: int, seed: int) -> dict[str, Any]:
    import torch

    d = target.shape[0]
    layer = _adapter(method, d, r, seed, target.device)
    params = [p for p in layer.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    tn = target.pow(2).sum()
    for _ in range(steps):
        loss = (layer.delta_weight() - target).pow(2).sum() / tn
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    with torch.no_grad():
        dw = layer.delta_weight()
        err = float((dw - target).norm() / target.norm())
    err = err if math.isfinite(err) else math.inf
    return {"err": err, "dw": dw.detach().cpu().double(), "n_params": sum(p.numel() for p in params)}


def _nullity_checks() -> dict[str, float]:
    import torch
    from torch import nn

    from geode.adapters import LoRALinear
    from geode.adapters.sama import (
        SaMALinear,
        jacobian_nullity,
        lora_nullity_theory,
        sama_nullity_theory,
    )

    g = torch.Generator().manual_seed(0)

    def rand(layer: Any) -> Any:
        with torch.no_grad():
            for p in layer.parameters():
                if p.requires_grad:
                    p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
        return layer

    mismatch, wrong, rows = 0, 0, []
    for r in (2, 3):
        lo = rand(LoRALinear(nn.Linear(12, 10, dtype=torch.float64), r))
        got, want = jacobian_nullity(lo), lora_nullity_theory(r, 10, 12)
        mismatch += abs(got - want)
        rows.append(f"LoRA r={r}: {got} (theory {want})")
    for p, c, k in ((3, 2, 1), (4, 2, 1), (2, 2, 2), (3, 2, 2)):
        sa = rand(SaMALinear(nn.Linear(12, 10, dtype=torch.float64), p, c, k))
        got, want = jacobian_nullity(sa), sama_nullity_theory(p, c, k, 10 // c, 12 // p)
        mismatch += abs(got - want)
        wrong += abs(got - (p * c * k) ** 2)  # LoRA's gauge for its exact LoRA form of rank p c k
        rows.append(f"SaMA p={p} c={c} k={k}: {got} (theory {want}; LoRA-form gauge {(p * c * k) ** 2})")
    return {"nullity_mismatch": float(mismatch), "nullity_mismatch_lora_gauge": float(wrong), "rows": rows}  # type: ignore[dict-item]


def _figure(svals: dict[str, np.ndarray]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for m, s in svals.items():
        ax.semilogy(np.arange(1, len(s) + 1), np.maximum(s, 1e-8), label=_NAMES[m])
    ax.set_xlabel("index")
    ax.set_ylabel("singular value of fitted ΔW")
    ax.set_title("flat-spectrum target (test), equal budgets")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@register(
    "sama",
    claim=(
        "SaMA, the perfect-shuffle factorisation of a Kronecker product with relaxed shared blocks, reaches an "
        "effective rank that grows quadratically with its parameter budget (LoRA: linearly), so at LoRA's budget "
        "it fits flat-spectrum updates better, and its invariance group collapses to a diagonal group."
    ),
    paper_figure=(
        "SaMA beats LoRA/DoRA and other PEFT baselines on commonsense (8-task) and arithmetic reasoning with "
        "fewer parameters (abstract; no numbers available to us)"
    ),
    baselines=("LoRA", "Kronecker adapter with shared blocks (LoKr-like)", "Eckart-Young rank-r optimum"),
    thresholds=(
        Threshold(
            "rank_2x",
            "sama_over_lora_erank",
            ">=",
            2.0,
            "SaMA's fitted update has >= 2x LoRA's effective rank at equal budget (flat target, every seed)",
            agg="all",
            control=("lora_replicate_over_lora_erank", "sama_one_block_over_lora_erank"),
        ),
        Threshold(
            "lower_error",
            "sama_over_lora_error",
            "<=",
            ERROR_MARGIN,
            "SaMA's relative error <= 0.99 x LoRA's at equal budget (flat target, every seed)",
            agg="all",
            control=("lora_replicate_over_lora_error", "sama_one_block_over_lora_error"),
        ),
        Threshold(
            "nullity_theory",
            "nullity_mismatch",
            "<=",
            0.0,
            "measured Jacobian nullities equal r^2 (LoRA) and p c k^2 (SaMA; diagonal group at k = 1)",
            agg="all",
            control="nullity_mismatch_lora_gauge",
            arms=(),  # measured at random parameters: no trained arm, only the bed's floors
        ),
        Threshold(
            "sama_fits",
            "sama_own_family_fit_error",
            "<=",
            FIT_FLOOR,
            "reported: SaMA fits a target from its own family to relative error <= 0.05 (every seed)",
            agg="all",
            arms=("sama",),
        ),
    ),
    floors=(
        Threshold(
            "lora_fits",
            "lora_lowrank_fit_error",
            "<=",
            FIT_FLOOR,
            "floor: LoRA fits an exact rank-r target to relative error <= 0.05 (every seed)",
            agg="all",
            arms=("lora",),
        ),
    ),
    reproduced="rank_2x and lower_error and nullity_theory",
    partial="rank_2x",
    method="sama",
    tuned=("sama", "lora"),
    key_metric="sama_over_lora_erank",
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.adapters.sama import effective_rank, sama_delta

    t0 = time.perf_counter()
    cfg = _MODES[mode]
    d, r, steps = cfg["d"], cfg["r"], cfg["steps"]
    device = torch.device(device_for(mode))
    gen = torch.Generator().manual_seed(10_000 + seed)
    targets = {s: {split: _target(d, r, s, gen, device) for split in ("val", "test")} for s in SPECTRA}
    init_seed, replicate_seed = 100 + seed, 200 + seed

    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    tuned: list[dict[str, Any]] = []
    notes: list[str] = []
    svals: dict[str, np.ndarray] = {}
    test_runs: dict[str, dict[str, Any]] = {}
    lr_sel: dict[str, dict[str, float]] = {}
    for spec in SPECTRA:

        def evaluate(method: str, params: dict[str, Any], spec: str = spec) -> tuple[float, Any]:
            out = _fit(method, targets[spec]["val"], r, params["lr"], steps, init_seed)
            return out["err"], out

        res = tune(evaluate, {m: {"lr": cfg["lrs"]} for m in METHODS}, maximize=False)
        tuned += [dict(row, target=spec) for row in res.table()]
        notes += [f"({spec}) {n}" for n in res.notes()]
        lr_sel[spec] = {m: res.params(m)["lr"] for m in METHODS}
        runs = {m: _fit(m, targets[spec]["test"], r, lr_sel[spec][m], steps, init_seed) for m in METHODS}
        runs["lora_replicate"] = _fit("lora", targets[spec]["test"], r, lr_sel[spec]["lora"], steps, replicate_seed)
        s_t = torch.linalg.svdvals(targets[spec]["test"].cpu().double())
        optimum = float(s_t[r:].norm() / s_t.norm())
        for m, o in runs.items():
            er = effective_rank(o["dw"])
            metrics[f"{m}_{spec}_error"] = o["err"]
            metrics[f"{m}_{spec}_erank"] = er
            table.append(
                {
                    "target": spec,
                    "method": _NAMES[m],
                    "parameters": o["n_params"],
                    "lr": lr_sel[spec]["lora" if m == "lora_replicate" else m],
                    "test rel. error": o["err"],
                    "effective rank": er,
                    "numerical rank": int(torch.linalg.matrix_rank(o["dw"])),
                }
            )
        metrics[f"rank{r}_optimum_{spec}_error"] = optimum
        table.append({"target": spec, "method": f"Eckart-Young rank-{r} optimum", "test rel. error": optimum})
        test_runs[spec] = runs
        if spec == "flat":
            svals = {m: torch.linalg.svdvals(o["dw"]).numpy() for m, o in runs.items() if m != "lora_replicate"}

    flat = test_runs["flat"]
    lo_er, lo_err = metrics["lora_flat_erank"], flat["lora"]["err"]
    for m in ("sama", "kron", "sama_one_block", "lora_replicate"):
        metrics[f"{m}_over_lora_erank"] = metrics[f"{m}_flat_erank"] / max(lo_er, 1e-12)
        metrics[f"{m}_over_lora_error"] = flat[m]["err"] / max(lo_err, 1e-12)
    metrics["lora_lowrank_fit_error"] = test_runs["lowrank"]["lora"]["err"]
    # SaMA's own family: a random relaxed-block target (p = c = r, k = 1), fitted at SaMA's flat-tuned lr
    g2 = torch.Generator().manual_seed(20_000 + seed)
    b = d // r
    own = sama_delta(torch.randn(r, b, r, 1, generator=g2), torch.randn(r, r, 1, b, generator=g2)).to(device)
    own = own * math.sqrt(d) / own.norm()
    metrics["sama_own_family_fit_error"] = _fit("sama", own, r, lr_sel["flat"]["sama"], steps, init_seed)["err"]
    null = _nullity_checks()
    metrics["nullity_mismatch"] = null["nullity_mismatch"]
    metrics["nullity_mismatch_lora_gauge"] = null["nullity_mismatch_lora_gauge"]
    metrics["n_params_lora"] = float(flat["lora"]["n_params"])
    metrics["n_params_sama"] = float(flat["sama"]["n_params"])
    metrics["n_params_kron"] = float(flat["kron"]["n_params"])
    elapsed = time.perf_counter() - t0
    summary = (
        f"flat target d={d}, {flat['lora']['n_params']} parameters each: effective rank SaMA "
        f"{metrics['sama_flat_erank']:.1f} vs LoRA {lo_er:.1f} (x{metrics['sama_over_lora_erank']:.2f}); error SaMA "
        f"{flat['sama']['err']:.3f} vs LoRA {lo_err:.3f} "
        f"(rank-{r} optimum {metrics[f'rank{r}_optimum_flat_error']:.3f}), "
        f"Kronecker {flat['kron']['err']:.3f}; nullity mismatch {null['nullity_mismatch']:.0f}"
    )
    notes += [
        "Jacobian nullity (float64, random point): " + "; ".join(null["rows"]) + ".",  # type: ignore[arg-type]
        f"Strongest baseline: the shared-block Kronecker adapter at the same budget, flat error "
        f"{flat['kron']['err']:.4f}, effective rank {metrics['kron_flat_erank']:.1f}; any rank-{r} adapter "
        f"(LoRA included) is bounded by the Eckart-Young error {metrics[f'rank{r}_optimum_flat_error']:.4f}.",
        f"Power-law target: SaMA {test_runs['powerlaw']['sama']['err']:.4f}, LoRA "
        f"{test_runs['powerlaw']['lora']['err']:.4f}, Kronecker {test_runs['powerlaw']['kron']['err']:.4f}; exact "
        f"rank-{r} target: SaMA {test_runs['lowrank']['sama']['err']:.4f}, "
        f"LoRA {test_runs['lowrank']['lora']['err']:.4f}.",
        f"Wall time of this seed: {elapsed:.0f} s.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"sama_spectra": _figure(svals)},
        summary=summary,
        notes=notes,
        tuned=tuned,
    )
