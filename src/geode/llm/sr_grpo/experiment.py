"""The claim's set-up: a tiny LM trained to about 50% on a synthetic sum-of-digits task with a short trace.

Prompt ``BOS x_1 ADD x_2 ADD ... x_k EQ`` (digits 0..9), response ``p_1 p_0 SEP c_1 c_0 EOS``: the two
digits of the partial sum :math:`x_1 + x_2` (a one-step "reasoning trace"), then the two digits of the
total :math:`c`. A response is correct when its final two digits are :math:`c`'s. Token ids follow
:mod:`geode.models.tasks` (digit ``j`` is ``16 + j``); a ``token_map`` maps them into a real tokenizer's
ids for SmolLM2 (full mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_int
from geode.models.tasks import FIRST_SYMBOL, SPECIAL_TOKENS

__all__ = ["DigitSum", "greedy_accuracy", "pretrain_to_accuracy"]


@dataclass(frozen=True)
class DigitSum:
    """Sum of ``k`` digits with the partial sum of the first two as a trace (see the module docstring)."""

    k: int = 3
    token_map: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        check_int("k", self.k, low=2, high=11)

    @property
    def vocab_size(self) -> int:
        return FIRST_SYMBOL + 10 if self.token_map is None else max(self.token_map) + 1

    @property
    def prompt_len(self) -> int:
        return 2 * self.k + 1

    @property
    def response_len(self) -> int:
        return 6

    @property
    def eos(self) -> int:
        return self._map(np.array([SPECIAL_TOKENS["EOS"]]))[0]

    def _map(self, ids: np.ndarray) -> np.ndarray:
        return ids if self.token_map is None else np.asarray(self.token_map)[ids]

    def sample(self, n: int, seed: int | np.random.Generator) -> tuple[Any, Any, Any]:
        """``(prompt_ids (n, P), response_ids (n, 6), answer_ids (n, 2))`` as torch tensors."""
        import torch

        n = check_int("n", n, low=1)
        rng = as_generator(seed)
        x = rng.integers(0, 10, (n, self.k))
        s = SPECIAL_TOKENS
        cols = [np.full(n, s["BOS"])]
        for j in range(self.k):
            if j:
                cols.append(np.full(n, s["ADD"]))
            cols.append(x[:, j] + FIRST_SYMBOL)
        cols.append(np.full(n, s["EQ"]))
        p, c = x[:, 0] + x[:, 1], x.sum(1)
        resp = [p // 10, p % 10, None, c // 10, c % 10, None]
        rcols = [
            np.full(n, s["SEP"]) if r is None and i == 2 else np.full(n, s["EOS"]) if r is None else r + 16
            for i, r in enumerate(resp)
        ]
        prompt = self._map(np.stack(cols, 1))
        response = self._map(np.stack(rcols, 1))
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a).astype(np.int64))  # noqa: E731
        return t(prompt), t(response), t(response[:, 3:5])

    def correct(self, response_ids: Any, answer_ids: Any) -> Any:
        """Boolean (n,): the response's final two digits equal the answer (the trace is not judged)."""
        if response_ids.shape[1] < 5:
            return response_ids.new_zeros(response_ids.shape[0], dtype=bool)
        return (response_ids[:, 3:5] == answer_ids).all(1)


def greedy_accuracy(model: Any, task: DigitSum, prompts: Any, answers: Any) -> float:
    """Accuracy of greedy decoding on the given prompts."""
    from geode.llm.grpo import sample_responses

    resp, _ = sample_responses(model, prompts, n=1, max_new_tokens=task.response_len, temperature=0.0)
    return float(task.correct(resp, answers).double().mean())


def pretrain_to_accuracy(
    model: Any,
    task: DigitSum,
    *,
    target: float = 0.5,
    max_steps: int = 2000,
    batch_size: int = 64,
    lr: float = 1e-3,
    check_every: int = 10,
    n_check: int = 256,
    seed: int = 0,
) -> tuple[int, float]:
    """Supervised training on full responses until greedy accuracy on a check split reaches ``target``.

    Returns ``(steps, accuracy)``. The check split is drawn from ``seed + 7919`` (neither the claim's
    validation nor its test split).
    """
    import torch

    rng = as_generator(seed)
    cp, _, ca = task.sample(n_check, seed + 7919)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    acc = greedy_accuracy(model, task, cp, ca)
    step = 0
    while acc < target and step < max_steps:
        for _ in range(check_every):
            p, r, _ = task.sample(batch_size, rng)
            ids = torch.cat([p, r], 1)
            labels = ids.clone()
            labels[:, : p.shape[1]] = -100
            model.train()
            loss = model(input_ids=ids, labels=labels).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
        acc = greedy_accuracy(model, task, cp, ca)
    return step, acc
