"""The claim's two-task world: a tiny Llama trained on copy and reversal, and a shifting request stream.

Sequences are ``T x_1 .. x_L SEP y_1 .. y_L EOS`` with task token ``T`` (``BOS`` for copy, id 9 for
reversal), ``y = x`` (copy) or ``y = reversed(x)`` (reversal). The target is trained with stochastic
layer dropout on its middle layers (probability ``layer_drop`` each, LayerSkip-style), a set-up choice of
ours that makes the tiny model's skipped drafts usable; decoding always uses the full target for
verification, so outputs stay the target's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.models.tasks import FIRST_SYMBOL, SPECIAL_TOKENS

__all__ = ["TASK_TOKENS", "make_requests", "sample_sequences", "smollm2_requests", "train_target"]

TASK_TOKENS = (SPECIAL_TOKENS["BOS"], 9)
EOS = SPECIAL_TOKENS["EOS"]


def sample_sequences(task: int, n: int, rng: np.random.Generator, *, length: int, n_symbols: int) -> np.ndarray:
    """``n`` full sequences of ``task`` (0: copy, 1: reversal)."""
    x = rng.integers(0, n_symbols, (n, length)) + FIRST_SYMBOL
    y = x if task == 0 else x[:, ::-1]
    return np.concatenate(
        [np.full((n, 1), TASK_TOKENS[task]), x, np.full((n, 1), SPECIAL_TOKENS["SEP"]), y, np.full((n, 1), EOS)],
        axis=1,
    )


def make_requests(
    blocks: list[int], per_block: int, rng: np.random.Generator, *, length: int, n_symbols: int
) -> list[tuple[list[int], int]]:
    """A stream: blocks of ``per_block`` requests of the tasks in ``blocks``; prompts end at ``SEP``."""
    out = []
    for t in blocks:
        seqs = sample_sequences(t, per_block, rng, length=length, n_symbols=n_symbols)
        out += [(s[: length + 2].tolist(), t) for s in seqs]
    return out


def train_target(
    *, n_layers: int, d_model: int, steps: int, length: int, n_symbols: int, layer_drop: float, seed: int
) -> Any:
    """Train the target on the two-task mixture (answer tokens only) with middle-layer dropout."""
    import torch

    from geode.inference.spirit.decoding import skip_layers
    from geode.models.tiny_lm import build_tiny_lm

    torch.manual_seed(seed)
    model = build_tiny_lm(FIRST_SYMBOL + n_symbols, d_model=d_model, n_layers=n_layers, max_positions=64, seed=seed)
    rng = np.random.default_rng([seed, 7])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        ids = np.concatenate(
            [sample_sequences(t, 16, rng, length=length, n_symbols=n_symbols) for t in (0, 1)], axis=0
        )
        ids_t = torch.from_numpy(ids.astype(np.int64))
        labels = ids_t.clone()
        labels[:, : length + 2] = -100
        skip = [i for i in range(1, n_layers - 1) if rng.random() < layer_drop]
        with skip_layers(model, skip):
            loss = model(input_ids=ids_t, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    return model


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def smollm2_requests(
    tok: Any, blocks: list[int], per_block: int, rng: np.random.Generator, *, shots: int = 4, length: int = 6
) -> tuple[list[tuple[list[int], int]], list[str]]:
    """The full mode's two-task stream for the pretrained SmolLM2 target, and each request's answer text.

    Task 0 (copy): ``shots`` examples ``Copy: a b c d e f = a b c d e f`` and then a query
    ``Copy: ... =``, answer the ``length`` letters. Task 1 (count): ``Count: n n+1 .. n+7``, answer the next
    ``length`` numbers. The two prompt families start with different tokens (the policies' signature). The
    pretrained model cannot be trained on copy/reversal as the quick mode's target is, so full mode uses two
    tasks a 135M-parameter LM does in context; a deliberate change of tasks. Probe (greedy, 18 new tokens,
    10 prompts per task from this function): copy 7/10, count 10/10; in-context upper-casing of letters
    failed (0/5) in an earlier probe; reversal was not tried.
    """
    reqs: list[tuple[list[int], int]] = []
    answers: list[str] = []
    for t in blocks:
        for _ in range(per_block):
            if t == 0:
                lines = []
                for _ in range(shots):
                    x = " ".join(rng.choice(list(_LETTERS), length))
                    lines.append(f"Copy: {x} = {x}")
                x = " ".join(rng.choice(list(_LETTERS), length))
                text, ans = "\n".join(lines + [f"Copy: {x} ="]), " " + x
            else:
                a = int(rng.integers(10, 80))
                text = "Count: " + " ".join(str(a + i) for i in range(8))
                ans = " " + " ".join(str(a + 8 + i) for i in range(length))
            reqs.append(([int(i) for i in tok(text)["input_ids"]], t))
            answers.append(ans)
    return reqs, answers
