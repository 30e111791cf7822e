"""Smallest Volume First and 1-bit SVF: scheduling policies for the serving simulator, and vLLM priorities."""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_choice, check_real
from geode.inference.serving import FCFS, SJF, Policy, as_lengths, priority_inputs, volume

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

    Parameters
    ----------
    aging : float, default 0
        Anti-starvation rate :math:`c \\ge 0` (slot-steps of volume per unit of waiting time; our addition,
        issue 18). A waiting request's effective priority falls linearly while it waits,
        :math:`\\hat V_i - c\\,(t - a_i)`; all requests age at the same rate, so the order at any time
        :math:`t` is the order of the static key :math:`\\hat V_i + c\\, a_i`, which is what the simulator
        (like vLLM's ``priority``) uses. :math:`c = 0` is SVF; as :math:`c \\to \\infty` the order becomes
        FCFS. A request of volume :math:`V` can be overtaken only by requests that arrived less than
        :math:`V / c` after it, which bounds its wait behind later arrivals.
    """

    name = "SVF"

    def __init__(self, aging: float = 0.0) -> None:
        self.aging = check_real("aging", aging, low=0.0)

    def priority(self, prompt: np.ndarray, predicted_output: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        prompt, predicted_output, arrival = priority_inputs(prompt, predicted_output, arrival)
        v = volume(prompt, predicted_output).astype(float)
        return v + self.aging * np.asarray(arrival, dtype=float) if self.aging > 0 else v

    def __repr__(self) -> str:
        return f"SVF(aging={self.aging!r})" if self.aging > 0 else "SVF()"


class OneBitSVF(Policy):
    """1-bit SVF: one bit per request (long or short); two readings of what the bit is and how it orders.

    ``variant="volume"`` (ours, the default; the claim of issue 04 uses it): the bit is the predicted
    volume above a threshold, short first, FCFS within a class,

    .. math::

        b_i = [\\hat V_i > \\theta], \\qquad \\text{priority}_i = b_i \\quad (\\text{ties by arrival}).

    ``variant="paper"`` (the paper's reading, as issue 18 describes it): the bit classifies the *output
    length*, :math:`b_i = [\\hat o_i > \\theta_o]`, and requests are ordered by a proxy volume that still
    uses the known prompt length, with the class's representative output length :math:`\\tilde o_b` (the
    median predicted output length of the class) in place of :math:`\\hat o_i`:

    .. math::

        \\text{priority}_i = s_i \\tilde o_{b_i} + \\frac{\\tilde o_{b_i}(\\tilde o_{b_i} + 1)}{2}.

    Parameters
    ----------
    threshold : float, optional
        :math:`\\theta` (a volume in slot-steps, ``"volume"``) or :math:`\\theta_o` (tokens, ``"paper"``)
        above which a request is "long". If omitted, the ``quantile`` of the predicted volumes (or output
        lengths) of the requests being scheduled (an offline calibration: in deployment the bit would come
        from a classifier trained at that cut).
    quantile : float
        Quantile used when ``threshold`` is omitted, in (0, 1); default 0.5 (the median).
    variant : {"volume", "paper"}
        Which reading (see above).

    Notes
    -----
    The abstract says only that 1-bit SVF uses "a single bit" of information. The representative output
    length of a class (its median) in the paper variant is our inference.
    """

    name = "1-bit SVF"

    def __init__(self, threshold: float | None = None, quantile: float = 0.5, variant: str = "volume") -> None:
        self.threshold = None if threshold is None else check_real("threshold", threshold, low=0.0)
        self.quantile = check_real("quantile", quantile, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        self.variant = check_choice("variant", variant, ("volume", "paper"))

    def bits(self, prompt: Any, predicted_output: Any) -> np.ndarray:
        """The bit of each request: 1 for a long request, 0 for a short one (by volume or output length)."""
        v = volume(prompt, predicted_output)
        if self.variant == "paper":
            v = as_lengths("predicted_output", np.atleast_1d(predicted_output), low=1)
        theta = self.threshold if self.threshold is not None else float(np.quantile(v, self.quantile))
        return (v > theta).astype(np.int64)

    def priority(self, prompt: np.ndarray, predicted_output: np.ndarray, arrival: np.ndarray) -> np.ndarray:
        prompt, predicted_output, arrival = priority_inputs(prompt, predicted_output, arrival)
        b = self.bits(prompt, predicted_output)
        if self.variant == "volume":
            return b.astype(float)
        o = np.asarray(predicted_output, dtype=np.int64)
        proxy = np.empty_like(o)
        for k in (0, 1):
            if np.any(b == k):
                proxy[b == k] = max(1, int(round(float(np.median(o[b == k])))))
        return volume(prompt, proxy).astype(float)

    def __repr__(self) -> str:
        extra = ", variant='paper'" if self.variant == "paper" else ""
        return f"OneBitSVF(threshold={self.threshold!r}, quantile={self.quantile!r}{extra})"


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
        if policy.aging > 0:
            raise ValueError("an aging SVF needs arrival times: use round(SVF.priority(...)) as the priority")
        return volume(s, o).tolist()
    if isinstance(policy, OneBitSVF):
        if policy.variant == "paper":
            return [int(v) for v in policy.priority(s, o, np.zeros(s.shape[0]))]
        return policy.bits(s, o).tolist()
    if isinstance(policy, SJF):
        return o.tolist()
    if isinstance(policy, FCFS):
        return [0] * int(s.shape[0])  # vLLM breaks ties by arrival time: FCFS
    raise TypeError(f"policy must be 'svf', '1bit-svf', 'sjf', 'fcfs' or one of those policies; got {policy!r}")
