"""Claim check of PDE-surrogate pre-training on 3D geometries: faster and more data-efficient fine-tuning.

Thresholds (fixed by the issue, before any run): ``reproduced`` if pre-training reaches the scratch model's final
error in <= 1/2 the epochs and improves the error by >= 10% at the smallest data size; ``partial`` if either
holds. We read "at the smallest data size" as applying to both criteria (the paper stresses "realistic low-data
regimes") and apply them to both of the paper's regimes, steady and transient: ``reproduced`` needs all four
(epochs and error, steady and transient), ``partial`` any one of them. Every threshold must hold in every seed
(``agg="all"``). The epoch ratios at the larger data sizes are reported, not judged.

Added before the first run (the protocol needs them; the issue names some):

- *validity floors* (every seed): the scratch model learns, i.e. at the largest data size its test error is
  <= 0.7 x that of predicting the training mean (steady) or of persistence u_{n+1} = u_n (transient, 10-step
  rollout); each pretext task is learned on held-out geometries (descriptor R^2 >= 0.5; heat one-step skill
  1 - MSE / MSE(zero increment) >= 0.5); no tuned run is non-finite;
- *negative controls*: the same pipeline pre-trained on shuffled targets (each mesh's descriptor rows
  permuted over its vertices; each heat sample's increment permuted over its vertices: right marginals, no
  geometry or physics), fine-tuned with the same tuning budget; its epoch ratio and gain against the same
  scratch runs must fail each threshold;
- *strongest baselines*, reported beside the named scratch baseline (the verdict uses the scratch model with
  the same fine-tuning epochs, the paper's comparison): the scratch model with the pre-training compute added
  to its budget (matched node-steps: ``pre_steps x pre_batch`` meshes processed; the cost of generating the
  pre-training targets is not counted), and, in the steady regime, a per-vertex MLP given the intrinsic
  descriptors (HKS, curvatures) as input features (a descriptor-only regressor, no message passing).

Set-up (the paper is not public; notes ``pde-pretrain.md``): random closed geometries, each randomly rotated:
deformed icospheres, superquadrics (p-norm spheres, p in [1.6, 4], axis scales in [0.6, 1.2]) and tori, 162 or
160 vertices in quick mode. A :class:`MeshGNN` (hidden 24, 4 blocks) sees ``[p, n, c]`` per vertex.

- *Steady*: pre-training regresses z-scored [log-HKS at 8 times, H, K] on 48 geometries (300 Adam steps, 8
  meshes per step); the downstream task is screened Poisson (L + 2M)u = M<n, w> with a random unit w (c = (w,
  <n, w>)), fine-tuned full-batch (1 epoch = 1 step) with a fresh head on N in {4, 8, 16} labelled meshes for
  160 epochs; error = mass-weighted relative L2 on 24 test meshes.
- *Transient*: pre-training is online heat data (:class:`HeatStream`, a fresh geometry, kappa and initial field
  per sample; 150 steps x 8 samples); the downstream task is Fisher-KPP (kappa in [0.01, 0.04], r in [0.5, 1.5],
  dt = 0.2, IMEX ground truth) from N in {2, 4, 8} trajectories of 10 steps (10N one-step pairs, batches of 8,
  80 steps); error = relative L2 of the 10-step autoregressive rollout on 24 test trajectories.
- *Equal tuning*: learning rate in {1e-3, 3e-3, 1e-2} (+ up to 2 steps past an edge) for scratch, pre-trained and
  control, selected on validation geometries (12) at the smallest data size; the selected rates are reused at
  the larger sizes (quick mode's budget; ``full`` tunes at every size). Cosine learning-rate decay, Adam.
- "Epochs to reach": the first checkpoint (every 5 epochs; every 10 steps in the transient regime) at which the
  pre-trained test error is <= the scratch model's final test error, divided by the scratch epochs; 2.0 if never
  reached.

Inferred (the paper is not public): every architectural and task detail above; the pretext targets; the fixed
feature layout (the steady pre-training leaves the 4 condition channels at zero); keeping the head in the
transient regime (heat is Fisher-KPP with r = 0, same output) and replacing it in the steady one. ``full`` mode
(642-vertex meshes, 1,000 pre-training geometries, 10/20/40 training meshes, tuning at every size, hidden 64)
is written for a GPU machine (it uses CUDA when available) and was not run.

Revision 1 (150 pre-training steps, ``extend=1``), seed 0 only, 96 CPU-s: ``inconclusive``, both pretext floors
failed (descriptor R^2 0.46, heat skill 0.42 < 0.5: the pre-training was cut too short for the CPU budget, a
set-up defect the floors were written to catch); the learning rate was selected on a grid edge after the one
extension step (scratch: 3.3e-2 steady, 3.3e-4 transient). Seed-0 numbers then: steady N=4 gain +0.008, epoch
ratio 0.75; transient N=2 gain +0.29, step ratio 0.44, but the shuffled-target control also gained +0.20 (step
ratio 0.13). Revision 2 doubles the pre-training steps (300), allows two extension steps past a grid edge, and
reports the pre-trained model's gain over the control (not judged); thresholds, floors and controls unchanged.

Revision 2 (3 seeds, 107-111 CPU-s per seed): ``inconclusive``, the floor ``steady_learns`` failed in seed 1 (the
scratch model's steady error at N = 16 was 0.86 of the mean field's; 0.51 and 0.64 in seeds 0 and 2): with 80
full-batch epochs the steady fine-tuning is optimisation-limited (every GNN selected the largest learning rate
tried, 3.3e-2, and seed 1's networks barely learned while the descriptor MLP reached 0.56). Per-seed numbers
then (seeds 0/1/2): steady N=4 gain -0.10 / -0.05 / -0.00, epoch ratio 2.0 / 2.0 / 0.19; transient N=2 gain
+0.52 / +0.36 / +0.45, step ratio 0.13 / 0.38 / 0.25; controls: steady gain -0.11 / -0.24 / -0.10, transient
gain +0.04 / -0.01 / +0.07, step ratio 0.75 / 2.0 / 0.63 (the controls fail every threshold). Revision 3 doubles
the steady fine-tuning to 160 epochs (a set-up defect caught by the floor), nothing else.

Quick verdict (3 seeds, revision 3; set-up unchanged after seeing these results): ``inconclusive``, the floor
``steady_learns`` fails in seed 1 (scratch steady error at N = 16 is 0.80 of the mean field's; 0.35 and 0.43 in
seeds 0 and 2). Were it met, the verdict would be ``partial``: the transient criteria hold in every seed, the
steady ones in none. Per seed (0 / 1 / 2):

- *transient*, N = 2 trajectories: rollout error scratch 0.217 / 0.160 / 0.147, pre-trained 0.103 / 0.103 /
  0.080: gain +0.52 / +0.36 / +0.45 (>= 0.10 passes), step ratio 0.13 / 0.38 / 0.25 (<= 0.5 passes). Control
  (shuffled heat targets): gain +0.04 / -0.01 / +0.07, step ratio 0.75 / 2.0 / 0.63 (fails both: the thresholds
  discriminate); pre-trained vs control +0.51 / +0.36 / +0.41. Strongest baseline, scratch with the pre-training
  compute added (150 more steps): 0.233 / 0.108 / 0.108, so the margin over it is +0.56 / +0.05 / +0.26. At N = 4
  and 8 the gains are +0.35 / +0.35 / +0.47 and +0.49 / +0.27 / +0.49; the scratch error hardly changes with N
  (80 steps of 8 pairs: optimisation-limited rather than data-limited, so "data efficiency" is not tested here).
  Floors: scratch / persistence 0.51 / 0.30 / 0.36 (persistence 0.43); heat one-step skill 0.61 / 0.53 / 0.71.
- *steady*, N = 4 meshes: error scratch 0.69 / 0.92 / 0.93, pre-trained 0.85 / 0.93 / 0.95: gain -0.22 / -0.02
  / -0.02 (fails), epoch ratio 2.0 / 2.0 / 0.09 (seed 2 "passes" only because scratch ends worse than it was
  early on; fails "all"). Control: gain -0.22 / -0.22 / +0.18, epoch ratio 2.0 / 2.0 / 0.44. At N = 8 and 16
  the gains are +0.04 / -0.08 / -0.00 and +0.14 / -0.05 / -0.07. Strongest baseline: the descriptor-only
  per-vertex MLP, 0.62 / 0.53 / 0.44 at N = 4, better than every mesh GNN; scratch with matched compute 0.59 /
  0.85 / 0.89. Descriptor pre-training R^2 0.74 / 0.74 / 0.82 (control 0.54 / 0.38 / 0.46: permuting rows within
  a mesh keeps each mesh's mean descriptors, which are partly predictable).
- Why seed 1 fails the floor (diagnosed after the run, not changed): the per-mesh relative errors are
  dominated by the tori, whose screened-Poisson solutions are small (rms |u| 0.03-0.05 against 0.11-0.17 on
  the genus-0 shapes, because <n, w> oscillates around the thin tube); the scratch GNN's relative error on them
  is 1.2-3.5 against 0.1-0.3 elsewhere, and seed 1's training set has 4 tori in 16 meshes.
- Quick mode: 113 / 117 / 130 CPU-s per seed (over the ~90 s target, under the 3-minute limit; 150-227 s wall).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **partial** (the
v2 harness read inconclusive on the same runs). No idea ablation or learned-arm reference is declared yet (protocol
v3; the rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        res=1,
        n_pre=6,
        n_val=3,
        n_test=4,
        sizes_steady=(2, 3),
        sizes_transient=(1, 2),
        pre_steps=10,
        pre_batch=3,
        steps=10,
        steps_steady=10,
        batch=4,
        eval_every=5,
        eval_every_transient=5,
        lrs=[3e-3],
        extend=0,
        hidden=8,
        layers=2,
        tune_all=False,
    ),
    "quick": dict(
        res=2,
        n_pre=48,
        n_val=12,
        n_test=24,
        sizes_steady=(4, 8, 16),
        sizes_transient=(2, 4, 8),
        pre_steps=300,
        pre_batch=8,
        steps=80,
        steps_steady=160,
        batch=8,
        eval_every=5,
        eval_every_transient=10,
        lrs=[1e-3, 3e-3, 1e-2],
        extend=2,
        hidden=24,
        layers=4,
        tune_all=False,
    ),
    "full": dict(
        res=3,
        n_pre=1000,
        n_val=50,
        n_test=100,
        sizes_steady=(10, 20, 40),
        sizes_transient=(10, 20, 40),
        pre_steps=5000,
        pre_batch=16,
        steps=500,
        steps_steady=1000,
        batch=16,
        eval_every=10,
        eval_every_transient=10,
        lrs=[3e-4, 1e-3, 3e-3, 1e-2],
        extend=2,
        hidden=64,
        layers=6,
        tune_all=True,
    ),
}
ALPHA = 2.0  # screening coefficient: screening length 1/sqrt(2) ~ 0.7, the shapes' size, so u is non-local
ROLLOUT = 10
NOT_REACHED = 2.0
_NAMES = {"scratch": "scratch", "pre": "pre-trained", "ctrl": "pre-trained on shuffled targets (control)"}


def _scored(r: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    return r["val"], r


def _test_curve(r: dict[str, Any]) -> None:
    """The test-error curve of a selected run, from its checkpoints (only selected runs are evaluated on test)."""
    import copy

    net = copy.deepcopy(r["model"])
    curve = []
    for step, state in r.get("checkpoints", []):
        net.load_state_dict(state)
        curve.append((step, r["evaluate"](net)))
    r["curve"] = curve or [(0, r["test"])]


def _epochs_ratio(curve: list[tuple[int, float]], target: float, total: int) -> float:
    for step, err in curve[1:]:
        if err <= target:
            return step / total
    return NOT_REACHED


class _Ctx:
    """What one seed's run shares: sizes, device, meshes."""

    def __init__(self, mode: str, seed: int) -> None:
        import torch

        from geode.sciml.pde_pretrain.mesh import random_geometry

        self.cfg = _MODES[mode]
        self.seed = seed
        self.device = torch.device(device_for(mode))
        rng = np.random.default_rng([seed, 1])
        c = self.cfg
        n_train = max(max(c["sizes_steady"]), max(c["sizes_transient"]))
        self.pre = [random_geometry(rng, resolution=c["res"]) for _ in range(c["n_pre"])]
        self.train = [random_geometry(rng, resolution=c["res"]) for _ in range(n_train)]
        self.val = [random_geometry(rng, resolution=c["res"]) for _ in range(c["n_val"])]
        self.test = [random_geometry(rng, resolution=c["res"]) for _ in range(c["n_test"])]

    def gnn(self, out_dim: int, init_seed: int) -> Any:
        from geode.sciml.pde_pretrain.model import MeshGNN
        from geode.sciml.pde_pretrain.tasks import N_FEATURES

        return MeshGNN(N_FEATURES, out_dim, hidden=self.cfg["hidden"], layers=self.cfg["layers"], seed=init_seed)

    def batch(self, meshes: list[Any], feats: list[np.ndarray], y: np.ndarray | None = None) -> Any:
        import torch

        from geode.sciml.pde_pretrain.model import collate

        g = collate(meshes, feats)
        g = _to(g, self.device)
        if y is None:
            return g
        yt = torch.as_tensor(y, dtype=torch.float32, device=self.device)
        return g, (yt[:, None] if yt.ndim == 1 else yt)


