"""Claim check of SDS-LoRA: LoRA's convergence degrades with the condition number, SDS-LoRA's does not.

Revision 3 (protocol v2, issue 20). Revisions 1-2 ran (a) the matrix-factorisation kappa sweep with the best
learning rate of a grid picked on the very targets it then reported, and (b) the tiny-Llama adaptation
at one untuned rate (3e-3 adapters, 1e-3 full FT), 3 adaptation seeds inside one run. Old verdict (revision
1, QR bases): **not reproduced**: GD steps-to-tolerance kappa 1 -> 100 LoRA 20 -> 2645 (132x), SDS-LoRA
13 -> 81 (6.2x, needs < 3x); SDS's loss gap to full FT smaller in 2 of 3 adaptation seeds. The audit
showed the 3x bound contradicted the notes' own GD pre-check (the reconstruction predicts steps ~ sqrt(kappa)).
Revision 3 keeps all three thresholds (metric meaning, operator, value) and changes:

- *two readings of the method* (protocol section 5: an inferred detail that can decide the verdict):
  the **gradient reading** of revisions 1-2 (:class:`SDSLoRALinear`: LoRA's forward, gradients
  :math:`(sQ_B^\\top G, sGQ_A)` with bases recomputed every step, polar bases) and the **dual-branch
  reading** of the paper's Equation 8 used by a third-party implementation (:class:`SDSDualLoRALinear`:
  10 LoRA warm-up steps, an SVD re-parameterisation to :math:`\\Delta W = s'(Q_B A + B Q_A^\\top)` with
  frozen bases and :math:`s' = (\\alpha/r)\\sqrt{r}`, bases refreshed on a phased schedule). The verdict
  uses the dual-branch reading: the abstract calls SDS-LoRA "a new low-rank parameterization" whose bases are
  "treated as constants", and Equation 8 (as the release reads it) is that parameterisation; the
  gradient reading is our reconstruction from the abstract alone. Both are run and reported with the same
  thresholds (``*_grad`` metrics; the QR basis of revision 1 is reported too). This choice was fixed
  before any run of revision 3.
- *equal tuning*: (a) every method's learning rate is selected with :func:`geode.claims.tune` (same grid
  size, +1 step past an edge) on *validation* targets (other random targets and initialisations) and the
  steps are measured on fresh test targets; (b) every method (full FT, LoRA, DoRA, both SDS readings) gets
  the same 3-point AdamW learning-rate grid (+1 past an edge), selected by the answer loss on a
  validation batch; the reported loss is on a separate test batch. DoRA is the strongest common LoRA
  variant (reported beside LoRA; the verdict compares with LoRA, which the paper names).
- *an Adam run*: the kappa sweep again with Adam (constant lr) for LoRA and the gradient reading (reported,
  outside the verdict rules). The dual-branch reading under constant-lr Adam reached the tolerance at no
  learning rate of the grid within 5000 steps (development run, quick sizes; best at the grid's lower edge
  1e-4) and cost ~100 CPU-s per kappa, so quick mode leaves it out.
- *the fitted kappa exponent*: slope of log(steps) against log(kappa) for every method (reported).
- *seeds*: one set of targets and one adaptation per harness seed; the growth thresholds apply to the
  one-sided 95% bound of the geometric mean over seeds (``geobound95``); "smaller gap in all seeds" is
  ``agg="all"`` over harness seeds (was: all 3 inner seeds).
- *validity floors*: in (a) every test run of SDS-LoRA (verdict reading) and of LoRA at kappa = 1 reaches
  the tolerance (a censored SDS run would make its growth look small); in (b) the pretrained model solves
  task A (accuracy >= 0.9), full FT learns task B (answer loss <= half the uniform guess's ln V) and every
  adapter beats the uniform guess.
- *negative controls*: LoRA's growth (the method without the paper's idea) for "SDS grows < 3x"; the ratio
  of LoRA's kappa = 1 steps on two independent target draws (noise floor) for "LoRA grows > 10x"; LoRA
  minus LoRA re-seeded (noise floor) for "SDS's gap is smaller in every seed".
- *quick mode*: 200 adaptation steps (was 300) to pay for the tuning grid.

Measured (quick, 3 seeds): **partial**, per-seed verdicts unstable (reproduced, partial, reproduced).
(a) GD, tuned: SDS-LoRA dual-branch 14 -> 14 -> 14 steps at kappa 1/10/100 in every seed (growth 1.0,
fitted exponent 0.00; its 10 warm-up steps included); LoRA 19-20 -> 769 -> 4078-5000 (growth >= 215-250,
exponent 1.17-1.20; at kappa = 100 the lr selected on validation, 1.41, left 2 of 3 test targets
unconverged in seeds 0 and 2, so the growth is a lower bound). The gradient reading grows 6.8x in every
seed (exponent 0.42, the sqrt(kappa) the audit predicted; QR bases 6.2-7.4x), so under that reading
``a_sds_flat`` fails (geobound95 6.86). Adam (reported): LoRA grows only 1.7-2.8x (exponent 0.11-0.22),
the gradient reading 0.9-1.0x (exponent -0.01). (b) test loss gap margin LoRA minus SDS dual-branch
+0.82, -0.64, +0.49 (gradient reading +0.89, -0.68, +0.63): SDS beats LoRA in 2 of 3 seeds, as in
revision 1, so ``b_all_seeds`` fails. The noise floor (LoRA minus LoRA re-seeded) is +0.42, -0.46, -0.10:
the adaptation comparison is as noisy as its effect. Against tuned DoRA the dual-branch margin is +0.02,
-0.62, -0.15. All controls fail their thresholds and all floors hold. Quick mode costs 128-138 CPU-s per
seed (over the 90-s budget: 16-17 adapter trainings per seed).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **partial** (the
v2 harness read partial on the same runs). No idea ablation or learned-arm reference is declared yet (protocol v3;
the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

_GD_LRS = tuple(2.0**k for k in np.arange(-6.0, 1.01, 0.5))  # 15 points, as revisions 1-2
_ADAM_LRS = tuple(10.0**k for k in np.arange(-4.0, -0.49, 0.5))  # 1e-4 .. 3e-1, 8 points

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        mf=dict(
            kappas=(1.0, 100.0),
            d=16,
            r=4,
            gd_lrs=(0.25, 0.5, 0.7071067811865476),
            adam_lrs=(0.01, 0.03, 0.1),
            max_steps=400,
            n_targets=2,
        ),
        lm=dict(
            d_model=32,
            n_layers=1,
            n_heads=2,
            n_kv_heads=1,
            length=4,
            n_symbols=8,
            pretrain_steps=10,
            steps=6,
            batch_size=8,
            n_eval=32,
            diag_every=3,
        ),
        lm_grid=dict(adapter=(3e-3,), full=(1e-3,)),
        extend=0,
        smollm2=None,
    ),
    "quick": dict(
        mf=dict(kappas=(1.0, 10.0, 100.0), d=64, r=4, gd_lrs=_GD_LRS, adam_lrs=_ADAM_LRS, max_steps=5000, n_targets=3),
        lm=dict(
            d_model=128,
            n_layers=2,
            n_heads=4,
            n_kv_heads=2,
            length=6,
            n_symbols=32,
            pretrain_steps=300,
            steps=200,
            batch_size=32,
            n_eval=512,
            diag_every=50,
        ),
        lm_grid=dict(adapter=(1e-3, 3e-3, 1e-2), full=(3e-4, 1e-3, 3e-3)),
        extend=1,
        smollm2=None,
    ),
    "full": dict(
        mf=dict(
            kappas=(1.0, 10.0, 100.0, 1000.0),
            d=128,
            r=8,
            gd_lrs=_GD_LRS,
            adam_lrs=_ADAM_LRS,
            max_steps=40000,
            n_targets=5,
        ),
        lm=dict(
            d_model=256,
            n_layers=4,
            n_heads=8,
            n_kv_heads=4,
            length=8,
            n_symbols=32,
            pretrain_steps=1500,
            steps=1000,
            batch_size=32,
            n_eval=1024,
            diag_every=100,
        ),
        lm_grid=dict(adapter=(3e-4, 1e-3, 3e-3, 1e-2), full=(1e-4, 3e-4, 1e-3, 3e-3)),
        extend=2,
        smollm2=dict(
            r=8, alpha=16.0, steps=200, batch_size=16, length=6, n_symbols=16, n_eval=256, lr=2e-4, lr_full=2e-5
        ),
    ),
}

RANK, ALPHA = 4, 8.0
VERDICT_SDS = "sds-dual"  # the reading the verdict uses (see the module docstring)
_MF = {"lora": "lora", "sds": VERDICT_SDS, "sds_grad": "sds", "sds_qr": "sds"}  # metric name -> method
_LM_METHODS = ("full", "lora", "dora", "sds", "sds-dual")


def _mf_part(mf: dict[str, Any], optimizer: str, seed: int) -> tuple[dict[str, float], list[dict], Any, dict]:
    """(a) for one optimiser: tune each method's lr on validation targets per kappa, measure on test targets."""
    from geode.adapters.sds_lora.experiment import factorization_run, kappa_exponent
    from geode.claims import tune

    grid = mf["gd_lrs"] if optimizer == "gd" else mf["adam_lrs"]
    names = list(_MF) if optimizer == "gd" else ["lora", "sds_grad"]  # Adam: see the module docstring
    common = dict(d=mf["d"], r=mf["r"], n_seeds=mf["n_targets"], max_steps=mf["max_steps"], optimizer=optimizer)
    val_seed, test_seed = 10_000 + seed, seed
    metrics: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    tuned: list[dict[str, Any]] = []
    notes: list[str] = []
    curves: dict[str, Any] = {}
    pre = "mf_" if optimizer == "gd" else "mf_adam_"
    steps_of: dict[str, list[float]] = {n: [] for n in names}
    for kappa in mf["kappas"]:
        cache: dict[tuple[str, float], float] = {}
        for n in names:
            basis = "qr" if n == "sds_qr" else "polar"
            out = factorization_run(_MF[n], kappa, grid, basis=basis, seed=val_seed, **common)
            for lr, sc in zip(grid, out["score"]):
                cache[(n, float(lr))] = float(sc)

        def evaluate(n: str, params: dict[str, Any], kappa: float = kappa, cache: dict = cache) -> float:
            key = (n, float(params["lr"]))
            if key not in cache:  # a step past the grid's edge
                basis = "qr" if n == "sds_qr" else "polar"
                cache[key] = float(
                    factorization_run(_MF[n], kappa, (key[1],), basis=basis, seed=val_seed, **common)["score"][0]
                )
            return cache[key]

        res = tune(evaluate, {n: {"lr": list(grid)} for n in names}, maximize=False, extend=1, seed=seed)
        for row in res.table():
            tuned.append({"part": f"a-{optimizer}", "kappa": kappa, **row})
        notes += [f"(a, {optimizer}, kappa={kappa:g}) {x}" for x in res.notes()[1:]]
        for n in names:
            lr = float(res.params(n)["lr"])
            basis = "qr" if n == "sds_qr" else "polar"
            out = factorization_run(
                _MF[n], kappa, (lr,), basis=basis, seed=test_seed, stop_when_decided=False, **common
            )
            hit = out["hit"][0]
            med = float(np.median(hit))
            reached = float(np.mean(hit < mf["max_steps"]))
            steps_of[n].append(med)
            metrics[f"{pre}{n}_steps_kappa{kappa:g}"] = med
            metrics[f"{pre}{n}_reached_kappa{kappa:g}"] = reached
            rows.append(
                {
                    "part": f"a-{optimizer}",
                    "method": n,
                    "kappa": kappa,
                    "lr": lr,
                    "median_steps": med,
                    "reached": reached,
                    "steps": str([int(x) for x in hit]),
                }
            )
            if kappa == 100.0:
                curves[n] = (out["curves"][0], lr)
            if n == "lora" and kappa == mf["kappas"][0]:  # noise floor: the same setting on other targets
                other = factorization_run("lora", kappa, (lr,), seed=val_seed, stop_when_decided=False, **common)
                metrics[f"control_{pre}lora_resample_growth"] = float(np.median(other["hit"][0])) / max(med, 1.0)
    k_lo, k_hi = mf["kappas"][0], 100.0
    for n in names:
        lo, hi = metrics[f"{pre}{n}_steps_kappa{k_lo:g}"], metrics[f"{pre}{n}_steps_kappa{k_hi:g}"]
        metrics[f"{pre}{n}_growth"] = hi / max(lo, 1.0)
        metrics[f"{pre}{n}_kappa_exponent"] = kappa_exponent(mf["kappas"], steps_of[n])
    return metrics, rows + tuned, curves, {"notes": notes, "tuned": tuned}


