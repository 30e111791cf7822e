"""Claim check of CRAFT: less disparity across clients than the named baselines, at a competitive mean accuracy.

Revision 2 (protocol v2, issue 20). Revision 1 compared CRAFT (eta_s tuned on {0.1, 0.3, 1}) with FedAvg
at server lr 1 and no tuning, FedAvgM on a momentum grid {0.3, 0.6, 0.9} that stopped at its own edge, 5
data seeds inside one run; verdict **reproduced** (quick: worst-client accuracy 0.900 vs 0.677, +22.3 pt;
mean 0.968 vs 0.908). The audit (``shared/audits/adapters-federated.md``) re-tuned the baselines on
validation: against FedAvgM at momentum 0.9-0.97 the worst-client gain fell to +2.4 pt (2 of 5 seeds
negative). Revision 2 changes the set-up, not the bounds:

- *equal tuning*: every method gets the same budget (5 grid points + 1 step past an edge, validation mean
  client accuracy): FedAvg's server lr {1, 2, 4, 8, 16}, CRAFT's eta_s {0.03, ..., 3}, FedAvgM's momentum
  {0.8, ..., 0.99} (server lr 1), q-FFL's q {0.01, ..., 5}, FedProx's mu {0.001, ..., 1};
- *seeds*: one data seed (split, partition, initialisation, client sampling) per harness seed, so the
  verdict needs >= 3 seeds (the issue asks for 5: ``geode reproduce craft --seeds 5``);
- *thresholds*: the old bounds (+5 pt worst-client, mean within 1 pt) now apply to the best *tuned*
  baseline the paper names (FedAvg, q-FFL, FedProx; per seed the strongest of them), to the one-sided
  95% t bound of the paired per-seed difference (``bound95``) instead of the mean;
- *strongest baseline*: tuned FedAvgM is not among the paper's named baselines; its margin is reported
  by the ``worst_above_strongest`` threshold, which is outside the verdict rules;
- *validity floors*: tuned FedAvg reaches a mean client accuracy >= 0.8 (the task is learned) and CRAFT
  >= 0.5 (it did not collapse);
- *negative controls*: the selected FedAvg re-run with another client-sampling seed, compared with the
  original run (the noise floor of a paired difference; must fail the worst-client bounds), and the
  untrained model (must fail "mean within 1 pt").

Measured (quick, 5 seeds, ``geode reproduce craft --seeds 5``): **not reproduced**, per-seed verdicts unstable
(reproduced in seeds 0-1, not in 2-4). CRAFT's worst-client gain over the best tuned named baseline (always
tuned FedAvg, server lr 4-8; q-FFL and FedProx are far weaker) is +18.5, +7.5, +2.8, -5.9, -2.9 points: mean
+4.0, one-sided 95% bound -5.2 (< 5). The mean-accuracy gap holds (mean +0.25, bound -0.87 >= -1). Against
tuned FedAvgM (momentum 0.9-0.97) the worst-client margin is -0.8 on average (bound -5.2); std across clients
0.032 (CRAFT) vs 0.029 (FedAvgM) vs 0.038 (FedAvg). The control shows why one seed decides nothing: the selected
FedAvg re-run with another client-sampling seed moves its worst client by +21.2, -4.9, -2.0, -7.9, 0.0 points
(mean +1.3, bound -9.7: it fails the bound, so the threshold discriminates). CRAFT's direction norm per group
and round: median 1.09, 99th percentile 2.5, max 5.0 (no cap). Revision 1's +22 pt came from the untuned FedAvg
(server lr 1) and is within the worst-client metric's sampling noise.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive
(underpowered: worst_up_5pt)** (the v2 harness read not reproduced on the same runs): unresolved: worst_up_5pt.
With the seeds the harness added while the verdict was underpowered (seeds 0, 1, 2, 3, 4): **not reproduced**. No
idea ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

_METHODS = ("FedAvg", "CRAFT", "FedAvgM", "QFedAvg", "FedProx")
NAMED = ("FedAvg", "QFedAvg", "FedProx")  # the baselines of the verdict (FedAvgM: strongest, reported)


def _setups(mode: str) -> list[Any]:
    from geode.data.assets import ASSETS
    from geode.federated.craft.experiment import FLSetup

    if mode == "smoke":
        return [
            FLSetup(
                n_clients=10,
                clients_per_round=5,
                rounds=4,
                batch_size=32,
                fedavg_server_lrs=(1.0,),
                craft_lrs=(0.3,),
                fedavgm_momenta=(0.9,),
                qfedavg_qs=(1.0,),
                fedprox_mus=(0.1,),
                budget=1,
                extend=0,
                eval_every=2,
            )
        ]
    if mode == "quick":
        return [FLSetup()]
    setups = [FLSetup(rounds=300, eval_every=20)]
    if next(a for a in ASSETS if a.name == "fashion-mnist").path() is not None:
        setups.append(
            replace(
                FLSetup(),
                dataset="fashion-mnist",
                n_clients=100,
                clients_per_round=20,
                rounds=300,
                hidden=(200,),
                min_client_size=10,
                eval_every=20,
            )
        )
    return setups


@register(
    "craft",
    claim=(
        "CRAFT's conflict-free aggregation reduces the performance disparity across clients while keeping "
        "competitive global accuracy against FedAvg and the other baselines under non-IID data."
    ),
    paper_figure=(
        "non-IID CIFAR-10/100, FEMNIST: lower std and higher worst-client accuracy than FedAvg at competitive "
        "mean (demo log: CIFAR-10 mean acc 0.806, std 0.164 at round 500)"
    ),
    baselines=("FedAvg (server lr tuned)", "QFedAvg (q-FFL)", "FedProx", "FedAvgM (strongest, reported)"),
    thresholds=(
        Threshold(
            "worst_up_5pt",
            "worst_gain_vs_named_points",
            ">=",
            5.0,
            "CRAFT's worst-client accuracy beats the best tuned named baseline's (FedAvg, q-FFL, FedProx) by >= 5 "
            "points (one-sided 95% bound over seeds)",
            agg="bound95",
            control="control_resampled_worst_gain_points",
            arms=("CRAFT", "FedAvg", "QFedAvg", "FedProx"),
        ),
        Threshold(
            "mean_within_1pt",
            "mean_gap_vs_named_points",
            ">=",
            -1.0,
            "CRAFT's mean client accuracy is not more than 1 point below the best tuned named baseline's "
            "(one-sided 95% bound over seeds)",
            agg="bound95",
            control="control_untrained_mean_gap_points",
            arms=("CRAFT", "FedAvg", "QFedAvg", "FedProx"),
        ),
        Threshold(
            "worst_above_strongest",
            "worst_gain_vs_best_points",
            ">=",
            0.0,
            "reported, not in the verdict: CRAFT's worst-client accuracy is at least that of the strongest tuned "
            "baseline, FedAvgM included (one-sided 95% bound)",
            agg="bound95",
            control="control_resampled_worst_gain_points",
        ),
        Threshold(
            "craft_trains",
            "craft_mean_acc",
            ">=",
            0.5,
            "reported: CRAFT did not collapse (mean acc >= 0.5)",
            agg="all",
            arms="CRAFT",
        ),
    ),
    floors=(
        Threshold(
            "fedavg_learns",
            "fedavg_mean_acc",
            ">=",
            0.8,
            "floor: tuned FedAvg reaches a mean client accuracy >= 0.8",
            agg="all",
            arms="FedAvg",
        ),
    ),
    reproduced="worst_up_5pt and mean_within_1pt",
    partial="worst_up_5pt",
    method="CRAFT",
    tuned=("CRAFT", "FedAvg", "QFedAvg", "FedProx", "FedAvgM"),
    key_metric="worst_gain_vs_named_points",
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geode.federated.craft.experiment import run_fl_benchmark

    setups = _setups(mode)
    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    tuned_rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {}
    notes: list[str] = []
    for si, setup in enumerate(setups):
        prefix = "" if si == 0 else "fmnist_"
        res = run_fl_benchmark(setup, seed)
        sel = res["methods"]
        everything = {**sel, **res["ablations"], **res["controls"]}
        for name, m in everything.items():
            key = name.lower().replace("-", "_")
            for k in ("mean", "worst", "p10"):
                metrics[f"{prefix}{key}_{k}_acc"] = float(m.test[k])
            metrics[f"{prefix}{key}_std_across_clients"] = float(m.test["std"])
            table.append(
                {
                    "data": setup.dataset,
                    "method": name,
                    "mean acc": round(m.test["mean"], 4),
                    "worst-client acc": round(m.test["worst"], 4),
                    "p10 acc": round(m.test["p10"], 4),
                    "std across clients": round(m.test["std"], 4),
                    "val mean acc": round(m.val["mean"], 4),
                    "selected": "-" if np.isnan(m.hyper) else f"{m.hyper:g}",
                }
            )
        un = res["untrained"]["test"]
        table.append(
            {
                "data": setup.dataset,
                "method": "untrained (control)",
                "mean acc": round(un["mean"], 4),
                "worst-client acc": round(un["worst"], 4),
                "p10 acc": round(un["p10"], 4),
                "std across clients": round(un["std"], 4),
                "val mean acc": round(res["untrained"]["val"]["mean"], 4),
                "selected": "-",
            }
        )
        for row in res["tuned"].table():
            tuned_rows.append({"data": setup.dataset, **row})
        if si == 0:
            notes += res["tuned"].notes()
        c = sel["CRAFT"]
        named_worst = max(sel[m].test["worst"] for m in NAMED)
        named_mean = max(sel[m].test["mean"] for m in NAMED)
        best_worst = max(sel[m].test["worst"] for m in _METHODS if m != "CRAFT")
        best_mean = max(sel[m].test["mean"] for m in _METHODS if m != "CRAFT")
        fa = sel["FedAvg"]
        metrics[f"{prefix}worst_gain_vs_named_points"] = 100 * (c.test["worst"] - named_worst)
        metrics[f"{prefix}mean_gap_vs_named_points"] = 100 * (c.test["mean"] - named_mean)
        metrics[f"{prefix}worst_gain_vs_best_points"] = 100 * (c.test["worst"] - best_worst)
        metrics[f"{prefix}mean_gap_vs_best_points"] = 100 * (c.test["mean"] - best_mean)
        metrics[f"{prefix}worst_gain_vs_fedavg_points"] = 100 * (c.test["worst"] - fa.test["worst"])
        metrics[f"{prefix}mean_gap_vs_fedavg_points"] = 100 * (c.test["mean"] - fa.test["mean"])
        rs = res["controls"]["FedAvg-resampled"]
        metrics[f"{prefix}control_resampled_worst_gain_points"] = 100 * (rs.test["worst"] - fa.test["worst"])
        metrics[f"{prefix}control_untrained_mean_gap_points"] = 100 * (un["mean"] - named_mean)
        for k in (
            "alignment_min",
            "feasible_fraction",
            "direction_norm_median",
            "direction_norm_p99",
            "direction_norm_max",
        ):
            metrics[f"{prefix}craft_{k}"] = float(c.extra[k])
        for m in _METHODS:
            if not np.isnan(sel[m].hyper):
                metrics[f"{prefix}{m.lower()}_selected"] = float(sel[m].hyper)

        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        for name in _METHODS:
            acc = np.sort(sel[name].client_acc)
            ax.plot(np.arange(1, acc.size + 1), acc * 100, marker=".", lw=1, label=f"{name} ({sel[name].hyper:g})")
        ax.set_xlabel("client (sorted by accuracy)")
        ax.set_ylabel("client test accuracy (%)")
        ax.set_title(f"{setup.dataset}, {setup.n_clients} clients, Dir({setup.alpha:g}), seed {seed}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        figures[f"{prefix}client_accuracy"] = fig

        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        for name, color in (("FedAvg", "C0"), ("FedAvgM", "C2"), ("CRAFT", "C1")):
            m = sel[name]
            ax.plot(m.curve_rounds, m.curve_mean * 100, color=color, label=f"{name} mean")
            ax.plot(m.curve_rounds, m.curve_worst * 100, color=color, ls="--", label=f"{name} worst client")
        ax.set_xlabel("round")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title("mean and worst-client accuracy (tuned)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        figures[f"{prefix}training_curves"] = fig

        notes.append(
            f"{setup.dataset}: MLP {'-'.join(map(str, setup.hidden))} hidden, {setup.n_clients} clients "
            f"(Dir({setup.alpha:g}) label skew, min {setup.min_client_size} examples), {setup.clients_per_round} "
            f"per round, {setup.rounds} rounds, client SGD lr {setup.lr:g} x {setup.lr_decay:g}^round, batch "
            f"{setup.batch_size}, {setup.local_epochs} local epoch; data seed {seed}."
        )
    notes += [
        "Per-client accuracy = global model's per-class test accuracy reweighted by the client's label mix.",
        "Verdict against the best tuned named baseline per seed (FedAvg with a server lr, q-FFL, FedProx); tuned "
        "FedAvgM is the strongest baseline, reported by worst_above_strongest (outside the verdict rules).",
        "CRAFT groups a layer's weight and bias together; the ablations put them in separate groups "
        "(CRAFT-split-bias) or use the whole model as one group (CRAFT-one-group) at the selected eta_s.",
        f"CRAFT's direction norm ||x*|| per group and round: median {metrics['craft_direction_norm_median']:.3g}, "
        f"99th percentile {metrics['craft_direction_norm_p99']:.3g}, max {metrics['craft_direction_norm_max']:.3g} "
        "(1/K when clients agree, unbounded as they oppose; the step is eta_s times it, no cap).",
        f"CRAFT's constraints U x = w held exactly in {metrics['craft_feasible_fraction']:.1%} of the group "
        "aggregations; the rest had near-collinear client updates (rank-deficient U), where the least-squares "
        f"fallback allows small negative alignments (smallest u_i.x seen: {metrics['craft_alignment_min']:.3g}).",
    ]
    summary = (
        f"{mode}, {setups[0].dataset}, seed {seed}: CRAFT worst-client acc {metrics['craft_worst_acc']:.1%} vs best "
        f"tuned named baseline {metrics['craft_worst_acc'] - metrics['worst_gain_vs_named_points'] / 100:.1%} "
        f"({metrics['worst_gain_vs_named_points']:+.1f} pt; vs tuned FedAvgM included "
        f"{metrics['worst_gain_vs_best_points']:+.1f} pt); mean {metrics['craft_mean_acc']:.1%} "
        f"({metrics['mean_gap_vs_named_points']:+.1f} pt vs the best named)"
    )
    return Outcome(metrics=metrics, table=table, figures=figures, summary=summary, notes=notes, tuned=tuned_rows)
