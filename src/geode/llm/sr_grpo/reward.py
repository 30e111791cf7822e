r"""Stable rank of a response's hidden states as an intrinsic reward, and best-of-N selection by a score.

For a response of :math:`T` tokens with final-layer hidden states :math:`H \in \mathbb{R}^{T \times d}`
(one row per response token, prompt tokens excluded),

.. math::

    \operatorname{SR}(H) = \frac{\|H\|_F^2}{\|H\|_2^2} = \frac{\sum_i \sigma_i^2}{\sigma_1^2}
    \in [1, \min(T, d)],

the total variance over the variance along the dominant direction (Tang & Yang, arXiv 2512.02807, the
uncentred form the paper writes). Padded rows are set to zero before the decomposition: zero rows change
neither norm, so a padded batch gives every response its own stable rank.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from geode.core.linalg import stable_rank
from geode.core.validation import check_array, check_int, check_tensor

__all__ = ["StableRankReward", "best_of_n", "response_hidden_states", "response_stable_rank"]


def response_stable_rank(hidden_states: Any, mask: Any = None) -> Any:
    r"""Stable rank :math:`\|H\|_F^2 / \|H\|_2^2` of each response's token states.

    Parameters
    ----------
    hidden_states : torch.Tensor, shape (T, d) or (n, T, d)
        Final-layer hidden states of the response tokens (one response, or a batch padded to ``T``).
    mask : torch.Tensor of bool, shape (n, T) or (T,), optional
        True on a response's real tokens; padded rows are zeroed. Default: every row is real.

    Returns
    -------
    torch.Tensor, shape () or (n,)
        Values in ``[1, min(T, d)]`` (float64).

    Raises
    ------
    ValueError
        If a response is empty (no real token) or its states are all zero.
    """
    import torch

    if not isinstance(hidden_states, torch.Tensor):
        raise TypeError(f"hidden_states must be a torch.Tensor; got {type(hidden_states).__name__}")
    if hidden_states.ndim not in (2, 3):
        raise ValueError(f"hidden_states must have shape (T, d) or (n, T, d); got {tuple(hidden_states.shape)}")
    check_tensor("hidden_states", hidden_states, floating=True)  # finite before the SVD
    single = hidden_states.ndim == 2
    h = hidden_states.detach().to(torch.float64)
    if single:
        h = h[None]
    if h.shape[1] == 0:
        raise ValueError("hidden_states: the response is empty (T = 0)")
    if mask is not None:
        m = torch.as_tensor(mask, dtype=torch.bool)
        if single and m.ndim == 1:
            m = m[None]
        if m.shape != h.shape[:2]:
            raise ValueError(f"mask must have shape {tuple(h.shape[:2])}; got {tuple(m.shape)}")
        if not bool(m.any(1).all()):
            raise ValueError("mask: a response is empty (no real token)")
        h = h * m[..., None]
    if not bool((h.abs().sum((1, 2)) > 0).all()):
        raise ValueError("hidden_states: a response's states are all zero (stable rank undefined)")
    out = stable_rank(h)
    return out[0] if single else out


def response_hidden_states(model: Any, prompt_ids: Any, response_ids: Any) -> Any:
    """Final-layer hidden states (after the last norm) of the response tokens: shape (n, T, d).

    ``prompt_ids`` (n, P) and ``response_ids`` (n, T) are concatenated and run through ``model.base_model``
    without gradients; the states at the response's positions are returned.
    """
    import torch

    if prompt_ids.ndim != 2 or response_ids.ndim != 2 or prompt_ids.shape[0] != response_ids.shape[0]:
        raise ValueError(
            f"prompt_ids (n, P) and response_ids (n, T) must share n; got {tuple(prompt_ids.shape)}, "
            f"{tuple(response_ids.shape)}"
        )
    if response_ids.shape[1] == 0:
        raise ValueError("response_ids: the responses are empty (T = 0)")
    with torch.no_grad():
        out = model.base_model(input_ids=torch.cat([prompt_ids, response_ids], 1))
    return out.last_hidden_state[:, prompt_ids.shape[1] :, :]


class StableRankReward:
    r"""The stable-rank reward in TRL's reward-function signature, and in that of geode's GRPO trainers.

    ``reward(prompts=..., completions=..., completion_ids=..., **kwargs) -> list[float]``, as
    ``trl.GRPOTrainer(reward_funcs=[reward])`` calls it: each completion's stable rank under ``evaluator``
    (a frozen model: the paper keeps the reference model frozen), over the completion's tokens only.

    Called with tensors, ``reward(prompt_ids, response_ids, mask) -> torch.Tensor (n,)`` is the
    ``reward_fn`` of :class:`~geode.llm.grpo.CompactGRPO` and :class:`~geode.llm.cpa.LowPrecisionGRPO`
    (batched: one forward for all responses; see :meth:`scores`), so ``CompactGRPO(policy,
    StableRankReward(frozen_copy))`` is SR-GRPO.

    Parameters
    ----------
    evaluator : transformers causal LM
        The frozen model whose final hidden states are measured (its parameters are set to not require grad).
    tokenizer : callable or Hugging Face tokenizer, optional
        Encodes the prompt strings (and completions when ``completion_ids`` is not given). Not needed when
        ``prompts`` are token-id lists.
    eos_token_id : int, optional
        Tokens after the first EOS of a completion are ignored.
    """

    __name__ = "stable_rank_reward"  # TRL names reward columns after __name__

    def __init__(self, evaluator: Any, tokenizer: Any = None, *, eos_token_id: int | None = None) -> None:
        if not hasattr(evaluator, "base_model"):
            raise TypeError("evaluator must be a Hugging Face causal LM (with .base_model)")
        self.evaluator = evaluator.eval()
        for p in self.evaluator.parameters():
            p.requires_grad_(False)
        self.tokenizer = tokenizer
        self.eos_token_id = eos_token_id

    def _encode(self, x: Any) -> list[int]:
        if isinstance(x, str):
            if self.tokenizer is None:
                raise ValueError("prompts/completions are strings: pass a tokenizer to StableRankReward")
            enc = self.tokenizer(x, add_special_tokens=False) if hasattr(self.tokenizer, "pad") else self.tokenizer(x)
            ids = enc["input_ids"] if isinstance(enc, dict) or hasattr(enc, "keys") else enc
            return [int(i) for i in ids]
        if isinstance(x, list) and x and isinstance(x[0], dict):  # conversational: take the contents
            return self._encode("".join(str(m.get("content", "")) for m in x))
        return [int(i) for i in x]

    def scores(self, prompt_ids: Any, response_ids: Any, mask: Any = None) -> Any:
        """Stable ranks of a batch of responses ``(n, T)`` to prompts ``(n, P)``, one forward: a tensor (n,).

        ``mask`` (n, T) marks the response tokens (as :func:`~geode.llm.grpo.sample_responses` returns it);
        default: every token up to and including the first ``eos_token_id`` (every token without one).
        """
        import torch

        if not (isinstance(prompt_ids, torch.Tensor) and isinstance(response_ids, torch.Tensor)):
            raise TypeError("prompt_ids and response_ids must be token-id tensors of shape (n, P) and (n, T)")
        if mask is None:
            if self.eos_token_id is None:
                mask = torch.ones_like(response_ids, dtype=torch.bool)
            else:
                seen = (response_ids == self.eos_token_id).long().cumsum(1)
                mask = (seen == 0) | ((seen == 1) & (response_ids == self.eos_token_id))
        mask = torch.as_tensor(mask, dtype=torch.bool)
        if mask.shape != response_ids.shape:
            raise ValueError(
                f"mask must have the shape of response_ids {tuple(response_ids.shape)}; got {tuple(mask.shape)}"
            )
        return response_stable_rank(response_hidden_states(self.evaluator, prompt_ids, response_ids), mask)

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], completion_ids: Sequence[Any] | None = None, **_: Any
    ) -> Any:
        import torch

        if isinstance(prompts, torch.Tensor) and isinstance(completions, torch.Tensor):
            # geode's trainers call reward_fn(prompt_ids, response_ids, mask): the third argument is the mask
            return self.scores(prompts, completions, completion_ids)
        if len(prompts) != len(completions):
            raise ValueError(
                f"prompts and completions must have the same length; got {len(prompts)}, {len(completions)}"
            )
        comp = completion_ids if completion_ids is not None else completions
        out: list[float] = []
        for p, c in zip(prompts, comp):
            pid, cid = self._encode(p), self._encode(c)
            if self.eos_token_id is not None and self.eos_token_id in cid:
                cid = cid[: cid.index(self.eos_token_id) + 1]
            if not cid:
                raise ValueError("completions: an empty completion has no stable rank")
            h = response_hidden_states(self.evaluator, torch.tensor([pid]), torch.tensor([cid]))
            out.append(float(response_stable_rank(h[0])))
        return out


def best_of_n(scores: Any, n: int) -> Any:
    """Index (0 .. n-1) of the highest-scoring of each group of ``n`` consecutive candidates.

    Parameters
    ----------
    scores : array_like, shape (m * n,)
        Candidates grouped by prompt: candidates ``i * n .. i * n + n - 1`` answer prompt ``i`` (any shape holding
        ``m * n`` values is flattened).
    n : int
        Candidates per prompt (>= 1).

    Returns
    -------
    numpy.ndarray of int, shape (m,)
        Ties go to the first candidate.
    """
    import numpy as np

    n = check_int("n", n, low=1)
    s = check_array("scores", scores.detach().cpu() if hasattr(scores, "detach") else scores, finite=False).ravel()
    if s.size == 0 or s.size % n:
        raise ValueError(f"scores must hold a non-zero multiple of n={n} values; got {s.size}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    return s.reshape(-1, n).argmax(1)
