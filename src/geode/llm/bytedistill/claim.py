"""Claim check of ByteDistill: BLDA beats SFT and ULD for a student whose tokenizer differs from the teacher's.

Thresholds (fixed by the issue, before any run): ``reproduced`` if BLDA beats SFT and ULD on held-out
exact-match accuracy (3 seeds); ``partial`` if it beats SFT. "Beats" is read as: a strictly higher test
accuracy in every seed (``agg="all"``), the tuned methods compared.

Added before the first run (the protocol needs them; the issue names none):

- *validity floors*: the teacher solves the task (greedy exact-match test accuracy >= 0.8 in every seed), and
  SFT learns something (test accuracy >= 0.05 in every seed; guessing a two-digit sum is ~0.01);
- *negative control* for both thresholds: BLDA from an *untrained* teacher (a randomly initialised model of
  the teacher's architecture and tokenizer, the same loss, BLDA's selected learning rate and temperature),
  compared with the same SFT and ULD students: it must fail both thresholds, else a gain could come from the
  extra loss term acting as a regulariser rather than from the teacher's knowledge.

Set-up (quick mode). Problems ``a+b=`` with ``0 <= a, b < 50`` and answer ``a+b`` then a newline, split per
seed into 700 test, 200 validation and 1,600 training problems. Teacher: a tiny Llama (2 layers, d=96)
trained 1,200 AdamW steps on the 1,600 problems, with an in-process byte-level BPE that splits digits
individually (as SmolLM2's and Llama 3's tokenizers do; on this alphabet it has no merges, so the teacher is
effectively byte-level). Student: a tiny Llama (2 layers, d=64) with a *different* byte-level BPE (pieces cut
only after ``=``, so tokens span ``+`` and join digits with the newline: ``30+17=47`` is ``3 | 0+1 | 7= |
47\n``; 340 tokens), trained 400 steps (batch 32) on 600 of the training problems (the low-data regime in
which a teacher's distribution can help). Off-policy: every method trains on the same ground-truth texts;
SFT minimises the answer cross-entropy, ULD and BLDA add their loss with weight 1 over the answer (tokens for
ULD, bytes for BLDA). Equal tuning on validation exact match with the same budget of 4 configurations (plus
one extension past the edge of an axis of 3 or more values): SFT the learning rate (2e-3, 3e-3, 5e-3,
8e-3); ULD and BLDA the learning rate (3e-3, 6e-3) and the distillation temperature (1, 4); the test split
is used once. Exact match is greedy decoding of the student's own tokens until a newline, compared as
bytes. The strongest baseline reported beside the named ones is the better of tuned SFT and tuned ULD.

Set-up runs before the verdict (seed 0 only; kept here because they changed the set-up, not the thresholds):

1. teacher with GPT-2's pre-tokenizer (digit runs are single tokens, d=128, 1,500 steps), student 400
   problems x 300 steps, learning rate the only tuned knob: the teacher floor failed (0.72 < 0.8: with atomic
   number tokens a tiny LM learns addition slowly) and SFT barely met its floor (0.065); BLDA 0.098, ULD
   0.058, untrained-teacher control 0.065; 63 CPU s.
2. teacher with single-digit tokens (d=96, 1,000 steps), student 600 problems x 400 steps: teacher 0.815,
   SFT 0.103, ULD 0.070, BLDA 0.085, control 0.088. A temperature-1 teacher that is confident on the
   student's training problems adds almost nothing to their labels, so the distillation temperature (a
   standard knob of both distillation methods) was added to the tuned grid with an equal budget for SFT, and
   the teacher trained 1,200 steps to clear its floor with margin.
3. as 2 with the teacher at 1,200 steps and a budget of 6 configurations (SFT 6 learning rates; ULD and BLDA
   learning rate 2e-3, 4e-3 x temperature 1, 2, 4): teacher 0.963, SFT 0.088, ULD 0.105, BLDA 0.098, control
   0.093 (400 test problems: one standard error is ~1.5 points), but 122 CPU s, over the 90 s share: the
   budget was cut to 4 configurations and the test split enlarged to 700 problems for power.

**What the check found (quick mode, 3 seeds, revision 3): not reproduced, every seed.** Floors met: teacher
test exact match 0.966 / 0.934 / 0.934 (>= 0.8), SFT 0.096 / 0.066 / 0.089 (>= 0.05). Students (700 test
problems, one standard error ~1 point): SFT 0.096 / 0.066 / 0.089, ULD 0.083 / 0.069 / 0.064, BLDA 0.076 /
0.053 / 0.056; BLDA minus SFT -2.0 / -1.3 / -3.3 points (threshold > 0 in every seed), BLDA minus ULD -0.7 /
-1.6 / -0.9 points. The untrained-teacher control reached 0.080 / 0.056 / 0.064 (minus SFT -1.6 / -1.0 /
-2.4, minus ULD -0.3 / -1.3 / 0.0): it fails both thresholds, so they discriminate, but BLDA from the trained
teacher did no better than from an untrained one. The strongest baseline was SFT in seeds 0 and 2 and ULD in
seed 1 (BLDA minus it -2.0 / -1.6 / -3.3 points). Tuned values: BLDA lr 3e-3 (lower edge of its two-value
axis) with temperature 1 / 4 / 4, ULD lr 6e-3 and temperature 4 (upper edges) in every seed, SFT lr 2e-3 /
5e-3 / 1.28e-2 (the last after one extension, still on the edge); two-value axes are always flagged as
edges. CPU per seed 110 / 98 / 108 s (over the 90 s share, under the 3-minute limit; revisions 1-2 without
the diagnostic runs: 80-105 s, same accuracies).

Why, from the two extra runs at BLDA's settings (reported, not thresholded):

- *BLDA alone (no cross-entropy)* reaches test exact match 0.020 / 0.010 / 0.000 and 0.050 / 0.030 / 0.003 on
  300 of its own training problems (SFT: 0.51 / 0.22 / 0.20), although its KL per answer byte falls (3.03 to
  0.58 nats in seed 0). The renormalised in-token rows never penalise the mass a student puts on tokens that
  end *inside* the observed token (the token-ending mass at a proper prefix is dropped), so matching the
  projected bytes does not train the greedy token path: the student learns byte conditionals along its
  observed segmentation but not to choose that segmentation. The same rows give the student a restricted
  support (only bytes that continue the prefix within its vocabulary), while the digit-level teacher's rows
  are all boundary rows with full support; at temperature 4 the teacher's mass on bytes the student cannot
  emit there makes the loss a large constant (348 and 370 nats per byte in seeds 1 and 2, no gradient).
- *the ``inner="next_step"`` reading* gave exactly the same accuracies (0.076 / 0.053 / 0.056): here every
  in-token answer byte lies in the path's last token (the student's answers end with tokens such as
  ``47\n``), where that reading falls back to renormalisation, and the teacher has no in-token bytes. The
  two readings cannot differ in this set-up, so the choice did not decide the verdict.

``full`` mode (written for a GPU machine, not run here): SmolLM2-135M-Instruct as the teacher with its own
49k BPE tokenizer, fine-tuned on two-digit addition (``a, b < 100``), a 4-layer d=256 student with the
in-process BPE; larger splits and more steps.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read not reproduced on the same runs): not tuned by the protocol: blda, sft, uld. No idea ablation
or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        n_max=16,
        n_test=48,
        n_val=32,
        n_student=64,
        teacher=dict(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1),
        teacher_train=dict(steps=30, batch=32, lr=3e-3),
        student=dict(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1),
        student_train=dict(steps=8, batch=16),
        vocab=(300, 290),
        sft_lrs=[1e-3, 3e-3, 1e-2, 3e-2],
        kd_lrs=[1e-3, 1e-2],
        temps=[1.0, 2.0],
        extend=0,
    ),
    "quick": dict(
        n_max=50,
        n_test=700,
        n_val=200,
        n_student=600,
        teacher=dict(d_model=96, n_layers=2, n_heads=4, n_kv_heads=2),
        teacher_train=dict(steps=1200, batch=64, lr=3e-3),
        student=dict(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2),
        student_train=dict(steps=400, batch=32),
        vocab=(400, 340),
        sft_lrs=[2e-3, 3e-3, 5e-3, 8e-3],
        kd_lrs=[3e-3, 6e-3],
        temps=[1.0, 4.0],
        extend=1,
    ),
    # full: SmolLM2-135M-Instruct teacher with its real tokenizer (written for a GPU machine, not run here)
    "full": dict(
        smollm2=True,
        n_max=100,
        n_test=2000,
        n_val=500,
        n_student=1000,
        teacher_train=dict(steps=1500, batch=64, lr=3e-5),
        student=dict(d_model=256, n_layers=4, n_heads=4, n_kv_heads=2),
        student_train=dict(steps=2000, batch=64),
        vocab=(None, 600),
        sft_lrs=[3e-4, 5e-4, 1e-3, 2e-3],
        kd_lrs=[5e-4, 1e-3],
        temps=[1.0, 4.0],
        extend=1,
    ),
}

_NAMES = {
    "sft": "SFT (answer cross-entropy)",
    "uld": "ULD (CE + sorted-probability W1)",
    "blda": "BLDA (CE + byte-level KL)",
}


@register(
    "bytedistill",
    claim=(
        "Distilling through the 256-way next-byte distribution (BLDA: each model's token softmax projected onto "
        "bytes along its own tokenization, token-ending mass as a latent boundary transition) transfers a "
        "teacher's knowledge across different tokenizers better than supervised fine-tuning and than ULD."
    ),
    paper_figure="off-policy distillation: +1.75 GSM8K points over the best prior cross-tokenizer method",
    baselines=("SFT", "ULD (universal logit distillation)"),
    thresholds=(
        Threshold(
            "beats_sft",
            "blda_minus_sft_pts",
            ">",
            0.0,
            "BLDA's held-out exact match beats SFT's (every seed)",
            agg="all",
            control="control_minus_sft_pts",
            arms=("blda", "sft"),
        ),
        Threshold(
            "beats_uld",
            "blda_minus_uld_pts",
            ">",
            0.0,
            "BLDA's held-out exact match beats ULD's (every seed)",
            agg="all",
            control="control_minus_uld_pts",
            arms=("blda", "uld"),
        ),
    ),
    floors=(
        Threshold(
            "teacher_solves",
            "teacher_acc",
            ">=",
            0.8,
            "floor: the teacher's held-out exact match is >= 0.8 (every seed)",
            agg="all",
        ),
        Threshold(
            "sft_learns",
            "sft_acc",
            ">=",
            0.05,
            "floor: SFT's held-out exact match is >= 0.05 (every seed)",
            agg="all",
            arms=("sft",),
        ),
    ),
    reproduced="beats_sft and beats_uld",
    partial="beats_sft",
    method="blda",
    tuned=("blda", "sft", "uld"),
    key_metric="blda_minus_sft_pts",
    revision=3,
)
def run(mode: str, seed: int) -> Outcome:
    from geode.llm.bytedistill.experiment import (
        METHODS,
        Side,
        addition_problems,
        answer_text,
        greedy_exact_match,
        make_example,
        prompt_text,
        teacher_targets,
        train_bpe,
        train_student,
        train_teacher,
    )
    from geode.models import build_tiny_lm

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    pairs = addition_problems(cfg["n_max"], 1000 + seed)
    test = pairs[: cfg["n_test"]]
    val = pairs[cfg["n_test"] : cfg["n_test"] + cfg["n_val"]]
    train = pairs[cfg["n_test"] + cfg["n_val"] :]
    student_pool = train[: cfg["n_student"]]
    texts = [prompt_text(int(a), int(b)) + answer_text(int(a), int(b)) for a, b in train]

    device = device_for(mode)  # CUDA only in full mode (SmolLM2-135M), when present
    v_t, v_s = cfg["vocab"]
    s_side = Side.from_tokenizer(train_bpe(texts[::-1], v_s, kind="prompt"))

    if cfg.get("smollm2"):
        from geode.models import load_smollm2

        teacher, tok = load_smollm2()
        bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        t_side = Side.from_tokenizer(tok, bos=bos)
        teacher.to(device)
        t_arch: dict[str, Any] = {}
    else:
        t_side = Side.from_tokenizer(train_bpe(texts, v_t, kind="digits"))
        t_arch = dict(cfg["teacher"], max_positions=32)
        teacher = build_tiny_lm(t_side.model_vocab, seed=seed * 10 + 1, **t_arch)
    t_train = [make_example(t_side, int(a), int(b)) for a, b in train]
    train_teacher(teacher, t_side, t_train, seed=seed * 10 + 2, **cfg["teacher_train"])
    teacher_acc = greedy_exact_match(teacher, t_side, test)
    teacher_val = greedy_exact_match(teacher, t_side, val)

    t_pool = [make_example(t_side, int(a), int(b)) for a, b in student_pool]
    s_pool = [make_example(s_side, int(a), int(b)) for a, b in student_pool]
    targets = {tau: teacher_targets(teacher, t_side, t_pool, temperature=tau) for tau in cfg["temps"]}
    untrained = None
    untrained_acc = float("nan")
    if not cfg.get("smollm2"):
        untrained = build_tiny_lm(t_side.model_vocab, seed=seed * 10 + 3, **t_arch)
        untrained_acc = greedy_exact_match(untrained, t_side, test)

    s_arch = dict(cfg["student"], max_positions=32)
    init = build_tiny_lm(s_side.model_vocab, seed=seed * 10 + 4, **s_arch).state_dict()
    runs: dict[tuple[str, float], Any] = {}

    def fit_student(
        method: str, lr: float, tau: float, tg: Any, pool: list | None = None, ce_weight: float = 1.0
    ) -> Any:
        model = build_tiny_lm(s_side.model_vocab, seed=seed * 10 + 4, **s_arch)
        model.load_state_dict(copy.deepcopy(init))
        model.to(device)
        losses = train_student(
            model,
            s_side,
            s_pool if pool is None else pool,
            tg,
            method=method,
            lr=lr,
            kd_weight=1.0,
            ce_weight=ce_weight,
            temperature=tau,
            seed=seed * 10 + 5,  # the same batches for every method
            **cfg["student_train"],
        )
        return model, losses

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        tau = float(params.get("temperature", 1.0))
        key = (method, params["lr"], tau)
        if key not in runs:
            if tau not in targets:  # an extension past the temperature grid
                targets[tau] = teacher_targets(teacher, t_side, t_pool, temperature=tau)
            model, losses = fit_student(method, params["lr"], tau, targets.get(tau))
            ok = all(np.isfinite(losses))
            runs[key] = (greedy_exact_match(model, s_side, val) if ok else float("nan"), model, losses)
        return runs[key][0], runs[key]

    kd_grid = {"lr": cfg["kd_lrs"], "temperature": cfg["temps"]}
    grids = {"sft": {"lr": cfg["sft_lrs"]}, "uld": kd_grid, "blda": kd_grid}
    res = tune(fit, grids, extend=cfg["extend"], limits={"lr": (1e-5, 0.1), "temperature": (0.25, 16.0)})
    acc = {m: greedy_exact_match(res.payload(m)[1], s_side, test) for m in METHODS}
    lr_blda = res.params("blda")["lr"]
    tau_blda = float(res.params("blda")["temperature"])
    if untrained is not None:
        ctrl_targets = teacher_targets(untrained, t_side, t_pool, temperature=tau_blda)
        ctrl_model, ctrl_losses = fit_student("blda", lr_blda, tau_blda, ctrl_targets)
        control_acc = greedy_exact_match(ctrl_model, s_side, test)
    else:
        control_acc = float("nan")
    # the other reading of in-token positions (inner="next_step"), at BLDA's selected settings (reported only)
    t_next = [make_example(t_side, int(a), int(b), inner="next_step") for a, b in student_pool]
    s_next = [make_example(s_side, int(a), int(b), inner="next_step") for a, b in student_pool]
    next_targets = teacher_targets(teacher, t_side, t_next, temperature=tau_blda)
    next_model, _ = fit_student("blda", lr_blda, tau_blda, next_targets, pool=s_next)
    next_acc = greedy_exact_match(next_model, s_side, test)
    # diagnostic: BLDA alone (no cross-entropy) at BLDA's settings; exact match on test and on training problems
    only_model, only_losses = fit_student("blda", lr_blda, tau_blda, targets[tau_blda], ce_weight=0.0)
    only_acc = greedy_exact_match(only_model, s_side, test)
    n_fit = min(300, len(student_pool))
    only_train_acc = greedy_exact_match(only_model, s_side, student_pool[:n_fit])
    sft_train_acc = greedy_exact_match(res.payload("sft")[1], s_side, student_pool[:n_fit])
    collapsed = sum(not np.isfinite(v[0]) for v in runs.values())
    elapsed = time.perf_counter() - t0

    pts = 100.0
    strongest = max(acc["sft"], acc["uld"])
    metrics = {
        "teacher_acc": teacher_acc,
        "teacher_val_acc": teacher_val,
        "untrained_teacher_acc": untrained_acc,
        **{f"{m}_acc": acc[m] for m in METHODS},
        **{f"{m}_val_acc": res.score(m) for m in METHODS},
        "control_acc": control_acc,
        "blda_next_step_acc": next_acc,
        "blda_only_acc": only_acc,
        "blda_only_train_acc": only_train_acc,
        "sft_train_acc": sft_train_acc,
        "blda_only_first_loss": float(np.mean(only_losses[:10])),
        "blda_only_last_loss": float(np.mean(only_losses[-10:])),
        "blda_next_step_minus_sft_pts": pts * (next_acc - acc["sft"]),
        "blda_minus_sft_pts": pts * (acc["blda"] - acc["sft"]),
        "blda_minus_uld_pts": pts * (acc["blda"] - acc["uld"]),
        "uld_minus_sft_pts": pts * (acc["uld"] - acc["sft"]),
        "control_minus_sft_pts": pts * (control_acc - acc["sft"]),
        "control_minus_uld_pts": pts * (control_acc - acc["uld"]),
        "strongest_baseline_acc": strongest,
        "blda_minus_strongest_pts": pts * (acc["blda"] - strongest),
        "collapsed_runs": float(collapsed),
        "teacher_tokens_per_problem": float(np.mean([len(e.ids) for e in t_pool])),
        "student_tokens_per_problem": float(np.mean([len(e.ids) for e in s_pool])),
    }
    table = [
        {"method": "teacher", "tokenizer": "BPE-A (single digits)", "test exact match": teacher_acc, "selected": ""},
        *[
            {
                "method": _NAMES[m],
                "tokenizer": "BPE-B (student)",
                "test exact match": acc[m],
                "selected": ", ".join(f"{k}={v:g}" for k, v in res.params(m).items()),
            }
            for m in METHODS
        ],
        {
            "method": "BLDA, inner='next_step' reading (BLDA's settings)",
            "tokenizer": "BPE-B (student)",
            "test exact match": next_acc,
            "selected": f"lr={lr_blda:g}, temperature={tau_blda:g}",
        },
        {
            "method": "BLDA alone, no cross-entropy (diagnostic, BLDA's settings)",
            "tokenizer": "BPE-B (student)",
            "test exact match": only_acc,
            "selected": f"lr={lr_blda:g}, temperature={tau_blda:g}",
        },
        {
            "method": "BLDA from an untrained teacher (control)",
            "tokenizer": "BPE-B (student)",
            "test exact match": control_acc,
            "selected": f"lr={lr_blda:g}, temperature={tau_blda:g}",
        },
    ]
    ex = (int(test[0][0]), int(test[0][1]))
    t_ex = [t_side.vocab.token_bytes[i] for i in t_side.encode(prompt_text(*ex) + answer_text(*ex))]
    s_ex = [s_side.vocab.token_bytes[i] for i in s_side.encode(prompt_text(*ex) + answer_text(*ex))]
    summary = (
        f"teacher {teacher_acc:.3f}; students (test exact match): SFT {acc['sft']:.3f}, ULD {acc['uld']:.3f}, "
        f"BLDA {acc['blda']:.3f} (next-step reading {next_acc:.3f}); BLDA from an untrained teacher "
        f"{control_acc:.3f}"
    )
    notes = [
        *res.notes(),
        f"Tokenizations of one test problem: teacher {t_ex}, student {s_ex}.",
        f"Strongest baseline (the better of tuned SFT and ULD): {strongest:.3f}; BLDA minus it "
        f"{metrics['blda_minus_strongest_pts']:+.1f} points.",
        f"Diagnostic, BLDA alone (no cross-entropy): test exact match {only_acc:.3f}, on {n_fit} training problems "
        f"{only_train_acc:.3f} (SFT {sft_train_acc:.3f}); its loss (KL per answer byte) fell from "
        f"{metrics['blda_only_first_loss']:.2f} to {metrics['blda_only_last_loss']:.2f}.",
        f"Untrained teacher's own exact match {untrained_acc:.3f}; collapsed (non-finite) student runs {collapsed}.",
        f"Wall time of this seed: {elapsed:.0f} s.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"accuracy": _figure(table)},
        summary=summary,
        notes=notes,
        tuned=res.table(),
    )


def _figure(table: list[dict[str, Any]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 2.8))
    names = [r["method"] for r in table]
    vals = [0.0 if not np.isfinite(r["test exact match"]) else r["test exact match"] for r in table]
    ax.barh(range(len(vals)), vals, color=["0.5", "C0", "C1", "C2", "C4", "C5", "C3"][: len(vals)])
    ax.set_yticks(range(len(vals)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("held-out exact match")
    fig.tight_layout()
    return fig
