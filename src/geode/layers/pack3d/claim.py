"""Claim check: sequence-index positions fail under repacking, Pack3D's grid RoPE does not, and Pack3D is fast.

Protocol v2 (issue 19; the thresholds of issue 7 are unchanged, the set-up that decides them is new):

- data (:mod:`~geode.layers.pack3d.repacking`): volumes of :math:`S^3` voxels (8^3 = 512 tokens in quick) with
  2-5 random spheres and boxes; input the occupancy, labels background / interior / z-surface / xy-surface
  (the 6 face neighbours in 3-D, direction included);
- three networks (:func:`~geode.layers.pack3d.make_segmenter`, 2 pre-norm blocks, dim 32, 4 heads) that share
  **Pack3D's own 3-D neighbourhood and blocks** (r = 1, b = 4) and differ only in the position signal:
  Pack3D (axial RoPE on the grid coordinates), ``rope1d_3d`` (1-D RoPE on the packed index) and
  ``learned_pe_3d`` (a learned absolute embedding of the packed index, initialised with std 1: at the
  default 0.02 it does not learn the layout within the budget). Revision 1's baselines used a 1-D +-13
  window that never sees the z neighbours (in-distribution Dice 0.44-0.51), so their drops could hardly
  reach 0.15;
- equal tuning (:func:`geode.claims.tune`): each network's learning rate from the same grid, selected on the
  Dice of validation volumes in the training layout; all trained on the same stream of volumes packed
  ``raster_zyx`` (AdamW, cosine schedule, the same steps);
- test: held-out volumes under 7 packings (the training raster, two other rasters, Morton, Hilbert,
  block-shuffle, random); macro Dice over the object classes, pooled over the test voxels;
- **validity floors**: every network reaches Dice >= 0.9 on the training layout (mean over seeds); the
  untrained Pack3D is the floor's negative control;
- **verdict**: ``invariant`` Pack3D's Dice varies by < 0.01 across the packings in every seed (control: the
  1-D RoPE network's range); ``learned_pe_fails`` / ``rope1d_fails`` the baseline's second-largest drop over
  the 6 unseen packings is >= 0.15 in at least 2 of 3 seeds (control: Pack3D's own second-largest drop);
  ``as_good`` Pack3D's in-distribution Dice is at least the best baseline's, within 0.01 (mean over seeds;
  the 0.01 is measurement noise of Dice on the test volumes, our choice; control: the untrained Pack3D);
  ``faster`` one Pack3D layer's forward beats dense SDPA with the same projections and RoPE at N = 32k
  (geometric mean over seeds; CPU, one thread). ``reproduced``: all five; ``partial``: all but ``faster``.
- a task that needs the global summaries (reported, not judged): a marker voxel is a second input channel,
  and each occupied voxel is labelled by whether it lies within Euclidean distance 3 of the marker, which two
  layers of a radius-1 neighbourhood cannot see; Pack3D with and without its block summaries is trained
  on it (Dice of the "near" class, and its range over the packings).
- peak memory of the speed comparison is reported beside the speed-up.

Old verdict (revision 1, one seed, 12^3 volumes, 1-D window baselines): ``not reproduced`` (Pack3D Dice 0.999,
range 0; learned PE 0.440 on its own layout with second drop 0.050; 1-D RoPE 0.513, 0.152; 6.2x vs SDPA).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read reproduced on the same runs): not tuned by the protocol: pack3d, learned_pe_3d, rope1d_3d. No
idea ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune
from geode.core import speed_ratio

if TYPE_CHECKING:
    import torch

__all__ = ["GRIDS", "MODELS", "SETTINGS", "run"]

MODELS: tuple[str, ...] = ("pack3d", "learned_pe_3d", "rope1d_3d")
"""The networks trained: Pack3D and the two baselines with its 3-D neighbourhood and another position signal."""

SETTINGS: dict[str, dict] = {
    "smoke": {
        "size": 8,
        "steps": 4,
        "global_steps": 4,
        "batch": 2,
        "val": 2,
        "test": 2,
        "eval_batch": 2,
        "speed_grids": (12,),
        "reference_grid": 12,
        "repeats": 1,
        "budget_s": 1.0,
    },
    "quick": {
        "size": 8,
        "steps": 200,
        "global_steps": 120,
        "batch": 4,
        "val": 16,
        "test": 32,
        "eval_batch": 16,
        "speed_grids": (16, 32),
        "reference_grid": 32,
        "repeats": 2,
        "budget_s": 6.0,
    },
    "full": {
        "size": 16,
        "steps": 2000,
        "global_steps": 1000,
        "batch": 8,
        "val": 64,
        "test": 128,
        "eval_batch": 8,
        "speed_grids": (16, 24, 32, 40),
        "reference_grid": 32,
        "repeats": 5,
        "budget_s": 60.0,
    },
}
"""Sizes per mode: grid edge ``size``, training ``steps`` of ``batch`` volumes (``global_steps`` for the task that
needs the summaries), ``val`` validation and ``test`` held-out volumes, speed measured on full cubes of the
``speed_grids`` edges (N = edge^3), thresholded at ``reference_grid``. Up to ``repeats`` interleaved timings,
fewer when a dense call takes more than ``budget_s / repeats`` seconds."""

GRIDS: dict[str, dict[str, list[float]]] = {kind: {"lr": [3e-3, 1e-2]} for kind in MODELS}
"""Equal tuning grids (learning rate; selected on validation Dice in the training layout)."""

DIM, DEPTH, HEADS, RADIUS, BLOCK = 32, 2, 4, 1, 4
PE_STD = 1.0  # init std of the learned absolute embedding (0.02 does not learn the layout within the budget)
MARKER_RADIUS = 3.0  # the global task: occupied voxels within this Euclidean distance of the marker
DROP = 0.15  # the bound on the Dice a baseline loses; used only for the count reported beside it


def marker_volumes(batch: int, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The task that needs global context: occupancy + one marker voxel in, near/far labels out.

    Returns inputs ``(batch, S, S, S, 2)`` (occupancy, marker one-hot) and labels ``(batch, S, S, S)``: 0 empty,
    1 occupied and farther than :data:`MARKER_RADIUS` from the marker, 2 occupied and within it.
    """
    from geode.layers.pack3d.repacking import grid_coords, repacking_volumes

    occ, _ = repacking_volumes(batch, size, rng)
    grid = grid_coords((size, size, size)).reshape(size, size, size, 3)
    x = np.zeros((*occ.shape, 2), dtype=np.float32)
    x[..., 0] = occ
    lab = np.zeros(occ.shape, dtype=np.int64)
    for i in range(batch):
        m = rng.integers(0, size, 3)
        x[i, m[0], m[1], m[2], 1] = 1.0
        near = np.sqrt(((grid - m) ** 2).sum(-1)) <= MARKER_RADIUS
        lab[i] = np.where(occ[i] > 0, np.where(near, 2, 1), 0)
    return x, lab


