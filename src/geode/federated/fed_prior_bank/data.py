r"""Synthetic network-flow features with the class structure of CICIDS2017 / CICDDoS2019.

The real CSVs cannot be downloaded here, so the claim check runs on a generator that keeps what the
method relies on: attack classes come in *families* (DoS, DDoS, Web, PortScan, Bot, Brute-force) whose
members share statistics, and the class names, real CICIDS/CICDDoS label names, say which family a
class belongs to. The generative model, per class :math:`c` in family :math:`f(c)`:

.. math::

    z \sim \mathcal N\big(m_{f} + o_c,\; A_c A_c^\top\big), \qquad
    A_c = s\, A_{f} (I + \epsilon E_c), \qquad
    x = \operatorname{softplus}(W z + b) + \sigma \xi ,

with family means :math:`m_f \sim \mathcal N(0, \sigma_f^2 I)`, class offsets :math:`o_c \sim \mathcal N(0,
\sigma_o^2 I)`, a family covariance factor :math:`A_f` shared by the family's classes (each class
perturbs it by :math:`\epsilon E_c`), and a fixed random readout :math:`W, b` to positive, skewed
"flow statistics" :math:`x \in \mathbb R^D` (durations, packet counts and rates on a log scale behave
like this). One class per family is held out as a rare class: it never appears in federated training,
and few-shot episodes are drawn from these six.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_int, check_positive, check_real

__all__ = ["FAMILIES", "FLOW_CLASSES", "RARE_CLASSES", "FlowData", "make_flow_data"]

FAMILIES: tuple[str, ...] = ("DoS", "DDoS", "Web", "PortScan", "Bot", "Brute-force")

FLOW_CLASSES: tuple[tuple[str, str], ...] = (
    ("DoS Hulk", "DoS"),
    ("DoS GoldenEye", "DoS"),
    ("DoS slowloris", "DoS"),
    ("DoS Slowhttptest", "DoS"),
    ("DDoS LOIT", "DDoS"),
    ("DrDoS DNS", "DDoS"),
    ("DrDoS LDAP", "DDoS"),
    ("DrDoS MSSQL", "DDoS"),
    ("DrDoS NTP", "DDoS"),
    ("DrDoS SNMP", "DDoS"),
    ("Web Attack Brute Force", "Web"),
    ("Web Attack XSS", "Web"),
    ("Web Attack Sql Injection", "Web"),
    ("PortScan", "PortScan"),
    ("Portmap", "PortScan"),
    ("Infiltration Portscan", "PortScan"),
    ("Bot", "Bot"),
    ("Bot ARES", "Bot"),
    ("Bot Zeus", "Bot"),
    ("FTP-Patator", "Brute-force"),
    ("SSH-Patator", "Brute-force"),
    ("SSH-Bruteforce", "Brute-force"),
)
"""The 22 classes (label name, family): CICIDS2017 and CICDDoS2019 label names, plus variants."""

RARE_CLASSES: tuple[str, ...] = (
    "DoS Slowhttptest",
    "DrDoS SNMP",
    "Web Attack Sql Injection",
    "Infiltration Portscan",
    "Bot Zeus",
    "SSH-Bruteforce",
)
"""One held-out class per family: the low-shot targets."""


@dataclass(frozen=True)
class FlowData:
    """Synthetic flow features.

    Attributes
    ----------
    x_base, y_base : ndarray
        Base-class flows for federated training (labels index :attr:`base_names`).
    x_rare, y_rare : ndarray
        Rare-class flows for few-shot episodes (labels index :attr:`rare_names`).
    base_names, rare_names : tuple of str
        Label phrases of the base and rare classes.
    base_family, rare_family : ndarray of int
        Family index (into :data:`FAMILIES`) of each class.
    """

    x_base: np.ndarray
    y_base: np.ndarray
    x_rare: np.ndarray
    y_rare: np.ndarray
    base_names: tuple[str, ...]
    rare_names: tuple[str, ...]
    base_family: np.ndarray
    rare_family: np.ndarray


def make_flow_data(
    seed: int = 0,
    *,
    n_per_base: int = 300,
    n_per_rare: int = 200,
    n_features: int = 24,
    latent_dim: int = 10,
    family_spread: float = 3.0,
    class_spread: float = 1.2,
    noise_scale: float = 1.75,
    cov_perturbation: float = 0.3,
    obs_noise: float = 0.05,
) -> FlowData:
    """Draw a synthetic flow data set (see the module docstring for the model).

    Parameters
    ----------
    seed : int
        Seeds everything (class structure and samples).
    n_per_base, n_per_rare : int
        Flows per base class and per rare class.
    n_features, latent_dim : int
        Observed dimension :math:`D` and latent dimension.
    family_spread, class_spread : float
        :math:`\\sigma_f` and :math:`\\sigma_o`: spread of family means and of class offsets within a family.
    noise_scale : float
        :math:`s`, the scale of the within-class latent noise.
    cov_perturbation : float
        :math:`\\epsilon`, how much a class's covariance departs from its family's.
    obs_noise : float
        :math:`\\sigma`, observation noise on the flow features.
    """
    rng = as_generator(seed)
    n_per_base = check_int("n_per_base", n_per_base, low=2)
    n_per_rare = check_int("n_per_rare", n_per_rare, low=2)
    d_obs = check_int("n_features", n_features, low=1)
    q = check_int("latent_dim", latent_dim, low=1)
    family_spread = check_real("family_spread", family_spread, low=0.0)
    class_spread = check_real("class_spread", class_spread, low=0.0)
    noise_scale = check_positive("noise_scale", noise_scale)
    cov_perturbation = check_real("cov_perturbation", cov_perturbation, low=0.0)
    obs_noise = check_real("obs_noise", obs_noise, low=0.0)

    fam_mean = rng.normal(scale=family_spread, size=(len(FAMILIES), q))
    fam_factor = []
    for _ in FAMILIES:  # a random factor with unit average variance and an uneven spectrum
        a = rng.normal(size=(q, q)) @ np.diag(np.linspace(1.5, 0.3, q))
        fam_factor.append(a / np.sqrt(np.trace(a @ a.T) / q))
    w = rng.normal(scale=1.0 / np.sqrt(q), size=(d_obs, q))
    b = rng.normal(scale=0.5, size=d_obs)

    def draw(fam: int, n: int) -> np.ndarray:
        mean = fam_mean[fam] + rng.normal(scale=class_spread, size=q)
        factor = noise_scale * fam_factor[fam] @ (np.eye(q) + cov_perturbation * rng.normal(size=(q, q)) / np.sqrt(q))
        z = mean + rng.normal(size=(n, q)) @ factor.T
        return np.logaddexp(0.0, z @ w.T + b) + obs_noise * rng.normal(size=(n, d_obs))  # softplus

    fam_index = {f: i for i, f in enumerate(FAMILIES)}
    xb, yb, xr, yr = [], [], [], []
    base_names, rare_names, base_fam, rare_fam = [], [], [], []
    for name, fam in FLOW_CLASSES:
        f = fam_index[fam]
        if name in RARE_CLASSES:
            xr.append(draw(f, n_per_rare))
            yr.append(np.full(n_per_rare, len(rare_names)))
            rare_names.append(name)
            rare_fam.append(f)
        else:
            xb.append(draw(f, n_per_base))
            yb.append(np.full(n_per_base, len(base_names)))
            base_names.append(name)
            base_fam.append(f)
    return FlowData(
        np.concatenate(xb).astype(np.float32),
        np.concatenate(yb).astype(np.int64),
        np.concatenate(xr).astype(np.float32),
        np.concatenate(yr).astype(np.int64),
        tuple(base_names),
        tuple(rare_names),
        np.asarray(base_fam, dtype=np.int64),
        np.asarray(rare_fam, dtype=np.int64),
    )
