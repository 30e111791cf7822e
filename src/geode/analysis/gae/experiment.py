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

:func:`shifted_activations` draws four kinds of shift (``strength`` sets the size):

- ``"rotation"``: the direct rotation above by ``strength`` degrees, codes x1.25;
- ``"stretch"``: an anisotropic stretch inside the active subspace, gains
  :math:`2^{\,s(2i/(k-1) - 1)}` on :math:`u_i` (0.5 to 2 at ``strength`` 1), features unchanged in
  direction before the stretch;
- ``"new_features"``: 64 new unit features in the unused directions :math:`V`, each active with the same
  probability, magnitudes x ``strength``;
- ``"warp"``: a nonlinear warp into the unused directions,
  :math:`x \mapsto x + s\, V \tanh(2\, U^\top x)`.
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
    faithfulness_gap,
    mean_shift_adapt,
    refit_decoder,
)
from geode.analysis.sae import SparseAutoencoder, fvu, train_sae
from geode.core.random import as_generator, torch_generator
from geode.core.validation import check_choice, check_int, check_real

__all__ = [
    "SHIFT_KINDS",
    "PlantedFeatures",
    "planted_features",
    "rotation_towards",
    "run_shift_study",
    "sample_activations",
    "shift_tag",
    "shifted_activations",
]