def _to(g: Any, device: Any) -> Any:
    return g if str(device) == "cpu" else g.to(device)


def _errors(model: Any, g: Any, y: Any) -> np.ndarray:
    import torch

    from geode.sciml.pde_pretrain.tasks import relative_errors

    with torch.no_grad():
        return relative_errors(model(g), y, g)


# --------------------------------------------------------------------------------------------------
# Steady regime: geometry-descriptor pre-training, screened-Poisson fine-tuning
# --------------------------------------------------------------------------------------------------


def _steady(ctx: _Ctx, out: dict[str, Any]) -> None:
    import torch

    from geode.sciml.pde_pretrain.model import PointMLP
    from geode.sciml.pde_pretrain.tasks import descriptor_targets, fit_curve, node_features, poisson_dataset

    cfg, seed = ctx.cfg, ctx.seed
    desc_pre = [descriptor_targets(m) for m in ctx.pre]
    allp = np.concatenate(desc_pre)
    mu, sd = allp.mean(0), allp.std(0) + 1e-12
    z_pre = [(d - mu) / sd for d in desc_pre]
    prng = np.random.default_rng([seed, 2])
    z_shuf = [z[prng.permutation(len(z))] for z in z_pre]
    z_val = [(descriptor_targets(m) - mu) / sd for m in ctx.val]
    gv = ctx.batch(ctx.val, [node_features(m) for m in ctx.val])
    yv = torch.as_tensor(np.concatenate(z_val), dtype=torch.float32, device=ctx.device)

    def pretrain(targets: list[np.ndarray], tag: str) -> tuple[Any, float]:
        model = ctx.gnn(targets[0].shape[1], seed).to(ctx.device)
        rng = np.random.default_rng([seed, 3])

        def batches(_: int) -> Any:
            idx = rng.choice(len(ctx.pre), cfg["pre_batch"], replace=False)
            return ctx.batch(
                [ctx.pre[i] for i in idx],
                [node_features(ctx.pre[i]) for i in idx],
                np.concatenate([targets[i] for i in idx]),
            )

        fit_curve(model, batches, steps=cfg["pre_steps"], lr=3e-3, seed=seed)
        with torch.no_grad():
            r2 = float(1 - ((model(gv) - yv) ** 2).mean() / (yv**2).mean())
        out["metrics"][f"steady_{tag}_pretext_r2"] = r2
        return model, r2

    pre, _ = pretrain(z_pre, "pre")
    ctrl, _ = pretrain(z_shuf, "ctrl")
    out["metrics"]["steady_pretext_r2"] = out["metrics"].pop("steady_pre_pretext_r2")

    train = poisson_dataset(ctx.train, np.random.default_rng([seed, 4]), alpha=ALPHA)
    val = poisson_dataset(ctx.val, np.random.default_rng([seed, 5]), alpha=ALPHA)
    test = poisson_dataset(ctx.test, np.random.default_rng([seed, 6]), alpha=ALPHA)
    sizes = cfg["sizes_steady"]
    desc_stats = (mu, sd)

    def split(data: list[Any], meshes: list[Any], scale: float, desc: bool = False) -> Any:
        feats = [x for x, _ in data]
        if desc:
            feats = [
                np.concatenate([x, (descriptor_targets(m) - desc_stats[0]) / desc_stats[1]], 1)
                for x, m in zip(feats, meshes)
            ]
        return ctx.batch(meshes, feats, np.concatenate([u for _, u in data]) / scale)

    def init(method: str) -> Any:
        if method == "scratch":
            return ctx.gnn(1, seed + 1)
        return (pre if method == "pre" else ctrl).with_new_head(1, seed=seed + 1)

    tuned_lr: dict[str, float] = {}
    curves: dict[str, Any] = {}
    for k, n in enumerate(sizes):
        scale = float(np.sqrt(np.mean(np.concatenate([u for _, u in train[:n]]) ** 2)))
        gtr, ytr = split(train[:n], ctx.train[:n], scale)
        gva, yva = split(val, ctx.val, scale)
        gte, yte = split(test, ctx.test, scale)
        small = k == 0
        methods = ("scratch", "pre", "ctrl") if small else ("scratch", "pre")

        def run_one(
            method: str,
            lr: float,
            steps: int = cfg["steps_steady"],
            *,
            n: int = n,
            gtr: Any = gtr,
            ytr: Any = ytr,
            gva: Any = gva,
            yva: Any = yva,
            gte: Any = gte,
            yte: Any = yte,
        ) -> dict[str, Any]:
            model = init(method).to(ctx.device)
            r = fit_curve(
                model,
                lambda s: (gtr, ytr),
                steps=steps,
                lr=lr,
                checkpoint_every=cfg["eval_every"],
                seed=seed,
            )
            r["val"] = float(_errors(model, gva, yva).mean()) if r["finite"] else float("inf")
            r["test"] = float(_errors(model, gte, yte).mean()) if r["finite"] else float("inf")
            r["model"], r["evaluate"] = model, lambda net: float(_errors(net, gte, yte).mean())
            return r

        if small or cfg["tune_all"]:
            res = tune(
                lambda m, p, run_one=run_one: _scored(run_one(m, p["lr"])),
                {m: {"lr": cfg["lrs"]} for m in methods},
                maximize=False,
                extend=cfg["extend"],
            )
            best = {m: res.payload(m) for m in methods}
            tuned_lr.update({m: res.params(m)["lr"] for m in methods})
            out["tuned"] += [dict(r, regime="steady", size=n) for r in res.table()]
            out["notes"] += [f"(steady, N={n}) {s}" for s in res.notes()]
        else:
            best = {m: run_one(m, tuned_lr[m]) for m in methods}
        out["nonfinite"] += sum(not best[m]["finite"] for m in methods)
        for m in methods:
            _test_curve(best[m])
        mets = out["metrics"]
        for m in methods:
            mets[f"steady_{m}_err_{n}"] = best[m]["test"]
        mets[f"steady_epoch_ratio_{n}"] = _epochs_ratio(
            best["pre"]["curve"], best["scratch"]["test"], cfg["steps_steady"]
        )
        mets[f"steady_gain_{n}"] = 1 - best["pre"]["test"] / best["scratch"]["test"]
        curves[n] = {m: best[m]["curve"] for m in methods}
        if small:
            mets["steady_epoch_ratio"] = mets[f"steady_epoch_ratio_{n}"]
            mets["steady_gain"] = mets[f"steady_gain_{n}"]
            mets["steady_ctrl_epoch_ratio"] = _epochs_ratio(
                best["ctrl"]["curve"], best["scratch"]["test"], cfg["steps_steady"]
            )
            mets["steady_ctrl_gain"] = 1 - best["ctrl"]["test"] / best["scratch"]["test"]
            mets["steady_gain_over_ctrl"] = 1 - best["pre"]["test"] / best["ctrl"]["test"]  # reported, not judged
            extra = int(round(cfg["pre_steps"] * cfg["pre_batch"] / n))
            mc = run_one("scratch", tuned_lr["scratch"], cfg["steps_steady"] + extra)
            mets["steady_scratch_matched_compute_err"] = mc["test"]
            out["table"].append(
                {
                    "regime": "steady",
                    "N": n,
                    "method": f"scratch, +{extra} epochs (matched compute)",
                    "test error": mc["test"],
                    "val error": mc["val"],
                }
            )
            # descriptor-only regressor: a per-vertex MLP with HKS and curvatures as inputs, same tuning budget
            gtd, ytd = split(train[:n], ctx.train[:n], scale, True)
            gvd, yvd = split(val, ctx.val, scale, True)
            gsd, ysd = split(test, ctx.test, scale, True)

            def run_mlp(_: str, p: dict[str, Any], d: tuple[Any, ...] = (gtd, ytd, gvd, yvd, gsd, ysd)) -> Any:
                gtd, ytd, gvd, yvd, gsd, ysd = d
                model = PointMLP(gtd.x.shape[1], 1, hidden=cfg["hidden"], layers=2, seed=seed + 1).to(ctx.device)
                r = fit_curve(model, lambda s: (gtd, ytd), steps=cfg["steps_steady"], lr=p["lr"], seed=seed)
                r["test"] = float(_errors(model, gsd, ysd).mean())
                return float(_errors(model, gvd, yvd).mean()), r

            rm = tune(run_mlp, {"descriptor_mlp": {"lr": cfg["lrs"]}}, maximize=False, extend=cfg["extend"])
            mets["steady_descriptor_mlp_err"] = rm.payload("descriptor_mlp")["test"]
            out["tuned"] += [dict(r, regime="steady", size=n) for r in rm.table()]
            out["table"].append(
                {
                    "regime": "steady",
                    "N": n,
                    "method": "descriptor-only per-vertex MLP",
                    "test error": mets["steady_descriptor_mlp_err"],
                    "val error": rm.score("descriptor_mlp"),
                }
            )
        for m in methods:
            out["table"].append(
                {
                    "regime": "steady",
                    "N": n,
                    "method": _NAMES[m],
                    "test error": best[m]["test"],
                    "val error": best[m]["val"],
                    "lr": tuned_lr[m],
                }
            )
    n_big = sizes[-1]
    mean_u = float(np.mean(np.concatenate([u for _, u in train[:n_big]])))
    gte, yte = split(test, ctx.test, 1.0)
    const = torch.full_like(yte, mean_u)
    from geode.sciml.pde_pretrain.tasks import relative_errors

    mean_err = float(relative_errors(const, yte, gte).mean())
    out["metrics"]["steady_mean_field_err"] = mean_err
    out["metrics"]["steady_floor_ratio"] = out["metrics"][f"steady_scratch_err_{n_big}"] / mean_err
    out["curves"]["steady"] = curves


