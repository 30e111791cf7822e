"""geode.ssl's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import torch

import geode.ssl as ssl


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _pred():
    torch.manual_seed(0)
    return ssl.HamiltonianPredictor(4, hidden=8)


# main methods of the modules, as wrappers whose parameters carry the method's own argument names
def _specalign_forward(a, b):
    return ssl.SpecAlignLoss(3, n_queries=6)(a, b)


def _sdr_forward(generator=None):
    return ssl.SDRSampler(3, n_queries=6)(generator)


def _potential_forward(q):
    torch.manual_seed(0)
    return ssl.SeparablePotential(2, hidden=8)(q)


def _potential_grad(q):
    torch.manual_seed(0)
    return ssl.SeparablePotential(2, hidden=8).grad(q)


def _hamiltonian_forward(z, direction=1):
    return _pred()(z, direction)


def _hamiltonian_hamiltonian(z):
    return _pred().hamiltonian(z)


def _mlp_forward(z, direction=1):
    torch.manual_seed(0)
    return ssl.MLPPredictor(4, hidden=8)(z, direction)


def _cnn_forward(x):
    torch.manual_seed(0)
    return ssl.PhaseSpaceCNN(width=4, token_channels=2, grid=1)(x)


def _hamjepa_forward(z_a, z_b):
    return ssl.HamJEPALoss(_pred(), 4)(z_a, z_b)


def _sigreg_forward(z_a, z_b):
    return ssl.SIGRegLoss(4, slices=4)(z_a, z_b)


METHODS = {
    "SpecAlignLoss.forward": _specalign_forward,
    "SDRSampler.forward": _sdr_forward,
    "SeparablePotential.forward": _potential_forward,
    "SeparablePotential.grad": _potential_grad,
    "HamiltonianPredictor.forward": _hamiltonian_forward,
    "HamiltonianPredictor.hamiltonian": _hamiltonian_hamiltonian,
    "MLPPredictor.forward": _mlp_forward,
    "PhaseSpaceCNN.forward": _cnn_forward,
    "HamJEPALoss.forward": _hamjepa_forward,
    "SIGRegLoss.forward": _sigreg_forward,
}

CALLS = {  # -> (args, kwargs), built fresh each time
    # specalign
    "SDRSampler": lambda: ((3,), {"n_queries": 6, "scales": (1.0, 3.0)}),
    "SDRSampler.forward": lambda: ((), {"generator": torch.Generator().manual_seed(0)}),
    "SpecAlignLoss": lambda: ((3,), {"n_queries": 6, "scales": (1.0, 3.0)}),
    "SpecAlignLoss.forward": lambda: ((_t(5, 3), _t(4, 3, seed=1)), {}),
    "cf_discrepancy": lambda: ((_t(5, 3), _t(4, 3, seed=1), _t(6, 3, seed=2)), {}),
    "info_nce": lambda: ((_t(4, 3), _t(4, 3, seed=1)), {"temperature": 0.1}),
    "rbf_mmd2": lambda: ((_t(5, 3), _t(4, 3, seed=1)), {"bandwidth": 1.0}),
    "structure_reg": lambda: ((_t(4, 5), _t(4, 3, seed=1)), {"temperature": 0.1}),
    # hamjepa
    "SeparablePotential": lambda: ((2,), {"hidden": 8, "base_coeff": 0.1, "residual_scale": 0.02}),
    "SeparablePotential.forward": lambda: ((_t(3, 2),), {}),
    "SeparablePotential.grad": lambda: ((_t(3, 2),), {}),
    "leapfrog": lambda: ((ssl.SeparablePotential(2, hidden=8), _t(3, 2), _t(3, 2, seed=1), 0.05, 2), {}),
    "HamiltonianPredictor": lambda: ((4,), {"hidden": 8, "base_coeff": 0.1, "residual_scale": 0.02, "dt": 0.05}),
    "HamiltonianPredictor.forward": lambda: ((_t(3, 4),), {}),
    "HamiltonianPredictor.hamiltonian": lambda: ((_t(3, 4),), {}),
    "MLPPredictor": lambda: ((4,), {"hidden": 8, "init_scale": 0.05}),
    "MLPPredictor.forward": lambda: ((_t(3, 4),), {}),
    "PhaseSpaceCNN": lambda: ((1,), {"width": 4, "token_channels": 2, "grid": 1}),
    "PhaseSpaceCNN.forward": lambda: ((torch.rand(2, 1, 8, 8, generator=torch.Generator().manual_seed(0)),), {}),
    "HamJEPALoss": lambda: ((_pred(), 4), {"p_weight": 0.2}),
    "HamJEPALoss.forward": lambda: ((_t(5, 4), _t(5, 4, seed=1)), {}),
    "SIGRegLoss": lambda: ((4,), {"weight": 0.02, "slices": 4}),
    "SIGRegLoss.forward": lambda: ((_t(5, 4), _t(5, 4, seed=1)), {}),
    "hamiltonian_prediction_loss": lambda: ((_pred(), _t(5, 4), _t(5, 4, seed=1)), {"p_weight": 0.2}),
    "energy_budget": lambda: ((_t(5, 4),), {"q_target": 1.0, "p_target": 1.0}),
    "variance_floor": lambda: ((_t(5, 4),), {"std_floor": 0.2, "eps": 1e-4}),
    "projected_logdet_floor": lambda: (
        (_t(6, 4), torch.linalg.qr(_t(4, 2, seed=1))[0].contiguous()),
        {"logdet_floor": -1.5, "pr_floor": 0.1, "eigmax_ceiling": 0.5, "eps": 1e-4},
    ),
    "lejepa_prediction_loss": lambda: ((_t(3, 4, 2),), {"n_global": 2}),
    "epps_pulley_sigreg": lambda: ((_t(6, 3), _t(3, 4, seed=1)), {"t_max": 3.0}),
    "maxent_covariance": lambda: ((np.diag([1.0, 2.0, 3.0]),), {"c": 1.0}),
    "price_of_isotropy": lambda: ((np.diag([1.0, 4.0]),), {}),
}
NOT_CALLED: dict[str, str] = {}
_EMPTY = "a per-sample map: an empty batch gives an empty output (documented)"
OK: dict[str, dict[tuple[str, str], str]] = {
    "HamiltonianPredictor.forward": {("z", "empty"): _EMPTY},
    "HamiltonianPredictor.hamiltonian": {("z", "empty"): _EMPTY},
    "MLPPredictor.forward": {("z", "empty"): _EMPTY},
    "SeparablePotential.forward": {("q", "empty"): _EMPTY},
    "SeparablePotential.grad": {("q", "empty"): _EMPTY},
    # the fixture's "wrong shape" of a (3, 4, 2) stack is (24, 1, 1): itself a valid stack of 24 views
    "lejepa_prediction_loss": {("views", "wrong shape"): "(24, 1, 1) is a valid (views, batch, dim) stack"},
}


PACKAGE = ssl


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []
