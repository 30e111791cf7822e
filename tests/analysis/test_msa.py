"""MSA: invariances (isometry, scale, shared reparametrisation), sensitivity to warps, the sample estimators."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geode.analysis import linear_cka, pullback_metric
from geode.analysis.msa import (
    estimate_intrinsic_dim,
    local_chart_metrics,
    msa_distance,
    msa_from_metrics,
    spectral_ratios,
)
from geode.analysis.msa.experiment import (
    between_within_ratio,
    make_embedding,
    nearest_neighbour_accuracy,
    property_checks,
    train_regime_mlp,
)

torch.set_num_threads(1)


def _spd_field(seed, n=30, d=3):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, d, d))
    return np.einsum("nik,njk->nij", a, a) + 0.1 * np.eye(d)


def _net(seed, width=24):
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(width, 20, generator=g, dtype=torch.float64) / math.sqrt(20) * 1.5
    w2 = torch.randn(width, width, generator=g, dtype=torch.float64) / math.sqrt(width) * 1.5
    embed = make_embedding(seed)

    def f(z):
        return torch.tanh(torch.tanh(embed(z) @ w1.T) @ w2.T)

    return f


# ------------------------------------------------------------------ the metric-level distance


def test_spectral_ratios_are_generalised_eigenvalues_and_congruence_invariant():
    ga = np.broadcast_to(np.eye(2), (1, 2, 2))
    gb = np.diag([4.0, 0.25])[None]
    np.testing.assert_allclose(spectral_ratios(ga, gb, eps=0.0), [[0.25, 4.0]])
    a, b = _spd_field(0), _spd_field(1)
    p = np.random.default_rng(2).normal(size=(30, 3, 3))
    congr = lambda g: np.einsum("nki,nkl,nlj->nij", p, g, p)  # noqa: E731
    np.testing.assert_allclose(spectral_ratios(congr(a), congr(b), eps=0.0), spectral_ratios(a, b, eps=0.0), rtol=1e-7)


def test_msa_is_zero_for_equal_metrics_up_to_scale_and_positive_otherwise():
    a, b = _spd_field(0), _spd_field(1)
    assert msa_from_metrics(a, a) == pytest.approx(0.0, abs=1e-7)
    assert msa_from_metrics(a, 7.3 * a) == pytest.approx(0.0, abs=1e-7)
    assert msa_from_metrics(a, b) > 0.5
    assert msa_from_metrics(a, b) == pytest.approx(msa_from_metrics(b, a), rel=1e-8)  # log(1/λ)^2 = log(λ)^2


def test_msa_closed_form_on_diagonal_metrics():
    # ratios (4, 1/4) at every point, geometric mean 1: d = sqrt(log(4)^2 + log(1/4)^2) = sqrt(2) log 4
    ga = np.broadcast_to(np.eye(2), (5, 2, 2))
    gb = np.broadcast_to(np.diag([4.0, 0.25]), (5, 2, 2))
    d, info = msa_from_metrics(ga, gb, eps=0.0, return_info=True)
    assert d == pytest.approx(math.sqrt(2) * math.log(4.0), rel=1e-12)
    assert info["similarity"] == pytest.approx(math.exp(-d))
    np.testing.assert_allclose(info["pointwise"], d)
    assert info["log_ratios"].shape == (5, 2)
    assert info["scale"] == pytest.approx(1.0)


def test_normalisation_options():
    a = _spd_field(3)
    conformal = np.exp(np.linspace(-1, 1, 30))[:, None, None] * a  # a scale that varies along the manifold
    assert msa_from_metrics(a, conformal, normalize="pointwise", eps=0.0) == pytest.approx(0.0, abs=1e-7)
    assert msa_from_metrics(a, conformal) > 0.1
    assert msa_from_metrics(a, 3 * a, normalize="none") == pytest.approx(math.sqrt(3) * math.log(3), rel=1e-5)
    assert msa_from_metrics(a, 5 * a, distance="logeuclid") == pytest.approx(0.0, abs=1e-7)
    assert msa_from_metrics(a, _spd_field(4), distance="logeuclid") > 0.5


def test_metric_validation():
    a = _spd_field(0)
    with pytest.raises(ValueError, match="same shape"):
        msa_from_metrics(a, a[:-1])
    with pytest.raises(ValueError, match="symmetric"):
        msa_from_metrics(a, a + np.triu(np.ones((3, 3)), 1))
    with pytest.raises(ValueError, match="zero everywhere"):
        msa_from_metrics(a, np.zeros_like(a))
    with pytest.raises(ValueError, match="GA must have shape"):
        msa_from_metrics(np.ones((2, 2, 3)), a)
    with pytest.raises(ValueError, match="finite"):
        msa_from_metrics(np.full_like(a, np.nan), a)
    with pytest.raises(ValueError, match="normalize"):
        msa_from_metrics(a, a, normalize="local")
    with pytest.raises(ValueError, match="singular"), pytest.warns(RuntimeWarning, match="near-singular"):
        msa_from_metrics(
            np.broadcast_to(np.diag([1.0, 0.0]), (3, 2, 2)), np.broadcast_to(np.eye(2), (3, 2, 2)), eps=0.0
        )


# ------------------------------------------------------------------ networks: invariances and the warp


def test_exact_msa_invariances_and_warp_on_networks():
    z = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, size=(60, 2)))
    f, g = _net(1), _net(2)
    q = torch.as_tensor(np.linalg.qr(np.random.default_rng(1).normal(size=(24, 24)))[0])
    gf = pullback_metric(f, z)
    assert msa_from_metrics(gf, pullback_metric(lambda t: 2.5 * f(t) @ q + 1.0, z)) < 1e-6
    # shared reparametrisation z = phi(u) with phi(u) = (u1 + 0.5 u2^2, u2), inverse exact
    phi = lambda u: torch.stack([u[:, 0] + 0.5 * u[:, 1] ** 2, u[:, 1]], 1)  # noqa: E731
    u = torch.stack([z[:, 0] - 0.5 * z[:, 1] ** 2, z[:, 1]], 1)
    d0 = msa_from_metrics(gf, pullback_metric(g, z))
    d1 = msa_from_metrics(pullback_metric(lambda t: f(phi(t)), u), pullback_metric(lambda t: g(phi(t)), u))
    assert d0 > 0.1 and d1 == pytest.approx(d0, abs=1e-5)
    # a one-sided warp along the manifold: MSA moves
    warped = pullback_metric(lambda t: f(t + 0.3 * torch.sin(3 * t)), z)
    assert msa_from_metrics(gf, warped) > 1.0


def test_property_checks_warp_keeps_cka_high_but_moves_msa():
    out = property_checks(0, n_points=80, width=32)
    assert max(out["msa_rotation"], out["msa_scale"], out["msa_reparam_change"]) < 1e-5
    assert out["cka_rotation"] == pytest.approx(1.0, abs=1e-9)
    assert out["cka_warp"] > 0.9 and out["msa_warp"] > 1.0
    assert out["msa_warp_pointwise"].shape == (80,)


# ------------------------------------------------------------------ from samples


def _samples(n=1500, seed=0):
    z = np.random.default_rng(seed).uniform(-1, 1, size=(n, 2))
    zt = torch.as_tensor(z)
    with torch.no_grad():
        x = _net(3)(zt).numpy()
        y = _net(4)(zt).numpy()
        xw = _net(3)(zt + 0.3 * torch.sin(3 * zt)).numpy()
    return z, x, y, xw


def test_sample_msa_with_coordinates():
    z, x, y, xw = _samples()
    q = np.linalg.qr(np.random.default_rng(5).normal(size=(24, 24)))[0]
    assert msa_distance(x, 4.0 * x @ q - 2.0, z) < 1e-6
    d, info = msa_distance(x, xw, z, return_info=True)
    assert d > 1.0 and info["pointwise"].shape == (1500,)
    # shared reparametrisation of the coordinates: to first order in the neighbourhood size
    u = np.stack([z[:, 0] + 0.3 * z[:, 1] ** 3, z[:, 1]], 1)
    assert msa_distance(x, y, u) == pytest.approx(msa_distance(x, y, z), rel=0.15)


def test_sample_msa_without_coordinates_uses_local_charts():
    z, x, y, xw = _samples()
    assert estimate_intrinsic_dim(x) == 2
    q = np.linalg.qr(np.random.default_rng(6).normal(size=(24, 24)))[0]
    assert msa_distance(x, 3.0 * x @ q) < 1e-6
    assert msa_distance(x, xw) > 0.5
    gx, gy = local_chart_metrics(x, y, 2)
    assert gx.shape == gy.shape == (1500, 2, 2)
    np.testing.assert_allclose(np.median(np.linalg.eigvalsh(gx), axis=0), 1.0, atol=0.05)  # near-isometric chart


def test_sample_msa_validation():
    z, x, y, _ = _samples(n=50)
    with pytest.raises(ValueError, match="same number of samples"):
        msa_distance(x, y[:-1])
    with pytest.raises(ValueError, match="constant"):
        msa_distance(x, np.ones_like(y), z)
    with pytest.raises(ValueError, match="Z and X must have the same number"):
        msa_distance(x, y, z[:-1])
    with pytest.raises(ValueError, match="finite"):
        msa_distance(x, np.where(y > 0.5, np.nan, y), z)
    with pytest.raises(ValueError, match="intrinsic_dim"):
        msa_distance(x, y, intrinsic_dim=0)


# ------------------------------------------------------------------ the experiment's pieces


def test_between_within_ratio_and_nearest_neighbour_accuracy():
    d = np.array([[0, 1, 4, 4], [1, 0, 4, 4], [4, 4, 0, 2], [4, 4, 2, 0]], dtype=float)
    assert between_within_ratio(d, [0, 0, 1, 1]) == pytest.approx(4 / 1.5)
    assert nearest_neighbour_accuracy(d, [0, 0, 1, 1]) == 1.0
    assert nearest_neighbour_accuracy(d, [0, 1, 0, 1]) == 0.0


def test_rich_regime_moves_the_first_layer_and_lazy_does_not():
    embed = make_embedding(0)
    z = torch.rand(100, 2, generator=torch.Generator().manual_seed(0)) * 2 - 1
    rich = train_regime_mlp(0.1, 1, embed, z, width=32, steps=60)
    lazy = train_regime_mlp(100.0, 1, embed, z, width=32, steps=60)
    assert rich.weight_movement > 10 * lazy.weight_movement
    assert lazy.weight_movement < 0.05


def test_linear_cka_does_not_see_the_warp_much():
    _, x, _, xw = _samples(n=400)
    assert linear_cka(x, xw) > 0.9


# ------------------------------------------------------------------ revision 2: singular metrics, noise floors


def test_singular_metrics_warn_and_can_be_excluded():
    from geode.analysis.msa import SingularMetricWarning

    rng = np.random.default_rng(3)
    a = _spd_field(0)
    b = _spd_field(1)
    sing = b.copy()
    v = rng.normal(size=3)
    sing[:2] = np.outer(v, v) + 1e-14 * np.eye(3)  # rank one at two points: the ridge decides there
    with pytest.warns(SingularMetricWarning, match="near-singular"):
        d_small = msa_from_metrics(a, sing, eps=1e-6)
    with pytest.warns(SingularMetricWarning):
        d_big = msa_from_metrics(a, sing, eps=1e-3)
    assert d_small > d_big + 1.0  # grows like log(1/eps): the reason for the warning
    with pytest.warns(SingularMetricWarning, match="left out"):
        d_ex, info = msa_from_metrics(a, sing, rank="exclude", return_info=True)
    assert info["ridge_dominated_fraction"] == pytest.approx(2 / a.shape[0])
    # excluding the singular points is the distance over the others
    assert np.sqrt(np.mean(info["pointwise"][2:] ** 2)) == pytest.approx(d_ex)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        msa_from_metrics(a, b)  # regular metrics: no warning
        msa_from_metrics(a, sing, rank="ignore")
    with pytest.raises(ValueError, match="rank"):
        msa_from_metrics(a, b, rank="drop")


def test_geode_analysis_msa_is_the_module_and_msa_distance_the_function():
    import importlib

    import geode.analysis
    from geode.analysis import msa as msa_pkg
    from geode.analysis import msa_distance as from_field

    mod = importlib.import_module("geode.analysis.msa")
    assert geode.analysis.msa is mod and msa_pkg is mod  # the package is no longer shadowed by its function
    assert mod.__name__ == "geode.analysis.msa" and mod.__doc__.startswith("MSA: metric similarity analysis")
    assert from_field is msa_distance is mod.msa_distance
    assert "msa" not in geode.analysis.__all__ and "msa_distance" in geode.analysis.__all__


def test_import_geode_analysis_msa_as_gives_the_module_in_a_fresh_interpreter():
    import subprocess
    import sys

    code = (
        "import geode.analysis.msa.claim; import geode.analysis.msa as m; from geode.analysis import msa; "
        "print(m.__name__, msa is m, callable(m.msa_distance))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["geode.analysis.msa", "True", "True"]


def test_warp_sensitivity_reads_each_measure_against_its_noise_floor():
    from geode.analysis.msa.experiment import warp_sensitivity

    s = warp_sensitivity(0, n_points=120, width=32)
    for m in ("msa", "cka", "rsa", "procrustes"):
        assert s[f"{m}_floor"] > 0
        assert s[f"{m}_warp_rel"] == pytest.approx(s[f"{m}_warp"] / s[f"{m}_floor"])
        assert s[f"{m}_isometry_rel"] < 1e-6  # every measure ignores a rotation + scale + shift
    assert s["msa_warp_rel"] > 1.0


def test_mantel_is_a_rank_correlation_of_the_upper_triangles():
    from geode.analysis.msa.experiment import mantel

    t = np.array([[0, 1, 2], [1, 0, 3], [2, 3, 0]], dtype=float)
    assert mantel(t, t) == pytest.approx(1.0)
    assert mantel(np.exp(t), t) == pytest.approx(1.0)  # monotone transforms do not matter
    assert mantel(-t, t) == pytest.approx(-1.0)
    assert mantel(np.zeros((3, 3)), t) == 0.0


def test_rnn_and_ssm_memory_nets_learn_and_the_ssm_state_is_linear_in_the_stimulus():
    from geode.analysis.msa.experiment import rnn_ssm_study

    out = rnn_ssm_study(0, n_per_arch=2, hidden=16, delay=4, steps=40, n_eval=60)
    assert out["labels"] == [0, 0, 1, 1]
    assert max(out["recall_mse"]) < 0.34  # below the stimulus variance 1/3: they learned something
    d = out["distances"]["msa"]
    assert d.shape == (4, 4) and np.allclose(d, d.T) and np.all(d[~np.eye(4, dtype=bool)] > 0)
    # without delay noise the SSM's state is linear in the stimulus (a flat pullback metric); the RNN's is not
    from geode.analysis.msa.experiment import _MemoryNet, _sequence

    z1, z2 = torch.rand(5, 2, dtype=torch.float32), torch.rand(5, 2, dtype=torch.float32)
    for arch, linear in (("ssm", True), ("rnn", False)):
        net = _MemoryNet(arch, 8, 0)
        with torch.no_grad():
            lhs = net.state(_sequence(2 * z1 - z2, 4, 0.0, None))
            rhs = 2 * net.state(_sequence(z1, 4, 0.0, None)) - net.state(_sequence(z2, 4, 0.0, None))
        assert torch.allclose(lhs, rhs, atol=1e-5) == linear, arch
