"""Claim check of GARD: restoring a frozen reconstructor's features beats pixel-space restoration on geometry.

Thresholds (fixed by the issue, before any run): ``reproduced`` if GARD gives the best depth error under
degradation and beats pixel-space restoration on geometry; ``partial`` if it beats no restoration.

Read as (written before the first run):

- *best depth error*: ``gard_margin_best`` = min(AbsRel of no restoration, the pixel-space restorer, the latent
  restorer) - AbsRel of GARD > 0 on every seed (``agg="all"``);
- *beats pixel-space restoration on geometry*: besides AbsRel (already inside the first threshold), the second
  standard depth-geometry measure, ``gard_minus_pixel_delta1`` = delta1(GARD) - delta1(pixel) > 0 on every seed;
- *beats no restoration*: ``gard_gain_vs_none`` = AbsRel(none) - AbsRel(GARD) > 0 on every seed.

Added before the first run (the protocol needs them; the issue names none):

- *validity floors*: the frozen reconstructor's clean-view AbsRel is at most 0.75 x that of the best constant
  depth (the median training depth), every seed; the degradations matter (AbsRel on degraded views >= 1.1 x
  clean, every seed); the pixel-space restorer learns (its PSNR beats the degraded input's, every seed); no
  trained restorer is non-finite;
- *negative control* for every verdict threshold: GARD with an untrained denoiser (zero velocity, so it
  returns the LQ features plus the 0.3 noise of its starting point), measured in the same run;
- *strongest baseline*: the lowest test AbsRel among the baselines is reported (``strongest_baseline_absrel``
  and its name in the notes), and the ablation GARD without the alignment loss (``gard_noalign``).

Set-up. Scenes: a tilted wall, a floor and 2-4 textured, shaded spheres, ray-cast at 24 x 32 from 3 cameras
translated along x (``scenes.py``); train / validation / test scenes are disjoint draws. Degradations: one of
noise, motion blur, JPEG-like, low light per scene (each view its own strength), two degraded copies of each
training scene. Reconstructor (the DA3 stand-in): patch 4, width 32, 2 + 2 blocks alternating local and global
attention, log-depth L1 on clean views, then frozen. Decoder: per-token MLP to RGB on clean features, frozen.
Restorers, all of the same width and depth (4 blocks, width 32) and trained for the same number of steps with
the same optimiser and schedule (AdamW betas (0.9, 0.95), gradient clipping 1, constant then linear decay to
0.1x, the authors' schedule shape): GARD (flow matching in feature space, alternating local/global attention,
alignment loss lambda = 1); the latent restorer (the same flow matching in feature space, local attention only,
no alignment); the pixel-space restorer (per-view patch transformer + 3x3 refiner, regression to the clean
image, fed to the frozen reconstructor). Equal tuning: every restorer gets the same learning-rate grid, selected
on validation AbsRel (through the frozen reconstructor). Euler steps at restoration: 10.

``full`` mode is written for a GPU machine (CUDA when available): more scenes, steps and views; not run here.

Before the 3-seed run, one timing trial of seed 0 (restorer batch 16, no grid extension) took 141 CPU-s; the
restorer batch was halved to 8 and ``extend=1`` added (the trial had selected GARD's learning rate on the
lower edge), nothing else changed. Trial numbers (test AbsRel): none 0.250, pixel 0.200, latent 0.224,
GARD 0.228.

Quick verdict (3 seeds, revision 1): ``partial``. Test AbsRel, seeds 0 / 1 / 2: no restoration 0.250 / 0.227 /
0.254; pixel-space restorer 0.205 / 0.195 / 0.198 (the strongest baseline in every seed); latent restorer
0.223 / 0.221 / 0.236; GARD 0.224 / 0.221 / 0.237; GARD without alignment 0.224 / 0.222 / 0.236; clean views
0.177 / 0.175 / 0.181. GARD beats no restoration in every seed (gain +0.026 / +0.006 / +0.017; the untrained
control -0.005 / -0.008 / -0.007 fails, so the threshold discriminates), but not the pixel-space restorer
(margin to the best baseline -0.019 / -0.027 / -0.039; delta1 0.696 / 0.708 / 0.684 vs pixel 0.740 / 0.754 /
0.760). Cross-view attention and the alignment loss make no measurable difference here (GARD vs latent
+0.001 / -0.000 / +0.001 AbsRel; alignment on vs off within 0.001). PSNR: pixel restorer 20.9 / 21.9 / 21.1 dB,
GARD through the frozen decoder 16.5 / 16.6 / 15.7 dB (decoder ceiling on clean features 21.4 / 19.9 / 19.7),
degraded input 14.8 / 15.9 / 14.6. Floors pass: reconstructor clean AbsRel 0.35-0.38 x the constant's;
degradations raise AbsRel 1.30-1.41x; the pixel restorer gains 6.0-6.4 dB. The pixel restorer's learning
rate was selected at the extended upper edge (4e-3) in every seed, as the latent restorer's in 2 seeds and
GARD's in 1: the grid may be too low for all three. At 250 steps the flow-matching restorers are probably
far from converged while the regression restorer is not: this is a small-compute finding, not a refutation
of the paper's scale. Quick mode: 116 / 117 / 126 CPU-s per seed (over the ~90 s target, under the 3-minute
limit; 450-490 s wall under contention).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: gard, pixel, latent. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        n_train=24, n_val=8, n_test=8, views=3, rec_steps=8, dec_steps=5, steps=4, rec_batch=4, batch=4, lrs=[1e-3]
    ),
    "quick": dict(
        n_train=400,
        n_val=48,
        n_test=128,
        views=3,
        rec_steps=400,
        dec_steps=200,
        steps=250,
        rec_batch=16,
        batch=8,
        lrs=[5e-4, 1e-3, 2e-3],
    ),
    "full": dict(
        n_train=5000,
        n_val=200,
        n_test=1000,
        views=4,
        rec_steps=5000,
        dec_steps=2000,
        steps=5000,
        rec_batch=32,
        batch=32,
        lrs=[2.5e-4, 5e-4, 1e-3, 2e-3],
    ),
}
DIM, HEADS, PATCH, HW = 32, 2, 4, (24, 32)
RESTORERS = ("pixel", "latent", "gard")
_NAMES = {
    "none": "no restoration",
    "pixel": "pixel-space restorer",
    "latent": "latent restorer (no cross-view attention, no alignment)",
    "gard": "GARD",
    "gard_noalign": "GARD without alignment (ablation)",
    "untrained": "GARD, untrained denoiser (control)",
    "clean": "clean views (reference)",
}


def _device(mode: str) -> Any:
    import torch

    return torch.device(device_for(mode))


def _data(seed: int, cfg: dict[str, Any]) -> dict[str, Any]:
    import torch

    from geode.vision3d.gard.scenes import degrade_views, render_multiview_scenes

    out: dict[str, Any] = {}
    for split, n, off in (("train", cfg["n_train"], 0), ("val", cfg["n_val"], 1), ("test", cfg["n_test"], 2)):
        sc = render_multiview_scenes(n, n_views=cfg["views"], height=HW[0], width=HW[1], seed=seed * 1000 + off)
        copies = 2 if split == "train" else 1
        lq = [degrade_views(sc["images"], seed=seed * 1000 + 10 * off + c + 5)[0] for c in range(copies)]
        out[split] = {
            "clean": torch.tensor(sc["images"]),
            "lq": torch.tensor(np.concatenate(lq)),
            "depth": torch.tensor(sc["depth"]),
            "cam_x": torch.tensor(sc["cam_x"]),
        }
        out["focal"] = float(sc["focal"])
    return out


def _schedule(opt: Any, steps: int) -> Any:
    import torch

    def f(k: int) -> float:  # constant for the first half, then linear decay to 0.1x (the authors' shape)
        half = steps // 2
        return 1.0 if k < half else 1.0 - 0.9 * (k - half) / max(1, steps - half)

    return torch.optim.lr_scheduler.LambdaLR(opt, f)


def _depth_metrics(pred: Any, gt: Any) -> tuple[float, float]:
    import torch

    rel = ((pred - gt).abs() / gt).mean()
    ratio = torch.maximum(pred / gt, gt / pred)
    return float(rel), float((ratio < 1.25).float().mean())


def _psnr(x: Any, y: Any) -> float:
    mse = float(((x - y) ** 2).mean())
    return 10 * math.log10(1.0 / max(mse, 1e-12))


def _train_reconstructor(data: dict[str, Any], cfg: dict[str, Any], seed: int, dev: Any) -> Any:
    import torch

    from geode.vision3d.gard import MultiViewReconstructor

    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 11)
    rec = MultiViewReconstructor(HW, PATCH, dim=DIM, heads=HEADS).to(dev)
    opt = torch.optim.AdamW(rec.parameters(), lr=2e-3, weight_decay=0.0)
    sch = _schedule(opt, cfg["rec_steps"])
    x, d = data["train"]["clean"], data["train"]["depth"]
    for _ in range(cfg["rec_steps"]):
        i = torch.randint(0, x.shape[0], (cfg["rec_batch"],), generator=g)
        loss = (rec(x[i].to(dev)).log() - d[i].to(dev).log()).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sch.step()
    return rec.requires_grad_(False).eval()


def _train_decoder(rec: Any, feats: Any, clean: Any, cfg: dict[str, Any], seed: int, dev: Any) -> Any:
    import torch

    from geode.vision3d.gard import FeatureDecoder

    torch.manual_seed(seed + 1)
    g = torch.Generator().manual_seed(seed + 12)
    dec = FeatureDecoder(DIM, PATCH, HW).to(dev)
    opt = torch.optim.AdamW(dec.parameters(), lr=3e-3, weight_decay=0.0)
    for _ in range(cfg["dec_steps"]):
        i = torch.randint(0, feats.shape[0], (cfg["batch"],), generator=g)
        loss = (dec(feats[i]) - clean[i].to(dev)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return dec.requires_grad_(False).eval()


def _batched(fn: Any, x: Any, bs: int = 64) -> Any:
    import torch

    with torch.no_grad():
        return torch.cat([fn(x[i : i + bs]) for i in range(0, x.shape[0], bs)])


def _make_gard(kind: str, rec: Any, dec: Any, dev: Any) -> Any:
    from geode.vision3d.gard import GARDDenoiser, GARDRestorer

    den = GARDDenoiser(DIM, rec.n_tokens, hidden=DIM, depth=4, heads=HEADS, cross_view=kind != "latent").to(dev)
    return GARDRestorer(rec, den, dec, align_weight=1.0 if kind == "gard" else 0.0, steps=10)


def _train_restorer(kind: str, lr: float, ctx: dict[str, Any], cfg: dict[str, Any], seed: int) -> Any:
    import torch

    from geode.vision3d.gard import PixelRestorer

    dev = ctx["dev"]
    torch.manual_seed(seed + 2)
    g = torch.Generator(device=dev).manual_seed(seed + 13)
    gi = torch.Generator().manual_seed(seed + 14)
    n = ctx["z_lq"].shape[0]
    model = PixelRestorer(PATCH, HW, hidden=DIM, depth=4, heads=HEADS).to(dev) if kind == "pixel" else None
    if model is None:
        model = _make_gard(kind, ctx["rec"], ctx["dec"], dev)
        params = model.trainable_parameters()
    else:
        params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    sch = _schedule(opt, cfg["steps"])
    n_clean = ctx["z_hq"].shape[0]
    for _ in range(cfg["steps"]):
        i = torch.randint(0, n, (cfg["batch"],), generator=gi)
        j = i % n_clean  # the clean scene of each degraded copy
        if kind == "pixel":
            loss = (model(ctx["lq"][i].to(dev)) - ctx["clean"][j].to(dev)).pow(2).mean()
        else:
            tg = ctx["targets"][j].to(dev) if kind == "gard" else None
            mk = ctx["mask"][j].to(dev) if kind == "gard" else None
            loss = model.loss_from_features(ctx["z_hq"][j], ctx["z_lq"][i], tg, mk, generator=g)["loss"]
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sch.step()
    return model.eval()


def _predict(kind: str, model: Any, rec: Any, lq: Any, seed: int, dev: Any) -> dict[str, Any]:
    """Depth (and RGB) of degraded views after restoration by ``model`` (``None``: no restoration)."""
    import torch

    lq = lq.to(dev)
    if kind == "none":
        return {"depth": _batched(rec, lq), "rgb": lq}
    if kind == "pixel":
        rgb = _batched(model, lq)
        return {"depth": _batched(rec, rgb), "rgb": rgb}
    g = torch.Generator(device=dev).manual_seed(seed + 99)
    outs = [model.restore(lq[i : i + 64], generator=g) for i in range(0, lq.shape[0], 64)]
    return {"depth": torch.cat([o["depth"] for o in outs]), "rgb": torch.cat([o["rgb"] for o in outs])}


@register(
    "gard",
    claim=(
        "Flow-matching restoration in the feature space of a frozen feed-forward multi-view reconstructor, with "
        "cross-view attention aligned to geometric correspondences, recovers scene geometry under image "
        "degradations better than restoring pixels or restoring latents view by view."
    ),
    paper_figure="DA3 benchmark: best depth and pose under degradations vs Restormer, HI-Diff, VAE-latent restoration",
    baselines=("no restoration", "pixel-space restorer", "latent restorer (no cross-view attention / alignment)"),
    thresholds=(
        Threshold(
            "best_depth",
            "gard_margin_best",
            ">",
            0.0,
            "GARD's test AbsRel is below every baseline's (none, pixel, latent), every seed",
            agg="all",
            control="untrained_margin_best",
        ),
        Threshold(
            "beats_pixel_geometry",
            "gard_minus_pixel_delta1",
            ">",
            0.0,
            "GARD's depth delta1 accuracy beats the pixel-space restorer's, every seed",
            agg="all",
            control="untrained_minus_pixel_delta1",
            arms=("gard", "pixel"),
        ),
        Threshold(
            "beats_none",
            "gard_gain_vs_none",
            ">",
            0.0,
            "GARD lowers test AbsRel relative to no restoration, every seed",
            agg="all",
            control="untrained_gain_vs_none",
            arms=("gard", "none"),
        ),
    ),
    floors=(
        Threshold(
            "reconstructor_learns",
            "clean_over_constant_absrel",
            "<=",
            0.75,
            "floor: the frozen reconstructor's clean AbsRel is <= 0.75 x the best constant depth's, every seed",
            agg="all",
        ),
        Threshold(
            "degradation_matters",
            "degraded_over_clean_absrel",
            ">=",
            1.1,
            "floor: degraded views raise the reconstructor's AbsRel by >= 10%, every seed",
            agg="all",
        ),
        Threshold(
            "pixel_learns",
            "pixel_psnr_gain",
            ">",
            0.0,
            "floor: the pixel-space restorer's PSNR beats the degraded input's, every seed",
            agg="all",
            arms=("pixel",),
        ),
        Threshold(
            "all_finite", "nonfinite_restorers", "<=", 0.0, "floor: no trained restorer is non-finite", agg="all"
        ),
    ),
    reproduced="best_depth and beats_pixel_geometry",
    partial="beats_none",
    method="gard",
    tuned=("gard", "pixel", "latent"),
    untuned={"none": "no restoration: no parameter (the degraded views go to the frozen reconstructor as they are)"},
    key_metric="gard_margin_best",
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    cfg = _MODES[mode]
    dev = _device(mode)
    t0 = time.perf_counter()
    data = _data(seed, cfg)
    rec = _train_reconstructor(data, cfg, seed, dev)
    tr = data["train"]
    z_hq = _batched(rec.features, tr["clean"].to(dev))
    z_lq = _batched(rec.features, tr["lq"].to(dev))
    dec = _train_decoder(rec, z_hq, tr["clean"], cfg, seed, dev)
    probe = _make_gard("gard", rec, dec, dev)
    tg, mk = [], []
    for i in range(0, tr["clean"].shape[0], 64):
        a, b = probe.alignment_targets(tr["clean"][i : i + 64].to(dev), tr["cam_x"][i : i + 64].to(dev), data["focal"])
        tg.append(a)
        mk.append(b)
    ctx = dict(
        dev=dev,
        rec=rec,
        dec=dec,
        z_hq=z_hq,
        z_lq=z_lq,
        targets=torch.cat(tg),
        mask=torch.cat(mk),
        lq=tr["lq"],
        clean=tr["clean"],
    )
    val, test = data["val"], data["test"]

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        model = _train_restorer(method, params["lr"], ctx, cfg, seed)
        pred = _predict(method, model, rec, val["lq"], seed, dev)["depth"]
        score = _depth_metrics(pred, val["depth"].to(dev))[0]
        return (score if math.isfinite(score) else math.inf), model

    res = tune(fit, {m: {"lr": cfg["lrs"]} for m in RESTORERS}, maximize=False, extend=1)
    models = {m: res.payload(m) for m in RESTORERS}
    models["gard_noalign"] = _train_restorer("gard_noalign", res.params("gard")["lr"], ctx, cfg, seed)
    models["untrained"] = _make_gard("gard", rec, dec, dev).eval()
    gt = test["depth"].to(dev)
    absrel: dict[str, float] = {}
    delta1: dict[str, float] = {}
    psnr: dict[str, float] = {}
    for kind in ("none", *RESTORERS, "gard_noalign", "untrained"):
        out = _predict(kind if kind in ("none", "pixel") else "gard", models.get(kind), rec, test["lq"], seed, dev)
        absrel[kind], delta1[kind] = _depth_metrics(out["depth"], gt)
        psnr[kind] = _psnr(out["rgb"], test["clean"].to(dev))
    absrel["clean"], delta1["clean"] = _depth_metrics(_batched(rec, test["clean"].to(dev)), gt)
    psnr["clean"] = _psnr(_batched(lambda x: dec(rec.features(x)), test["clean"].to(dev)), test["clean"].to(dev))
    const = float(tr["depth"].median())
    absrel_const = _depth_metrics(torch.full_like(gt, const), gt)[0]
    nonfinite = sum(not math.isfinite(absrel[k]) for k in (*RESTORERS, "gard_noalign"))

    baselines = ("none", "pixel", "latent")
    best_base = min(baselines, key=lambda k: absrel[k])
    m: dict[str, float] = {}
    for k in absrel:
        m[f"absrel_{k}"] = absrel[k]
        m[f"delta1_{k}"] = delta1[k]
        m[f"psnr_{k}"] = psnr[k]
    m["absrel_constant"] = absrel_const
    m["gard_margin_best"] = absrel[best_base] - absrel["gard"]
    m["untrained_margin_best"] = absrel[best_base] - absrel["untrained"]
    m["gard_minus_pixel_delta1"] = delta1["gard"] - delta1["pixel"]
    m["untrained_minus_pixel_delta1"] = delta1["untrained"] - delta1["pixel"]
    m["gard_gain_vs_none"] = absrel["none"] - absrel["gard"]
    m["untrained_gain_vs_none"] = absrel["none"] - absrel["untrained"]
    m["gard_minus_latent_absrel"] = absrel["gard"] - absrel["latent"]
    m["noalign_minus_gard_absrel"] = absrel["gard_noalign"] - absrel["gard"]
    m["strongest_baseline_absrel"] = absrel[best_base]
    m["clean_over_constant_absrel"] = absrel["clean"] / absrel_const
    m["degraded_over_clean_absrel"] = absrel["none"] / absrel["clean"]
    m["pixel_psnr_gain"] = psnr["pixel"] - psnr["none"]
    m["nonfinite_restorers"] = float(nonfinite)
    m = {k: (v if math.isfinite(v) else 1e9) for k, v in m.items()}

    table = [
        {"method": _NAMES[k], "test AbsRel": absrel[k], "test delta1": delta1[k], "PSNR (dB)": psnr[k]}
        for k in ("clean", "none", *RESTORERS, "gard_noalign", "untrained")
    ]
    table.append({"method": "best constant depth", "test AbsRel": absrel_const})
    notes = res.notes() + [
        f"Strongest baseline on test AbsRel: {_NAMES[best_base]} ({absrel[best_base]:.4f}); "
        f"GARD {absrel['gard']:.4f}.",
        "PSNR of GARD and the latent restorer is that of the frozen feature decoder's output; the decoder on clean "
        f"features reaches {psnr['clean']:.2f} dB (its ceiling).",
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    summary = (
        f"test AbsRel: clean {absrel['clean']:.3f}, none {absrel['none']:.3f}, pixel {absrel['pixel']:.3f}, "
        f"latent {absrel['latent']:.3f}, GARD {absrel['gard']:.3f} (no align {absrel['gard_noalign']:.3f}, "
        f"untrained {absrel['untrained']:.3f})"
    )
    return Outcome(metrics=m, table=table, summary=summary, notes=notes, tuned=res.table())