def _lm_part(lm: dict[str, Any], grid: dict[str, tuple], extend: int, seed: int) -> tuple[dict, list, dict, Any]:
    """(b) a tiny Llama pretrained on copy (task A), adapted to reversal (task B); every method tuned."""
    from geode.adapters.sds_lora.experiment import adapt_language_model
    from geode.claims import tune
    from geode.models.tasks import Copy, Reversal
    from geode.models.tiny_lm import evaluate_lm, pretrained_tiny_lm

    task_a = Copy(n_symbols=lm["n_symbols"], length=lm["length"])
    task_b = Reversal(n_symbols=lm["n_symbols"], length=lm["length"])
    arch = {k: lm[k] for k in ("d_model", "n_layers", "n_heads", "n_kv_heads")}
    base_kw = dict(steps=lm["pretrain_steps"], lr=3e-3, seed=seed, max_positions=64, **arch)
    test_b = task_b.sample(lm["n_eval"], seed * 1000 + 999)
    val_b = task_b.sample(lm["n_eval"], seed * 1000 + 997)
    base_test = evaluate_lm(pretrained_tiny_lm(task_a, **base_kw), test_b)
    acc_a = evaluate_lm(pretrained_tiny_lm(task_a, **base_kw), task_a.sample(lm["n_eval"], seed * 1000 + 998))

    def train(method: str, lr: float, adapt_seed: int) -> dict[str, Any]:
        t0 = time.process_time()
        out = adapt_language_model(
            pretrained_tiny_lm(task_a, **base_kw),
            task_b,
            method,
            r=RANK,
            alpha=ALPHA,
            target_modules=_TARGETS,
            steps=lm["steps"],
            batch_size=lm["batch_size"],
            lr=lr,
            eval_batch=test_b,
            val_batch=val_b,
            diag_every=lm["diag_every"],
            seed=adapt_seed,
        )
        out["cpu_s"] = time.process_time() - t0
        return out

    def evaluate(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        out = train(method, params["lr"], seed * 100)
        return (out["val_loss"] if math.isfinite(out["val_loss"]) else float("inf")), out

    grids = {m: {"lr": list(grid["full" if m == "full" else "adapter"])} for m in _LM_METHODS}
    res = tune(evaluate, grids, maximize=False, extend=extend, seed=seed)
    outs = {m: res.payload(m) for m in _LM_METHODS}
    reseeded = train("lora", res.params("lora")["lr"], seed * 100 + 1)  # noise floor of the comparison
    loss = {m: outs[m]["eval_loss"] for m in _LM_METHODS}
    uniform = math.log(lm["n_symbols"])
    metrics = {
        "adapt_gap_margin": loss["lora"] - loss[VERDICT_SDS],
        "adapt_gap_margin_grad": loss["lora"] - loss["sds"],
        "adapt_margin_vs_dora": loss["dora"] - loss[VERDICT_SDS],
        "control_adapt_margin_lora_reseeded": loss["lora"] - reseeded["eval_loss"],
        "adapt_base_acc_task_a": acc_a["accuracy"],
        "adapt_base_loss_task_b": base_test["loss"],
        "adapt_full_loss_vs_uniform": loss["full"] / uniform,
        "adapt_worst_adapter_loss_vs_uniform": max(loss[m] for m in _LM_METHODS if m != "full") / uniform,
    }
    for m in _LM_METHODS:
        key = m.replace("-", "_")
        metrics[f"adapt_loss_{key}"] = loss[m]
        metrics[f"adapt_gap_{key}"] = loss[m] - loss["full"]
        metrics[f"adapt_acc_{key}"] = outs[m]["eval_accuracy"]
        metrics[f"adapt_loss_auc_{key}"] = float(np.mean(outs[m]["losses"]))
        if outs[m]["grad_erank"]:
            metrics[f"adapt_grad_erank_{key}"] = float(np.mean(outs[m]["grad_erank"]))
            metrics[f"adapt_step_cosine_{key}"] = float(np.mean(outs[m]["step_cosine"]))
    rows = [
        {
            "part": "b",
            "method": m,
            "lr": res.params(m)["lr"],
            "val_loss": outs[m]["val_loss"],
            "eval_loss": loss[m],
            "eval_accuracy": outs[m]["eval_accuracy"],
            "n_trainable": outs[m]["n_trainable"],
        }
        for m in _LM_METHODS
    ]
    rows.append(
        {
            "part": "b",
            "method": "lora (re-seeded control)",
            "lr": res.params("lora")["lr"],
            "val_loss": reseeded["val_loss"],
            "eval_loss": reseeded["eval_loss"],
            "eval_accuracy": reseeded["eval_accuracy"],
            "n_trainable": reseeded["n_trainable"],
        }
    )
    tuned = [{"part": "b", **row} for row in res.table()]
    curves = {m: outs[m]["losses"] for m in _LM_METHODS}
    return metrics, rows, {"tuned": tuned, "notes": [f"(b) {x}" for x in res.notes()]}, curves


def _smollm2(cfg: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Full mode only: LoRA, SDS-LoRA (both readings) and full FT on SmolLM2-135M-Instruct (not tuned)."""
    from geode.adapters.sds_lora.experiment import adapt_language_model
    from geode.models import load_smollm2
    from geode.models.tasks import Reversal, TokenMappedTask, tokenizer_token_map

    model, tok = load_smollm2()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    base = Reversal(n_symbols=cfg["n_symbols"], length=cfg["length"])
    task = TokenMappedTask(base, tokenizer_token_map(tok, base.vocab_size))
    eval_b = task.sample(cfg["n_eval"], seed * 1000 + 999)
    rows = []
    for method in ("full", "lora", "sds", "sds-dual"):
        model, _ = load_smollm2()
        model.load_state_dict(state)
        out = adapt_language_model(
            model,
            task,
            method,
            r=cfg["r"],
            alpha=cfg["alpha"],
            target_modules=_TARGETS,
            steps=cfg["steps"],
            batch_size=cfg["batch_size"],
            lr=cfg["lr_full"] if method == "full" else cfg["lr"],
            eval_batch=eval_b,
            seed=seed * 100,
        )
        rows.append(
            {
                "part": "smollm2",
                "method": method,
                "eval_loss": out["eval_loss"],
                "eval_accuracy": out["eval_accuracy"],
                "loss_auc": float(np.mean(out["losses"])),
            }
        )
    return rows


@register(
    "sds-lora",
    claim=(
        "LoRA's convergence degrades with the condition number of the low-rank factors while SDS-LoRA's does not, "
        "and SDS-LoRA narrows the gap to full fine-tuning."
    ),
    paper_figure=(
        "Convergence analysis: LoRA's rate degrades with the condition number, SDS-LoRA's is independent of it; "
        "better loss convergence and a smaller gap to full FT on Gemma-2B / LLaMA3-8B and ViT-B/L"
    ),
    baselines=("LoRA", "full fine-tuning", "DoRA (strongest common LoRA variant, reported)"),
    thresholds=(
        Threshold(
            "a_sds_flat",
            "mf_sds_growth",
            "<",
            3.0,
            "(a) SDS-LoRA's tuned GD steps-to-tolerance grow < 3x from kappa=1 to kappa=100 (dual-branch reading; "
            "one-sided 95% bound of the geometric mean over seeds)",
            agg="geobound95",
            control="mf_lora_growth",
            arms=("sds",),
            requires=("mf_converged",),
        ),
        Threshold(
            "a_lora_degrades",
            "mf_lora_growth",
            ">",
            10.0,
            "(a) LoRA's tuned GD steps-to-tolerance grow > 10x from kappa=1 to kappa=100 (geobound95)",
            agg="geobound95",
            control="control_mf_lora_resample_growth",
            arms=("lora",),
            requires=("mf_converged",),
        ),
        Threshold(
            "b_all_seeds",
            "adapt_gap_margin",
            ">",
            0.0,
            "(b) SDS-LoRA's test-loss gap to full FT is smaller than LoRA's (both tuned) in every seed "
            "(dual-branch reading)",
            agg="all",
            control="control_adapt_margin_lora_reseeded",
            arms=("sds-dual", "lora", "full"),
            requires=("base_knows_task_a", "full_ft_learns_b", "adapters_learn_b"),
        ),
        Threshold(
            "a_sds_flat_grad",
            "mf_sds_grad_growth",
            "<",
            3.0,
            "reported, not in the verdict: (a) with the gradient reading (geobound95)",
            agg="geobound95",
            control="mf_lora_growth",
        ),
        Threshold(
            "b_all_seeds_grad",
            "adapt_gap_margin_grad",
            ">",
            0.0,
            "reported, not in the verdict: (b) with the gradient reading (all seeds)",
            agg="all",
            control="control_adapt_margin_lora_reseeded",
            arms=("sds", "lora", "full"),
            requires=("base_knows_task_a", "full_ft_learns_b", "adapters_learn_b"),
        ),
        Threshold(
            "a_sds_flat_adam",
            "mf_adam_sds_grad_growth",
            "<",
            3.0,
            "reported, not in the verdict: (a) with Adam, gradient reading (geobound95)",
            agg="geobound95",
            control="mf_adam_lora_growth",
        ),
        Threshold(
            "a_lora_degrades_adam",
            "mf_adam_lora_growth",
            ">",
            10.0,
            "reported, not in the verdict: (a) LoRA with Adam grows > 10x (geobound95)",
            agg="geobound95",
            control="control_mf_adam_lora_resample_growth",
            arms=("lora",),
            requires=(),
        ),
    ),
    floors=(
        Threshold(
            "mf_converged",
            "mf_floor_reached",
            ">=",
            1.0,
            "floor: every GD test run of SDS-LoRA (verdict reading, every kappa) and of LoRA at kappa=1 reaches "
            "the tolerance",
            agg="all",
        ),
        Threshold(
            "base_knows_task_a",
            "adapt_base_acc_task_a",
            ">=",
            0.9,
            "floor: the pretrained tiny Llama solves task A (copy), accuracy >= 0.9",
            agg="all",
        ),
        Threshold(
            "full_ft_learns_b",
            "adapt_full_loss_vs_uniform",
            "<=",
            0.5,
            "floor: full FT learns task B (answer loss <= half the uniform guess's ln V)",
            agg="all",
            arms=("full",),
        ),
        Threshold(
            "adapters_learn_b",
            "adapt_worst_adapter_loss_vs_uniform",
            "<",
            1.0,
            "floor: every tuned adapter beats the uniform guess on task B",
            agg="all",
        ),
    ),
    reproduced="a_sds_flat and a_lora_degrades and b_all_seeds",
    partial="a_sds_flat and a_lora_degrades",
    method=("sds", "sds-dual"),
    tuned=("sds", "sds-dual", "lora", "full"),
    key_metric="mf_sds_growth",
    revision=3,
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = _MODES[mode]
    mf = p["mf"]
    t0 = time.process_time()
    m_gd, rows_gd, curves_gd, info_gd = _mf_part(mf, "gd", seed)
    m_adam, rows_adam, _, info_adam = _mf_part(mf, "adam", seed)
    mf_cpu = time.process_time() - t0
    t0 = time.process_time()
    m_lm, rows_lm, info_lm, lm_curves = _lm_part(p["lm"], p["lm_grid"], p["extend"], seed)
    lm_cpu = time.process_time() - t0

    metrics = {**m_gd, **m_adam, **m_lm}
    floor = [metrics[f"mf_sds_reached_kappa{k:g}"] for k in mf["kappas"]]
    floor.append(metrics[f"mf_lora_reached_kappa{mf['kappas'][0]:g}"])
    metrics["mf_floor_reached"] = float(min(floor))
    table = rows_gd + rows_adam + rows_lm
    tuned = info_gd["tuned"] + info_adam["tuned"] + info_lm["tuned"]
    lm = p["lm"]
    notes = [
        f"(a) min ||dW - T||_F^2/2, d={mf['d']}, r={mf['r']}, target singular values geometric from 1 to 1/kappa, "
        f"{mf['n_targets']} targets per seed; A ~ N(0, 1/d), B = 0; steps to relative error 1e-2 (at most "
        f"{mf['max_steps']}); lr tuned per method and kappa on validation targets (GD grid 2^-6..2^1, Adam "
        "1e-4..3e-1, half-decade steps), steps measured on other test targets. 'sds' = dual-branch reading "
        "(verdict), 'sds_grad' = gradient reading (polar bases), 'sds_qr' = gradient reading with QR bases.",
        "(a) dual-branch reading: 10 plain-LoRA steps, SVD re-parameterisation, bases refreshed at steps "
        "10, 20, 30, 40, 50, 70, 90, 110, 130, 170, ... (gap 10 doubling every 4 refreshes); refreshes are not "
        "counted as steps; Adam's moments restart at each refresh.",
        f"(b) Llama d={lm['d_model']}, {lm['n_layers']} layer(s), pretrained {lm['pretrain_steps']} AdamW steps on "
        f"copy (length {lm['length']}, {lm['n_symbols']} symbols), adapted {lm['steps']} steps to reversal; "
        f"r={RANK}, alpha={ALPHA:g} on all attention and MLP projections; AdamW with cosine decay, batch "
        f"{lm['batch_size']}; lr tuned per method on the answer loss of {lm['n_eval']} validation sequences; the "
        f"reported loss is on {lm['n_eval']} other test sequences; gap = method - full FT.",
        f"CPU seconds: (a) {mf_cpu:.1f}, (b) {lm_cpu:.1f}.",
    ]
    notes += info_gd["notes"] + info_adam["notes"] + info_lm["notes"]

    if p["smollm2"] is not None:
        from geode.data.assets import ASSETS

        if any(a.name == "smollm2-gguf" and a.path() is not None for a in ASSETS):
            rows_s = _smollm2(p["smollm2"], seed)
            table += rows_s
            ls = {r["method"]: r["eval_loss"] for r in rows_s}
            metrics.update(
                smollm2_gap_lora=ls["lora"] - ls["full"],
                smollm2_gap_sds=ls["sds-dual"] - ls["full"],
                smollm2_gap_sds_grad=ls["sds"] - ls["full"],
            )
            notes.append("Full mode also adapts SmolLM2-135M-Instruct (untuned lr; smollm2_* metrics, reported).")
        else:
            notes.append("SmolLM2 asset absent: the SmolLM2 fine-tune of full mode was skipped.")

    kappas = mf["kappas"]
    fig1, axes = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for ax, pre, title in ((axes[0], "mf_", "GD"), (axes[1], "mf_adam_", "Adam")):
        for n, marker in (("lora", "o"), ("sds", "s"), ("sds_grad", "^"), ("sds_qr", "v")):
            if f"{pre}{n}_growth" in metrics:
                ys = [metrics[f"{pre}{n}_steps_kappa{k:g}"] for k in kappas]
                ax.plot(kappas, ys, marker=marker, label=f"{n} (p={metrics[f'{pre}{n}_kappa_exponent']:.2f})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("condition number κ of the target")
        ax.set_ylabel("steps to rel. error 1e-2 (median, test)")
        ax.set_title(f"(a) {title}, tuned lr")
        ax.legend(fontsize=7)
    fig1.tight_layout()

    fig2, ax = plt.subplots(figsize=(4.8, 3.6))
    for n, (curve, lr) in curves_gd.items():
        ax.plot(curve, label=f"{n} (lr {lr:.3g})")
    ax.set_yscale("log")
    ax.axhline(1e-2, color="k", lw=0.8, ls="--")
    ax.set_xlabel("GD step")
    ax.set_ylabel("relative error")
    ax.set_title("(a) κ = 100, tuned learning rates")
    ax.legend(fontsize=8)
    fig2.tight_layout()

    fig3, ax = plt.subplots(figsize=(4.8, 3.6))
    for m, c in lm_curves.items():
        ax.plot(c, label=m)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title("(b) tiny Llama: copy → reversal, tuned lr")
    ax.legend()
    fig3.tight_layout()

    g = metrics
    summary = (
        f"{mode}: (a) GD steps κ=1→100: LoRA {g['mf_lora_steps_kappa1']:.0f}→{g['mf_lora_steps_kappa100']:.0f} "
        f"({g['mf_lora_growth']:.1f}x, p={g['mf_lora_kappa_exponent']:.2f}), SDS dual-branch "
        f"{g['mf_sds_steps_kappa1']:.0f}→{g['mf_sds_steps_kappa100']:.0f} ({g['mf_sds_growth']:.1f}x, "
        f"p={g['mf_sds_kappa_exponent']:.2f}), SDS gradient reading {g['mf_sds_grad_growth']:.1f}x "
        f"(p={g['mf_sds_grad_kappa_exponent']:.2f}); Adam: LoRA {g['mf_adam_lora_growth']:.1f}x, SDS "
        f"{g['mf_adam_sds_grad_growth']:.1f}x (gradient reading); (b) test loss full {g['adapt_loss_full']:.3f}, LoRA "
        f"{g['adapt_loss_lora']:.3f}, DoRA {g['adapt_loss_dora']:.3f}, SDS dual {g['adapt_loss_sds_dual']:.3f}, "
        f"SDS grad {g['adapt_loss_sds']:.3f}"
    )
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"kappa_sweep": fig1, "kappa100_curves": fig2, "adaptation_curves": fig3},
        summary=summary,
        notes=notes,
        tuned=tuned,
    )
