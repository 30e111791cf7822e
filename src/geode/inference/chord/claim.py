"""CHoRD's headline claim (revision 1, claim protocol v2): on a 4-chiplet GPU the end-to-end makespan
ordering is RR > CLAP > CHoRD-static > CHoRD-profiled, CHoRD-profiled is at least 2x faster than RR, and
the gain grows at 8 chiplets (issue 32; thresholds fixed by the issue).

Set-up (a model study: our own analytic/event simulator, :mod:`geode.inference.chord.chiplet`, not MGPUSim):

* GPU: :class:`~geode.inference.chord.ChipletGPU` defaults (16 CUs of 128 GFLOP/s per chiplet, 128 GB/s
  local, 32 GB/s inter-chiplet link, 4 KiB pages), :math:`C \\in \\{4, 8\\}`. A second reading of the
  inter-chiplet bandwidth (the notes give :math:`B_l/4` to :math:`B_l/8`) is run at :math:`B_l/8` and
  reported beside the verdict, not thresholded.
* Workloads: the nine DAGs of :mod:`geode.inference.chord.workloads` (resnet, vgg, inception, mobilenet,
  mlp, bert, vit, gpt-decode, moe), shapes and data-dependent indices drawn per seed. Tuning uses a
  validation draw of each workload; the verdict uses a separate test draw.
* Policies: RR (MGPUSim's default), CLAP (placement only, RR dispatch), CHoRD-static, CHoRD-profiled, and
  the strongest prior baseline we add, LADM (contiguous-chunk dispatch, first-touch or main-accessor
  placement). Speed-ups are RR's makespan over the policy's, geometric mean over the nine workloads.

Equal tuning (protocol section 1), per chiplet count, on the validation draws (geometric-mean speed-up over
RR), budget 4 configurations each: CLAP ``group`` in {1, 4, 16, 64} pages (extended past the upper edge);
LADM ``placement`` in {first, main}; CHoRD-static and CHoRD-profiled ``replicate`` x ``overlap`` in
{on, off}^2. RR has no knob.

Thresholds (all on ``agg="all"``: they must hold in every seed):

* ``rr_gt_clap``: CLAP's speed-up over RR at C = 4 > 1;
* ``clap_gt_static``: CHoRD-static's speed-up over CLAP at C = 4 > 1;
* ``static_gt_profiled``: CHoRD-profiled's over CHoRD-static at C = 4 > 1;
* ``profiled_2x``: CHoRD-profiled's speed-up over RR at C = 4 >= 2;
* ``gap_grows``: CHoRD-profiled's speed-up over RR at C = 8 over the one at C = 4 > 1.

``reproduced`` needs all five; ``partial`` needs ``clap_gt_static`` (the issue's rule).

Negative controls (our addition, fixed before the first run): the *misaligned* ablation of each tuned
policy, its plan with every page's home moved to the next chiplet and no replication (dispatch kept), i.e.
the decisions without the alignment between execution and data that the paper is about. Each threshold's
control is the same ratio computed with the misaligned plan in place of the policy it credits.

Validity floors (our addition): ``conserved``, the bytes requested are identical across all plans and the
fetched bytes equal local + remote (relative error <= 1e-9, every seed); ``numa``, RR's remote share of
fetched bytes at C = 4 is at least 0.5 (the interleaved NUMA regime the paper studies); ``memory``, at
least 20% of RR's kernel time at C = 4 is spent in memory-bound kernels (the workloads are not purely
compute-bound, where placement cannot matter).

Changes after the first exploratory run of the policies (before this claim was written or run): CLAP moved
every page group to its main accessor; the paper's description of CLAP moves only groups with
chiplet-locality (mainly accessed by one chiplet), so groups now move only when their main accessor
fetches more than half of their bytes (a defect of ours, fixed). Hardware parameters and workloads were not
changed after that run. After the first quick run (verdict below, unchanged) we added the reported-only
reading with 32 x 32 workgroup tiles, because the tile size is an inferred detail that decides the
``memory`` floor (protocol section 5); the verdict still uses the 64 x 64 reading.

Quick-mode verdict (3 seeds, measured on the final code): **inconclusive**, the ``memory`` floor fails in
every seed: only 10% of RR's kernel time at C = 4 is in memory-bound kernels (0.102 / 0.103 / 0.105), so
our workloads on our cost model are mostly compute- and latency-bound (small grids of 64 x 64 tiles use a
fraction of the 64 CUs), a regime where placement cannot give the paper's gains. The other floors hold
(conservation error 0; RR's remote share 0.68-0.69). For the record, the thresholds per seed:
CLAP over RR 1.014 / 1.016 / 1.017 (control, misaligned CLAP, 0.94: discriminates); CHoRD-static over CLAP
1.158 / 1.146 / 1.158 (the control, misaligned static, also passes at 1.08-1.09: the static gain here comes
from overlap on inception and moe, not from alignment, so this threshold does not discriminate);
CHoRD-profiled over static 1.054 / 1.052 / 1.055 (control 0.93); CHoRD-profiled over RR 1.24 / 1.22 / 1.24,
far from 2x (paper 2.94x; control 1.08-1.10); growth from 4 to 8 chiplets 1.009 / 0.975 / 1.015 (fails in
seed 1; the control, 1.02-1.06, passes). Were the floor met, the rule would give ``partial`` (static beats
CLAP) on a threshold that does not discriminate. Strongest baseline: LADM (chunked dispatch, main-accessor
placement) 1.02-1.04x over RR; CHoRD-profiled 1.19-1.21x over it. Per workload (seed 0, C = 4) CHoRD's gain
is concentrated in moe (3.1x, overlap of the experts and routed data placed with its reader) and inception
(1.6x, overlapped branches); gpt-decode is 0.97x for profiled and 0.63x for static (its interleaved KV pool
happens to align with RR's dispatch; static cannot see the block tables); the dense CNN/encoder DAGs gain
1-4%. Second readings: link B_l/8: CHoRD-profiled 1.20-1.27x over RR (C = 4), RR memory share 0.16-0.20;
tile 32 x 32 (floors met: memory share 0.20 / 0.27 / 0.24): CLAP 1.02x, static over CLAP 1.06-1.09, profiled
over static 1.07, profiled 1.16-1.19x over RR, growth 0.84-0.91, every control failing its threshold: a
``partial`` by the issue's rule, the 2x and the growth at 8 chiplets not reproduced. Tuning selected
CLAP group = 1 page (the lower limit), LADM main-accessor placement, and replication + overlap for both
CHoRD modes, in every seed and setting. Quick mode: 13-15 CPU seconds per seed (35-39 s wall, loaded machine).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read inconclusive on the same runs): floor failed: memory. No idea ablation or learned-arm
reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

if TYPE_CHECKING:
    from geode.inference.chord.chiplet import ChipletGPU, KernelDAG, Plan

CHIPLETS = (4, 8)
SLOW_LINK = 8.0  # second reading: B_r = B_l / 8
GRIDS: dict[str, dict[str, list[Any]]] = {
    "CLAP": {"group": [1, 4, 16, 64]},
    "LADM": {"placement": ["first", "main"]},
    "CHoRD-static": {"replicate": ["on", "off"], "overlap": ["on", "off"]},
    "CHoRD-profiled": {"replicate": ["on", "off"], "overlap": ["on", "off"]},
}
_SIZES: dict[str, dict[str, Any]] = {
    "smoke": {"workloads": ("mlp", "inception", "gpt-decode"), "draws": 1},
    "quick": {"workloads": None, "draws": 1},  # None: every workload of geode.inference.chord.workloads.WORKLOADS
    "full": {"workloads": None, "draws": 3},
}


def _policy(method: str, params: dict[str, Any]) -> Any:
    from geode.inference.chord.chiplet import CLAP, LADM, RR, ChordPolicy

    if method == "RR":
        return RR()
    if method == "CLAP":
        return CLAP(group=int(params["group"]))
    if method == "LADM":
        return LADM(placement=params["placement"])
    mode = method.split("-")[1]
    return ChordPolicy(mode, replicate=params["replicate"] == "on", overlap=params["overlap"] == "on")


def _misaligned(plan: Plan, c: int) -> Plan:
    """The negative control: every page's home moved to the next chiplet, no replication, dispatch kept."""
    from geode.inference.chord.chiplet import Plan

    return Plan(plan.dispatch, (plan.home + 1) % c, np.zeros_like(plan.replicated), plan.overlap, "misaligned")