# --------------------------------------------------------------------------------------------------
# Transient regime: online heat pre-training, Fisher-KPP fine-tuning
# --------------------------------------------------------------------------------------------------


def _transient(ctx: _Ctx, out: dict[str, Any]) -> None:
    import torch

    from geode.sciml.pde_pretrain.tasks import HeatStream, fit_curve, kpp_dataset, kpp_pairs, rollout

    cfg, seed = ctx.cfg, ctx.seed
    vstream = HeatStream(ctx.val)
    gvs, yvs = vstream.sample(np.random.default_rng([seed, 7]), max(8, len(ctx.val)))
    gvs, yvs = _to(gvs, ctx.device), yvs.to(ctx.device)

    def pretrain(shuffle: bool, tag: str) -> Any:
        model = ctx.gnn(1, seed).to(ctx.device)
        stream = HeatStream(ctx.pre, shuffle_targets=shuffle)
        rng = np.random.default_rng([seed, 8])

        def batches(_: int) -> Any:
            g, y = stream.sample(rng, cfg["pre_batch"])
            return _to(g, ctx.device), y.to(ctx.device)

        fit_curve(model, batches, steps=cfg["pre_steps"], lr=3e-3, seed=seed)
        with torch.no_grad():
            skill = float(1 - ((model(gvs) - yvs) ** 2).mean() / (yvs**2).mean())
        out["metrics"][f"transient_{tag}_pretext_skill"] = skill
        return model

    pre = pretrain(False, "pre")
    ctrl = pretrain(True, "ctrl")
    out["metrics"]["transient_pretext_skill"] = out["metrics"].pop("transient_pre_pretext_skill")
    sizes = cfg["sizes_transient"]
    train = kpp_dataset(ctx.train[: max(sizes)], np.random.default_rng([seed, 9]), n_steps=ROLLOUT)
    val = kpp_dataset(ctx.val, np.random.default_rng([seed, 10]), n_steps=ROLLOUT)
    test = kpp_dataset(ctx.test, np.random.default_rng([seed, 11]), n_steps=ROLLOUT)

    def init(method: str) -> Any:
        import copy

        if method == "scratch":
            return ctx.gnn(1, seed + 1)
        return copy.deepcopy(pre if method == "pre" else ctrl)

    def run_one(method: str, lr: float, n: int, steps: int = cfg["steps"]) -> dict[str, Any]:
        model = init(method).to(ctx.device)
        pairs = kpp_pairs(train[:n])
        rng = np.random.default_rng([seed, 12, n])  # the same batch sequence for every method

        def batches(_: int) -> Any:
            idx = rng.choice(len(pairs), min(cfg["batch"], len(pairs)), replace=False)
            return ctx.batch(
                [pairs[i][0] for i in idx], [pairs[i][1] for i in idx], np.concatenate([pairs[i][2] for i in idx])
            )

        r = fit_curve(
            model,
            batches,
            steps=steps,
            lr=lr,
            seed=seed,
            checkpoint_every=cfg["eval_every_transient"],
        )
        r["val"] = float(rollout(model, val, ROLLOUT).mean()) if r["finite"] else float("inf")
        r["test"] = float(rollout(model, test, ROLLOUT).mean()) if r["finite"] else float("inf")
        r["model"], r["evaluate"] = model, lambda net: float(rollout(net, test, ROLLOUT).mean())
        return r

    tuned_lr: dict[str, float] = {}
    curves: dict[str, Any] = {}
    mets = out["metrics"]
    for k, n in enumerate(sizes):
        small = k == 0
        methods = ("scratch", "pre", "ctrl") if small else ("scratch", "pre")
        if small or cfg["tune_all"]:
            res = tune(
                lambda m, p, n=n: _scored(run_one(m, p["lr"], n)),
                {m: {"lr": cfg["lrs"]} for m in methods},
                maximize=False,
                extend=cfg["extend"],
            )
            best = {m: res.payload(m) for m in methods}
            tuned_lr.update({m: res.params(m)["lr"] for m in methods})
            out["tuned"] += [dict(r, regime="transient", size=n) for r in res.table()]
            out["notes"] += [f"(transient, N={n}) {s}" for s in res.notes()]
        else:
            best = {m: run_one(m, tuned_lr[m], n) for m in methods}
        out["nonfinite"] += sum(not best[m]["finite"] for m in methods)
        for m in methods:
            _test_curve(best[m])
            mets[f"transient_{m}_err_{n}"] = best[m]["test"]
            out["table"].append(
                {
                    "regime": "transient",
                    "N": n,
                    "method": _NAMES[m],
                    "test error": best[m]["test"],
                    "val error": best[m]["val"],
                    "lr": tuned_lr[m],
                }
            )
        mets[f"transient_epoch_ratio_{n}"] = _epochs_ratio(best["pre"]["curve"], best["scratch"]["test"], cfg["steps"])
        mets[f"transient_gain_{n}"] = 1 - best["pre"]["test"] / best["scratch"]["test"]
        curves[n] = {m: best[m]["curve"] for m in methods}
        if small:
            mets["transient_epoch_ratio"] = mets[f"transient_epoch_ratio_{n}"]
            mets["transient_gain"] = mets[f"transient_gain_{n}"]
            mets["transient_ctrl_epoch_ratio"] = _epochs_ratio(
                best["ctrl"]["curve"], best["scratch"]["test"], cfg["steps"]
            )
            mets["transient_ctrl_gain"] = 1 - best["ctrl"]["test"] / best["scratch"]["test"]
            mets["transient_gain_over_ctrl"] = 1 - best["pre"]["test"] / best["ctrl"]["test"]  # reported, not judged
            extra = cfg["pre_steps"] * cfg["pre_batch"] // cfg["batch"]
            mc = run_one("scratch", tuned_lr["scratch"], n, cfg["steps"] + extra)
            mets["transient_scratch_matched_compute_err"] = mc["test"]
            out["table"].append(
                {
                    "regime": "transient",
                    "N": n,
                    "method": f"scratch, +{extra} steps (matched compute)",
                    "test error": mc["test"],
                    "val error": mc["val"],
                }
            )

    class _Persist(torch.nn.Module):
        def forward(self, g: Any) -> Any:
            return torch.zeros(g.x.shape[0], 1)

    pers = float(rollout(_Persist(), test, ROLLOUT).mean())  # u_{n+1} = u_n
    mets["transient_persistence_err"] = pers
    mets["transient_floor_ratio"] = mets[f"transient_scratch_err_{sizes[-1]}"] / pers
    out["curves"]["transient"] = curves


