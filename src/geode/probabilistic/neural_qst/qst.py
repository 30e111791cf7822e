r"""Neural QST (an overparameterised network for the wavefunction, rank-1 factored gradient descent,
max-sliced W1 loss) and its baselines (iterative MLE :math:`R\rho R`, Cholesky GD-QST, the network on NLL).

Every method sees the same measurement model (:class:`~geode.probabilistic.neural_qst.states.QuadratureGrid`):
the measured bin probabilities of a state :math:`\rho` at setting :math:`k` are
:math:`p_k = K\,\mathrm{diag}(B_k\rho B_k^\dagger)\,K^\top` (as a :math:`G\times G` array), with :math:`B_k`
the quadrature basis at the bin centres and :math:`K` the loss + electronic-noise kernel.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_array, check_positive, check_tensor
from geode.probabilistic.neural_qst.sliced import uniform_directions
from geode.probabilistic.neural_qst.states import HomodyneData, QuadratureGrid, _check_phases, _check_state

__all__ = [
    "MaxSlicedW1Loss",
    "MeasurementModel",
    "NeuralWavefunction",
    "QSTResult",
    "fit_cholesky",
    "fit_neural",
    "imle",
]

_EPS = 1e-9


def _whole(name: str, value: Any, low: int) -> int:
    """``value`` as an int >= ``low`` (an integral float such as 3.0 is accepted), else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an integer >= {low}; got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or int(value) != value or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    return int(value)


def _check_grid(grid: Any) -> QuadratureGrid:
    if not isinstance(grid, QuadratureGrid):
        raise TypeError(f"grid must be a QuadratureGrid; got {type(grid).__name__}")
    return grid


class MeasurementModel:
    """Torch form of the measurement model for a cutoff, the phase settings and a grid (complex128).

    ``grid`` is a :class:`QuadratureGrid`, ``cutoff`` an integer >= 1 (Fock levels per mode) and ``phases`` a
    finite float array of shape ``(n_settings, 2)``, ``n_settings >= 1`` (a ``ValueError``/``TypeError``
    naming the argument otherwise).
    """

    def __init__(self, grid: QuadratureGrid, cutoff: int, phases: np.ndarray) -> None:
        self.grid = _check_grid(grid)
        self.cutoff = _whole("cutoff", cutoff, 1)
        phases = _check_phases(phases)
        self.dim = self.cutoff**2
        self.G = int(grid.n_bins)
        self.B = torch.as_tensor(grid.basis(self.cutoff, phases))  # (K, G^2, D) complex128
        self.K = torch.as_tensor(grid.kernel)  # (G, G) float64
        self.n_settings = self.B.shape[0]

    def _blur(self, P: torch.Tensor) -> torch.Tensor:
        P = P.reshape(-1, self.G, self.G)
        return (self.K @ P @ self.K.T).reshape(-1, self.G * self.G)

    def probs_pure(self, psi: torch.Tensor) -> torch.Tensor:
        """Measured bin probabilities of a normalised state vector, shape (K, G^2)."""
        return self._blur((self.B @ psi).abs() ** 2)

    def probs_rho(self, rho: torch.Tensor) -> torch.Tensor:
        """Measured bin probabilities of a density matrix, shape (K, G^2)."""
        ideal = ((self.B @ rho) * self.B.conj()).sum(-1).real
        return self._blur(ideal)

    def back(self, W: torch.Tensor) -> torch.Tensor:
        r""":math:`\sum_k B_k^\dagger\,\mathrm{diag}(K^\top W_k K)\,B_k` for bin weights ``W`` (K, G^2)."""
        W = W.reshape(-1, self.G, self.G)
        Wx = (self.K.T @ W @ self.K).reshape(-1, self.G * self.G)
        B = self.B.reshape(-1, self.dim)
        return (B.conj().T * Wx.reshape(-1).to(B.dtype)) @ B


