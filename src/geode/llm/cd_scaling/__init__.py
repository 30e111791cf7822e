r"""Compute-Data (CD) scaling laws with token effectiveness.

Paper: "Compute-Data scaling laws" (NeurIPS 2026 collection, slug ``cd-scaling``; no public code, the
closest is ``huggingface/datablations``, Muennighoff et al. 2023, whose README formula
:func:`muennighoff_loss` reproduces).

**Claim (checked by** ``geode reproduce cd-scaling`` **).** The token effectiveness :math:`\eta` of derived
tokens (multi-epoch repetition, paraphrasing) fitted by the CD law is far from constant: it decreases with
repetition and with model size, saturates as the corpus is expanded, and paraphrasing beats repetition.

**Components.** :class:`CDScalingLaw` (fit, predict, ``eta``, ``effective_data``, ``marginal_effectiveness``,
``regime`` into compute-/data-/model-bound, ``optimal_allocation`` at fixed compute and unique data), the
baselines :class:`ChinchillaLaw` (every token fresh, or only unique tokens) and :class:`MuennighoffLaw`
(constant :math:`R^*` per strategy), the functions :func:`token_effectiveness`, :func:`effective_data`,
:func:`estimate_token_effectiveness` (non-parametric, from a fresh-data curve) and :func:`muennighoff_loss`;
the experiment driver in :mod:`geode.llm.cd_scaling.experiment`.

**Inferred.** The paper's abstract gives no formula: the form of :math:`\eta` (Muennighoff's saturating
exponential with :math:`R^*` a power law in :math:`N` and :math:`\rho = D/N`), the fitting recipe
(Hoffmann et al.'s Huber on log loss, multi-start L-BFGS-B), the regime rule (marginal effectiveness below
``tau = 0.1`` is model-bound), and the whole claim-check set-up (``claim.py``) are our choices.

**What the check found (quick mode, 3 seeds): inconclusive.** The CD law did not fit the CPU stand-in well
enough (RMS log-loss residual 0.24 against a floor of 0.1), so the fitted properties are reported, not
judged: effectiveness fell with repetition (0.97 -> 0.18-0.49 from R=1 to R=31), saturated (a repeated token
at 32 epochs worth <= 0.08 of a fresh one) and paraphrasing beat repetition (+0.28 to +0.63), each clear of
its negative control; the decrease with model size did not hold (95% bound -0.27). On held-out 32-epoch runs
the CD law extrapolated slightly better than Muennighoff's (error ratio 0.94, geometric mean). Details and
per-seed numbers: ``claim.py``.

Examples
--------
Fit the CD law and Chinchilla to training runs ``(N, D, U) -> loss`` (here generated from a known CD law:
3 model sizes x 2 unique-data sizes x 1, 2, 8 and 32 epochs) and read the token effectiveness.

>>> import numpy as np
>>> from geode.llm import CDScalingLaw, ChinchillaLaw, effective_data, token_effectiveness
>>> truth = CDScalingLaw().set_params(
...     e=0.5, a=6.0, alpha=0.35, b=7.0, beta=0.35, ref={"N": 1e7, "rho": 20.0},
...     **{"log_r0[repeat]": 2.5, "a_N[repeat]": 0.3, "b_rho[repeat]": 0.0})
>>> N = np.repeat([3e6, 1e7, 3e7], 8)  # parameters
>>> U = np.tile(np.repeat([2e8, 1e9], 4), 3)  # unique tokens
>>> D = U * np.tile([1, 2, 8, 32], 6)  # training tokens (epochs x U)
>>> loss = truth.predict(N, D, U)
>>> law = CDScalingLaw(n_starts=3).fit(N, D, U, loss)
>>> chinchilla = ChinchillaLaw(n_starts=3).fit(N, D, U, loss)  # every token counted as fresh
>>> bool(law.objective_ < chinchilla.objective_), bool(np.abs(law.predict(N, D, U) / loss - 1).max() < 0.05)
(True, True)
>>> eta = law.eta(1e7, [2e8, 4e8, 1.6e9, 6.4e9], 2e8)  # 1, 2, 8, 32 epochs of 2e8 unique tokens
>>> bool(eta[0] == 1.0 and np.all(np.diff(eta) < 0))  # a repeated token is worth less and less
True
>>> law.regime(1e7, [2e8, 6.4e9], 2e8).tolist()
['compute-bound', 'data-bound']

The closed forms: fresh data is fully effective, and repetition saturates at :math:`U(1 + R^*)`:

>>> float(token_effectiveness(1e9, 1e9, 5.0)), float(effective_data(1e12, 1e9, 5.0))
(1.0, 6000000000.0)
"""

from __future__ import annotations

from geode.llm.cd_scaling.law import (
    MUENNIGHOFF_C4,
    CDScalingLaw,
    ChinchillaLaw,
    MuennighoffLaw,
    effective_data,
    estimate_token_effectiveness,
    muennighoff_loss,
    token_effectiveness,
)

__all__ = [
    "MUENNIGHOFF_C4",
    "CDScalingLaw",
    "ChinchillaLaw",
    "MuennighoffLaw",
    "effective_data",
    "estimate_token_effectiveness",
    "muennighoff_loss",
    "token_effectiveness",
]
