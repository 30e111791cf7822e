"""Claim check of REEF-GP: ensemble-level NLL at a fraction of the cost, calibrated, robust to shape shift.

Thresholds (fixed by the issue before any run): ``reproduced`` if REEF-GP's NLL is within 10% of a
5-member deep ensemble's at <= 1/3 of its wall time, its 90% interval covers between 0.85 and 0.95 of the
in-distribution test points, and its coverage drop under geometry shift is smaller than the ensemble's;
``partial`` if the NLL-and-cost condition holds.

Made precise before the first run (the protocol needs it; the issue leaves it open):

- *"within 10%"*: the Gaussian NLL per point can be negative, so the gap is relative to its magnitude,
  ``(NLL_reef - NLL_ens) / |NLL_ens| <= 0.10`` (targets standardised by the training solutions' std);
- *cost*: CPU seconds (one thread) of everything a user runs: REEF-GP = training the operator + fitting
  the GP + predicting; the ensemble = training its 5 members + predicting (member 0 is the operator
  REEF-GP wraps). Timing metrics; the verdict uses CPU time, not wall time, because the machine is shared;
- *aggregation*: every threshold must hold in every seed (``all``), the NLL gap on its one-sided 95% bound;
- *validity floors*: the operator and the ensemble learned (relative L2 test error <= 0.2 each) and the
  shifted shapes are a shift (the operator's OOD error >= 1.1 x its ID error);
- *negative controls*: the split-conformal constant band (UQNO-lite: one Gaussian scale from the
  calibration residuals) for the NLL gap and for the coverage drop, the raw (unscaled) ensemble spread
  for the coverage band, and the GP on raw inputs (no operator embedding: the paper's idea removed)
  for the NLL gap.

Baselines, each given 6 configurations on a validation split by NLL: REEF-GP (q x subset size), the
ensemble and MC dropout (a scale on their spread; their training is the operator's), the raw-input GP
(q x subset size); the conformal band has nothing to tune. The strongest baseline (lowest test NLL
among ensemble, MC dropout, raw GP, conformal) is reported beside.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read not reproduced on the same runs): unresolved: nll_close; not tuned by the protocol: reef. No
idea ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

Z90 = 1.6448536269514722
SCALE_GRID = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        n_train=12,
        n_cal=6,
        n_val=4,
        n_test=6,
        refine=2,
        steps=20,
        width=16,
        members=5,
        gp_steps=5,
        reef_grid={"q": [4], "subset_size": [50, 100]},
        n_condition=100,
        eps=0.15,
        eps_ood=0.35,
    ),
    "quick": dict(
        n_train=160,
        n_cal=40,
        n_val=20,
        n_test=40,
        refine=3,
        steps=600,
        width=64,
        members=5,
        gp_steps=60,
        reef_grid={"q": [8, 16, 32], "subset_size": [300, 600]},
        n_condition=1000,
        eps=0.15,
        eps_ood=0.35,
    ),
    "full": dict(
        n_train=1000,
        n_cal=200,
        n_val=100,
        n_test=200,
        refine=5,
        steps=5000,
        width=128,
        members=5,
        gp_steps=400,
        reef_grid={"q": [16, 32, 64], "subset_size": [2000, 4000]},
        n_condition=4000,
        eps=0.15,
        eps_ood=0.35,
    ),
}


def _gauss(u: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> dict[str, float]:
    from scipy.stats import norm

    sd = np.maximum(sd, 1e-9)
    z = (u - mu) / sd
    nll = 0.5 * np.log(2 * np.pi) + np.log(sd) + 0.5 * z**2
    crps = sd * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / np.sqrt(np.pi))
    return {"nll": float(nll.mean()), "crps": float(crps.mean()), "coverage": float(np.mean(np.abs(z) <= Z90))}


def _arrays(samples: list[Any], u_scale: float) -> tuple[np.ndarray, np.ndarray]:
    x = np.stack([np.column_stack([s.points, s.sdf, s.source]) for s in samples]).astype(np.float32)
    u = np.stack([s.solution for s in samples]) / u_scale
    return x, u


@register(
    "reef-gp",
    claim=(
        "A GP on the residuals of a frozen neural operator, with the kernel on the operator's embeddings, gives "
        "uncertainty competitive with a deep ensemble at a fraction of its cost, calibrated in distribution and "
        "robust under geometry shift, without changing the operator's mean."
    ),
    paper_figure="calibrated UQ competitive with deep ensembles at a fraction of their cost on five PDE benchmarks",
    baselines=("5-member deep ensemble", "MC dropout", "split-conformal constant band", "GP on raw inputs"),
    thresholds=(
        Threshold(
            "nll_close",
            "reef_nll_gap_rel",
            "<=",
            0.10,
            "REEF-GP's NLL within 10% of the ensemble's: (NLL_reef - NLL_ens) / |NLL_ens| (95% bound)",
            agg="bound95",
            control=("conformal_nll_gap_rel", "rawgp_nll_gap_rel"),
            arms=("reef", "ensemble"),
        ),
        Threshold(
            "cheap",
            "reef_cost_ratio",
            "<=",
            1 / 3,
            "REEF-GP's CPU time <= 1/3 of the ensemble's (operator + GP vs 5 members; every seed)",
            agg="all",
            control="ensemble4_cost_ratio",
            arms=("reef", "ensemble"),
        ),
        Threshold(
            "covers_low",
            "reef_coverage_id",
            ">=",
            0.85,
            "90% interval covers >= 0.85 in distribution (every seed)",
            agg="all",
            control="ensemble_raw_coverage_id",
            arms=("reef",),
        ),
        Threshold(
            "covers_high",
            "reef_coverage_id",
            "<=",
            0.95,
            "90% interval covers <= 0.95 in distribution (every seed)",
            agg="all",
            control="inflated_coverage_id",
            arms=("reef",),
        ),
        Threshold(
            "robust",
            "reef_minus_ensemble_drop",
            "<",
            0.0,
            "REEF-GP's coverage drop under shift is smaller than the ensemble's (every seed)",
            agg="all",
            control="conformal_minus_ensemble_drop",
            arms=("reef", "ensemble"),
        ),
    ),
    floors=(
        Threshold(
            "operator_learned",
            "operator_rel_l2",
            "<=",
            0.2,
            "floor: operator relative L2 test error <= 0.2",
            agg="all",
        ),
        Threshold(
            "ensemble_learned",
            "ensemble_rel_l2",
            "<=",
            0.2,
            "floor: ensemble relative L2 test error <= 0.2",
            agg="all",
            arms=("ensemble",),
        ),
        Threshold(
            "is_shift",
            "ood_error_ratio",
            ">=",
            1.1,
            "floor: the operator's OOD error >= 1.1 x its ID error",
            agg="all",
        ),
    ),
    reproduced="nll_close and cheap and covers_low and covers_high and robust",
    partial="nll_close and cheap",
    method="reef",
    tuned=("reef", "ensemble", "mcdropout", "rawgp"),
    untuned={"conformal": "no hyper-parameter (one Gaussian scale from the calibration residuals)"},
    key_metric="reef_nll_gap_rel",
    timing_metrics=(
        "reef_cost_ratio",
        "ensemble4_cost_ratio",
        "reef_seconds",
        "ensemble_seconds",
        "reef_fit_seconds",
        "operator_train_seconds",
    ),
)
def run(mode: str, seed: int) -> Outcome:
    from geode.uncertainty.reef_gp.data import poisson_dataset
    from geode.uncertainty.reef_gp.gp import REEFGP
    from geode.uncertainty.reef_gp.operator import DeepEnsemble, MCDropout, PointCloudOperator, train_operator

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    n_id = cfg["n_train"] + cfg["n_cal"] + cfg["n_val"] + cfg["n_test"]
    id_samples = poisson_dataset(n_id, eps=cfg["eps"], refine=cfg["refine"], seed=seed)
    ood_samples = poisson_dataset(cfg["n_test"], eps=cfg["eps_ood"], refine=cfg["refine"], seed=seed + 10_000)
    u_scale = float(np.std(np.concatenate([s.solution for s in id_samples[: cfg["n_train"]]])))
    x_all, u_all = _arrays(id_samples, u_scale)
    x_ood, u_ood = _arrays(ood_samples, u_scale)
    a, b, c = cfg["n_train"], cfg["n_train"] + cfg["n_cal"], cfg["n_train"] + cfg["n_cal"] + cfg["n_val"]
    split = {"train": slice(0, a), "cal": slice(a, b), "val": slice(b, c), "test": slice(c, n_id)}
    x = {k: x_all[s] for k, s in split.items()} | {"ood": x_ood}
    u = {k: u_all[s] for k, s in split.items()} | {"ood": u_ood}

    # warm-up (torch's one-time initialisation would otherwise be charged to the first member, REEF-GP's operator)
    train_operator(PointCloudOperator(width=cfg["width"], seed=0), x["train"], u["train"], steps=3, seed=0)
    members, train_s = [], []
    for m in range(cfg["members"]):
        op = PointCloudOperator(width=cfg["width"], seed=seed * 100 + m)
        train_s.append(train_operator(op, x["train"], u["train"], steps=cfg["steps"], seed=seed * 100 + m))
        members.append(op)
    operator = members[0]
    ens = DeepEnsemble(members)
    drop_op = PointCloudOperator(width=cfg["width"], dropout=0.1, seed=seed * 100 + 99)
    train_operator(drop_op, x["train"], u["train"], steps=cfg["steps"], seed=seed * 100 + 99)
    mcd = MCDropout(drop_op, passes=20, seed=seed)

    def evaluate(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        if method in ("reef", "rawgp"):
            gp = REEFGP(
                operator,
                "decoder.embedding" if method == "reef" else None,
                q=params["q"],
                subset_size=params["subset_size"],
                n_condition=cfg["n_condition"],
                steps=cfg["gp_steps"],
                seed=seed,
            ).fit(x["cal"], u["cal"])
            mu, sd = gp.predict(x["val"])
            return _gauss(u["val"], mu, sd)["nll"], gp
        model = ens if method == "ensemble" else mcd
        mu, sd = model.predict(x["val"])
        return _gauss(u["val"], mu, params["scale"] * sd)["nll"], params["scale"]

    grids = {
        "reef": cfg["reef_grid"],
        "rawgp": cfg["reef_grid"],
        "ensemble": {"scale": SCALE_GRID},
        "mcdropout": {"scale": SCALE_GRID},
    }
    res = tune(evaluate, grids, maximize=False, extend=2, limits={"subset_size": (2, 4000), "q": (1, 64)})
    reef, rawgp = res.payload("reef"), res.payload("rawgp")

    out: dict[str, dict[str, dict[str, float]]] = {}
    preds: dict[str, Any] = {}
    t_pred = {}
    for name in ("reef", "rawgp", "ensemble", "mcdropout", "ensemble_raw", "conformal", "operator"):
        out[name] = {}
    conf_sd = float(np.sqrt(np.mean((u["cal"] - operator_predict(operator, x["cal"])) ** 2)))
    for split_name in ("test", "ood"):
        xs, us = x[split_name], u[split_name]
        tp = time.process_time()
        mu, sd = reef.predict(xs)
        t_pred.setdefault("reef", time.process_time() - tp)
        out["reef"][split_name] = _gauss(us, mu, sd)
        preds[f"reef/{split_name}"] = (mu, sd)
        mu_g, sd_g = rawgp.predict(xs)
        out["rawgp"][split_name] = _gauss(us, mu_g, sd_g)
        tp = time.process_time()
        mu_e, sd_e = ens.predict(xs)
        t_pred.setdefault("ensemble", time.process_time() - tp)
        out["ensemble"][split_name] = _gauss(us, mu_e, res.payload("ensemble") * sd_e)
        out["ensemble_raw"][split_name] = _gauss(us, mu_e, sd_e)
        mu_d, sd_d = mcd.predict(xs)
        out["mcdropout"][split_name] = _gauss(us, mu_d, res.payload("mcdropout") * sd_d)
        mu_o = operator_predict(operator, xs)
        out["conformal"][split_name] = _gauss(us, mu_o, np.full_like(mu_o, conf_sd))
        out["operator"][split_name] = {"rel_l2": float(np.linalg.norm(us - mu_o) / np.linalg.norm(us))}
        preds[f"operator/{split_name}"] = mu_o
        preds[f"ensemble/{split_name}"] = mu_e
        preds[f"u/{split_name}"] = us
    inflated = _gauss(u["test"], preds["reef/test"][0], 3 * preds["reef/test"][1])["coverage"]
    mean_unchanged = float(np.max(np.abs(preds["reef/test"][0] - preds["operator/test"])))

    reef_cost = train_s[0] + reef.fit_seconds_ + t_pred["reef"]
    ens_cost = sum(train_s) + t_pred["ensemble"]
    nll_e = out["ensemble"]["test"]["nll"]

    def gap(name: str) -> float:
        return (out[name]["test"]["nll"] - nll_e) / abs(nll_e)

    def drop(name: str) -> float:
        return out[name]["test"]["coverage"] - out[name]["ood"]["coverage"]

    others = ("ensemble", "mcdropout", "rawgp", "conformal")
    strongest = min(others, key=lambda n: out[n]["test"]["nll"])
    metrics = {
        "reef_nll_gap_rel": gap("reef"),
        "conformal_nll_gap_rel": gap("conformal"),
        "rawgp_nll_gap_rel": gap("rawgp"),
        "mcdropout_nll_gap_rel": gap("mcdropout"),
        "reef_cost_ratio": reef_cost / ens_cost,
        "ensemble4_cost_ratio": sum(train_s[:4]) / ens_cost,
        "reef_seconds": reef_cost,
        "ensemble_seconds": ens_cost,
        "reef_fit_seconds": reef.fit_seconds_,
        "operator_train_seconds": train_s[0],
        "reef_coverage_id": out["reef"]["test"]["coverage"],
        "reef_coverage_ood": out["reef"]["ood"]["coverage"],
        "ensemble_coverage_id": out["ensemble"]["test"]["coverage"],
        "ensemble_coverage_ood": out["ensemble"]["ood"]["coverage"],
        "ensemble_raw_coverage_id": out["ensemble_raw"]["test"]["coverage"],
        "inflated_coverage_id": inflated,
        "reef_drop": drop("reef"),
        "ensemble_drop": drop("ensemble"),
        "reef_minus_ensemble_drop": drop("reef") - drop("ensemble"),
        "conformal_minus_ensemble_drop": drop("conformal") - drop("ensemble"),
        "mcdropout_minus_ensemble_drop": drop("mcdropout") - drop("ensemble"),
        "operator_rel_l2": out["operator"]["test"]["rel_l2"],
        "operator_rel_l2_ood": out["operator"]["ood"]["rel_l2"],
        "ensemble_rel_l2": float(
            np.linalg.norm(preds["u/test"] - preds["ensemble/test"]) / np.linalg.norm(preds["u/test"])
        ),
        "ood_error_ratio": out["operator"]["ood"]["rel_l2"] / out["operator"]["test"]["rel_l2"],
        "reef_mean_change": mean_unchanged,
        "strongest_nll_gap_rel": (out["reef"]["test"]["nll"] - out[strongest]["test"]["nll"])
        / abs(out[strongest]["test"]["nll"]),
        **{
            f"{n}_{s}_{k}": v
            for n in ("reef", "rawgp", "ensemble", "mcdropout", "conformal")
            for s in ("test", "ood")
            for k, v in out[n][s].items()
        },
        "reef_spearman_err_std": _spearman(np.abs(preds["u/test"] - preds["reef/test"][0]), preds["reef/test"][1]),
    }
    names = {
        "reef": "REEF-GP",
        "rawgp": "GP on raw inputs (ablation)",
        "ensemble": "deep ensemble (5, scaled)",
        "ensemble_raw": "deep ensemble (raw spread)",
        "mcdropout": "MC dropout (scaled)",
        "conformal": "split-conformal constant band",
    }
    table = [
        {"method": names[n], **{f"{s} {k}": round(v, 4) for s in ("test", "ood") for k, v in out[n][s].items()}}
        for n in names
    ]
    summary = (
        f"NLL REEF-GP {out['reef']['test']['nll']:.3f} vs ensemble {nll_e:.3f} (gap "
        f"{metrics['reef_nll_gap_rel']:+.2f} of |NLL|) at {metrics['reef_cost_ratio']:.2f}x its CPU time; "
        f"coverage ID {metrics['reef_coverage_id']:.3f}, drop {metrics['reef_drop']:+.3f} vs ensemble "
        f"{metrics['ensemble_drop']:+.3f}"
    )
    notes = [
        *res.notes(),
        f"Targets standardised by the training solutions' std ({u_scale:.4g}); NLL and CRPS are per point in those "
        "units.",
        f"Operator relative L2: ID {metrics['operator_rel_l2']:.3f}, OOD (eps {cfg['eps_ood']}) "
        f"{metrics['operator_rel_l2_ood']:.3f}; REEF-GP leaves the mean unchanged (max |change| "
        f"{mean_unchanged:.1e}); Spearman(|err|, std) {metrics['reef_spearman_err_std']:.3f}.",
        f"Strongest baseline by test NLL: {names[strongest]} ({out[strongest]['test']['nll']:.3f}); REEF-GP's gap to "
        f"it {metrics['strongest_nll_gap_rel']:+.2f} of |NLL|.",
        f"CPU seconds: operator {train_s[0]:.1f}, GP fit {reef.fit_seconds_:.1f}, ensemble {sum(train_s):.1f}.",
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        summary=summary,
        notes=notes,
        tuned=res.table(),
        figures={"uncertainty": _figure(x["test"], preds)},
    )


def operator_predict(operator: Any, x: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        return operator.eval()(torch.as_tensor(x)).double().numpy()


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a.ravel(), b.ravel()).statistic)


def _figure(x: np.ndarray, preds: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
    p = x[0]
    err = np.abs(preds["u/test"][0] - preds["reef/test"][0][0])
    for ax, v, t in zip(axes, (err, preds["reef/test"][1][0]), ("|error| of the operator", "REEF-GP std")):
        sc = ax.scatter(p[:, 0], p[:, 1], c=v, s=6)
        ax.set_title(t)
        ax.set_aspect("equal")
        fig.colorbar(sc, ax=ax)
    fig.tight_layout()
    return fig
