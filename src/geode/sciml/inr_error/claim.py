r"""Claim check of ``inr-error``: ground-truth-free predictors track global error curves and local error maps.

Revision 2 (protocol v2, issue 22). Four parts, each reported apart:

1. **The authors' predictor on held-out signals (the paper's reading; the verdict's ``tight``/``loose``/
   ``beats_raw``).** Following the release (``voilalab/global_error_bound``: ``plot_global_error_curves.ipynb``
   ``compute_c``/``fit_c``, ``helpers.py``; read, not copied), :class:`ScaledDifferencePredictor` predicts
   :math:`\hat e_k = c\,U_k/(d^\star - d_k)` on a ladder of about 16 linearly spaced levels with :math:`d^\star`
   its finest level, and :math:`c` per family is the release's rule, the smallest constant whose prediction
   covers every level. The release fits :math:`c` with the ground truth of the very signals it then plots; we
   calibrate it on the other direct-fit 2-D signals (two of china, flower and the Shepp-Logan phantom) and
   measure on the third, which the seed rotates (seed :math:`s` holds out signal :math:`s \bmod 3`, so three
   seeds are the three leave-one-out folds). The in-sample figure is reported beside the held-out one.
2. **Our inferred rules on doubling ladders (a variant; ``tight_ours``/``ours_beats_raw`` are reported, not in
   the verdict), and the worst-case bound (``covers``, ``informative``).** :class:`ErrorPredictor`'s orthogonal
   rule with :math:`\hat\rho` from the ladder, no calibration; the worst-case telescoped bound
   :math:`\sum_{j\ge k} d_j + \hat\rho d_{L-2}/(1-\hat\rho)`, its coverage and its tightness (median bound /
   true error, ``bound_over_true_median``). How often :math:`\hat\rho` sits at its cap is reported
   (``rho_clipped_fraction``).
3. **Heatmaps** (``local``): the release's rule :math:`c\,|f_k - f_{\mathrm{finest}}|` (Pearson r is
   scale-free, so :math:`c` drops out) against :math:`|f - f_k|` over the non-finest 2-D levels; our per-pixel
   orthogonal rule, the adjacent difference and the finest level (our rule; the release's rule has no larger
   model there) are reported.
4. **MRI** (4x variable-density Cartesian, noisy k-space; our extension): reported apart (``mri_*``), not in
   the verdict: the ladders converge to an aliased least-squares reconstruction, not to the phantom, which is
   outside the bound's assumptions (the release's MRI is fully sampled and noise-free, i.e. a direct fit: our
   phantom in parts 1-3).

Thresholds. ``tight`` (the authors' held-out predictor, every family's median :math:`|\hat e/e - 1| \le 0.30`)
and ``loose`` (:math:`\le 0.50`) keep the revision-1 values on the paper's reading of the predictor;
``beats_raw`` (its median ratio error at most 0.8x the raw difference :math:`d_k`'s) and ``informative``
(worst-case bound within 3x of the error, median) are new, from the issue; ``covers`` (>= 95 %) and
``local`` (r >= 0.6) are kept, ``local`` now on the release's heatmap rule (the issue). All use "2 of 3".
Floors: >= 90 % of direct-fit ladders end with a smaller error than they start; no non-finite prediction.
Controls (each must fail its threshold): tight/loose/beats_raw - the calibration signals' mean true error
curve used as the held-out prediction (ignores the held-out signal); covers - the raw difference as an upper
bound; informative - the worst-case bound with :math:`\rho` at its cap; local and the variant - the same rule
applied to another signal's ladder.

Equal tuning: the only free constant of a predictor is its scale :math:`c`. The authors' scaled difference and
our orthogonal rule each get :math:`c` tuned by :func:`geode.claims.tune` over the same geometric grid
(0.5-16, 4 extension steps) on the calibration signals' median ratio error, then applied to the held-out
signal (``tuned_*`` metrics); the verdict uses the release's covering rule for :math:`c`.

Deliberate differences from the release: no Instant-NGP / GA-Planes / FFN training (CPU budget); the verdict's
families are the closed-form bilinear grid, truncated SVD and Fourier features with a linear head, whose fits
are deterministic, so the restart optimisation gap :math:`\eta` is exactly 0. The gap is exercised on our hash
grid (reported, ``authors_*hash*``, not in the verdict): a linear ladder of table sizes (the release sweeps the
number of Instant-NGP resolutions), 3 restarts per level (the release restarts at least 6 times until the
largest pairwise distance settles), the best restart by training loss (for a direct fit the same as the
release's pick by error), :math:`\eta_k` the difference of the two restarts farthest apart;
the block :math:`b = 1` for every family (the release uses 10 for FFN and GA-Planes, whose
training is noisy); the release's grid uses sinc interpolation, ours bilinear, so the published Grid 4.5 is
reported (``authors_published_c_grid_ratio_error``), not used; :math:`c` is never fitted on the signal it is
tested on; the release keeps levels up to :math:`\min(m-b, d^\star - d_0)`, we keep those with
:math:`d_k < d^\star` and a full block above them (the same here); signals are 128^2 photographs from
scikit-learn and the phantom, not DIV2K / ATLAS.

Revision 1 (kept for the record): thresholds ``tight`` (our orthogonal rule, every family's median ratio error
<= 0.30, MRI levels pooled in), ``covers``, ``local`` (per-pixel orthogonal rule, finest levels included),
``loose``; quick seed 0: grid 0.22, Fourier 0.20, hash 0.25, SVD 0.30, CP 0.69, coverage 1.00, heatmap r 0.44
-> not reproduced. Why changed: the issue (audit R5) found the coverage near-vacuous (bound ~5x the error), no
raw-difference baseline, the heatmap rule and finest-level maps inferred and pooled, MRI pooled with direct
fits, and the authors' released predictor not implemented.

Quick-mode verdict (revision 2, 3 seeds): **not reproduced**, 3/3 seeds agree (held out: china,
flower, phantom), floors met (every ladder decreases, nothing non-finite), CPU 82-87 s per seed (52 s of it the
hash restarts; wall 280-355 s at load ~9).

- tight (<= 0.30) fails: the authors' held-out predictor's worst family is Fourier features, 1.17 / 1.09 / 1.06
  (the covering rule sets c = 8.9-10.6 because the linear Fourier ladder's increments are irregular); grid
  0.24 / 0.61 / 0.49, SVD 0.08 / 0.17 / 0.47; in-sample (the release's own protocol) 0.39 / 0.47 / 0.40 median
  over families. Control (the calibration signals' error curve) 0.37 / 0.79 / 0.47: fails tight, passes loose
  in 2 of 3 seeds, so ``loose`` does not discriminate.
- beats_raw (<= 0.8) fails: held-out / raw-difference median ratio error 0.51 / 0.99 / 1.53.
- covers passes (1.00 in every seed; control: the raw difference covers 0 %), informative fails (median bound
  5.4 / 6.4 / 4.6x the error; control with rho at its cap 11.4x); the release's theoretical bound
  (d* - d_k) x difference covers 100 % at a median 28-33x the error.
- local passes: the release's map |f_k - f_finest| r = 0.74 / 0.75 / 0.74 (control 0.03); our per-pixel rule
  0.62, adjacent differences 0.48, finest level 0.26.
- Variant: our orthogonal rule, uncalibrated, doubling ladders: worst family CP 0.88 / 0.84 / 0.87 (grid 0.22,
  Fourier 0.20 / 0.31 / 0.04, hash 0.25-0.29, SVD 0.47); 0.86 / 0.91 / 0.76 of the raw difference's error;
  rho at its cap on 26-32 % of direct ladders and on every MRI ladder.
- Equal tuning of c on the calibration signals (median ratio error): held out, the tuned scaled difference
  0.30 / 0.22 / 0.28, our tuned orthogonal rule 0.08 / 0.10 / 0.08 (the strongest predictor here), our rule
  uncalibrated on the same linear ladders 0.49 / 0.43 / 0.51. The published Grid 4.5 on our bilinear grid: 2.0-2.5.
- Restart gap (hash grids, reported): the gap terms are 8-10 % of the prediction (eta 5-8 % of the mean
  difference); held out 0.20 / 0.41 / 0.39 against 0.32 / 0.24 / 0.26 for the raw difference (c = 1.6-1.7).
- MRI (reported only): worst family 2.8 / 109 / 11 (the unregularised Fourier fit through the mask is unstable
  in some seeds), grid 1.2-3.2, hash 2.6-2.8; the error rises with the level in 1-2 of 3 ladders.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register
from geode.core import as_generator

NOISE = 0.01  # std of the complex k-space noise per (unitary) measurement; phantom intensities are in [0, 1]

# Ladders: doubling levels whose finest member has at most about a quarter as many parameters as there are
# samples (measurements for MRI), so that every member compresses (hash grids: table size T <= samples / 4).
_SIZES: dict[str, dict[str, Any]] = {
    "smoke": {
        "n1d": 512,
        "side": 32,
        "images": ("china",),
        "steps": 20,
        "scale1d": 20.0,
        "1d": {"grid": [8, 16, 32, 64], "fourier": [4, 8, 16, 32], "cp": [1, 2, 4], "hash": [8, 32, 128]},
        "2d": {"grid": [2, 4, 8], "svd": [1, 2, 4], "fourier": [4, 8, 16, 32], "cp": [1, 2, 4], "hash": [16, 64, 256]},
        "mri": {"grid": [2, 4, 8], "fourier": [4, 8, 16], "hash": [16, 64, 256]},
        "block1d": 8,
        "block2d": 4,
        "linear": {"grid": (7, 31, 8), "svd": (2, 16, 8), "fourier": (4, 32, 8)},
        "restarts": {"hash": (32, 256, 4, 2)},
    },
    "quick": {
        "n1d": 4096,
        "side": 128,
        "images": ("china", "flower"),
        "steps": 300,
        "scale1d": 100.0,
        "1d": {
            "grid": [16, 32, 64, 128, 256, 512],
            "fourier": [8, 16, 32, 64, 128, 256],
            "cp": [2, 4, 8, 16],
            "hash": [16, 64, 256, 1024],
        },
        "2d": {
            "grid": [4, 8, 16, 32],
            "svd": [2, 4, 8, 16],
            "fourier": [16, 32, 64, 128, 256, 512],
            "cp": [2, 4, 8, 16, 32],
            "hash": [64, 256, 1024, 4096],
        },
        "mri": {"grid": [4, 8, 16, 32], "fourier": [8, 16, 32, 64, 128], "hash": [64, 256, 1024, 4096]},
        "block1d": 16,
        "block2d": 8,
        "linear": {"grid": (28, 127, 16), "svd": (4, 64, 16), "fourier": (32, 512, 16)},
        "restarts": {"hash": (512, 4096, 8, 3)},
    },
    "full": {
        "n1d": 16384,
        "side": 256,
        "images": ("china", "flower"),
        "steps": 1000,
        "scale1d": 400.0,
        "1d": {
            "grid": [16, 32, 64, 128, 256, 512, 1024, 2048],
            "fourier": [8, 16, 32, 64, 128, 256, 512, 1024],
            "cp": [2, 4, 8, 16, 32],
            "hash": [16, 64, 256, 1024, 4096],
        },
        "2d": {
            "grid": [4, 8, 16, 32, 64],
            "svd": [2, 4, 8, 16, 32],
            "fourier": [16, 32, 64, 128, 256, 512, 1024, 2048],
            "cp": [2, 4, 8, 16, 32, 64],
            "hash": [64, 256, 1024, 4096, 16384],
        },
        "mri": {"grid": [4, 8, 16, 32, 64], "fourier": [8, 16, 32, 64, 128, 256], "hash": [64, 256, 1024, 4096]},
        "block1d": 16,
        "block2d": 8,
        "linear": {"grid": (56, 255, 20), "svd": (8, 128, 16), "fourier": (64, 1024, 16)},
        "restarts": {"hash": (1024, 16384, 16, 6)},
    },
}


C_GRID = tuple(float(2.0 ** (k / 2)) for k in range(-2, 9))  # 0.5 ... 16, geometric: the equal-tuning grid of c
DIRECT_2D = ("phantom",)  # added to the photographs: the authors' MRI is fully sampled and noise-free (a direct fit)


def _family(name: str, size: dict[str, Any], seed: int, *, one_d: bool) -> Any:
    from geode.sciml.inr_error.families import CPFactorisation, FourierFeatures, HashGrid

    if name == "fourier":
        return FourierFeatures(scale=size["scale1d"] if one_d else 10.0, seed=seed)
    if name == "cp":
        return CPFactorisation(block=size["block1d"] if one_d else size["block2d"], seed=seed)
    if name == "hash":
        return HashGrid(steps=size["steps"], seed=seed)
    return name


def _linear(spec: tuple[int, int, int]) -> list[int]:
    lo, hi, n = spec
    return sorted({int(round(v)) for v in np.linspace(lo, hi, n)})


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel() - a.mean(), b.ravel() - b.mean()
    den = np.sqrt((a @ a) * (b @ b))
    return float(a @ b / den) if den > 0 else 0.0


def _median(x: list[float]) -> float:
    return float(np.median(x)) if len(x) else float("nan")


def _ratio_err(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(np.where(true > 0, pred / true, np.inf) - 1.0)


def _figures(curves: list[dict[str, Any]], authors: list[dict[str, Any]], maps: dict[str, Any]) -> dict[str, Any]:
    from matplotlib.figure import Figure

    fams = sorted({c["family"] for c in curves})
    fig = Figure(figsize=(3.2 * len(fams), 3.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(fams)))
    for ax, fam in zip(axes, fams):
        for i, c in enumerate(c for c in curves if c["family"] == fam):
            col = f"C{i % 10}"
            ax.plot(c["levels"], c["true"], "o-", color=col, label=f"{c['signal']} true")
            ax.plot(c["levels"], c["orthogonal"], "s--", color=col, label="predicted (orthogonal)")
            ax.plot(c["levels"], c["worst_case"], ":", color=col, label="worst-case bound")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("compression level")
        ax.set_title(fam)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("L2 error")
    axes[0].legend(fontsize=5)
    afams = sorted({a["family"] for a in authors})
    afig = Figure(figsize=(3.2 * len(afams), 3.2), layout="constrained")
    aaxes = np.atleast_1d(afig.subplots(1, len(afams)))
    for ax, fam in zip(aaxes, afams):
        for i, a in enumerate(a for a in authors if a["family"] == fam):
            col = f"C{i % 10}"
            tag = "held out" if a["held_out"] else "calibration"
            ax.plot(a["levels"], a["true"], "o-", color=col, ms=3, label=f"{a['signal']} ({tag}) true")
            ax.plot(a["levels"], a["pred"], "s--", color=col, ms=3, label="c x mean difference")
        ax.set_yscale("log")
        ax.set_xlabel("level (linear ladder)")
        ax.set_title(f"{fam}: authors' predictor")
        ax.grid(alpha=0.3)
    aaxes[0].set_ylabel("L2 error")
    aaxes[0].legend(fontsize=5)
    heat = Figure(figsize=(6.4, 3.2 * len(maps)), layout="constrained")
    grid = heat.subplots(len(maps), 2, squeeze=False)
    for row, (key, (truth, pred, title)) in zip(grid, maps.items()):
        for ax, img, name in zip(row, (truth, pred), ("true |f - f_n|", "|f_n - f_finest| (no ground truth)")):
            ax.imshow(img, cmap="magma")
            ax.set_title(f"{key} {title}: {name}", fontsize=7)
            ax.axis("off")
    return {"error_curves": fig, "authors_heldout": afig, "error_heatmaps": heat}


@register(
    "inr-error",
    claim=(
        "The compression error of a signal parameterisation at any level is bounded by a scaled difference between "
        "its predictions at different levels, and the resulting ground-truth-free predictors are tight, "
        "generalise to new signals and track global error curves and local error maps."
    ),
    paper_figure=(
        "'closely tracks global error curves' and 'informative local error heatmaps' (no number given); the release "
        "publishes the constants Grid 4.5, FFN 1.4, Instant-NGP 0.9, GA-Planes 4.2"
    ),
    baselines=(
        "raw difference d_k = ||f_k - f_k+1|| (no scaling, no calibration)",
        "the calibration signals' own error curve (ignores the held-out signal)",
        "true error (oracle, for evaluation only)",
    ),
    thresholds=(
        Threshold(
            "tight",
            "authors_heldout_max_family_ratio_error",
            "<=",
            0.30,
            "the authors' calibrated predictor on the held-out signal: every family's median |pred/true - 1| <= 30% "
            "(2 of 3 held-out signals)",
            agg="2 of 3",
            control="control_other_signal_max_family_ratio_error",
            arms="authors' predictor",
        ),
        Threshold(
            "loose",
            "authors_heldout_max_family_ratio_error",
            "<=",
            0.50,
            "the same, <= 50% (2 of 3)",
            agg="2 of 3",
            control="control_other_signal_max_family_ratio_error",
            arms="authors' predictor",
        ),
        Threshold(
            "beats_raw",
            "authors_vs_raw",
            "<=",
            0.8,
            "held out: the calibrated predictor's median ratio error is at most 0.8x the raw difference's (2 of 3)",
            agg="2 of 3",
            control="control_other_signal_vs_raw",
            arms=("authors' predictor", "raw difference"),
        ),
        Threshold(
            "covers",
            "worst_case_coverage",
            ">=",
            0.95,
            "the worst-case bound covers >= 95% of direct-fit levels (2 of 3)",
            agg="2 of 3",
            control="raw_difference_coverage",
            arms="worst-case bound",
        ),
        Threshold(
            "informative",
            "bound_over_true_median",
            "<=",
            3.0,
            "the worst-case bound is informative: median bound / true error <= 3 over direct-fit levels (2 of 3)",
            agg="2 of 3",
            control="capped_rho_bound_over_true_median",
            arms="worst-case bound",
        ),
        Threshold(
            "local",
            "heatmap_r",
            ">=",
            0.6,
            "the release's map |f_k - f_finest| vs |f - f_k|: median Pearson r >= 0.6 over non-finest 2-D levels "
            "(2 of 3)",
            agg="2 of 3",
            control="heatmap_r_mismatched",
            arms="authors' predictor",
        ),
        Threshold(
            "tight_ours",
            "max_family_median_ratio_error",
            "<=",
            0.30,
            "variant (our orthogonal rule, doubling ladders, direct fitting, no calibration): every family's median "
            "ratio error <= 30% (2 of 3; reported, not in the verdict)",
            agg="2 of 3",
            control="mismatched_max_family_median_ratio_error",
            arms="orthogonal rule",
        ),
        Threshold(
            "ours_beats_raw",
            "orthogonal_vs_raw",
            "<=",
            0.8,
            "variant: our orthogonal rule's median ratio error is at most 0.8x the raw difference's (2 of 3; "
            "reported)",
            agg="2 of 3",
            control="mismatched_vs_raw",
            arms=("orthogonal rule", "raw difference"),
        ),
    ),
    floors=(
        Threshold(
            "ladders_fit",
            "floor_ladder_decreasing_fraction",
            ">=",
            0.9,
            "floor: >= 90% of direct-fit ladders end with a smaller error than they start (every seed)",
            agg="all",
        ),
        Threshold(
            "finite",
            "nonfinite_fraction",
            "<=",
            0.0,
            "floor: no ladder has a non-finite prediction (every seed)",
            agg="all",
        ),
    ),
    reproduced="tight and beats_raw and covers and informative and local",
    partial="loose and covers",
    key_metric="authors_heldout_max_family_ratio_error",
    revision=2,
    method=("authors' predictor", "worst-case bound"),
    untuned={
        "worst-case bound": "no hyper-parameter: the paper's closed-form bound",
        "authors' predictor": "c fixed by the release's covering rule on the calibration signals (fixed by the "
        "paper); the equally tuned c is reported beside (tuned_* metrics), not judged",
        "raw difference": "no hyper-parameter: d_k, no scaling, no calibration",
        "orthogonal rule": "no hyper-parameter in the reported variant (uncalibrated); its equally tuned c is "
        "reported beside (tuned_* metrics)",
        "calibration curve": "no hyper-parameter: the calibration signals' mean true error curve (a control)",
    },
)
def run(mode: str, seed: int) -> Outcome:
    """Fit every ladder, predict errors from the ladder alone, compare with the true errors."""
    import warnings

    from geode.claims import tune
    from geode.sciml.inr_error.families import HashGrid, fit_family
    from geode.sciml.inr_error.predictor import ErrorPredictor, ScaledDifferencePredictor
    from geode.sciml.inr_error.signals import UndersampledFourier, piecewise_chirp, sample_image, shepp_logan

    size = _SIZES[mode]
    rng = as_generator(seed)
    side = size["side"]
    phantom = shepp_logan(side)
    signals2d = {name: sample_image(name, side) for name in size["images"]} | {"phantom": phantom}
    names2d = list(signals2d)
    op = UndersampledFourier((side, side), acceleration=4.0, seed=rng)
    y = op.forward(phantom)
    y = y + NOISE * (rng.standard_normal(y.shape) + 1j * rng.standard_normal(y.shape)) / np.sqrt(2)
    linear = {f: _linear(spec) for f, spec in size["linear"].items()}

    # ---------------------------------------------------------------- fits (closed-form ladders shared)
    ladders: dict[tuple[str, str], tuple[list[int], np.ndarray, np.ndarray]] = {}  # doubling: levels, preds, truth
    lin: dict[tuple[str, str], tuple[list[int], np.ndarray, np.ndarray]] = {}  # the authors' linear ladders
    chirp = piecewise_chirp(size["n1d"])
    for fam_name, levels in size["1d"].items():
        fam = _family(fam_name, size, seed, one_d=True)
        ladders[("chirp-1d", fam_name)] = (levels, fit_family(fam, chirp, levels), chirp)
    for sig, truth in signals2d.items():
        for fam_name, levels in size["2d"].items():
            fam = _family(fam_name, size, seed, one_d=False)
            if fam_name in linear:  # independent closed-form fits per level: one call serves both ladders
                union = sorted(set(levels) | set(linear[fam_name]))
                preds = fit_family(fam, truth, union)
                pick = {lv: i for i, lv in enumerate(union)}
                ladders[(sig, fam_name)] = (levels, preds[[pick[v] for v in levels]], truth)
                lin[(sig, fam_name)] = (linear[fam_name], preds[[pick[v] for v in linear[fam_name]]], truth)
            else:
                ladders[(sig, fam_name)] = (levels, fit_family(fam, truth, levels), truth)
    mri: dict[str, tuple[list[int], np.ndarray]] = {}
    for fam_name, levels in size["mri"].items():
        mri[fam_name] = (levels, fit_family(_family(fam_name, size, seed, one_d=False), y, levels, operator=op))

    def errors(preds: np.ndarray, truth: np.ndarray) -> np.ndarray:
        return np.linalg.norm((preds - truth).reshape(len(preds), -1), axis=1)

    all_ladders = list(ladders.values()) + list(lin.values())
    nonfinite = [not np.all(np.isfinite(p)) for _, p, _ in all_ladders]
    decreasing = [bool(errors(p[[0, -1]], t)[1] < errors(p[[0, -1]], t)[0]) for _, p, t in all_ladders]

    # ---------------------------------------------------------------- our rules on the doubling ladders
    table: list[dict[str, Any]] = []
    curves: list[dict[str, Any]] = []
    rel: dict[str, list[float]] = {}
    rel_pool: dict[str, list[float]] = {"orthogonal": [], "worst_case": [], "difference": [], "mismatched": []}
    mism: dict[str, list[float]] = {}
    covered, raw_cov, bound_ratio, capped_ratio, clipped = [], [], [], [], []
    heat = {"paper": [], "orthogonal": [], "adjacent": [], "finest": [], "mismatched": []}
    maps: dict[str, tuple[np.ndarray, np.ndarray, str]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = {
            k: (lv, p, t, ErrorPredictor("orthogonal", warn=False).fit(p, lv)) for k, (lv, p, t) in ladders.items()
        }
    for (sig, fam_name), (levels, preds, truth, orth) in fitted.items():
        true = errors(preds, truth)
        g_orth = orth.predict_global()
        g_wc = ErrorPredictor("worst_case", warn=False).fit(preds, levels).predict_global()
        g_raw = ErrorPredictor("difference", warn=False).fit(preds, levels).predict_global()
        g_cap = ErrorPredictor("worst_case", rho=orth.rho_max).fit(preds, levels).predict_global()
        r_orth, r_wc, r_raw = (
            _ratio_err(g_orth.error, true),
            _ratio_err(g_wc.error, true),
            _ratio_err(g_raw.error, true),
        )
        rel.setdefault(fam_name, []).extend(r_orth.tolist())
        rel_pool["orthogonal"].extend(r_orth.tolist())
        rel_pool["worst_case"].extend(r_wc.tolist())
        rel_pool["difference"].extend(r_raw.tolist())
        cov = true <= g_wc.upper * (1 + 1e-12)
        covered.extend(cov.tolist())
        raw_cov.extend((true[:-1] <= g_raw.error[:-1]).tolist())
        with np.errstate(divide="ignore"):
            bound_ratio.extend((g_wc.upper / true).tolist())
            capped_ratio.extend((g_cap.upper / true).tolist())
        clipped.append(orth.rho_clipped_)
        one_d = truth.ndim == 1
        partner = None if one_d else names2d[(names2d.index(sig) + 1) % len(names2d)]
        r_mis = np.full(len(levels), np.nan)
        if partner is not None:
            p_preds = fitted[(partner, fam_name)][1]
            r_mis = _ratio_err(fitted[(partner, fam_name)][3].predict_global().error, true)
            mism.setdefault(fam_name, []).extend(r_mis.tolist())
            rel_pool["mismatched"].extend(r_mis.tolist())
        curves.append(
            {"signal": sig, "family": fam_name, "levels": levels, "true": true}
            | {"orthogonal": g_orth.error, "worst_case": g_wc.error}
        )
        for k, lv in enumerate(levels):
            hr = {}
            if not one_d:
                true_map = np.abs(truth - preds[k])
                if k < len(levels) - 1:
                    paper_map = np.abs(preds[k] - preds[-1])
                    hr["paper"] = _pearson(paper_map, true_map)
                    hr["orthogonal"] = _pearson(orth.heatmap(lv), true_map)
                    hr["adjacent"] = _pearson(np.abs(preds[k] - preds[k + 1]), true_map)
                    hr["mismatched"] = _pearson(np.abs(p_preds[k] - p_preds[-1]), true_map)
                    if k == len(levels) // 2 and (sig, fam_name) in ((names2d[0], "fourier"), ("phantom", "grid")):
                        maps[f"{sig}/{fam_name}"] = (true_map, paper_map, f"level {lv}")
                else:
                    hr["finest"] = _pearson(orth.heatmap(lv), true_map)
                for key, val in hr.items():
                    heat[key].append(val)
            table.append(
                {
                    "part": "direct, doubling ladder",
                    "signal": sig,
                    "family": fam_name,
                    "level": int(lv),
                    "true_error": round(float(true[k]), 4),
                    "predicted": round(float(g_orth.error[k]), 4),
                    "worst_case_bound": round(float(g_wc.upper[k]), 4),
                    "raw_difference": round(float(g_raw.error[k]), 4),
                    "ratio_error": round(float(r_orth[k]), 4),
                    "covered": bool(cov[k]),
                    "rho_hat": round(orth.rho_, 4),
                    "rho_raw": round(orth.raw_rho_, 4),
                    "heatmap_r": round(hr.get("paper", hr.get("finest", float("nan"))), 4),
                }
            )

    # ---------------------------------------------------------------- MRI (undersampled, noisy): reported apart
    mri_rel: dict[str, list[float]] = {}
    mri_clipped, mri_heat, mri_increasing = [], [], []
    for fam_name, (levels, preds) in mri.items():
        true = errors(preds, phantom)
        est = ErrorPredictor("orthogonal", warn=False).fit(preds, levels)
        r = _ratio_err(est.predict_global().error, true)
        mri_rel[fam_name] = r.tolist()
        mri_clipped.append(est.rho_clipped_)
        mri_increasing.append(bool(true[-1] > true[0]))
        for k in range(len(levels) - 1):
            mri_heat.append(_pearson(np.abs(preds[k] - preds[-1]), np.abs(phantom - preds[k])))
        curves.append(
            {"signal": "mri (4x, noisy)", "family": fam_name, "levels": levels, "true": true}
            | {"orthogonal": est.predict_global().error, "worst_case": est.predict_global().upper}
        )
        for k, lv in enumerate(levels):
            table.append(
                {
                    "part": "MRI 4x undersampled, noisy",
                    "signal": "shepp-logan",
                    "family": fam_name,
                    "level": int(lv),
                    "true_error": round(float(true[k]), 4),
                    "predicted": round(float(est.predict_global().error[k]), 4),
                    "ratio_error": round(float(r[k]), 4),
                    "rho_hat": round(est.rho_, 4),
                    "rho_raw": round(est.raw_rho_, 4),
                }
            )

    # ---------------------------------------------------------------- the authors' predictor, held out
    held = names2d[seed % len(names2d)]
    calib = [s for s in names2d if s != held]
    sdp: dict[tuple[str, str], tuple[ScaledDifferencePredictor, np.ndarray, ErrorPredictor]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (sig, fam_name), (levels, preds, truth) in lin.items():
            p = ScaledDifferencePredictor(block=1).fit(preds, levels)
            e = errors(preds, truth)[p.index_]
            sdp[(sig, fam_name)] = (p, e, ErrorPredictor("orthogonal", warn=False).fit(preds, levels))
    c_auth = {f: max(sdp[(s, f)][0].calibrate(sdp[(s, f)][1]) for s in calib) for f in linear}

    def score(method: str, params: dict[str, Any]) -> float:  # median ratio error on the calibration signals
        rule, fam = method.split("/")
        vals: list[float] = []
        for s in calib:
            p, e, o = sdp[(s, fam)]
            pred = (
                p.predict(params["c"])
                if rule == "scaled difference"
                else params["c"] * o.predict_global().error[p.index_]
            )
            vals.extend(_ratio_err(pred, e).tolist())
        return _median(vals)

    grids = {f"{rule}/{f}": {"c": list(C_GRID)} for rule in ("scaled difference", "orthogonal") for f in linear}
    res = tune(score, grids, maximize=False, extend=4, limits={"c": (1e-6, 1e6)})

    auth_held: dict[str, list[float]] = {}
    metrics_a: dict[str, float] = {}
    pools = {k: [] for k in ("auth", "raw", "ctrl", "insample", "tuned_auth", "tuned_orth", "orth_uncal", "pub")}
    cov_pred, cov_bound, bound_over = [], [], []
    authors_curves: list[dict[str, Any]] = []
    for fam in linear:
        p, e, o = sdp[(held, fam)]
        pred = p.predict(c_auth[fam])
        r = _ratio_err(pred, e)
        auth_held[fam] = r.tolist()
        pools["auth"].extend(r.tolist())
        pools["raw"].extend(_ratio_err(p.mean_difference_, e).tolist())
        other = np.mean([sdp[(s, fam)][1] for s in calib], axis=0)  # the calibration signals' true curve
        rc = _ratio_err(other, e)
        pools["ctrl"].extend(rc.tolist())
        metrics_a[f"control_other_signal_ratio_error_{fam}"] = _median(rc.tolist())
        for s in calib:
            pc, ec, _ = sdp[(s, fam)]
            pools["insample"].extend(_ratio_err(pc.predict(c_auth[fam]), ec).tolist())
        pools["tuned_auth"].extend(_ratio_err(p.predict(res.params(f"scaled difference/{fam}")["c"]), e).tolist())
        o_pred = o.predict_global().error[p.index_]
        pools["tuned_orth"].extend(_ratio_err(res.params(f"orthogonal/{fam}")["c"] * o_pred, e).tolist())
        pools["orth_uncal"].extend(_ratio_err(o_pred, e).tolist())
        if fam == "grid":
            pools["pub"].extend(_ratio_err(p.predict(ScaledDifferencePredictor.PUBLISHED["grid"]), e).tolist())
        cov_pred.extend((pred >= e * (1 - 1e-12)).tolist())
        cov_bound.extend((p.bound_ >= e).tolist())
        with np.errstate(divide="ignore"):
            bound_over.extend((p.bound_ / e).tolist())
        metrics_a[f"authors_c_{fam}"] = c_auth[fam]
        metrics_a[f"authors_heldout_ratio_error_{fam}"] = _median(r.tolist())
        for s in names2d:
            ps, es, _ = sdp[(s, fam)]
            authors_curves.append(
                {"signal": s, "family": fam, "levels": ps.levels_, "true": es, "pred": ps.predict(c_auth[fam])}
                | {"held_out": s == held}
            )
        for k, lv in enumerate(p.levels_):
            table.append(
                {
                    "part": f"authors' predictor, held out: {held}",
                    "signal": held,
                    "family": fam,
                    "level": int(lv),
                    "true_error": round(float(e[k]), 4),
                    "predicted": round(float(pred[k]), 4),
                    "raw_difference": round(float(p.mean_difference_[k]), 4),
                    "theoretical_bound": round(float(p.bound_[k]), 4),
                    "ratio_error": round(float(r[k]), 4),
                    "covered": bool(pred[k] >= e[k]),
                }
            )

    # ------------------------------------------ the authors' predictor with the restart gap (hash grids; reported)
    lo, hi, n_lv, n_restarts = size["restarts"]["hash"]
    h_levels = _linear((lo, hi, n_lv))
    gap_fit: dict[str, tuple[ScaledDifferencePredictor, np.ndarray]] = {}
    for sig, truth in signals2d.items():
        runs = np.stack(
            [
                fit_family(HashGrid(steps=size["steps"], seed=1000 * seed + r), truth, h_levels)
                for r in range(n_restarts)
            ]
        )  # (R, L, *shape)
        errs = np.linalg.norm((runs - truth).reshape(n_restarts, len(h_levels), -1), axis=2)
        best = runs[errs.argmin(axis=0), np.arange(len(h_levels))]  # lowest training loss (= error: a direct fit)
        p = ScaledDifferencePredictor().fit(best, h_levels, restarts=[runs[:, k] for k in range(len(h_levels))])
        gap_fit[sig] = (p, errors(best, truth)[p.index_])
    c_hash = max(gap_fit[s][0].calibrate(gap_fit[s][1]) for s in calib)
    p_h, e_h = gap_fit[held]
    r_h = _ratio_err(p_h.predict(c_hash), e_h)
    hash_metrics = {
        "authors_c_hash": c_hash,
        "authors_heldout_ratio_error_hash": _median(r_h.tolist()),
        "authors_hash_raw_difference_ratio_error": _median(_ratio_err(p_h.mean_difference_, e_h).tolist()),
        # the share of the prediction that the optimisation-gap terms contribute
        "authors_hash_gap_share": _median((1.0 - p_h.mean_difference_ / p_h.predict(1.0)).tolist()),
        "authors_hash_eta_over_difference": _median((p_h.eta_ / p_h.mean_difference_).tolist()),
    }
    for k, lv in enumerate(p_h.levels_):
        table.append(
            {
                "part": f"authors' predictor with restart gap (hash, reported), held out: {held}",
                "signal": held,
                "family": "hash",
                "level": int(lv),
                "true_error": round(float(e_h[k]), 4),
                "predicted": round(float(c_hash * p_h.predict(1.0)[k]), 4),
                "raw_difference": round(float(p_h.mean_difference_[k]), 4),
                "eta": round(float(p_h.eta_[k]), 4),
                "ratio_error": round(float(r_h[k]), 4),
            }
        )

    # ---------------------------------------------------------------- metrics
    metrics: dict[str, float] = {}
    for fam_name, vals in rel.items():
        metrics[f"median_ratio_error_{fam_name}"] = _median(vals)
    metrics["max_family_median_ratio_error"] = max(metrics[f"median_ratio_error_{f}"] for f in rel)
    metrics["mismatched_max_family_median_ratio_error"] = max(_median(v) for v in mism.values())
    med = {k: _median(v) for k, v in rel_pool.items()}
    metrics["median_ratio_error_orthogonal_rule"] = med["orthogonal"]
    metrics["median_ratio_error_worst_case_rule"] = med["worst_case"]
    metrics["median_ratio_error_raw_difference"] = med["difference"]
    metrics["orthogonal_vs_raw"] = med["orthogonal"] / med["difference"]
    metrics["mismatched_vs_raw"] = med["mismatched"] / med["difference"]
    metrics["worst_case_coverage"] = float(np.mean(covered))
    metrics["raw_difference_coverage"] = float(np.mean(raw_cov))
    metrics["bound_over_true_median"] = _median(bound_ratio)
    metrics["bound_over_true_max"] = float(np.max(bound_ratio))
    metrics["capped_rho_bound_over_true_median"] = _median(capped_ratio)
    metrics["rho_clipped_fraction"] = float(np.mean(clipped))
    metrics["heatmap_r"] = _median(heat["paper"])
    metrics["heatmap_r_orthogonal_rule"] = _median(heat["orthogonal"])
    metrics["heatmap_r_adjacent"] = _median(heat["adjacent"])
    metrics["heatmap_r_finest"] = _median(heat["finest"])
    metrics["heatmap_r_mismatched"] = _median(heat["mismatched"])
    for fam_name, vals in mri_rel.items():
        metrics[f"mri_median_ratio_error_{fam_name}"] = _median(vals)
    metrics["mri_max_family_median_ratio_error"] = max(_median(v) for v in mri_rel.values())
    metrics["mri_rho_clipped_fraction"] = float(np.mean(mri_clipped))
    metrics["mri_error_rising_fraction"] = float(np.mean(mri_increasing))
    metrics["mri_heatmap_r"] = _median(mri_heat)
    metrics |= metrics_a | hash_metrics
    metrics["authors_heldout_max_family_ratio_error"] = max(_median(v) for v in auth_held.values())
    metrics["authors_heldout_median_ratio_error"] = _median(pools["auth"])
    metrics["authors_insample_median_ratio_error"] = _median(pools["insample"])
    metrics["authors_raw_difference_median_ratio_error"] = _median(pools["raw"])
    metrics["authors_vs_raw"] = _median(pools["auth"]) / _median(pools["raw"])
    metrics["control_other_signal_max_family_ratio_error"] = max(
        metrics_a[f"control_other_signal_ratio_error_{f}"] for f in linear
    )
    metrics["control_other_signal_vs_raw"] = _median(pools["ctrl"]) / _median(pools["raw"])
    metrics["authors_heldout_coverage"] = float(np.mean(cov_pred))
    metrics["authors_bound_coverage"] = float(np.mean(cov_bound))
    metrics["authors_bound_over_true_median"] = _median(bound_over)
    metrics["authors_published_c_grid_ratio_error"] = _median(pools["pub"])
    metrics["tuned_scaled_difference_heldout_ratio_error"] = _median(pools["tuned_auth"])
    metrics["tuned_orthogonal_heldout_ratio_error"] = _median(pools["tuned_orth"])
    metrics["orthogonal_linear_ladder_heldout_ratio_error"] = _median(pools["orth_uncal"])
    metrics["floor_ladder_decreasing_fraction"] = float(np.mean(decreasing))
    metrics["nonfinite_fraction"] = float(np.mean(nonfinite))
    metrics = {k: (float(v) if np.isfinite(v) else 1e6) for k, v in metrics.items()}

    worst = max(auth_held, key=lambda f: _median(auth_held[f]))
    summary = (
        f"authors' calibrated predictor, held-out {held}: median |pred/true - 1| "
        + ", ".join(f"{f} {metrics[f'authors_heldout_ratio_error_{f}']:.2f}" for f in linear)
        + f" (worst {worst}; in-sample {metrics['authors_insample_median_ratio_error']:.2f}; raw difference "
        f"{metrics['authors_raw_difference_median_ratio_error']:.2f}); our orthogonal rule (doubling ladders): worst "
        f"family {metrics['max_family_median_ratio_error']:.2f}; worst-case bound covers "
        f"{100 * metrics['worst_case_coverage']:.0f}% at median {metrics['bound_over_true_median']:.1f}x the error; "
        f"heatmap r {metrics['heatmap_r']:.2f}; MRI (4x) worst family "
        f"{metrics['mri_max_family_median_ratio_error']:.2f}"
    )
    notes = [
        f"Direct fitting: 1-D piecewise-smooth + chirp ({size['n1d']} samples); sklearn's {', '.join(size['images'])} "
        f"(grey, {side}^2) and the Shepp-Logan phantom ({side}^2; the release's MRI is fully sampled and noise-free, "
        "i.e. a direct fit). MRI reported apart: Shepp-Logan through a 4x variable-density Cartesian mask "
        f"({op.measurement_shape[0]} of {side} lines), complex noise sigma = {NOISE}; its ladders converge to an "
        "aliased reconstruction, outside the bound's assumptions.",
        f"The authors' predictor (paper's reading, verdict): linear ladders {linear} (d* = the finest level, block 1, "
        "no optimisation gap: closed-form fits are deterministic), c per family = the release's rule (smallest c "
        f"covering every calibration level) fitted on {', '.join(calib)} and applied to {held} (the seed rotates the "
        f"held-out signal). c: " + ", ".join(f"{f} {c_auth[f]:.2f}" for f in linear) + ". The published Grid 4.5 is "
        "for the release's sinc grid; on our bilinear grid it gives "
        f"{metrics['authors_published_c_grid_ratio_error']:.2f}.",
        "Equal tuning: c of the authors' scaled difference and of our orthogonal rule tuned with the same grid and "
        "budget on the calibration signals (median ratio error), applied to the held-out signal "
        f"({metrics['tuned_scaled_difference_heldout_ratio_error']:.2f} vs "
        f"{metrics['tuned_orthogonal_heldout_ratio_error']:.2f}); our rule uncalibrated on the same linear ladders: "
        f"{metrics['orthogonal_linear_ladder_heldout_ratio_error']:.2f}.",
        f"Contraction estimate at its cap: {100 * metrics['rho_clipped_fraction']:.0f}% of direct doubling ladders, "
        f"{100 * metrics['mri_rho_clipped_fraction']:.0f}% of MRI ladders (ErrorPredictor warns with "
        "NotContractingWarning there).",
        f"Heatmaps (2-D direct, non-finest levels): the release's |f_k - f_finest| r {metrics['heatmap_r']:.2f}; our "
        f"per-pixel orthogonal rule {metrics['heatmap_r_orthogonal_rule']:.2f}; adjacent |f_k - f_k+1| "
        f"{metrics['heatmap_r_adjacent']:.2f}; finest level (orthogonal rule) {metrics['heatmap_r_finest']:.2f}; "
        f"control (another signal's map) {metrics['heatmap_r_mismatched']:.2f}.",
        "Controls: tight/loose - the calibration signals' mean true error curve used as the held-out prediction; "
        "covers - the raw difference as an upper bound; informative - the worst-case bound with rho at its cap; "
        "local and the variant - the same rule applied to another signal's ladder.",
        f"Hash grids: 8 resolutions, 2 features, linear head, {size['steps']} full-batch Adam steps (lr 1e-2).",
    ]
    notes += res.notes()
    return Outcome(
        metrics=metrics,
        table=table,
        figures=_figures(curves, authors_curves, maps),
        summary=summary,
        notes=notes,
        tuned=res.table(),
    )
