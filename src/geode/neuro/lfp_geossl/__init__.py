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

Examples
--------
Simulate one probe recording, then take geometry-contrastive steps on its single-channel windows:

>>> import numpy as np, torch
>>> from geode.neuro import REGIONS, LFPEncoder, ProbeLayout, geometry_contrastive_loss, simulate_session
>>> from geode.neuro import welch_features
>>> s = simulate_session(0, layout=ProbeLayout.linear(32, pitch=20.0), n_windows=4)   # one probe, 2-s windows
>>> s.lfp.shape, s.fs, len(REGIONS)                      # (channels, windows, samples) at 250 Hz; 6 regions
((32, 4, 500), 250.0, 6)
>>> _ = torch.manual_seed(0)
>>> encoder = LFPEncoder(dim=32)                         # single-channel windows -> embeddings
>>> x = torch.as_tensor(s.lfp.reshape(-1, 500))          # every (channel, window) as one sample
>>> depth = torch.as_tensor(np.repeat(s.layout.positions, 4), dtype=torch.float32)  # position on the shank
>>> group = torch.arange(4).repeat(32)                   # positives: nearby channels of the same window
>>> opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
>>> losses = []
>>> for step in range(3):
...     loss = geometry_contrastive_loss(encoder(x), depth, group, delta=40.0)
...     opt.zero_grad()
...     loss.backward()
...     opt.step()
...     losses.append(loss.item())
>>> bool(losses[-1] < losses[0])
True
>>> welch_features(s.lfp, s.fs).shape                    # the spectral baseline: log Welch PSD, 1-100 Hz
(32, 4, 51)
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
