r"""Two-mode Fock-basis states, homodyne measurement with loss and electronic noise, fidelity.

Conventions: :math:`x = (a + a^\dagger)/\sqrt2` (vacuum variance 1/2), Hermite functions
:math:`\varphi_n(x) = \langle x|n\rangle`, and the quadrature at phase :math:`\theta` has
:math:`\langle x_\theta|n\rangle = e^{-in\theta}\varphi_n(x)`. A two-mode state
:math:`\psi = \sum_{nm} c_{nm}|n,m\rangle` measured at phases :math:`(\theta_1, \theta_2)` has the ideal
joint quadrature density :math:`p_\theta(x_1, x_2) = |\sum_{nm} c_{nm} e^{-i(n\theta_1 + m\theta_2)}
\varphi_n(x_1)\varphi_m(x_2)|^2`. A loss :math:`\eta` before an ideal homodyne detector and Gaussian
electronic noise :math:`\sigma_e` make the measured quadrature :math:`y = \sqrt\eta\,x + \xi`,
:math:`\xi \sim N(0, (1-\eta)/2 + \sigma_e^2)`, independently per mode: linear in :math:`\rho`, so the
same kernel turns any state's ideal density into the measured one (and is the POVM of iterative MLE).
"""

from __future__ import annotations

import cmath
import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr

from geode.core.validation import check_array, check_real

__all__ = [
    "HomodyneData",
    "QuadratureGrid",
    "fidelity",
    "hermite_functions",
    "simulate_homodyne",
    "two_mode_cat",
]


def hermite_functions(cutoff: int, x: np.ndarray) -> np.ndarray:
    r""":math:`\varphi_n(x)`, :math:`n < \text{cutoff}`, shape ``(cutoff, len(x))``, by the stable recurrence.

    :math:`\varphi_0 = \pi^{-1/4}e^{-x^2/2}`, :math:`\varphi_{n+1} = \sqrt{2/(n+1)}\,x\varphi_n -
    \sqrt{n/(n+1)}\,\varphi_{n-1}`.

    ``x`` is a finite scalar or 1-D array (a ``ValueError`` naming it otherwise); an empty ``x`` gives an
    empty ``(cutoff, 0)`` table.
    """
    if int(cutoff) != cutoff or cutoff < 1:
        raise ValueError(f"cutoff must be a positive integer; got {cutoff!r}")
    x = check_array("x", x, ndim=(0, 1))
    out = np.empty((int(cutoff), x.size))
    out[0] = math.pi**-0.25 * np.exp(-(x**2) / 2)
    if cutoff > 1:
        out[1] = math.sqrt(2.0) * x * out[0]
    for n in range(1, int(cutoff) - 1):
        out[n + 1] = math.sqrt(2.0 / (n + 1)) * x * out[n] - math.sqrt(n / (n + 1)) * out[n - 1]
    return out


def _as_amplitudes(psi: Any, name: str = "psi") -> np.ndarray:
    """``psi`` as a finite complex array of amplitudes: a vector, or the (cutoff, cutoff) table :math:`c_{nm}`."""
    try:
        arr = np.asarray(psi, dtype=complex)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of complex amplitudes; got {type(psi).__name__}") from exc
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be a state vector (1-D, or the 2-D table c_nm); got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def _check_state(psi: np.ndarray, cutoff: int | None = None, name: str = "psi") -> np.ndarray:
    psi = _as_amplitudes(psi, name).reshape(-1)
    if cutoff is not None and psi.size != cutoff**2:
        raise ValueError(f"{name} must have cutoff**2 = {cutoff**2} amplitudes; got {psi.size}")
    norm = np.linalg.norm(psi)
    if not np.isfinite(norm) or abs(norm - 1.0) > 1e-6:
        raise ValueError(f"{name} must be normalised (||{name}|| = 1); got ||{name}|| = {norm:.6g}")
    return psi


