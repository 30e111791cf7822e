"""Claim check of RISE: geometry regularisers improve global accuracy and collapse resistance under label skew.

Revision 1 (protocol v2 from the start, issue 29). Set-up (:mod:`geode.federated.rise.experiment`): digits,
an MLP 64-64-32-10 pre-trained on a balanced public 5 % of the training split, then 15 FedAvg-style rounds
over 10 clients with Dirichlet(0.05) label skew (all clients each round, 3 local epochs of SGD); one data
seed (split, pre-training, partition) per harness seed. Thresholds from the issue, fixed before any run:

- ``beats_best_1pt``: RISE's test accuracy beats the best tuned baseline (FedAvg with a server step,
  FedProx, ProtoKD, FedDecorr; per seed the strongest) by >= 1 point, one-sided 95 % bound over seeds;
- ``higher_erank``: RISE's penultimate-feature effective rank exceeds that of the best baseline (bound95);
- ``blsc_ablation_loses`` / ``mrga_ablation_loses``: dropping either regulariser (at RISE's selection) costs
  accuracy (> 0 points, bound95);
- ``beats_fedavg_1pt`` (partial): RISE beats tuned FedAvg by >= 1 point (bound95).

Floors and controls we added (the issue names none): the pre-trained model reaches >= 0.5 test accuracy
and tuned FedAvg >= 0.5 (the task is learned), RISE >= 0.5 (no collapse). Negative controls: the selected
FedAvg re-run with another simulator seed (other local shuffles) against the best baseline / against
FedAvg, for the accuracy and rank thresholds; the selected RISE re-run the same way against RISE, for the
ablation thresholds. Each control must fail its threshold. Equal tuning: 3 grid points per method + 1
past an edge, validation accuracy. Dir(0.5) runs in ``full`` mode only (quick-mode CPU budget).

Measured (quick, 3 seeds, ``geode reproduce rise --mode quick --seeds 3``; 31-34 CPU-s per seed): **not
reproduced**, and not partial. RISE's test accuracy is below the best tuned baseline (tuned FedAvg in every
seed) by 3.1, 3.9, 5.0 points (mean -4.0, bound95 -5.6; needs >= +1); its feature effective rank is lower
(-0.09, -0.15, -0.09; bound -0.17; needs > 0); dropping BLSC *raises* accuracy (+3.1, +1.4, +1.4 points,
i.e. ablation loss mean -1.9, bound -3.6) and dropping MRGA changes little (0, -0.3, -0.3). Accuracies:
pre-trained 0.86/0.80/0.79, tuned FedAvg 0.84/0.89/0.88, RISE 0.81/0.86/0.83. Floors pass in every seed.
Controls discriminate: FedAvg re-run vs best baseline +0.6, -0.6, +0.3 points (bound -0.9 < 1), its effective
rank +0.04, -0.02, -0.01 (bound -0.05, not > 0); RISE re-run vs RISE +2.8, -0.6, -2.2 points (bound -4.3, not
> 0) -- a 3-point seed-to-seed spread of one configuration, so the ablation thresholds need more seeds to
resolve small effects. Every selection of RISE sat at the smallest weight of its grid (0.3 for both
losses; the one-step extension lowered only lambda_b): on this task the regularisers, as reconstructed,
act as a handicap rather than a prior. FedDecorr's beta and ProtoKD's lambda also went to small values.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read not reproduced on the same runs): unresolved: mrga_ablation_loses; not tuned by the protocol:
RISE, ProtoKD, FedDecorr. No idea ablation or learned-arm reference is declared yet (protocol v3; the rework issues
45-50).
"""

from __future__ import annotations

from typing import Any

from geode.claims import Outcome, Threshold, register

BASELINES = ("FedAvg", "FedProx", "ProtoKD", "FedDecorr")


def _setups(mode: str) -> list[Any]:
    from geode.federated.rise.experiment import RiseSetup

    if mode == "smoke":
        small = {m: g[:1] for m, g in RiseSetup().grids.items()}
        return [RiseSetup(rounds=2, local_epochs=1, pretrain_epochs=3, budget=1, extend=0, grids=small)]
    if mode == "quick":
        return [RiseSetup()]
    return [RiseSetup(rounds=50), RiseSetup(rounds=50, alpha=0.5)]


