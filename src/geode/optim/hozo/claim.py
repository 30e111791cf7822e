"""Claim check of HoZO: positivity without projection, a wider stable learning-rate range, ZO-level quality.

Thresholds (fixed by the issue, before any run): ``reproduced`` if HoZO has zero boundary violations, no
divergence at >= 2 more points of the learning-rate sweep x{1, 3, 10, 30} than QZO, and a final test
loss within 10% of the best zeroth-order baseline (MeZO+clamp, QZO) at the baselines' tuned learning
rates; ``partial`` if zero violations and a stable range no narrower than QZO's; else ``not reproduced``.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: violations must be zero in every seed (``all``); the range and loss thresholds must hold
  in at least 2 of 3 seeds (``"2 of 3"``: both are noisy per-seed statistics);
- *validity floors*: first-order Adam on the scales recovers >= 50% of the loss the degradation cost
  (``adam_recovery``, so the task is solvable from the scales alone), the best zeroth-order baseline
  recovers >= 20% (so "within 10% of the best ZO baseline" compares trained models), and at most a quarter
  of the methods' tuned runs diverged (mean over seeds);
- *negative controls*: QZO's and MeZO+clamp's violations for "zero violations"; for the range thresholds a
  second QZO run with other zeroth-order seeds (the noise floor of the stable-point count) and MeZO+clamp
  (QZO without clipping); for the loss the untrained (degraded) model's loss against the best ZO baseline.

Boundary violations are counted at each method's tuned configuration (the x1 point of the sweep, the run
whose loss the verdict compares): entries a perturbation or an update (before any projection) left
``<= 0``. The totals over all sweep runs are reported beside them, not judged: a HoZO run that diverges
(a loss overflowing) can underflow ``exp`` to exactly 0 in float32, which we saw in the exploration of
the components before fixing this rule, and which the stability thresholds already count as divergence.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read not reproduced on the same runs): not tuned by the protocol: qzo. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

SWEEP: tuple[float, ...] = (1.0, 3.0, 10.0, 30.0)  # learning-rate multiples of each method's tuned value (issue)
EPS = 1e-3  # perturbation of every zeroth-order method (MeZO's default; relative for HoZO)
DIVERGE_FACTOR = 1.1  # diverged: final validation loss > 1.1 x the loss at the start (or non-finite)
PROBE_STEPS = 20  # steps at lr = 0 that measure the typical |d| for the clipping grids

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        problem=dict(hidden=(32, 32), pretrain_steps=30, steps=20, n_val=128, n_test=128),
        grids=dict(
            adam=dict(lr=[1e-3, 1e-2]),
            mezo=dict(lr=[3e-4, 1e-3]),
            qzo=dict(lr=[1e-3], clip=[1.0, 10.0]),
            hozo=dict(lr=[0.1, 0.3]),
            hozo_ddc=dict(lr=[0.3], clip=[1.0, 10.0]),
        ),
        extend=0,
    ),
    "quick": dict(
        problem=dict(hidden=(64, 64), pretrain_steps=600, steps=600, n_val=1024, n_test=2048),
        grids=dict(
            adam=dict(lr=[1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]),
            mezo=dict(lr=[3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2]),
            qzo=dict(lr=[3e-4, 1e-3, 3e-3], clip=[1.0, 10.0]),
            hozo=dict(lr=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0]),
            hozo_ddc=dict(lr=[0.1, 0.3, 1.0], clip=[1.0, 10.0]),
        ),
        extend=2,
    ),
}
# full: SmolLM2-135M int4 on keyword classification (written for a GPU machine; not run on CPU)
_MODES["full"] = dict(
    problem=dict(steps=3000, batch_size=16, n_val=512, n_test=1024, group_size=64),
    grids=dict(
        adam=dict(lr=[1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3]),
        mezo=dict(lr=[1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4]),
        qzo=dict(lr=[3e-6, 1e-5, 3e-5], clip=[1.0, 10.0]),
        hozo=dict(lr=[0.001, 0.003, 0.01, 0.03, 0.1, 0.3]),
        hozo_ddc=dict(lr=[0.01, 0.03, 0.1], clip=[1.0, 10.0]),
    ),
    extend=2,
    lm=True,
)

_NAMES = {
    "adam": "Adam (first order)",
    "mezo": "MeZO + clamp",
    "qzo": "QZO",
    "hozo": "HoZO",
    "hozo_ddc": "HoZO + DDC",
}


def _key(method: str, cfg: dict[str, Any], seed: int) -> tuple[Any, ...]:
    return (method, seed, tuple(sorted((k, float(f"{v:.10g}")) for k, v in cfg.items())))


def _recovery(loss: float, init: float, rtn: float) -> float:
    """Share of the loss the degradation cost that training won back: 1 at the RTN model, 0 at the start."""
    gap = init - rtn
    if not math.isfinite(loss) or gap <= 0:
        return -1.0 if not math.isfinite(loss) else 0.0
    return max((init - loss) / gap, -1.0)


def _finite(x: float, cap: float = 1e6) -> float:
    return x if math.isfinite(x) and x < cap else cap


def _figure(results: dict[str, Any], best: dict[str, Any], sweeps: dict[str, list[Any]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    for m, r in best.items():
        if r.curve:
            a.plot(np.arange(1, len(r.curve) + 1) * r.curve_every, [_finite(c) for c in r.curve], label=_NAMES[m])
    a.set_xlabel("step")
    a.set_ylabel("training loss (EMA)")
    a.set_yscale("log")
    a.set_title("tuned learning rate")
    if a.lines:
        a.legend(fontsize=7)
    for m, rs in sweeps.items():
        ys = [_finite(r.val_loss) for r in rs]
        b.plot(SWEEP, ys, marker="o", label=_NAMES[m])
    b.axhline(results["init_val"] * DIVERGE_FACTOR, color="k", ls=":", lw=1, label="divergence line")
    b.set_xscale("log")
    b.set_yscale("log")
    b.set_xlabel("learning rate / tuned learning rate")
    b.set_ylabel("final validation loss")
    b.set_title("learning-rate sweep")
    b.legend(fontsize=7)
    fig.tight_layout()
    return fig


@register(
    "hozo",
    claim=(
        "Treating positive quantisation scales as Euclidean causes boundary violations and instability; HoZO's "
        "Riemannian zeroth-order steps keep the scales positive without projection, stay stable over a wider "
        "learning-rate range than QZO, and match the zeroth-order baselines' loss."
    ),
    paper_figure=(
        "HoZO beats ZO baselines on 6 tasks x 3 model sizes; 34x less memory than first-order fine-tuning; "
        "4-bit Llama-2-70B fine-tuned on one 48 GB GPU"
    ),
    baselines=("MeZO + clamp", "QZO", "first-order Adam (reference)"),
    thresholds=(
        Threshold(
            "no_violations",
            "hozo_violations",
            "<=",
            0.0,
            "HoZO leaves no scale <= 0 (perturbations and updates, tuned learning rate), in every seed",
            agg="all",
            control=("qzo_violations", "mezo_violations"),
            arms="hozo",
        ),
        Threshold(
            "wider_range",
            "hozo_minus_qzo_stable_points",
            ">=",
            2.0,
            "HoZO stays stable at >= 2 more points of the sweep x{1,3,10,30} than QZO (2 of 3 seeds)",
            agg="2 of 3",
            control=("qzo_replicate_minus_qzo_stable_points", "mezo_minus_qzo_stable_points"),
            arms=("hozo", "qzo"),
        ),
        Threshold(
            "matches_loss",
            "hozo_loss_ratio",
            "<=",
            1.10,
            "HoZO's test loss within 10% of the best ZO baseline's, each at its tuned learning rate (2 of 3 seeds)",
            agg="2 of 3",
            control="untrained_loss_ratio",
            arms=("hozo", "mezo", "qzo"),
        ),
        Threshold(
            "not_narrower",
            "hozo_minus_qzo_stable_points",
            ">=",
            0.0,
            "HoZO's stable range is no narrower than QZO's (2 of 3 seeds)",
            agg="2 of 3",
            control="mezo_minus_qzo_stable_points",
            arms=("hozo", "qzo"),
        ),
    ),
    floors=(
        Threshold(
            "reference_learns",
            "adam_recovery",
            ">=",
            0.5,
            "floor: first-order Adam on the scales wins back >= 50% of the degradation's loss (every seed)",
            agg="all",
        ),
        Threshold(
            "zo_learns",
            "best_zo_recovery",
            ">=",
            0.2,
            "floor: the best ZO baseline wins back >= 20% of the degradation's loss (every seed)",
            agg="all",
            arms=("mezo", "qzo"),
        ),
        Threshold(
            "few_collapsed",
            "tuned_diverged_fraction",
            "<=",
            0.25,
            "floor: at most a quarter of the methods' tuned runs diverged (mean over seeds)",
        ),
    ),
    reproduced="no_violations and wider_range and matches_loss",
    partial="no_violations and not_narrower",
    method="hozo",
    tuned=("hozo", "mezo", "qzo", "adam"),
    key_metric="hozo_minus_qzo_stable_points",
)
def run(mode: str, seed: int) -> Outcome:
    from geode.optim.hozo.experiment import absolute_init, make_mlp_problem

    cfg = _MODES[mode]
    t_start = time.perf_counter()
    if cfg.get("lm"):
        from geode.optim.hozo.experiment import make_smollm2_problem

        problem = make_smollm2_problem(seed=seed, **cfg["problem"])
    else:
        problem = make_mlp_problem(seed=seed, **cfg["problem"])
    main = _study(problem, cfg, seed, replicate=True)
    # the other reading of "scales initialised log-uniform in 1e-3..1": absolute values, not factors of RTN
    other = _study(absolute_init(problem, 1e-3, 1.0, seed=seed + 104729), cfg, seed, replicate=False)
    elapsed = time.perf_counter() - t_start
    m = main["metrics"]
    metrics = dict(m)
    for k in (
        "hozo_violations",
        "qzo_violations",
        "hozo_stable_points",
        "qzo_stable_points",
        "mezo_stable_points",
        "hozo_minus_qzo_stable_points",
        "hozo_loss_ratio",
        "hozo_test_loss",
        "best_zo_test_loss",
        "adam_test_loss",
        "init_test_loss",
        "adam_recovery",
        "best_zo_recovery",
    ):
        metrics[f"abs_{k}"] = other["metrics"][k]
    notes = [
        *main["notes"],
        "Other reading of the initialisation (absolute log-uniform scales in 1e-3..1, not factors of the RTN "
        f"scales), same bounds on this seed: {other['verdict']} (HoZO DDC reading: {other['ddc_verdict']}). "
        + other["line"],
        *[f"(absolute init) {n}" for n in other["tune_notes"]],
        f"Wall time of this seed: {elapsed:.0f} s.",
    ]
    table = main["table"] + [dict(r, method=f"(absolute init) {r['method']}") for r in other["table"]]
    tuned = main["tuned"] + [dict(r, method=f"(absolute init) {r['method']}") for r in other["tuned"]]
    return Outcome(
        metrics=metrics, table=table, figures=main["figures"], summary=main["line"], notes=notes, tuned=tuned
    )


def _verdict(viol: float, range_diff: float, loss_ratio: float) -> str:
    """The claim's rule applied to one seed's numbers (for the readings the verdict does not use)."""
    if viol <= 0 and range_diff >= 2 and loss_ratio <= 1.10:
        return "reproduced"
    if viol <= 0 and range_diff >= 0:
        return "partial"
    return "not reproduced"


def _study(problem: Any, cfg: dict[str, Any], seed: int, *, replicate: bool) -> dict[str, Any]:
    """Tune every method equally, sweep each tuned learning rate x{1,3,10,30}, and measure."""
    from geode.optim.hozo.experiment import probe_directional_derivative, train_scales

    ref = problem.reference
    zo_seed, replicate_seed = 1000 + seed, 2000 + seed
    cache: dict[tuple[Any, ...], Any] = {}

    def train(method: str, params: dict[str, Any], zs: int = zo_seed) -> Any:
        k = _key(method, params, zs)
        if k not in cache:
            full = params if method == "adam" else dict(params, eps=EPS)
            cache[k] = train_scales(problem, method, full, seed=zs, diverge_factor=DIVERGE_FACTOR)
        return cache[k]

    # DDC thresholds: {1, 10} x the median |d| each method sees at the initial scales (lr = 0)
    d_med = {
        m: probe_directional_derivative(problem, m, eps=EPS, steps=PROBE_STEPS, seed=zo_seed)
        for m in ("qzo", "hozo_ddc")
    }
    grids = {m: dict(g) for m, g in cfg["grids"].items()}
    for m in ("qzo", "hozo_ddc"):
        grids[m]["clip"] = [c * d_med[m] for c in grids[m]["clip"]]

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        r = train(method, params)
        return (r.val_loss if math.isfinite(r.val_loss) else math.inf), r

    res = tune(fit, grids, maximize=False, extend=cfg["extend"])
    best = {m: res.payload(m) for m in grids}
    sweeps: dict[str, list[Any]] = {}
    for m in grids:
        p = res.params(m)
        sweeps[m] = [train(m, dict(p, lr=p["lr"] * k)) for k in SWEEP]
    rep: list[Any] = []
    if replicate:
        p_qzo = res.params("qzo")
        rep = [train("qzo", dict(p_qzo, lr=p_qzo["lr"] * k), zs=replicate_seed) for k in SWEEP]

    stable = {m: sum(not r.diverged for r in rs) for m, rs in sweeps.items()}
    stable_rep = sum(not r.diverged for r in rep)
    test = {m: best[m].test_loss for m in grids}
    best_zo = min(test["mezo"], test["qzo"])
    best_zo_name = "mezo" if test["mezo"] <= test["qzo"] else "qzo"
    rec = {m: _recovery(test[m], ref["init_test"], ref["rtn_test"]) for m in grids}
    all_viol = {m: sum(r.violations for r in rs) for m, rs in sweeps.items()}

    def ratio(a: float, b: float) -> float:
        return _finite(a / b) if b > 0 and math.isfinite(b) else 1e6

    metrics = {
        "hozo_violations": float(best["hozo"].violations),
        "qzo_violations": float(best["qzo"].violations),
        "mezo_violations": float(best["mezo"].violations),
        "adam_violations": float(best["adam"].violations),
        "hozo_ddc_violations": float(best["hozo_ddc"].violations),
        "hozo_violations_all_sweep": float(all_viol["hozo"]),
        "qzo_violations_all_sweep": float(all_viol["qzo"]),
        **{f"{m}_stable_points": float(stable[m]) for m in grids},
        "hozo_minus_qzo_stable_points": float(stable["hozo"] - stable["qzo"]),
        "hozo_ddc_minus_qzo_stable_points": float(stable["hozo_ddc"] - stable["qzo"]),
        "mezo_minus_qzo_stable_points": float(stable["mezo"] - stable["qzo"]),
        **{f"{m}_test_loss": _finite(test[m]) for m in grids},
        "best_zo_test_loss": _finite(best_zo),
        "hozo_loss_ratio": ratio(test["hozo"], best_zo),
        "hozo_ddc_loss_ratio": ratio(test["hozo_ddc"], best_zo),
        "hozo_vs_adam_loss_ratio": ratio(test["hozo"], test["adam"]),
        "untrained_loss_ratio": ratio(ref["init_test"], best_zo),
        "init_test_loss": _finite(ref["init_test"]),
        "rtn_test_loss": ref["rtn_test"],
        "float_test_loss": ref["float_test"],
        **{f"{m}_recovery": rec[m] for m in grids},
        "best_zo_recovery": max(rec["mezo"], rec["qzo"]),
        "tuned_diverged_fraction": float(np.mean([best[m].diverged for m in ("adam", "mezo", "qzo", "hozo")])),
        "hozo_state_bytes": float(best["hozo"].state_bytes),
        "mezo_state_bytes": float(best["mezo"].state_bytes),
        "qzo_state_bytes": float(best["qzo"].state_bytes),
        "adam_state_bytes": float(best["adam"].state_bytes),
        "scale_parameter_bytes": float(sum(s.numel() * s.element_size() for s in problem.init_scales)),
        "n_scales": float(sum(s.numel() for s in problem.init_scales)),
        "qzo_clip_dmed": d_med["qzo"],
        "hozo_ddc_clip_dmed": d_med["hozo_ddc"],
    }
    if replicate:
        metrics["qzo_replicate_stable_points"] = float(stable_rep)
        metrics["qzo_replicate_minus_qzo_stable_points"] = float(stable_rep - stable["qzo"])

    def row(name: str, k: float, r: Any) -> dict[str, Any]:
        return {
            "method": name,
            "lr multiple": k,
            "lr": r.params["lr"],
            "clip": r.params.get("clip", ""),
            "val loss": _finite(r.val_loss),
            "test loss": _finite(r.test_loss),
            "diverged": r.diverged,
            "violations (perturb/update)": f"{r.perturb_violations}/{r.update_violations}",
            "steps done": r.steps_done,
            "min scale": r.min_scale,
            "state bytes": r.state_bytes,
        }

    table = [row(_NAMES[m], k, r) for m in grids for k, r in zip(SWEEP, sweeps[m])]
    table += [row("QZO (replicate seeds, control)", k, r) for k, r in zip(SWEEP, rep)]
    verdict = _verdict(metrics["hozo_violations"], metrics["hozo_minus_qzo_stable_points"], metrics["hozo_loss_ratio"])
    ddc_verdict = _verdict(
        metrics["hozo_ddc_violations"], metrics["hozo_ddc_minus_qzo_stable_points"], metrics["hozo_ddc_loss_ratio"]
    )
    line = (
        f"stable points HoZO {stable['hozo']} vs QZO {stable['qzo']} (MeZO {stable['mezo']}); violations at the "
        f"tuned lr HoZO {best['hozo'].violations}, QZO {best['qzo'].violations}; test loss HoZO {test['hozo']:.3f} "
        f"vs best ZO {best_zo:.3f} (ratio {metrics['hozo_loss_ratio']:.2f}), Adam {test['adam']:.3f}"
    )
    stable_line = ", ".join(f"{_NAMES[m]} {stable[m]}" for m in grids)
    notes = [
        *res.notes(),
        f"Problem: int4 RTN per group, scales x log-uniform(1e-3, 1); loss at the start "
        f"{ref['init_test']:.3f}, RTN model {ref['rtn_test']:.3f}, float model {ref['float_test']:.3f} (test).",
        f"Zeroth-order eps = {EPS} for every method (absolute for MeZO/QZO, relative for HoZO); DDC thresholds "
        f"{{1, 10}} x median |d| at the start (QZO {d_med['qzo']:.3g}, HoZO+DDC {d_med['hozo_ddc']:.3g}).",
        f"Stable points of x{{1,3,10,30}}: {stable_line}" + (f", QZO replicate {stable_rep}." if replicate else "."),
        f"Second reading (HoZO + DDC), same bounds on this seed: {ddc_verdict}; the verdict uses plain HoZO "
        "(the abstract names no clipping).",
        f"Strongest reference: first-order Adam, test loss {test['adam']:.4f}; HoZO / Adam = "
        f"{metrics['hozo_vs_adam_loss_ratio']:.3g}. Best ZO baseline: {_NAMES[best_zo_name]} ({best_zo:.4f}).",
        f"Optimiser state: HoZO {best['hozo'].state_bytes} B, MeZO {best['mezo'].state_bytes} B, QZO "
        f"{best['qzo'].state_bytes} B, Adam {best['adam'].state_bytes} B for "
        f"{int(metrics['n_scales'])} scales ({int(metrics['scale_parameter_bytes'])} B).",
    ]
    return {
        "metrics": metrics,
        "table": table,
        "tuned": res.table(),
        "tune_notes": res.notes(),
        "notes": notes,
        "line": line,
        "verdict": verdict,
        "ddc_verdict": ddc_verdict,
        "figures": {"hozo_training": _figure(ref, best, sweeps)},
    }
