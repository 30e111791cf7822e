r"""Compressive parameterisation families with a compression level, and :func:`fit_family`.

A family :math:`\{\mathcal M_n\}` is indexed by a compression level :math:`n` (grid resolution, number of
Fourier features, rank, hash-table size). Fitting member :math:`n` to data gives the prediction

.. math::

    f_n = \arg\min_{g \in \mathcal M_n} \|g - f\|^2 \quad\text{(direct fit)}, \qquad
    f_n = \arg\min_{g \in \mathcal M_n} \|A g - y\|^2 \quad\text{(inverse problem, } y = A f + \varepsilon),

with :math:`\|\cdot\|` the Euclidean norm over samples. For the linear families (grids, Fourier features
with a linear head) and for the truncated SVD the minimiser is computed in closed form; CP factorisations
use alternating least squares, warm-started along the ladder; the hash grid is trained with Adam.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from geode.core import as_generator, check_array, check_choice, check_int, check_real, torch_generator
from geode.sciml.inr_error.signals import UndersampledFourier

__all__ = [
    "FAMILIES",
    "BilinearGrid",
    "CPFactorisation",
    "FourierFeatures",
    "HashGrid",
    "TruncatedSVD",
    "check_levels",
    "fit_family",
]


def check_levels(levels: Any) -> np.ndarray:
    """Validate a compression ladder: at least two integer levels, strictly increasing, all >= 1."""
    lv = np.asarray(levels)
    if lv.ndim != 1 or lv.size < 2:
        raise ValueError(f"levels must be a 1-D sequence of at least two compression levels; got {levels!r}")
    if not np.issubdtype(lv.dtype, np.integer):
        raise TypeError(f"levels must be integers; got dtype {lv.dtype}")
    if lv.min() < 1:
        raise ValueError(f"levels must be >= 1; got {lv.tolist()}")
    if np.any(np.diff(lv) <= 0):
        raise ValueError(f"levels must be strictly increasing (coarse to fine); got {lv.tolist()}")
    return lv.astype(int)


def _coords(n: int) -> np.ndarray:
    return (np.arange(n) + 0.5) / n  # pixel centres in [0, 1]


def _hat_basis(n_samples: int, intervals: int) -> np.ndarray:
    """Piecewise-linear hat functions on ``intervals`` uniform cells of [0, 1] at the pixel centres."""
    t = _coords(n_samples)[:, None] * intervals - np.arange(intervals + 1)[None, :]
    return np.maximum(0.0, 1.0 - np.abs(t))


def _stack_real(z: np.ndarray) -> np.ndarray:
    """Real least squares against complex data: stack real and imaginary parts along axis 0."""
    return np.concatenate([z.real, z.imag], axis=0) if np.iscomplexobj(z) else z


def _nested_lstsq(design: np.ndarray, data: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """Least-squares coefficients on the nested column prefixes ``design[:, :m]`` for every ``m`` in ``sizes``.

    One thin QR, :math:`D = QR`, serves every prefix: :math:`c_m = R_{:m,:m}^{-1} (Q^T y)_{:m}`; if a prefix
    is numerically rank deficient the minimum-norm solution is used instead.
    """
    q, r = np.linalg.qr(design)
    qty = q.T @ data
    diag = np.abs(np.diag(r))
    out = []
    for m in sizes:
        if diag[:m].min() > 1e-10 * max(diag.max(), 1e-300):
            out.append(solve_triangular(r[:m, :m], qty[:m]))
        else:
            out.append(np.linalg.lstsq(design[:, :m], data, rcond=None)[0])
    return out


@dataclass(frozen=True)
class BilinearGrid:
    r"""A (bi)linearly interpolated grid with ``n`` uniform cells per axis (:math:`(n+1)^d` values).

    :math:`g(x) = \sum_j c_j \phi_j(x)` with tensor-product hat functions on the nodes :math:`j/n`. Levels
    that double are nested (:math:`\mathcal M_n \subset \mathcal M_{2n}`), and the direct least-squares fit
    is an orthogonal projection; in 2-D it is separable, :math:`C = B_y^+ F (B_x^+)^T`. Through a
    :class:`UndersampledFourier` operator the fit stays separable (:math:`A X = (S F B_y) C (F B_x)^T`);
    through any other operator a dense design matrix is formed.
    """

    name: str = "grid"
    ndims: tuple[int, ...] = (1, 2)

    def fit(self, data: np.ndarray, levels: np.ndarray, operator: Any = None) -> np.ndarray:
        """Fit every level of ``levels`` to ``data`` (a signal, or measurements through ``operator``); returns
        ``(len(levels), *signal_shape)``. ``data`` and ``levels`` are validated as in :func:`fit_family`."""
        data, levels = _check_fit(self, data, levels, operator)
        shape = operator.shape if operator is not None else data.shape
        out = []
        for n in levels:
            bases = [_hat_basis(s, int(n)) for s in shape]
            if operator is None:
                if len(shape) == 1:
                    pred = bases[0] @ np.linalg.lstsq(bases[0], data, rcond=None)[0]
                else:
                    by, bx = bases
                    pred = by @ (np.linalg.pinv(by) @ data @ np.linalg.pinv(bx).T) @ bx.T
            elif isinstance(operator, UndersampledFourier):
                by, bx = bases
                p = np.fft.fft(by, axis=0, norm="ortho")[operator.rows]  # S F_H B_y
                z = np.fft.ifft(data, axis=1, norm="ortho")  # Y conj(F_W): undo the read-out DFT
                coef = np.linalg.pinv(_stack_real(p)) @ _stack_real(z) @ np.linalg.pinv(bx).T
                pred = by @ coef @ bx.T
            else:
                basis = np.einsum("ia,jb->abij", *bases).reshape(-1, *shape) if len(shape) == 2 else bases[0].T
                design = _stack_real(operator.forward(basis).reshape(basis.shape[0], -1).T)
                coef = np.linalg.lstsq(design, _stack_real(np.asarray(data).ravel()), rcond=None)[0]
                pred = np.tensordot(coef, basis, axes=1)
            out.append(np.real(pred))
        return np.stack(out)


@dataclass(frozen=True)
class FourierFeatures:
    r"""Fourier features with a closed-form linear head; level = number :math:`K` of frequencies.

    :math:`g(x) = c_0 + \sum_{k<K} a_k \cos(2\pi\,\omega_k\!\cdot x) + b_k \sin(2\pi\,\omega_k\!\cdot x)`
    with :math:`\omega_k \sim \mathcal N(0, \sigma^2 I)` (Tancik et al. 2020) drawn once from ``seed`` and
    **sorted by** :math:`\|\omega_k\|` (inferred: coarse to fine), so level :math:`K` uses the first
    :math:`K`; the levels are nested and the head's least-squares fit is an orthogonal projection. One QR of
    the finest design matrix serves every level.

    Parameters
    ----------
    scale : float
        :math:`\sigma`, in cycles per unit length of the domain :math:`[0, 1]^d`.
    seed : int
        Seed of the frequencies.
    """

    scale: float = 10.0
    seed: int = 0
    name: str = "fourier"
    ndims: tuple[int, ...] = (1, 2)

    def __post_init__(self) -> None:
        check_real("scale", self.scale, low=0.0, low_inclusive=False)
        check_int("seed", self.seed, low=0)

    def frequencies(self, k: int, d: int) -> np.ndarray:
        """The first ``k`` frequencies in ``d`` dimensions, sorted by norm; shape (k, d)."""
        omega = as_generator(self.seed).normal(0.0, self.scale, size=(k, d))
        return omega[np.argsort(np.linalg.norm(omega, axis=1), kind="stable")]

    def features(self, shape: tuple[int, ...], k: int) -> np.ndarray:
        """Design matrix at the pixel centres, columns [1, cos_1, sin_1, ..., cos_k, sin_k]; (prod(shape), 2k+1)."""
        grids = np.meshgrid(*[_coords(s) for s in shape], indexing="ij")
        x = np.stack([g.ravel() for g in grids], axis=1)
        phase = 2 * np.pi * x @ self.frequencies(k, len(shape)).T
        cols = np.empty((x.shape[0], 2 * k + 1))
        cols[:, 0] = 1.0
        cols[:, 1::2], cols[:, 2::2] = np.cos(phase), np.sin(phase)
        return cols

    def fit(self, data: np.ndarray, levels: np.ndarray, operator: Any = None) -> np.ndarray:
        """Fit every level of ``levels`` to ``data`` (a signal, or measurements through ``operator``); returns
        ``(len(levels), *signal_shape)``. ``data`` and ``levels`` are validated as in :func:`fit_family`."""
        data, levels = _check_fit(self, data, levels, operator)
        shape = operator.shape if operator is not None else data.shape
        phi = self.features(shape, int(levels[-1]))
        sizes = [2 * int(k) + 1 for k in levels]
        if operator is None:  # the projection onto the span of the first m columns is Q_m Q_m^T y: exact, stable
            q, _ = np.linalg.qr(phi)
            qty = q.T @ data.ravel()
            return np.stack([(q[:, :m] @ qty[:m]).reshape(shape) for m in sizes])
        images = phi.T.reshape(-1, *shape)
        design = _stack_real(operator.forward(images).reshape(phi.shape[1], -1).T)
        rhs = _stack_real(np.asarray(data).ravel())
        coefs = _nested_lstsq(design, rhs, sizes)
        return np.stack([(phi[:, : c.shape[0]] @ c).reshape(shape) for c in coefs])


@dataclass(frozen=True)
class TruncatedSVD:
    r"""Rank-:math:`R` truncation of a matrix signal: :math:`f_R = U_{:R}\,\Sigma_{:R}\,V_{:R}^T`.

    The Eckart-Young optimum; nested orthogonal projections, so
    :math:`\|f - f_R\|^2 = \sum_{i>R}\sigma_i^2` and every assumption of the bound holds exactly. Direct
    fitting only.
    """

    name: str = "svd"
    ndims: tuple[int, ...] = (2,)

    def fit(self, data: np.ndarray, levels: np.ndarray, operator: Any = None) -> np.ndarray:
        """Fit every level of ``levels`` to ``data`` (a signal, or measurements through ``operator``); returns
        ``(len(levels), *signal_shape)``. ``data`` and ``levels`` are validated as in :func:`fit_family`."""
        data, levels = _check_fit(self, data, levels, operator)
        if operator is not None:
            raise ValueError("family 'svd' fits signals directly only; operator must be None")
        u, s, vt = np.linalg.svd(data, full_matrices=False)
        return np.stack([(u[:, :r] * s[:r]) @ vt[:r] for r in np.minimum(levels, s.size)])


@dataclass(frozen=True)
class CPFactorisation:
    r"""Rank-:math:`R` CP (CANDECOMP/PARAFAC) factorisation of the signal folded into a 3-way tensor.

    :math:`\mathcal X \approx \sum_{r<R} a_r \circ b_r \circ c_r`, fitted by alternating least squares
    (:math:`A \leftarrow X_{(1)} (C \odot B) (C^TC * B^TB)^+` and cyclically). Folding (inferred): a 2-D
    image is cut into ``block`` x ``block`` patches, :math:`\mathcal X_{i,j,(p,q)} = F_{ib+p,\,jb+q}`; a 1-D
    signal of length :math:`N` is reshaped to :math:`(N/b^2, b, b)`; a 3-D signal is used as is. Level
    :math:`R+1` is warm-started from the rank-:math:`R` factors plus small seeded random columns. Direct
    fitting only.
    """

    block: int = 8
    iterations: int = 60
    seed: int = 0
    name: str = "cp"
    ndims: tuple[int, ...] = (1, 2, 3)

    def __post_init__(self) -> None:
        check_int("block", self.block, low=1)
        check_int("iterations", self.iterations, low=1)
        check_int("seed", self.seed, low=0)

    def _fold(self, data: np.ndarray) -> np.ndarray:
        b = self.block
        if data.ndim == 3:
            return data
        if data.ndim == 1:
            if data.size % (b * b):
                raise ValueError(f"a 1-D signal for family 'cp' needs a length divisible by block**2={b * b}")
            return data.reshape(-1, b, b)
        h, w = data.shape
        if h % b or w % b:
            raise ValueError(f"a 2-D signal for family 'cp' needs sides divisible by block={b}; got {data.shape}")
        return data.reshape(h // b, b, w // b, b).transpose(0, 2, 1, 3).reshape(h // b, w // b, b * b)

    def _unfold(self, x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        if len(shape) != 2:
            return x.reshape(shape)
        b = self.block
        h, w = shape
        return x.reshape(h // b, w // b, b, b).transpose(0, 2, 1, 3).reshape(h, w)

    def fit(self, data: np.ndarray, levels: np.ndarray, operator: Any = None) -> np.ndarray:
        """Fit every level of ``levels`` to ``data`` (a signal, or measurements through ``operator``); returns
        ``(len(levels), *signal_shape)``. ``data`` and ``levels`` are validated as in :func:`fit_family`."""
        data, levels = _check_fit(self, data, levels, operator)
        if operator is not None:
            raise ValueError("family 'cp' fits signals directly only; operator must be None")
        x = self._fold(data)
        rng = as_generator(self.seed)
        scale = np.linalg.norm(x) ** (1 / 3) / max(x.shape) ** 0.5
        factors = [np.zeros((s, 0)) for s in x.shape]
        out = []
        for r in levels:
            new = int(r) - factors[0].shape[1]
            factors = [np.hstack([f, 0.1 * scale * rng.standard_normal((f.shape[0], new))]) for f in factors]
            for _ in range(self.iterations):
                for mode in range(3):
                    o1, o2 = [factors[m] for m in range(3) if m != mode]
                    spec = {0: "ijk,jr,kr->ir", 1: "ijk,ir,kr->jr", 2: "ijk,ir,jr->kr"}[mode]
                    gram = (o1.T @ o1) * (o2.T @ o2)
                    factors[mode] = np.einsum(spec, x, o1, o2) @ np.linalg.pinv(gram, rcond=1e-12)
            out.append(self._unfold(np.einsum("ir,jr,kr->ijk", *factors), data.shape))
        return np.stack(out)


@dataclass(frozen=True)
class HashGrid:
    r"""A multi-resolution hash grid (Instant-NGP; Müller et al. 2022) in pure torch; level = table size :math:`T`.

    ``n_levels`` resolutions :math:`N_l = \lfloor N_{\min} b^l \rfloor`, :math:`b = (N_{\max}/N_{\min})^{1/(L-1)}`;
    at each, the :math:`2^d` corners of the cell around :math:`x` index a table of :math:`T` entries of
    ``features`` values, directly when :math:`(N_l+1)^d \le T`, else by the spatial hash
    :math:`(\oplus_i\, v_i \pi_i) \bmod T` with :math:`\pi = (1, 2654435761)`; features are (bi)linearly
    interpolated, concatenated over resolutions and mapped by a linear head. Trained by full-batch Adam on
    the squared error (through the operator for inverse problems), ``steps`` steps at learning rate ``lr``;
    tables start at :math:`U(-10^{-4}, 10^{-4})` as in Instant-NGP. Not nested across :math:`T` (hash
    collisions change): the bound's assumptions hold only approximately.
    """

    n_levels: int = 8
    features: int = 2
    min_resolution: int = 4
    max_resolution: int | None = None
    steps: int = 300
    lr: float = 1e-2
    seed: int = 0
    name: str = "hash"
    ndims: tuple[int, ...] = (1, 2)

    def __post_init__(self) -> None:
        check_int("n_levels", self.n_levels, low=1)
        check_int("features", self.features, low=1)
        check_int("min_resolution", self.min_resolution, low=1)
        if self.max_resolution is not None:
            check_int("max_resolution", self.max_resolution, low=self.min_resolution)
        check_int("steps", self.steps, low=1)
        check_real("lr", self.lr, low=0.0, low_inclusive=False)
        check_int("seed", self.seed, low=0)

    def encoding(self, shape: tuple[int, ...], table: int) -> Any:
        """The interpolation matrix :math:`W` (scipy CSR, pixels x ``n_levels * table``) of the encoding.

        Row :math:`i` holds the (bi)linear weights of pixel :math:`i`'s :math:`2^d` cell corners at every
        resolution, at their (hashed) table rows; level :math:`l` owns rows :math:`lT, \\ldots, (l+1)T - 1`.
        """
        from scipy.sparse import csr_matrix

        d = len(shape)
        grids = np.meshgrid(*[_coords(s) for s in shape], indexing="ij")
        x = np.stack([g.ravel() for g in grids], axis=1)  # (P, d)
        n_max = self.max_resolution or max(shape)
        growth = (n_max / self.min_resolution) ** (1.0 / max(self.n_levels - 1, 1))
        corners = np.array(np.meshgrid(*[[0, 1]] * d, indexing="ij")).reshape(d, -1).T  # (2^d, d)
        primes = np.array([1, 2654435761, 805459861], dtype=np.uint64)[:d]
        idx, wts = [], []
        for lvl in range(self.n_levels):
            res = int(np.floor(self.min_resolution * growth**lvl))
            pos = x * res
            base = np.floor(pos).astype(np.int64)
            frac = pos - base
            v = base[:, None, :] + corners[None, :, :]  # (P, 2^d, d) corner vertices
            w = np.prod(np.where(corners[None] == 1, frac[:, None, :], 1.0 - frac[:, None, :]), axis=2)
            if (res + 1) ** d <= table:  # the whole grid fits: direct indexing, no collisions
                flat = np.zeros(v.shape[:2], dtype=np.int64)
                for i in range(d):
                    flat = flat * (res + 1) + v[..., i]
            else:  # spatial hash (xor of coordinate * prime) mod T
                h = np.zeros(v.shape[:2], dtype=np.uint64)
                for i in range(d):
                    h ^= v[..., i].astype(np.uint64) * primes[i]
                flat = (h % np.uint64(table)).astype(np.int64)
            idx.append(flat + lvl * table)
            wts.append(w)
        cols = np.concatenate(idx, axis=1)
        vals = np.concatenate(wts, axis=1)
        rows = np.repeat(np.arange(x.shape[0]), cols.shape[1])
        return csr_matrix((vals.ravel(), (rows, cols.ravel())), shape=(x.shape[0], self.n_levels * table))

    def fit(self, data: np.ndarray, levels: np.ndarray, operator: Any = None) -> np.ndarray:
        """Fit every level of ``levels`` to ``data`` (a signal, or measurements through ``operator``); returns
        ``(len(levels), *signal_shape)``. ``data`` and ``levels`` are validated as in :func:`fit_family`."""
        data, levels = _check_fit(self, data, levels, operator)
        import torch

        shape = operator.shape if operator is not None else data.shape
        target = torch.as_tensor(np.asarray(data))
        n_lv, n_f = self.n_levels, self.features
        out = []
        for t in levels:
            w = self.encoding(shape, int(t))
            wt = w.T.tocsr()
            gen = torch_generator(self.seed)
            table = (torch.rand(n_lv * int(t), n_f, generator=gen, dtype=torch.float64) * 2 - 1) * 1e-4
            table.requires_grad_()
            head = torch.randn(n_lv, 1, n_f, generator=gen, dtype=torch.float64) / np.sqrt(n_lv * n_f)
            head.requires_grad_()
            bias = torch.zeros((), dtype=torch.float64, requires_grad=True)
            params = [table, head, bias]
            moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]

            def render(table: Any = table, head: Any = head, bias: Any = bias, w: Any = w, wt: Any = wt) -> Any:
                # linear head on the concatenated interpolated features = W @ (per-row <table_row, head_level>)
                v = (table.view(n_lv, -1, n_f) * head).sum(2).reshape(-1)
                return (_SparseMatVec.apply(v, w, wt) + bias).reshape(shape)

            for step in range(1, self.steps + 1):
                pred = render()
                resid = (operator.forward(pred) if operator is not None else pred) - target
                loss = (resid.abs() ** 2).mean()
                grads = torch.autograd.grad(loss, params)
                with torch.no_grad():  # Adam (Kingma & Ba 2015), betas (0.9, 0.999), eps 1e-8, bias-corrected
                    for p, g, (m, v) in zip(params, grads, moments):
                        m.mul_(0.9).add_(g, alpha=0.1)
                        v.mul_(0.999).addcmul_(g, g, value=0.001)
                        denom = (v / (1 - 0.999**step)).sqrt_().add_(1e-8)
                        p.addcdiv_(m, denom, value=-self.lr / (1 - 0.9**step))
            with torch.no_grad():
                out.append(render().numpy())
        return np.stack(out)


def _sparse_matvec_class() -> type:
    import torch

    class SparseMatVec(torch.autograd.Function):
        """:math:`W v` with a fixed scipy sparse :math:`W`; the gradient in :math:`v` is :math:`W^T g`."""

        @staticmethod
        def forward(ctx: Any, v: Any, w: Any, wt: Any) -> Any:
            ctx.wt = wt
            return torch.from_numpy(w @ v.detach().numpy())

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return torch.from_numpy(ctx.wt @ g.detach().numpy()), None, None

    return SparseMatVec


class _LazySparseMatVec:
    """Builds the autograd function on first use, so that importing this module does not import torch."""

    _cls: Any = None

    def apply(self, *args: Any) -> Any:
        if _LazySparseMatVec._cls is None:
            _LazySparseMatVec._cls = _sparse_matvec_class()
        return _LazySparseMatVec._cls.apply(*args)


_SparseMatVec = _LazySparseMatVec()


FAMILIES: dict[str, type] = {
    "grid": BilinearGrid,
    "fourier": FourierFeatures,
    "svd": TruncatedSVD,
    "hash": HashGrid,
    "cp": CPFactorisation,
}
"""The families by name, for :func:`fit_family`."""


def fit_family(family: Any, target_or_measurements: Any, levels: Sequence[int], *, operator: Any = None) -> np.ndarray:
    r"""Fit every member of a compression ladder and return the predictions :math:`f_{n_0}, \ldots, f_{n_{L-1}}`.

    Parameters
    ----------
    family : str or family object
        ``"grid"``, ``"fourier"``, ``"svd"``, ``"hash"``, ``"cp"`` (default options) or an instance of
        :class:`BilinearGrid`, :class:`FourierFeatures`, :class:`TruncatedSVD`, :class:`HashGrid`,
        :class:`CPFactorisation` (or any object with ``name``, ``ndims`` and
        ``fit(data, levels, operator)``).
    target_or_measurements : array_like
        The signal to fit directly (1-D, 2-D or, for ``cp``, 3-D), or with ``operator`` the measurements
        :math:`y`, of shape ``operator.measurement_shape`` (complex allowed).
    levels : sequence of int
        At least two compression levels, strictly increasing (coarse to fine).
    operator : object, optional
        A linear measurement operator with ``shape``, ``measurement_shape``, ``forward`` and ``adjoint``
        (e.g. :class:`UndersampledFourier`); the fit then minimises :math:`\|A g - y\|^2`.

    Returns
    -------
    ndarray, shape (len(levels), *signal_shape)
        The prediction of each level, in signal (image) space.

    Examples
    --------
    >>> f = np.outer(np.arange(1.0, 5.0), np.ones(4)) + np.eye(4)
    >>> fit_family("svd", f, [1, 4]).shape
    (2, 4, 4)
    """
    if isinstance(family, str):
        check_choice("family", family, tuple(FAMILIES))
        family = FAMILIES[family]()
    elif not (hasattr(family, "fit") and hasattr(family, "ndims")):
        raise TypeError(f"family must be a name in {sorted(FAMILIES)} or a family object; got {type(family).__name__}")
    data, lv = _check_fit(family, target_or_measurements, levels, operator, "target_or_measurements")
    return family.fit(data, lv, operator)


def _check_fit(
    family: Any, data: Any, levels: Any, operator: Any, name: str = "data"
) -> tuple[np.ndarray, np.ndarray]:
    """Validate the signal (or measurements) ``data``, the ladder and the operator of a family's ``fit``.

    Runs before any factorisation (LAPACK may hang on NaN); a valid input comes back unchanged in value.
    """
    target_or_measurements = data
    lv = check_levels(levels)
    if operator is None:
        data = check_array(name, target_or_measurements, ndim=family.ndims)
        if data.size == 0:
            raise ValueError(f"{name} must not be empty; got shape {data.shape}")
    else:
        for attr in ("shape", "measurement_shape", "forward", "adjoint"):
            if not hasattr(operator, attr):
                raise TypeError(f"operator must have shape, measurement_shape, forward and adjoint; missing {attr}")
        data = check_array(name, target_or_measurements, dtype=None)
        if not np.issubdtype(data.dtype, np.number) or not np.all(np.isfinite(data)):
            raise ValueError(f"{name} must be finite numbers")
        if tuple(data.shape) != tuple(operator.measurement_shape):
            raise ValueError(
                f"{name} has shape {data.shape} but the operator's measurement_shape is "
                f"{tuple(operator.measurement_shape)}"
            )
        if len(operator.shape) not in family.ndims:
            raise ValueError(f"family {family.name!r} does not support {len(operator.shape)}-D images")
        data = data.astype(complex) if np.iscomplexobj(data) else data.astype(float)
    return data, lv