@register(
    "rise",
    claim=(
        "RISE's geometry regularisers (biased low-dimensional subspace correction and manifold relation-graph "
        "alignment) improve the global model's accuracy and collapse resistance under heterogeneous clients."
    ),
    paper_figure="eight benchmarks, two tasks: RISE beats eight state-of-the-art methods (no numbers in the abstract)",
    baselines=("FedAvg (server step tuned)", "FedProx", "ProtoKD (prototype KD)", "FedDecorr"),
    thresholds=(
        Threshold(
            "beats_best_1pt",
            "gain_vs_best_points",
            ">=",
            1.0,
            "RISE's test accuracy beats the best tuned baseline's by >= 1 point at Dir(0.05) (bound95)",
            agg="bound95",
            control="control_resampled_gain_vs_best_points",
        ),
        Threshold(
            "higher_erank",
            "erank_gain_vs_best",
            ">",
            0.0,
            "RISE's penultimate features have a higher effective rank than the best baseline's (bound95)",
            agg="bound95",
            control="control_resampled_erank_gain_vs_best",
        ),
        Threshold(
            "blsc_ablation_loses",
            "blsc_ablation_loss_points",
            ">",
            0.0,
            "dropping BLSC (lambda_b = 0 at RISE's selection) loses accuracy (bound95)",
            agg="bound95",
            control="control_rise_resampled_points",
            arms="RISE",
        ),
        Threshold(
            "mrga_ablation_loses",
            "mrga_ablation_loss_points",
            ">",
            0.0,
            "dropping MRGA (lambda_m = 0 at RISE's selection) loses accuracy (bound95)",
            agg="bound95",
            control="control_rise_resampled_points",
            arms="RISE",
        ),
        Threshold(
            "beats_fedavg_1pt",
            "gain_vs_fedavg_points",
            ">=",
            1.0,
            "RISE's test accuracy beats tuned FedAvg's by >= 1 point (bound95)",
            agg="bound95",
            control="control_resampled_gain_vs_fedavg_points",
            arms=("RISE", "FedAvg"),
        ),
        Threshold(
            "rise_trains",
            "rise_acc",
            ">=",
            0.5,
            "reported: RISE did not collapse (acc >= 0.5)",
            agg="all",
            arms="RISE",
        ),
    ),
    floors=(
        Threshold("pretrained_learns", "pretrained_acc", ">=", 0.5, "floor: pre-trained model acc >= 0.5", agg="all"),
        Threshold(
            "fedavg_learns", "fedavg_acc", ">=", 0.5, "floor: tuned FedAvg acc >= 0.5", agg="all", arms="FedAvg"
        ),
    ),
    reproduced="beats_best_1pt and higher_erank and blsc_ablation_loses and mrga_ablation_loses",
    partial="beats_fedavg_1pt",
    method="RISE",
    tuned=("RISE", "FedAvg", "FedProx", "ProtoKD", "FedDecorr"),
    key_metric="gain_vs_best_points",
    revision=1,
)
def run(mode: str, seed: int) -> Outcome:
    from geode.federated.rise.experiment import run_rise_experiment

    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    tuned_rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for si, setup in enumerate(_setups(mode)):
        prefix = "" if si == 0 else f"alpha{setup.alpha:g}_".replace(".", "")
        res = run_rise_experiment(setup, seed)
        test = res["test"]
        for name, (acc, er) in test.items():
            key = name.lower().replace("-", "_").replace("/", "")
            metrics[f"{prefix}{key}_acc"] = acc
            metrics[f"{prefix}{key}_erank"] = er
            table.append(
                {
                    "alpha": setup.alpha,
                    "method": name,
                    "test acc": round(acc, 4),
                    "feature effective rank": round(er, 3),
                    "val acc": round(res["val"][name], 4) if name in res["val"] else "-",
                }
            )
        best = max(BASELINES, key=lambda m: test[m][0])
        r_acc, r_er = test["RISE"]
        fa = test["FedAvg"]
        rs = test["FedAvg-resampled"]
        metrics[f"{prefix}gain_vs_best_points"] = 100 * (r_acc - test[best][0])
        metrics[f"{prefix}erank_gain_vs_best"] = r_er - test[best][1]
        metrics[f"{prefix}gain_vs_fedavg_points"] = 100 * (r_acc - fa[0])
        metrics[f"{prefix}blsc_ablation_loss_points"] = 100 * (r_acc - test["RISE-w/o-BLSC"][0])
        metrics[f"{prefix}mrga_ablation_loss_points"] = 100 * (r_acc - test["RISE-w/o-MRGA"][0])
        metrics[f"{prefix}control_resampled_gain_vs_best_points"] = 100 * (rs[0] - test[best][0])
        metrics[f"{prefix}control_resampled_erank_gain_vs_best"] = rs[1] - test[best][1]
        metrics[f"{prefix}control_resampled_gain_vs_fedavg_points"] = 100 * (rs[0] - fa[0])
        metrics[f"{prefix}control_rise_resampled_points"] = 100 * (test["RISE-resampled"][0] - r_acc)
        for row in res["tuned"].table():
            tuned_rows.append({"alpha": setup.alpha, **row})
        if si == 0:
            notes += res["tuned"].notes()
        notes.append(
            f"Dir({setup.alpha:g}): client sizes {res['client_sizes']}, classes per client "
            f"{res['classes_per_client']}; best baseline this seed: {best}."
        )
    notes.append(
        "The losses are the research notes' reconstruction (no public text or code of RISE): BLSC = one-sided "
        "hinge on the energy profile in the pre-trained top-8 subspace, MRGA = row-wise KL of softmaxed cosine "
        "relation graphs (tau 0.1) over the batch's classes."
    )
    summary = (
        f"{mode}, digits Dir(0.05), seed {seed}: RISE acc {metrics['rise_acc']:.1%}, "
        f"{metrics['gain_vs_best_points']:+.1f} pt vs best tuned baseline, {metrics['gain_vs_fedavg_points']:+.1f} pt "
        f"vs FedAvg; effective rank {metrics['rise_erank']:.2f} ({metrics['erank_gain_vs_best']:+.2f} vs best)"
    )
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=tuned_rows)
