"""Claim check of negative weight drift and activation sparsity ("Bug or Feature²").

Thresholds (fixed by the issue, before any run): ``reproduced`` if the mean downstream weights drift
negative within 100 steps for ReLU, GELU and SiLU but not for tanh, in all seeds, AND accuracy on digits
stays within 2 points (of the ReLU network) up to 60% sparsity but drops by more than 5 points by 90%;
``partial`` if the drift result holds.

The set-up (written before the first run of this claim):

- *task*: scikit-learn's bundled digits (60/20/20 stratified splits drawn from the seed, standardised), an
  MLP 64-256-256-256-10 with torch's default initialisation, Adam on cross-entropy, batch 128;
- *drift* of a matrix: the change of its mean after 100 steps in units of its initial standard deviation,
  :math:`(\\overline{W(100)} - \\overline{W(0)}) / \\operatorname{std}(W(0))`; the *downstream drift* of a network is
  the average of that over every matrix consuming an activation (all but the first ``Linear``, each
  counted once). "Drifts negative" is read as a downstream drift <= -0.01 (1% of the initial weight
  scale), so that a drift of numerical-noise size counts as none; "not for tanh" as > -0.01;
- *sparsity study*: the same task with an MLP 64-128-128-10 whose activations are :class:`QuantileReLU` at
  target sparsity 0.3, 0.6, 0.7, 0.8, 0.9 (the authors' default mask mode), against the same MLP with ReLU
  (the named reference) and GELU (the strongest reasonable baseline, reported beside it);
- *equal tuning*: every network (each activation of the drift study, each sparsity level and both
  baselines of the sparsity study) gets the same learning-rate grid, selected on validation accuracy after
  the full training run (``tune``, one grid extension past an edge); the drift is measured in the first
  100 steps of the selected run.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: the drift thresholds hold in every seed (``all``, as the issue says); the accuracy
  thresholds in at least 2 of 3 seeds (``"2 of 3"``: a test split of 360 digits moves by ~1 point from
  seed to seed);
- *validity floors*: the ReLU reference reaches >= 90% test accuracy in every seed; QuantileReLU's
  measured test-time sparsity is within 0.02 of its target at 60% and 90% in every seed; no selected run
  diverged;
- *negative controls*: tanh's downstream drift for "ReLU/GELU/SiLU drift negative" (and ReLU's for "tanh
  does not"); the drop of an untrained network for "within 2 points up to 60%"; the drop of a second ReLU
  network (another initialisation, the noise floor of the accuracy difference) for "> 5 points by 90%".

Other readings, reported and not judged (inferred details that could decide the drift result; the
verdict uses the one above, closest to the issue's "mean downstream weights" and to a standard
classification set-up):

- *data*: the paper says the drift is "intrinsic to optimization rather than data", and the research
  notes' sanity check used random Gaussian inputs with random labels; the same networks (each activation
  at its tuned learning rate) are trained 100 steps on such data (``random_*``);
- *loss*: the paper claims MSE as well as cross-entropy; the same networks are trained 100 steps on
  digits with MSE to one-hot targets (``mse_*``);
- *which weights*: the output layer alone (``output_*``), beside the average over all downstream matrices.

Changed after the first quick run of seed 0 (not a threshold): the quick learning-rate grid was
``[3e-4, 1e-3, 3e-3]`` with one extension, and three sparsity levels were selected on the extended edge;
it is now ``[3e-4, 1e-3, 3e-3, 1e-2]`` with two extensions (protocol section 1). The MSE and
output-layer readings were added at the same time, after seeing that the hidden matrices drift positive
under cross-entropy; they do not enter the verdict.

Spike study, reported and not judged (the issue asks for it "as measured"): a char-level GPT
(:mod:`geode.analysis.weight_drift.spikes`; quick: 2 layers, d=64, 150 AdamW steps at one learning rate
3e-3 for every activation, not tuned) with ReLU, ReLU², clipped ReLU² (clip 50), GELU, GELU², clipped GELU²;
the largest MLP activation on held-out text and the validation loss (``spike_*``). At this scale the
squared activations stay far below the clip of 50, so the clipped and unclipped runs coincide.

Quick-mode verdict over 3 seeds (seeds 0-2, measured once with these thresholds): **not reproduced**,
the same in every seed (floors met: ReLU test accuracy 96.9/96.1/98.3%, QuantileReLU sparsity on target
to 1e-7, no selected run diverged; 55-60 CPU-seconds per seed with the spike study).

- drift (fails): the downstream drift after 100 steps is *positive* for ReLU in every seed (+0.078,
  +0.072, +0.083 initial-std units; GELU +0.078, +0.056, -0.019; SiLU +0.037, +0.024, -0.457), tanh
  +0.002, -0.002, +0.004. The two hidden matrices drift up and only the output layer drifts down
  (ReLU/GELU/SiLU at most -0.073, -0.083, -0.166 per seed; tanh +0.004, -0.007, +0.012): the
  output-layer-only reading holds in all seeds; the MSE reading holds in seed 2 only (ReLU +0.013,
  -0.009, -0.020); the random-data reading fails in all seeds (asymmetric maximum +0.087, +0.076, +0.034).
  The paper's statistic E[dL/dz | z > 0] at initialisation is ~1e-4 in magnitude with either sign, for
  ReLU as for tanh, at width 256 (the self-interaction term shrinks with width). The control of
  ``tanh_no_drift`` (ReLU's drift) passes that threshold because ReLU's drift is positive here, so that
  threshold does not discriminate in this run; ``drift_negative``'s control (tanh) fails it as it should.
- sparsity (half holds): accuracy within 2 points up to 60% (largest drop 1.1, -0.3, 1.1 points; the
  untrained control drops 85-91 points), but no cliff by 90%: the drop at 90% is 4.7, 0.6, 2.8 points
  (threshold > 5; the second-ReLU-init control 0.8, -0.6, 0.0). At 70% and 80% the drops are <= 2.2
  points. The strongest dense baseline (the better of ReLU and GELU) gives drops of 4.7, 1.4, 2.8 at 90%.
  ReLU's natural test-time sparsity after 300 steps is 0.27-0.32.
- spikes (reported): the largest MLP activation of the char GPT is 5.0/6.1/5.2 for ReLU and 5.3/6.7/4.9 for
  GELU against 37.0/46.1/39.6 for ReLU² and 34.9/47.4/40.0 for GELU² (a 7-8x amplification by squaring);
  no activation reaches the clip of 50, so the clipped variants are identical to the unclipped ones here.
  Validation loss: ReLU 2.447/2.447/2.453, GELU 2.442/2.432/2.448, ReLU² 2.423/2.429/2.430, GELU²
  2.425/2.427/2.430: the squared activations beat the plain ones by ~0.02 nats at this scale; GELU² is not
  better than ReLU².

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

DRIFT_STEPS = 100  # the "within 100 steps"
NEGATIVE = -0.01  # "drifts negative": downstream drift <= -1% of the initial weight std (set before the run)
ASYMMETRIC = ("relu", "gelu", "silu")
LEVELS = (0.3, 0.6, 0.7, 0.8, 0.9)
SPIKE_ACTS = ("relu", "relu2", "clipped_relu2", "gelu", "gelu2", "clipped_gelu2")
SPIKE_LR = 3e-3  # one AdamW learning rate for every activation of the (unjudged) spike study

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        drift=dict(hidden=(32, 32, 32), steps=110),
        sparse=dict(hidden=(32, 32), steps=60),
        lrs=[1e-3, 3e-3],
        extend=0,
        random_n=256,
        spikes=dict(d=32, n_layers=1, heads=4, seq=32, batch=8, steps=5),
    ),
    "quick": dict(
        drift=dict(hidden=(256, 256, 256), steps=300),
        sparse=dict(hidden=(128, 128), steps=300),
        lrs=[3e-4, 1e-3, 3e-3, 1e-2],
        extend=2,
        random_n=1024,
        spikes=dict(d=64, n_layers=2, heads=4, seq=64, batch=16, steps=150),
    ),
    # full: wider nets and longer training, written for a GPU machine (the same digits task)
    "full": dict(
        drift=dict(hidden=(1024, 1024, 1024), steps=2000),
        sparse=dict(hidden=(512, 512), steps=2000),
        lrs=[1e-4, 3e-4, 1e-3, 3e-3],
        extend=2,
        random_n=4096,
        spikes=dict(d=128, n_layers=4, heads=4, seq=128, batch=32, steps=600),
    ),
}


def _downstream(drift: dict[str, np.ndarray]) -> float:
    return float(np.mean([v[DRIFT_STEPS] for v in drift.values()]))


def _random_data(n: int, seed: int) -> Any:
    """Gaussian inputs with uniformly random labels (the research notes' sanity check)."""
    import torch

    from geode.analysis.weight_drift.experiment import DigitSplits

    g = torch.Generator().manual_seed(50_000 + seed)
    x = torch.randn(n, 64, generator=g)
    y = torch.randint(0, 10, (n,), generator=g)
    return DigitSplits(x, y, x[:64], y[:64], x[:64], y[:64])


def _side_drift(data: Any, activation: str, lr: float, hidden: tuple[int, ...], seed: int, loss: str) -> float:
    """Downstream drift after 100 Adam steps (a reading the verdict does not use)."""
    from geode.analysis.weight_drift.experiment import train_net

    r = train_net(
        data, activation, hidden=hidden, lr=lr, steps=DRIFT_STEPS, drift_steps=DRIFT_STEPS, seed=seed, loss=loss
    )
    return _downstream(r.drift)


@register(
    "weight-drift",
    claim=(
        "Standard losses with positively biased activations (ReLU, GELU, SiLU) drive the weights downstream "
        "of them negative early in training (not so with tanh); accuracy holds up to moderate activation "
        "sparsity and falls off a cliff beyond ~70%."
    ),
    paper_figure=(
        "negative drift across MLP/ResNet/ViT/GPT-nano; ReLU sparsity up to 90% in GPT-nano; accuracy cliff "
        "above ~70% sparsity over 79 configurations; clipped ReLU² beats ReLU², GELU² best on GPT-nano"
    ),
    baselines=("tanh (symmetric activation)", "ReLU MLP (dense reference)", "GELU MLP (strongest dense)"),
    thresholds=(
        Threshold(
            "drift_negative",
            "max_asymmetric_drift",
            "<=",
            NEGATIVE,
            "the downstream drift after 100 steps is <= -0.01 (initial std units) for each of ReLU, GELU, "
            "SiLU (their maximum), in every seed",
            agg="all",
            control="tanh_drift",
            arms=("(drift) relu", "(drift) gelu", "(drift) silu"),
        ),
        Threshold(
            "tanh_no_drift",
            "tanh_drift",
            ">",
            NEGATIVE,
            "tanh's downstream drift after 100 steps is > -0.01, in every seed",
            agg="all",
            control="relu_drift",
            arms="(drift) tanh",
        ),
        Threshold(
            "flat_to_60",
            "max_drop_to_60",
            "<=",
            2.0,
            "test accuracy of QuantileReLU at 30% and 60% sparsity within 2 points of ReLU's (2 of 3 seeds)",
            agg="2 of 3",
            control="untrained_drop",
            arms=("(sparsity) relu", "(sparsity) q30", "(sparsity) q60"),
        ),
        Threshold(
            "cliff_by_90",
            "drop_at_90",
            ">",
            5.0,
            "test accuracy at 90% sparsity more than 5 points below ReLU's (2 of 3 seeds)",
            agg="2 of 3",
            control="replicate_relu_drop",
            arms=("(sparsity) relu", "(sparsity) q90"),
        ),
    ),
    floors=(
        Threshold(
            "reference_learns",
            "relu_test_acc",
            ">=",
            0.90,
            "floor: the ReLU reference reaches >= 90% test accuracy on digits (every seed)",
            agg="all",
            arms="(sparsity) relu",
        ),
        Threshold(
            "sparsity_on_target",
            "max_sparsity_error",
            "<=",
            0.02,
            "floor: QuantileReLU's test-time sparsity within 0.02 of its target at 60% and 90% (every seed)",
            agg="all",
            arms=("(sparsity) q60", "(sparsity) q90"),
        ),
        Threshold(
            "none_diverged",
            "diverged_selected",
            "<=",
            0.0,
            "floor: no selected run diverged (every seed)",
            agg="all",
        ),
    ),
    reproduced="drift_negative and tanh_no_drift and flat_to_60 and cliff_by_90",
    partial="drift_negative and tanh_no_drift",
    key_metric="max_asymmetric_drift",
    method="law",
    tuned=(
        "(drift) relu",
        "(drift) gelu",
        "(drift) silu",
        "(drift) tanh",
        "(sparsity) relu",
        "(sparsity) gelu",
        "(sparsity) q30",
        "(sparsity) q60",
        "(sparsity) q90",
    ),
    untuned={"law": "the paper's law: a prediction measured on the trained arms, nothing to tune"},
)
def run(mode: str, seed: int) -> Outcome:
    from geode.analysis.weight_drift.experiment import digits_splits, train_net

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    data = digits_splits(seed)
    grid = {"lr": list(cfg["lrs"])}

    # 1. drift: each activation tuned on validation accuracy, drift read off the selected run
    def fit_drift(act: str, p: dict[str, Any]) -> tuple[float, Any]:
        r = train_net(data, act, lr=p["lr"], drift_steps=DRIFT_STEPS, seed=seed, **cfg["drift"])
        return r.val_acc, r

    acts = (*ASYMMETRIC, "tanh")
    res_d = tune(fit_drift, {a: grid for a in acts}, maximize=True, extend=cfg["extend"])
    best = {a: res_d.payload(a) for a in acts}
    drift = {a: _downstream(best[a].drift) for a in acts}
    rnd = _random_data(cfg["random_n"], seed)
    hid = cfg["drift"]["hidden"]
    random = {a: _side_drift(rnd, a, res_d.params(a)["lr"], hid, seed, "ce") for a in acts}
    mse = {a: _side_drift(data, a, res_d.params(a)["lr"], hid, seed, "mse") for a in acts}
    output = {a: float(list(best[a].drift.values())[-1][DRIFT_STEPS]) for a in acts}

    # 2. sparsity: QuantileReLU levels and the dense baselines, same grid
    methods = {"relu": ("relu", {}), "gelu": ("gelu", {})}
    methods |= {f"q{int(s * 100)}": ("quantile_relu", {"sparsity": s}) for s in LEVELS}

    def fit_sparse(name: str, p: dict[str, Any]) -> tuple[float, Any]:
        act, kw = methods[name]
        r = train_net(data, act, lr=p["lr"], drift_steps=0, seed=seed, **cfg["sparse"], **kw)
        return r.val_acc, r

    res_s = tune(fit_sparse, {m: grid for m in methods}, maximize=True, extend=cfg["extend"])
    sp = {m: res_s.payload(m) for m in methods}
    p_relu = res_s.params("relu")
    replicate = train_net(data, "relu", lr=p_relu["lr"], drift_steps=0, seed=seed + 7919, **cfg["sparse"])
    untrained = train_net(
        data, "relu", lr=p_relu["lr"], drift_steps=0, seed=seed, hidden=cfg["sparse"]["hidden"], steps=0
    )

    # 3. spike study (reported, not judged): one char-level GPT per MLP activation, same learning rate
    from geode.analysis.weight_drift.spikes import char_ids, train_char_gpt

    ids, vocab, text_source = char_ids()
    spikes = {a: train_char_gpt(ids, vocab, a, lr=SPIKE_LR, seed=seed, **cfg["spikes"]) for a in SPIKE_ACTS}

    acc = {m: 100.0 * r.test_acc for m, r in sp.items()}
    ref = acc["relu"]
    strongest = max(acc["relu"], acc["gelu"])
    drop = {m: ref - acc[m] for m in methods}
    sparsity_err = max(abs(float(np.mean(sp[f"q{int(s * 100)}"].sparsity)) - s) for s in (0.6, 0.9))
    diverged = float(sum(r.diverged for r in (*best.values(), *sp.values())))

    metrics: dict[str, float] = {
        **{f"{a}_drift": drift[a] for a in acts},
        "max_asymmetric_drift": max(drift[a] for a in ASYMMETRIC),
        **{f"random_{a}_drift": random[a] for a in acts},
        "random_max_asymmetric_drift": max(random[a] for a in ASYMMETRIC),
        **{f"mse_{a}_drift": mse[a] for a in acts},
        "mse_max_asymmetric_drift": max(mse[a] for a in ASYMMETRIC),
        **{f"output_{a}_drift": output[a] for a in acts},
        "output_max_asymmetric_drift": max(output[a] for a in ASYMMETRIC),
        **{f"{a}_{k}_drift": float(v[DRIFT_STEPS]) for a in acts for k, v in best[a].drift.items()},
        **{f"{a}_grad_stat_mean": float(np.nanmean(list(best[a].grad_stat.values()))) for a in acts},
        **{f"{a}_drift_test_acc": best[a].test_acc for a in acts},
        "relu_natural_sparsity": float(np.mean(best["relu"].sparsity)),
        **{f"{m}_test_acc_points": acc[m] for m in methods},
        "relu_test_acc": sp["relu"].test_acc,
        "max_drop_to_60": max(drop["q30"], drop["q60"]),
        "drop_at_70": drop["q70"],
        "drop_at_80": drop["q80"],
        "drop_at_90": drop["q90"],
        "strongest_drop_to_60": max(strongest - acc["q30"], strongest - acc["q60"]),
        "strongest_drop_at_90": strongest - acc["q90"],
        "untrained_drop": ref - 100.0 * untrained.test_acc,
        "replicate_relu_drop": ref - 100.0 * replicate.test_acc,
        "max_sparsity_error": sparsity_err,
        **{f"spike_{a}_max_abs": float(max(r["max_abs"])) for a, r in spikes.items()},
        **{f"spike_{a}_val_loss": float(r["val_loss"]) for a, r in spikes.items()},
        "diverged_selected": diverged,
    }

    def verdict(d: dict[str, float]) -> str:
        ok = max(d[a] for a in ASYMMETRIC) <= NEGATIVE and d["tanh"] > NEGATIVE
        return "holds" if ok else "fails"

    table = (
        [
            {
                "study": "drift",
                "network": a,
                "lr": res_d.params(a)["lr"],
                "val acc": best[a].val_acc,
                "test acc": best[a].test_acc,
                "downstream drift @100 (digits)": drift[a],
                **{f"{k} drift": float(v[DRIFT_STEPS]) for k, v in best[a].drift.items()},
                "downstream drift @100 (random data)": random[a],
                "downstream drift @100 (digits, MSE)": mse[a],
                "E[dL/dz|z>0] at init (mean over layers)": metrics[f"{a}_grad_stat_mean"],
                "test sparsity": float(np.mean(best[a].sparsity)),
            }
            for a in acts
        ]
        + [
            {
                "study": "sparsity",
                "network": m,
                "lr": res_s.params(m)["lr"],
                "val acc": sp[m].val_acc,
                "test acc": sp[m].test_acc,
                "drop vs ReLU (points)": drop[m],
                "test sparsity": float(np.mean(sp[m].sparsity)),
            }
            for m in methods
        ]
        + [
            {
                "study": "spikes",
                "network": f"char GPT, {a}",
                "lr": SPIKE_LR,
                "val loss": r["val_loss"],
                "max |a| per layer": ", ".join(f"{v:.1f}" for v in r["max_abs"]),
                "test sparsity": float(np.mean(r["sparsity"])),
            }
            for a, r in spikes.items()
        ]
    )
    summary = (
        f"downstream drift @100: ReLU {drift['relu']:+.3f}, GELU {drift['gelu']:+.3f}, SiLU {drift['silu']:+.3f}, "
        f"tanh {drift['tanh']:+.3f}; accuracy drop vs ReLU: <=60% {metrics['max_drop_to_60']:.1f} pts, "
        f"90% {drop['q90']:.1f} pts"
    )
    notes = [
        *[f"(drift study) {n}" for n in res_d.notes()],
        *[f"(sparsity study) {n}" for n in res_s.notes()],
        f"Digits drift reading: {verdict(drift)}; random-data reading (Gaussian inputs, random labels, same "
        f"tuned learning rates): {verdict(random)} (ReLU {random['relu']:+.3f}, GELU {random['gelu']:+.3f}, "
        f"SiLU {random['silu']:+.3f}, tanh {random['tanh']:+.3f}); MSE-to-one-hot reading (digits, same "
        f"learning rates): {verdict(mse)} (ReLU {mse['relu']:+.3f}, GELU {mse['gelu']:+.3f}, SiLU "
        f"{mse['silu']:+.3f}, tanh {mse['tanh']:+.3f}); output-layer-only reading (digits, CE): {verdict(output)} "
        f"(ReLU {output['relu']:+.3f}, GELU {output['gelu']:+.3f}, SiLU {output['silu']:+.3f}, tanh "
        f"{output['tanh']:+.3f}). The verdict uses digits, cross-entropy, all downstream matrices.",
        "Per-matrix drift of the tuned runs (W2, W3 hidden; last is the output layer): "
        + "; ".join(
            f"{a}: " + ", ".join(f"{k} {float(v[DRIFT_STEPS]):+.3f}" for k, v in best[a].drift.items()) for a in acts
        ),
        f"Natural ReLU sparsity at test time after training: {metrics['relu_natural_sparsity']:.2f}.",
        f"Accuracy (points): ReLU {ref:.1f}, GELU {acc['gelu']:.1f}, "
        + ", ".join(f"{int(s * 100)}% {acc[f'q{int(s * 100)}']:.1f}" for s in LEVELS)
        + f"; untrained {100 * untrained.test_acc:.1f}, second ReLU init {100 * replicate.test_acc:.1f}.",
        f"Strongest dense baseline ({'GELU' if acc['gelu'] > ref else 'ReLU'}, {strongest:.1f}): drop to 60% "
        f"{metrics['strongest_drop_to_60']:.1f} pts, at 90% {metrics['strongest_drop_at_90']:.1f} pts.",
        f"Spike study (char-level GPT on {text_source}, {cfg['spikes']}, AdamW lr {SPIKE_LR}; reported, not "
        "judged): "
        + "; ".join(f"{a} val loss {r['val_loss']:.3f}, max |a| {max(r['max_abs']):.1f}" for a, r in spikes.items())
        + ".",
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    return Outcome(
        metrics={k: (v if math.isfinite(v) else 1e6) for k, v in metrics.items()},
        table=table,
        summary=summary,
        notes=notes,
        tuned=[dict(r, method=f"(drift) {r['method']}") for r in res_d.table()]
        + [dict(r, method=f"(sparsity) {r['method']}") for r in res_s.table()],
    )
