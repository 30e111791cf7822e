"""UFCOD: schedule, trajectory energies in closed form, facility location, the soft-min kNN detector."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.uncertainty import (
    EnergyOODDetector,
    TinyUNet,
    cosine_alpha_bar,
    facility_location,
    train_ddpm,
    trajectory_features,
)


def test_cosine_schedule():
    ab = cosine_alpha_bar(1000)
    assert ab.shape == (1000,)
    assert np.all(np.diff(ab) < 0) and 0.99 < ab[0] < 1 and ab[-1] < 1e-3


class _Const(torch.nn.Module):
    """eps(x, t) = c(t) everywhere: the energies have closed forms."""

    def __init__(self, values):
        super().__init__()
        self.values = values
        self.calls = 0

    def forward(self, x, t):
        v = self.values[self.calls % len(self.values)]
        self.calls += 1
        return torch.full_like(x, v)


def test_trajectory_energies_closed_form():
    x = torch.zeros(3, 1, 4, 4).numpy()
    n = 5
    vals = [0.5, 1.0, -1.0, 2.0, 0.0]
    f6 = trajectory_features(_Const(vals), x, n_steps=100, n_ddim=n, six=True)
    pix = 16
    np.testing.assert_allclose(f6[:, 1], pix * sum(v**2 for v in vals))  # path energy
    diffs = np.diff(vals) * n
    np.testing.assert_allclose(f6[:, 4], pix * np.sum(diffs**2))  # dynamics energy
    np.testing.assert_allclose(f6[:, 0], pix * sum(vals))
    np.testing.assert_allclose(trajectory_features(_Const(vals), x, n_steps=100, n_ddim=n), f6[:, [1, 4]])
    # a constant score has zero dynamics energy
    assert np.all(trajectory_features(_Const([0.7]), x, n_steps=100, n_ddim=n)[:, 1] == 0)


def test_ddim_reversal_for_the_exact_score_of_a_gaussian():
    """Data N(0, I): x_t ~ N(0, I) at every t and the optimal eps(x, t) = sqrt(1 - ab_t) x. With ab = cos^2(phi),
    one DDIM step maps x to cos(phi' - phi) x, so eps_i = sin(phi_i) prod_{j < i} cos(phi_{j+1} - phi_j) x_0."""
    ab = cosine_alpha_bar(100)

    class Gauss(torch.nn.Module):
        def forward(self, x, t):
            return torch.sqrt(1 - torch.as_tensor(ab, dtype=torch.float32)[t])[:, None, None, None] * x

    x = np.random.default_rng(0).normal(size=(4, 1, 4, 4)).astype(np.float32)
    f = trajectory_features(Gauss(), x, n_steps=100, n_ddim=10, six=True)
    phi = np.arccos(np.sqrt(ab[np.arange(0, 100, 10)]))
    shrink = np.r_[1.0, np.cumprod(np.cos(np.diff(phi)))]
    coef = np.sin(phi) * shrink
    x2 = (x.astype(np.float64) ** 2).sum((1, 2, 3))
    np.testing.assert_allclose(f[:, 1], (coef**2).sum() * x2, rtol=1e-4)
    np.testing.assert_allclose(f[:, 4], ((np.diff(coef) * 10) ** 2).sum() * x2, rtol=1e-4)


def test_ddpm_trains_and_features_are_batch_invariant():
    rng = np.random.default_rng(0)
    x = (rng.uniform(size=(64, 1, 8, 8)) > 0.5).astype(np.float32) * 2 - 1
    model = TinyUNet(width=8, seed=0)
    losses = train_ddpm(model, x, n_steps=100, iters=40, batch_size=32, lr=3e-3, seed=0)
    assert np.mean(losses[-10:]) < np.mean(losses[:5])
    a = trajectory_features(model, x[:10], n_steps=100, n_ddim=5, batch_size=3)
    b = trajectory_features(model, x[:10], n_steps=100, n_ddim=5, batch_size=10)
    np.testing.assert_allclose(a, b, rtol=1e-5)


def test_facility_location_matches_a_brute_force_greedy_and_covers_clusters():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(40, 2))
    got = facility_location(z, 6, seed=3)
    zs = (z - z.mean(0)) / (z.std(0) + 1e-8)
    d = np.linalg.norm(zs[:, None] - zs[None], axis=-1)
    chosen = [got[0]]
    for _ in range(5):
        cur = d[chosen].min(0)
        gains = [(-np.inf if c in chosen else np.sum(cur - np.minimum(cur, d[c]))) for c in range(40)]
        chosen.append(int(np.argmax(gains)))
    assert list(got) == chosen
    two = np.r_[rng.normal(size=(30, 2)) * 0.1, rng.normal(size=(30, 2)) * 0.1 + 10]
    pick = facility_location(two, 2, seed=0)
    assert {int(i >= 30) for i in pick} == {0, 1}
    assert list(facility_location(z[:5], 10)) == [0, 1, 2, 3, 4]


def test_detector_closed_forms_and_invariances():
    rng = np.random.default_rng(2)
    pool, q = rng.normal(size=(200, 2)), rng.normal(size=(50, 2)) * 2
    det = EnergyOODDetector(0.5, 1, n_references=50).fit(pool)
    ref = det.references_
    zq = (q - det.mean_) / det.scale_
    nearest = np.linalg.norm(zq[:, None] - ref[None], axis=-1).min(1)
    np.testing.assert_allclose(det.score_samples(q, calibrate=False), -nearest, atol=1e-9)  # k = 1: -d_min
    # the references' own calibrated scores are z-scores
    det5 = EnergyOODDetector(0.5, 5, n_references=50).fit(pool)
    s = det5.score_samples(pool[det5.reference_index_])
    assert abs(s.mean()) < 1e-9 and abs(s.std() - 1) < 1e-6
    # invariant to a positive affine map of each feature (standardised on the references)
    a, b = np.array([3.0, 0.2]), np.array([-5.0, 7.0])
    det2 = EnergyOODDetector(0.5, 5, n_references=50).fit(pool * a + b)
    np.testing.assert_allclose(det2.score_samples(q * a + b), det5.score_samples(q), atol=1e-8)
    # T -> large: the soft-min tends to a mean of the k distances plus T log k
    big = EnergyOODDetector(1e6, 5, n_references=None).fit(pool)
    zq = (q - big.mean_) / big.scale_
    dk = np.sort(np.linalg.norm(zq[:, None] - big.references_[None], axis=-1), 1)[:, :5]
    np.testing.assert_allclose(big.score_samples(q, calibrate=False), -dk.mean(1) + 1e6 * np.log(5), rtol=1e-9)
    # far points score lower than the pool
    assert det.score_samples(pool + 50).max() < det.score_samples(pool).min()


def test_detector_bad_inputs():
    with pytest.raises(ValueError, match="T"):
        EnergyOODDetector(T=0)
    with pytest.raises(ValueError, match="selection"):
        EnergyOODDetector(selection="kmeans")
    det = EnergyOODDetector()
    with pytest.raises(RuntimeError, match="fit"):
        det.score_samples(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="NaN"):
        det.fit(np.array([[0.0, np.nan]]))
    det.fit(np.random.default_rng(0).normal(size=(30, 2)))
    with pytest.raises(ValueError, match="columns"):
        det.score_samples(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="images"):
        trajectory_features(_Const([0.0]), np.zeros((2, 4, 4)))
    with pytest.raises(ValueError, match="NaN"):
        trajectory_features(_Const([0.0]), np.full((1, 1, 4, 4), np.nan))
    with pytest.raises(ValueError, match="width"):
        TinyUNet(width=12)
