"""Claim check of SD-LoRA: it beats CLIP-LoRA in few-shot classification at identical inference cost.

Revision 1 (protocol v2 from the start; issue 34). Set-up (fixed before the first run):

- *world*: a tiny CLIP (ViT 16x16 px, patch 4, 2 layers, d = 48; 2-layer text transformer over 3-word
  captions) is pre-trained in-process, contrastively, on 52 "base" concepts of
  :class:`~geode.adapters.sd_lora.RelationWorld` (two glyphs, one left of / above the other). The few-shot
  task is the 8 held-out "novel" concepts: 4 glyph pairs, each in both orders, so each class has a twin
  with the same parts swapped (structure, not content, decides).
- *shots* 1, 4, 16 per class; support, validation (10 per class) and test (50 per class) sets are
  independent draws. Steps per shot level (quick 50 / 100 / 200, batch 32) are the same for every method.
- *methods*: zero-shot CLIP; Tip-Adapter (training-free cache on the frozen CLIP); CLIP-LoRA (r = 2 on q/k/v
  of both encoders, plus the same Tip cache on its embeddings); SD-LoRA (the same student + the training-
  only teacher, lambda_1 = lambda_2 = 1). Equal tuning: CLIP-LoRA and SD-LoRA each get the same learning-
  rate grid (1e-3, 3e-3, 1e-2, +1 step past an edge) through :func:`geode.claims.tune`; the cache's
  (alpha, beta) is selected on validation for every method from the same grid (alpha = 0 included, so
  plain CLIP-LoRA is a candidate). Selection is on validation accuracy; the test set is used once.
- *verdict*: ``reproduced`` if SD-LoRA's test accuracy beats CLIP-LoRA's by >= 1 point on average over the
  three shot levels in every seed and the inference model has the same parameter count (teacher discarded);
  ``partial`` if the >= 1 point gain holds at one shot level in every seed.
- *floors* (added by us, the issue names none): the pre-trained CLIP classifies base concepts zero-shot at
  >= 3x chance; every method reaches >= 2x chance at 16 shots; dropping the teacher leaves the student's
  predictions bit-identical (the teacher is unused at inference); no training run diverged.
- *controls*: for the accuracy thresholds, CLIP-LoRA re-seeded (other LoRA initialisation and batch order)
  minus CLIP-LoRA (the noise floor of a gain); for the cost threshold, the parameter ratio of an inference
  that keeps the teacher.
- *strongest baseline*: per shot level the better of CLIP-LoRA (+cache) and Tip-Adapter on test; SD-LoRA's
  margin over it is reported (``gain_vs_strongest_avg``), not thresholded in the verdict.

Run 1 and the two fixes made after it (the only changes to the set-up after seeing results). Run 1 (quick,
3 seeds, learning-rate grid 1e-3, 3e-3, 1e-2, +1 past an edge) gave **not reproduced** (per-seed: not
reproduced, not reproduced, partial): SD-LoRA - CLIP-LoRA = +0.8/-1.2/-2.0, -0.2/+0.2/+0.5, +2.2/-3.5/+2.5
points at 1/4/16 shots (averages -0.83, +0.17, +0.42; re-seeded control +1.17, -0.58, +0.50). It showed two
defects of the set-up, not of the method: (a) the selected learning rate sat at the lower edge even after
the extension (3.3e-4) in 10 of 18 selections, so the grid was too small (protocol section 1): the grid is
now 1e-4, 3e-4, 1e-3, 3e-3 (+1 past an edge); (b) no adapter beat zero-shot CLIP (53.0 / 66.5 / 52.3 % at
every shot level; tuned CLIP-LoRA at 16 shots 49.0 / 61.5 / 49.3 %), i.e. the few-shot pipeline never
learned the task beyond what the pre-trained model knew, and no floor caught it (protocol section 3): the
floor ``adaptation_learns`` (tuned CLIP-LoRA at 16 shots >= zero-shot + 2 points) is added. Thresholds,
controls, shots, steps and the world are unchanged.

Measured (quick, 3 seeds, after the fixes): **inconclusive**, floor ``adaptation_learns`` failed in every
seed: tuned CLIP-LoRA at 16 shots minus zero-shot CLIP = -4.0, -5.0, -0.25 points (zero-shot 53.0 / 66.5 /
52.25 %; Tip-Adapter 53.0 / 66.5 / 50.0 %): on this world no few-shot method improves on the pre-trained
model, so the comparison cannot decide the paper's claim. Reported anyway: SD-LoRA - CLIP-LoRA at 1/4/16
shots = +0.0/-0.25/-2.0, -0.25/-1.75/+0.5, -1.75/-0.5/-1.0 points (averages -0.75, -0.50, -1.08; the
threshold needs >= +1 in every seed); re-seeded CLIP-LoRA control +0.92, -0.42, -0.17 (noise floor of a
gain ~1 point); SD-LoRA minus the strongest baseline (better of CLIP-LoRA and Tip-Adapter) -2.08, -2.17,
-1.08. Identical inference cost holds: parameter ratio 1.000 (control with the teacher kept > 1), logits
bit-identical with the teacher dropped; the benchmark (quick) measures inference 1.00x [0.97-1.12] of
CLIP-LoRA's time, memory 1.02x; a training step costs 1.57x CLIP-LoRA's time and 1.32x its peak memory.
Selected learning rates lie between 3.3e-5 (one step below the grid, in 4 of 18 selections, after which
the extension budget was spent) and 3e-3: the selection prefers barely moving the pre-trained model.
CPU time 70-75 s per seed (wall 160-170 s under contention). Run 1's verdict is above; the next step a
rework should take is a world in which few-shot adaptation helps (zero-shot far below the few-shot
ceiling, e.g. novel glyphs the text encoder never saw), fixed before its first run.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read inconclusive on the same runs): floor failed: adaptation_learns; not tuned by the protocol:
sd-lora, clip-lora. No idea ablation or learned-arm reference is declared yet (protocol v3; the rework issues
45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

_LRS = (1e-4, 3e-4, 1e-3, 3e-3)  # run 1 had (1e-3, 3e-3, 1e-2): see the docstring
_ALPHAS = (0.0, 0.5, 1.0, 2.0, 4.0)
_BETAS = (1.0, 3.0, 7.0)

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        arch=dict(d=16, layers=1, heads=2, embed_dim=8),
        pretrain=20,
        shots=(1, 4, 16),
        steps={1: 2, 4: 2, 16: 2},
        lrs=(3e-3,),
        extend=0,
        n_val=2,
        n_test=4,
    ),
    "quick": dict(
        arch=dict(d=48, layers=2, heads=4, embed_dim=32),
        pretrain=1200,
        shots=(1, 4, 16),
        steps={1: 50, 4: 100, 16: 200},
        lrs=_LRS,
        extend=1,
        n_val=10,
        n_test=50,
    ),
    "full": dict(
        arch=dict(d=96, layers=4, heads=4, embed_dim=64),
        pretrain=6000,
        shots=(1, 2, 4, 8, 16),
        steps={1: 100, 2: 150, 4: 250, 8: 400, 16: 600},
        lrs=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2),
        extend=2,
        n_val=20,
        n_test=200,
    ),
}
SHOTS_VERDICT = (1, 4, 16)


def _acc(logits: Any, y: Any) -> float:
    return float((logits.argmax(1) == y).float().mean()) * 100.0


def _select_cache(model: Any, cap: Any, xv: Any, yv: Any) -> tuple[float, float, float]:
    """(val accuracy, alpha, beta) of the best cache setting on validation (ties: smaller alpha)."""
    best = (-1.0, 0.0, 1.0)
    for a in _ALPHAS:
        for b in _BETAS if a else (1.0,):
            acc = _acc(model.predict(xv, cap, alpha=a, beta=b), yv)
            if acc > best[0] + 1e-9:
                best = (acc, a, b)
    return best


def _shot_level(clip: Any, world: Any, p: dict[str, Any], shots: int, seed: int, data: dict) -> dict[str, Any]:
    import torch

    from geode.adapters.sd_lora import SDLoRA, fit
    from geode.claims import tune

    n_cls = len(world.novel)
    cap = world.captions(world.novel)
    xs, ys = world.sample(world.novel, shots, seed * 1000 + shots)
    xv, yv, xt, yt = data["xv"], data["yv"], data["xt"], data["yt"]
    steps = p["steps"][shots]

    def train(method: str, lr: float, init_seed: int) -> tuple[Any, list[float]]:
        lam = 1.0 if method == "sd-lora" else 0.0
        m = SDLoRA(clip, lambda_distill=lam, lambda_ppa=lam, generator=torch.Generator().manual_seed(init_seed))
        losses = fit(m, xs, ys, cap, steps=steps, lr=lr, seed=init_seed)
        m.build_cache(xs, ys, n_cls)
        return m, losses

    collapsed = 0

    def evaluate(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        nonlocal collapsed
        m, losses = train(method, float(params["lr"]), seed * 100 + shots)
        if not all(math.isfinite(v) for v in losses):
            collapsed += 1
            return -math.inf, None
        va, a, b = _select_cache(m, cap, xv, yv)
        return va, (m, a, b, losses)

    res = tune(evaluate, {m: {"lr": list(p["lrs"])} for m in ("clip-lora", "sd-lora")}, extend=p["extend"], seed=seed)
    out: dict[str, Any] = {"res": res}
    acc: dict[str, float] = {}
    for meth in ("clip-lora", "sd-lora"):
        m, a, b, losses = res.payload(meth)
        acc[meth] = _acc(m.predict(xt, cap, alpha=a, beta=b), yt)
        acc[meth + "-nocache"] = _acc(m.predict(xt, cap), yt)
        out[meth] = (m, a, b)
    # control: CLIP-LoRA re-seeded at its selected lr and cache setting
    m_c, _ = train("clip-lora", float(res.params("clip-lora")["lr"]), seed * 100 + shots + 50_000)
    _, a_c, b_c, _ = res.payload("clip-lora")
    acc["clip-lora-reseeded"] = _acc(m_c.predict(xt, cap, alpha=a_c, beta=b_c), yt)
    # zero-shot and Tip-Adapter on the frozen CLIP (an untrained student: LoRA's B = 0)
    frozen = SDLoRA(clip, lambda_distill=0.0, lambda_ppa=0.0)
    frozen.build_cache(xs, ys, n_cls)
    acc["zero-shot"] = _acc(frozen.predict(xt, cap), yt)
    _, a_t, b_t = _select_cache(frozen, cap, xv, yv)
    acc["tip-adapter"] = _acc(frozen.predict(xt, cap, alpha=a_t, beta=b_t), yt)
    out["acc"] = acc
    out["tip"] = (a_t, b_t)
    out["collapsed"] = collapsed
    # identical inference: drop the teacher, predictions must not change
    m_sd, a_s, b_s = out["sd-lora"]
    with torch.no_grad():
        before = m_sd.predict(xt, cap, alpha=a_s, beta=b_s)
        n_teacher = sum(q.numel() for q in m_sd.teacher.parameters())
        m_sd.drop_teacher()
        out["drop_diff"] = float((m_sd.predict(xt, cap, alpha=a_s, beta=b_s) - before).abs().max())
    n_student = sum(q.numel() for q in m_sd.student.parameters())
    n_clip_lora = sum(q.numel() for q in out["clip-lora"][0].student.parameters())
    out["cost_ratio"] = n_student / n_clip_lora
    out["cost_ratio_with_teacher"] = (n_student + n_teacher) / n_clip_lora
    return out


@register(
    "sd-lora",
    claim=(
        "A training-only heterogeneous graph teacher distilled into a CLIP-LoRA student (implicit distillation + "
        "Prototype Predictive Alignment) beats CLIP-LoRA in few-shot classification at identical inference cost."
    ),
    paper_figure="+1.3 / +1.2 / +2.4 / +1.9 / +2.0 points over CLIP-LoRA at 1/2/4/8/16 shots (11 datasets, ViT-B/16)",
    baselines=("CLIP-LoRA", "Tip-Adapter (training-free cache, reported)", "zero-shot CLIP (reported)"),
    thresholds=(
        Threshold(
            "avg_gain",
            "gain_avg",
            ">=",
            1.0,
            "SD-LoRA's test accuracy beats CLIP-LoRA's (both tuned) by >= 1 point on average over 1/4/16 shots, "
            "in every seed",
            agg="all",
            control="control_gain_avg",
            arms=("sd-lora", "clip-lora"),
        ),
        Threshold(
            "same_cost",
            "infer_param_ratio",
            "<=",
            1.0,
            "the inference model (student + cache) has no more parameters than CLIP-LoRA's (teacher discarded)",
            agg="all",
            control="control_infer_param_ratio_with_teacher",
            arms=("sd-lora", "clip-lora"),
        ),
        Threshold(
            "gain_1",
            "gain_1shot",
            ">=",
            1.0,
            ">= 1 point at 1 shot, every seed",
            agg="all",
            control="control_gain_1shot",
            arms=("sd-lora", "clip-lora"),
        ),
        Threshold(
            "gain_4",
            "gain_4shot",
            ">=",
            1.0,
            ">= 1 point at 4 shots, every seed",
            agg="all",
            control="control_gain_4shot",
            arms=("sd-lora", "clip-lora"),
        ),
        Threshold(
            "gain_16",
            "gain_16shot",
            ">=",
            1.0,
            ">= 1 point at 16 shots, every seed",
            agg="all",
            control="control_gain_16shot",
            arms=("sd-lora", "clip-lora"),
        ),
        Threshold(
            "vs_strongest",
            "gain_vs_strongest_avg",
            ">=",
            1.0,
            "reported, not in the verdict: >= 1 point over the better of CLIP-LoRA and Tip-Adapter per shot level, "
            "on average, every seed",
            agg="all",
            control="control_gain_avg",
        ),
        Threshold(
            "teacher_unused",
            "teacher_drop_max_abs_diff",
            "<=",
            0.0,
            "reported: dropping the teacher leaves SD-LoRA's test logits bit-identical",
            agg="all",
            arms=("sd-lora",),
        ),
    ),
    floors=(
        Threshold(
            "clip_pretrained",
            "base_zero_shot_vs_chance",
            ">=",
            3.0,
            "floor: the pre-trained tiny CLIP classifies the 52 base concepts zero-shot at >= 3x chance",
            agg="all",
        ),
        Threshold(
            "methods_learn",
            "worst_acc16_vs_chance",
            ">=",
            2.0,
            "floor: every method (zero-shot, Tip-Adapter, CLIP-LoRA, SD-LoRA) reaches >= 2x chance at 16 shots",
            agg="all",
        ),
        Threshold("no_collapse", "collapsed_runs", "<=", 0.0, "floor: no training run diverged", agg="all"),
        Threshold(
            "adaptation_learns",
            "clip_lora_16shot_over_zero_shot",
            ">=",
            2.0,
            "floor (added after run 1, see the docstring): tuned CLIP-LoRA at 16 shots beats zero-shot CLIP by "
            ">= 2 points, in every seed",
            agg="all",
            arms=("clip-lora",),
        ),
    ),
    reproduced="avg_gain and same_cost",
    partial="(gain_1 or gain_4 or gain_16) and same_cost",
    method="sd-lora",
    tuned=("sd-lora", "clip-lora"),
    untuned={
        "tip-adapter": "training-free cache on the frozen CLIP, no training knob; its cache (alpha, beta) is selected "
        "on validation from the same grid as every method's cache (outside the tuned table)"
    },
    key_metric="gain_avg",
    revision=1,
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geode.adapters.sd_lora import RelationWorld, pretrain_clip

    p = _MODES[mode]
    world = RelationWorld()
    t0 = time.process_time()
    clip = pretrain_clip(world, steps=p["pretrain"], seed=seed, **p["arch"])
    pre_cpu = time.process_time() - t0
    xb, yb = world.sample(world.base, 4 if mode == "smoke" else 20, seed * 1000 + 7)
    import torch

    with torch.no_grad():
        base_acc = _acc(clip(xb, world.captions(world.base)), yb)
    xv, yv = world.sample(world.novel, p["n_val"], seed * 1000 + 501)
    xt, yt = world.sample(world.novel, p["n_test"], seed * 1000 + 502)
    data = dict(xv=xv, yv=yv, xt=xt, yt=yt)
    chance = 100.0 / len(world.novel)

    metrics: dict[str, float] = {"base_zero_shot_vs_chance": base_acc / (100.0 / len(world.base))}
    table: list[dict[str, Any]] = []
    tuned: list[dict[str, Any]] = []
    notes: list[str] = []
    gains, ctrl, strong = [], [], []
    collapsed, drop, ratio, ratio_t = 0, 0.0, 1.0, 1.0
    worst16 = math.inf
    t0 = time.process_time()
    for shots in p["shots"]:
        o = _shot_level(clip, world, p, shots, seed, data)
        acc = o["acc"]
        res = o["res"]
        g = acc["sd-lora"] - acc["clip-lora"]
        c = acc["clip-lora-reseeded"] - acc["clip-lora"]
        s = acc["sd-lora"] - max(acc["clip-lora"], acc["tip-adapter"])
        metrics[f"gain_{shots}shot"] = g
        metrics[f"control_gain_{shots}shot"] = c
        metrics[f"gain_vs_strongest_{shots}shot"] = s
        for k, v in acc.items():
            metrics[f"acc_{k.replace('-', '_')}_{shots}shot"] = v
        if shots in SHOTS_VERDICT:
            gains.append(g)
            ctrl.append(c)
            strong.append(s)
        if shots == max(p["shots"]):
            worst16 = min(acc[k] for k in ("zero-shot", "tip-adapter", "clip-lora", "sd-lora")) / chance
        collapsed += o["collapsed"]
        drop = max(drop, o["drop_diff"])
        ratio, ratio_t = max(ratio, o["cost_ratio"]), o["cost_ratio_with_teacher"]
        for meth in ("clip-lora", "sd-lora"):
            _, a, b = o[meth]
            table.append(
                {
                    "shots": shots,
                    "method": meth,
                    "lr": res.params(meth)["lr"],
                    "cache_alpha": a,
                    "cache_beta": b,
                    "val_acc": res.score(meth),
                    "test_acc": acc[meth],
                    "test_acc_no_cache": acc[meth + "-nocache"],
                }
            )
        table.append(
            {"shots": shots, "method": "clip-lora (re-seeded control)", "test_acc": acc["clip-lora-reseeded"]}
        )
        table.append(
            {
                "shots": shots,
                "method": "tip-adapter",
                "cache_alpha": o["tip"][0],
                "cache_beta": o["tip"][1],
                "test_acc": acc["tip-adapter"],
            }
        )
        table.append({"shots": shots, "method": "zero-shot", "test_acc": acc["zero-shot"]})
        tuned += [{"shots": shots, **row} for row in res.table()]
        notes += [f"({shots} shots) {x}" for x in res.notes()]
    fs_cpu = time.process_time() - t0
    metrics.update(
        gain_avg=float(np.mean(gains)),
        control_gain_avg=float(np.mean(ctrl)),
        gain_vs_strongest_avg=float(np.mean(strong)),
        infer_param_ratio=ratio,
        control_infer_param_ratio_with_teacher=ratio_t,
        worst_acc16_vs_chance=worst16,
        teacher_drop_max_abs_diff=drop,
        collapsed_runs=float(collapsed),
        base_zero_shot_acc=base_acc,
        clip_lora_16shot_over_zero_shot=metrics[f"acc_clip_lora_{max(p['shots'])}shot"]
        - metrics[f"acc_zero_shot_{max(p['shots'])}shot"],
    )
    notes = [
        f"Tiny CLIP {p['arch']} pre-trained {p['pretrain']} AdamW steps (lr 3e-3, batch 64) on the 52 base concepts "
        f"({pre_cpu:.1f} CPU-s); base zero-shot accuracy {base_acc:.1f}% (chance {100 / 52:.1f}%).",
        f"Few-shot on the 8 novel concepts (chance {chance:.1f}%), shots {p['shots']}, steps {p['steps']}, "
        f"validation {p['n_val']} / test {p['n_test']} images per class; lr grid {list(p['lrs'])} (+{p['extend']} "
        f"past an edge) for CLIP-LoRA and SD-LoRA; cache alpha in {list(_ALPHAS)}, beta in {list(_BETAS)} "
        f"selected on validation for every method ({fs_cpu:.1f} CPU-s).",
        *notes,
    ]
    fig, ax = plt.subplots(figsize=(5.0, 3.6))
    for key, label in (
        ("sd_lora", "SD-LoRA"),
        ("clip_lora", "CLIP-LoRA"),
        ("tip_adapter", "Tip-Adapter"),
        ("zero_shot", "zero-shot"),
    ):
        ax.plot(p["shots"], [metrics[f"acc_{key}_{s}shot"] for s in p["shots"]], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("shots per class")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("8 twin-relation classes, tuned on validation")
    ax.legend()
    fig.tight_layout()
    summary = (
        f"{mode}: SD-LoRA - CLIP-LoRA = "
        + ", ".join(f"{metrics[f'gain_{s}shot']:+.1f}" for s in p["shots"])
        + f" points at {p['shots']} shots (avg {metrics['gain_avg']:+.2f}; re-seeded control avg "
        f"{metrics['control_gain_avg']:+.2f}); vs strongest {metrics['gain_vs_strongest_avg']:+.2f}; "
        f"inference parameter ratio {ratio:.3f}"
    )
    return Outcome(
        metrics=metrics, table=table, figures={"accuracy_vs_shots": fig}, summary=summary, notes=notes, tuned=tuned
    )
