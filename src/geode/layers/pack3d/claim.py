"""Claim check: sequence-index positions fail under repacking, Pack3D's grid RoPE does not, and Pack3D is fast.

Protocol (thresholds fixed in issue 7 before anything ran):

- data (:mod:`~geode.layers.pack3d.repacking`): volumes of :math:`S^3` voxels (12^3 = 1728 tokens in quick) with
  2-5 random spheres and boxes; input the occupancy, labels background / interior / z-surface / xy-surface
  (the 6 face neighbours in 3-D, direction included);
- three matched networks (:func:`~geode.layers.pack3d.make_segmenter`: 2 pre-norm blocks, dim 64, 4 heads):
  Pack3D (r = 1, b = 4, axial RoPE), and the sequence-index baselines, local-global attention over the packed
  order with the same 27 exact key slots (1-D window w = 13) and 64-token blocks, with a learned absolute
  position embedding or with 1-D RoPE on the packed index;
- each trained on the same stream of volumes, all packed in ``raster_zyx`` order (AdamW, cosine schedule);
- tested on the same held-out volumes under 7 packings: the training raster, two other rasters, Morton,
  Hilbert, block-shuffle (4^3 bricks) and random; metric: macro Dice over the three object classes, pooled over
  the test voxels;
- speed: forward wall time of one :class:`Pack3DAttention` layer against dense SDPA with the same projections
  and axial RoPE (:class:`DenseAxialRoPEAttention`), batch 1, dim 64, 4 heads, one CPU thread, on a full 32^3
  grid (N = 32768) in quick and full mode (smoke times N = 1728; its verdict means nothing);
- verdict: ``reproduced`` if Pack3D's Dice varies by < 0.01 across the 7 packings, both baselines lose
  >= 0.15 Dice (against their own Dice on the training raster) on at least two of the 6 unseen packings (i.e.
  their second-largest drop is >= 0.15), and Pack3D is faster than dense SDPA at N = 32k; ``partial`` if the
  invariance result holds but not the speed.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from geode.claims import Outcome, Threshold, register
from geode.core import speed_ratio
from geode.layers.pack3d.attention import DenseAxialRoPEAttention, Pack3DAttention
from geode.layers.pack3d.model import make_segmenter
from geode.layers.pack3d.repacking import (
    CLASS_NAMES,
    PACKINGS,
    grid_coords,
    macro_dice,
    packing_order,
    repacking_volumes,
)

__all__ = ["MODELS", "SETTINGS", "run"]

MODELS: tuple[str, ...] = ("pack3d", "learned_pe", "rope1d")
"""The networks trained: Pack3D and the two sequence-index baselines."""

SETTINGS: dict[str, dict] = {
    "smoke": {
        "size": 8,
        "steps": 4,
        "batch": 2,
        "test": 2,
        "eval_batch": 2,
        "speed_grids": (12,),
        "reference_grid": 12,
        "repeats": 1,
        "budget_s": 1.0,
    },
    "quick": {
        "size": 12,
        "steps": 150,
        "batch": 4,
        "test": 32,
        "eval_batch": 8,
        "speed_grids": (16, 32),
        "reference_grid": 32,
        "repeats": 3,
        "budget_s": 10.0,
    },
    "full": {
        "size": 16,
        "steps": 2000,
        "batch": 8,
        "test": 128,
        "eval_batch": 8,
        "speed_grids": (16, 24, 32, 40),
        "reference_grid": 32,
        "repeats": 5,
        "budget_s": 60.0,
    },
}
"""Sizes per mode: grid edge ``size``, training ``steps`` of ``batch`` volumes, ``test`` held-out volumes, speed
measured on full cubes of the ``speed_grids`` edges (N = edge^3), thresholded at ``reference_grid``. Up to
``repeats`` interleaved timings, fewer when a dense call takes more than ``budget_s / repeats`` seconds."""

LR = 3e-3
DIM, DEPTH, HEADS, RADIUS, BLOCK = 64, 2, 4, 1, 4
DROP = 0.15  # the bound on the Dice a baseline loses; used only for the count reported beside it


def _train(kind: str, cfg: dict, seed: int, device: torch.device) -> tuple[torch.nn.Module, list[float]]:
    """Train one network on raster_zyx packings of a seeded stream of volumes; return it and its losses."""
    s = cfg["size"]
    torch.manual_seed(seed)
    model = make_segmenter(
        kind, dim=DIM, depth=DEPTH, heads=HEADS, local_radius=RADIUS, block_size=BLOCK, max_positions=s**3
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 0.5 * (1 + math.cos(math.pi * i / cfg["steps"])))
    rng = np.random.default_rng([seed, 1])  # the same volumes for every network
    coords = torch.as_tensor(grid_coords((s, s, s)), device=device)
    losses = []
    model.train()
    for _ in range(cfg["steps"]):
        occ, lab = repacking_volumes(cfg["batch"], s, rng)
        x = torch.as_tensor(occ.reshape(cfg["batch"], -1, 1), device=device)
        y = torch.as_tensor(lab.reshape(-1), device=device)
        loss = torch.nn.functional.cross_entropy(model(x, coords).reshape(-1, len(CLASS_NAMES)), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return model, losses


@torch.no_grad()
def _predict(model: torch.nn.Module, occ: np.ndarray, order: np.ndarray, cfg: dict, device: torch.device):
    """Logits (numpy, packed order) of every test volume under one packing."""
    s = cfg["size"]
    coords = torch.as_tensor(grid_coords((s, s, s))[order], device=device)
    x = torch.as_tensor(occ.reshape(occ.shape[0], -1, 1)[:, order], device=device)
    out = [model(x[i : i + cfg["eval_batch"]], coords).cpu() for i in range(0, x.shape[0], cfg["eval_batch"])]
    return torch.cat(out).numpy()


def _speed(grid: int, cfg: dict, seed: int) -> dict:
    """Forward time of one Pack3D layer against dense SDPA with the same weights on a full grid^3 cube (CPU)."""
    gen = torch.Generator().manual_seed(seed)
    n = grid**3
    torch.manual_seed(seed)
    pack = Pack3DAttention(DIM, HEADS, RADIUS, BLOCK)
    dense = DenseAxialRoPEAttention(DIM, HEADS)
    dense.load_state_dict(pack.state_dict())
    x = torch.randn(1, n, DIM, generator=gen)
    coords = torch.as_tensor(grid_coords((grid, grid, grid)))

    def ours():
        with torch.no_grad():
            return pack(x, coords)

    def base():
        with torch.no_grad():
            return dense(x, coords)

    a = ours()  # warm-up, and the check that both compute the same kind of thing
    t0 = time.perf_counter()
    b = base()  # warm-up of the baseline, and its cost
    probe = time.perf_counter() - t0
    reps = max(1, min(cfg["repeats"], int(cfg["budget_s"] / max(probe, 1e-9))))
    r = speed_ratio(ours, base, repeats=reps, warmup=0)
    return {
        "tokens": n,
        "grid": grid,
        "time_pack3d_s": r["candidate_s"],
        "time_dense_s": r["baseline_s"],
        "speedup_vs_dense": r["speedup"],
        "repeats": reps,
        "rel_diff_to_dense": float((a - b).norm() / b.norm()),  # how far the local-global output is from dense
    }


def _figures(dice: dict, speed: list[dict], example: dict) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = {}
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.8 / len(MODELS)
    labels = {"pack3d": "Pack3D (axial grid RoPE)", "learned_pe": "learned absolute PE", "rope1d": "packed 1-D RoPE"}
    xs = np.arange(len(PACKINGS))
    for i, kind in enumerate(MODELS):
        ax.bar(xs + (i - 1) * width, [dice[kind][p] for p in PACKINGS], width, label=labels[kind])
    ax.set_xticks(xs, [p.replace("_", "\n") for p in PACKINGS], fontsize=8)
    ax.set_ylabel("macro Dice (object classes)")
    ax.set_ylim(0, 1.05)
    ax.axvspan(-0.5, 0.5, color="grey", alpha=0.12)
    ax.set_title("Trained on raster_zyx (shaded), tested under repacking")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    figs["dice_per_packing"] = fig

    fig, ax = plt.subplots(figsize=(5, 3.6))
    ns = [r["tokens"] for r in speed]
    ax.plot(ns, [r["time_pack3d_s"] for r in speed], "o-", label="Pack3D (r=1, b=4)")
    ax.plot(ns, [r["time_dense_s"] for r in speed], "s--", label="dense SDPA, same RoPE")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("tokens N (full cube)")
    ax.set_ylabel("forward time (s, 1 CPU thread)")
    ax.set_title("One attention layer, dim 64, 4 heads")
    ax.legend(fontsize=8)
    fig.tight_layout()
    figs["forward_time"] = fig

    fig, axes = plt.subplots(1, len(example["panels"]), figsize=(2.3 * len(example["panels"]), 2.6))
    for ax, (title, img) in zip(axes, example["panels"]):
        ax.imshow(img, vmin=0, vmax=3, cmap="viridis", interpolation="nearest")
        ax.set_title(title, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"Test volume 0, slice z = {example['z']} (0 bg, 1 interior, 2 z-surface, 3 xy-surface)", fontsize=8)
    fig.tight_layout()
    figs["example_slice"] = fig
    return figs


@register(
    "pack3d",
    claim=(
        "Sequence-index positional mechanisms (learned absolute embeddings, packed-sequence 1-D RoPE) learn the "
        "memory layout and fail when a 3-D volume is repacked, while Pack3D's axial grid-coordinate RoPE with exact "
        "local and compressed block attention is invariant to the packing and much faster than dense attention."
    ),
    paper_figure=(
        "synthetic repacking: learned PE and packed RoPE fail, axial grid RoPE invariant (no number in the abstract); "
        "6.49x lower latency than dense SDPA at 65k tokens (fused GPU kernel)"
    ),
    baselines=("learned absolute PE (packed local-global)", "packed 1-D RoPE (packed local-global)", "dense SDPA"),
    thresholds=(
        Threshold("invariant", "pack3d_dice_range", "<", 0.01, "Pack3D's macro Dice varies by < 0.01 across packings"),
        Threshold(
            "learned_pe_fails",
            "learned_pe_second_largest_drop",
            ">=",
            0.15,
            "learned absolute PE loses >= 0.15 Dice on at least two unseen packings",
        ),
        Threshold(
            "rope1d_fails",
            "rope1d_second_largest_drop",
            ">=",
            0.15,
            "packed 1-D RoPE loses >= 0.15 Dice on at least two unseen packings",
        ),
        Threshold("faster", "speedup_vs_dense", ">", 1.0, "Pack3D forward faster than dense SDPA at N = 32k (CPU)"),
    ),
    reproduced="invariant and learned_pe_fails and rope1d_fails and faster",
    partial="invariant and learned_pe_fails and rope1d_fails",
    key_metric="min_baseline_second_largest_drop",
    timing_metrics=("seconds", "speedup_vs_dense", "time_dense_s", "time_pack3d_s"),
)
def run(mode: str, seed: int) -> Outcome:
    """Run the claim check in ``mode`` ("smoke", "quick" or "full") with ``seed``."""
    cfg = SETTINGS[mode]
    device = torch.device("cuda" if mode == "full" and torch.cuda.is_available() else "cpu")
    t_start = time.perf_counter()
    s = cfg["size"]
    occ_test, lab_test = repacking_volumes(cfg["test"], s, np.random.default_rng([seed, 2]))
    orders = {p: packing_order((s, s, s), p, np.random.default_rng([seed, 3, i])) for i, p in enumerate(PACKINGS)}
    labels = lab_test.reshape(cfg["test"], -1)

    dice: dict[str, dict[str, float]] = {}
    rows: list[dict] = []
    metrics: dict[str, float] = {}
    preds: dict[tuple[str, str], np.ndarray] = {}
    invariance = 0.0
    for kind in MODELS:
        model, losses = _train(kind, cfg, seed, device)
        metrics[f"{kind}_final_loss"] = float(np.mean(losses[-max(1, len(losses) // 10) :]))
        dice[kind] = {}
        ref_logits = None
        for p in PACKINGS:
            order = orders[p]
            logits = _predict(model, occ_test, order, cfg, device)
            pred = logits.argmax(-1)
            macro, per = macro_dice(pred, labels[:, order])
            dice[kind][p] = macro
            inv = np.empty_like(order)
            inv[order] = np.arange(order.size)
            preds[(kind, p)] = pred[:, inv]  # back to raster order, for the figure
            if kind == "pack3d":
                if ref_logits is None:
                    ref_logits = logits
                else:  # the same voxels' logits under another packing
                    invariance = max(invariance, float(np.abs(logits[:, inv] - ref_logits).max()))
            rows.append(
                {
                    "model": kind,
                    "packing": p,
                    "seen_in_training": p == "raster_zyx",
                    "macro_dice": macro,
                    "drop_vs_training_raster": dice[kind]["raster_zyx"] - macro,
                    **{f"dice_{CLASS_NAMES[c].replace('-', '_')}": v for c, v in per.items()},
                }
            )
            metrics[f"dice_{kind}_{p}"] = macro
        if kind == "pack3d":  # inference-time ablation: drop the block summaries, keep the exact neighbourhood
            for blk in model.blocks:
                blk.attn.block_size = None
            pred = _predict(model, occ_test, orders["raster_zyx"], cfg, device).argmax(-1)
            metrics["pack3d_dice_without_summaries"] = macro_dice(pred, labels)[0]
        del model

    vals = list(dice["pack3d"].values())
    metrics["pack3d_dice_range"] = max(vals) - min(vals)
    metrics["pack3d_max_logit_change"] = invariance
    for kind in ("learned_pe", "rope1d"):
        drops = sorted((dice[kind]["raster_zyx"] - dice[kind][p] for p in PACKINGS[1:]), reverse=True)
        metrics[f"{kind}_largest_drop"] = drops[0]
        metrics[f"{kind}_second_largest_drop"] = drops[1]
        metrics[f"{kind}_packings_losing_015"] = float(sum(d >= DROP for d in drops))
    metrics["min_baseline_second_largest_drop"] = min(
        metrics["learned_pe_second_largest_drop"], metrics["rope1d_second_largest_drop"]
    )

    speed = [_speed(grid, cfg, seed) for grid in cfg["speed_grids"]]
    ref = next(r for r in speed if r["grid"] == cfg["reference_grid"])
    metrics["speedup_vs_dense"] = ref["speedup_vs_dense"]
    metrics["time_pack3d_s"] = ref["time_pack3d_s"]
    metrics["time_dense_s"] = ref["time_dense_s"]
    metrics["speed_tokens"] = float(ref["tokens"])
    metrics["seconds"] = time.perf_counter() - t_start
    for r in speed:
        rows.append({"model": "speed", **r})

    z = s // 2
    vol = lab_test[0]
    example = {
        "z": z,
        "panels": [
            ("labels", vol[z]),
            ("Pack3D, any packing", preds[("pack3d", "hilbert")][0].reshape(s, s, s)[z]),
            ("1-D RoPE, raster_zyx", preds[("rope1d", "raster_zyx")][0].reshape(s, s, s)[z]),
            ("1-D RoPE, hilbert", preds[("rope1d", "hilbert")][0].reshape(s, s, s)[z]),
            ("learned PE, hilbert", preds[("learned_pe", "hilbert")][0].reshape(s, s, s)[z]),
        ],
    }
    summary = (
        f"{mode}, {s}^3 volumes, {cfg['steps']} steps: Pack3D Dice {dice['pack3d']['raster_zyx']:.3f} "
        f"(range {metrics['pack3d_dice_range']:.3f} over {len(PACKINGS)} packings); learned PE "
        f"{dice['learned_pe']['raster_zyx']:.3f} on the training raster, second-largest drop "
        f"{metrics['learned_pe_second_largest_drop']:.3f}; 1-D RoPE {dice['rope1d']['raster_zyx']:.3f}, "
        f"{metrics['rope1d_second_largest_drop']:.3f}; Pack3D {metrics['speedup_vs_dense']:.1f}x faster than dense "
        f"SDPA at N={ref['tokens']}"
    )
    notes = [
        "Dice: macro over interior / z-surface / xy-surface, pooled over all test voxels; background is excluded "
        "(the input occupancy gives it away). A drop is the Dice on the training raster minus the Dice under the "
        "packing; the thresholds use the second-largest of the 6 drops of each baseline.",
        "The baselines are matched local-global attention over the packed order (27 exact key slots in a 1-D "
        "window, 64-token contiguous blocks): in raster_zyx their window holds the x and y neighbours but not the "
        "z neighbours (144 tokens away), which only reach them through block summaries, so they do not solve the "
        "task even on the training layout; their drops are measured from that level.",
        "raster_xyz and raster_yzx only swap axes: on isotropic random objects a model trained on one raster sees "
        "an equally likely volume, but the direction-dependent labels (z- vs xy-surface) change meaning.",
        f"Speed: forward of one attention layer, batch 1, dim {DIM}, {HEADS} heads, one CPU thread, interleaved "
        f"medians of up to {cfg['repeats']} runs after a warm-up, thresholded at N = {ref['tokens']} (smoke "
        "mode times only N = 1728; its speed verdict is not a claim check). The paper's 6.49x at 65k uses a fused "
        "GPU kernel; ours is pure PyTorch (tiles of 2^3 queries against 4^3 key windows).",
        f"pack3d_max_logit_change: largest change of any Pack3D logit when the same test volumes are repacked "
        f"({invariance:.1e}); it is float rounding, the operator is permutation-equivariant by construction.",
        "pack3d_dice_without_summaries: the trained Pack3D evaluated with its block summaries removed (exact "
        "neighbourhood only). The labels need only the 6 face neighbours, so a network may well ignore the "
        "summaries here; the paper's ablations on microscopy show them used.",
        f"Training on {device.type}; AdamW lr {LR} with cosine decay, weight decay 0.01, batch {cfg['batch']}, "
        f"{cfg['steps']} steps, the same seeded stream of volumes for all three networks.",
    ]
    return Outcome(metrics=metrics, table=rows, figures=_figures(dice, speed, example), summary=summary, notes=notes)
