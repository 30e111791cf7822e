"""Claim check of LieVLM: routing semantics by geometry-predicted rotations keeps accuracy under severe pose change.

Thresholds (fixed by the issue, before any run): ``reproduced`` if the accuracy in the severe-pose bin drops by
at most half of additive fusion's drop, with equal in-distribution accuracy; ``partial`` if LieVLM beats
additive fusion in the severe bin.

Numerical definitions, written before the first run:

- *drop*: test accuracy in distribution (poses 0-30 degrees, the training range) minus test accuracy in the
  severe bin (70-90 degrees); "at most half": ``drop_margin = 0.5 * drop_additive - drop_lie >= 0``, on the
  one-sided 95% lower bound over seeds (``bound95``, differences averaged arithmetically);
- *equal in-distribution accuracy*: LieVLM's in-distribution test accuracy is at most 0.02 below additive
  fusion's (``id_gap = acc_id_lie - acc_id_additive >= -0.02``, ``bound95``). One-sided: the claim is that routing
  costs nothing in distribution; a LieVLM that is also better in distribution is not penalised;
- *beats in the severe bin*: ``severe_margin = acc_severe_lie - acc_severe_additive > 0`` (``bound95``).

Added before the first run (the protocol needs them; the issue names none):

- *floors*: additive fusion and LieVLM each reach >= 0.6 in-distribution accuracy (chance 0.1); no tuned run is
  non-finite;
- *negative controls*: the LieVLM block with its group action disabled (same parameters, ``z' = z``: the
  ablation without the paper's idea) for ``drop_margin`` and ``severe_margin``; a second additive-fusion run from
  another initialisation at its tuned values (the noise floor of a margin) for ``severe_margin`` and
  ``drop_margin``; the semantics-only model (no geometry) for ``id_gap``.

Set-up (:mod:`geode.vision3d.lievlm.benchmark`): 10 classes, M = 8 triplets (d_vis = 24), 3 objects per scene,
the question "class of the object nearest to the camera" answered by a 2-layer pre-norm transformer head over a
query token and the fused object tokens. Arms: semantics only, additive fusion (VG-LLM style), geometry as extra
tokens (concatenation), an MLP on [v, g] (the strongest generic baseline), LieVLM, and the unrouted ablation.
Equal tuning: the learning rate over {1e-3, 3e-3, 1e-2} (``extend=1`` past an edge) for every arm, selected
on in-distribution validation accuracy; Adam, same steps and batch for all. Full mode (GPU if available, not
run here): M = 16 (d_vis = 48), more data and steps.

Revision history. Revision 1 (3 seeds, quick): ``not reproduced``, every threshold failing and every floor
passing (numbers below are identical in revision 2 for the arms it shared, same seeds). LieVLM behaved like its
own unrouted ablation, so revision 2 adds a *diagnostic* arm, reported and never thresholded: LieVLM whose
projection ``P`` starts at the drift's true triplet basis (``lie_qinit``), tuned like the others, to tell "the
group action cannot help here" from "the block does not find the basis in which the drift is a rotation".
Thresholds, floors, controls and the other arms are unchanged.

Quick verdict (3 seeds, revision 2; revision 1 gave the same verdict and the same numbers): ``not reproduced``,
all three seeds alike. Seeds 0 / 1 / 2:

- in-distribution test accuracy: additive 0.974 / 0.957 / 0.970, LieVLM 0.958 / 0.933 / 0.941 (``id_gap`` -0.016
  / -0.024 / -0.029: fails the 0.02 bound; control semantics-only -0.55, fails);
- severe bin (70-90 degrees): additive 0.731 / 0.423 / 0.865, LieVLM 0.719 / 0.398 / 0.843; drops 0.243 / 0.534 /
  0.105 (additive) vs 0.239 / 0.535 / 0.098 (LieVLM): ``drop_margin`` -0.118 / -0.268 / -0.045 (fails;
  controls: unrouted -0.186 / -0.268 / -0.036, additive replicate -0.119 / -0.284 / -0.029, both fail);
- ``severe_margin`` -0.012 / -0.025 / -0.022 (fails; controls: unrouted -0.098 / -0.024 / -0.013, additive
  replicate +0.005 / -0.007 / +0.020, which also fails the bound);
- floors pass (additive and LieVLM ID >= 0.93, nothing non-finite). Strongest baseline in the severe bin:
  additive (seeds 0, 2) and the MLP fusion (seed 1, 0.433); LieVLM trails it by 0.012 / 0.035 / 0.022.
  Geometry as extra tokens did not learn the task in 350 steps (ID 0.41-0.43, near semantics-only's 0.42).
- Diagnostic (P at the true basis): ID 0.969 / 0.951 / 0.939, severe 0.631 / 0.371 / 0.860, drop 0.338 / 0.580
  / 0.079: no more robust. The transformer head solves the 0-30 degree training range without the group action,
  so nothing in training makes the rotation states invert the drift; the inductive bias is present (tests show
  the block can undo a rotation exactly) but not selected by in-distribution training at this scale.

Additive fusion's learning rate was selected at the extended upper edge (0.033) in every seed. Quick mode: 82 /
82 / 90 CPU s per seed (240-320 s wall under contention).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read not reproduced on the same runs): unresolved: drop_half, id_equal; not tuned by the protocol:
additive. No idea ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

from geode.claims import Outcome, Threshold, device_for, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(M=4, n_train=512, n_eval=256, steps=30, batch=64, lrs=[3e-3]),
    "quick": dict(M=8, n_train=6000, n_eval=1000, steps=350, batch=128, lrs=[1e-3, 3e-3, 1e-2]),
    "full": dict(M=16, n_train=50000, n_eval=5000, steps=8000, batch=256, lrs=[3e-4, 1e-3, 3e-3]),
}
BINS = {"id": (0.0, 30.0), "mild": (30.0, 50.0), "moderate": (50.0, 70.0), "severe": (70.0, 90.0)}
METHODS = ("semantic", "additive", "concat", "mlp", "lie", "lie_unrouted", "lie_qinit")
_NAMES = {
    "semantic": "semantics only",
    "additive": "additive fusion (VG-LLM style)",
    "concat": "geometry tokens (concatenation)",
    "mlp": "MLP fusion on [v, g]",
    "lie": "LieVLM (Lie routing)",
    "lie_unrouted": "LieVLM without the group action (ablation)",
    "lie_qinit": "LieVLM, P initialised at the true triplet basis (diagnostic)",
    "additive_rep": "additive fusion, another init (control)",
}


def _accuracy(model: Any, data: dict[str, Any]) -> float:
    import torch

    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(v, g).argmax(-1) for v, g in zip(data["v"].split(1024), data["g"].split(1024))])
    model.train()
    return float((pred == data["y"]).float().mean())


def _train(kind: str, lr: float, world: Any, train: dict, val: dict, cfg: dict, seed: int, dev: Any) -> dict[str, Any]:
    import torch

    from geode.vision3d.lievlm import PoseDriftModel

    torch.manual_seed(seed)
    arch = "lie" if kind == "lie_qinit" else kind
    model = PoseDriftModel(arch, world.d_vis, world.d_geo, world.n_classes, world.n_objects, n_triplets=cfg["M"])
    if kind == "lie_qinit":  # diagnostic: the projection P starts at the drift's true triplet basis (z = P v = x)
        with torch.no_grad():
            model.fusion.proj.weight.copy_(torch.tensor(world.mix, dtype=torch.float32))
    model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 7)
    n = train["y"].shape[0]
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg["steps"])
    finite = True
    for _ in range(cfg["steps"]):
        idx = torch.randint(0, n, (cfg["batch"],), generator=gen)
        loss = torch.nn.functional.cross_entropy(model(train["v"][idx], train["g"][idx]), train["y"][idx])
        if not torch.isfinite(loss):
            finite = False
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return dict(model=model, val=_accuracy(model, val) if finite else -math.inf, finite=finite, lr=lr)


@register(
    "lievlm",
    claim=(
        "Treating geometry as a Lie-group operator on projected semantics (geometry-predicted rotation states, "
        "triplet-wise SO(3) actions, routed fusion) keeps accuracy under severe pose change far better than "
        "additive geometry fusion, at equal in-distribution accuracy."
    ),
    paper_figure="Improved view robustness, especially in severe-pose-change regimes; beats additive fusion",
    baselines=("additive fusion (VG-LLM style)", "geometry tokens (concatenation)", "MLP fusion", "semantics only"),
    thresholds=(
        Threshold(
            "drop_half",
            "drop_margin",
            ">=",
            0.0,
            "severe-bin drop at most half of additive fusion's (95% lower bound of 0.5 drop_add - drop_lie)",
            agg="bound95",
            control=("unrouted_drop_margin", "replicate_drop_margin"),
        ),
        Threshold(
            "id_equal",
            "id_gap",
            ">=",
            -0.02,
            "in-distribution accuracy at most 0.02 below additive fusion's (95% lower bound)",
            agg="bound95",
            control="semantic_id_gap",
        ),
        Threshold(
            "beats_severe",
            "severe_margin",
            ">",
            0.0,
            "LieVLM beats additive fusion in the severe bin (95% lower bound)",
            agg="bound95",
            control=("unrouted_severe_margin", "replicate_severe_margin"),
        ),
        Threshold(
            "lie_learns",
            "acc_id_lie",
            ">=",
            0.6,
            "reported: LieVLM ID accuracy >= 0.6",
            agg="all",
            arms=("lie",),
        ),
    ),
    floors=(
        Threshold(
            "additive_learns",
            "acc_id_additive",
            ">=",
            0.6,
            "floor: additive fusion ID acc >= 0.6",
            agg="all",
            arms=("additive",),
        ),
        Threshold("all_finite", "nonfinite_tuned", "<=", 0.0, "floor: no tuned run is non-finite", agg="all"),
    ),
    reproduced="drop_half and id_equal",
    partial="beats_severe",
    method="lie",
    tuned=("lie", "additive"),
    key_metric="drop_margin",
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    from geode.vision3d.lievlm import make_pose_drift_world, sample_pose_drift

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    dev = device_for(mode)
    world = make_pose_drift_world(seed, n_triplets=cfg["M"])

    def draw(n: int, rng: tuple[float, float], s: int) -> dict[str, Any]:
        d = sample_pose_drift(world, n, rng, seed * 100003 + s)
        return {k: t.to(dev) for k, t in d.items()}

    train = draw(cfg["n_train"], BINS["id"], 1)
    val = draw(cfg["n_eval"], BINS["id"], 2)
    tests = {b: draw(cfg["n_eval"], r, 10 + i) for i, (b, r) in enumerate(BINS.items())}

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        r = _train(method, params["lr"], world, train, val, cfg, seed, dev)
        return r["val"], r

    res = tune(fit, {m: dict(lr=cfg["lrs"]) for m in METHODS}, maximize=True, extend=1)
    best = {m: res.payload(m) for m in METHODS}
    best["additive_rep"] = _train("additive", res.params("additive")["lr"], world, train, val, cfg, seed + 50021, dev)
    nonfinite = sum(not best[m]["finite"] for m in METHODS)
    metrics: dict[str, float] = {"nonfinite_tuned": float(nonfinite)}
    table: list[dict[str, Any]] = []
    for m, r in best.items():
        accs = {b: _accuracy(r["model"], tests[b]) if r["finite"] else 0.0 for b in BINS}
        for b, a in accs.items():
            metrics[f"acc_{b}_{m}"] = a
        metrics[f"drop_{m}"] = accs["id"] - accs["severe"]
        table.append(
            {"method": _NAMES[m], "lr": r["lr"], "val acc": r["val"], **{f"acc {b}": a for b, a in accs.items()}}
        )
    d_add = metrics["drop_additive"]
    metrics["drop_margin"] = 0.5 * d_add - metrics["drop_lie"]
    metrics["unrouted_drop_margin"] = 0.5 * d_add - metrics["drop_lie_unrouted"]
    metrics["replicate_drop_margin"] = 0.5 * d_add - metrics["drop_additive_rep"]
    metrics["qinit_drop_margin"] = 0.5 * d_add - metrics["drop_lie_qinit"]
    metrics["id_gap"] = metrics["acc_id_lie"] - metrics["acc_id_additive"]
    metrics["semantic_id_gap"] = metrics["acc_id_semantic"] - metrics["acc_id_additive"]
    for m, key in (
        ("lie", "severe_margin"),
        ("lie_unrouted", "unrouted_severe_margin"),
        ("additive_rep", "replicate_severe_margin"),
    ):
        metrics[key] = metrics[f"acc_severe_{m}"] - metrics["acc_severe_additive"]
    baselines = ("additive", "concat", "mlp", "semantic")
    strongest = max(baselines, key=lambda m: metrics[f"acc_severe_{m}"])
    metrics["strongest_severe_margin"] = metrics["acc_severe_lie"] - metrics[f"acc_severe_{strongest}"]
    notes = res.notes()
    notes.append(
        f"Strongest baseline in the severe bin: {_NAMES[strongest]} (acc {metrics[f'acc_severe_{strongest}']:.3f}, "
        f"ID {metrics[f'acc_id_{strongest}']:.3f}); LieVLM {metrics['acc_severe_lie']:.3f} "
        f"(ID {metrics['acc_id_lie']:.3f})."
    )
    notes.append(f"Wall time of this seed: {time.perf_counter() - t0:.0f} s on {dev}.")
    summary = ", ".join(
        f"{m} ID {metrics[f'acc_id_{m}']:.3f} / severe {metrics[f'acc_severe_{m}']:.3f}"
        for m in ("additive", "concat", "mlp", "lie", "lie_unrouted", "lie_qinit", "semantic")
    )
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=res.table())
