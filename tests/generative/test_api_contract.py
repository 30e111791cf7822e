"""geode.generative's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import torch

import geode.generative as gen


def _x(n, d, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _nvp():
    torch.manual_seed(0)
    return gen.RealNVP(2, n_layers=2, hidden=4)


def _ddpm():
    torch.manual_seed(0)
    return gen.ConditionalDDPM(4, 2, T=10, hidden=8, emb=3)


def _ae():
    torch.manual_seed(0)
    return gen.Autoencoder(4, code=2, hidden=8)


def _camel():
    return gen.CAMEL(_ddpm(), _ae(), recog=0.0, inner_steps=1)


def _gsm():
    return gen.GaussianSmoothedManifold(gen.Circle(1.0, 3), 0.1, nodes=16)


def _frames(n=3, d=3, k=1, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d, d)), np.linalg.qr(rng.normal(size=(n, d, k)))[0]


# main methods, as wrappers whose parameters carry the method's own argument names
def _nvp_log_prob(x):
    return _nvp().log_prob(x)


def _nvp_forward(z):
    return _nvp()(z)


def _zuko_log_prob(x):
    torch.manual_seed(0)
    return gen.ZukoFlow(2, transforms=1, hidden_features=(4,)).log_prob(x)


def _disc_forward(o):
    torch.manual_seed(0)
    return gen.ObservableDiscriminator(1, 4)(o)


def _ada_fit(exp_data, steps=1):
    return gen.ADA(_nvp(), gen.toy_observables(), batch=4).fit(exp_data, steps)


def _mm_fit(exp_data, steps=1):
    return gen.MomentMatching(_nvp(), gen.toy_observables(), batch=4).fit(exp_data, steps)


def _ddpm_fit(x, y, steps=1, batch=4, lr=2e-3):
    return _ddpm().fit(x, y, steps, batch, lr)


def _ddpm_sample(label, noise, offset=None):
    return _ddpm().sample(label, noise, offset, steps=2)


def _ae_forward(x):
    return _ae()(x)


def _camel_optimize(label, steps=1, batch=4, lr=0.05):
    return _camel().optimize(label, steps, batch, lr)


def _circle_nearest(x):
    return gen.Circle(1.0, 3).nearest(x)


def _circle_distance(x):
    return gen.Circle(1.0, 3).distance(x)


def _gsm_velocity(t, x):
    return _gsm().velocity(t, x)


def _gsm_jacobian(t, x):
    return _gsm().jacobian(t, x)


def _gsm_blocks(t, x):
    return _gsm().blocks(t, x)


def _dw_sample(n, rng):
    return gen.DoubleWell().sample(n, rng)


def _exp():
    x = gen.DoubleWell().sample(20, np.random.default_rng(0))
    return {"x1": x[:, 0], "dist_A": np.linalg.norm(x - np.array([-1.0, 0.0]), axis=1)}


METHODS = {
    "RealNVP.log_prob": _nvp_log_prob,
    "RealNVP.forward": _nvp_forward,
    "ZukoFlow.log_prob": _zuko_log_prob,
    "ObservableDiscriminator.forward": _disc_forward,
    "ADA.fit": _ada_fit,
    "MomentMatching.fit": _mm_fit,
    "ConditionalDDPM.fit": _ddpm_fit,
    "ConditionalDDPM.sample": _ddpm_sample,
    "Autoencoder.forward": _ae_forward,
    "CAMEL.optimize": _camel_optimize,
    "Circle.nearest": _circle_nearest,
    "Circle.distance": _circle_distance,
    "GaussianSmoothedManifold.velocity": _gsm_velocity,
    "GaussianSmoothedManifold.jacobian": _gsm_jacobian,
    "GaussianSmoothedManifold.blocks": _gsm_blocks,
    "DoubleWell.sample": _dw_sample,
}

_T = lambda *s: torch.as_tensor(np.random.default_rng(0).normal(size=s))  # noqa: E731

CALLS = {  # -> (args, kwargs), built fresh each time
    # ada
    "ADA": lambda: ((_nvp(), gen.toy_observables()), {"beta": 0.3, "lr": 1e-3, "disc_lr": 3e-3, "batch": 4}),
    "ADA.fit": lambda: ((_exp(),), {"steps": 1}),
    "MomentMatching": lambda: ((_nvp(), gen.toy_observables()), {"beta": 0.3, "lr": 1e-3, "batch": 4}),
    "MomentMatching.fit": lambda: ((_exp(),), {"steps": 1}),
    "DoubleWell": lambda: ((2.0, 0.5, 1.0), {}),
    "DoubleWell.sample": lambda: ((5, np.random.default_rng(0)), {}),
    "ObservableDiscriminator": lambda: ((1, 4), {"loc": 0.5, "scale": 2.0}),
    "ObservableDiscriminator.forward": lambda: ((_T(5),), {}),
    "RealNVP": lambda: ((2, 2, 4), {"loc": np.zeros(2), "scale": np.ones(2)}),
    "RealNVP.log_prob": lambda: ((_T(5, 2),), {}),
    "RealNVP.forward": lambda: ((_T(5, 2),), {}),
    "ZukoFlow": lambda: ((2,), {"loc": np.zeros(2), "scale": np.ones(2), "transforms": 1, "hidden_features": (4,)}),
    "ZukoFlow.log_prob": lambda: ((_T(5, 2),), {}),
    "fit_flow": lambda: ((_x(8, 2),), {"steps": 1, "lr": 3e-3, "batch": 4, "n_layers": 1, "hidden": 4}),
    "maxent_reweight": lambda: ((_x(10, 2), np.array([0.1, -0.1])), {"ridge": 0.1, "iters": 5}),
    "toy_observables": lambda: ((), {}),
    # camel
    "CAMEL": lambda: ((_ddpm(), _ae()), {"recog": 0.0, "inner_steps": 1, "inner_lr": 0.5}),
    "CAMEL.optimize": lambda: ((0,), {"steps": 1, "batch": 4, "lr": 0.05}),
    "Autoencoder": lambda: ((4,), {"code": 2, "hidden": 8}),
    "Autoencoder.forward": lambda: ((_T(5, 4).float(),), {}),
    "ConditionalDDPM": lambda: ((4, 2), {"T": 10, "hidden": 8, "emb": 3}),
    "ConditionalDDPM.fit": lambda: ((_x(6, 4), np.arange(6) % 2), {"steps": 1, "batch": 4, "lr": 2e-3}),
    "ConditionalDDPM.sample": lambda: ((0, _T(3, 4).float()), {"offset": torch.zeros(3)}),
    "appraiser_reward": lambda: ((_ae(), _T(4, 4).float(), _T(4, 4).float()), {"inner_steps": 1, "inner_lr": 0.5}),
    "fit_autoencoder": lambda: ((_ae(), _x(6, 4)), {"steps": 1, "lr": 3e-3}),
    # fm-tube-lipschitz
    "Circle": lambda: ((1.0, 3), {}),
    "Circle.nearest": lambda: ((_x(4, 3),), {}),
    "Circle.distance": lambda: ((_x(4, 3),), {}),
    "Sphere": lambda: ((1.0, 4), {"rotation_seed": 0}),
    "Torus": lambda: ((1.0, 0.4, 3), {}),
    "GaussianSmoothedManifold": lambda: ((gen.Circle(1.0, 3), 0.1), {"nodes": 16, "window": 10.0}),
    "GaussianSmoothedManifold.velocity": lambda: ((0.5, _x(4, 3)), {}),
    "GaussianSmoothedManifold.jacobian": lambda: ((0.5, _x(4, 3)), {}),
    "GaussianSmoothedManifold.blocks": lambda: ((0.5, _x(4, 3)), {}),
    "ambient_jacobian_bound": lambda: ((np.array([0.2, 0.5]), 0.1, 2.0), {}),
    "fit_loglog_slope": lambda: ((np.array([0.1, 0.2, 0.4]), np.array([1.0, 2.1, 3.9])), {}),
    "tangent_normal_blocks": lambda: (_frames(), {}),
}
NOT_CALLED = {
    "EmbeddedManifold": "an abstract base class (Circle, Sphere and Torus are called)",
}
_PROPAGATES = "documented: a per-step forward checks shapes only; NaN/inf propagates like torch's own layers"
_EMPTY = "documented: an empty batch gives an empty output"


def _hot(arg, empty=True):
    ok = {(arg, "nan"): _PROPAGATES, (arg, "inf"): _PROPAGATES}
    return {**ok, (arg, "empty"): _EMPTY} if empty else ok


OK: dict[str, dict[tuple[str, str], str]] = {
    "RealNVP.forward": _hot("z"),
    "RealNVP.log_prob": _hot("x"),
    "ZukoFlow.log_prob": _hot("x", empty=False),
    "ObservableDiscriminator.forward": _hot("o"),
    "Autoencoder.forward": _hot("x"),
    "ConditionalDDPM.sample": {**_hot("noise"), **_hot("offset", empty=False)},
    "appraiser_reward": {**_hot("support", empty=False), **_hot("query", empty=False)},
    "Circle.nearest": {("x", "empty"): _EMPTY},
    "Circle.distance": {("x", "empty"): _EMPTY},
    "ambient_jacobian_bound": {
        ("t", "empty"): "documented: elementwise in t; an empty t gives an empty result",
        ("t", "wrong shape"): "documented: elementwise in t of any shape",
    },
}


PACKAGE = gen


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []
