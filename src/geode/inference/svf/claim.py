"""SVF's headline claim (revision 2, claim protocol v2): lower mean and tail latency than FCFS and SJF at
steady state, 1-bit SVF close behind, and SVF's competitive ratio with known lengths at most 5.

What changed from revision 1 (issue 18; the audit is ``shared/audits/probabilistic-inference.md``):

* **Load against measured capacity.** Revision 1's "load 0.8" was :math:`\\rho = \\lambda E[V]/M`, which
  counts only decode slot-steps; it was 88-92% of what the server can sustain (prefill time and the memory
  that future-peak admission reserves were not counted). The arrival rate is now a fraction of the
  *measured* capacity (:func:`geode.inference.workloads.measured_capacity`: the completion rate of a
  never-starved FCFS server, warm-up and drain trimmed, on a separate sample of lengths): 70% and 90%.
  Capacity is measured under FCFS, whose service order is independent of the lengths; a batch served by
  SVF finishes its small requests first and would overstate the rate.
* **Steady state.** Each run discards the first 20% of requests (warm-up) and the last 10% (the drain,
  where late large requests meet no competition), and keeps the rest. Each seed runs two independent
  arrival-and-length streams (``replications`` per seed), so the 3 seeds of ``geode reproduce`` are 6
  independent streams (the issue asks for at least 5 seeds); per-seed ratios are geometric means over its
  streams, and the thresholds apply a one-sided 95% bound over seeds.
* **Both baselines.** Mean and p99 are thresholded against FCFS (vLLM's default) and SJF (shortest
  predicted output first, MC-SF; the time-centric heuristic the abstract names), with the values of issue
  04 unchanged: mean at least 20% lower, p99 not higher. Overload (120% of capacity) is reported only: a
  finite run there has no steady state, and its latency grows with the run's length.
* **The competitive ratio.** Revision 1's random batch instances could not fail the bound (FCFS passed it
  too: 2.62 against the lower bound, 2.30 against the exact optimum). It is now an adversarial search
  (:func:`geode.inference.adversarial_batch_ratio`) over small batch instances against the exact optimum,
  run for every policy, under the hypothesis of the paper's bound :math:`1 + 2/(1-\\alpha)` with
  :math:`\\alpha \\le 1/2` (every peak at most half the cache; the bound is 5 there). The climbs start
  from random instances and from the predecessors' FCFS construction (two long requests with long prompts
  that fill the cache, ahead of short requests they block). The threshold counts only because FCFS is
  shown to exceed 5 on the same search (its control).
* **1-bit SVF follows the paper.** The bit classifies the predicted *output length* at the median, and
  requests are ordered by a proxy volume with the known prompt and the class's median output
  (``OneBitSVF(variant="paper")``); revision 1's reading (bit = volume above the median, FCFS inside a
  class) is reported beside it as ``1-bit SVF (volume)``. The verdict uses the paper's reading (protocol
  section 5: the reading closest to the text).

Thresholds (names -> metrics; all fixed before the run):

* ``mean_fcfs_70``, ``mean_fcfs_90``, ``mean_sjf_70``, ``mean_sjf_90``: SVF's mean latency at least 20%
  below the baseline's, on ``bound95`` (the lower one-sided 95% bound over seeds);
* ``tail_fcfs_70``, ``tail_fcfs_90``, ``tail_sjf_70``, ``tail_sjf_90``: SVF's p99 over the baseline's
  at most 1, on ``bound95`` (the upper bound);
* ``onebit``: 1-bit SVF's mean over SVF's at most 1.25, the larger of the two loads, on ``geobound95``;
* ``cr``: the largest ratio to the exact optimum the search finds for SVF at most 5, in every seed.

``reproduced`` needs all ten; ``partial`` needs the mean claim against one baseline at both loads, plus
``onebit`` and ``cr`` (revision 1's partial was the mean claim against FCFS at both loads with ``onebit``
and ``cr``).

Negative controls: a random static order (the ablation without the volume; its priority is a random
key per request) for every latency threshold, FCFS (1-bit SVF with no bit) for ``onebit``, FCFS's
adversarial ratio for ``cr``.

Validity floors: ``steady``, every policy at both loads completes at least 95% as many requests as arrive
over the kept window (a stable queue; the smallest ratio over policies, loads and streams); ``at_load``,
the load measured against a second, independent capacity sample is within 3 points of the target (a
first run of this revision measured capacity on 6,000 lengths, not the intended 40,000, and failed this
floor in 2 of 5 seeds, with errors up to 6 points; on 40,000 lengths the capacity's spread is about 0.5%);
``serq``, the queueing inequality of Lemma A.2 (the third-party formal model of servingQ/serQ,
``examples/papers/kong_svf.sq``) holds on our simulator's burst runs of that model's reference set-up.

Reported, not thresholded: overload (120% of capacity); the output-length tail above the 99th percentile
(the knot ``(1.0, 3000)`` of the Azure table is inferred and drives p99): its end point set to 700, 3000
(default) and 8000 tokens, at 90% of capacity; SVF with anti-starvation aging
(:class:`~geode.inference.svf.SVF` ``aging=c``) over a grid of rates; serQ's reference run (200 requests
with :math:`s \\sim U[100, 2000)`, :math:`o \\sim U[10, 500)` floored, :math:`M = 20000`, all at time 0,
unit steps): TEL(SVF) over the larger of the two lower bounds on OPT, which serQ reports as 1.33 (against
the bound 3.29) on its seed 1, and the left side of Lemma A.2's inequality over its right side (46% there).
serQ's program holds each request's peak from admission; our simulator admits by the future-peak check,
which never refuses more, so the inequality's premise (while a request waits the active peaks exceed
:math:`M - P`) holds for both. The run is made twice per draw: on our simulator, and with serQ's
peak-hold admission (a 20-line burst scheduler in this file), which is the one to compare with serQ's
numbers. Our draws are our own (serQ's RNG is not reproduced), so the check compares distributions over
several draws.

Equal tuning (protocol section 1): FCFS, SJF, SVF and 1-bit SVF have no parameters to tune (1-bit's
median cut is the same inferred value for both readings); the aging rate is reported over a grid, never
selected on the test streams.

Old verdict (revision 1, seed 0): not reproduced (mean -33% vs FCFS at "load 0.8", -81% at "1.2"; p99 over
FCFS above 1; 1-bit/SVF mean 3.08 at overload; batch CR <= 2.6, which FCFS also met). Seeds 1 and 2 gave
-15% and -18% at "load 0.8" (the audit).

Quick verdict (revision 2, seeds 0-2 = 6 streams, measured once with the thresholds above): **not reproduced**,
every seed alike; floors met (every policy keeps up, load within 3 points, serQ's inequality holds); about 20 CPU-s
per seed. SVF's mean latency is 3% / 2% / 2% below FCFS's at 70% of capacity and 28% / 22% / 31% below at 90%
(bound95 0.016 and 0.19 against 0.20); against SJF only 1% at 70% and 5-7% at 90% (bound95 0.005, 0.035): the
20% claim fails against both baselines at 70% and against SJF at 90%. p99 over FCFS 0.93 / 1.05 / 1.02 at 70% and
0.90 / 1.16 / 0.95 at 90% (bound95 1.10, 1.24: fails); over SJF 0.90-0.95 and 0.76-0.84 (passes). 1-bit SVF (the
paper's reading) is within 2-4% of SVF (passes); the adversarial search finds SVF/OPT 1.06-1.12 against FCFS's 5.18
(passes, and its control fails it). Every control fails its threshold. SVF's advantage appears only near
saturation; at 70% of capacity a memory-constrained server rarely queues long enough for the order to matter.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from geode.claims import Outcome, Threshold, register

if TYPE_CHECKING:
    from geode.inference.serving import Policy, SimResult

KV_SLOTS = 30_000  # M, token slots (the notes' setting)
TRACE = "azure-conv"
LOADS = (0.7, 0.9)  # fractions of measured capacity, fixed by the issue
OVERLOAD = 1.2  # reported only
WARMUP, DRAIN = 0.2, 0.1  # fractions of requests discarded at the start and the end
TAIL_ENDS = (700, 3000, 8000)  # p100 of the output length (3000 is the table's inferred knot)
AGING = (30.0, 300.0, 3000.0)  # slot-steps of volume per time unit of waiting
SERQ = {"n": 200, "kv_slots": 20_000, "peak": 2500}  # servingQ/serQ examples/papers/kong_svf.sq
ALPHA = 0.5  # adversarial CR: every peak <= alpha M, where the paper's bound 1 + 2/(1 - alpha) is 5

_SIZES: dict[str, dict[str, Any]] = {
    # n: requests per stream; reps: independent streams per seed; cap_n: lengths per capacity sample;
    # adv: (iters, restarts, n, max_len) of the random-start search per policy; adv_c: (iters, n, L) of the
    # climb from the FCFS construction; serq: burst draws; tail_n: requests per tail-sensitivity stream
    "smoke": {"n": 1500, "reps": 2, "cap_n": 1500, "adv": (4, 1, 4, 4), "adv_c": (2, 6, 8), "serq": 1, "tail_n": 1000},
    "quick": {
        "n": 20_000,
        "reps": 2,
        "cap_n": 40_000,
        "adv": (16, 2, 6, 6),
        "adv_c": (8, 12, 32),
        "serq": 5,
        "tail_n": 12_000,
    },
    "full": {
        "n": 100_000,
        "reps": 4,
        "cap_n": 100_000,
        "adv": (200, 6, 8, 8),
        "adv_c": (40, 12, 40),
        "serq": 20,
        "tail_n": 50_000,
    },
}


@functools.cache
def _random_order() -> type[Policy]:
    """The negative-control policy class (defined on first use: its base imports the field, and torch)."""
    from geode.inference.serving import Policy

    class _RandomOrder(Policy):
        """Negative control: a static random priority per request (the order carries no length information)."""

        name = "random order"

        def __init__(self, seed: int) -> None:
            self.seed = seed

        def priority(self, prompt: np.ndarray, predicted_output: np.ndarray, arrival: np.ndarray) -> np.ndarray:
            return np.random.default_rng(self.seed).random(np.asarray(prompt).shape[0])

    return _RandomOrder


def _policies(seed: int) -> dict[str, Policy]:
    from geode.inference.serving import FCFS, SJF
    from geode.inference.svf.policies import SVF, OneBitSVF

    return {
        "FCFS": FCFS(),
        "SJF": SJF(),
        "SVF": SVF(),
        "1-bit SVF": OneBitSVF(variant="paper"),
        "1-bit SVF (volume)": OneBitSVF(),
        "random order": _random_order()(seed),
    }


def _kept(n: int) -> slice:
    return slice(int(WARMUP * n), int(math.ceil((1 - DRAIN) * n)))


def _stats(res: SimResult, keep: slice) -> dict[str, float]:
    lat = res.latency[keep]
    a = res.arrival[keep]
    lo, hi = float(a[0]), float(a[-1])
    done = np.count_nonzero((res.finish >= lo) & (res.finish <= hi))
    came = np.count_nonzero((res.arrival >= lo) & (res.arrival <= hi))
    return {
        "mean": float(lat.mean()),
        "p50": float(np.percentile(lat, 50)),
        "p99": float(np.percentile(lat, 99)),
        "max": float(lat.max()),
        "flow": float(done / max(came, 1)),  # completions over arrivals in the kept window (1 when stable)
    }


def _stream(
    trace: Any, n: int, rate_per_load: dict[float, float], rng: np.random.Generator, policies: dict[str, Policy]
) -> dict[float, dict[str, dict[str, float]]]:
    from geode.inference.serving import Workload, simulate
    from geode.inference.workloads import TRACES, sample_lengths

    prompt, output = sample_lengths(trace, n, rng)
    unit = np.cumsum(np.concatenate([[0.0], rng.exponential(1.0, n - 1)]))  # common random numbers
    keep = _kept(n)
    out: dict[float, dict[str, dict[str, float]]] = {}
    for load, rate in rate_per_load.items():
        work = Workload(unit / rate, prompt, output, name=TRACES[TRACE].name)
        out[load] = {name: _stats(simulate(work, pol, KV_SLOTS), keep) for name, pol in policies.items()}
    return out


def _peak_hold_svf(s: np.ndarray, o: np.ndarray, m: int) -> np.ndarray:
    """serQ's admission, for its burst model: SVF order, a request holds its peak ``s + o`` from admission,
    the head of the queue is admitted while its peak fits next to the active peaks (unit steps)."""
    from geode.inference.serving import volume

    order = np.lexsort((np.arange(s.shape[0]), volume(s, o)))
    finish = np.zeros(s.shape[0])
    active: list[tuple[float, int]] = []  # (finish, peak)
    t, used, head = 0.0, 0, 0
    while head < order.shape[0]:
        while head < order.shape[0] and used + int(s[order[head]] + o[order[head]]) <= m:
            i = order[head]
            finish[i] = t + float(o[i])
            active.append((finish[i], int(s[i] + o[i])))
            used += int(s[i] + o[i])
            head += 1
        if head < order.shape[0]:
            t = min(f for f, _ in active)
            used -= sum(p for f, p in active if f <= t)
            active = [(f, p) for f, p in active if f > t]
    return finish


def _serq(draws: int, rng: np.random.Generator) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """serQ's burst model: TEL(SVF) / max(sum o, prefix_total(vol)/M), and Lemma A.2's left over right side.

    Run twice per draw: on our simulator (future-peak admission) and with serQ's peak-hold admission.
    """
    from geode.inference.serving import CostModel, Workload, simulate, volume
    from geode.inference.svf.policies import SVF

    n, m, peak = SERQ["n"], SERQ["kv_slots"], SERQ["peak"]
    unit = CostModel.unit()
    rows: list[dict[str, Any]] = []
    acc: dict[str, list[float]] = {}
    for d in range(draws):
        s = np.floor(rng.uniform(100, 2000, n)).astype(np.int64)
        o = np.floor(rng.uniform(10, 500, n)).astype(np.int64)
        vol = np.sort(volume(s, o)).astype(float)
        prefix_total = float(np.cumsum(vol).sum())
        lb = max(float(o.sum()), prefix_total / m)
        for how, fin in (
            ("geode", simulate(Workload(np.zeros(n), s, o), SVF(), m, cost=unit).finish),
            ("peak_hold", _peak_hold_svf(s, o, m)),
        ):
            tel = float(fin.sum())
            left = (m - peak) * (tel - float(o.sum()))
            right = 2.0 * (prefix_total - float(vol.sum()))
            acc.setdefault(f"{how}_ratio", []).append(tel / lb)
            acc.setdefault(f"{how}_lemma", []).append(left / right)
            rows.append(
                {
                    "setting": f"serQ reference burst (kong_svf.sq), {how} admission",
                    "draw": d,
                    "mean latency": round(tel / n, 2),
                    "TEL / max(LB)": round(tel / lb, 4),
                    "Lemma A.2 left/right": round(left / right, 4),
                    "bound 1+2/(1-alpha)": round(1 + 2 / (1 - peak / m), 4),
                }
            )
    out = {k: float(np.mean(v)) for k, v in acc.items()}
    out["lemma_max"] = float(max(max(acc["geode_lemma"]), max(acc["peak_hold_lemma"])))
    return rows, out


def _fcfs_construction(n: int, length: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Two long requests whose prompts fill half the cache each, ahead of ``n - 2`` one-token requests.

    With :math:`\\alpha = 1/2` and :math:`M = 2(s_b + L)`, the two long requests (prompt :math:`s_b`, output
    :math:`L`) leave :math:`2L - 2` slots after their first step; each short request needs :math:`2L - 1`, so
    FCFS makes all of them wait :math:`L` steps, while the optimum runs them first, side by side.
    """
    k = n - 2
    s_b = max(0, -(-(k * (2 * length - 1) - 2 * length) // 2))
    s = np.array([s_b, s_b] + [2 * length - 2] * k, dtype=np.int64)
    o = np.array([length, length] + [1] * k, dtype=np.int64)
    return s, o, 0


def _figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from matplotlib.figure import Figure  # no pyplot: figures are built and saved off-screen

    colors = {"FCFS": "tab:gray", "SJF": "tab:blue", "SVF": "tab:red", "1-bit SVF": "tab:orange"}
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    axes = fig.subplots(1, 2)
    loads = (*LOADS, OVERLOAD)
    for ax, key in zip(axes, ("mean", "p99")):
        for name, c in colors.items():
            ys = [np.mean([r[key] for r in rows if r["policy"] == name and r["load"] == ld]) for ld in loads]
            ax.plot(loads, ys, "o-", label=name, color=c)
        ax.set_yscale("log")
        ax.set_xlabel("arrival rate / measured capacity")
        ax.set_ylabel(f"{key} latency (time units)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    return {"latency_vs_load": fig}


def _gm(xs: list[float]) -> float:
    return float(np.exp(np.mean(np.log(np.maximum(xs, 1e-300)))))


@register(
    "svf",
    claim=(
        "Smallest Volume First (priority = KV volume s*o + o(o+1)/2) cuts mean and tail latency against "
        "time-centric FCFS and SJF on a memory-constrained LLM server at steady state, 1-bit SVF comes close with "
        "one bit per request, and SVF's competitive ratio with known output lengths is at most 5."
    ),
    paper_figure=(
        "CR <= 5 for SVF with known lengths (down from 48; v2: towards 3 as alpha -> 0); 'strong reductions in "
        "both average and tail latency' on Llama-3.1 in vLLM (no number in the abstract)"
    ),
    baselines=("FCFS (vLLM default)", "SJF (MC-SF, shortest predicted output first)"),
    thresholds=(
        Threshold(
            "mean_fcfs_70",
            "svf_mean_reduction_vs_fcfs_70",
            ">=",
            0.20,
            "SVF mean >= 20% below FCFS, 70% capacity",
            agg="bound95",
            control="random_mean_reduction_vs_fcfs_70",
            arms=("SVF", "FCFS"),
        ),
        Threshold(
            "mean_fcfs_90",
            "svf_mean_reduction_vs_fcfs_90",
            ">=",
            0.20,
            "SVF mean >= 20% below FCFS, 90% capacity",
            agg="bound95",
            control="random_mean_reduction_vs_fcfs_90",
            arms=("SVF", "FCFS"),
        ),
        Threshold(
            "mean_sjf_70",
            "svf_mean_reduction_vs_sjf_70",
            ">=",
            0.20,
            "SVF mean >= 20% below SJF, 70% capacity",
            agg="bound95",
            control="random_mean_reduction_vs_sjf_70",
            arms=("SVF", "SJF"),
        ),
        Threshold(
            "mean_sjf_90",
            "svf_mean_reduction_vs_sjf_90",
            ">=",
            0.20,
            "SVF mean >= 20% below SJF, 90% capacity",
            agg="bound95",
            control="random_mean_reduction_vs_sjf_90",
            arms=("SVF", "SJF"),
        ),
        Threshold(
            "tail_fcfs_70",
            "svf_p99_over_fcfs_70",
            "<=",
            1.0,
            "SVF p99 not above FCFS's, 70% capacity",
            agg="bound95",
            control="random_p99_over_fcfs_70",
            arms=("SVF", "FCFS"),
        ),
        Threshold(
            "tail_fcfs_90",
            "svf_p99_over_fcfs_90",
            "<=",
            1.0,
            "SVF p99 not above FCFS's, 90% capacity",
            agg="bound95",
            control="random_p99_over_fcfs_90",
            arms=("SVF", "FCFS"),
        ),
        Threshold(
            "tail_sjf_70",
            "svf_p99_over_sjf_70",
            "<=",
            1.0,
            "SVF p99 not above SJF's, 70% capacity",
            agg="bound95",
            control="random_p99_over_sjf_70",
            arms=("SVF", "SJF"),
        ),
        Threshold(
            "tail_sjf_90",
            "svf_p99_over_sjf_90",
            "<=",
            1.0,
            "SVF p99 not above SJF's, 90% capacity",
            agg="bound95",
            control="random_p99_over_sjf_90",
            arms=("SVF", "SJF"),
        ),
        Threshold(
            "onebit",
            "onebit_mean_over_svf_max",
            "<=",
            1.25,
            "1-bit SVF (paper's bit) mean <= 1.25x SVF's",
            agg="geobound95",
            control="fcfs_mean_over_svf_max",
            arms=("1-bit SVF", "SVF"),
        ),
        Threshold(
            "cr",
            "svf_cr_adversarial",
            "<=",
            5.0,
            "adversarial SVF/OPT <= 5 on small batches, alpha <= 1/2",
            agg="all",
            control="fcfs_cr_adversarial",
            arms=("SVF",),
        ),
    ),
    floors=(
        Threshold("steady", "min_flow_ratio", ">=", 0.95, "every policy keeps up with arrivals (floor)", agg="all"),
        Threshold("at_load", "load_error", "<=", 0.03, "load within 3 points of 70% / 90% (floor)", agg="all"),
        Threshold("serq", "serq_lemma_max", "<=", 1.0, "serQ's Lemma A.2 inequality holds (floor)", agg="all"),
    ),
    reproduced=(
        "mean_fcfs_70 and mean_fcfs_90 and mean_sjf_70 and mean_sjf_90 and tail_fcfs_70 and tail_fcfs_90 "
        "and tail_sjf_70 and tail_sjf_90 and onebit and cr"
    ),
    partial="((mean_fcfs_70 and mean_fcfs_90) or (mean_sjf_70 and mean_sjf_90)) and onebit and cr",
    method=("SVF", "1-bit SVF"),
    untuned={
        "SVF": "no hyper-parameter (the priority is the KV volume, fixed by the paper)",
        "1-bit SVF": "no hyper-parameter (the median cut is fixed, the same inferred value for both readings)",
        "FCFS": "no hyper-parameter (arrival order)",
        "SJF": "no hyper-parameter (shortest predicted output first)",
    },
    key_metric="svf_mean_reduction_vs_fcfs_90",
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    """Steady-state runs at 70% and 90% of measured capacity, overload, tail sensitivity, CR search, serQ."""
    from geode.inference.bounds import adversarial_batch_ratio
    from geode.inference.serving import FCFS, SJF
    from geode.inference.svf.policies import SVF
    from geode.inference.workloads import TRACES, measured_capacity, sample_lengths

    size = _SIZES[mode]
    rng = np.random.default_rng(seed)
    n = size["n"]
    policies = _policies(seed)

    cap_s, cap_o = sample_lengths(TRACE, size["cap_n"], rng)
    capacity = measured_capacity(cap_s, cap_o, KV_SLOTS)
    check_s, check_o = sample_lengths(TRACE, size["cap_n"], rng)
    capacity_check = measured_capacity(check_s, check_o, KV_SLOTS)
    rates = {ld: ld * capacity for ld in (*LOADS, OVERLOAD)}
    load_error = max(abs(rates[ld] / capacity_check - ld) for ld in LOADS)

    table: list[dict[str, Any]] = []
    per: dict[str, list[float]] = {}  # per-stream ratios, combined geometrically below
    flows: list[float] = []
    for rep in range(size["reps"]):
        res = _stream(TRACE, n, {ld: rates[ld] for ld in LOADS}, rng, policies)
        if rep == 0:  # overload: one stream, reported only
            res[OVERLOAD] = _stream(TRACE, n, {OVERLOAD: rates[OVERLOAD]}, rng, policies)[OVERLOAD]
            aged = _stream(
                TRACE,
                n,
                {LOADS[1]: rates[LOADS[1]]},
                rng,
                {f"SVF aging {c:g}": SVF(aging=c) for c in AGING} | {"SVF": SVF(), "FCFS": FCFS(), "SJF": SJF()},
            )[LOADS[1]]
            for name, st in aged.items():
                table.append(
                    {"setting": "aging (90% capacity, own stream)", "load": LOADS[1], "policy": name}
                    | {k: round(v, 2) for k, v in st.items()}
                )
            for name in aged:
                key = name.replace("SVF aging ", "svf_aging_")
                if name.startswith("SVF aging"):
                    per.setdefault(f"{key}_p99_over_fcfs_90", []).append(aged[name]["p99"] / aged["FCFS"]["p99"])
                    per.setdefault(f"{key}_mean_over_svf_90", []).append(aged[name]["mean"] / aged["SVF"]["mean"])
        for load, by in res.items():
            tag = "over" if load == OVERLOAD else f"{round(100 * load)}"
            for name, st in by.items():
                table.append(
                    {"setting": f"stream {rep}", "load": load, "policy": name}
                    | {k: round(v, 2) for k, v in st.items()}
                )
                if load != OVERLOAD:
                    flows.append(st["flow"])
            for who, key in (
                ("SVF", "svf"),
                ("random order", "random"),
                ("1-bit SVF", "onebit"),
                ("1-bit SVF (volume)", "onebit_volume"),
            ):
                for base, bkey in (("FCFS", "fcfs"), ("SJF", "sjf")):
                    per.setdefault(f"{key}_mean_over_{bkey}_{tag}", []).append(by[who]["mean"] / by[base]["mean"])
                    per.setdefault(f"{key}_p99_over_{bkey}_{tag}", []).append(by[who]["p99"] / by[base]["p99"])
            for who, key in (
                ("1-bit SVF", "onebit"),
                ("1-bit SVF (volume)", "onebit_volume"),
                ("FCFS", "fcfs"),
                ("SJF", "sjf"),
                ("random order", "random"),
            ):
                per.setdefault(f"{key}_mean_over_svf_{tag}", []).append(by[who]["mean"] / by["SVF"]["mean"])

    metrics: dict[str, float] = {k: _gm(v) for k, v in per.items()}
    for key in ("svf", "random", "onebit", "onebit_volume"):
        for bkey in ("fcfs", "sjf"):
            for tag in ("70", "90", "over"):
                metrics[f"{key}_mean_reduction_vs_{bkey}_{tag}"] = 1.0 - metrics[f"{key}_mean_over_{bkey}_{tag}"]
    for key in ("onebit", "onebit_volume", "fcfs", "sjf", "random"):
        metrics[f"{key}_mean_over_svf_max"] = max(
            metrics[f"{key}_mean_over_svf_70"], metrics[f"{key}_mean_over_svf_90"]
        )
    metrics["min_flow_ratio"] = float(min(flows))
    metrics["load_error"] = float(load_error)
    metrics["capacity"] = float(capacity)
    metrics["capacity_check"] = float(capacity_check)
    metrics["capacity_over_slot_bound"] = float(capacity * _mean_volume(cap_s, cap_o) / KV_SLOTS)
    # the strongest named baseline per load: the better mean of FCFS and SJF
    for tag in ("70", "90"):
        metrics[f"svf_mean_over_best_baseline_{tag}"] = max(
            metrics[f"svf_mean_over_fcfs_{tag}"], metrics[f"svf_mean_over_sjf_{tag}"]
        )

    # output-length tail above p99 (inferred knot): one stream per end point at 90% of its own capacity
    for end in TAIL_ENDS:
        table_ = TRACES[TRACE]
        knots = tuple((u, x) for u, x in table_.output if u < 1.0) + ((1.0, float(end)),)
        trace = dataclasses.replace(table_, output=knots)
        ts, to = sample_lengths(trace, size["cap_n"], rng)
        cap_t = measured_capacity(ts, to, KV_SLOTS)
        pol3 = {"FCFS": FCFS(), "SJF": SJF(), "SVF": SVF()}
        by = _stream(trace, size["tail_n"], {LOADS[1]: LOADS[1] * cap_t}, rng, pol3)[LOADS[1]]
        for name, st in by.items():
            table.append(
                {"setting": f"output p100 = {end} (90% capacity)", "load": LOADS[1], "policy": name}
                | {k: round(v, 2) for k, v in st.items()}
            )
        for bkey, base in (("fcfs", "FCFS"), ("sjf", "SJF")):
            metrics[f"tail{end}_svf_p99_over_{bkey}"] = by["SVF"]["p99"] / by[base]["p99"]
            metrics[f"tail{end}_svf_mean_over_{bkey}"] = by["SVF"]["mean"] / by[base]["mean"]

    # adversarial competitive ratio against the exact optimum (small batches, alpha <= 1/2)
    iters, restarts, n_adv, max_len = size["adv"]
    iters_c, n_c, length_c = size["adv_c"]
    construction = _fcfs_construction(n_c, length_c)
    adv_row: dict[str, Any] = {"setting": f"adversarial batch CR vs exact OPT (alpha <= {ALPHA})"}
    for name, key in (("FCFS", "fcfs"), ("SJF", "sjf"), ("SVF", "svf"), ("1-bit SVF", "onebit")):
        found = [
            adversarial_batch_ratio(
                policies[name],
                n_adv,
                iters=iters,
                restarts=restarts,
                max_len=max_len,
                alpha=ALPHA,
                seed=int(rng.integers(2**31)),
            ),
            adversarial_batch_ratio(
                policies[name],
                n_c,
                iters=iters_c,
                restarts=0,
                max_len=max_len,
                alpha=ALPHA,
                starts=[construction],
                seed=int(rng.integers(2**31)),
            ),
        ]
        r, inst = max(found, key=lambda f: f[0])
        metrics[f"{key}_cr_adversarial"] = float(r)
        metrics[f"{key}_cr_random_starts"] = float(found[0][0])
        metrics[f"{key}_cr_construction"] = float(found[1][0])
        adv_row[f"{name} ratio"] = round(r, 4)
        adv_row[f"{name} instance"] = f"s={inst['prompt'].tolist()} o={inst['output'].tolist()} M={inst['kv_slots']}"
    table.append(adv_row)

    serq_rows, serq = _serq(size["serq"], rng)
    table.extend(serq_rows)
    metrics["serq_tel_over_lb"] = serq["geode_ratio"]
    metrics["serq_lemma_slack"] = serq["geode_lemma"]
    metrics["serq_peak_hold_tel_over_lb"] = serq["peak_hold_ratio"]
    metrics["serq_peak_hold_lemma_slack"] = serq["peak_hold_lemma"]
    metrics["serq_lemma_max"] = serq["lemma_max"]

    summary = (
        f"SVF vs FCFS mean {-100 * metrics['svf_mean_reduction_vs_fcfs_70']:+.0f}% / "
        f"{-100 * metrics['svf_mean_reduction_vs_fcfs_90']:+.0f}% (70/90% of capacity), vs SJF "
        f"{-100 * metrics['svf_mean_reduction_vs_sjf_70']:+.0f}% / "
        f"{-100 * metrics['svf_mean_reduction_vs_sjf_90']:+.0f}%; "
        f"p99 over FCFS {metrics['svf_p99_over_fcfs_70']:.2f} / {metrics['svf_p99_over_fcfs_90']:.2f}, over SJF "
        f"{metrics['svf_p99_over_sjf_70']:.2f} / {metrics['svf_p99_over_sjf_90']:.2f}; 1-bit/SVF mean "
        f"{metrics['onebit_mean_over_svf_max']:.2f}; adversarial CR SVF {metrics['svf_cr_adversarial']:.2f}, "
        f"FCFS {metrics['fcfs_cr_adversarial']:.2f}"
    )
    notes = [
        f"Trace {TRACE} ({TRACES[TRACE].source}); {size['reps']} streams x {n} requests per seed, Poisson "
        f"arrivals, M = {KV_SLOTS} slots, step time 1 + prefill/2048; first {WARMUP:.0%} and last {DRAIN:.0%} "
        "of each stream discarded.",
        f"Measured capacity (FCFS, never starved): {capacity:.5f} requests per time unit, "
        f"{metrics['capacity_over_slot_bound']:.3f} x the slot-step bound M / E[V]; an independent sample gives "
        f"{capacity_check:.5f}.",
        "Known output lengths; every policy uses MC-SF's future-peak admission. 1-bit SVF (verdict): bit = "
        "output above the median, order by the proxy volume with the class's median output; 1-bit SVF (volume): "
        "revision 1's reading.",
        f"Adversarial CR: hill-climbing over {n_adv}-request batches from {restarts} random starts ({iters} "
        f"evaluations) and over {n_c}-request batches from the FCFS construction (L = {length_c}, {iters_c} "
        f"evaluations); unit steps, exact OPT by integer programming, every peak <= {ALPHA} M.",
        "Reported only: overload (120% of capacity; no steady state), aging, the output tail, serQ's run.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures=_figures([r for r in table if "policy" in r and str(r.get("setting", "")).startswith("stream")]),
        summary=summary,
        notes=notes,
    )


def _mean_volume(s: np.ndarray, o: np.ndarray) -> float:
    from geode.inference.serving import volume

    return float(volume(s, o).astype(float).mean())
