"""Claim check of Castor: top-three on every graph across the homophily spectrum, the best average rank.

Thresholds (fixed by the issue before any run): ``reproduced`` if Castor ranks top-3 (by test accuracy,
among MLP, GCN, APPNP, GPR-GNN, ACM-GCN and Castor) on every quick dataset and has the best average rank,
and beats GPR-GNN and APPNP by >= 3 points on the mixed-homophily graph; ``partial`` if the best average
rank only.

Datasets, quick mode: CSBM (600 nodes, 4 classes, 50 features, degree 10, 60/20/20 split) at edge
homophily h in {0.1, 0.3, 0.5, 0.7, 0.9}, the mixed graph (half the nodes at h=0.85, half at h=0.15), and,
when the real graphs are found (``geode.graphs.default_graph_dir``; declared as the asset
``benchmark-graphs``), Cora and CiteSeer (Planetoid public split) and texas, cornell, wisconsin,
chameleon_filtered, squirrel_filtered (standard split number ``seed``: seeds 0, 1, 2 are splits 0, 1, 2).
Without the folder the run says so and ranks on the synthetic graphs only. Full mode: all 12 real graphs
(seed k = split k), a larger budget and longer training (written for a GPU machine).

Added before the first run (the protocol needs them; the issue names them only in words):

- *aggregation*: each threshold must hold in at least 2 of 3 seeds (``"2 of 3"``): per-seed ranks are
  noisy (a test set of 200 nodes on the synthetic graphs, 37 on texas);
- *validity floors*: each baseline within 3 points of its published public-split accuracy on Cora and
  CiteSeer, read as a lower bound (doing better is fine): MLP 55.1/46.5 (the Planetoid/GAT tables), GCN
  81.5/70.3, APPNP 83.3/71.8, and GPR-GNN and ACM-GCN held to GCN's numbers (neither paper reports the
  public split; both claim to match GCN there); ``floor_margin`` is the smallest margin over baselines
  and the two graphs (mean over seeds >= 0). Without the real graphs it is replaced by "every graph
  baseline beats the MLP by >= 3 points on CSBM h=0.9" (and the notes say so). At most 10% of the
  trainings may diverge (``collapsed_fraction``);
- *negative controls*: the MLP's best rank on the homophilous graphs (CSBM h>=0.7, Cora, CiteSeer) for
  "top-3 everywhere" (the issue's control: the MLP must not be top-3 there); the MLP's margin of average
  rank for "best average rank"; GCN's margin over GPR-GNN and APPNP on the mixed graph (a global
  low-pass filter) for the mixed-graph threshold.

Equal tuning: each method, on each dataset, gets the same number of configurations (``budget``), drawn
by :func:`geode.claims.tune` from a grid over hidden size, learning rate, weight decay, dropout and hops
(hops for the propagating models; GCN's number of layers), selected on validation accuracy. Castor with
``beta = 0`` (first-order propagation) is run at Castor's selected values as the ablation and reported,
not ranked. The strongest baseline (best average rank among the five) is reported beside Castor.

Inferred and deliberate choices (the authors' code, ``amir-ghz/CASTOR``, was read):

- router reads the high-pass residual and the initial state (the authors' code; the abstract says
  "current state"), linear router, per-hop bias with the authors' smoothing-then-preserve prior,
  free real ``beta_k`` initialised to 0, heavy-ball momentum, class-logit state (no head);
- one learning rate for all parameters (the authors use a separate router learning rate); router, hop
  bias and ``beta`` get no weight decay, as in the authors' code;
- training: full-batch Adam, early stopping on validation accuracy (the authors select on validation
  loss), at most ``epochs`` epochs. Sparse bag-of-words features are kept sparse (input dropout then
  drops stored entries, the same as dense dropout on them);
- quick mode's budget (3 configurations per method and dataset, 80 epochs, CSBM of 600 nodes) is far
  below the paper's search; it was cut from 100 epochs and 1000 nodes after a first seed-0 run took
  214 CPU s (over the 3-minute budget). The selected values and the grid edges they hit are in the
  tuned table.

Closing notes (quick, 3 seeds, 158-161 CPU s per seed): ``inconclusive``, the floor failed: ACM-GCN on
CiteSeer reached 64.6 / 64.4 / 67.0 against the floor 67.3 (``floor_margin`` -2.7, -2.9, -0.3; every other
baseline met its floor; GCN 82.2 / 80.0 / 81.1 on Cora). All three verdict thresholds failed in every
seed, so with the floor met the verdict would be ``not reproduced``: Castor's average rank 3.54 / 2.85 /
3.58 against GPR-GNN's 2.35 / 2.46 / 3.04 (the strongest baseline in every seed), worst rank 6 / 4.5 / 6
(chameleon_filtered, squirrel_filtered, CSBM h=0.3), mixed-graph margin over GPR-GNN and APPNP -4.2 /
-1.7 / -5.8 points. Every control failed its threshold (all three discriminate). Momentum helps: Castor
beats its beta = 0 ablation by +1.1 / +5.2 / +5.1 points on average and by 6-11 points on the mixed graph.
Castor's tuning picked the smallest hop count (2) on most graphs, an edge of the grid. The paper's own
protocol (10 splits of 48/32/20 on the real graphs, a large search, 1000 epochs) is what ``full`` mode
approaches; quick mode's budget is the likeliest reason a 14-baseline average rank of 2.07 is not seen.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read inconclusive on the same runs): floor failed: baselines_valid; not tuned by the protocol: *:
Castor, *: MLP, *: GCN, *: APPNP, *: GPR-GNN, *: ACM-GCN. No idea ablation or learned-arm reference is declared yet
(protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

METHODS = ("mlp", "gcn", "appnp", "gpr", "acm", "castor")
BASELINES = METHODS[:-1]
_NAMES = {
    "mlp": "MLP",
    "gcn": "GCN",
    "appnp": "APPNP",
    "gpr": "GPR-GNN",
    "acm": "ACM-GCN",
    "castor": "Castor",
    "castor_beta0": "Castor, beta=0 (ablation)",
}
# published public-split accuracies (Cora, CiteSeer); GPR-GNN and ACM-GCN held to GCN's (see docstring)
PUBLISHED = {
    "mlp": (55.1, 46.5),
    "gcn": (81.5, 70.3),
    "appnp": (83.3, 71.8),
    "gpr": (81.5, 70.3),
    "acm": (81.5, 70.3),
}
REAL_QUICK = ("cora", "citeseer", "texas", "cornell", "wisconsin", "chameleon_filtered", "squirrel_filtered")
HOMOPHILOUS = ("csbm_h0.7", "csbm_h0.9", "cora", "citeseer")

_COMMON = dict(hidden=[32, 64], lr=[0.01, 0.05], weight_decay=[5e-5, 5e-4], dropout=[0.2, 0.5])
_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        nodes=200,
        hs=(0.2, 0.8),
        mixed=True,
        real=(),
        budget=1,
        epochs=15,
        patience=10,
        hops=[2, 4],
        layers=[2],
    ),
    "quick": dict(
        nodes=600,
        hs=(0.1, 0.3, 0.5, 0.7, 0.9),
        mixed=True,
        real=REAL_QUICK,
        budget=3,
        epochs=80,
        patience=25,
        hops=[2, 4, 8],
        layers=[2, 3],
    ),
    "full": dict(
        nodes=3000,
        hs=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
        mixed=True,
        real=(
            "cora",
            "citeseer",
            "texas",
            "cornell",
            "wisconsin",
            "chameleon",
            "chameleon_filtered",
            "squirrel",
            "squirrel_filtered",
            "actor",
            "minesweeper",
            "tolokers",
        ),
        budget=24,
        epochs=1000,
        patience=200,
        hops=[2, 4, 8, 16],
        layers=[2, 3],
    ),
}


def _grid(method: str, cfg: dict[str, Any]) -> dict[str, list[Any]]:
    g: dict[str, list[Any]] = dict(_COMMON)
    if method == "gcn":
        g["layers"] = cfg["layers"]
    elif method in ("appnp", "gpr", "castor"):
        g["hops"] = cfg["hops"]
    return g


def _build(method: str, in_dim: int, out_dim: int, p: dict[str, Any]) -> Any:
    from geode.graphs import ACMGCN, GCN, GPRGNN, MLP, APPNPNet
    from geode.graphs.castor.castor import Castor

    h, dr = int(p["hidden"]), float(p["dropout"])
    if method == "mlp":
        return MLP(in_dim, h, out_dim, dr)
    if method == "gcn":
        return GCN(in_dim, h, out_dim, dr, layers=int(p["layers"]))
    if method == "appnp":
        return APPNPNet(in_dim, h, out_dim, dr, hops=int(p["hops"]))
    if method == "gpr":
        return GPRGNN(in_dim, h, out_dim, dr, hops=int(p["hops"]))
    if method == "acm":
        return ACMGCN(in_dim, h, out_dim, dr)
    if method in ("castor", "castor_beta0"):
        return Castor(in_dim, h, out_dim, int(p["hops"]), dropout=dr, momentum=method == "castor")
    raise ValueError(f"unknown method {method!r}")


def _datasets(cfg: dict[str, Any], seed: int) -> tuple[list[tuple[str, Any, tuple[Any, Any, Any]]], list[str]]:
    import torch

    from geode.graphs import csbm, default_graph_dir, load_graph, mixed_homophily_graph

    out: list[tuple[str, Any, tuple[Any, Any, Any]]] = []
    notes: list[str] = []
    n = cfg["nodes"]
    for h in cfg["hs"]:
        d = csbm(n, 4, h, seed=seed * 1000 + int(round(h * 100)))
        out.append((f"csbm_h{h}", d, (d.train_mask, d.val_mask, d.test_mask)))
    if cfg["mixed"]:
        d = mixed_homophily_graph(n, 4, seed=seed * 1000 + 999)
        out.append(("mixed", d, (d.train_mask, d.val_mask, d.test_mask)))
    folder = default_graph_dir()
    if cfg["real"] and folder is None:
        notes.append("Real graphs not found (no ../shared/data/graphs, GEODE_GRAPHS unset): synthetic graphs only.")
    elif cfg["real"]:
        for name in cfg["real"]:
            try:
                d = load_graph(name, folder)
            except FileNotFoundError as exc:
                notes.append(f"{name}: {exc}; skipped")
                continue
            masks = (d.train_mask, d.val_mask, d.test_mask)
            if masks[0].dim() == 2:
                k = seed % masks[0].size(1)
                masks = tuple(m[:, k] for m in masks)
            x = d.x.float()
            if float((x != 0).float().mean()) < 0.1:  # bag-of-words: keep sparse (see docstring)
                x = x.to_sparse()
            d = d.clone()
            d.x = x
            out.append((name, d, tuple(m.bool() for m in masks)))
        notes.append(f"Real graphs read in place from {folder}; split {seed % 10} of the 10 standard splits.")
    del torch
    return out, notes


def _ranks(acc: dict[str, float]) -> dict[str, float]:
    from scipy.stats import rankdata

    vals = np.array([-acc[m] for m in METHODS])
    return dict(zip(METHODS, rankdata(vals, method="average").tolist(), strict=True))


def _figure(names: list[str], accs: dict[str, dict[str, float]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(names)), 3.4))
    w = 0.8 / (len(METHODS) + 1)
    for i, m in enumerate((*METHODS, "castor_beta0")):
        ax.bar(np.arange(len(names)) + i * w, [accs[d][m] for d in names], w, label=_NAMES[m])
    ax.set_xticks(np.arange(len(names)) + 0.4)
    ax.set_xticklabels(names, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("test accuracy (%)")
    ax.legend(fontsize=6, ncol=4)
    fig.tight_layout()
    return fig


@register(
    "castor",
    claim=(
        "A single Castor instance (per-node router over low-pass, high-pass and identity at every hop, with a "
        "learnable per-hop momentum) ranks top-three on every node-classification benchmark across the homophily "
        "spectrum and has the best average rank."
    ),
    paper_figure="top-3 on all 14 datasets, average rank 2.07, > 3.5 ranks ahead of the next of 14 baselines",
    baselines=("MLP", "GCN", "APPNP", "GPR-GNN", "ACM-GCN"),
    thresholds=(
        Threshold(
            "top3_everywhere",
            "castor_worst_rank",
            "<=",
            3.0,
            "Castor ranks top-3 on every quick dataset (2 of 3 seeds)",
            agg="2 of 3",
            control="mlp_best_rank_homophilous",
        ),
        Threshold(
            "best_avg_rank",
            "castor_rank_gap",
            ">",
            0.0,
            "Castor's average rank is better than every baseline's (2 of 3 seeds)",
            agg="2 of 3",
            control="mlp_rank_gap",
        ),
        Threshold(
            "mixed_margin",
            "castor_mixed_margin",
            ">=",
            3.0,
            "Castor beats GPR-GNN and APPNP by >= 3 points on the mixed-homophily graph (2 of 3 seeds)",
            agg="2 of 3",
            control="gcn_mixed_margin",
            arms=("*: Castor", "*: GPR-GNN", "*: APPNP"),
        ),
    ),
    floors=(
        Threshold(
            "baselines_valid",
            "floor_margin",
            ">=",
            0.0,
            "floor: every baseline within 3 points of (or above) its published Cora/CiteSeer accuracy (mean)",
            arms=("*: MLP", "*: GCN", "*: APPNP", "*: GPR-GNN", "*: ACM-GCN"),
        ),
        Threshold(
            "few_collapsed",
            "collapsed_fraction",
            "<=",
            0.1,
            "floor: at most 10% of the trainings diverged (mean over seeds)",
        ),
    ),
    reproduced="top3_everywhere and best_avg_rank and mixed_margin",
    partial="best_avg_rank",
    method="*: Castor",  # the tuned table keys each study by its dataset ("cora: Castor")
    tuned=("*: Castor", "*: MLP", "*: GCN", "*: APPNP", "*: GPR-GNN", "*: ACM-GCN"),
    key_metric="castor_rank_gap",
    assets=("benchmark-graphs",),
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.graphs import fit_node_classifier

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    data, notes = _datasets(cfg, seed)
    accs: dict[str, dict[str, float]] = {}
    tuned: list[dict[str, Any]] = []
    fits = collapsed = 0
    cpu: dict[str, float] = {}
    for name, d, masks in data:
        c0 = time.process_time()
        in_dim, out_dim = int(d.x.size(1)), int(d.y.max()) + 1

        def fit(
            method: str,
            p: dict[str, Any],
            d: Any = d,
            masks: Any = masks,
            in_dim: int = in_dim,
            out_dim: int = out_dim,
            name: str = name,
        ) -> tuple[float, Any]:
            nonlocal fits, collapsed
            key = sum(ord(c) for c in f"{name}/{method}/{sorted(p.items())}")
            torch.manual_seed(seed * 100003 + key)
            model = _build(method, in_dim, out_dim, p)
            r = fit_node_classifier(
                model,
                d,
                masks,
                lr=float(p["lr"]),
                weight_decay=float(p["weight_decay"]),
                epochs=cfg["epochs"],
                patience=cfg["patience"],
                no_decay=getattr(model, "no_decay", ()),
            )
            fits += 1
            collapsed += not r.finite
            return (r.val if r.finite else float("nan")), r

        res = tune(fit, {m: _grid(m, cfg) for m in METHODS}, budget=cfg["budget"], seed=seed)
        accs[name] = {m: 100.0 * res.payload(m).test for m in METHODS}
        _, abl = fit("castor_beta0", res.params("castor"))
        accs[name]["castor_beta0"] = 100.0 * abl.test
        tuned += [dict(r, method=f"{name}: {_NAMES[r['method']]}") for r in res.table()]
        notes += [f"{name}: {n}" for n in res.notes()]
        cpu[name] = time.process_time() - c0

    names = [n for n, _, _ in data]
    ranks = {n: _ranks(accs[n]) for n in names}
    avg = {m: float(np.mean([ranks[n][m] for n in names])) for m in METHODS}
    best_other = min(avg[m] for m in BASELINES)
    strongest = min(BASELINES, key=lambda m: avg[m])
    homo = [n for n in names if n in HOMOPHILOUS]
    mx = accs.get("mixed", {m: 0.0 for m in (*METHODS, "castor_beta0")})
    real = "cora" in accs and "citeseer" in accs
    if real:
        floor = min(
            accs[g][m] - (PUBLISHED[m][i] - 3.0) for m in BASELINES for i, g in enumerate(("cora", "citeseer"))
        )
    else:
        ref = accs[names[-2] if "mixed" in accs else names[-1]]  # the most homophilous CSBM
        floor = min(ref[m] - ref["mlp"] - 3.0 for m in ("gcn", "appnp", "gpr", "acm"))
        notes.append("Floor read on the most homophilous CSBM (graph baselines >= MLP + 3 points): no Cora/CiteSeer.")
    metrics = {
        "castor_worst_rank": float(max(ranks[n]["castor"] for n in names)),
        "castor_avg_rank": avg["castor"],
        "best_baseline_avg_rank": best_other,
        "castor_rank_gap": best_other - avg["castor"],
        "mlp_rank_gap": min(avg[m] for m in METHODS if m != "mlp") - avg["mlp"],
        "mlp_best_rank_homophilous": float(min(ranks[n]["mlp"] for n in homo)) if homo else 6.0,
        "castor_mixed_margin": mx["castor"] - max(mx["gpr"], mx["appnp"]),
        "castor_beta0_mixed_margin": mx["castor_beta0"] - max(mx["gpr"], mx["appnp"]),
        "gcn_mixed_margin": mx["gcn"] - max(mx["gpr"], mx["appnp"]),
        "strongest_baseline_rank_gap": avg[strongest] - avg["castor"],
        "castor_minus_beta0_mean_acc": float(np.mean([accs[n]["castor"] - accs[n]["castor_beta0"] for n in names])),
        "floor_margin": float(floor),
        "collapsed_fraction": collapsed / max(fits, 1),
        "real_graphs_used": float(real),
        "datasets": float(len(names)),
    }
    for m in METHODS:
        metrics[f"{m}_avg_rank"] = avg[m]
    table = [
        {
            "dataset": n,
            **{_NAMES[m]: round(accs[n][m], 1) for m in (*METHODS, "castor_beta0")},
            "Castor rank": ranks[n]["castor"],
        }
        for n in names
    ]
    table.append({"dataset": "average rank", **{_NAMES[m]: round(avg[m], 2) for m in METHODS}})
    elapsed = time.perf_counter() - t0
    notes.append(f"Strongest baseline by average rank: {_NAMES[strongest]} ({avg[strongest]:.2f}).")
    notes.append(
        f"{fits} trainings, wall time of this seed {elapsed:.0f} s; CPU s per dataset: "
        + ", ".join(f"{k} {v:.0f}" for k, v in cpu.items())
    )
    summary = (
        f"Castor average rank {avg['castor']:.2f} vs best baseline {best_other:.2f} ({_NAMES[strongest]}); worst rank "
        f"{metrics['castor_worst_rank']:.1f} over {len(names)} datasets; mixed-graph margin over GPR-GNN/APPNP "
        f"{metrics['castor_mixed_margin']:+.1f} points."
    )
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"accuracy": _figure(names, accs)},
        summary=summary,
        notes=notes,
        tuned=tuned,
    )
