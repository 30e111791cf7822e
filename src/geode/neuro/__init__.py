"""Spiking and computational neuroscience: exact single-spike LIF layers and the field's shared tools.

The paper folders live below (``geode.neuro.causal_pieces``; ``geode.neuro.lfp_geossl``, geometry-aware
self-supervised learning for LFP electrode localisation with its synthetic probe generator); what several of
them can reuse sits here: the exact event-based nLIF layer, its network container, latency coding, the
first-spike loss and accuracy, and a time-stepped Euler simulation that cross-checks the closed form.

Papers and their names
----------------------
Each paper's names are re-exported here; ``geode show <slug>`` prints the same with a runnable example.

``causal-pieces``: counting the subnetworks that cause a single-spike SNN's output spikes::

    from geode.neuro import (DECODE_T, INIT_GRID, InitConfig, ReleaseInit, ReleaseNet, causal_path_masks,
                             count_causal_pieces, rank_correlation, release_inits, run_init_study, train_release,
                             yinyang_raw, yinyang_spike_data)

- ``count_causal_pieces``: the number of distinct causal paths a network realises on some inputs
- ``causal_path_masks``: output spike times and each input's causal path, one mask per layer
- ``yinyang_spike_data``: Yin-Yang points as latency-coded input spike times, and labels
- ``run_init_study``: the paper's experiment (count pieces at init, train, correlate) on ``INIT_GRID``
- ``InitConfig``: one weight initialisation of that study; ``INIT_GRID`` its 16 configurations
- ``rank_correlation``: Spearman's rho and whether it is defined
- ``ReleaseNet``: the authors' release network (hidden nLIF layer, linear decoder on spike times)
- ``ReleaseInit``, ``release_inits``: the release's random initialisations
- ``train_release``: trains a ``ReleaseNet`` (Adam, firing-ability term, epoch chosen on validation)
- ``yinyang_raw``: Yin-Yang features used directly as spike times (the release's coding)
- ``DECODE_T``: hidden spike times above it enter the release's decoder as 0

``lfp-geossl``: geometry-aware self-supervised learning for LFP electrode localisation::

    from geode.neuro import (REGIONS, LFPEncoder, LFPSession, ProbeLayout, depth_profile, distance_preserving_loss,
                             geometry_contrastive_loss, masked_prediction_loss, simulate_session, welch_features)

- ``simulate_session``: a synthetic multichannel recording along a probe through a layered atlas
- ``LFPSession``: its result (windows, per-channel region and depth, the layout, the rate)
- ``ProbeLayout``: channel positions along a linear shank, ``ProbeLayout.linear(n, pitch)``
- ``REGIONS``: the atlas's six regions; ``depth_profile`` the source spectrum at a depth
- ``LFPEncoder``: a small wav2vec2-shaped encoder of single-channel windows
- ``geometry_contrastive_loss``: InfoNCE whose positives are nearby channels of the same probe and window
- ``distance_preserving_loss``: embedding distances matched to physical distances (the other reading)
- ``masked_prediction_loss``: wav2vec2-style masked contrastive prediction (the speech-style baseline)
- ``welch_features``: log Welch PSD, the spectral baseline

Shared by the field (no paper of its own): ``NLIFLayer``, ``NLIFNetwork``, ``nlif_spike_times``,
``latency_encode``, ``first_spike_loss``, ``first_spike_accuracy``, ``weight_sum_penalty``, ``simulate_lif_euler``.
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
