"""SafeCut: cut-statistic-gated mutual correction between a target model and a partner model.

Each round, both models' pseudo-labels are scored with the cut statistic in their own representation
(:func:`geode.ensembles.safecut.cut_statistic`; low :math:`Z` = reliable), and the relative reliability

.. math::

    r_i = \\sigma\\Bigl(\\frac{Z^T_i - Z^V_i}{\\tau}\\Bigr) \\in (0, 1)

sets the direction and strength of supervision on sample :math:`i`:

.. math::

    w^T_i = \\max(2 r_i - 1, 0) \\quad (V \\to T), \\qquad w^V_i = \\max(1 - 2 r_i, 0) \\quad (T \\to V).

When the partner's label is the more reliable one (:math:`Z^V_i < Z^T_i`) the target model is pulled towards
it, and the more so the larger the gap; in the other case the partner learns from the target model. With
equal reliabilities (:math:`Z^T_i = Z^V_i`, or :math:`\\tau \\to \\infty`) both weights vanish and each model
keeps its own label: SafeCut reduces to self-training. As :math:`\\tau \\to 0` the gate becomes hard (weight one
towards the more reliable model), the structure of confidence-gated exchange with :math:`Z` in place of
the max-probability. Training on the gated soft targets is :class:`geode.ensembles.MutualCorrection`'s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_int, check_real
from geode.ensembles.mutual import MutualCorrection, RoundState
from geode.ensembles.safecut.cutstat import cut_statistic

__all__ = ["SafeCut", "SafeCutGate"]


class SafeCutGate:
    """The reliability gate :math:`r = \\sigma((Z^T - Z^V)/\\tau)`, :math:`w^T = (2r-1)_+`, :math:`w^V = (1-2r)_+`.

    Parameters
    ----------
    tau : float
        Temperature :math:`\\tau > 0` of the gate; ``math.inf`` turns every weight off, ``0`` is not allowed
        (use a small value for a hard gate).

    Examples
    --------
    >>> w_t, w_v = SafeCutGate(tau=1.0).weights([2.0, -1.0, 0.0], [-1.0, 2.0, 0.0])
    >>> np.round(w_t, 3).tolist(), np.round(w_v, 3).tolist()
    ([0.905, 0.0, 0.0], [0.0, 0.905, 0.0])
    """

    def __init__(self, tau: float = 1.0) -> None:
        if isinstance(tau, (int, float)) and not isinstance(tau, bool) and tau == math.inf:
            self.tau = math.inf
        else:
            self.tau = check_real("tau", tau, low=0.0, low_inclusive=False)

    def relative_reliability(self, z_t: Any, z_v: Any) -> np.ndarray:
        """:math:`r_i = \\sigma((Z^T_i - Z^V_i)/\\tau)`: above one half when the partner is the more reliable."""
        zt = check_array("z_t", z_t, ndim=1)
        zv = check_array("z_v", z_v, shape=(zt.shape[0],))
        if self.tau == math.inf:
            return np.full(zt.shape[0], 0.5)
        u = (zt - zv) / self.tau
        return 0.5 * (1.0 + np.tanh(0.5 * u))  # the logistic sigmoid, overflow-free

    def weights(self, z_t: Any, z_v: Any) -> tuple[np.ndarray, np.ndarray]:
        """Per-sample weights :math:`(w^T, w^V)`: V -> T and T -> V supervision strengths, at most one non-zero."""
        r = self.relative_reliability(z_t, z_v)
        return np.maximum(2.0 * r - 1.0, 0.0), np.maximum(1.0 - 2.0 * r, 0.0)


class SafeCut(MutualCorrection):
    """SafeCut mutual correction: :class:`MutualCorrection` with the cut-statistic reliability gate.

    Parameters
    ----------
    k : int
        Neighbours of the kNN graphs of the cut statistic (default 20).
    tau : float
        Gate temperature (:class:`SafeCutGate`).
    rounds, epochs, lr, batch_size, im_weight, weight_decay, seed
        As in :class:`geode.ensembles.MutualCorrection`.

    Notes
    -----
    Each model's cut statistic is computed on its own representation (``model.embed(x)``, else its logits)
    with its own pseudo-labels. Examples of use are in ``geode.ensembles.safecut.experiment``.
    """

    def __init__(
        self,
        *,
        k: int = 20,
        tau: float = 1.0,
        rounds: int = 5,
        epochs: int = 5,
        lr: float = 1e-3,
        batch_size: int = 128,
        im_weight: float = 0.0,
        weight_decay: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__(
            "naive",
            rounds=rounds,
            epochs=epochs,
            lr=lr,
            batch_size=batch_size,
            im_weight=im_weight,
            weight_decay=weight_decay,
            seed=seed,
        )
        self.scheme = "safecut"
        self.k = check_int("k", k, low=1)
        self.gate_ = SafeCutGate(tau)
        self.last_z_: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def trains_partner(self) -> bool:
        return True

    def gate(self, state: RoundState) -> tuple[np.ndarray, np.ndarray]:
        """Cut statistics of both models' pseudo-labels, then :meth:`SafeCutGate.weights`."""
        c = state.probs_t.shape[1]
        z_t = cut_statistic(state.feats_t, state.labels_t, self.k, n_classes=c)
        z_v = cut_statistic(state.feats_v, state.labels_v, self.k, n_classes=c)
        self.last_z_ = (z_t, z_v)
        return self.gate_.weights(z_t, z_v)
