"""Claim check of BVPO: mixing in the empty-trace branch contracts gradient variance and improves alignment.

Thresholds (fixed by the issue, before any run): ``reproduced`` if the measured total gradient variance
decreases monotonically as the mixture moves toward the empty-trace branch (alpha = 1, .75, .5, .25, 0) AND
BVPO at the MSE-optimal weight beats both extremes (alpha = 1: trace-based DPO, alpha = 0: empty-trace DPO) on
held-out preference accuracy with answer accuracy within 2 points of the base; ``partial`` if the variance
result holds.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: each threshold must hold in every seed (``all``);
- *validity floors*: the base model answers (greedy answer accuracy with reasoning on >= 0.9, every seed);
  the pipeline learns the preference (the best method's held-out preference accuracy gain over the base
  >= 5 points, mean over seeds); the task leaves room to beat the extremes (the better extreme's
  preference accuracy <= 0.97, mean over seeds);
- *negative controls*: the variance threshold is also applied to a mixture of two independent trace-based
  branches (the ablation without the empty trace: its variance ``(a^2 + (1-a)^2) V`` is smallest at
  a = 0.5, not monotone); the "beats both extremes" threshold to the same mixture of two trace branches at
  BVPO's weight (the same forward passes per step as BVPO: the compute-matched trace-based DPO, also the
  strongest baseline); the "answers kept" threshold to BVPO trained at 10x its selected learning rate
  (over-optimisation, which must show as lost answers).

Equal tuning: every method (alpha = 1, 0, 0.5, alpha*, and the two-trace mixture) tunes the learning rate
over the same grid on the validation split's preference accuracy (the alignment objective; the answers are
measured, not selected on). Test prompts are used once.

Set-up changes before the final run (thresholds untouched; both earlier runs stopped on a failed floor):

1. first run (base trained 1500 steps at a constant learning rate): seed 0 ``inconclusive``, floor
   ``base_answers`` failed (answer accuracy 0.861). The base now trains 2000 steps with the learning rate
   decayed linearly to 0 (answer accuracy 0.99-1.0 for seeds 0-2 in a check of the base alone).
2. second run (2500 constant-rate steps; the learning rate selected on preference accuracy minus 10 x the
   answer drop beyond 2 points, the issue's answer constraint applied to the selection): seed 0
   ``inconclusive``, floor ``pipeline_learns`` failed: every method selected the smallest learning rate and
   the best preference gain was 1.8 points (base answers 0.746). On this model no learning rate moved the
   preference without moving the answers, so the constraint left nothing to compare; the selection is now
   on preference accuracy alone, and the answers are judged by the ``answers_kept`` threshold as the issue
   states.

Set-up (inferred; the paper works with 7-8B reasoning models on UltraFeedback): a tiny Llama (2 layers,
d=64) pretrained on ``a+b+c`` with a think trace (the partial sum of a random pair, 70% of sequences) or the
empty trace, and a random sign-off token; the preference is a prompt-dependent sign-off (EOS for an even
total, SUB for odd), both answers carrying the correct digits; DPO with beta = 1 (beta = 0.1 moved the
tiny model's answers far before the preference in the prototype), AdamW, 60 steps of 8 pairs per branch.
alpha* is estimated at the base model in the paper's fixed-prompt, fixed-answer view
(:func:`mse_optimal_alpha` over 16 trace resamples, averaged over 4 batches).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: bvpo, trace, empty. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        model=dict(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=64, max_positions=16),
        pretrain=dict(steps=30, batch_size=32),
        n_val=32,
        n_test=32,
        n_traces=2,
        dpo=dict(steps=3, batch=4),
        lrs=[1e-4, 4e-4],
        extend=0,
        var=dict(draws=4, n=4),
        astar=dict(draws=3, batches=1),
    ),
    "quick": dict(
        model=dict(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128, max_positions=16),
        pretrain=dict(steps=2000, batch_size=64),
        n_val=256,
        n_test=512,
        n_traces=8,
        dpo=dict(steps=60, batch=8),
        lrs=[1e-4, 3e-4, 1e-3],
        extend=1,
        var=dict(draws=24, n=8),
        astar=dict(draws=16, batches=4),
    ),
    # full: a wider tiny Llama, longer training and more draws (written for a GPU machine)
    "full": dict(
        model=dict(d_model=256, n_layers=4, n_heads=4, n_kv_heads=2, max_positions=16),
        pretrain=dict(steps=6000, batch_size=128),
        n_val=1024,
        n_test=4096,
        n_traces=16,
        dpo=dict(steps=200, batch=32),
        lrs=[3e-5, 6e-5, 1.2e-4, 2.4e-4],
        extend=2,
        var=dict(draws=64, n=32),
        astar=dict(draws=64, batches=8),
    ),
}

BETA = 1.0
ALPHAS = (1.0, 0.75, 0.5, 0.25, 0.0)
METHODS = ("trace", "empty", "half", "bvpo", "tracemix")
_NAMES = {
    "trace": "trace-based DPO (alpha=1)",
    "empty": "empty-trace DPO (alpha=0)",
    "half": "fixed mixture alpha=0.5",
    "bvpo": "BVPO (alpha=alpha*)",
    "tracemix": "two trace branches at alpha* (control, compute-matched DPO)",
}


def _step_log_ratios(grads: dict[str, Any], other: str) -> list[float]:
    from geode.llm.bvpo.experiment import total_variance

    v = [total_variance(grads["trace"], grads[other], a) for a in ALPHAS]
    return [float(np.log(v[i] / v[i + 1])) for i in range(len(v) - 1)], v


@register(
    "bvpo",
    claim=(
        "Mixing the trace-based DPO gradient with an empty-trace branch (BVPO) contracts the gradient variance "
        "from trace sampling, and at the MSE-optimal weight improves alignment over both pure estimators "
        "without hurting reasoning."
    ),
    paper_figure=(
        "+7.8 AlpacaEval 2 and +6.8 Arena-Hard over the best baseline; up to +4.0 average on six math benchmarks; "
        "lower total gradient variance during training"
    ),
    baselines=("trace-based DPO (alpha=1)", "empty-trace DPO (alpha=0)", "compute-matched trace-based DPO"),
    thresholds=(
        Threshold(
            "variance_monotone",
            "var_min_step_log_ratio",
            ">",
            0.0,
            "total gradient variance strictly decreases at every step alpha = 1, .75, .5, .25, 0, at the base model "
            "and at the BVPO-trained model (every seed)",
            agg="all",
            control="control_var_min_step_log_ratio",
            arms=("bvpo",),
        ),
        Threshold(
            "beats_extremes",
            "bvpo_minus_best_extreme_pts",
            ">",
            0.0,
            "BVPO's held-out preference accuracy beats both alpha = 1 and alpha = 0 (every seed)",
            agg="all",
            control="tracemix_minus_best_extreme_pts",
        ),
        Threshold(
            "answers_kept",
            "bvpo_answer_drop_pts",
            "<=",
            2.0,
            "BVPO's answer accuracy (reasoning on) is within 2 points of the base (every seed)",
            agg="all",
            control="overtrained_answer_drop_pts",
            arms=("bvpo",),
        ),
    ),
    floors=(
        Threshold(
            "base_answers",
            "base_answer_acc",
            ">=",
            0.9,
            "floor: the base model's greedy answer accuracy with reasoning on is >= 0.9 (every seed)",
            agg="all",
        ),
        Threshold(
            "pipeline_learns",
            "best_pref_gain_pts",
            ">=",
            5.0,
            "floor: the best method raises held-out preference accuracy by >= 5 points over the base (mean)",
        ),
        Threshold(
            "room_to_beat",
            "best_extreme_pref_acc",
            "<=",
            0.97,
            "floor: the better extreme's preference accuracy is <= 0.97 (mean), so it can be beaten",
            arms=("trace", "empty"),
        ),
    ),
    reproduced="variance_monotone and beats_extremes and answers_kept",
    partial="variance_monotone",
    method="bvpo",
    tuned=("bvpo", "trace", "empty"),
    key_metric="bvpo_minus_best_extreme_pts",
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.llm.bvpo.experiment import (
        VOCAB,
        answer_accuracy,
        gradient_draws,
        preference_accuracy,
        preference_batches,
        pretrain_base,
        sample_prompts,
        trace_noise_draws,
    )
    from geode.llm.bvpo.loss import mse_optimal_alpha
    from geode.llm.bvpo.trainer import BVPOTrainer
    from geode.models import build_tiny_lm

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    base = build_tiny_lm(VOCAB, seed=seed, **cfg["model"])
    pretrain_base(base, seed=seed, **cfg["pretrain"])
    base.eval()
    for p in base.parameters():
        p.requires_grad_(False)
    vp, vc = sample_prompts(cfg["n_val"], 10_000 + seed)
    tp, tc = sample_prompts(cfg["n_test"], 20_000 + seed)
    nt = cfg["n_traces"]

    def pref(model: Any, split: str) -> float:
        g = torch.Generator().manual_seed(seed * 100 + (1 if split == "val" else 2))
        p, c = (vp, vc) if split == "val" else (tp, tc)
        return preference_accuracy(model, p, c, n_traces=nt, gen=g)

    base_ans = answer_accuracy(base, tp, tc)
    base_ans_off = answer_accuracy(base, tp, tc, reasoning=False)
    base_pref = pref(base, "test")

    # ---- alpha*: the conditional MSE-optimal weight at the base model (fixed prompts and answers) ----
    a_cfg, d_cfg = cfg["astar"], cfg["dpo"]
    was = []
    for b in range(a_cfg["batches"]):
        g_t, g_e = trace_noise_draws(
            _trainable(base), base, n=d_cfg["batch"], draws=a_cfg["draws"], beta=BETA, seed=40_000 + 10 * seed + b
        )
        was.append(mse_optimal_alpha(g_t, g_e)[1])
    v_trace = float(np.mean([w["variance"] for w in was]))
    bias_sq = float(np.mean([w["bias_sq"] for w in was]))
    alpha_star = bias_sq / (bias_sq + v_trace) if bias_sq + v_trace > 0 else 1.0
    weights = {"trace": 1.0, "empty": 0.0, "half": 0.5, "bvpo": alpha_star, "tracemix": alpha_star}

    # ---- DPO runs: every method tunes the learning rate on validation, the same grid and budget ----
    runs: dict[tuple[str, float], Any] = {}

    def train(kind: str, lr: float) -> Any:
        policy = _trainable(copy.deepcopy(base))
        a = weights[kind]
        trainer = BVPOTrainer(policy, base, alpha=a, beta=BETA, lr=lr)
        rng = np.random.default_rng(30_000 + seed)  # the same prompt stream for every method
        gen = torch.Generator().manual_seed(seed * 7 + 3)
        losses = []
        for _ in range(d_cfg["steps"]):
            tb = preference_batches(policy, d_cfg["batch"], rng, gen, trace=True) if a > 0 else None
            # the second branch: empty traces (BVPO), or a second trace branch (the control)
            second = kind != "tracemix"
            eb = preference_batches(policy, d_cfg["batch"], rng, gen, trace=not second) if a < 1 else None
            losses.append(trainer.step(tb, eb))
        policy.eval()
        return policy, losses

    def fit(kind: str, params: dict[str, Any]) -> tuple[float, Any]:
        key = (kind, params["lr"])
        if key not in runs:
            policy, losses = train(kind, params["lr"])
            if not np.all(np.isfinite(losses)):
                runs[key] = (float("nan"), (policy, losses))
            else:
                runs[key] = (pref(policy, "val"), (policy, losses))
        return runs[key]

    res = tune(fit, {k: {"lr": cfg["lrs"]} for k in METHODS}, extend=cfg["extend"])
    pref_test, ans_test = {}, {}
    for k in METHODS:
        policy, _ = res.payload(k)
        pref_test[k] = pref(policy, "test")
        ans_test[k] = answer_accuracy(policy, tp, tc)
    lr_b = res.params("bvpo")["lr"]
    over, _ = train("bvpo", 10 * lr_b)
    over_ans = answer_accuracy(over, tp, tc)
    collapsed = sum(not np.isfinite(v[0]) for v in runs.values())

    # ---- total gradient variance over fresh draws, at the base and at the BVPO-trained model ----
    v_cfg = cfg["var"]
    steps, csteps, curves = [], [], {}
    for name, model in (("base", base), ("trained", res.payload("bvpo")[0])):
        grads = gradient_draws(
            _trainable(model), base, n=v_cfg["n"], draws=v_cfg["draws"], beta=BETA, seed=50_000 + seed
        )
        s, v = _step_log_ratios(grads, "empty")
        cs, cv = _step_log_ratios(grads, "trace2")
        steps += s
        csteps += cs
        curves[name] = (v, cv)
    elapsed = time.perf_counter() - t0

    pts = 100.0
    best_extreme = max(pref_test["trace"], pref_test["empty"])
    metrics = {
        "base_answer_acc": base_ans,
        "base_answer_acc_no_reasoning": base_ans_off,
        "base_pref_acc": base_pref,
        "alpha_star": alpha_star,
        "trace_noise_variance": v_trace,
        "empty_bias_sq": bias_sq,
        **{f"{k}_pref_acc": pref_test[k] for k in METHODS},
        **{f"{k}_answer_acc": ans_test[k] for k in METHODS},
        "best_extreme_pref_acc": best_extreme,
        "bvpo_minus_best_extreme_pts": pts * (pref_test["bvpo"] - best_extreme),
        "tracemix_minus_best_extreme_pts": pts * (pref_test["tracemix"] - best_extreme),
        "half_minus_best_extreme_pts": pts * (pref_test["half"] - best_extreme),
        "best_pref_gain_pts": pts * (max(pref_test.values()) - base_pref),
        "bvpo_answer_drop_pts": pts * (base_ans - ans_test["bvpo"]),
        "overtrained_answer_drop_pts": pts * (base_ans - over_ans),
        "var_min_step_log_ratio": min(steps),
        "control_var_min_step_log_ratio": min(csteps),
        **{f"var_{n}_alpha{a:g}": v for n, (vv, _) in curves.items() for a, v in zip(ALPHAS, vv)},
        "dpo_collapsed_runs": float(collapsed),
    }
    table = [
        {"method": "base model", "alpha": "", "pref acc (test)": base_pref, "answer acc (test)": base_ans, "lr": ""}
    ]
    table += [
        {
            "method": _NAMES[k],
            "alpha": f"{weights[k]:.3f}",
            "pref acc (test)": pref_test[k],
            "answer acc (test)": ans_test[k],
            "lr": f"{res.params(k)['lr']:g}",
        }
        for k in METHODS
    ]
    table += [
        {
            "method": f"total grad. variance at the {n} model",
            "alpha": "1 / .75 / .5 / .25 / 0",
            "pref acc (test)": " / ".join(f"{x:.3g}" for x in v),
            "answer acc (test)": "control: " + " / ".join(f"{x:.3g}" for x in cv),
            "lr": "",
        }
        for n, (v, cv) in curves.items()
    ]
    summary = (
        f"alpha*={alpha_star:.3f}; test preference accuracy: base {base_pref:.3f}, alpha=1 {pref_test['trace']:.3f}, "
        f"alpha=0 {pref_test['empty']:.3f}, BVPO {pref_test['bvpo']:.3f}, two-trace control "
        f"{pref_test['tracemix']:.3f}; BVPO answer drop {metrics['bvpo_answer_drop_pts']:.1f} pts; variance "
        f"min step log-ratio {min(steps):.3f} (control {min(csteps):.3f})"
    )
    notes = [
        *res.notes(),
        f"Base model: answer accuracy {base_ans:.3f} with reasoning, {base_ans_off:.3f} without; preference "
        f"accuracy {base_pref:.3f}.",
        f"alpha* = |b|^2 / (|b|^2 + V) = {bias_sq:.3g} / ({bias_sq:.3g} + {v_trace:.3g}) = {alpha_star:.3f} at the "
        "base model (fixed prompts and answers, trace resampling).",
        f"Strongest baseline: compute-matched trace-based DPO (two trace branches at alpha*): preference "
        f"{pref_test['tracemix']:.3f}, BVPO minus it {pts * (pref_test['bvpo'] - pref_test['tracemix']):+.1f} pts.",
        f"Over-optimisation control (BVPO at 10x lr = {10 * lr_b:g}): answer accuracy {over_ans:.3f}.",
        f"Collapsed DPO runs: {collapsed} of {len(runs)}. Wall time of this seed: {elapsed:.0f} s.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"variance": _figure(curves)},
        summary=summary,
        notes=notes,
        tuned=res.table(),
    )


def _trainable(model: Any) -> Any:
    for p in model.parameters():
        p.requires_grad_(True)
    return model


def _figure(curves: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for i, (name, (v, cv)) in enumerate(curves.items()):
        ax.plot(ALPHAS, v, "o-", color=f"C{i}", label=f"trace + empty ({name})")
        ax.plot(ALPHAS, cv, "s:", color=f"C{i}", label=f"trace + trace, control ({name})")
    ax.set_xlabel("alpha (weight of the trace-based branch)")
    ax.set_ylabel("total gradient variance")
    ax.set_yscale("log")
    ax.invert_xaxis()
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
