"""Claim check of GAE: shift moves the active subspace; the gap predicts degradation; GAE recovers faithfulness.

Revision 2 (protocol v2, issue 21). What changed and why:

- *The verdict uses the authors' method.* The release (``MLAI-Yonsei/GAE``, default "theory" mode) keeps
  the encoder and both biases fixed and maps each decoder atom by :math:`U_{ood} R U_{ref}^\\top` (rescaled to
  its norm), with no refit: :class:`GAE` ``mode="theory"``. Revision 1 rotated the encoder as well (an
  inferred departure, now ``mode="direct"``); it is reported beside the verdict (``ours_*`` metrics and a
  note with its own verdict), not used for it.
- *Shifts of several kinds* (rotation 10/30/60 degrees, anisotropic stretch, new features in unused
  directions, a nonlinear warp; :func:`geode.analysis.gae.experiment.shifted_activations`): revision 1's
  Spearman over 3 monotone angles was 1 by construction.
- *Against the decoder refit*: revision 1's ">= 50 % of the excess FVU removed" was met by the plain
  decoder refit as well (75 % and 86 %), so it could not carry the verdict. The verdict threshold is now
  "GAE's held-out FVU no worse than the (tuned) decoder refit's" (geometric mean over the shifts); the
  50 % cut stays as the partial rule, with mean shift as its control.
- *Equal tuning*: every adaptation gets 4 configurations (+1 past an edge) on a validation split of the
  OOD sample at the 60-degree rotation (``geode.claims.tune``): the refit ridge (revision 1's fixed 0.1
  over-fitted 2,000 samples), our direct GAE's ridge, the release GAE's energy, the fine-tuning learning
  rate; the selected values are used at every shift. (A first run tuned at 30 degrees; it selected a
  fine-tuning rate of 3e-4 that under-trained fine-tuning at 60 degrees, FVU 0.31 against 0.25 at 1e-3,
  and one seed stepped the energy grid past 1. We moved the tuning to the hardest rotation, which can
  only favour the fine-tuning baseline, and bounded the energy, before the final run.)
- Floors and controls added (below); 3 seeds.

Revision 1's verdict (1 seed, quick): **reproduced**: Spearman 1.00 over 3 angles, GAE removed 95 % and
98 % of the excess FVU at 30 and 60 degrees, GAE/fine-tune FVU ratio at most 0.90; those numbers came from
the encoder-rotating reading, the two first thresholds did not discriminate, and the literal
(encoder-fixed) reading scored 1.35x fine-tuning at 60 degrees in the audit.

Revision 2's verdict (quick, 3 seeds, every seed alike): **not reproduced**. The floors hold (ID FVU 0.19,
the 60-degree rotation costs 0.97-0.99 FVU, fine-tuning cuts it to 0.21x). The gap predicts degradation
(Spearman 0.86 in every seed; random-subspace control 0.39-0.50). The release's GAE does not recover
faithfulness here: FVU 1.34-1.46x the tuned decoder refit's (geometric mean over the 7 shifts), 3.1-3.2x
fine-tuning's at 60 degrees (0.75-0.80 against 0.24-0.25), and it removes only 38-43 % of the excess FVU at
30/60 degrees (the refit 74-76 %): with the encoder fixed, codes of rotated inputs are wrong however well
the atoms are rotated. Our reading (encoder rotated too, ridge 10 selected) would be *reproduced*: 0.95-0.97x
the refit, 0.81x fine-tuning, 100 % of the excess removed. On new features and the nonlinear warp no
GAE reading beats the plain refit (warp 1.0: refit 0.34, ours 0.53-0.56, release 0.63-0.66). The test bed
is synthetic and its shift is the rotation our reading assumes, which favours that reading.

Thresholds (per seed, then over seeds):

- ``gap_predicts``: Spearman(faithfulness gap of the release, unadapted FVU degradation) over the 7 shifts
  >= 0.8, in 2 of 3 seeds; control: the gap of a random subspace of the same dimension.
- ``gae_beats_refit``: geometric mean over the shifts of FVU(GAE) / FVU(decoder refit) <= 1.0, in 2 of 3
  seeds; controls: mean shift and the unadapted dictionary in place of GAE.
- ``gae_matches`` (the issue's, kept): GAE's FVU within 20 % of the fine-tuned dictionary's at every
  rotation angle, in 2 of 3 seeds; control: the unadapted dictionary.
- ``gae_cuts`` (revision 1's, partial rule only): GAE removes >= 50 % of the unadapted excess FVU at 30 and
  60 degrees, in 2 of 3 seeds; control: mean shift.

Floors: the ID dictionary is trained (ID FVU <= 0.35), the 60-degree rotation hurts it (excess FVU >=
0.1), and fine-tuning learns (FVU <= 0.8 x unadapted at 60 degrees), in every seed.

Inferred for this check: the test bed (synthetic sparse features in superposition, the shift kinds and
sizes), FVU as the faithfulness metric (the paper's causal faithfulness needs an LM), the validation split
(20 % of the OOD sample at the tuning shift), and retraining only at 60 degrees (cost).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

_SHIFTS = (
    ("rotation", 10.0),
    ("rotation", 30.0),
    ("rotation", 60.0),
    ("stretch", 1.0),
    ("new_features", 1.0),
    ("warp", 0.5),
    ("warp", 1.0),
)
_GRIDS = {
    "gae_theory": {"energy": [0.9, 0.99, 0.999, 0.9999]},
    "gae_direct": {"ridge": [0.01, 0.1, 1.0, 10.0]},
    "refit": {"ridge": [0.01, 0.1, 1.0, 10.0]},
    "finetune": {"lr": [3e-4, 1e-3, 3e-3, 1e-2]},
}
_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        shifts=_SHIFTS,
        grids={m: {p: v[1:3] for p, v in g.items()} for m, g in _GRIDS.items()},
        extend=0,
        n_id=2000,
        n_ood=500,
        n_test=500,
        steps=100,
        finetune_steps=40,
        d_sae=128,
        batch_size=128,
    ),
    "quick": dict(
        shifts=_SHIFTS, grids=_GRIDS, extend=1, n_id=20000, n_ood=2000, n_test=4000, steps=2000, finetune_steps=1000
    ),
    "full": dict(
        shifts=_SHIFTS + (("rotation", 45.0), ("rotation", 75.0), ("stretch", 0.5), ("new_features", 0.5)),
        grids=_GRIDS,
        extend=2,
        n_id=100000,
        n_ood=2000,
        n_test=10000,
        steps=20000,
        finetune_steps=5000,
    ),
}
_ROT = ("rotation_10", "rotation_30", "rotation_60")
_METHODS = {
    "unadapted": "unadapted",
    "meanshift": "mean shift",
    "refit": "decoder refit (no constraint)",
    "gae": "GAE (release, theory mode)",
    "ours": "GAE (ours, direct rotation + refit)",
    "ours_rot": "GAE (ours, rotation only)",
    "finetune": "fine-tune (Adam)",
    "retrain": "retrain on OOD sample",
}


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    from scipy.stats import spearmanr

    return float(spearmanr(a, b)[0])


def _summarise(study: dict[str, Any]) -> dict[str, float]:
    rows = study["rows"]
    fv = {(r["shift"], r["method"]): r for r in rows}
    shifts = [p["shift"] for p in study["per_shift"]]

    def f(key: str, shift: str, col: str = "fvu") -> float:
        return float(fv[(shift, _METHODS[key])][col])

    degr = np.array([f("unadapted", s, "excess_fvu") for s in shifts])
    m: dict[str, float] = {"fvu_id": float(study["fvu_id"])}
    for name, col in (("gap", "gap"), ("gap_usage", "gap_usage_weighted"), ("random_gap", "gap_random_subspace")):
        m[f"{name}_rank_corr"] = _spearman(np.array([p[col] for p in study["per_shift"]]), degr)

    def cut(key: str, s: str) -> float:
        return 1.0 - f(key, s, "excess_fvu") / max(f("unadapted", s, "excess_fvu"), 1e-12)

    for key in ("gae", "ours", "refit", "meanshift"):
        m[f"{key}_excess_cut_min_30_60"] = min(cut(key, s) for s in ("rotation_30", "rotation_60"))
        m[f"{key}_over_refit_fvu_geomean"] = float(
            np.exp(np.mean([math.log(f(key, s) / f("refit", s)) for s in shifts]))
        )
        m[f"{key}_over_finetune_fvu_max"] = max(f(key, s) / f("finetune", s) for s in _ROT)
    m["unadapted_over_refit_fvu_geomean"] = float(
        np.exp(np.mean([math.log(f("unadapted", s) / f("refit", s)) for s in shifts]))
    )
    m["unadapted_over_finetune_fvu_max"] = max(f("unadapted", s) / f("finetune", s) for s in _ROT)
    m["excess_unadapted_rotation_60"] = f("unadapted", "rotation_60", "excess_fvu")
    m["finetune_over_unadapted_rotation_60"] = f("finetune", "rotation_60") / f("unadapted", "rotation_60")
    for s in shifts:
        for key, name in _METHODS.items():
            if (s, name) in fv:
                m[f"fvu_{key}_{s}"] = f(key, s)
        p = next(q for q in study["per_shift"] if q["shift"] == s)
        m[f"gap_{s}"] = float(p["gap"])
        m[f"k_{s}"] = float(p["k_theory"])
    return m


def _verdict(m: dict[str, float], prefix: str) -> str:
    """One seed's verdict under the claim's rules for another GAE reading (``ours``)."""
    ok = m["gap_rank_corr"] >= 0.8
    if ok and m[f"{prefix}_over_refit_fvu_geomean"] <= 1.0 and m[f"{prefix}_over_finetune_fvu_max"] <= 1.2:
        return "reproduced"
    if ok and m[f"{prefix}_excess_cut_min_30_60"] >= 0.5:
        return "partial"
    return "not reproduced"


@register(
    "gae",
    claim=(
        "Distribution shift rotates the subspace a model actively uses; the faithfulness gap (distance between the "
        "ID dictionary's subspace and the OOD-active subspace) predicts the explainer's degradation, and GAE, a "
        "closed-form realignment from unlabeled OOD activations, recovers faithfulness, matching training-based "
        "baselines."
    ),
    paper_figure=(
        "GAE matches or surpasses all training-based baselines in causal faithfulness across models (GPT-2, Gemma "
        "SAEs/transcoders) and OOD settings; excess loss bounded quadratically by the second-moment shift"
    ),
    baselines=("unadapted ID SAE", "mean shift", "decoder refit", "fine-tuning (Adam)", "retraining on OOD"),
    thresholds=(
        Threshold(
            "gap_predicts",
            "gap_rank_corr",
            ">=",
            0.8,
            "Spearman(faithfulness gap, FVU degradation) over 7 shifts of 4 kinds >= 0.8 (2 of 3 seeds)",
            agg="2 of 3",
            control="random_gap_rank_corr",
            arms=("law", "unadapted"),
        ),
        Threshold(
            "gae_beats_refit",
            "gae_over_refit_fvu_geomean",
            "<=",
            1.0,
            "GAE's held-out OOD FVU no worse than the tuned decoder refit's (geometric mean over shifts; 2 of 3)",
            agg="2 of 3",
            control=("meanshift_over_refit_fvu_geomean", "unadapted_over_refit_fvu_geomean"),
            arms=("gae_theory", "refit"),
        ),
        Threshold(
            "gae_matches",
            "gae_over_finetune_fvu_max",
            "<=",
            1.2,
            "GAE's OOD FVU within 20 % of the fine-tuned dictionary's at every rotation angle (2 of 3 seeds)",
            agg="2 of 3",
            control="unadapted_over_finetune_fvu_max",
            arms=("gae_theory", "finetune"),
        ),
        Threshold(
            "gae_cuts",
            "gae_excess_cut_min_30_60",
            ">=",
            0.5,
            "GAE removes >= 50 % of the unadapted excess FVU at 30 and 60 degrees (2 of 3 seeds)",
            agg="2 of 3",
            control="meanshift_excess_cut_min_30_60",
            arms=("gae_theory", "unadapted"),
        ),
    ),
    floors=(
        Threshold(
            "id_trained",
            "fvu_id",
            "<=",
            0.35,
            "floor: the ID dictionary explains >= 65 % of the ID variance (every seed)",
            agg="all",
        ),
        Threshold(
            "shift_hurts",
            "excess_unadapted_rotation_60",
            ">=",
            0.1,
            "floor: the 60-degree rotation costs the unadapted dictionary >= 0.1 FVU (every seed)",
            agg="all",
        ),
        Threshold(
            "finetune_learns",
            "finetune_over_unadapted_rotation_60",
            "<=",
            0.8,
            "floor: fine-tuning cuts the unadapted FVU by >= 20 % at 60 degrees (every seed)",
            agg="all",
            arms="finetune",
        ),
    ),
    reproduced="gap_predicts and gae_beats_refit and gae_matches",
    partial="gap_predicts and gae_cuts",
    key_metric="gae_over_refit_fvu_geomean",
    revision=2,
    method=("gae_theory", "law"),
    tuned=("gae_theory", "refit", "finetune"),
    untuned={
        "law": "the paper's law: a prediction measured on the trained arms, nothing to tune",
        "unadapted": "no hyper-parameter: the ID dictionary as it is, no adaptation",
        "meanshift": "no hyper-parameter: closed-form re-centring on the OOD mean",
    },
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geode.analysis.gae.experiment import run_shift_study

    p = _MODES[mode]
    t0 = time.perf_counter()
    study = run_shift_study(
        seed,
        shifts=p["shifts"],
        tune_shift=("rotation", 60.0),
        grids=p["grids"],
        extend=p["extend"],
        retrain_at=(("rotation", 60.0),),
        n_id=p["n_id"],
        n_ood=p["n_ood"],
        n_test=p["n_test"],
        steps=p["steps"],
        finetune_steps=p["finetune_steps"],
        d_sae=p.get("d_sae", 256),
        batch_size=p.get("batch_size", 256),
        activation="topk",
        k=8,
    )
    m = _summarise(study)
    res = study["tuning"]
    shifts = [q["shift"] for q in study["per_shift"]]
    table = [{k: (round(v, 5) if isinstance(v, float) else v) for k, v in r.items()} for r in study["rows"]]
    table += [
        {"method": "diagnostics", **{k: (round(v, 5) if isinstance(v, float) else v) for k, v in q.items()}}
        for q in study["per_shift"]
    ]

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    xs = np.arange(len(shifts))
    keys = ("unadapted", "meanshift", "refit", "gae", "ours", "finetune")
    for j, key in enumerate(keys):
        ys = [m[f"fvu_{key}_{s}"] for s in shifts]
        axes[0].bar(xs + (j - 2.5) * 0.13, ys, width=0.13, label=_METHODS[key])
    axes[0].axhline(m["fvu_id"], color="k", ls="--", lw=0.8, label="ID dictionary on ID data")
    axes[0].set_xticks(xs, shifts, rotation=30, fontsize=7)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("held-out OOD FVU")
    axes[0].legend(fontsize=6)
    gaps = [m[f"gap_{s}"] for s in shifts]
    degr = [m[f"fvu_unadapted_{s}"] - m["fvu_id"] for s in shifts]
    axes[1].plot(gaps, degr, "o")
    for g, d, s in zip(gaps, degr, shifts):
        axes[1].annotate(s, (g, d), fontsize=7)
    axes[1].set_xlabel("faithfulness gap (release: raw decoder vs OOD subspace)")
    axes[1].set_ylabel("excess FVU of the unadapted dictionary")
    axes[1].set_title(f"Spearman ρ = {m['gap_rank_corr']:.2f} (random subspace: {m['random_gap_rank_corr']:.2f})")
    fig.tight_layout()

    ours_v = _verdict(m, "ours")
    summary = (
        f"{mode}: gap-vs-degradation Spearman {m['gap_rank_corr']:.2f} over {len(shifts)} shifts (random-subspace "
        f"control {m['random_gap_rank_corr']:.2f}); GAE (release) / refit FVU geomean "
        f"{m['gae_over_refit_fvu_geomean']:.2f} (mean shift {m['meanshift_over_refit_fvu_geomean']:.2f}); GAE / "
        f"fine-tune max {m['gae_over_finetune_fvu_max']:.2f}; GAE cut at 30/60 degrees "
        f"{m['gae_excess_cut_min_30_60']:.0%} (refit {m['refit_excess_cut_min_30_60']:.0%}); ours (encoder rotated "
        f"+ refit): /refit {m['ours_over_refit_fvu_geomean']:.2f}, /fine-tune {m['ours_over_finetune_fvu_max']:.2f}"
    )
    notes = [
        "synthetic activations: d = 64, 256 unit features in a 24-dim subspace, each active w.p. 5/256 with "
        f"magnitude U[0.5, 1.5], noise 0.02; TopK SAE (k = 8, {study['d_sae']} features) on {p['n_id']} ID "
        f"samples, {p['steps']} Adam steps; shifts: {', '.join(shifts)}.",
        f"every adaptation sees the same {p['n_ood']} unlabeled OOD samples; fine-tuning runs {p['finetune_steps']} "
        f"Adam steps; FVU on {p['n_test']} held-out OOD samples; tuning on an 80/20 split of the OOD sample at "
        "rotation_60, selected values used at every shift.",
        f"our reading (encoder rotated too, re-centred, ridge refit; revision 1's method): this seed's verdict "
        f"under the same rules would be {ours_v} (/refit {m['ours_over_refit_fvu_geomean']:.3f}, /fine-tune max "
        f"{m['ours_over_finetune_fvu_max']:.3f}, cut {m['ours_excess_cut_min_30_60']:.0%}).",
        f"gap with usage-weighted decoder (ours) instead of the raw decoder: Spearman {m['gap_usage_rank_corr']:.2f}.",
        *res.notes(),
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    return Outcome(
        metrics=m, table=table, figures={"fvu_by_shift": fig}, summary=summary, notes=notes, tuned=res.table()
    )
