import numpy as np
import pytest

from geode.generative import (
    Circle,
    GaussianSmoothedManifold,
    Sphere,
    Torus,
    ambient_jacobian_bound,
    fit_loglog_slope,
    tangent_normal_blocks,
)

MANIFOLDS = [
    lambda: Circle(ambient_dim=3, rotation_seed=1),
    lambda: Sphere(ambient_dim=4, rotation_seed=2),
    lambda: Torus(ambient_dim=3, rotation_seed=3),
]


def _fd_jacobian(f, t, x, h):
    cols = [(f.velocity(t, x + h * e) - f.velocity(t, x - h * e)) / (2 * h) for e in np.eye(x.shape[1])]
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("make", MANIFOLDS)
@pytest.mark.parametrize(("sigma", "t"), [(0.05, 0.8), (0.01, 0.99)])
def test_analytic_jacobian_matches_finite_differences(make, sigma, t):
    f = GaussianSmoothedManifold(make(), sigma, nodes=None)
    x = f.sample_tube(t, 3, np.random.default_rng(0))
    J = f.jacobian(t, x)
    Jfd = _fd_jacobian(f, t, x, 1e-6)
    assert np.abs(J - Jfd).max() <= 1e-4 * np.abs(J).max()
    assert np.allclose(J, np.swapaxes(J, 1, 2))


def test_velocity_matches_monte_carlo_conditional_expectation():
    # v(t, x) = E[x1 - x0 | x_t = x]: check by Monte Carlo self-normalised importance over y on a fine circle
    rng = np.random.default_rng(1)
    man = Circle(ambient_dim=2)
    sigma, t = 0.2, 0.7
    f = GaussianSmoothedManifold(man, sigma)
    x = np.array([[0.5, 0.4]])
    th = np.linspace(-np.pi, np.pi, 20000, endpoint=False)
    y = np.stack([np.cos(th), np.sin(th)], axis=-1)
    s2 = f.s2(t)
    w = np.exp(-np.sum((x - t * y) ** 2, axis=-1) / (2 * s2))
    w /= w.sum()
    r = x - t * y
    target = y + (t * sigma**2 - (1 - t)) / s2 * r  # E[x1 - x0 | x, y]
    assert np.allclose(f.velocity(t, x)[0], w @ target, atol=1e-8)
    del rng


@pytest.mark.parametrize("make", MANIFOLDS)
def test_local_window_agrees_with_whole_chart_quadrature(make):
    man = make()
    f = GaussianSmoothedManifold(man, 0.02, window=10)
    big = GaussianSmoothedManifold(man, 0.02, nodes=3 * f.nodes, window=1e9)  # the whole chart, fine grid
    x = f.sample_tube(0.9, 4, np.random.default_rng(2))
    assert np.allclose(f.jacobian(0.9, x), big.jacobian(0.9, x), rtol=1e-3, atol=1e-3)


def test_limit_t_equal_one_gives_identity_and_normal_eigenvalue_near_minus_half_over_sigma():
    f = GaussianSmoothedManifold(Circle(), 0.01)
    x = f.sample_tube(1.0, 3, np.random.default_rng(3))
    assert np.allclose(f.jacobian(1.0, x), np.eye(3))
    t = 1 - 0.01
    b = f.blocks(t, f.sample_tube(t, 8, np.random.default_rng(4)))
    expected = (t * 0.01**2 - (1 - t)) / f.s2(t)  # the normal eigenvalue of the module docstring
    assert np.allclose(b["normal_min"], expected, rtol=1e-3)
    assert np.all(b["tangent"] < 5)


def test_medial_axis_blows_up_like_the_ambient_bound():
    # at the circle's centre the posterior is uniform, Cov = I_2 / 2: J = [t(1-t)/(2 s2) + c] / s2 in-plane
    sigma, t = 0.01, 0.99
    f = GaussianSmoothedManifold(Circle(ambient_dim=2), sigma)
    J = f.jacobian(t, np.zeros((1, 2)))[0]
    s2 = f.s2(t)
    lam = (t * (1 - t) * 0.5 / s2 + (t * sigma**2 - (1 - t))) / s2
    assert np.allclose(J, lam * np.eye(2), rtol=1e-6)
    assert lam <= ambient_jacobian_bound(t, sigma, 2.0)


def test_blocks_of_a_known_matrix():
    J = np.diag([3.0, -5.0, -7.0])[None]
    T = np.eye(3)[None, :, :1]
    b = tangent_normal_blocks(J, T)
    assert b["tangent"][0] == pytest.approx(3) and b["normal_min"][0] == pytest.approx(-7)
    assert b["normal_max"][0] == pytest.approx(-5) and b["coupling"][0] == pytest.approx(0, abs=1e-12)
    J2 = J.copy()
    J2[0, 0, 1] = J2[0, 1, 0] = 2.0
    assert tangent_normal_blocks(J2, T)["coupling"][0] == pytest.approx(2)


def test_tangent_basis_is_orthonormal_and_tangent():
    man = Torus(ambient_dim=5, rotation_seed=0)
    x = man.sample(6, np.random.default_rng(5))
    y, T = man.nearest(x)
    assert np.allclose(y, x, atol=1e-10)
    assert np.allclose(np.einsum("bDi,bDj->bij", T, T), np.eye(2), atol=1e-8)
    h = 1e-4
    y2, _ = man.nearest(x + h * T[:, :, 0])
    assert np.abs(y2 - x - h * T[:, :, 0]).max() < 1e-7


def test_slope_fit_recovers_a_power_law():
    s = np.array([0.1, 0.03, 0.01])
    assert fit_loglog_slope(s, 2 * s**-1.5) == pytest.approx(-1.5)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="sigma"):
        GaussianSmoothedManifold(Circle(), 0.0)
    with pytest.raises(ValueError, match="sigma"):
        GaussianSmoothedManifold(Circle(), -1)
    with pytest.raises(TypeError, match="manifold"):
        GaussianSmoothedManifold("circle", 0.1)
    f = GaussianSmoothedManifold(Circle(), 0.1)
    with pytest.raises(ValueError, match="shape"):
        f.jacobian(0.5, np.zeros((2, 4)))
    with pytest.raises(ValueError, match="t must"):
        f.velocity(0.0, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="r < R"):
        Torus(R=0.5, r=1.0)
    with pytest.raises(ValueError, match="ambient_dim"):
        Sphere(ambient_dim=2)
    with pytest.raises(ValueError, match="nodes"):
        GaussianSmoothedManifold(Circle(), 0.1, nodes=3)
    with pytest.raises(ValueError, match="sigmas"):
        fit_loglog_slope([0.1], [1.0])
