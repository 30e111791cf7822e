"""Claim check of ada: adversarial alignment of a flow base model to experimental observable distributions.

Thresholds (fixed by the issue, before any run): ``reproduced`` if per-observable W1 drops >= 5x vs the base
model (on every observable), the mode weight is within 0.05 of the truth and ADA beats moment matching on the
bimodal observable; ``partial`` if W1 drops >= 2x; else ``not reproduced``.

Set-up (per seed; the seed draws all samples and initialisations): a 2-D double well
:class:`~geode.generative.ada.toy.DoubleWell` (height 2). Simulator: symmetric, transverse stiffness 1 (left mode
weight 0.50). Hidden truth: tilt 0.4, stiffness 2 (left mode weight 0.667). The base model, a
:class:`~geode.generative.ada.alignment.RealNVP` (8 couplings, width 48), is fitted by maximum likelihood to
20k simulator samples. Experimental data: unpaired samples of o1 = x1 (bimodal) and o2 = |x - (-1, 0)| from the
truth (2000 per observable for training, 1000 for validation; a separate 4000 for the test W1). W1 is
``scipy.stats.wasserstein_distance`` between 10k model samples and the test samples, per observable.

Methods, all tuned with :func:`geode.claims.tune` on the same budget (2 configurations each, validation score
= sum of the observables' W1 against the validation samples): ADA (beta in {0.1, 0.3}), single-observable ADA
on o1 only (ablation, same grid), moment matching (fine-tune to the first two moments of each observable plus
beta KL, beta in {0.1, 0.3}), MaxEnt reweighting of 10k base samples on the same four moments (ridge in
{0, 0.01}; the strongest simple baseline: exact reweighting, no training noise). Generators: 400 steps, batch
512, Adam lr 2e-3 (discriminators 3e-3, one step per generator step).

Added before the first run (the issue names no floors or controls; the protocol needs them):

- *threshold forms*: "W1 drops >= 5x" is the minimum over observables of W1(base)/W1(ADA), every seed
  (``all``); mode weight error ``|P_ADA(x1<0) - P_true(x1<0)| <= 0.05`` every seed; "beats moment matching"
  is W1_o1(moment matching)/W1_o1(ADA) > 1 every seed.
- *negative controls*: ADA with shuffled discriminator labels (the discriminators learn nothing; same loop,
  same beta) for the W1 drops and for "beats moment matching" (W1_o1(MM)/W1_o1(control)); the base model's
  mode weight error for the mode-weight threshold.
- *validity floors*: the base model fits the simulator (max over observables of W1(base, simulator) <= 0.05),
  the simulation-to-experiment gap is resolved (min over observables of W1(simulator, truth) >= 3x that fit
  error), and the flow is invertible (max |f(f^-1(x)) - x| <= 1e-8 on 1000 samples).

Verdict (quick mode, 3 seeds, set-up unchanged after the first run): ``partial``; worst-observable W1 drops
4.62x, 3.83x, 6.81x, mode weight within 0.04, moment matching better than ADA on x1 (MM/ADA 0.44-0.73); numbers
in the package's docstring. Only a non-result change was made after the first seed (a ``no_grad`` around the
invertibility floor to silence a warning).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: ADA, moment matching. No idea ablation
or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(n_sim=2000, base_steps=60, steps=10, n_model=1000, layers=2, hidden=8),
    "quick": dict(n_sim=20000, base_steps=1500, steps=400, n_model=10000, layers=8, hidden=48),
    "full": dict(n_sim=100000, base_steps=6000, steps=3000, n_model=50000, layers=12, hidden=128),
}
GRIDS = {
    "ADA": {"beta": [0.1, 0.3]},
    "ADA (o1 only)": {"beta": [0.1, 0.3]},
    "moment matching": {"beta": [0.1, 0.3]},
    "MaxEnt reweighting": {"ridge": [0.0, 0.01]},
}


@register(
    "ada",
    claim=(
        "Aligning a generative model pre-trained on simulation with per-observable discriminators and a KL "
        "regulariser recovers the experimental observable distributions, including correlated observables."
    ),
    paper_figure="synthetic, molecular and protein alignments; no toy numbers public (the notes expect >= 5x W1 drop)",
    baselines=("base model", "moment matching", "MaxEnt reweighting", "single-observable ADA"),
    thresholds=(
        Threshold(
            "w1_drop5",
            "w1_drop_min",
            ">=",
            5.0,
            "W1(base)/W1(ADA) >= 5 on every observable, every seed",
            agg="all",
            control="control_w1_drop_min",
            arms=("ADA", "base model"),
        ),
        Threshold(
            "mode_weight",
            "mode_weight_error",
            "<=",
            0.05,
            "|P_ADA(x1<0) - P_true(x1<0)| <= 0.05, every seed",
            agg="all",
            control="base_mode_weight_error",
            arms=("ADA",),
        ),
        Threshold(
            "beats_mm",
            "mm_over_ada_w1_x1",
            ">",
            1.0,
            "W1 on the bimodal observable: moment matching / ADA > 1, every seed",
            agg="all",
            control="mm_over_control_w1_x1",
            arms=("ADA", "moment matching"),
        ),
        Threshold(
            "w1_drop2",
            "w1_drop_min",
            ">=",
            2.0,
            "W1(base)/W1(ADA) >= 2 on every observable, every seed",
            agg="all",
            control="control_w1_drop_min",
            arms=("ADA", "base model"),
        ),
    ),
    floors=(
        Threshold(
            "base_fit", "base_fit_w1", "<=", 0.05, "floor: base model within W1 0.05 of the simulator", agg="all"
        ),
        Threshold(
            "gap_resolved", "gap_over_fit", ">=", 3.0, "floor: sim-to-truth gap >= 3x the base fit error", agg="all"
        ),
        Threshold("invertible", "inversion_error", "<=", 1e-8, "floor: flow round trip error <= 1e-8", agg="all"),
    ),
    reproduced="w1_drop5 and mode_weight and beats_mm",
    partial="w1_drop2",
    method="ADA",
    tuned=("ADA", "moment matching", "MaxEnt reweighting", "ADA (o1 only)"),
    untuned={"base model": "no hyper-parameter selected: the pre-trained flow every method starts from (ML fit)"},
    key_metric="w1_drop_min",
)
def run(mode: str, seed: int) -> Outcome:
    import torch
    from scipy.stats import wasserstein_distance as w1

    from geode.generative.ada import ADA, DoubleWell, MomentMatching, fit_flow, maxent_reweight, toy_observables

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    sim, truth = DoubleWell(), DoubleWell(tilt=0.4, stiffness=2.0)
    obs = toy_observables()
    names = list(obs)
    xs = sim.sample(cfg["n_sim"], rng)

    def ov(x: np.ndarray, k: str) -> np.ndarray:
        return obs[k](torch.as_tensor(x)).detach().numpy()

    exp_tr = {k: ov(truth.sample(2000, rng), k) for k in names}
    exp_va = {k: ov(truth.sample(1000, rng), k) for k in names}
    exp_te = {k: ov(truth.sample(4000, rng), k) for k in names}
    base = fit_flow(xs, steps=cfg["base_steps"], seed=seed, n_layers=cfg["layers"], hidden=cfg["hidden"])
    g = torch.Generator().manual_seed(seed + 1)
    xb = base.sample(cfg["n_model"], g)
    with torch.no_grad():
        inv = float((base(base.inverse(xb)[0])[0] - xb).abs().max())
    xb = xb.numpy()

    def scores(x: np.ndarray, ref: dict, w: np.ndarray | None = None) -> dict[str, float]:
        return {k: float(w1(ov(x, k), ref[k], u_weights=w)) for k in names}

    def left(x: np.ndarray, w: np.ndarray | None = None) -> float:
        return float(np.average(x[:, 0] < 0, weights=w))

    feats = np.stack([f for k in names for f in (ov(xb, k), ov(xb, k) ** 2)], 1)
    targets = np.array([f for k in names for f in (exp_tr[k].mean(), (exp_tr[k] ** 2).mean())])

    def fit(method: str, p: dict[str, Any]) -> tuple[float, Any]:
        if method == "MaxEnt reweighting":
            w = maxent_reweight(feats, targets, ridge=p["ridge"])
            return sum(scores(xb, exp_va, w).values()), ("w", w)
        ob = {"x1": obs["x1"]} if method == "ADA (o1 only)" else obs
        cls = MomentMatching if method == "moment matching" else ADA
        gen = cls(base, ob, beta=p["beta"], lr=2e-3).fit({k: exp_tr[k] for k in ob}, steps=cfg["steps"], seed=seed)
        x = gen.sample(cfg["n_model"], torch.Generator().manual_seed(seed + 2)).numpy()
        return sum(scores(x, exp_va).values()), ("x", x)

    res = tune(fit, GRIDS, maximize=False)
    results: dict[str, dict[str, Any]] = {"base model": {"x": xb, "w": None}}
    for m in GRIDS:
        kind, val = res.payload(m)
        results[m] = {"x": xb, "w": val} if kind == "w" else {"x": val, "w": None}
    ctrl_beta = float(res.best["ADA"].params["beta"])  # the control runs at ADA's selected beta
    ctrl = ADA(base, obs, beta=ctrl_beta, lr=2e-3, shuffle_labels=True).fit(exp_tr, steps=cfg["steps"], seed=seed)
    results["control: ADA, shuffled labels"] = {
        "x": ctrl.sample(cfg["n_model"], torch.Generator().manual_seed(seed + 2)).numpy(),
        "w": None,
    }
    p_true = truth.left_weight()
    table, w1s, lefts = [], {}, {}
    for m, r in results.items():
        w1s[m] = scores(r["x"], exp_te, r["w"])
        lefts[m] = left(r["x"], r["w"])
        table.append(
            {"method": m, **{f"W1 {k}": v for k, v in w1s[m].items()}, "P(x1<0)": lefts[m], "truth P(x1<0)": p_true}
        )
    fit_err = max(w1(ov(xs, k), ov(xb, k)) for k in names)
    gap = min(w1(ov(xs, k), exp_te[k]) for k in names)

    def drop(m: str) -> float:
        return min(w1s["base model"][k] / w1s[m][k] for k in names)

    metrics = {
        "w1_drop_min": drop("ADA"),
        "control_w1_drop_min": drop("control: ADA, shuffled labels"),
        "mode_weight_error": abs(lefts["ADA"] - p_true),
        "base_mode_weight_error": abs(lefts["base model"] - p_true),
        "mm_over_ada_w1_x1": w1s["moment matching"]["x1"] / w1s["ADA"]["x1"],
        "mm_over_control_w1_x1": w1s["moment matching"]["x1"] / w1s["control: ADA, shuffled labels"]["x1"],
        "base_fit_w1": float(fit_err),
        "gap_over_fit": float(gap / fit_err),
        "inversion_error": inv,
        "drop_min_single_obs_ada": drop("ADA (o1 only)"),
        "drop_min_moment_matching": drop("moment matching"),
        "drop_min_maxent": drop("MaxEnt reweighting"),
        "mode_weight_error_maxent": abs(lefts["MaxEnt reweighting"] - p_true),
        "mode_weight_error_mm": abs(lefts["moment matching"] - p_true),
    }
    for m in results:
        for k in names:
            metrics[f"w1_{k}__{m.split(':')[0].replace(' ', '_')}"] = w1s[m][k]
    summary = (
        f"W1 drop vs base (worst observable): ADA {metrics['w1_drop_min']:.2f}x, "
        f"MaxEnt {metrics['drop_min_maxent']:.2f}x, moment matching {metrics['drop_min_moment_matching']:.2f}x, "
        f"shuffled control {metrics['control_w1_drop_min']:.2f}x; "
        f"P(x1<0) ADA {lefts['ADA']:.3f} vs truth {p_true:.3f} (base {lefts['base model']:.3f}); "
        f"MM/ADA W1 on x1 {metrics['mm_over_ada_w1_x1']:.2f}"
    )
    notes = [*res.notes(), f"Wall time of this seed: {time.perf_counter() - t0:.0f} s."]
    return Outcome(
        metrics={k: float(v) for k, v in metrics.items()}, table=table, summary=summary, notes=notes, tuned=res.table()
    )
