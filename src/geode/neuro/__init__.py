"""Spiking and computational neuroscience: exact single-spike LIF layers and the field's shared tools.

The paper folders live below (``geode.neuro.causal_pieces``; ``geode.neuro.lfp_geossl``, geometry-aware
self-supervised learning for LFP electrode localisation with its synthetic probe generator); what several of
them can reuse sits here: the exact event-based nLIF layer, its network container, latency coding, the
first-spike loss and accuracy, and a time-stepped Euler simulation that cross-checks the closed form.
"""

from __future__ import annotations

from geode.neuro import causal_pieces as _causal_pieces
from geode.neuro import lfp_geossl as _lfp_geossl
from geode.neuro.causal_pieces import *  # noqa: F403
from geode.neuro.lfp_geossl import *  # noqa: F403
from geode.neuro.lif import (
    NLIFLayer,
    NLIFNetwork,
    first_spike_accuracy,
    first_spike_loss,
    latency_encode,
    nlif_spike_times,
    simulate_lif_euler,
    weight_sum_penalty,
)

__all__ = [
    "NLIFLayer",
    "NLIFNetwork",
    "first_spike_accuracy",
    "first_spike_loss",
    "latency_encode",
    "nlif_spike_times",
    "simulate_lif_euler",
    "weight_sum_penalty",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_causal_pieces.__all__, *_lfp_geossl.__all__]