def two_mode_cat(alpha: float, cutoff: int, parity: int = 1) -> np.ndarray:
    r"""The two-mode cat :math:`\propto |\alpha,\alpha\rangle + (-1)^{k}|-\alpha,-\alpha\rangle` in a Fock cutoff.

    Returns the normalised amplitudes :math:`c_{nm}` flattened to ``cutoff**2`` (row index :math:`n`).
    ``parity=1`` is the even cat (+), ``-1`` the odd one. ``alpha`` is a finite real or complex number.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Complex):
        raise TypeError(f"alpha must be a real or complex number; got {type(alpha).__name__} {alpha!r}")
    if not cmath.isfinite(complex(alpha)):
        raise ValueError(f"alpha must be finite; got {alpha!r}")
    if int(cutoff) != cutoff or cutoff < 2:
        raise ValueError(f"cutoff must be an integer >= 2; got {cutoff!r}")
    if parity not in (1, -1):
        raise ValueError(f"parity must be 1 or -1; got {parity!r}")
    n = np.arange(int(cutoff))
    coh = np.exp(-(abs(alpha) ** 2) / 2) * np.array(
        [alpha**k / math.sqrt(math.factorial(k)) for k in n], dtype=complex
    )
    cat = np.outer(coh, coh) + parity * np.outer(coh * (-1.0) ** n, coh * (-1.0) ** n)
    cat = cat.reshape(-1)
    nrm = np.linalg.norm(cat)
    if nrm < 1e-12:
        raise ValueError(f"alpha={alpha!r} gives the zero vector for this parity")
    return cat / nrm


def fidelity(psi_true: np.ndarray, estimate: np.ndarray) -> float:
    r"""Fidelity :math:`\langle\psi|\hat\rho|\psi\rangle` of a pure target with a pure state or density matrix.

    ``estimate`` is a state vector (:math:`|\langle\psi|\hat\psi\rangle|^2`) or a density matrix
    (Hermitian, unit trace). Both must be normalised and finite; a state with itself gives 1.
    """
    psi = _check_state(psi_true, name="psi_true")
    est = _as_amplitudes(estimate, "estimate")
    if est.ndim == 2 and est.shape == (psi.size, psi.size):
        tr = np.trace(est).real
        if abs(tr - 1.0) > 1e-6:
            raise ValueError(f"estimate (a density matrix) must have unit trace; got {tr:.6g}")
        return float(np.real(psi.conj() @ est @ psi))
    est = _check_state(est, name="estimate")
    if est.size != psi.size:
        raise ValueError(f"estimate must have {psi.size} amplitudes; got {est.size}")
    return float(abs(np.vdot(psi, est)) ** 2)


@dataclass
class QuadratureGrid:
    r"""Bins of the measured quadratures and the measurement model on them.

    ``n_bins`` equal bins on :math:`[-L, L]` per mode (the outer bins open to :math:`\pm\infty`); the ideal
    density is evaluated at the bin centres :math:`x_j` (weights :math:`\Delta p(x_j)`) and the kernel
    :math:`K_{ij} = P(y \in \text{bin}_i \mid x_j)
    = \Phi((b_{i+1} - \sqrt\eta x_j)/s) - \Phi((b_i - \sqrt\eta x_j)/s)`,
    :math:`s^2 = (1-\eta)/2 + \sigma_e^2`, maps it to measured bin probabilities :math:`K P K^\top`.
    """

    n_bins: int = 32
    half_width: float = 4.5
    eta: float = 1.0
    sigma_e: float = 0.0

    def __post_init__(self) -> None:
        if (
            isinstance(self.n_bins, bool)
            or not isinstance(self.n_bins, numbers.Real)
            or int(self.n_bins) != self.n_bins
            or self.n_bins < 4
        ):
            raise ValueError(f"n_bins must be an integer >= 4; got {self.n_bins!r}")
        check_real("half_width", self.half_width, low=0.0, low_inclusive=False)
        if not 0 < check_real("eta", self.eta) <= 1:
            raise ValueError(f"eta must be in (0, 1]; got {self.eta!r}")
        if not check_real("sigma_e", self.sigma_e) >= 0:
            raise ValueError(f"sigma_e must be >= 0; got {self.sigma_e!r}")
        self.edges = np.linspace(-self.half_width, self.half_width, int(self.n_bins) + 1)
        self.centres = 0.5 * (self.edges[1:] + self.edges[:-1])
        self.width = float(self.edges[1] - self.edges[0])
        s = math.sqrt((1 - self.eta) / 2 + self.sigma_e**2)
        mean = math.sqrt(self.eta) * self.centres
        if s > 0:
            e = self.edges.copy()
            e[0], e[-1] = -np.inf, np.inf
            cdf = ndtr((e[:, None] - mean[None, :]) / s)
            self.kernel = np.diff(cdf, axis=0)  # (bins_y, bins_x)
        else:
            self.kernel = np.zeros((int(self.n_bins), int(self.n_bins)))
            idx = np.clip(np.searchsorted(self.edges, mean, side="right") - 1, 0, int(self.n_bins) - 1)
            self.kernel[idx, np.arange(int(self.n_bins))] = 1.0
        self.noise_std = s

    def points(self) -> np.ndarray:
        """Bin centres of the 2-D grid, shape ``(n_bins**2, 2)``, row-major (first mode slow)."""
        g1, g2 = np.meshgrid(self.centres, self.centres, indexing="ij")
        return np.stack([g1.ravel(), g2.ravel()], axis=1)

    def basis(self, cutoff: int, phases: np.ndarray) -> np.ndarray:
        r""":math:`\sqrt\Delta\,\langle x_{1,\theta_1}, x_{2,\theta_2}|n, m\rangle` at the centres.

        Shape (K, G^2, cutoff^2).
        """
        phases = np.asarray(phases, dtype=float)
        h = hermite_functions(cutoff, self.centres) * math.sqrt(self.width)  # (N, G)
        n = np.arange(cutoff)
        out = []
        for t1, t2 in phases:
            b1 = (np.exp(-1j * n * t1)[:, None] * h).T  # (G, N)
            b2 = (np.exp(-1j * n * t2)[:, None] * h).T
            out.append(np.einsum("in,jm->ijnm", b1, b2).reshape(self.centres.size**2, cutoff**2))
        return np.stack(out)

    def bin_index(self, samples: np.ndarray) -> np.ndarray:
        """Flat bin index of 2-D samples ``(..., 2)`` (outside points go to the outer bins)."""
        i = np.clip(np.searchsorted(self.edges, samples, side="right") - 1, 0, int(self.n_bins) - 1)
        return i[..., 0] * int(self.n_bins) + i[..., 1]


@dataclass
class HomodyneData:
    """Measured quadrature pairs ``samples`` (K, S, 2) at ``phases`` (K, 2), with their binned ``counts`` (K, G^2).

    All three are finite float arrays with the same number K >= 1 of settings, at least one shot per setting,
    and non-negative counts (a ``ValueError`` naming the argument otherwise).
    """

    phases: np.ndarray
    samples: np.ndarray
    counts: np.ndarray

    def __post_init__(self) -> None:
        phases = _check_phases(self.phases)
        samples = check_array("samples", self.samples, ndim=3)
        if samples.shape[0] != phases.shape[0] or samples.shape[1] < 1 or samples.shape[2] != 2:
            raise ValueError(
                f"samples must have shape ({phases.shape[0]}, shots >= 1, 2), one row per phase setting; "
                f"got {samples.shape}"
            )
        counts = check_array("counts", self.counts, ndim=2)
        if counts.shape[0] != phases.shape[0] or counts.shape[1] < 1:
            raise ValueError(
                f"counts must have shape ({phases.shape[0]}, n_bins**2), one row per phase setting; got {counts.shape}"
            )
        if np.any(counts < 0):
            raise ValueError("counts must be non-negative (binned shot counts)")
        self.phases, self.samples, self.counts = phases, samples, counts


def _check_phases(phases: Any) -> np.ndarray:
    """Phase settings: a finite (K, 2) float array, K >= 1."""
    arr = check_array("phases", phases, ndim=2, min_rows=1)
    if arr.shape[1] != 2:
        raise ValueError(f"phases must have shape (n_settings, 2); got {arr.shape}")
    return arr


def simulate_homodyne(
    psi: np.ndarray,
    phases: np.ndarray,
    shots: int,
    grid: QuadratureGrid,
    *,
    seed: int | np.random.Generator = 0,
    oversample: int = 4,
) -> HomodyneData:
    r"""Draw ``shots`` joint homodyne outcomes per phase setting of a two-mode state, with loss and noise.

    The ideal density :math:`|\Psi_\theta(x_1, x_2)|^2` is sampled on a grid ``oversample`` times finer than
    ``grid`` on :math:`[-L-1, L+1]^2` (uniform jitter inside the fine cell), then each quadrature becomes
    :math:`\sqrt\eta\,x + N(0, (1-\eta)/2 + \sigma_e^2)` with ``grid``'s :math:`\eta, \sigma_e`.

    Raises
    ------
    ValueError
        ``psi`` not normalised, not finite or not a square number of amplitudes, ``shots`` not a positive
        integer, ``phases`` not a finite array of shape (K, 2), K >= 1.
    """
    psi = _as_amplitudes(psi).reshape(-1)
    cutoff = int(round(math.sqrt(psi.size)))
    if cutoff**2 != psi.size:
        raise ValueError(f"psi must hold cutoff**2 amplitudes of a two-mode state; got {psi.size}")
    psi = _check_state(psi, cutoff)
    if isinstance(shots, bool) or int(shots) != shots or shots < 1:
        raise ValueError(f"shots must be a positive integer; got {shots!r}")
    phases = _check_phases(phases)
    if not isinstance(grid, QuadratureGrid):
        raise TypeError(f"grid must be a QuadratureGrid; got {type(grid).__name__}")
    rng = np.random.default_rng(seed)
    fine = QuadratureGrid(int(grid.n_bins) * int(oversample), grid.half_width + 1.0)
    B = fine.basis(cutoff, phases)
    amp = B @ psi  # (K, F^2)
    p = np.abs(amp) ** 2
    p /= p.sum(axis=1, keepdims=True)
    pts = fine.points()
    out = np.empty((phases.shape[0], int(shots), 2))
    for k in range(phases.shape[0]):
        idx = rng.choice(p.shape[1], size=int(shots), p=p[k])
        x = pts[idx] + (rng.random((int(shots), 2)) - 0.5) * fine.width
        out[k] = math.sqrt(grid.eta) * x + grid.noise_std * rng.standard_normal((int(shots), 2))
    flat = grid.bin_index(out)
    counts = np.zeros((phases.shape[0], int(grid.n_bins) ** 2))
    for k in range(phases.shape[0]):
        counts[k] = np.bincount(flat[k], minlength=counts.shape[1])
    return HomodyneData(phases=phases, samples=out, counts=counts)