SHIFT_KINDS = ("rotation", "stretch", "new_features", "warp")
"""The kinds of distribution shift :func:`shifted_activations` makes (see the module docstring)."""


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
    """Ground-truth sparse features in a ``k_active``-dimensional subspace of R^d (see the module docstring).

    ``p_active`` is a probability in [0, 1] and ``noise`` a standard deviation >= 0.
    """
    d = check_int("d", d, low=2)
    k_active = check_int("k_active", k_active, low=1, high=d // 2)
    m = check_int("m", m, low=1)
    check_real("p_active", p_active, low=0.0, high=1.0)
    check_real("noise", noise, low=0.0)
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
    """``n`` activations, shape (n, d), after rotating the features by ``theta_deg`` and scaling the codes.

    ``theta_deg`` lies in [0, 90]; ``scale`` is any finite number.
    """
    n = check_int("n", n, low=1)
    check_real("scale", scale)
    rng = as_generator(seed)
    m, d = pf.features.shape
    on = rng.random((n, m)) < pf.p_active
    codes = np.where(on, rng.uniform(0.5, 1.5, size=(n, m)), 0.0) * scale
    feats = pf.features @ rotation_towards(pf, theta_deg).T
    return codes @ feats + pf.noise * rng.normal(size=(n, d))


def _stretch(pf: PlantedFeatures, strength: float) -> np.ndarray:
    k = pf.k_active
    gains = 2.0 ** (strength * (2.0 * np.arange(k) / max(k - 1, 1) - 1.0))
    u = pf.active
    return np.eye(u.shape[0]) + u @ np.diag(gains - 1.0) @ u.T


def shifted_activations(pf: PlantedFeatures, n: int, seed: int, kind: str, strength: float) -> np.ndarray:
    """``n`` OOD activations (n, d) under a shift of ``kind`` in :data:`SHIFT_KINDS` (module docstring)."""
    kind = check_choice("kind", kind, SHIFT_KINDS)
    strength = check_real("strength", strength, low=0.0)
    n = check_int("n", n, low=1)
    if kind == "rotation":
        return sample_activations(pf, n, seed, theta_deg=strength, scale=1.25)
    rng = as_generator(seed)
    m, d = pf.features.shape
    on = rng.random((n, m)) < pf.p_active
    codes = np.where(on, rng.uniform(0.5, 1.5, size=(n, m)), 0.0)
    noise = pf.noise * rng.normal(size=(n, d))
    x = codes @ pf.features
    if kind == "stretch":
        x = x @ _stretch(pf, strength).T
    elif kind == "new_features":
        c = as_generator(seed + 7919).normal(size=(64, pf.k_active))
        c /= np.linalg.norm(c, axis=1, keepdims=True)
        new = c @ pf.unused.T
        on2 = rng.random((n, 64)) < pf.p_active
        x = x + np.where(on2, rng.uniform(0.5, 1.5, size=(n, 64)), 0.0) * strength @ new
    else:  # warp
        x = x + strength * np.tanh(2.0 * x @ pf.active) @ pf.unused.T
    return x + noise


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
    shifts: Sequence[tuple[str, float]] = (("rotation", 10.0), ("rotation", 30.0), ("rotation", 60.0)),
    tune_shift: tuple[str, float] = ("rotation", 60.0),
    grids: dict[str, dict[str, list[Any]]] | None = None,
    extend: int = 0,
    retrain_at: Sequence[tuple[str, float]] = (("rotation", 60.0),),
    n_id: int = 20000,
    n_ood: int = 2000,
    n_test: int = 4000,
    val_fraction: float = 0.2,
    activation: str = "topk",
    k: int = 8,
    l1_coeff: float = 0.05,
    d_sae: int = 256,
    steps: int = 3000,
    finetune_steps: int = 2000,
    batch_size: int = 256,
    lr: float = 1e-3,
) -> dict[str, Any]:
    """Train an ID dictionary, tune every adaptation equally, then adapt at each shift and evaluate.

    Tuning (protocol v2, equal budget, :func:`geode.claims.tune`): at ``tune_shift`` the ``n_ood``
    unlabeled OOD activations are split into a fit part and a validation part (``val_fraction``); each
    method's grid in ``grids`` is scored by the validation FVU; the selected values are then used at every
    shift, where each method is fitted on all ``n_ood`` activations and evaluated on ``n_test`` held-out
    ones. Methods: ``gae_theory`` (the release, grid over ``energy``), ``gae_direct`` (ours, grid over
    ``ridge``), ``refit`` (the unconstrained decoder refit, grid over ``ridge``), ``finetune`` (Adam from
    the ID dictionary, grid over ``lr``); mean shift has no parameter; retraining a new dictionary on the
    OOD sample (at ``retrain_at`` only, for cost) uses the ID dictionary's settings.

    ``shifts`` lists at least one ``(kind, strength)`` pair; ``retrain_at`` may be empty (no retraining at any
    shift); ``val_fraction`` lies in (0, 1).

    Returns ``rows`` (one dict per shift and method with ``fvu``, ``excess_fvu`` over the ID dictionary's
    ID test FVU, ``downstream_fvu``), ``per_shift`` (gaps, covariance shift, diagnostics) and ``tuning``
    (the :class:`geode.claims.TuneResult`).
    """
    from geode.claims import tune

    shifts = _check_shifts("shifts", shifts)
    if not shifts:
        raise ValueError("shifts must list at least one (kind, strength) pair")
    tune_shift = _check_shifts("tune_shift", [tune_shift])[0]
    retrain_at = _check_shifts("retrain_at", retrain_at)
    for name, v in (("n_id", n_id), ("n_ood", n_ood), ("n_test", n_test)):
        check_int(name, v, low=2)
    check_real("val_fraction", val_fraction, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    if grids is None:
        grids = {
            "gae_theory": {"energy": [0.9, 0.99, 0.999, 0.9999]},
            "gae_direct": {"ridge": [0.01, 0.1, 1.0, 10.0]},
            "refit": {"ridge": [0.01, 0.1, 1.0, 10.0]},
            "finetune": {"lr": [3e-4, 1e-3, 3e-3, 1e-2]},
        }
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
    x_id_stats = x_id[:n_ood]  # the ID sample the direct GAE may use: feature usage and the ID mean
    cov_id = np.cov(x_id_stats.T, bias=True)

    def adapt(method: str, params: dict[str, Any], x: np.ndarray, fseed: int) -> tuple[SparseAutoencoder, Any]:
        if method == "gae_theory":
            g = GAE(mode="theory", energy=params["energy"]).fit(sae, x)
            return g.adapted_, g
        if method == "gae_direct":
            g = GAE(mode="direct", ridge=params["ridge"]).fit(sae, x, X_id=x_id_stats)
            return g.adapted_, g
        if method == "refit":
            return refit_decoder(sae, x, ridge=params["ridge"]), None
        out = train_sae(
            x, init=sae, steps=finetune_steps, batch_size=batch_size, lr=params["lr"], l1_coeff=l1_coeff, seed=fseed
        )
        return out, None

    kind, strength = tune_shift
    x_tune = shifted_activations(pf, n_ood, seed * 1000 + 5, kind, strength)
    n_val = max(2, int(round(val_fraction * n_ood)))
    x_fit, x_val = x_tune[:-n_val], x_tune[-n_val:]

    def evaluate(method: str, params: dict[str, Any]) -> float:
        s, _ = adapt(method, params, x_fit, seed * 1000 + 6)
        return fvu(s, x_val)

    limits = {"energy": (0.0, 1.0), "ridge": (0.0, math.inf), "lr": (0.0, math.inf)}
    res = tune(evaluate, grids, maximize=False, extend=extend, limits=limits)
    chosen = {m: res.params(m) for m in grids}

    rows: list[dict[str, Any]] = []
    per_shift: list[dict[str, Any]] = []
    rng_sub = as_generator(seed * 1000 + 7)
    for i, (kind, strength) in enumerate(shifts):
        tag = shift_tag(kind, strength)
        x_ood = shifted_activations(pf, n_ood, seed * 1000 + 10 + i, kind, strength)
        x_test = shifted_activations(pf, n_test, seed * 1000 + 50 + i, kind, strength)
        theory, g_theory = adapt("gae_theory", chosen["gae_theory"], x_ood, 0)
        direct, g_direct = adapt("gae_direct", chosen["gae_direct"], x_ood, 0)
        methods: dict[str, SparseAutoencoder] = {
            "unadapted": sae,
            "mean shift": mean_shift_adapt(sae, x_ood),
            "decoder refit (no constraint)": adapt("refit", chosen["refit"], x_ood, 0)[0],
            "GAE (release, theory mode)": theory,
            "GAE (ours, direct rotation + refit)": direct,
            "GAE (ours, rotation only)": g_direct.rotated_,
            "fine-tune (Adam)": adapt("finetune", chosen["finetune"], x_ood, seed * 1000 + 20 + i)[0],
        }
        if (kind, strength) in {tuple(r) for r in retrain_at}:
            methods["retrain on OOD sample"] = train_sae(
                x_ood,
                d_sae,
                activation=activation,
                k=k,
                l1_coeff=l1_coeff,
                steps=steps,
                batch_size=batch_size,
                lr=lr,
                seed=seed * 1000 + 30 + i,
            )
        for name, s in methods.items():
            f = fvu(s, x_test)
            rows.append(
                {
                    "shift": tag,
                    "kind": kind,
                    "strength": strength,
                    "method": name,
                    "fvu": f,
                    "excess_fvu": f - fvu_id,
                    "downstream_fvu": _downstream_fvu(model, s, x_test),
                }
            )
        cov_ood = np.cov(x_ood.T, bias=True)
        # negative control of the gap: a random subspace of the same dimension against the OOD subspace
        q, _ = np.linalg.qr(rng_sub.normal(size=(pf.basis.shape[0], g_theory.k_)))
        per_shift.append(
            {
                "shift": tag,
                "kind": kind,
                "strength": strength,
                "gap": g_theory.gap_,
                "gap_usage_weighted": g_direct.gap_,
                "gap_random_subspace": faithfulness_gap(q, g_theory.U_ood_),
                "k_theory": g_theory.k_,
                "k_direct": g_direct.k_,
                "identity_cosine": g_direct.identity_cosine_,
                "second_moment_shift": float(np.linalg.norm(cov_ood - cov_id)),
            }
        )
    return {
        "fvu_id": fvu_id,
        "rows": rows,
        "per_shift": per_shift,
        "tuning": res,
        "chosen": chosen,
        "d_sae": d_sae,
        "activation": activation,
    }


def _check_shifts(name: str, shifts: Any) -> list[tuple[str, float]]:
    """A sequence of ``(kind, strength)`` pairs, each kind in :data:`SHIFT_KINDS` and strength finite >= 0."""
    if isinstance(shifts, (str, bytes)) or not isinstance(shifts, Sequence):
        raise TypeError(f"{name} must be a sequence of (kind, strength) pairs; got {type(shifts).__name__}")
    out = []
    for i, pair in enumerate(shifts):
        where = name if name == "tune_shift" else f"{name}[{i}]"
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"{where} must be a (kind, strength) pair; got {pair!r}")
        check_choice(f"{where} kind", pair[0], SHIFT_KINDS)
        check_real(f"{where} strength", pair[1], low=0.0)
        out.append(pair)
    return out


def shift_tag(kind: str, strength: float) -> str:
    """A short name of a shift: ``rotation_60``, ``warp_0.5``."""
    return f"{kind}_{strength:g}"
