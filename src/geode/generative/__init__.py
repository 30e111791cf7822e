r"""Generative modelling: flow matching and diffusion papers.

The paper folders live below (``geode.generative.fm_tube_lipschitz``); each re-exports its public names here.

Papers and their names
----------------------
``ada`` (:mod:`geode.generative.ada`): ``from geode.generative import ADA, DoubleWell, MomentMatching,
ObservableDiscriminator, RealNVP, ZukoFlow, fit_flow, maxent_reweight, toy_observables``

- ``ADA``: adversarial distribution alignment of a pre-trained flow to experimental observable samples.
- ``ZukoFlow``: a zuko flow behind geode's flow interface; ``ZukoFlow.wrap(flow)`` wraps one you trained.
- ``RealNVP``: geode's small affine-coupling flow; ``fit_flow``: maximum-likelihood fit of either.
- ``ObservableDiscriminator``: the per-observable discriminator (its logit is the reward).
- ``MomentMatching``, ``maxent_reweight``: the baselines (moment fine-tuning, MaxEnt reweighting).
- ``DoubleWell``, ``toy_observables``: the claim's toy system and its two observables.

``camel`` (:mod:`geode.generative.camel`): ``from geode.generative import CAMEL, Autoencoder, ConditionalDDPM,
appraiser_reward, fit_autoencoder``

- ``CAMEL``: optimises the creator's class-embedding offset for the appraiser's learning progress.
- ``ConditionalDDPM``: the frozen class-conditional creator (MLP DDPM with a differentiable DDIM sampler).
- ``Autoencoder``, ``fit_autoencoder``: the appraiser and its pre-training.
- ``appraiser_reward``: the reward, the appraiser's improvement after K inner SGD steps.

``fm-tube-lipschitz`` (:mod:`geode.generative.fm_tube_lipschitz`): ``from geode.generative import Circle,
EmbeddedManifold, GaussianSmoothedManifold, Sphere, Torus, ambient_jacobian_bound, fit_loglog_slope,
tangent_normal_blocks``

- ``GaussianSmoothedManifold``: the exact population flow-matching velocity and Jacobian of a noisy manifold.
- ``Circle``, ``Sphere``, ``Torus``: manifolds embedded (rotated) in :math:`\mathbb R^D`; ``EmbeddedManifold``:
  their base class.
- ``tangent_normal_blocks``: tangent, normal and coupling blocks of any Jacobians (yours too).
- ``ambient_jacobian_bound``: the ambient (isotropic) bound the paper improves on.
- ``fit_loglog_slope``: the log-log slope of a quantity against :math:`\sigma`.
"""

from __future__ import annotations

from geode.generative import ada as _ada
from geode.generative import camel as _camel
from geode.generative import fm_tube_lipschitz as _fm_tube_lipschitz
from geode.generative.ada import *  # noqa: F403
from geode.generative.camel import *  # noqa: F403
from geode.generative.fm_tube_lipschitz import *  # noqa: F403

__all__: list[str] = []
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_ada.__all__, *_camel.__all__, *_fm_tube_lipschitz.__all__]
