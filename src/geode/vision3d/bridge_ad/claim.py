"""Claim check of Bridge-AD: aligning perception geometry and vector-conditioned decisions beats DANN sim-to-real.

Thresholds (fixed by the issue, before any run): ``reproduced`` if Bridge-AD's target L2 and collision rate are
lower than DANN's and source-only's; ``partial`` if lower than source-only.

Read as (written before the first run): ``bridge_l2_margin`` = min(L2 of DANN, source-only) - L2 of Bridge-AD
> 0 and ``bridge_col_margin`` = min(collision rate of DANN, source-only) - Bridge-AD's > 0, each on every seed
(``agg="all"``), for ``reproduced``; ``bridge_l2_gain`` = L2(source-only) - L2(Bridge-AD) > 0 and
``bridge_col_gain`` the same for collisions, every seed, for ``partial``. L2 is the mean displacement over the
6 waypoints (0.5 s apart, 3 s), on 1,000 target test scenes.

Added before the first run (the protocol needs them; the issue names none):

- *validity floors*: source-only learns the source task (its source-domain test L2 <= 0.6 x that of the mean
  expert trajectory, every seed); the sim-to-real gap exists (source-only's target L2 >= 1.2 x its source L2,
  every seed); the expert trajectories of the test scenes are collision-free (every seed);
- *negative control* for every verdict threshold: Bridge-AD with shuffled domain labels (every term that
  compares the domains sees a random split of the pooled source + target batch), at Bridge-AD's tuned values;
- *strongest baseline*: DeepCORAL on the global feature (the strongest classical non-adversarial UDA baseline)
  is reported beside DANN, as is the supervised-on-target ceiling (the same planner trained on labelled target
  scenes).

Set-up (``driving.py``): source "sim" rasters in flat colours, target "real" rasters with textures, colour
casts, noise, blur, shadows, fainter markings and a camera-pitch warp, and denser, slower agents. The planner
(``VectorPlanner``) is trained on labelled source scenes (trajectory, lane polyline, drivable area, leader) and
unlabelled target scenes (their labels are used only for validation and test). All methods share the planner,
the optimiser (Adam), the steps and the batch (source + target). Equal tuning, 3 configurations each: the
source-only learning rate first; DANN, DeepCORAL and Bridge-AD then tune their alignment weight at that
learning rate (Bridge-AD's weight multiplies all five of its terms). Selection is on a labelled *target
validation* split (200 scenes, disjoint from test), the same for every method (the "oracle validation" of
domain-adaptation benchmarks; nuScenes-based papers tune on their validation split the same way).

DeepCORAL's tuned weight multiplies 10 x CORAL on the 64-d global feature (CORAL's 1 / (4 d^2) makes the raw
term tiny). Quick mode: 1,500 labelled source and 1,500 unlabelled target training scenes, 200 steps, batch 32.
``full`` mode is written for a GPU machine (CUDA when available): more scenes and steps; not run here.

Quick verdict (3 seeds, revision 1; the first run, set-up unchanged): ``partial``, with seeds that disagree
(partial / reproduced / partial). Target L2 (m), seeds 0 / 1 / 2: source-only 3.207 / 3.132 / 2.870; DANN
2.972 / 2.947 / 2.653; DeepCORAL 3.158 / 2.938 / 2.650; Bridge-AD 2.986 / 2.922 / 2.699; shuffled-domain control
3.027 / 3.171 / 3.028; supervised-on-target ceiling 1.375 / 1.444 / 1.550. Collision rate: source-only 0.403 /
0.400 / 0.351; DANN 0.382 / 0.385 / 0.353; DeepCORAL 0.359 / 0.366 / 0.331; Bridge-AD 0.402 / 0.378 / 0.343;
control 0.369 / 0.401 / 0.356; ceiling 0.134 / 0.144 / 0.121. Bridge-AD beats source-only on L2 in every seed
(+0.22 / +0.21 / +0.17 m; control +0.18 / -0.04 / -0.16, fails) and on collisions in every seed, but by
+0.001 / +0.022 / +0.008 only, within the noise of 1,000 test scenes (a standard error of about 0.015; control
+0.034 / -0.001 / -0.005, fails). It beats DANN and source-only on L2 in seed 1 only (margin -0.014 / +0.025 /
-0.046) and on collisions in seeds 1 and 2 (-0.020 / +0.007 / +0.008). The strongest baseline is DeepCORAL on
collisions in every seed and on L2 in seed 2. The adaptation methods close only 3-16% of the gap to the
target-supervised ceiling. Floors pass: source-only's source L2 is 0.35-0.43 x the mean trajectory's; its target
L2 is 2.8-3.7 x its source L2; the expert never collides. Selected at a grid edge: source-only's learning rate
in every seed (2e-3 upper in seeds 0-1, 5e-4 lower in seed 2) and Bridge-AD's weight (1.0, upper) in seeds 1-2;
not extended. Quick mode: 89.9 / 89.2 / 90.9 CPU-s per seed (335-381 s wall under contention).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: bridge, source. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(n_src=64, n_tgt=64, n_val=32, n_test=64, steps=6, batch=16, lrs=[1e-3], ws=[0.3]),
    "quick": dict(
        n_src=1500, n_tgt=1500, n_val=200, n_test=1000, steps=200, batch=32, lrs=[5e-4, 1e-3, 2e-3], ws=[0.1, 0.3, 1.0]
    ),
    "full": dict(
        n_src=20000,
        n_tgt=20000,
        n_val=1000,
        n_test=5000,
        steps=5000,
        batch=128,
        lrs=[2.5e-4, 5e-4, 1e-3, 2e-3],
        ws=[0.03, 0.1, 0.3, 1.0],
    ),
}
_NAMES = {
    "source": "source-only",
    "dann": "DANN (global feature)",
    "coral": "DeepCORAL (global feature)",
    "bridge": "Bridge-AD (GAPA + LVDA, progressive)",
    "shuffled": "Bridge-AD, shuffled domain labels (control)",
    "target": "supervised on target (ceiling)",
}


def _device(mode: str) -> Any:
    import torch

    return torch.device(device_for(mode))


def _tensors(d: dict[str, np.ndarray], dev: Any) -> dict[str, Any]:
    import torch

    return {k: torch.tensor(d[k], device=dev) for k in ("image", "road", "lane", "leader", "ego_speed", "traj")}


def _augment(img: Any, g: Any) -> Any:
    """Photometric augmentation (brightness, colour cast, noise); geometry is unchanged."""
    import torch

    b = img.shape[0]
    gain = 0.8 + 0.4 * torch.rand(b, 1, 1, 1, generator=g, device=img.device)
    cast = 0.05 * torch.randn(b, 3, 1, 1, generator=g, device=img.device)
    return (img * gain + cast + 0.04 * torch.randn(img.shape, generator=g, device=img.device)).clamp(0, 1)


def _train(method: str, params: dict[str, Any], data: dict[str, Any], cfg: dict[str, Any], seed: int) -> Any:
    import torch

    from geode.vision3d.bridge_ad import BridgeADAlignment, DANNAlignment, VectorPlanner, coral_loss, planning_loss

    dev = data["dev"]
    torch.manual_seed(seed)
    g = torch.Generator(device=dev).manual_seed(seed + 7)
    gi = torch.Generator().manual_seed(seed + 8)
    planner = VectorPlanner().to(dev)
    align: Any = None
    w = params.get("weight", 0.0)
    if method == "dann":
        align = DANNAlignment().to(dev)
    elif method in ("bridge", "shuffled"):
        align = BridgeADAlignment(shuffle_domains=method == "shuffled").to(dev)
    mods = [planner] + ([align] if align is not None else [])
    opt = torch.optim.Adam([p for m in mods for p in m.parameters()], lr=params["lr"])
    src = data["target_train"] if method == "target" else data["src"]
    tgt = data["tgt"]
    ns, nt = src["image"].shape[0], tgt["image"].shape[0]
    bs = cfg["batch"]
    for step in range(cfg["steps"]):
        p = step / max(1, cfg["steps"] - 1)
        i = torch.randint(0, ns, (bs,), generator=gi)
        sb = {k: v[i] for k, v in src.items()}
        out_s = planner(sb["image"], sb["ego_speed"])
        loss = planning_loss(out_s, sb)
        if method in ("dann", "coral", "bridge", "shuffled"):
            j = torch.randint(0, nt, (bs,), generator=gi)
            out_t = planner(tgt["image"][j], tgt["ego_speed"][j])
            if method == "dann":
                loss = loss + w * align(out_s, out_t, p)["loss"]
            elif method == "coral":
                loss = loss + w * 10.0 * coral_loss(out_s["h"], out_t["h"])
            else:
                out_ta = planner(_augment(tgt["image"][j], g), tgt["ego_speed"][j])
                out_sa = planner(_augment(sb["image"], g), sb["ego_speed"]) if method == "shuffled" else None
                loss = loss + w * align(out_s, out_t, out_ta, p, src_aug=out_sa, generator=gi)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return planner.eval()


def _evaluate(planner: Any, d: dict[str, Any], raw: dict[str, np.ndarray]) -> dict[str, float]:
    import torch

    from geode.vision3d.bridge_ad import collision_rate, trajectory_l2

    with torch.no_grad():
        trajs = [
            planner(d["image"][i : i + 256], d["ego_speed"][i : i + 256])["traj"]
            for i in range(0, d["image"].shape[0], 256)
        ]
    pred = torch.cat(trajs).cpu().numpy()
    out = trajectory_l2(pred, raw["traj"])
    out["collision"] = collision_rate(pred, raw["agents"], raw["curv"])
    return out if all(math.isfinite(v) for v in out.values()) else {k: math.inf for k in out}


@register(
    "bridge-ad",
    claim=(
        "Aligning perception through geometry and structure (GAPA) and decisions through vector-conditioned policy "
        "distributions (LVDA), with progressive adversarial transfer, narrows the sim-to-real gap of an end-to-end "
        "planner more than appearance-level adversarial alignment (DANN)."
    ),
    paper_figure="Newly partitioned nuScenes sim-to-real split: lower L2 and collision rate than prior DA methods",
    baselines=("source-only", "DANN"),
    thresholds=(
        Threshold(
            "l2_beats_both",
            "bridge_l2_margin",
            ">",
            0.0,
            "Bridge-AD's target L2 is below DANN's and source-only's, every seed",
            agg="all",
            control="shuffled_l2_margin",
        ),
        Threshold(
            "col_beats_both",
            "bridge_col_margin",
            ">",
            0.0,
            "Bridge-AD's target collision rate is below DANN's and source-only's, every seed",
            agg="all",
            control="shuffled_col_margin",
        ),
        Threshold(
            "l2_beats_source",
            "bridge_l2_gain",
            ">",
            0.0,
            "Bridge-AD's target L2 is below source-only's, every seed",
            agg="all",
            control="shuffled_l2_gain",
            arms=("bridge", "source"),
        ),
        Threshold(
            "col_beats_source",
            "bridge_col_gain",
            ">",
            0.0,
            "Bridge-AD's target collision rate is below source-only's, every seed",
            agg="all",
            control="shuffled_col_gain",
            arms=("bridge", "source"),
        ),
    ),
    floors=(
        Threshold(
            "source_learns",
            "source_l2_over_mean",
            "<=",
            0.6,
            "floor: source-only's source-domain L2 <= 0.6 x the mean expert trajectory's, every seed",
            agg="all",
            arms=("source",),
        ),
        Threshold(
            "gap_exists",
            "target_over_source_l2",
            ">=",
            1.2,
            "floor: source-only's target L2 >= 1.2 x its source L2 (a sim-to-real gap), every seed",
            agg="all",
        ),
        Threshold(
            "expert_safe",
            "expert_collision",
            "<=",
            0.0,
            "floor: the expert trajectories of the test scenes are collision-free",
            agg="all",
        ),
    ),
    reproduced="l2_beats_both and col_beats_both",
    partial="l2_beats_source and col_beats_source",
    method="bridge",
    tuned=("bridge", "dann", "source"),
    key_metric="bridge_l2_margin",
)
def run(mode: str, seed: int) -> Outcome:
    from geode.vision3d.bridge_ad import collision_rate, generate_driving, trajectory_l2

    cfg = _MODES[mode]
    dev = _device(mode)
    t0 = time.perf_counter()
    raw = {
        "src": generate_driving(cfg["n_src"], "sim", seed=seed * 100 + 1),
        "tgt": generate_driving(cfg["n_tgt"], "real", seed=seed * 100 + 2),
        "val": generate_driving(cfg["n_val"], "real", seed=seed * 100 + 3),
        "test": generate_driving(cfg["n_test"], "real", seed=seed * 100 + 4),
        "src_test": generate_driving(cfg["n_val"], "sim", seed=seed * 100 + 5),
    }
    data = {k: _tensors(v, dev) for k, v in raw.items()}
    data["target_train"] = data["tgt"]  # labels used only by the ceiling
    data["dev"] = dev

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        planner = _train(method, params, data, cfg, seed)
        score = _evaluate(planner, data["val"], raw["val"])["l2"]
        return score, planner

    res_lr = tune(fit, {"source": {"lr": cfg["lrs"]}}, maximize=False)
    lr = res_lr.params("source")["lr"]
    res_w = tune(fit, {m: {"lr": [lr], "weight": cfg["ws"]} for m in ("dann", "coral", "bridge")}, maximize=False)
    models = {"source": res_lr.payload("source"), **{m: res_w.payload(m) for m in ("dann", "coral", "bridge")}}
    models["shuffled"] = _train("shuffled", res_w.params("bridge"), data, cfg, seed)
    models["target"] = _train("target", {"lr": lr}, data, cfg, seed)
    ev = {m: _evaluate(models[m], data["test"], raw["test"]) for m in models}
    src_eval = _evaluate(models["source"], data["src_test"], raw["src_test"])
    mean_traj = np.broadcast_to(raw["src"]["traj"].mean(0), raw["src_test"]["traj"].shape)
    mean_l2 = trajectory_l2(mean_traj, raw["src_test"]["traj"])["l2"]

    m: dict[str, float] = {}
    for k, e in ev.items():
        for q, v in e.items():
            m[f"{k}_{q}"] = v
    best_l2 = min(ev["dann"]["l2"], ev["source"]["l2"])
    best_col = min(ev["dann"]["collision"], ev["source"]["collision"])
    for k in ("bridge", "shuffled"):
        m[f"{k}_l2_margin"] = best_l2 - ev[k]["l2"]
        m[f"{k}_col_margin"] = best_col - ev[k]["collision"]
        m[f"{k}_l2_gain"] = ev["source"]["l2"] - ev[k]["l2"]
        m[f"{k}_col_gain"] = ev["source"]["collision"] - ev[k]["collision"]
    m["bridge_minus_coral_l2"] = ev["bridge"]["l2"] - ev["coral"]["l2"]
    m["source_src_l2"] = src_eval["l2"]
    m["source_l2_over_mean"] = src_eval["l2"] / mean_l2
    m["target_over_source_l2"] = ev["source"]["l2"] / src_eval["l2"]
    m["expert_collision"] = collision_rate(raw["test"]["traj"], raw["test"]["agents"], raw["test"]["curv"])
    m = {k: (v if math.isfinite(v) else 1e9) for k, v in m.items()}

    table = [{"method": _NAMES[k], **{q: v for q, v in ev[k].items()}} for k in _NAMES]
    table.append({"method": "source-only on source test (sim)", **src_eval})
    base = ("source", "dann", "coral")
    strongest = min(base, key=lambda k: ev[k]["l2"])
    notes = (
        res_lr.notes()
        + res_w.notes()
        + [
            f"Strongest baseline on target L2: {_NAMES[strongest]} ({ev[strongest]['l2']:.3f} m, collisions "
            f"{ev[strongest]['collision']:.3f}); Bridge-AD {ev['bridge']['l2']:.3f} m "
            f"({ev['bridge']['collision']:.3f}).",
            f"Supervised-on-target ceiling: {ev['target']['l2']:.3f} m, collisions {ev['target']['collision']:.3f}.",
            f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
        ]
    )
    summary = (
        f"target L2 / collisions: source-only {ev['source']['l2']:.3f}/{ev['source']['collision']:.3f}, DANN "
        f"{ev['dann']['l2']:.3f}/{ev['dann']['collision']:.3f}, CORAL {ev['coral']['l2']:.3f}/"
        f"{ev['coral']['collision']:.3f}, Bridge-AD {ev['bridge']['l2']:.3f}/{ev['bridge']['collision']:.3f}, "
        f"ceiling {ev['target']['l2']:.3f}/{ev['target']['collision']:.3f}"
    )
    return Outcome(metrics=m, table=table, summary=summary, notes=notes, tuned=res_lr.table() + res_w.table())