def nll(probs: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood per shot of binned counts."""
    return -(counts * torch.log(probs + _EPS)).sum() / counts.sum()


class MaxSlicedW1Loss:
    r"""Max-sliced :math:`W_1` between the model's measured distribution and the shots, averaged over settings.

    .. math::

        L(\psi) = \frac1K\sum_k \max_{p} W_1\big(u_p^\top{}_\#\, \textstyle\sum_b p_{k,b}(\psi)\delta_{y_b},\;
        u_p^\top{}_\#\, \frac1S\sum_s \delta_{y_{k,s}}\big)

    with :math:`y_b` the bin centres. The positions never move, so the merge order of each (setting,
    direction) is computed once; a call is a gather, a running sum and a dot product.

    ``samples`` is a finite float array of shape ``(n_settings, shots, 2)`` with at least one setting and one
    shot; a call takes ``probs``, a finite floating tensor of shape ``(n_settings, n_bins**2)`` (the model's
    measured bin probabilities). Anything else raises a ``ValueError``/``TypeError`` naming the argument.
    """

    def __init__(self, grid: QuadratureGrid, samples: np.ndarray, n_directions: int = 16) -> None:
        grid = _check_grid(grid)
        samples = check_array("samples", samples, ndim=3)
        if samples.shape[0] < 1 or samples.shape[1] < 1 or samples.shape[2] != 2:
            raise ValueError(f"samples must have shape (n_settings >= 1, shots >= 1, 2); got {samples.shape}")
        n_directions = _whole("n_directions", n_directions, 1)
        U = uniform_directions(int(n_directions), 2)  # (2, P)
        gz = grid.points() @ U  # (G^2, P)
        sz = samples @ U  # (K, S, P)
        K, S = samples.shape[:2]
        z = np.concatenate([np.broadcast_to(gz.T, (K, *gz.T.shape)), sz.transpose(0, 2, 1)], axis=-1)
        order = np.argsort(z, axis=-1, kind="stable")
        self.order = torch.as_tensor(order)
        self.gaps = torch.as_tensor(np.diff(np.take_along_axis(z, order, -1), axis=-1))
        self.data_w = torch.full((K, int(n_directions), S), -1.0 / S, dtype=torch.float64)
        self.directions = U
        self.n_bins2 = int(gz.shape[0])

    def _check_probs(self, probs: Any) -> torch.Tensor:
        K = self.order.shape[0]
        return check_tensor("probs", probs, shape=(K, self.n_bins2), floating=True)

    def _per_direction(self, probs: torch.Tensor) -> torch.Tensor:
        K, P, _ = self.order.shape
        w = torch.cat([probs[:, None, :].expand(K, P, probs.shape[-1]), self.data_w], dim=-1)
        c = torch.cumsum(torch.gather(w, -1, self.order), dim=-1)
        return (c[..., :-1].abs() * self.gaps).sum(-1)

    def _value(self, probs: torch.Tensor) -> torch.Tensor:
        """The loss without the input check (``fit_neural``'s loop, where a NaN flags a divergence)."""
        return self._per_direction(probs).max(-1).values.mean()

    def per_direction(self, probs: torch.Tensor) -> torch.Tensor:
        """:math:`W_1` per setting and direction, shape (K, P)."""
        return self._per_direction(self._check_probs(probs))

    def __call__(self, probs: torch.Tensor) -> torch.Tensor:
        return self._value(self._check_probs(probs))


class NeuralWavefunction(nn.Module):
    r"""An overparameterised MLP whose output is the wavefunction.

    :math:`\psi = c/\|c\|`, :math:`c = f_w(z) \in \mathbb C^D`.

    A fixed random input :math:`z` (a buffer drawn from ``seed``) goes through ``depth`` hidden layers of
    ``width`` units (tanh); the last layer gives :math:`(\mathrm{Re}\,c, \mathrm{Im}\,c)`. Training the
    weights :math:`w` is gradient descent on the rank-1 factor :math:`\psi` of :math:`\rho = \psi\psi^\dagger`
    through an overparameterised map (the number of weights far exceeds :math:`2D`).
    """

    def __init__(self, dim: int, width: int = 128, depth: int = 2, n_input: int = 16, seed: int = 0) -> None:
        super().__init__()
        if int(dim) != dim or dim < 2:
            raise ValueError(f"dim must be an integer >= 2; got {dim!r}")
        if int(width) != width or width < 1 or int(depth) != depth or depth < 1:
            raise ValueError(f"width and depth must be positive integers; got {width!r}, {depth!r}")
        g = torch.Generator().manual_seed(int(seed))
        self.register_buffer("z", torch.randn(int(n_input), generator=g, dtype=torch.float64))
        # The weights are drawn from ``seed`` too, inside a forked RNG: built outside it (as before revision 2),
        # they came from the global torch RNG, so a fit depended on whatever had drawn from it earlier.
        with torch.random.fork_rng():
            torch.manual_seed(int(seed))
            layers: list[nn.Module] = []
            d_in = int(n_input)
            for _ in range(int(depth)):
                layers += [nn.Linear(d_in, int(width)), nn.Tanh()]
                d_in = int(width)
            layers.append(nn.Linear(d_in, 2 * int(dim)))
            self.net = nn.Sequential(*layers).double()
        self.dim = int(dim)

    def forward(self) -> torch.Tensor:
        out = self.net(self.z)
        c = torch.complex(out[: self.dim], out[self.dim :])
        return c / torch.linalg.vector_norm(c)


@dataclass
class QSTResult:
    """A reconstruction: the state (vector or density matrix), the fidelity curve vs steps, losses."""

    estimate: np.ndarray
    val_nll: float
    steps: list[int] = field(default_factory=list)
    fidelities: list[float] = field(default_factory=list)
    train_loss_start: float = math.nan
    train_loss_end: float = math.nan
    diverged: bool = False
    params: dict[str, Any] = field(default_factory=dict)


def _fid(psi_true: torch.Tensor | None, est: torch.Tensor) -> float:
    if psi_true is None:
        return math.nan
    if est.ndim == 1:
        return float(torch.vdot(psi_true, est).abs() ** 2)
    return float((psi_true.conj() @ est @ psi_true).real)


def _checkpoints(steps: int, n: int) -> set[int]:
    return {int(round(s)) for s in np.linspace(0, steps, n + 1)}


def _check_fit(
    model: Any, train: Any, val: Any, psi_true: Any, n_checkpoints: Any, *, val_optional: bool = False
) -> torch.Tensor | None:
    """Validate the arguments the three fits share; return ``psi_true`` as a complex tensor (or ``None``)."""
    if not isinstance(model, MeasurementModel):
        raise TypeError(f"model must be a MeasurementModel; got {type(model).__name__}")
    want = (model.n_settings, model.G * model.G)
    for name, data in (("train", train), ("val", val)):
        if data is None and name == "val" and val_optional:
            continue
        if not isinstance(data, HomodyneData):
            raise TypeError(f"{name} must be HomodyneData; got {type(data).__name__}")
        if tuple(data.counts.shape) != want:
            raise ValueError(
                f"{name} must be measured at the model's {want[0]} phase settings on its {model.G}x{model.G} bins: "
                f"counts of shape {want}; got {tuple(data.counts.shape)}"
            )
    _whole("n_checkpoints", n_checkpoints, 1)
    if psi_true is None:
        return None
    return torch.as_tensor(_check_state(psi_true, model.cutoff, "psi_true"))


def fit_neural(
    model: MeasurementModel,
    train: HomodyneData,
    val: HomodyneData,
    *,
    loss: str = "msw1",
    steps: int = 500,
    lr: float = 1e-3,
    width: int = 128,
    depth: int = 2,
    n_directions: int = 16,
    seed: int = 0,
    psi_true: np.ndarray | None = None,
    n_checkpoints: int = 20,
) -> QSTResult:
    """Train a :class:`NeuralWavefunction` with Adam on the max-sliced W1 (``loss="msw1"``) or the binned NLL.

    ``psi_true`` only records the fidelity curve (never used for selection); ``val`` gives the held-out NLL
    every method is selected on.

    ``train`` and ``val`` must be measured at the model's settings and bins, ``lr`` a finite number > 0,
    ``steps`` an integer >= 0 and ``psi_true`` (if given) a finite normalised state of ``model.cutoff**2``
    amplitudes; a ``ValueError``/``TypeError`` naming the argument otherwise. A run whose loss turns NaN
    (too large an ``lr``) stops and is flagged ``diverged``.
    """
    if loss not in ("msw1", "nll"):
        raise ValueError(f"loss must be 'msw1' or 'nll'; got {loss!r}")
    _whole("steps", steps, 0)
    check_positive("lr", lr)
    truth = _check_fit(model, train, val, psi_true, n_checkpoints)
    net = NeuralWavefunction(model.dim, width, depth, seed=seed)
    counts = torch.as_tensor(train.counts)
    objective = (
        MaxSlicedW1Loss(model.grid, train.samples, n_directions)._value
        if loss == "msw1"
        else (lambda p: nll(p, counts))
    )
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    res = QSTResult(estimate=np.empty(0), val_nll=math.nan, params=dict(lr=lr, loss=loss))
    marks = _checkpoints(int(steps), n_checkpoints)
    for t in range(int(steps) + 1):
        psi = net()
        value = objective(model.probs_pure(psi))
        if t == 0:
            res.train_loss_start = float(value.detach())
        if t in marks:
            res.steps.append(t)
            res.fidelities.append(_fid(truth, psi.detach()))
        if t == steps:
            res.train_loss_end = float(value.detach())
            break
        if not torch.isfinite(value):
            res.diverged = True
            break
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
    with torch.no_grad():
        psi = net()
        res.estimate = psi.numpy()
        res.val_nll = float(nll(model.probs_pure(psi), torch.as_tensor(val.counts)))
    res.diverged = res.diverged or not math.isfinite(res.val_nll)
    return res


def fit_cholesky(
    model: MeasurementModel,
    train: HomodyneData,
    val: HomodyneData,
    *,
    steps: int = 500,
    lr: float = 1e-2,
    seed: int = 0,
    psi_true: np.ndarray | None = None,
    n_checkpoints: int = 20,
) -> QSTResult:
    r"""Cholesky GD-QST: :math:`\rho = TT^\dagger/\mathrm{tr}(TT^\dagger)`, :math:`T` lower triangular.

    Adam on the binned NLL (Gaikwad et al. 2025); :math:`T` starts at the identity plus 0.01 noise.

    The arguments are checked as in :func:`fit_neural` (``lr`` a finite number > 0, ``steps`` an integer >= 0,
    ``psi_true`` a finite normalised state of ``model.cutoff**2`` amplitudes).
    """
    _whole("steps", steps, 0)
    check_positive("lr", lr)
    truth = _check_fit(model, train, val, psi_true, n_checkpoints)
    D = model.dim
    g = torch.Generator().manual_seed(int(seed))
    mask = torch.tril(torch.ones(D, D, dtype=torch.float64))
    re = (
        torch.eye(D, dtype=torch.float64) + 0.01 * torch.randn(D, D, generator=g, dtype=torch.float64)
    ).requires_grad_()
    im = (0.01 * torch.randn(D, D, generator=g, dtype=torch.float64)).requires_grad_()
    counts = torch.as_tensor(train.counts)
    opt = torch.optim.Adam([re, im], lr=lr)
    res = QSTResult(estimate=np.empty(0), val_nll=math.nan, params=dict(lr=lr))
    marks = _checkpoints(int(steps), n_checkpoints)

    def rho_of() -> torch.Tensor:
        T = torch.complex(re * mask, im * mask)
        r = T @ T.conj().T
        return r / torch.trace(r).real

    for t in range(int(steps) + 1):
        rho = rho_of()
        value = nll(model.probs_rho(rho), counts)
        if t == 0:
            res.train_loss_start = float(value.detach())
        if t in marks:
            res.steps.append(t)
            res.fidelities.append(_fid(truth, rho.detach()))
        if t == steps:
            res.train_loss_end = float(value.detach())
            break
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
    with torch.no_grad():
        rho = rho_of()
        res.estimate = rho.numpy()
        res.val_nll = float(nll(model.probs_rho(rho), torch.as_tensor(val.counts)))
    res.diverged = not math.isfinite(res.val_nll)
    return res


def imle(
    model: MeasurementModel,
    train: HomodyneData,
    val: HomodyneData | None = None,
    *,
    iterations: int = 200,
    dilution: float = 1.0,
    psi_true: np.ndarray | None = None,
    n_checkpoints: int = 20,
) -> QSTResult:
    r"""Iterative maximum likelihood (Lvovsky 2004), diluted.

    :math:`\rho \leftarrow (I+\epsilon R)\rho(I+\epsilon R)/\mathrm{tr}`,

    :math:`R = \frac1N\sum_{k,b} \frac{f_{k,b}}{p_{k,b}(\rho)}\Pi_{k,b}`, with :math:`\Pi_{k,b}` the loss- and
    noise-aware POVM of bin :math:`b` at setting :math:`k`; ``dilution`` :math:`\epsilon` (``inf`` gives the
    undiluted :math:`R\rho R`). Starts from the maximally mixed state.

    ``dilution`` must be a number > 0 (``inf`` allowed, as above; NaN is not), ``iterations`` an integer >= 0,
    ``psi_true`` (if given) a finite normalised state of ``model.cutoff**2`` amplitudes; ``val`` may be ``None``.
    """
    _whole("iterations", iterations, 0)
    if isinstance(dilution, bool) or not isinstance(dilution, numbers.Real):
        raise TypeError(f"dilution must be a number > 0 (or inf); got {type(dilution).__name__} {dilution!r}")
    if not dilution > 0:
        raise ValueError(f"dilution must be > 0 (or inf for the undiluted R rho R); got {dilution!r}")
    truth = _check_fit(model, train, val, psi_true, n_checkpoints, val_optional=True)
    D = model.dim
    counts = torch.as_tensor(train.counts)
    ntot = counts.sum()
    eye = torch.eye(D, dtype=torch.complex128)
    rho = eye / D
    res = QSTResult(estimate=np.empty(0), val_nll=math.nan, params=dict(dilution=dilution))
    marks = _checkpoints(int(iterations), n_checkpoints)
    with torch.no_grad():
        for t in range(int(iterations) + 1):
            p = model.probs_rho(rho)
            if t == 0:
                res.train_loss_start = float(nll(p, counts))
            if t in marks:
                res.steps.append(t)
                res.fidelities.append(_fid(truth, rho))
            if t == iterations:
                res.train_loss_end = float(nll(p, counts))
                break
            R = model.back(counts / (p + _EPS)) / ntot
            R = 0.5 * (R + R.conj().T)
            A = R if math.isinf(dilution) else eye + dilution * R
            rho = A @ rho @ A.conj().T
            rho = 0.5 * (rho + rho.conj().T)
            rho = rho / torch.trace(rho).real
        res.estimate = rho.numpy()
        if val is not None:
            res.val_nll = float(nll(model.probs_rho(rho), torch.as_tensor(val.counts)))
    res.diverged = not bool(torch.isfinite(rho.real).all())
    return res