def _figure(curves: dict[str, Any], steps_steady: int, steps: int) -> Any:
    from matplotlib.figure import Figure

    regimes = [r for r in ("steady", "transient") if r in curves]
    ncols = max(len(curves[r]) for r in regimes)
    fig = Figure(figsize=(3.2 * ncols, 2.6 * len(regimes)))
    axes = fig.subplots(len(regimes), ncols, squeeze=False)
    colours = {"scratch": "C0", "pre": "C1", "ctrl": "C7"}
    for i, r in enumerate(regimes):
        for j, (n, cs) in enumerate(sorted(curves[r].items())):
            ax = axes[i][j]
            for m, c in cs.items():
                xs, ys = zip(*c)
                ax.plot(xs, ys, color=colours[m], label=_NAMES[m] if (i, j) == (0, 0) else None)
            ax.set_yscale("log")
            ax.set_title(f"{r}, N={n}", fontsize=9)
            ax.set_xlabel("epoch" if r == "steady" else "step", fontsize=8)
            ax.axvline((steps_steady if r == "steady" else steps) / 2, color="k", lw=0.5, ls=":")
        axes[i][0].set_ylabel("test rel. L2 error", fontsize=8)
    fig.legend(loc="upper center", ncol=3, fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


@register(
    "pde-pretrain",
    claim=(
        "Pre-training a mesh surrogate on intrinsic shape descriptors (steady) or on online synthetic heat data "
        "(transient) over many 3D geometries makes fine-tuning on a target PDE faster and more accurate in the "
        "low-data regime."
    ),
    paper_figure="up to 3x faster convergence, 2x data efficiency and up to 25% higher accuracy when fine-tuning",
    baselines=("scratch MeshGNN (same fine-tuning epochs)", "scratch + pre-training compute", "descriptor-only MLP"),
    thresholds=(
        Threshold(
            "faster_steady",
            "steady_epoch_ratio",
            "<=",
            0.5,
            "steady: pre-trained reaches scratch's final error in <= 1/2 the epochs, smallest N, every seed",
            agg="all",
            control="steady_ctrl_epoch_ratio",
            arms=("pre", "scratch"),
            requires=("steady_learns", "all_finite"),
        ),
        Threshold(
            "better_steady",
            "steady_gain",
            ">=",
            0.10,
            "steady: pre-trained error >= 10% lower than scratch at the smallest N, every seed",
            agg="all",
            control="steady_ctrl_gain",
            arms=("pre", "scratch"),
            requires=("steady_learns", "all_finite"),
        ),
        Threshold(
            "faster_transient",
            "transient_epoch_ratio",
            "<=",
            0.5,
            "transient: pre-trained reaches scratch's final rollout error in <= 1/2 the steps, smallest N",
            agg="all",
            control="transient_ctrl_epoch_ratio",
            arms=("pre", "scratch"),
            requires=("transient_learns", "all_finite"),
        ),
        Threshold(
            "better_transient",
            "transient_gain",
            ">=",
            0.10,
            "transient: pre-trained rollout error >= 10% lower than scratch at the smallest N, every seed",
            agg="all",
            control="transient_ctrl_gain",
            arms=("pre", "scratch"),
            requires=("transient_learns", "all_finite"),
        ),
        Threshold(
            "pretext_steady",
            "steady_pretext_r2",
            ">=",
            0.5,
            "reported: (a floor before protocol v3, which refuses floors on the paper's own method) descriptor "
            "pre-training reaches R^2 >= 0.5 on held-out geometries",
            agg="all",
            arms="pre",
        ),
        Threshold(
            "pretext_transient",
            "transient_pretext_skill",
            ">=",
            0.5,
            "reported: (a floor before protocol v3, which refuses floors on the paper's own method) heat "
            "pre-training one-step skill >= 0.5 on held-out geometries",
            agg="all",
            arms="pre",
        ),
    ),
    floors=(
        Threshold(
            "steady_learns",
            "steady_floor_ratio",
            "<=",
            0.7,
            "floor: scratch at the largest N beats predicting the mean field (error <= 0.7x)",
            agg="all",
            arms="scratch",
        ),
        Threshold(
            "transient_learns",
            "transient_floor_ratio",
            "<=",
            0.7,
            "floor: scratch at the largest N beats persistence on the 10-step rollout (error <= 0.7x)",
            agg="all",
            arms="scratch",
        ),
        Threshold("all_finite", "nonfinite_tuned", "<=", 0.0, "floor: no selected run is non-finite", agg="all"),
    ),
    reproduced="faster_steady and better_steady and faster_transient and better_transient",
    partial="faster_steady or better_steady or faster_transient or better_transient",
    key_metric="steady_gain",
    revision=3,
    method="pre",
    tuned=("pre", "scratch", "descriptor_mlp"),
)
def run(mode: str, seed: int) -> Outcome:
    t0 = time.perf_counter()
    ctx = _Ctx(mode, seed)
    out: dict[str, Any] = dict(metrics={}, table=[], tuned=[], notes=[], curves={}, nonfinite=0)
    _steady(ctx, out)
    _transient(ctx, out)
    m = out["metrics"]
    m["nonfinite_tuned"] = float(out["nonfinite"])
    n_s, n_t = ctx.cfg["sizes_steady"][0], ctx.cfg["sizes_transient"][0]
    strongest_s = min(
        ("steady_scratch_matched_compute_err", "steady_descriptor_mlp_err", f"steady_scratch_err_{n_s}"),
        key=lambda k: m[k],
    )
    out["notes"].append(
        f"Strongest baseline, steady, N={n_s}: {strongest_s} = {m[strongest_s]:.3f} "
        f"(pre-trained {m[f'steady_pre_err_{n_s}']:.3f})."
    )
    out["notes"].append(
        f"Transient, N={n_t}: scratch {m[f'transient_scratch_err_{n_t}']:.3f}, scratch with matched compute "
        f"{m['transient_scratch_matched_compute_err']:.3f}, pre-trained {m[f'transient_pre_err_{n_t}']:.3f}."
    )
    out["notes"].append(f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.")
    summary = (
        f"steady N={n_s}: error scratch {m[f'steady_scratch_err_{n_s}']:.3f}, pre-trained "
        f"{m[f'steady_pre_err_{n_s}']:.3f} (gain {m['steady_gain']:+.2f}, epoch ratio {m['steady_epoch_ratio']:.2f}); "
        f"transient N={n_t}: rollout error scratch {m[f'transient_scratch_err_{n_t}']:.3f}, pre-trained "
        f"{m[f'transient_pre_err_{n_t}']:.3f} (gain {m['transient_gain']:+.2f}, step ratio "
        f"{m['transient_epoch_ratio']:.2f})"
    )
    return Outcome(
        metrics={k: float(v) for k, v in m.items()},
        table=out["table"],
        figures={"curves": _figure(out["curves"], ctx.cfg["steps_steady"], ctx.cfg["steps"])},
        summary=summary,
        notes=out["notes"],
        tuned=out["tuned"],
    )
