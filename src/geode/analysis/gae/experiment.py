r"""The GAE claim's experiment: sparse synthetic activations whose active subspace rotates under shift.

:func:`planted_features` draws the ground truth: an orthonormal basis :math:`B` of :math:`\mathbb R^{64}`,
an active subspace :math:`U = B_{:, :24}`, unused directions :math:`V = B_{:, 24:48}` and ``m = 256``
unit feature directions :math:`f_j = U c_j` inside :math:`U` (superposition: 256 features in 24
dimensions). :func:`sample_activations` draws :math:`x = \sum_j s\, c_{ij} f_j + \sigma \epsilon` with
each feature active independently with probability ``p_active``, magnitudes uniform on [0.5, 1.5],
``s`` a scale shift and isotropic noise :math:`\sigma = 0.02`. The shift by ``theta`` rotates every
feature by the direct rotation :math:`T_\theta` that turns each :math:`u_i` towards :math:`v_i`
(:math:`u_i \mapsto \cos\theta\, u_i + \sin\theta\, v_i`), and scales the codes by ``scale``.

:func:`run_shift_study` trains an ID dictionary (TopK by default) and, at each angle, measures on
held-out OOD activations the FVU of the unadapted dictionary, of GAE, and of the baselines (mean shift,
unconstrained decoder refit, fine-tuning the ID dictionary on the OOD sample with Adam, training a new
dictionary on it), with the faithfulness gap and the covariance shift.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from geode.analysis.gae.explainer import (
    GAE,
    active_subspace,
    dictionary_subspace,
    faithfulness_gap,
    mean_shift_adapt,
    refit_decoder,
)
from geode.analysis.sae import SparseAutoencoder, fvu, train_sae
from geode.core.random import as_generator, torch_generator
from geode.core.validation import check_int, check_real

__all__ = ["PlantedFeatures", "planted_features", "rotation_towards", "run_shift_study", "sample_activations"]


@dataclass(frozen=True)
class PlantedFeatures:
    basis: np.ndarray  # (d, d) orthonormal
    k_active: int
    features: np.ndarray  # (m, d) unit rows inside span(basis[:, :k_active])
    p_active: float
    noise: float

    @property
    def active(self) -> np.ndarray:
        return self.basis[:, : self.k_active]

    @property
    def unused(self) -> np.ndarray:
        return self.basis[:, self.k_active : 2 * self.k_active]


def planted_features(
    seed: int, *, d: int = 64, m: int = 256, k_active: int = 24, p_active: float = 5 / 256, noise: float = 0.02
) -> PlantedFeatures:
    """Ground-truth sparse features in a ``k_active``-dimensional subspace of R^d (see the module docstring)."""
    d = check_int("d", d, low=2)
    k_active = check_int("k_active", k_active, low=1, high=d // 2)
    m = check_int("m", m, low=1)
    rng = as_generator(seed)
    basis, _ = np.linalg.qr(rng.normal(size=(d, d)))
    c = rng.normal(size=(m, k_active))
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    return PlantedFeatures(basis, k_active, c @ basis[:, :k_active].T, float(p_active), float(noise))


def rotation_towards(pf: PlantedFeatures, theta_deg: float) -> np.ndarray:
    r"""The direct rotation :math:`T_\theta` (d, d): :math:`u_i \mapsto \cos\theta\, u_i + \sin\theta\, v_i`."""
    theta = math.radians(check_real("theta_deg", theta_deg, low=0.0, high=90.0))
    u, v = pf.active, pf.unused
    c, s = math.cos(theta), math.sin(theta)
    return np.eye(u.shape[0]) + (c - 1.0) * (u @ u.T + v @ v.T) + s * (v @ u.T - u @ v.T)


def sample_activations(
    pf: PlantedFeatures, n: int, seed: int, *, theta_deg: float = 0.0, scale: float = 1.0
) -> np.ndarray:
    """``n`` activations, shape (n, d), after rotating the features by ``theta_deg`` and scaling the codes."""
    n = check_int("n", n, low=1)
    rng = as_generator(seed)
    m, d = pf.features.shape
    on = rng.random((n, m)) < pf.p_active
    codes = np.where(on, rng.uniform(0.5, 1.5, size=(n, m)), 0.0) * scale
    feats = pf.features @ rotation_towards(pf, theta_deg).T
    return codes @ feats + pf.noise * rng.normal(size=(n, d))


def _readout(d: int, seed: int) -> Any:
    """A fixed random GELU "model" downstream of the activations, to measure spliced-in faithfulness."""
    g = torch_generator(seed)
    w1 = torch.randn(d, 128, generator=g, dtype=torch.float64) / math.sqrt(d)
    w2 = torch.randn(128, 16, generator=g, dtype=torch.float64) / math.sqrt(128)

    def model(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return (torch.nn.functional.gelu(torch.as_tensor(x, dtype=torch.float64) @ w1) @ w2).numpy()

    return model


def _recon(sae: SparseAutoencoder, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return sae(torch.as_tensor(x, dtype=sae.W_dec.dtype)).double().numpy()


def _downstream_fvu(model: Any, sae: SparseAutoencoder, x: np.ndarray) -> float:
    y = model(x)
    y_hat = model(_recon(sae, x))
    return float(np.sum((y - y_hat) ** 2) / np.sum((y - y.mean(0)) ** 2))


def run_shift_study(
    seed: int,
    *,
    thetas: Sequence[float] = (10.0, 30.0, 60.0),
    scale: float = 1.25,
    n_id: int = 20000,
    n_ood: int = 2000,
    n_test: int = 4000,
    activation: str = "topk",
    k: int = 8,
    l1_coeff: float = 0.05,
    d_sae: int = 256,
    steps: int = 3000,
    finetune_steps: int = 2000,
    batch_size: int = 256,
    lr: float = 1e-3,
    energy: float = 0.99,
    ridge: float = 0.1,
) -> dict[str, Any]:
    """Train an ID dictionary; at each angle, adapt it to ``n_ood`` unlabeled OOD activations and evaluate.

    Returns ``rows`` (one dict per angle and method with ``fvu``, ``excess_fvu`` over the ID dictionary's
    ID test FVU, ``downstream_fvu``) and ``per_theta`` (gap, covariance shift, GAE diagnostics).
    """
    pf = planted_features(seed)
    x_id = sample_activations(pf, n_id, seed * 1000 + 1)
    x_id_test = sample_activations(pf, n_test, seed * 1000 + 2)
    sae = train_sae(
        x_id,
        d_sae,
        activation=activation,
        k=k,
        l1_coeff=l1_coeff,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        seed=seed * 1000 + 3,
    )
    fvu_id = fvu(sae, x_id_test)
    model = _readout(pf.basis.shape[0], seed * 1000 + 4)
    x_id_stats = x_id[:n_ood]  # the ID sample GAE may use: feature usage and the ID mean
    cov_id = np.cov(x_id_stats.T, bias=True)
    rows: list[dict[str, Any]] = []
    per_theta: list[dict[str, Any]] = []
    for t_i, theta in enumerate(thetas):
        x_ood = sample_activations(pf, n_ood, seed * 1000 + 10 + t_i, theta_deg=theta, scale=scale)
        x_test = sample_activations(pf, n_test, seed * 1000 + 50 + t_i, theta_deg=theta, scale=scale)
        gae = GAE(energy=energy, ridge=ridge).fit(sae, x_ood, X_id=x_id_stats)
        u_ood_true = rotation_towards(pf, theta) @ pf.active
        methods: dict[str, SparseAutoencoder] = {
            "unadapted": sae,
            "mean shift": mean_shift_adapt(sae, x_ood),
            "decoder refit (no constraint)": refit_decoder(sae, x_ood, ridge=ridge),
            "GAE rotation only": gae.rotated_,
            "GAE": gae.adapted_,
            "fine-tune (Adam)": train_sae(
                x_ood,
                init=sae,
                steps=finetune_steps,
                batch_size=batch_size,
                lr=lr,
                l1_coeff=l1_coeff,
                seed=seed * 1000 + 20 + t_i,
            ),
            "retrain on OOD sample": train_sae(
                x_ood,
                d_sae,
                activation=activation,
                k=k,
                l1_coeff=l1_coeff,
                steps=steps,
                batch_size=batch_size,
                lr=lr,
                seed=seed * 1000 + 30 + t_i,
            ),
        }
        for name, s in methods.items():
            f = fvu(s, x_test)
            rows.append(
                {
                    "theta_deg": theta,
                    "method": name,
                    "fvu": f,
                    "excess_fvu": f - fvu_id,
                    "downstream_fvu": _downstream_fvu(model, s, x_test),
                }
            )
        cov_ood = np.cov(x_ood.T, bias=True)
        per_theta.append(
            {
                "theta_deg": theta,
                "gap": gae.gap_,
                "gap_after": gae.gap_after_,
                "gap_true_subspaces": faithfulness_gap(dictionary_subspace(sae, x_id_stats, pf.k_active), u_ood_true),
                "k_ood": gae.k_,
                "identity_cosine": gae.identity_cosine_,
                "second_moment_shift": float(np.linalg.norm(cov_ood - cov_id)),
                "ood_subspace_error": faithfulness_gap(active_subspace(x_ood, k=pf.k_active)[0], u_ood_true),
            }
        )
    return {"fvu_id": fvu_id, "rows": rows, "per_theta": per_theta, "d_sae": d_sae, "activation": activation}
