"""Post-train a tiny causal LM with the llm field's components, then measure what changed.

What it shows, on a tiny Hugging Face Llama (``geode.models.build_tiny_lm``) that the script trains itself on a
task it makes itself (reverse three symbols, with an optional one-token "thought" before the answer:
``BOS x1 x2 x3 SEP t y1 y2 y3 EOS``; ``t = MUL`` is the empty thought, reasoning off):

1. **GRPO** (``geode.llm.CompactGRPO``) with a correctness reward, and **SR-GRPO**: the same trainer with the
   stable rank of a frozen copy's hidden states as the only reward (``StableRankReward``, TRL's reward
   signature), plus best-of-8 by stable rank against greedy decoding;
2. **CPA**: GRPO with FP4 (NVFP4, W4A4) rollouts and a float32 master policy (``LowPrecisionGRPO``), without
   and with the cross-precision alignment term; the full-precision checkpoint is evaluated;
3. **BVPO**: DPO on correct-vs-wrong answers through sampled thoughts (trace branch) and with reasoning off
   (empty branch), the mixture weight alpha* estimated by ``mse_optimal_alpha``, against alpha = 1 and 0;
4. **CapTrack**: ``drift_report`` of every post-trained model against the base on three capabilities
   (accuracy with reasoning off, with reasoning on, and response length), with bootstrap z-scores;
5. **TRL**: one real ``trl.GRPOTrainer`` run on a character-level tokenizer with ``StableRankReward`` as its
   only reward (the HF/TRL idiom: ``reward_funcs=[StableRankReward(evaluator, tokenizer)]``).

Run::

    python examples/llm.py           # about a minute on one core
    python examples/llm.py --smoke   # the smallest size, a few seconds

Needs: the ``llm`` extra (transformers; trl and datasets for step 5, which is skipped without them):
``pip install 'geode[llm]'``. No asset, no network.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch

SIZES = {
    # SFT steps, RL steps, prompts per RL step, group size, BVPO steps, evaluation prompts, TRL steps
    "smoke": dict(sft=60, rl=3, prompts=4, group=4, dpo=3, n_eval=64, trl=1),
    "full": dict(sft=90, rl=100, prompts=8, group=8, dpo=60, n_eval=512, trl=3),
}
N_SYMBOLS, LENGTH = 8, 3
BOS, SEP, EOS, EMPTY = 1, 2, 3, 7  # geode.models' special tokens; MUL (7) is the empty thought
FIRST = 16  # symbol j has id 16 + j
VOCAB = FIRST + N_SYMBOLS


def make_batch(n: int, rng: np.random.Generator, *, thinking: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """SFT sequences ``BOS x SEP t y EOS`` (y = x reversed) and their labels (the thought, the answer and EOS).

    With probability ``thinking`` the thought is a hint (the answer's first symbol half the time, a random
    symbol otherwise); else it is the empty thought.
    """
    x = rng.integers(0, N_SYMBOLS, (n, LENGTH)) + FIRST
    y = x[:, ::-1]
    hint = np.where(rng.random(n) < 0.5, y[:, 0], rng.integers(0, N_SYMBOLS, n) + FIRST)
    t = np.where(rng.random(n) < thinking, hint, EMPTY)
    ids = np.concatenate([np.full((n, 1), BOS), x, np.full((n, 1), SEP), t[:, None], y, np.full((n, 1), EOS)], 1)
    labels = ids.copy()
    labels[:, : LENGTH + 2] = -100
    return torch.from_numpy(ids), torch.from_numpy(labels)


def prompts_off(x: torch.Tensor) -> torch.Tensor:
    """Reasoning off: ``BOS x SEP MUL``; the model answers ``y EOS``."""
    n = x.shape[0]
    return torch.cat([torch.full((n, 1), BOS), x, torch.full((n, 1), SEP), torch.full((n, 1), EMPTY)], 1)


def prompts_on(x: torch.Tensor) -> torch.Tensor:
    """Reasoning on: ``BOS x SEP``; the model writes a thought, then the answer."""
    n = x.shape[0]
    return torch.cat([torch.full((n, 1), BOS), x, torch.full((n, 1), SEP)], 1)


def symbols(n: int, seed: int) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).integers(0, N_SYMBOLS, (n, LENGTH)) + FIRST)


def correct(prompt_ids: torch.Tensor, response_ids: torch.Tensor, mask: Any = None) -> torch.Tensor:
    """1 when the response's first three tokens reverse the prompt's three symbols (reasoning off)."""
    return (response_ids[:, :LENGTH] == prompt_ids[:, 1 : 1 + LENGTH].flip(1)).all(1).double()


def evaluate(model: Any, x: torch.Tensor) -> dict[str, np.ndarray]:
    """Per-item scores of three capabilities: accuracy with reasoning off and on, and the response length."""
    from geode.llm import sample_responses

    y = x.flip(1)
    off, _ = sample_responses(model, prompts_off(x), max_new_tokens=LENGTH + 3, temperature=0)
    # reasoning on: a thought sampled from the model (the same draws for every model), then the greedy answer
    thought, _ = sample_responses(model, prompts_on(x), max_new_tokens=1, generator=torch.Generator().manual_seed(7))
    on, _ = sample_responses(model, torch.cat([prompts_on(x), thought], 1), max_new_tokens=LENGTH, temperature=0)
    ends = (off == EOS).int()
    length = torch.where(ends.any(1), ends.argmax(1), torch.full((len(x),), off.shape[1]))
    return {
        "accuracy_off": (off[:, :LENGTH] == y).all(1).double().numpy(),
        "accuracy_on": (on == y).all(1).double().numpy(),
        "length": length.double().numpy(),
    }


def sft(model: Any, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        ids, labels = make_batch(32, rng)
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()


def grpo_section(base: Any, size: dict, x_eval: torch.Tensor) -> dict[str, Any]:
    from geode.llm import CompactGRPO, StableRankReward, best_of_n, response_logprobs, sample_responses

    print("\n[1] GRPO with a correctness reward, and SR-GRPO (stable rank of a frozen copy as the only reward)")
    # the evaluator is a frozen copy of the base; the reward takes TRL's keyword signature and, as here, geode's
    # reward_fn(prompt_ids, response_ids, mask)
    reward = StableRankReward(copy.deepcopy(base), eos_token_id=EOS)

    trained = {}
    for name, fn in (("GRPO (correct)", correct), ("SR-GRPO (stable rank)", reward)):
        policy = copy.deepcopy(base)
        trainer = CompactGRPO(
            policy, fn, group_size=size["group"], lr=1e-3, max_new_tokens=LENGTH + 1, eos_token_id=EOS, seed=0
        )
        t0 = time.process_time()
        stats = trainer.train(lambda s: prompts_off(symbols(size["prompts"], 1000 + s)), size["rl"])
        trained[name] = policy
        print(
            f"  {name:24s} mean reward {_ends(stats, 'reward_mean')} ({size['rl']} steps, "
            f"{time.process_time() - t0:.1f} CPU-s)"
        )

    # best-of-8 by stable rank and by mean log-probability, against greedy, on the base model
    n, k = min(64, len(x_eval)), 8
    p = prompts_off(x_eval[:n])
    resp, mask = sample_responses(
        base,
        p,
        n=k,
        max_new_tokens=LENGTH + 1,
        temperature=1.0,
        eos_token_id=EOS,
        generator=torch.Generator().manual_seed(0),
    )
    rep = p.repeat_interleave(k, 0)
    ok = correct(rep, resp).reshape(n, k)
    sr = reward.scores(rep, resp, mask)
    with torch.no_grad():
        lp = (response_logprobs(base, rep, resp) * mask).sum(1) / mask.sum(1)
    rows = torch.arange(n)
    greedy, _ = sample_responses(base, p, max_new_tokens=LENGTH + 1, temperature=0)
    print(
        f"  best-of-{k} on the base ({n} prompts): greedy {correct(p, greedy).mean():.3f}, "
        f"by stable rank {ok[rows, torch.as_tensor(best_of_n(sr, k))].mean():.3f}, "
        f"by mean log-prob {ok[rows, torch.as_tensor(best_of_n(lp, k))].mean():.3f}"
    )
    return trained


def _ends(stats: list[Any], field: str) -> str:
    """The mean of ``field`` over the first and the last tenth of the steps: ``a -> b``."""
    k = max(1, len(stats) // 10)
    first, last = (np.mean([getattr(s, field) for s in part]) for part in (stats[:k], stats[-k:]))
    return f"{first:.3f} -> {last:.3f}"


def cpa_section(base: Any, size: dict) -> dict[str, Any]:
    from geode.llm import LowPrecisionGRPO

    print("\n[2] GRPO with FP4 (NVFP4 W4A4) rollouts and a float32 master policy, without and with CPA")
    trained = {}
    for name, coef in (("FP4 rollouts", 0.0), ("FP4 rollouts + CPA", 0.1)):
        policy = copy.deepcopy(base)
        trainer = LowPrecisionGRPO(
            policy,
            correct,
            rollout="fp4",
            qat=True,
            cpa_coef=coef,
            track_gap=True,
            group_size=size["group"],
            lr=1e-3,
            max_new_tokens=LENGTH + 1,
            eos_token_id=EOS,
        )
        stats = trainer.train(lambda s: prompts_off(symbols(size["prompts"], 2000 + s)), size["rl"])
        gap = np.nanmean([s.cpa_gap for s in stats])
        mismatch = np.mean([s.mismatch_mean for s in stats])
        print(
            f"  {name:24s} mean reward {_ends(stats, 'reward_mean')}, train-rollout mismatch {mismatch:.4f} "
            f"nats/token, FP4-vs-full gap {gap:.4f}"
        )
        trained[name] = _full_precision_copy(trainer)
    return trained


def _full_precision_copy(trainer: Any) -> Any:
    """The exported checkpoint: the master weights with fake quantisation off."""
    from geode.llm import fp4_layers

    model = copy.deepcopy(trainer.policy)
    for layer in fp4_layers(model):
        layer.enabled = False
    return model.eval()


def bvpo_section(base: Any, size: dict) -> dict[str, Any]:
    from geode.llm import BVPOTrainer, PreferenceBatch, mse_optimal_alpha, sample_responses

    print("\n[3] BVPO: DPO through sampled thoughts (trace branch) mixed with reasoning off (empty branch)")
    start = LENGTH + 2  # scored from the thought on
    thoughts = torch.Generator().manual_seed(0)

    def pairs(model: Any, x: torch.Tensor, *, trace: bool) -> PreferenceBatch:
        """Chosen: the reversal; rejected: it with one symbol wrong. Thoughts sampled from ``model`` (trace)."""
        y = x.flip(1)
        wrong = y.clone()
        rows, pos = torch.arange(len(x)), x[:, 0] % LENGTH  # which symbol is wrong: fixed by the prompt
        wrong[rows, pos] = (wrong[rows, pos] - FIRST + 1) % N_SYMBOLS + FIRST
        p = prompts_on(x)
        if trace:  # chosen and rejected each get their own sampled thought
            t_c, _ = sample_responses(model, p, max_new_tokens=1, generator=thoughts)
            t_r, _ = sample_responses(model, p, max_new_tokens=1, generator=thoughts)
        else:
            t_c = t_r = torch.full((len(x), 1), EMPTY)
        eos = torch.full((len(x), 1), EOS)
        return PreferenceBatch(torch.cat([p, t_c, y, eos], 1), torch.cat([p, t_r, wrong, eos], 1), start)

    # alpha*: K resamples of the thoughts for the same prompts and answers, and the empty-thought gradient, at
    # the base model (BVPOTrainer.branch_gradient: the flat DPO gradient of one branch)
    probe = BVPOTrainer(copy.deepcopy(base), alpha=0.5, beta=1.0)
    x = symbols(16, 3000)
    trace_grads = torch.stack([probe.branch_gradient(pairs(base, x, trace=True)) for _ in range(8)])
    alpha_star, info = mse_optimal_alpha(trace_grads, probe.branch_gradient(pairs(base, x, trace=False)))
    print(
        f"  alpha* = {alpha_star:.3f} (trace-noise variance {info['variance']:.3g}, "
        f"squared bias of the empty branch {info['bias_sq']:.3g})"
    )

    trained = {}
    for name, alpha in (("DPO, trace (alpha=1)", 1.0), ("DPO, empty (alpha=0)", 0.0), ("BVPO (alpha*)", alpha_star)):
        policy = copy.deepcopy(base)
        trainer = BVPOTrainer(policy, alpha=alpha, beta=1.0, lr=1e-3)
        losses = []
        for step in range(size["dpo"]):
            xs, xe = symbols(16, 4000 + step), symbols(16, 5000 + step)  # the branches sample their own pairs
            losses.append(trainer.step(pairs(policy, xs, trace=True), pairs(policy, xe, trace=False)))
        trained[name] = policy
        print(f"  {name:24s} loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    return trained


def trl_section(size: dict) -> None:
    print("\n[5] TRL: trl.GRPOTrainer with StableRankReward as its only reward (character-level tokenizer)")
    try:
        from datasets import Dataset
        from tokenizers import Tokenizer, models, pre_tokenizers
        from transformers import PreTrainedTokenizerFast
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as err:
        print(f"  skipped: needs trl and datasets (pip install 'geode[llm]'): {err}")
        return
    import tempfile
    import warnings

    from transformers import PrinterCallback

    from geode.llm import StableRankReward
    from geode.models import build_tiny_lm

    vocab = {"<pad>": 0, "<eos>": 1, **{chr(ord("a") + i): i + 2 for i in range(24)}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")  # one token per character
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>")
    tok.padding_side = "left"
    policy = build_tiny_lm(26, d_model=16, n_layers=1, n_heads=2, max_positions=32, seed=0)
    evaluator = build_tiny_lm(26, d_model=16, n_layers=1, n_heads=2, max_positions=32, seed=1)
    for m in (policy, evaluator):  # the tokenizer's special tokens (else transformers realigns them, loudly)
        m.config.pad_token_id = m.generation_config.pad_token_id = tok.pad_token_id
        m.config.eos_token_id = m.generation_config.eos_token_id = tok.eos_token_id
    reward = StableRankReward(evaluator, tok)
    before = [q.detach().clone() for q in policy.parameters()]
    with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # transformers' renaming notices
        cfg = GRPOConfig(
            output_dir=out,
            max_steps=size["trl"],
            per_device_train_batch_size=4,
            num_generations=2,
            max_completion_length=4,
            learning_rate=1e-2,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
            bf16=False,
            logging_steps=1,
            disable_tqdm=True,
        )
        ds = Dataset.from_dict({"prompt": ["abc", "bcd", "cde", "def"]})
        trainer = GRPOTrainer(model=policy, reward_funcs=[reward], args=cfg, train_dataset=ds, processing_class=tok)
        trainer.remove_callback(PrinterCallback)  # the metrics are read from trainer.state.log_history below
        trainer.train()
    moved = any(not torch.equal(a, b) for a, b in zip(before, policy.parameters()))
    rewards = [
        h["rewards/stable_rank_reward/mean"]
        for h in trainer.state.log_history
        if "rewards/stable_rank_reward/mean" in h
    ]
    print(
        f"  {size['trl']} GRPOTrainer step(s): mean stable-rank reward per step {np.round(rewards, 3).tolist()}, "
        f"policy moved: {moved}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (a few seconds)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("skipped: needs the llm extra (transformers): pip install 'geode[llm]'")
        return 77
    from geode.llm import drift_report
    from geode.models import build_tiny_lm

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    size = SIZES["smoke" if args.smoke else "full"]
    base = build_tiny_lm(VOCAB, d_model=32, n_layers=2, n_heads=2, max_positions=16, seed=args.seed)
    sft(base, size["sft"], args.seed)
    base.eval()
    x_eval = symbols(size["n_eval"], 99)
    scores = {"base": evaluate(base, x_eval)}
    acc = {k: v.mean() for k, v in scores["base"].items()}
    print(
        f"base model after {size['sft']} SFT steps: accuracy {acc['accuracy_off']:.3f} with reasoning off, "
        f"{acc['accuracy_on']:.3f} with a sampled thought"
    )

    models = {}
    models.update(grpo_section(base, size, x_eval))
    models.update(cpa_section(base, size))
    models.update(bvpo_section(base, size))

    print("\n[4] CapTrack: drift of each post-trained model against the base (percent; z from a paired bootstrap)")
    capability_of = {"accuracy_off": "C1", "accuracy_on": "C5a", "length": "W3a"}
    print(f"  {'model':24s} {'acc. off':>9s} {'acc. on':>9s}   drift C1 (z)      drift C5a (z)     drift W3a (z)")
    for name, model in models.items():
        s = evaluate(model, x_eval)
        rep = drift_report(scores["base"], s, capability_of, n_boot=200, seed=args.seed)
        cells = "   ".join(f"{r['drift']:+7.1f} ({r['z']:+6.1f})" for r in rep.capabilities)
        print(f"  {name:24s} {s['accuracy_off'].mean():9.3f} {s['accuracy_on'].mean():9.3f}   {cells}")

    trl_section(size)
    print(f"\ndone in {time.process_time():.1f} CPU-s (imports included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
