"""Claim check of SR-GRPO: stable rank is a quality signal (best-of-N) and an annotation-free GRPO reward.

Thresholds (fixed by the issue, before any run): ``reproduced`` if stable-rank best-of-8 accuracy beats
greedy decoding by >= 3 points AND 100 SR-GRPO steps raise (greedy) accuracy by >= 3 points, in every seed
(3 seeds); ``partial`` if Spearman(SR, correct) > 0.1.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: each threshold must hold in every seed (``all``): the statistics are noisy per seed;
- *validity floors*: the base model's greedy accuracy lies in [0.3, 0.7] in every seed (the issue's "trained
  to ~50%"), and GRPO with the external correctness reward (the pipeline with a reward that certainly
  carries the signal) raises accuracy by >= 3 points on average: else 100 steps cannot show any reward
  working and the verdict is ``inconclusive``;
- *negative controls*: best-of-8 with a random pick (the sampling alone) for the best-of-N threshold; GRPO
  with a random reward (same budget, same tuning) for the GRPO threshold; a random score's Spearman
  correlation with correctness for the partial threshold.

Equal tuning: each best-of-N selector (stable rank, mean log-probability, random) tunes the sampling
temperature, and each GRPO reward (stable rank, mean log-probability of the frozen reference: the
self-evaluation baseline, correctness: the external reward, random: the control) tunes the learning rate,
on the validation prompts' accuracy, the same grid and budget each. Test prompts are used once.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read not reproduced on the same runs): not tuned by the protocol: stable_rank. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        model=dict(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=64, max_positions=16),
        pretrain=dict(max_steps=20, check_every=10, n_check=32),
        n_val=32,
        n_test=32,
        n=4,
        grpo=dict(steps=3, batch=4, group_size=4),
        temps=[0.5, 1.0],
        lrs=[1e-4, 1e-3],
        extend=0,
    ),
    "quick": dict(
        model=dict(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128, max_positions=16),
        pretrain=dict(max_steps=2000, check_every=10, n_check=256),
        n_val=256,
        n_test=512,
        n=8,
        grpo=dict(steps=100, batch=8, group_size=8),
        temps=[0.3, 0.5, 0.7, 1.0],
        lrs=[1e-4, 3e-4, 1e-3],
        extend=1,
    ),
    # full: SmolLM2-135M-Instruct on the same task mapped onto its tokens (written for a GPU machine)
    "full": dict(
        smollm2=True,
        pretrain=dict(max_steps=3000, check_every=20, n_check=256, lr=3e-5, batch_size=32),
        n_val=512,
        n_test=2048,
        n=8,
        grpo=dict(steps=100, batch=16, group_size=8),
        temps=[0.3, 0.5, 0.7, 1.0],
        lrs=[1e-6, 3e-6, 1e-5],
        extend=1,
    ),
}

SELECTORS = ("stable_rank", "mean_logprob", "random")
REWARDS = ("stable_rank", "mean_logprob", "correct", "random")
_NAMES = {
    "stable_rank": "stable rank",
    "mean_logprob": "mean log-prob (self-evaluation)",
    "random": "random (control)",
    "correct": "correctness (external reward)",
}


def _build(cfg: dict[str, Any], seed: int) -> tuple[Any, Any]:
    from geode.llm.sr_grpo.experiment import DigitSum

    if cfg.get("smollm2"):
        from geode.models import load_smollm2, tokenizer_token_map

        model, tok = load_smollm2()
        base = DigitSum()
        task = DigitSum(token_map=tuple(int(i) for i in tokenizer_token_map(tok, base.vocab_size)))
        return model.train(), task
    from geode.models import build_tiny_lm

    task = DigitSum()
    return build_tiny_lm(task.vocab_size, seed=seed, **cfg["model"]), task


def _scores(kind: str, model: Any, prompts: Any, resp: Any, mask: Any, gen: Any) -> Any:
    import torch

    from geode.llm.grpo import response_logprobs
    from geode.llm.sr_grpo.reward import response_hidden_states, response_stable_rank

    if kind == "stable_rank":
        return response_stable_rank(response_hidden_states(model, prompts, resp), mask)
    if kind == "mean_logprob":
        with torch.no_grad():
            lp = response_logprobs(model, prompts, resp).double()
        m = mask.double()
        return (lp * m).sum(1) / m.sum(1)
    return torch.rand(resp.shape[0], generator=gen, dtype=torch.float64)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if np.std(a) == 0 or np.std(b) == 0:
        return 0.0
    return float(spearmanr(a, b).statistic)


@register(
    "sr-grpo",
    claim=(
        "The stable rank of a response's hidden states is an intrinsic quality signal: best-of-N selection by "
        "stable rank beats greedy decoding, and GRPO with stable rank as its only reward (SR-GRPO) improves "
        "task accuracy without external supervision."
    ),
    paper_figure=(
        "RewardBench 84.04%; best-of-N +14.1% relative to greedy; SR-GRPO on Qwen2.5-1.5B-Instruct +10% STEM, "
        "+19% math"
    ),
    baselines=("greedy decoding", "best-of-N by mean log-prob", "GRPO with a log-prob (self-evaluation) reward"),
    thresholds=(
        Threshold(
            "bon_beats_greedy",
            "sr_bon_minus_greedy_pts",
            ">=",
            3.0,
            "stable-rank best-of-8 accuracy beats greedy by >= 3 points (every seed)",
            agg="all",
            control="random_bon_minus_greedy_pts",
        ),
        Threshold(
            "grpo_gain",
            "sr_grpo_gain_pts",
            ">=",
            3.0,
            "100 SR-GRPO steps raise greedy accuracy by >= 3 points (every seed)",
            agg="all",
            control="random_grpo_gain_pts",
            arms=("stable_rank",),
        ),
        Threshold(
            "sr_correlates",
            "spearman_sr_correct",
            ">",
            0.1,
            "Spearman(stable rank, correct) > 0.1 over sampled responses (every seed)",
            agg="all",
            control="spearman_random_correct",
            arms=("stable_rank",),
        ),
    ),
    floors=(
        Threshold(
            "base_near_half",
            "base_greedy_acc",
            ">=",
            0.3,
            "floor: the base model's greedy accuracy is >= 0.3 (every seed)",
            agg="all",
        ),
        Threshold(
            "base_not_solved",
            "base_greedy_acc",
            "<=",
            0.7,
            "floor: the base model's greedy accuracy is <= 0.7 (every seed)",
            agg="all",
        ),
        Threshold(
            "pipeline_learns",
            "correct_grpo_gain_pts",
            ">=",
            3.0,
            "floor: GRPO with the external correctness reward raises accuracy by >= 3 points (mean over seeds)",
        ),
    ),
    reproduced="bon_beats_greedy and grpo_gain",
    partial="sr_correlates",
    method="stable_rank",
    tuned=("stable_rank",),
    untuned={"greedy": "no hyper-parameter (greedy decoding of the base model)"},
    key_metric="sr_bon_minus_greedy_pts",
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.llm.grpo import CompactGRPO, sample_responses
    from geode.llm.sr_grpo.experiment import greedy_accuracy, pretrain_to_accuracy

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    base, task = _build(cfg, seed)
    pre_steps, pre_acc = pretrain_to_accuracy(base, task, seed=seed, **cfg["pretrain"])
    base.eval()
    for p in base.parameters():
        p.requires_grad_(False)
    n, T = cfg["n"], task.response_len
    vp, _, va = task.sample(cfg["n_val"], 10_000 + seed)
    tp, _, ta = task.sample(cfg["n_test"], 20_000 + seed)
    greedy_val = greedy_accuracy(base, task, vp, va)
    greedy_test = greedy_accuracy(base, task, tp, ta)

    # ---- best-of-N: every selector tunes the sampling temperature on validation ----
    samples: dict[tuple[str, float], Any] = {}

    def draw(split: str, temp: float) -> Any:
        key = (split, temp)
        if key not in samples:
            prompts, answers = (vp, va) if split == "val" else (tp, ta)
            g = torch.Generator().manual_seed(seed * 1000 + (1 if split == "val" else 2) + int(temp * 100))
            resp, mask = sample_responses(
                base, prompts, n=n, max_new_tokens=T, temperature=temp, eos_token_id=task.eos, generator=g
            )
            rep = prompts.repeat_interleave(n, 0)
            correct = task.correct(resp, answers.repeat_interleave(n, 0)).numpy()
            gs = torch.Generator().manual_seed(seed * 1000 + 7 + int(temp * 100))
            scores = {k: _scores(k, base, rep, resp, mask, gs).numpy() for k in SELECTORS}
            samples[key] = (correct, scores)
        return samples[key]

    def bon_acc(split: str, kind: str, temp: float) -> float:
        correct, scores = draw(split, temp)
        pick = scores[kind].reshape(-1, n).argmax(1)
        return float(correct.reshape(-1, n)[np.arange(len(pick)), pick].mean())

    res_bon = tune(
        lambda k, p: bon_acc("val", k, p["temperature"]),
        {k: {"temperature": cfg["temps"]} for k in SELECTORS},
        extend=cfg["extend"],
        limits={"temperature": (0.05, 2.0)},
    )
    bon = {k: bon_acc("test", k, res_bon.params(k)["temperature"]) for k in SELECTORS}
    t_sr = res_bon.params("stable_rank")["temperature"]
    correct_sr, scores_sr = draw("test", t_sr)
    oracle = float(correct_sr.reshape(-1, n).any(1).mean())
    sample_acc = float(correct_sr.mean())
    within = []
    for c, s in zip(correct_sr.reshape(-1, n), scores_sr["stable_rank"].reshape(-1, n)):
        if c.std() > 0 and s.std() > 0:
            within.append(_spearman(s, c.astype(float)))
    spearman_sr = _spearman(scores_sr["stable_rank"], correct_sr.astype(float))
    spearman_rand = _spearman(scores_sr["random"], correct_sr.astype(float))
    spearman_lp = _spearman(scores_sr["mean_logprob"], correct_sr.astype(float))

    # ---- GRPO: every reward tunes the learning rate on validation accuracy ----
    g_cfg = cfg["grpo"]
    runs: dict[tuple[str, float], Any] = {}

    def reward_fn(kind: str, ref: Any) -> Any:
        gen = torch.Generator().manual_seed(seed * 7 + 3)
        answers: dict[str, Any] = {}

        def fn(prompts: Any, resp: Any, mask: Any) -> Any:
            if kind == "correct":
                return task.correct(resp, answers["a"].repeat_interleave(g_cfg["group_size"], 0)).double()
            return _scores(kind, ref, prompts, resp, mask, gen)

        return fn, answers

    def fit(kind: str, params: dict[str, Any]) -> tuple[float, Any]:
        key = (kind, params["lr"])
        if key not in runs:
            policy = copy.deepcopy(base)
            for p in policy.parameters():
                p.requires_grad_(True)
            ref = base  # frozen reference: KL anchor and the stable-rank evaluator (the paper's text)
            fn, holder = reward_fn(kind, ref)
            trainer = CompactGRPO(
                policy,
                fn,
                ref_model=ref,
                group_size=g_cfg["group_size"],
                lr=params["lr"],
                max_new_tokens=T,
                eos_token_id=task.eos,
                seed=seed * 13 + 5,
            )
            rng = np.random.default_rng(30_000 + seed)  # the same training prompts for every reward
            stats = []
            for _ in range(g_cfg["steps"]):
                prompts, _, answers = task.sample(g_cfg["batch"], rng)
                holder["a"] = answers
                stats.append(trainer.step(prompts))
            finite = all(np.isfinite(s.loss) for s in stats)
            val = greedy_accuracy(policy, task, vp, va) if finite else -1.0
            runs[key] = (val, policy, stats)
        return runs[key][0], runs[key]

    res_grpo = tune(fit, {k: {"lr": cfg["lrs"]} for k in REWARDS}, extend=cfg["extend"])
    after = {}
    for k in REWARDS:
        _, policy, stats = res_grpo.payload(k)
        after[k] = greedy_accuracy(policy, task, tp, ta)
    collapsed = sum(not np.isfinite(v[0]) or v[0] < 0 for v in runs.values())
    elapsed = time.perf_counter() - t0

    pts = 100.0
    metrics = {
        "base_greedy_acc": greedy_test,
        "base_greedy_val_acc": greedy_val,
        "pretrain_steps": float(pre_steps),
        "pretrain_check_acc": pre_acc,
        "sample_acc": sample_acc,
        "oracle_pass_at_n": oracle,
        **{f"{k}_bon_acc": bon[k] for k in SELECTORS},
        "sr_bon_minus_greedy_pts": pts * (bon["stable_rank"] - greedy_test),
        "logprob_bon_minus_greedy_pts": pts * (bon["mean_logprob"] - greedy_test),
        "random_bon_minus_greedy_pts": pts * (bon["random"] - greedy_test),
        "spearman_sr_correct": spearman_sr,
        "spearman_sr_correct_within_prompt": float(np.mean(within)) if within else 0.0,
        "spearman_logprob_correct": spearman_lp,
        "spearman_random_correct": spearman_rand,
        **{f"{k}_grpo_acc": after[k] for k in REWARDS},
        "sr_grpo_gain_pts": pts * (after["stable_rank"] - greedy_test),
        "logprob_grpo_gain_pts": pts * (after["mean_logprob"] - greedy_test),
        "correct_grpo_gain_pts": pts * (after["correct"] - greedy_test),
        "random_grpo_gain_pts": pts * (after["random"] - greedy_test),
        "grpo_collapsed_runs": float(collapsed),
        "sr_grpo_final_reward": float(np.mean([s.reward_mean for s in res_grpo.payload("stable_rank")[2][-10:]])),
        "sr_grpo_first_reward": float(np.mean([s.reward_mean for s in res_grpo.payload("stable_rank")[2][:10]])),
        "sr_grpo_final_kl": res_grpo.payload("stable_rank")[2][-1].kl,
    }
    table = [{"method": "greedy (base)", "kind": "decoding", "test accuracy": greedy_test, "setting": ""}]
    table += [
        {
            "method": f"best-of-{n} by {_NAMES[k]}",
            "kind": "best-of-N",
            "test accuracy": bon[k],
            "setting": f"T={res_bon.params(k)['temperature']:g}",
        }
        for k in SELECTORS
    ]
    table.append(
        {"method": f"oracle pass@{n}", "kind": "best-of-N", "test accuracy": oracle, "setting": f"T={t_sr:g}"}
    )
    table += [
        {
            "method": f"GRPO, reward: {_NAMES[k]}",
            "kind": f"GRPO {g_cfg['steps']} steps",
            "test accuracy": after[k],
            "setting": f"lr={res_grpo.params(k)['lr']:g}",
        }
        for k in REWARDS
    ]
    summary = (
        f"greedy {greedy_test:.3f}; best-of-{n}: SR {bon['stable_rank']:.3f}, log-prob {bon['mean_logprob']:.3f}, "
        f"random {bon['random']:.3f}; GRPO {g_cfg['steps']} steps: SR {after['stable_rank']:.3f}, log-prob "
        f"{after['mean_logprob']:.3f}, correctness {after['correct']:.3f}, random {after['random']:.3f}; "
        f"Spearman(SR, correct) {spearman_sr:.3f}"
    )
    notes = [
        *[f"(best-of-N) {s}" for s in res_bon.notes()],
        *[f"(GRPO) {s}" for s in res_grpo.notes()],
        f"Base model: trained {pre_steps} steps until greedy accuracy on a check split reached 0.5 "
        f"({pre_acc:.3f}); test greedy accuracy {greedy_test:.3f}.",
        f"Sampled accuracy at SR's temperature {t_sr:g}: {sample_acc:.3f}; oracle pass@{n} {oracle:.3f}. Spearman "
        f"with correctness (pooled over prompts): SR {spearman_sr:.3f}, mean log-prob {spearman_lp:.3f}, random "
        f"{spearman_rand:.3f}; SR within a prompt (mean over {len(within)} prompts with mixed outcomes) "
        f"{metrics['spearman_sr_correct_within_prompt']:.3f}.",
        "Strongest baselines: best-of-N by mean log-prob (margin of SR over it "
        f"{pts * (bon['stable_rank'] - bon['mean_logprob']):+.1f} pts) and GRPO with the correctness reward "
        f"(SR-GRPO minus it {pts * (after['stable_rank'] - after['correct']):+.1f} pts).",
        f"SR-GRPO mean reward (stable rank) first 10 steps {metrics['sr_grpo_first_reward']:.3f}, last 10 "
        f"{metrics['sr_grpo_final_reward']:.3f}; final k3 KL {metrics['sr_grpo_final_kl']:.4f}; collapsed GRPO runs "
        f"{collapsed} of {len(runs)}.",
        f"Wall time of this seed: {elapsed:.0f} s.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"accuracy": _figure(table)},
        summary=summary,
        notes=notes,
        tuned=res_bon.table() + res_grpo.table(),
    )


def _figure(table: list[dict[str, Any]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6))
    names = [r["method"] for r in table]
    vals = [r["test accuracy"] for r in table]
    ax.barh(range(len(vals)), vals, color=["0.5"] + ["C0"] * 4 + ["C1"] * (len(vals) - 5))
    ax.axvline(table[0]["test accuracy"], color="k", ls=":", lw=1)
    ax.set_yticks(range(len(vals)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("test accuracy")
    fig.tight_layout()
    return fig
