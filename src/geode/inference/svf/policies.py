"""Smallest Volume First and 1-bit SVF: scheduling policies for the serving simulator, and vLLM priorities."""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_choice, check_real
from geode.inference.serving import FCFS, SJF, Policy, as_lengths, volume

__all__ = ["SVF", "OneBitSVF", "vllm_priority"]


class SVF(Policy):
    """Smallest Volume First: serve the request whose KV-cache volume is smallest.

    .. math::

        \\text{priority}_i = \\hat V_i = s_i \\hat o_i + \\frac{\\hat o_i(\\hat o_i + 1)}{2},

    the area under the request's memory curve (it holds :math:`s_i + j` slots while decoding token
    :math:`j`), computed from the predicted output length :math:`\\hat o_i` (exact when lengths are
    known). Admission uses the simulator's future-peak check, as in MC-SF; only the order differs.
    Since :math:`\\hat V` is strictly increasing in :math:`\\hat o` for a fixed prompt, SVF orders requests
    exactly as SJF when all prompts have the same length.
    """

    name = "SVF"

    def priority(self, prompt: np.ndarray, predicted_output: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        return volume(prompt, predicted_output).astype(float)


class OneBitSVF(Policy):
    """1-bit SVF: one bit per request (long or short volume); short first, FCFS within a class.

    .. math::

        b_i = [\\hat V_i > \\theta], \\qquad \\text{priority}_i = b_i

    with ties broken by arrival (first come, first served inside a class).

    Parameters
    ----------
    threshold : float, optional
        The volume :math:`\\theta` (slot-steps) above which a request is "long". If omitted,
        :math:`\\theta` is the ``quantile`` of the predicted volumes of the requests being scheduled (an
        offline calibration: in deployment the bit would come from a classifier trained at that cut).
    quantile : float
        Quantile used when ``threshold`` is omitted, in (0, 1); default 0.5 (the median).

    Notes
    -----
    The paper says only that 1-bit SVF uses "a single bit" of information. We infer the bit to be
    "predicted volume above a threshold" and the within-class order to be FCFS.
    """

    name = "1-bit SVF"

    def __init__(self, threshold: float | None = None, quantile: float = 0.5) -> None:
        self.threshold = None if threshold is None else check_real("threshold", threshold, low=0.0)
        self.quantile = check_real("quantile", quantile, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)

    def bits(self, prompt: Any, predicted_output: Any) -> np.ndarray:
        """The bit of each request: 1 for a long (large-volume) request, 0 for a short one."""
        v = volume(prompt, predicted_output)
        theta = self.threshold if self.threshold is not None else float(np.quantile(v, self.quantile))
        return (v > theta).astype(np.int64)

    def priority(self, prompt: np.ndarray, predicted_output: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        return self.bits(prompt, predicted_output).astype(float)

    def __repr__(self) -> str:
        return f"OneBitSVF(threshold={self.threshold!r}, quantile={self.quantile!r})"


def vllm_priority(policy: str | Policy, prompt_tokens: Any, predicted_output_tokens: Any) -> list[int]:
    """vLLM ``priority`` values that make vLLM's priority scheduler follow SVF or 1-bit SVF.

    vLLM (``scheduling_policy="priority"``) keeps waiting requests in a heap on
    ``(request.priority, arrival_time)`` -- lower first -- and preempts the running request with the
    largest such pair. Setting ``priority`` to the integer volume :math:`s\\hat o + \\hat o(\\hat o+1)/2`
    reproduces SVF's order and victims; setting it to the bit reproduces 1-bit SVF (FCFS inside a class
    comes from vLLM's arrival-time tie-break). No vLLM install is needed to compute them::

        from vllm import LLM, SamplingParams
        llm = LLM(model, scheduling_policy="priority")
        prio = vllm_priority("svf", [len(p) for p in prompt_ids], predicted_lengths)
        llm.generate(prompts, SamplingParams(max_tokens=512), priority=prio)

    vLLM's admission is greedy (it allocates blocks for the current step and preempts later), so only
    the order, not MC-SF's future-peak check, carries over.

    Parameters
    ----------
    policy : {"svf", "1bit-svf", "sjf", "fcfs"} or Policy
        The policy (a :class:`OneBitSVF` instance keeps its threshold).
    prompt_tokens : array_like of int, shape (n,)
        Prompt lengths.
    predicted_output_tokens : array_like of int, shape (n,)
        Predicted (or known) output lengths, >= 1.

    Returns
    -------
    list of int
        One priority per request.

    Examples
    --------
    >>> vllm_priority("svf", [10, 0], [2, 4])
    [23, 10]
    >>> vllm_priority(OneBitSVF(threshold=15), [10, 0], [2, 4])
    [1, 0]
    """
    s = as_lengths("prompt_tokens", np.atleast_1d(prompt_tokens), low=0)
    o = as_lengths("predicted_output_tokens", np.atleast_1d(predicted_output_tokens), low=1)
    if s.shape != o.shape:
        raise ValueError(
            f"prompt_tokens and predicted_output_tokens must have the same length; got {s.shape[0]} and {o.shape[0]}"
        )
    if isinstance(policy, str):
        name = check_choice("policy", policy.lower(), ("svf", "1bit-svf", "sjf", "fcfs"))
        policy = {"svf": SVF, "1bit-svf": OneBitSVF, "sjf": SJF, "fcfs": FCFS}[name]()
    if isinstance(policy, SVF):
        return volume(s, o).tolist()
    if isinstance(policy, OneBitSVF):
        return policy.bits(s, o).tolist()
    if isinstance(policy, SJF):
        return o.tolist()
    if isinstance(policy, FCFS):
        return [0] * int(s.shape[0])  # vLLM breaks ties by arrival time: FCFS
    raise TypeError(f"policy must be 'svf', '1bit-svf', 'sjf', 'fcfs' or one of those policies; got {policy!r}")