def _make(kind: str, cfg: dict, in_channels: int = 1, num_classes: int = 4) -> torch.nn.Module:
    import torch

    from geode.layers.pack3d.model import make_segmenter

    s = cfg["size"]
    model = make_segmenter(
        kind if kind != "pack3d_no_summaries" else "pack3d",
        in_channels=in_channels,
        num_classes=num_classes,
        dim=DIM,
        depth=DEPTH,
        heads=HEADS,
        local_radius=RADIUS,
        block_size=BLOCK,
        max_positions=s**3,
    )
    if kind == "pack3d_no_summaries":
        for blk in model.blocks:
            blk.attn.block_size = None
    if model.pos is not None:
        torch.nn.init.normal_(model.pos.table, std=PE_STD)
    return model


def _train(
    kind: str, lr: float, cfg: dict, seed: int, device: torch.device, task: str = "surface"
) -> tuple[torch.nn.Module, list[float]]:
    """Train one network on raster_zyx packings of a seeded stream of volumes; return it and its losses."""
    import torch

    from geode.layers.pack3d.repacking import CLASS_NAMES, grid_coords, repacking_volumes

    s = cfg["size"]
    torch.manual_seed(seed)
    ch, ncls = (1, len(CLASS_NAMES)) if task == "surface" else (2, 3)
    model = _make(kind, cfg, ch, ncls).to(device)
    steps = cfg["steps"] if task == "surface" else cfg["global_steps"]
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 0.5 * (1 + math.cos(math.pi * i / steps)))
    rng = np.random.default_rng([seed, 1])  # the same volumes for every network
    coords = torch.as_tensor(grid_coords((s, s, s)), device=device)
    losses = []
    model.train()
    for _ in range(steps):
        if task == "surface":
            occ, lab = repacking_volumes(cfg["batch"], s, rng)
            occ = occ[..., None]
        else:
            occ, lab = marker_volumes(cfg["batch"], s, rng)
        x = torch.as_tensor(occ.reshape(cfg["batch"], s**3, ch), device=device)
        y = torch.as_tensor(lab.reshape(-1), device=device)
        loss = torch.nn.functional.cross_entropy(model(x, coords).reshape(-1, ncls), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return model, losses


def _predict(model: torch.nn.Module, occ: np.ndarray, order: np.ndarray, cfg: dict, device: torch.device):
    """Logits (numpy, packed order) of every volume (``(V, S, S, S[, C])``) under one packing."""
    import torch

    from geode.layers.pack3d.repacking import grid_coords

    with torch.no_grad():
        s = cfg["size"]
        ch = 1 if occ.ndim == 4 else occ.shape[-1]
        coords = torch.as_tensor(grid_coords((s, s, s))[order], device=device)
        x = torch.as_tensor(occ.reshape(occ.shape[0], s**3, ch)[:, order], device=device)
        out = [model(x[i : i + cfg["eval_batch"]], coords).cpu() for i in range(0, x.shape[0], cfg["eval_batch"])]
        return torch.cat(out).numpy()


def _speed(grid: int, cfg: dict, seed: int) -> dict:
    """Forward time and peak memory of one Pack3D layer against dense SDPA with the same weights (grid^3 cube)."""
    import torch

    from geode.claims.bench import peak_memory_mib
    from geode.layers.pack3d.attention import DenseAxialRoPEAttention, Pack3DAttention
    from geode.layers.pack3d.repacking import grid_coords

    gen = torch.Generator().manual_seed(seed)
    n = grid**3
    torch.manual_seed(seed)
    pack = Pack3DAttention(64, 4, RADIUS, BLOCK)
    dense = DenseAxialRoPEAttention(64, 4)
    dense.load_state_dict(pack.state_dict())
    x = torch.randn(1, n, 64, generator=gen)
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
    mem_ours, mem_base = peak_memory_mib(ours)[0], peak_memory_mib(base)[0]
    return {
        "tokens": n,
        "grid": grid,
        "time_pack3d_s": r["candidate_s"],
        "time_dense_s": r["baseline_s"],
        "speedup_vs_dense": r["speedup"],
        "peak_mib_pack3d": mem_ours,
        "peak_mib_dense": mem_base,
        "repeats": reps,
        "rel_diff_to_dense": float((a - b).norm() / b.norm()),  # how far the local-global output is from dense
    }


def _figures(dice: dict, speed: list[dict], example: dict) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geode.layers.pack3d.repacking import PACKINGS

    figs = {}
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.8 / len(MODELS)
    labels = {
        "pack3d": "Pack3D (axial grid RoPE)",
        "learned_pe_3d": "learned absolute PE (3-D nbhd)",
        "rope1d_3d": "packed 1-D RoPE (3-D nbhd)",
        "untrained_pack3d": "untrained Pack3D (control)",
    }
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
    baselines=(
        "learned absolute PE (Pack3D's 3-D neighbourhood)",
        "packed 1-D RoPE (Pack3D's 3-D neighbourhood)",
        "dense SDPA (speed)",
    ),
    thresholds=(
        Threshold(
            "invariant",
            "pack3d_dice_range",
            "<",
            0.01,
            "Pack3D's macro Dice varies by < 0.01 across the 7 packings, in every seed",
            agg="all",
            control="rope1d_3d_dice_range",
            arms=("pack3d",),
        ),
        Threshold(
            "learned_pe_fails",
            "learned_pe_3d_second_largest_drop",
            ">=",
            0.15,
            "learned absolute PE loses >= 0.15 Dice on at least two unseen packings (2 of 3 seeds)",
            agg="2 of 3",
            control="pack3d_second_largest_drop",
            arms=("learned_pe_3d",),
        ),
        Threshold(
            "rope1d_fails",
            "rope1d_3d_second_largest_drop",
            ">=",
            0.15,
            "packed 1-D RoPE loses >= 0.15 Dice on at least two unseen packings (2 of 3 seeds)",
            agg="2 of 3",
            control="pack3d_second_largest_drop",
            arms=("rope1d_3d",),
        ),
        Threshold(
            "as_good",
            "pack3d_minus_best_baseline_dice",
            ">=",
            -0.01,
            "Pack3D's in-distribution Dice is at least the best baseline's, within 0.01 (mean over seeds)",
            control="untrained_pack3d_minus_best_baseline_dice",
            arms=("pack3d", "learned_pe_3d", "rope1d_3d"),
        ),
        Threshold(
            "faster",
            "speedup_vs_dense",
            ">",
            1.0,
            "Pack3D forward faster than dense SDPA at N = 32k (CPU, geometric mean over seeds)",
            agg="geomean",
            arms=("pack3d", "dense SDPA"),
        ),
        Threshold(
            "pack3d_floor",
            "dice_pack3d_in_distribution",
            ">=",
            0.9,
            "reported: validity: Pack3D reaches Dice >= 0.9 on the training layout (mean over seeds)",
            control="dice_untrained_pack3d_in_distribution",
            arms=("pack3d",),
        ),
    ),
    floors=(
        Threshold(
            "learned_pe_floor",
            "dice_learned_pe_3d_in_distribution",
            ">=",
            0.9,
            "validity: the learned-PE baseline reaches Dice >= 0.9 on the training layout (mean over seeds)",
            arms=("learned_pe_3d",),
        ),
        Threshold(
            "rope1d_floor",
            "dice_rope1d_3d_in_distribution",
            ">=",
            0.9,
            "validity: the 1-D RoPE baseline reaches Dice >= 0.9 on the training layout (mean over seeds)",
            arms=("rope1d_3d",),
        ),
    ),
    reproduced="invariant and learned_pe_fails and rope1d_fails and as_good and faster",
    partial="invariant and learned_pe_fails and rope1d_fails and as_good",
    method="pack3d",
    tuned=("pack3d", "learned_pe_3d", "rope1d_3d"),
    untuned={"dense SDPA": "no hyper-parameter (the Pack3D layer's own weights and RoPE, timed untrained)"},
    key_metric="min_baseline_second_largest_drop",
    timing_metrics=(
        "seconds",
        "speedup_vs_dense",
        "time_dense_s",
        "time_pack3d_s",
        "peak_mib_pack3d",
        "peak_mib_dense",
    ),
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    """Run the claim check in ``mode`` ("smoke", "quick" or "full") with ``seed``."""
    import torch

    from geode.layers.pack3d.repacking import CLASS_NAMES, PACKINGS, macro_dice, packing_order, repacking_volumes

    cfg = SETTINGS[mode]
    device = torch.device(device_for(mode))
    t_start = time.perf_counter()
    s = cfg["size"]
    occ_val, lab_val = repacking_volumes(cfg["val"], s, np.random.default_rng([seed, 4]))
    occ_test, lab_test = repacking_volumes(cfg["test"], s, np.random.default_rng([seed, 2]))
    orders = {p: packing_order((s, s, s), p, np.random.default_rng([seed, 3, i])) for i, p in enumerate(PACKINGS)}
    labels = lab_test.reshape(cfg["test"], -1)
    raster = orders["raster_zyx"]
    losses: dict[str, list[float]] = {}

    def fit(kind: str, params: dict) -> tuple[float, torch.nn.Module]:
        model, loss = _train(kind, params["lr"], cfg, seed, device)
        losses[f"{kind}@{params['lr']:g}"] = loss
        pred = _predict(model, occ_val, raster, cfg, device).argmax(-1)
        return macro_dice(pred, lab_val.reshape(cfg["val"], -1)[:, raster])[0], model

    res = tune(fit, GRIDS)
    models = {kind: res.payload(kind) for kind in MODELS}
    torch.manual_seed(seed)
    models["untrained_pack3d"] = _make("pack3d", cfg).to(device).eval()

    dice: dict[str, dict[str, float]] = {}
    rows: list[dict] = []
    metrics: dict[str, float] = {}
    preds: dict[tuple[str, str], np.ndarray] = {}
    invariance = 0.0
    for kind, model in models.items():
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
        vals = list(dice[kind].values())
        drops = sorted((dice[kind]["raster_zyx"] - dice[kind][p] for p in PACKINGS[1:]), reverse=True)
        metrics[f"dice_{kind}_in_distribution"] = dice[kind]["raster_zyx"]
        metrics[f"{kind}_dice_range"] = max(vals) - min(vals)
        metrics[f"{kind}_largest_drop"] = drops[0]
        metrics[f"{kind}_second_largest_drop"] = drops[1]
        metrics[f"{kind}_packings_losing_015"] = float(sum(d >= DROP for d in drops))
    best_base = max(dice["learned_pe_3d"]["raster_zyx"], dice["rope1d_3d"]["raster_zyx"])
    metrics["pack3d_minus_best_baseline_dice"] = dice["pack3d"]["raster_zyx"] - best_base
    metrics["untrained_pack3d_minus_best_baseline_dice"] = dice["untrained_pack3d"]["raster_zyx"] - best_base
    metrics["pack3d_max_logit_change"] = invariance
    metrics["min_baseline_second_largest_drop"] = min(
        metrics["learned_pe_3d_second_largest_drop"], metrics["rope1d_3d_second_largest_drop"]
    )
    for kind in MODELS:
        metrics[f"{kind}_final_loss"] = float(np.mean(losses[f"{kind}@{res.params(kind)['lr']:g}"][-10:]))

    # The task that needs the global summaries: Pack3D with and without them (reported, not judged).
    occ_g, lab_g = marker_volumes(cfg["test"], s, np.random.default_rng([seed, 5]))
    lab_g = lab_g.reshape(cfg["test"], -1)
    for kind in ("pack3d", "pack3d_no_summaries"):
        model, _ = _train(kind, res.params("pack3d")["lr"], cfg, seed, device, task="global")
        per_packing = []
        for p in PACKINGS:
            pred = _predict(model, occ_g, orders[p], cfg, device).argmax(-1)
            per_packing.append(macro_dice(pred, lab_g[:, orders[p]], classes=(2,))[0])
        metrics[f"global_task_dice_{kind}"] = per_packing[0]
        metrics[f"global_task_dice_range_{kind}"] = max(per_packing) - min(per_packing)
        del model

    speed = [_speed(grid, cfg, seed) for grid in cfg["speed_grids"]]
    ref = next(r for r in speed if r["grid"] == cfg["reference_grid"])
    for key in ("speedup_vs_dense", "time_pack3d_s", "time_dense_s", "peak_mib_pack3d", "peak_mib_dense"):
        metrics[key] = ref[key]
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
            ("1-D RoPE (3-D nbhd), raster", preds[("rope1d_3d", "raster_zyx")][0].reshape(s, s, s)[z]),
            ("1-D RoPE (3-D nbhd), hilbert", preds[("rope1d_3d", "hilbert")][0].reshape(s, s, s)[z]),
            ("learned PE (3-D nbhd), hilbert", preds[("learned_pe_3d", "hilbert")][0].reshape(s, s, s)[z]),
        ],
    }
    summary = (
        f"{mode}, {s}^3 volumes, {cfg['steps']} steps: Pack3D Dice {dice['pack3d']['raster_zyx']:.3f} "
        f"(range {metrics['pack3d_dice_range']:.3f}); learned PE {dice['learned_pe_3d']['raster_zyx']:.3f} in "
        f"distribution, second-largest drop {metrics['learned_pe_3d_second_largest_drop']:.3f}; 1-D RoPE "
        f"{dice['rope1d_3d']['raster_zyx']:.3f}, {metrics['rope1d_3d_second_largest_drop']:.3f}; untrained Pack3D "
        f"{dice['untrained_pack3d']['raster_zyx']:.3f}; global task Dice {metrics['global_task_dice_pack3d']:.3f} "
        f"(without summaries {metrics['global_task_dice_pack3d_no_summaries']:.3f}); "
        f"{metrics['speedup_vs_dense']:.1f}x dense SDPA at N={ref['tokens']}, peak memory "
        f"{metrics['peak_mib_pack3d']:.0f} vs {metrics['peak_mib_dense']:.0f} MiB"
    )
    notes = [
        "Dice: macro over interior / z-surface / xy-surface, pooled over all test voxels; background is excluded "
        "(the input occupancy gives it away). A drop is the Dice on the training raster minus the Dice under the "
        "packing; the thresholds use the second-largest of the 6 drops of each baseline.",
        "All three networks use Pack3D's exact 3-D neighbourhood (r = 1) and 4^3 block summaries; only the "
        "position signal differs (axial RoPE on grid coordinates; 1-D RoPE on the packed index; a learned "
        f"embedding of the packed index, init std {PE_STD:g}). The neighbourhood itself is found from the "
        "coordinates, so what breaks under repacking is the position signal alone.",
        "raster_xyz and raster_yzx only swap axes: on isotropic random objects a model trained on one raster sees "
        "an equally likely volume, but the direction-dependent labels (z- vs xy-surface) change meaning.",
        f"Speed: forward of one attention layer, batch 1, dim 64, 4 heads, one CPU thread, interleaved medians of "
        f"up to {cfg['repeats']} runs after a warm-up, at N = {ref['tokens']}; peak memory is the resident-set "
        "growth of one call (geode.claims.bench.peak_memory_mib). The paper's 6.49x at 65k uses a fused GPU "
        "kernel; ours is pure PyTorch.",
        f"pack3d_max_logit_change: largest change of any Pack3D logit when the same test volumes are repacked "
        f"({invariance:.1e}); float rounding, the operator is permutation-equivariant by construction - which is "
        "why the untrained Pack3D is invariant too, and why 'invariant' is judged only with the Dice floor.",
        f"Global task (reported): occupied voxels within distance {MARKER_RADIUS:g} of a marker voxel, Dice of the "
        "'near' class; Pack3D with and without its block summaries, trained at Pack3D's selected learning rate.",
        f"Training on {device.type}; AdamW with cosine decay, weight decay 0.01, batch {cfg['batch']}, "
        f"{cfg['steps']} steps, the same seeded stream of volumes for every network; learning rate tuned per "
        "network on validation volumes in the training layout.",
        *res.notes(),
    ]
    return Outcome(
        metrics=metrics,
        table=rows,
        figures=_figures(dice, speed, example),
        summary=summary,
        notes=notes,
        tuned=res.table(),
    )
