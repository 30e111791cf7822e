r"""ADA: adversarial distribution alignment to experimental observables (slug ``ada``).

Paper: Nelson, Kreiman, Levine, Krishnapriyan, "Bridging the Simulation-to-Experiment Gap with Generative Models
using Adversarial Distribution Alignment", arXiv 2604.01169 (code not public). A flow pre-trained on simulation
is aligned to unpaired experimental samples of several observables: one discriminator per observable supplies
the log density-ratio reward, a KL term keeps the model close to the base.

**Components** (:mod:`geode.generative.ada.alignment`): :class:`RealNVP`, :func:`fit_flow`,
:class:`ObservableDiscriminator`, :class:`ADA`, baselines :class:`MomentMatching` and :func:`maxent_reweight`;
the toy system :class:`DoubleWell` and :func:`toy_observables` (:mod:`geode.generative.ada.toy`). The set-up,
floors and controls of the claim check are in :mod:`.claim`.

**What the check found (quick mode, 3 seeds):** pending.
"""

from __future__ import annotations

from geode.generative.ada.alignment import (
    ADA,
    MomentMatching,
    ObservableDiscriminator,
    RealNVP,
    fit_flow,
    maxent_reweight,
)
from geode.generative.ada.toy import DoubleWell, toy_observables

__all__ = [
    "ADA",
    "DoubleWell",
    "MomentMatching",
    "ObservableDiscriminator",
    "RealNVP",
    "fit_flow",
    "maxent_reweight",
    "toy_observables",
]
