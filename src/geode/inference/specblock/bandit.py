r"""SpecBlock's cost-aware bandit for deployment-time drafter updates (inferred: not in the authors' release).

Verification labels every drafted position for free (the target's token is known along the accepted path
and at the first rejection). At the end of a window of requests the bandit decides whether to spend an
update on the drafter, choosing among arms (``"none"``, ``"rank_head"``, ``"last_layer"``, ...). For arm
:math:`a` it keeps the mean observed saving :math:`\hat g_a` in modeled cost per generated token,

.. math::

    g = \frac{1}{S_{\text{before}}} - \frac{1}{S_{\text{after}}},

with :math:`S` the modeled speed-up of the window before and after the update, and an optimistic bound
:math:`\hat g_a + \beta \sigma / \sqrt{n_a}` (an untried arm gets the prior ``prior_gain``). It updates
only when the expected throughput gain exceeds the update's cost:

.. math::

    a^\star = \arg\max_a \Big( \mathrm{UCB}_a \cdot T_{\text{remaining}} - C_a \Big), \qquad
    \text{update iff } \mathrm{UCB}_{a^\star} T_{\text{remaining}} > C_{a^\star},

with :math:`C_a` the update's cost in target-forward units and :math:`T_{\text{remaining}}` the tokens still
to be generated. Inferred details (the paper only names the rule): the UCB form, the prior, :math:`\beta`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from geode.core.validation import check_real

__all__ = ["CostAwareBandit"]


class CostAwareBandit:
    """Choose a drafter update (or none) when its expected saving over the remaining tokens beats its cost.

    Parameters
    ----------
    costs : dict of str to float
        Update cost of each arm in target-forward units (>= 0); the arm ``"none"`` (cost 0, no update) is
        always present.
    prior_gain : float
        Optimistic saving per token assumed for an untried arm.
    beta : float
        Width of the optimistic bound.
    noise : float
        Scale :math:`\\sigma` of one observed saving (cost per token).
    """

    def __init__(
        self, costs: Mapping[str, float], *, prior_gain: float = 0.01, beta: float = 1.0, noise: float = 0.01
    ) -> None:
        if not costs:
            raise ValueError("costs: need at least one update arm")
        self.costs = {"none": 0.0}
        for arm, c in costs.items():
            if arm == "none":
                continue
            self.costs[str(arm)] = check_real(f"costs[{arm!r}]", c, low=0.0)
        self.prior_gain = check_real("prior_gain", prior_gain, low=0.0)
        self.beta = check_real("beta", beta, low=0.0)
        self.noise = check_real("noise", noise, low=0.0)
        self.sums = {a: 0.0 for a in self.costs}
        self.counts = {a: 0 for a in self.costs}
        self.history: list[tuple[str, float]] = []

    def ucb(self, arm: str) -> float:
        """Optimistic saving per token of ``arm`` (0 for ``"none"``)."""
        if arm == "none":
            return 0.0
        n = self.counts[arm]
        if n == 0:
            return self.prior_gain
        return self.sums[arm] / n + self.beta * self.noise / np.sqrt(n)

    def select(self, remaining_tokens: float) -> str:
        """The arm to play now: the best net expected value, ``"none"`` when no update pays for itself."""
        remaining = check_real("remaining_tokens", remaining_tokens, low=0.0)
        values = {a: self.ucb(a) * remaining - c for a, c in self.costs.items()}
        best = max(values, key=lambda a: (values[a], a == "none"))
        return best if values[best] > 0 else "none"

    def update(self, arm: str, saving_per_token: float) -> None:
        """Record the observed saving (cost per token, may be negative) after playing ``arm``."""
        if arm not in self.costs:
            raise ValueError(f"arm: unknown arm {arm!r}; known: {sorted(self.costs)}")
        g = check_real("saving_per_token", saving_per_token)
        self.sums[arm] += g
        self.counts[arm] += 1
        self.history.append((arm, g))
