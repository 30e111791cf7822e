r"""CAMEL: creator-appraiser meta-learning for creativity (slug ``camel``).

Paper: Mengye Ren, "Seeking the Unfamiliar but Memorable: Conceptual Creativity as Meta-Learning", arXiv
2605.16477 (no public code). A frozen diffusion Creator is steered so that an adaptive Appraiser finds its outputs
unfamiliar at first yet quickly learnable; the Appraiser's improvement after a brief inner adaptation is the reward.

**Components** (:mod:`geode.generative.camel.creativity`): :class:`ConditionalDDPM`, :class:`Autoencoder`,
:func:`fit_autoencoder`, :func:`appraiser_reward`, :class:`CAMEL`. Set-up, floors and controls: :mod:`.claim`.
"""

from __future__ import annotations

from geode.generative.camel.creativity import CAMEL, Autoencoder, ConditionalDDPM, appraiser_reward, fit_autoencoder

__all__ = ["CAMEL", "Autoencoder", "ConditionalDDPM", "appraiser_reward", "fit_autoencoder"]
