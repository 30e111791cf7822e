"""Geometry-aware self-supervised learning for LFP electrode localisation, with a synthetic probe generator.

Paper: "Geometry-aware SSL for LFP electrode localisation" (NeurIPS 2026 collection; the text was not available,
only the abstract; notes ``lfp-geossl.md``). Claim: single-channel LFP embeddings trained with objectives that
make the embedding space mirror the probe's physical channel layout beat speech-style masked prediction on
brain-region classification and depth (atlas-coordinate) regression in held-out sessions, and the gains compound
with more pre-training data.

Components: :func:`simulate_session` and :class:`ProbeLayout` (a multichannel LFP generator along a linear probe
through a layered six-region atlas with a documented depth profile, :func:`depth_profile`, and session shifts in
gain, line noise and sampling rate), :class:`LFPEncoder` (a tiny wav2vec2-shaped conv + transformer backbone),
:func:`masked_prediction_loss` (wav2vec2-style masked contrastive prediction, no quantiser),
:func:`geometry_contrastive_loss` (multi-positive InfoNCE whose positives are nearby channels of the same probe
and window) and :func:`distance_preserving_loss` (the other reading), and :func:`welch_features` (the spectral
baseline's log Welch PSD).

Inferred (the paper is known from its abstract only): the geometry objective's form (positives within
40 µm of the same probe and time window, negatives all other channels, temperature 0.1), the encoder's size,
the generator (regions, spectra, events, shifts), the probes (logistic regression, ridge) and depth as the
vertical coordinate (the paper regresses 3-D CCF coordinates).

From the authors' earlier ``tianxiao18/lfp2vec`` (read, not copied): a wav2vec2 backbone trained from scratch
on single-channel windows, sessions split into train / validation / test sessions (held-out sessions for the
probes), linear probes on frozen embeddings. Deliberate differences: a 2-layer d = 32 backbone instead of
wav2vec2-base; 2-s windows at 250 Hz instead of upsampling to 16 kHz; no quantiser or diversity loss (targets
are a linear map of the unmasked frames); region balanced accuracy (not plain accuracy) because regions are
unbalanced along a probe; no fine-tuning stage.
"""

from __future__ import annotations

from geode.neuro.lfp_geossl.generator import REGIONS, LFPSession, ProbeLayout, depth_profile, simulate_session
from geode.neuro.lfp_geossl.ssl import (
    LFPEncoder,
    distance_preserving_loss,
    geometry_contrastive_loss,
    masked_prediction_loss,
    welch_features,
)

__all__ = [
    "REGIONS",
    "LFPEncoder",
    "LFPSession",
    "ProbeLayout",
    "depth_profile",
    "distance_preserving_loss",
    "geometry_contrastive_loss",
    "masked_prediction_loss",
    "simulate_session",
    "welch_features",
]
