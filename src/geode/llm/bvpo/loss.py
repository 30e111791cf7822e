r"""BVPO's composite preference-gradient estimator as pure functions on log-probabilities, and a small DPO trainer.

DPO's loss on a preference pair :math:`(x, y^+, y^-)` with sequence log-probabilities :math:`\log\pi` under the
policy and :math:`\log\pi_\text{ref}` under the frozen reference is

.. math::

    \ell(\theta) = -\log\sigma\Big(\beta\big[(\log\pi(s^+|x) - \log\pi_\text{ref}(s^+|x))
                   - (\log\pi(s^-|x) - \log\pi_\text{ref}(s^-|x))\big]\Big).

For a reasoning model the *trace-based* estimator scores :math:`s^\pm = (r^\pm, y^\pm)` with reasoning traces
:math:`r^\pm` sampled from the policy (:math:`\ell_t`); the *empty-trace* estimator scores
:math:`s^\pm = (\varnothing, y^\pm)` with reasoning disabled on a separately sampled branch (:math:`\ell_e`).
BVPO (Zhu et al., arXiv 2510.05095) trains on the composite

.. math::

    L_\alpha = \alpha\, \ell_t + (1 - \alpha)\, \ell_e, \qquad g_\alpha = \alpha\, g_t + (1 - \alpha)\, g_e .

With the prompt and answers fixed, :math:`g_e` does not depend on the trace randomness, so the trace-noise
variance of :math:`g_\alpha` is :math:`\alpha^2 \operatorname{tr}\operatorname{Cov}(g_t)`. Taking
:math:`\bar g = \mathbb{E}[g_t]` as the target, the conditional MSE
:math:`\alpha^2 V + (1-\alpha)^2 \|b\|^2` (:math:`V = \operatorname{tr}\operatorname{Cov}(g_t)`,
:math:`b = g_e - \bar g`) is minimised by

.. math::

    \alpha^\star = \frac{\|b\|^2}{\|b\|^2 + V}.
"""

from __future__ import annotations

from typing import Any

from geode.core.validation import check_array, check_real
from geode.llm.preference import dpo_loss, dpo_loss_named, sequence_logprobs

__all__ = ["bvpo_loss", "dpo_loss", "mse_optimal_alpha", "sequence_logprobs"]


def bvpo_loss(
    trace_chosen: Any,
    trace_rejected: Any,
    ref_trace_chosen: Any,
    ref_trace_rejected: Any,
    empty_chosen: Any,
    empty_rejected: Any,
    ref_empty_chosen: Any,
    ref_empty_rejected: Any,
    *,
    alpha: float,
    beta: float = 0.1,
) -> Any:
    r"""BVPO's composite loss :math:`\alpha\,\ell_t + (1-\alpha)\,\ell_e` (its gradient is the composite estimator).

    The first four arguments are the trace branch's sequence log-probabilities (trace and answer tokens), the
    last four the empty-trace branch's (its own pairs: the branch is sampled separately). ``alpha`` in [0, 1]:
    1 is trace-based DPO, 0 empty-trace DPO. A branch with weight 0 is not evaluated (its tensors may be None).
    """
    alpha = check_real("alpha", alpha, low=0.0, high=1.0)
    out = 0.0
    if alpha > 0:
        out = out + alpha * dpo_loss_named(
            (trace_chosen, trace_rejected, ref_trace_chosen, ref_trace_rejected),
            ("trace_chosen", "trace_rejected", "ref_trace_chosen", "ref_trace_rejected"),
            beta=beta,
        )
    if alpha < 1:
        out = out + (1 - alpha) * dpo_loss_named(
            (empty_chosen, empty_rejected, ref_empty_chosen, ref_empty_rejected),
            ("empty_chosen", "empty_rejected", "ref_empty_chosen", "ref_empty_rejected"),
            beta=beta,
        )
    return out


def mse_optimal_alpha(trace_grads: Any, empty_grad: Any) -> tuple[float, dict[str, float]]:
    r"""The conditional MSE-optimal mixture weight :math:`\alpha^\star = \|b\|^2 / (\|b\|^2 + V)`.

    Parameters
    ----------
    trace_grads : array_like, shape (K, p)
        ``K >= 2`` trace-based gradients for the same prompts and answers, each from fresh traces.
    empty_grad : array_like, shape (p,)
        The empty-trace gradient for the same prompts and answers.

    Returns
    -------
    alpha : float in [0, 1]
    info : dict
        ``variance`` :math:`V = \operatorname{tr}\operatorname{Cov}(g_t)` (unbiased), ``bias_sq`` the unbiased
        estimate :math:`\|\bar g_t - g_e\|^2 - V/K` clipped at 0, and ``K``.
    """
    import numpy as np

    g = check_array(
        "trace_grads", trace_grads.detach().cpu() if hasattr(trace_grads, "detach") else trace_grads, finite=False
    )
    e = check_array(
        "empty_grad", empty_grad.detach().cpu() if hasattr(empty_grad, "detach") else empty_grad, finite=False
    )
    if g.ndim != 2 or g.shape[0] < 2:
        raise ValueError(f"trace_grads must have shape (K, p) with K >= 2; got {g.shape}")
    if e.shape != g.shape[1:]:
        raise ValueError(f"empty_grad must have shape {g.shape[1:]}; got {e.shape}")
    if not (np.all(np.isfinite(g)) and np.all(np.isfinite(e))):
        raise ValueError("trace_grads and empty_grad must be finite")
    k = g.shape[0]
    mean = g.mean(0)
    v = float(((g - mean) ** 2).sum(1).sum() / (k - 1))
    b2 = max(float(((mean - e) ** 2).sum()) - v / k, 0.0)
    alpha = b2 / (b2 + v) if b2 + v > 0 else 1.0
    return alpha, {"variance": v, "bias_sq": b2, "K": float(k)}
