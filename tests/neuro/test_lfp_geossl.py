import math

import numpy as np
import pytest
import torch
from scipy.signal import welch

from geode.neuro.lfp_geossl import (
    REGIONS,
    LFPEncoder,
    ProbeLayout,
    depth_profile,
    distance_preserving_loss,
    geometry_contrastive_loss,
    masked_prediction_loss,
    simulate_session,
    welch_features,
)


@pytest.fixture(scope="module")
def reference_session():
    return simulate_session(3, shifts=False, n_windows=24)


def _slope(f, p, peaks):
    keep = (f >= 2) & (f <= 100) & (np.abs(f - 90) > 15) & (np.abs(f - 50) > 3)
    for fk, _, bk in peaks:
        keep &= np.abs(f - fk) > 3 * bk
    return -np.polyfit(np.log(f[keep]), np.log(p[keep]), 1)[0]


def test_spectra_follow_the_documented_depth_profile(reference_session):
    s = reference_session
    f, p = welch(s.lfp.reshape(s.lfp.shape[0], -1), fs=s.fs, nperseg=500)
    bounds = np.concatenate([[0.0], np.cumsum([r["thickness"] for r in REGIONS])])
    checked = 0
    for c, y in enumerate(s.depth):
        if np.abs(bounds - y).min() < 80:  # volume conduction mixes channels near a boundary
            continue
        prof = depth_profile(y)
        assert prof["region"] == s.region[c]
        assert _slope(f, p[c], prof["peaks"]) == pytest.approx(prof["chi"], abs=0.2)
        checked += 1
    assert checked >= 20
    # the exponent's depth trend is visible: deep thalamic channels are steeper than shallow cortex
    deep = [c for c in range(len(s.depth)) if s.region[c] == 5]
    shallow = [c for c in range(len(s.depth)) if s.region[c] == 0]
    assert np.mean([_slope(f, p[c], ()) for c in deep]) > np.mean([_slope(f, p[c], ()) for c in shallow]) + 0.3


def test_oscillation_peaks_sit_in_their_regions(reference_session):
    s = reference_session
    f, p = welch(s.lfp.reshape(s.lfp.shape[0], -1), fs=s.fs, nperseg=500)

    def excess(c, fk):  # power at fk over the mean of the flanks 4 Hz away (log ratio)
        i, lo, hi = (np.argmin(np.abs(f - v)) for v in (fk, fk - 4, fk + 4))
        return np.log(p[c, i] / np.sqrt(p[c, lo] * p[c, hi]))

    theta = {r: np.mean([excess(c, 7.0) for c in np.flatnonzero(s.region == r)]) for r in range(6)}
    assert theta[3] > 1.0 and theta[3] > theta[2] + 1.0 and theta[3] > theta[0] + 1.0  # CA1 theta
    spindle = {r: np.mean([excess(c, 12.0) for c in np.flatnonzero(s.region == r)]) for r in range(6)}
    assert spindle[5] > max(spindle[r] for r in range(5)) + 0.5  # thalamic spindles


def test_session_shifts_line_noise_and_rate():
    s = simulate_session(1, n_windows=8)
    assert s.lfp.shape == (64, 8, 500) and s.fs == 250.0
    f, p = welch(s.lfp.reshape(64, -1), fs=s.fs, nperseg=250)
    line = np.argmin(np.abs(f - s.info["line_hz"]))
    if s.info["line_amp"] > 0.1:
        assert np.median(p[:, line] / p[:, line - 3]) > 3
    low = simulate_session(1, n_windows=8, rates=(200.0,))
    f2, p2 = welch(low.lfp.reshape(64, -1), fs=250.0, nperseg=250)
    assert p2[:, f2 > 105].mean() < 0.05 * p2[:, (f2 > 80) & (f2 < 95)].mean()  # nothing above the native Nyquist
    again = simulate_session(1, n_windows=8)
    assert np.array_equal(again.lfp, s.lfp)