def _gm(xs: list[float]) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(xs, dtype=float)))))


def _speedups(dags: list[KernelDAG], gpu: ChipletGPU, method: str, params: dict[str, Any]) -> float:
    from geode.inference.chord.chiplet import RR, simulate_chiplets

    sp = []
    for dag in dags:
        rr = simulate_chiplets(dag, gpu, RR().plan(dag, gpu)).makespan
        sp.append(rr / simulate_chiplets(dag, gpu, _policy(method, params).plan(dag, gpu)).makespan)
    return _gm(sp)


def _figure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from matplotlib.figure import Figure

    from geode.inference.chord.workloads import WORKLOADS

    fig = Figure(figsize=(10, 3.4), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    methods = ("CLAP", "LADM", "CHoRD-static", "CHoRD-profiled")
    for ax, c in zip(axes, CHIPLETS):
        sub = [r for r in rows if r["chiplets"] == c and r["link"] == "B_l/4" and r["tile"] == 64]
        names = sorted({r["workload"] for r in sub}, key=list(WORKLOADS).index)
        x = np.arange(len(names))
        for i, m in enumerate(methods):
            ys = [np.mean([r[f"{m} speedup"] for r in sub if r["workload"] == n]) for n in names]
            ax.bar(x + (i - 1.5) * 0.2, ys, 0.2, label=m)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(x, names, rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{c} chiplets: speed-up over RR")
        ax.set_yscale("log")
    axes[0].legend(fontsize=7)
    return {"speedup_per_workload": fig}


@register(
    "chord",
    claim=(
        "Joint chiplet-level kernel mapping, safe inter-kernel overlap and access-driven data placement (CHoRD) "
        "cut end-to-end inference makespan on chiplet GPUs: RR > CLAP > CHoRD-static > CHoRD-profiled at 4 "
        "chiplets, CHoRD-profiled >= 2x over RR, with larger gains at 8 chiplets."
    ),
    paper_figure=(
        "4 chiplets (MGPUSim), geometric mean over 9 CNN/transformer workloads: CHoRD-static / -profiled 2.57x / "
        "2.94x over RR and 1.46x / 1.66x over CLAP; benefits increase at 8 chiplets"
    ),
    baselines=("RR (MGPUSim default)", "CLAP (placement only)", "LADM-like chunked dispatch + first touch (ours)"),
    thresholds=(
        Threshold(
            "rr_gt_clap",
            "speedup_clap_4",
            ">",
            1.0,
            "CLAP faster than RR at 4 chiplets (geomean over workloads, every seed)",
            agg="all",
            control="speedup_mis_clap_4",
        ),
        Threshold(
            "clap_gt_static",
            "static_over_clap_4",
            ">",
            1.0,
            "CHoRD-static faster than CLAP at 4 chiplets (every seed)",
            agg="all",
            control="mis_static_over_clap_4",
        ),
        Threshold(
            "static_gt_profiled",
            "profiled_over_static_4",
            ">",
            1.0,
            "CHoRD-profiled faster than CHoRD-static at 4 chiplets (every seed)",
            agg="all",
            control="mis_profiled_over_static_4",
        ),
        Threshold(
            "profiled_2x",
            "speedup_profiled_4",
            ">=",
            2.0,
            "CHoRD-profiled >= 2x over RR at 4 chiplets (geomean over workloads, every seed)",
            agg="all",
            control="speedup_mis_profiled_4",
        ),
        Threshold(
            "gap_grows",
            "profiled_growth_8_over_4",
            ">",
            1.0,
            "CHoRD-profiled's speed-up over RR larger at 8 chiplets than at 4 (every seed)",
            agg="all",
            control="mis_profiled_growth_8_over_4",
        ),
    ),
    floors=(
        Threshold(
            "conserved",
            "conservation_error",
            "<=",
            1e-9,
            "floor: bytes requested identical across plans, fetched = local + remote (every seed)",
            agg="all",
        ),
        Threshold(
            "numa",
            "rr_remote_fraction_4",
            ">=",
            0.5,
            "floor: RR's remote share of fetched bytes at 4 chiplets >= 0.5 (every seed)",
            agg="all",
        ),
        Threshold(
            "memory",
            "rr_memory_share_4",
            ">=",
            0.2,
            "floor: >= 20% of RR's kernel time at 4 chiplets in memory-bound kernels (every seed)",
            agg="all",
        ),
    ),
    reproduced="rr_gt_clap and clap_gt_static and static_gt_profiled and profiled_2x and gap_grows",
    partial="clap_gt_static",
    method=(
        "CHoRD-static (C=4, B_l/4, tile 64)",
        "CHoRD-profiled (C=4, B_l/4, tile 64)",
        "CHoRD-profiled (C=8, B_l/4, tile 64)",
    ),
    tuned=(
        "CLAP (C=4, B_l/4, tile 64)",
        "CHoRD-static (C=4, B_l/4, tile 64)",
        "CHoRD-profiled (C=4, B_l/4, tile 64)",
        "CHoRD-profiled (C=8, B_l/4, tile 64)",
    ),
    untuned={"RR": "no parameter (MGPUSim's default round-robin dispatch and interleaved placement)"},
    key_metric="speedup_profiled_4",
)
def run(mode: str, seed: int) -> Outcome:
    """Tune every policy on validation draws, then measure the test draws at 4 and 8 chiplets."""
    from geode.inference.chord.chiplet import RR, ChipletGPU, simulate_chiplets
    from geode.inference.chord.workloads import WORKLOADS, make_workload

    size = _SIZES[mode]
    names = size["workloads"] or WORKLOADS

    def draws(kind: int, tile: int) -> list[KernelDAG]:
        rng = np.random.default_rng([seed, kind])
        return [make_workload(n, rng, tile=tile) for _ in range(size["draws"]) for n in names]

    readings = (("B_l/4", 4.0, 64, ""), ("B_l/8", SLOW_LINK, 64, "_slowlink"), ("tile 32", 4.0, 32, "_tile32"))
    sets = {t: (draws(1, t), draws(2, t)) for t in {r[2] for r in readings}}
    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    tuned_rows: list[dict[str, Any]] = []
    notes: list[str] = []
    cons_err = 0.0
    for link, ratio, tile, tag in readings:
        val, test = sets[tile]
        for c in CHIPLETS:
            base = ChipletGPU(chiplets=c)
            gpu = ChipletGPU(chiplets=c, remote_bw=base.local_bw / ratio)
            res = tune(
                lambda m, p, gpu=gpu, val=val: _speedups(val, gpu, m, p),
                GRIDS,
                budget=4,
                extend=1,
                limits={"group": (1, 1 << 30)},
                seed=seed,
            )
            for r in res.table():
                tuned_rows.append(dict(r, method=f"{r['method']} (C={c}, {link}, tile {tile})"))
            notes.extend(f"(C={c}, {link}, tile {tile}) {n}" for n in res.notes())
            sp: dict[str, list[float]] = {}
            rr_remote, rr_mem, rr_time = [], 0.0, 0.0
            for dag in test:
                rr = simulate_chiplets(dag, gpu, RR().plan(dag, gpu))
                rr_remote.append(rr.remote_fraction)
                rr_mem += float(rr.kernel_time[rr.memory_bound].sum())
                rr_time += float(rr.kernel_time.sum())
                row: dict[str, Any] = {
                    "workload": dag.name,
                    "chiplets": c,
                    "link": link,
                    "tile": tile,
                    "RR makespan us": rr.makespan,
                }
                req = {rr.requested_bytes}
                for m in GRIDS:
                    plan = _policy(m, res.params(m)).plan(dag, gpu)
                    r = simulate_chiplets(dag, gpu, plan)
                    mis = simulate_chiplets(dag, gpu, _misaligned(plan, c))
                    for x in (r, mis):
                        req.add(x.requested_bytes)
                        tot = x.local_bytes + x.remote_bytes
                        cons_err = max(cons_err, abs(float(x.fetched.sum()) - tot) / max(tot, 1.0))
                    sp.setdefault(m, []).append(rr.makespan / r.makespan)
                    sp.setdefault(f"mis {m}", []).append(rr.makespan / mis.makespan)
                    row[f"{m} speedup"] = round(rr.makespan / r.makespan, 4)
                    row[f"{m} remote share"] = round(r.remote_fraction, 4)
                row["RR remote share"] = round(rr.remote_fraction, 4)
                cons_err = max(cons_err, (max(req) - min(req)) / max(min(req), 1.0))
                table.append(row)
            g = {m: _gm(v) for m, v in sp.items()}
            sfx = f"{c}{tag}"
            metrics[f"speedup_clap_{sfx}"] = g["CLAP"]
            metrics[f"speedup_ladm_{sfx}"] = g["LADM"]
            metrics[f"speedup_static_{sfx}"] = g["CHoRD-static"]
            metrics[f"speedup_profiled_{sfx}"] = g["CHoRD-profiled"]
            metrics[f"speedup_mis_clap_{sfx}"] = g["mis CLAP"]
            metrics[f"speedup_mis_static_{sfx}"] = g["mis CHoRD-static"]
            metrics[f"speedup_mis_profiled_{sfx}"] = g["mis CHoRD-profiled"]
            metrics[f"static_over_clap_{sfx}"] = g["CHoRD-static"] / g["CLAP"]
            metrics[f"mis_static_over_clap_{sfx}"] = g["mis CHoRD-static"] / g["CLAP"]
            metrics[f"profiled_over_static_{sfx}"] = g["CHoRD-profiled"] / g["CHoRD-static"]
            metrics[f"mis_profiled_over_static_{sfx}"] = g["mis CHoRD-profiled"] / g["CHoRD-static"]
            metrics[f"profiled_over_ladm_{sfx}"] = g["CHoRD-profiled"] / g["LADM"]
            metrics[f"rr_remote_fraction_{sfx}"] = float(np.mean(rr_remote))
            metrics[f"rr_memory_share_{sfx}"] = rr_mem / rr_time
        s4, s8 = f"4{tag}", f"8{tag}"
        metrics[f"profiled_growth_8_over_4{tag}"] = (
            metrics[f"speedup_profiled_{s8}"] / metrics[f"speedup_profiled_{s4}"]
        )
        metrics[f"mis_profiled_growth_8_over_4{tag}"] = (
            metrics[f"speedup_mis_profiled_{s8}"] / metrics[f"speedup_mis_profiled_{s4}"]
        )
    metrics["conservation_error"] = float(cons_err)
    m = metrics
    summary = (
        f"C=4 geomean speed-up over RR: CLAP {m['speedup_clap_4']:.2f}x, LADM {m['speedup_ladm_4']:.2f}x, "
        f"CHoRD-static {m['speedup_static_4']:.2f}x, CHoRD-profiled {m['speedup_profiled_4']:.2f}x (paper 2.57x / "
        f"2.94x); C=8 profiled {m['speedup_profiled_8']:.2f}x; link B_l/8: profiled "
        f"{m['speedup_profiled_4_slowlink']:.2f}x / {m['speedup_profiled_8_slowlink']:.2f}x; "
        f"RR memory-bound time share {m['rr_memory_share_4']:.2f}; tile 32: profiled "
        f"{m['speedup_profiled_4_tile32']:.2f}x, RR memory-bound share {m['rr_memory_share_4_tile32']:.2f}"
    )
    notes = [
        f"{len(names)} workloads x {size['draws']} draw(s), validation and test draws independent; speed-ups are "
        "geometric means over workloads of RR's makespan over the policy's.",
        "A model study: our analytic simulator (roofline per chiplet with L2 dedup inside a kernel, no cache "
        "across kernels, no link contention between chiplets), not MGPUSim; CHoRD's decisions are inferred "
        "from the abstract.",
        "Second readings (reported, not thresholded): inter-chiplet bandwidth B_l/8 (metrics *_slowlink); "
        "32 x 32 workgroup tiles instead of 64 x 64 (metrics *_tile32, added after the first quick run).",
        *notes,
    ]
    return Outcome(
        metrics=metrics, table=table, figures=_figure(table), summary=summary, notes=notes, tuned=tuned_rows
    )