def test_encoder_shapes_and_gain_invariance():
    torch.manual_seed(0)
    enc = LFPEncoder()
    x = torch.randn(4, 500)
    z = enc(x)
    assert z.shape == (4, 32)
    assert torch.allclose(enc(3.0 * x + 1.0), z, atol=1e-4)  # windows are z-scored


def test_masked_prediction_is_a_proper_infonce_and_backpropagates():
    torch.manual_seed(0)
    enc = LFPEncoder()
    heads = torch.nn.ModuleDict({"pred": torch.nn.Linear(32, 32), "target": torch.nn.Linear(32, 32)})
    x = torch.tensor(simulate_session(0, n_windows=2).lfp[:16, 0])
    loss = masked_prediction_loss(enc, heads, x, torch.Generator().manual_seed(0))
    assert math.log(2) < float(loss.detach()) < math.log(enc.n_frames) + 1.0
    loss.backward()
    assert enc.features[0].weight.grad.abs().sum() > 0 and enc.mask_emb.grad is not None


def test_geometry_loss_prefers_layout_mirroring_embeddings():
    depth = torch.arange(8, dtype=torch.float32).repeat(2) * 20.0
    group = torch.arange(2).repeat_interleave(8)
    # embeddings on a circle arc ordered by depth (mirror the layout) vs the same points shuffled
    ang = depth / 160.0 * math.pi
    good = torch.stack([ang.cos(), ang.sin()], 1)
    bad = good[torch.randperm(16, generator=torch.Generator().manual_seed(0))]
    lg = geometry_contrastive_loss(good, depth, group, delta=20.0, temperature=0.05)
    lb = geometry_contrastive_loss(bad, depth, group, delta=20.0, temperature=0.05)
    assert float(lg) < float(lb)
    # the distance-preserving reading is exactly 0 on an embedding that is the layout scaled by alpha
    line = torch.stack([depth / 100.0, torch.zeros(16)], 1)
    assert float(distance_preserving_loss(line, depth, group, alpha=0.01)) == pytest.approx(0.0, abs=1e-10)
    assert float(distance_preserving_loss(bad, depth, group, alpha=0.01)) > 0.01


def test_welch_features_match_scipy():
    x = np.random.default_rng(0).normal(size=(3, 500))
    feats = welch_features(x, 250.0, nperseg=128)
    f, p = welch(x, fs=250.0, nperseg=128)
    keep = (f >= 1) & (f <= 100)
    assert np.allclose(feats, np.log10(p[:, keep] + 1e-12))


def test_unknown_channel_layout_and_bad_inputs():
    with pytest.raises(ValueError, match="unknown channel layout"):
        ProbeLayout(np.array([0.0, 20.0, np.nan, 60.0]))
    with pytest.raises(ValueError, match="unknown channel layout"):
        ProbeLayout(np.array([0.0, 20.0, 20.0]))
    with pytest.raises(TypeError, match="ProbeLayout"):
        simulate_session(0, layout=np.arange(8) * 20.0)
    z = torch.randn(4, 8)
    with pytest.raises(ValueError, match="unknown channel layout"):
        geometry_contrastive_loss(z, torch.tensor([0.0, 20.0, math.nan, 60.0]), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="one entry per embedding"):
        geometry_contrastive_loss(z, torch.zeros(3), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="finite"):
        geometry_contrastive_loss(torch.full((4, 8), math.inf), torch.zeros(4), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="no channel has a positive"):
        geometry_contrastive_loss(z, torch.arange(4.0) * 100, torch.zeros(4, dtype=torch.long), delta=40.0)
    with pytest.raises(ValueError, match="samples per window"):
        LFPEncoder()(torch.zeros(2, 400))
    with pytest.raises(ValueError, match="finite"):
        LFPEncoder()(torch.full((2, 500), math.nan))
    with pytest.raises(ValueError, match="depth"):
        depth_profile(-5.0)
