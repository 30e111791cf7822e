r"""Exact population flow-matching velocity fields and Jacobians for noise-smoothed manifold data.

Convention (torchcfm's linear path): :math:`x_t = t\,x_1 + (1-t)\,x_0`, :math:`x_0 \sim \mathcal N(0, I_D)`,
data :math:`x_1 = y + \sigma z` with :math:`y \sim p_M` (the normalised area measure of a compact manifold
:math:`M \subset \mathbb R^D`) and :math:`z \sim \mathcal N(0, I_D)`. Given :math:`y`,
:math:`x_t \sim \mathcal N(t y, s_t^2 I)` with :math:`s_t^2 = (1-t)^2 + t^2\sigma^2`, and the population
velocity and its Jacobian are

.. math::

    v(t, x) = \frac{(1-t)\,\mathbb E[y \mid x] + (t\sigma^2 - (1-t))\,x}{s_t^2}, \qquad
    \nabla v(t, x) = \frac{1}{s_t^2}\Big[\frac{t(1-t)}{s_t^2}\operatorname{Cov}(y \mid x)
        + (t\sigma^2 - (1-t))\, I\Big],

with the posterior :math:`p(y \mid x) \propto p_M(y)\exp(-|x - t y|^2 / 2 s_t^2)` on :math:`M`: a Gaussian of
width :math:`w_t = s_t / t` (the *effective noise*) around :math:`x/t`, restricted to :math:`M`. It is computed
by quadrature on a grid in the manifold's coordinates, centred on the nearest point of :math:`x/t` with a
half-width of ``window`` Laplace widths per axis (:math:`w_t / \sqrt{h_i}`, :math:`h_i` the second derivative
of :math:`\tfrac12|x/t - y(u)|^2` along coordinate :math:`u_i`), capped at the whole chart. Near :math:`M`,
:math:`\operatorname{Cov}(y\mid x) \approx w_t^2 P_T`, so the tangential eigenvalues of :math:`\nabla v` stay
:math:`O(1)`, the normal ones equal :math:`(t\sigma^2 - (1-t))/s_t^2` (most negative :math:`\approx -1/(2\sigma)`
at :math:`1-t \approx \sigma`) and the coupling is set by the curvature; the ambient bound
:math:`\operatorname{Cov} \preceq (\operatorname{diam}/2)^2 I` gives :math:`\sigma^{-3}` instead.

Inferred details (the paper is not public): the time convention (torchcfm's; the maximum over :math:`t` of
any statistic is invariant to the reversal :math:`t \mapsto 1-t`, so the claim does not depend on it), the
uniform area density on :math:`M`, the definition of the tube (points whose :math:`x/t` lies within half the
reach of :math:`M`) and the quadrature (grid, window, number of nodes).
"""

from __future__ import annotations

import math

import numpy as np

from geode.core.validation import check_array

__all__ = [
    "Circle",
    "EmbeddedManifold",
    "GaussianSmoothedManifold",
    "Sphere",
    "Torus",
    "ambient_jacobian_bound",
    "fit_loglog_slope",
    "tangent_normal_blocks",
]


def _check_positive(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a finite number > 0; got {type(value).__name__} {value!r}") from exc
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    return v


def _frame(ambient_dim: int, k: int, seed: int | None) -> np.ndarray:
    """A D x k matrix with orthonormal columns (identity columns when ``seed`` is None)."""
    if seed is None:
        return np.eye(ambient_dim)[:, :k]
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((ambient_dim, ambient_dim)))
    return q[:, :k]


class EmbeddedManifold:
    """A compact manifold of dimension ``dim`` in a ``k``-dimensional subspace of :math:`\\mathbb R^D`.

    Subclasses give a chart ``_embed(u, frame)`` (coordinates :math:`u`, shape (..., dim), to points of
    :math:`\\mathbb R^k`), the area element ``_area(u)``, the nearest point ``_nearest(x)`` (coordinates and the
    chart's per-query frame), each axis' half-range and periodicity, ``diameter`` and ``reach``. Points in
    :math:`\\mathbb R^D` are ``Q @ y`` with ``Q`` (D x k) orthonormal columns (a random rotation from
    ``rotation_seed``, or the first k axes).
    """

    dim: int
    k: int
    half_range: tuple[float, ...]
    periodic: tuple[bool, ...]
    diameter: float
    reach: float

    def __init__(self, ambient_dim: int, rotation_seed: int | None = None) -> None:
        if int(ambient_dim) != ambient_dim or ambient_dim < self.k:
            raise ValueError(f"ambient_dim must be an integer >= {self.k}; got {ambient_dim!r}")
        self.ambient_dim = int(ambient_dim)
        self.Q = _frame(self.ambient_dim, self.k, rotation_seed)

    # --- chart (subclasses) -------------------------------------------------------------------------------
    def _embed(self, u: np.ndarray, frame: np.ndarray | None) -> np.ndarray:  # (B, m, dim) -> (B, m, k)
        raise NotImplementedError

    def _area(self, u: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _nearest(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:  # (B, k) -> (B, dim), frame
        raise NotImplementedError

    def _sample_coords(self, n: int, rng: np.random.Generator) -> np.ndarray:  # uniform by area, points in R^k
        raise NotImplementedError

    # --- generic ------------------------------------------------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` points drawn from the normalised area measure, shape (n, D)."""
        return self._sample_coords(int(n), rng) @ self.Q.T

    def _points(self, x: np.ndarray) -> np.ndarray:
        x = check_array("x", x, ndim=2)
        if x.shape[1] != self.ambient_dim:
            raise ValueError(f"x must have shape (n, {self.ambient_dim}); got {x.shape}")
        return x

    def nearest(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Nearest points of ``x`` (B, D) on the manifold (B, D) and an orthonormal tangent basis (B, D, dim).

        ``x`` must be finite, of shape (B, D); an empty batch (0, D) gives empty outputs.
        """
        x = self._points(x)
        u, frame = self._nearest(x @ self.Q)
        y = self._embed(u[:, None], frame)[:, 0]
        eps = 1e-5
        cols = []
        for i in range(self.dim):
            e = np.zeros(self.dim)
            e[i] = eps
            d = (self._embed((u + e)[:, None], frame)[:, 0] - self._embed((u - e)[:, None], frame)[:, 0]) / (2 * eps)
            cols.append(d)
        basis, _ = np.linalg.qr(np.stack(cols, axis=-1))  # (B, k, dim)
        return y @ self.Q.T, np.einsum("Dk,bkd->bDd", self.Q, basis)

    def distance(self, x: np.ndarray) -> np.ndarray:
        """Euclidean distance of each row of ``x`` to the manifold."""
        y, _ = self.nearest(x)
        return np.linalg.norm(self._points(x) - y, axis=-1)

    def quadrature(self, c: np.ndarray, width: np.ndarray, *, nodes: int, window: float):
        """Nodes (B, m, D) and log-weights (B, m) of a grid around the nearest point of each row of ``c``.

        The half-width along axis ``i`` is ``window * width / sqrt(h_i)`` (a Laplace width of the Gaussian
        ``exp(-|c - y(u)|^2 / 2 width^2)``), capped at the axis' half-range (then the whole chart is used).
        """
        c3 = c @ self.Q
        u0, frame = self._nearest(c3)
        B = c.shape[0]
        delta = 1e-3

        def f(u: np.ndarray) -> np.ndarray:
            return 0.5 * np.sum((c3 - self._embed(u[:, None], frame)[:, 0]) ** 2, axis=-1)

        axes = []
        for i in range(self.dim):
            e = np.zeros(self.dim)
            e[i] = delta
            h = (f(u0 + e) - 2 * f(u0) + f(u0 - e)) / delta**2
            half = window * width / np.sqrt(np.maximum(h, 1e-300))
            full = half >= self.half_range[i]
            r = self.half_range[i]
            base = np.linspace(-1.0, 1.0, nodes, endpoint=False) if self.periodic[i] else np.linspace(-1.0, 1.0, nodes)
            # whole chart: periodic axes from u0 - r, bounded axes over [-r, r] (their charts put u0 at 0)
            centre = np.where(full, u0[:, i] if self.periodic[i] else 0.0, u0[:, i])
            span = np.where(full, r, np.minimum(half, r))
            axes.append(centre[:, None] + span[:, None] * base[None, :])  # (B, nodes)
        if self.dim == 1:
            u = axes[0][:, :, None]
        else:
            g = np.meshgrid(np.arange(nodes), np.arange(nodes), indexing="ij")
            u = np.stack([axes[0][:, g[0].ravel()], axes[1][:, g[1].ravel()]], axis=-1)
        y = self._embed(u, frame) @ self.Q.T
        logw = np.log(np.maximum(self._area(u), 1e-300))
        assert y.shape[:2] == (B, nodes**self.dim)
        return y, logw


class Circle(EmbeddedManifold):
    """The circle of radius ``radius`` (in a random 2-plane of :math:`\\mathbb R^D` when ``rotation_seed``)."""

    dim, k = 1, 2
    half_range, periodic = (math.pi,), (True,)

    def __init__(self, radius: float = 1.0, ambient_dim: int = 3, rotation_seed: int | None = None) -> None:
        self.radius = _check_positive("radius", radius)
        self.diameter, self.reach = 2 * self.radius, self.radius
        super().__init__(ambient_dim, rotation_seed)

    def _embed(self, u, frame):
        return self.radius * np.stack([np.cos(u[..., 0]), np.sin(u[..., 0])], axis=-1)

    def _area(self, u):
        return np.ones(u.shape[:-1])

    def _nearest(self, x):
        return np.arctan2(x[:, 1], x[:, 0])[:, None], None

    def _sample_coords(self, n, rng):
        return self._embed(rng.uniform(-math.pi, math.pi, (n, 1)), None)


class Sphere(EmbeddedManifold):
    """The unit-radius-scaled 2-sphere (in a random 3-space of :math:`\\mathbb R^D` when ``rotation_seed``).

    The chart is per query: latitude/longitude around the query's nearest point, which sits on the chart's
    equator (regular there); latitude is bounded by :math:`\\pm\\pi/2`, longitude periodic.
    """

    dim, k = 2, 3
    half_range, periodic = (math.pi / 2, math.pi), (False, True)

    def __init__(self, radius: float = 1.0, ambient_dim: int = 3, rotation_seed: int | None = None) -> None:
        self.radius = _check_positive("radius", radius)
        self.diameter, self.reach = 2 * self.radius, self.radius
        super().__init__(ambient_dim, rotation_seed)

    def _embed(self, u, frame):
        a, b = u[..., 0], u[..., 1]
        local = np.stack([np.cos(a) * np.cos(b), np.cos(a) * np.sin(b), np.sin(a)], axis=-1)  # (B, m, 3)
        return self.radius * np.einsum("bij,bmj->bmi", frame, local)

    def _area(self, u):
        return np.cos(u[..., 0])

    def _nearest(self, x):
        n = np.linalg.norm(x, axis=-1, keepdims=True)
        p = np.where(n > 1e-12, x / np.maximum(n, 1e-300), np.array([1.0, 0.0, 0.0]))
        helper = np.where(np.abs(p[:, :1]) < 0.9, np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
        e1 = helper - np.sum(helper * p, axis=-1, keepdims=True) * p
        e1 /= np.linalg.norm(e1, axis=-1, keepdims=True)
        e2 = np.cross(p, e1)
        return np.zeros((x.shape[0], 2)), np.stack([p, e1, e2], axis=-1)

    def _sample_coords(self, n, rng):
        g = rng.standard_normal((n, 3))
        return self.radius * g / np.linalg.norm(g, axis=-1, keepdims=True)


class Torus(EmbeddedManifold):
    """The torus of revolution with radii ``R > r`` (in a random 3-space of :math:`\\mathbb R^D`)."""

    dim, k = 2, 3
    half_range, periodic = (math.pi, math.pi), (True, True)

    def __init__(self, R: float = 1.0, r: float = 0.4, ambient_dim: int = 3, rotation_seed: int | None = None) -> None:
        self.R, self.r = _check_positive("R", R), _check_positive("r", r)
        if not self.r < self.R:
            raise ValueError(f"the torus needs r < R; got R={R!r}, r={r!r}")
        self.diameter, self.reach = 2 * (self.R + self.r), min(self.r, self.R - self.r)
        super().__init__(ambient_dim, rotation_seed)

    def _embed(self, u, frame):
        th, ph = u[..., 0], u[..., 1]
        rho = self.R + self.r * np.cos(ph)
        return np.stack([rho * np.cos(th), rho * np.sin(th), self.r * np.sin(ph)], axis=-1)

    def _area(self, u):
        return self.R + self.r * np.cos(u[..., 1])

    def _nearest(self, x):
        th = np.arctan2(x[:, 1], x[:, 0])
        ph = np.arctan2(x[:, 2], np.hypot(x[:, 0], x[:, 1]) - self.R)
        return np.stack([th, ph], axis=-1), None

    def _sample_coords(self, n, rng):
        out = []
        while sum(len(o) for o in out) < n:
            u = rng.uniform(-math.pi, math.pi, (2 * n, 2))
            keep = rng.uniform(0, self.R + self.r, 2 * n) < self.R + self.r * np.cos(u[:, 1])
            out.append(u[keep])
        u = np.concatenate(out)[:n]
        return self._embed(u[:, None], None)[:, 0]


class GaussianSmoothedManifold:
    r"""The population flow-matching field of :math:`x_1 = y + \sigma z`, :math:`y \sim p_M` (module docstring).

    Parameters
    ----------
    manifold : EmbeddedManifold
        :class:`Circle`, :class:`Sphere`, :class:`Torus` (or a subclass of :class:`EmbeddedManifold`).
    sigma : float
        The smoothing noise, > 0.
    nodes : int
        Grid nodes per manifold axis of the posterior quadrature (default 401 for curves, 81 for surfaces).
    window : float
        Half-width of the quadrature window in Laplace widths of the posterior (default 10).

    Examples
    --------
    >>> import numpy as np
    >>> f = GaussianSmoothedManifold(Circle(), sigma=0.01)
    >>> x = f.sample_xt(0.99, 4, np.random.default_rng(0))
    >>> f.jacobian(0.99, x).shape
    (4, 3, 3)
    """

    def __init__(self, manifold: EmbeddedManifold, sigma: float, *, nodes: int | None = None, window: float = 10.0):
        if not isinstance(manifold, EmbeddedManifold):
            raise TypeError(f"manifold must be an EmbeddedManifold (Circle, Sphere, Torus); got {type(manifold)!r}")
        self.manifold = manifold
        self.sigma = _check_positive("sigma", sigma)
        self.window = _check_positive("window", window)
        n = (401 if manifold.dim == 1 else 81) if nodes is None else nodes
        if int(n) != n or n < 8:
            raise ValueError(f"nodes must be an integer >= 8; got {nodes!r}")
        self.nodes = int(n)

    @property
    def ambient_dim(self) -> int:
        return self.manifold.ambient_dim

    def _check(self, t: float, x: np.ndarray) -> tuple[float, np.ndarray]:
        t = float(t)
        if not (0.0 < t <= 1.0) or not math.isfinite(t):
            raise ValueError(f"t must lie in (0, 1]; got {t!r}")
        try:
            x = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"x must be an array (n, {self.ambient_dim}) of numbers; got {type(x).__name__}") from exc
        if x.ndim != 2 or x.shape[1] != self.ambient_dim or len(x) == 0:
            raise ValueError(f"x must have shape (n >= 1, {self.ambient_dim}); got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("x must be finite")
        return t, x

    def s2(self, t: float) -> float:
        """:math:`s_t^2 = (1-t)^2 + t^2\\sigma^2`."""
        return (1 - t) ** 2 + (t * self.sigma) ** 2

    def effective_noise(self, t: float) -> float:
        """:math:`w_t = s_t / t`, the width of the posterior on the manifold."""
        return math.sqrt(self.s2(t)) / t

    def posterior(self, t: float, x: np.ndarray, chunk: int = 64) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean (n, D) and covariance (n, D, D) of :math:`y` given :math:`x_t = x`."""
        t, x = self._check(t, x)
        s2 = self.s2(t)
        w = math.sqrt(s2) / t
        means, covs = [], []
        for i in range(0, len(x), chunk):
            xb = x[i : i + chunk]
            y, logw = self.manifold.quadrature(xb / t, np.full(len(xb), w), nodes=self.nodes, window=self.window)
            logit = logw - np.sum((xb[:, None, :] - t * y) ** 2, axis=-1) / (2 * s2)
            p = np.exp(logit - logit.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            m = np.einsum("bm,bmd->bd", p, y)
            d = y - m[:, None, :]
            means.append(m)
            covs.append(np.einsum("bm,bmi,bmj->bij", p, d, d))
        return np.concatenate(means), np.concatenate(covs)

    def velocity(self, t: float, x: np.ndarray) -> np.ndarray:
        """:math:`v(t, x)`, shape (n, D)."""
        t, x = self._check(t, x)
        m, _ = self.posterior(t, x)
        s2 = self.s2(t)
        return ((1 - t) * m + (t * self.sigma**2 - (1 - t)) * x) / s2

    def jacobian(self, t: float, x: np.ndarray) -> np.ndarray:
        """:math:`\\nabla_x v(t, x)`, shape (n, D, D) (symmetric)."""
        t, x = self._check(t, x)
        _, c = self.posterior(t, x)
        s2 = self.s2(t)
        eye = np.eye(self.ambient_dim)
        return (t * (1 - t) / s2 * c + (t * self.sigma**2 - (1 - t)) * eye) / s2

    def sample_xt(self, t: float, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of :math:`x_t = t(y + \\sigma z) + (1-t) x_0`."""
        t = float(t)
        if not (0.0 <= t <= 1.0):
            raise ValueError(f"t must lie in [0, 1]; got {t!r}")
        if int(n) != n or n < 0:
            raise ValueError(f"n must be an integer >= 0; got {n!r}")
        y = self.manifold.sample(n, rng)
        D = self.ambient_dim
        return t * (y + self.sigma * rng.standard_normal((n, D))) + (1 - t) * rng.standard_normal((n, D))

    def sample_tube(self, t: float, n: int, rng: np.random.Generator, fraction: float = 0.5) -> np.ndarray:
        """``n`` draws of :math:`x_t` whose :math:`x/t` lies within ``fraction`` x reach of the manifold."""
        fraction = _check_positive("fraction", fraction)
        out: list[np.ndarray] = []
        got, tries = 0, 0
        while got < n:
            x = self.sample_xt(t, max(4 * n, 64), rng)
            x = x[self.manifold.distance(x / t) <= fraction * self.manifold.reach]
            out.append(x)
            got += len(x)
            tries += 1
            if tries > 200:
                raise RuntimeError(f"p_t at t={t} almost never enters the tube; raise t or fraction")
        return np.concatenate(out)[:n]

    def blocks(self, t: float, x: np.ndarray) -> dict[str, np.ndarray]:
        """Tangential/normal decomposition of :math:`\\nabla v` at the nearest point of :math:`x/t`."""
        t, x = self._check(t, x)
        _, T = self.manifold.nearest(x / t)
        return tangent_normal_blocks(self.jacobian(t, x), T)


def tangent_normal_blocks(J: np.ndarray, T: np.ndarray) -> dict[str, np.ndarray]:
    """Blocks of Jacobians ``J`` (n, D, D) in an orthonormal tangent basis ``T`` (n, D, d) and its complement.

    Returns a dict of arrays of shape (n,): ``norm`` (:math:`\\|J\\|_2`), ``tangent`` (:math:`\\|T^\\top J T\\|_2`),
    ``tangent_min`` (smallest eigenvalue of the symmetric part of :math:`T^\\top J T`), ``normal_min`` and
    ``normal_max`` (extreme eigenvalues of the symmetric part of :math:`N^\\top J N`) and ``coupling``
    (:math:`\\|T^\\top J N\\|_2`).
    """
    J = check_array("J", J)
    T = check_array("T", T)
    if J.ndim != 3 or J.shape[1] != J.shape[2] or 0 in J.shape:
        raise ValueError(f"J must have shape (n, D, D); got {J.shape}")
    if T.ndim != 3 or T.shape[:2] != J.shape[:2] or not 0 < T.shape[2] < J.shape[1]:
        raise ValueError(f"T must have shape (n, D, d) with d < D matching J; got {T.shape} for J {J.shape}")
    D, d = J.shape[1], T.shape[2]
    full, _ = np.linalg.qr(np.concatenate([T, np.broadcast_to(np.eye(D), (len(J), D, D))], axis=2))
    N = full[:, :, d:D]
    sym = lambda a: 0.5 * (a + np.swapaxes(a, 1, 2))  # noqa: E731
    jt = np.einsum("bDi,bDE,bEj->bij", T, J, T)
    jn = np.einsum("bDi,bDE,bEj->bij", N, J, N)
    jtn = np.einsum("bDi,bDE,bEj->bij", T, J, N)
    et, en = np.linalg.eigvalsh(sym(jt)), np.linalg.eigvalsh(sym(jn))
    return {
        "norm": np.linalg.norm(J, ord=2, axis=(1, 2)),
        "tangent": np.linalg.norm(jt, ord=2, axis=(1, 2)),
        "tangent_min": et[:, 0],
        "normal_min": en[:, 0],
        "normal_max": en[:, -1],
        "coupling": np.linalg.norm(jtn, ord=2, axis=(1, 2)),
    }


def ambient_jacobian_bound(t: np.ndarray | float, sigma: float, diameter: float) -> np.ndarray:
    r"""The ambient bound :math:`\big[t(1-t)(\operatorname{diam}/2)^2/s_t^2 + |t\sigma^2-(1-t)|\big]/s_t^2`.

    It replaces :math:`\operatorname{Cov}(y\mid x)` by its isotropic worst case :math:`(\operatorname{diam}/2)^2 I`
    (a variance on a set of diameter ``diameter``), the reading of existing ambient Lipschitz analyses. Elementwise
    in ``t`` (finite, any shape; an empty ``t`` gives an empty result).
    """
    sigma = _check_positive("sigma", sigma)
    diameter = _check_positive("diameter", diameter)
    t = check_array("t", t)
    s2 = (1 - t) ** 2 + (t * sigma) ** 2
    return (t * (1 - t) * (diameter / 2) ** 2 / s2 + np.abs(t * sigma**2 - (1 - t))) / s2


def fit_loglog_slope(sigmas: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of ``log(values)`` against ``log(sigmas)``."""
    s, v = check_array("sigmas", sigmas), check_array("values", values)
    if s.shape != v.shape or s.ndim != 1 or len(s) < 2:
        raise ValueError(f"sigmas and values must be 1-D of equal length >= 2; got {s.shape}, {v.shape}")
    if np.any(s <= 0) or np.any(v <= 0):
        raise ValueError("sigmas and values must be > 0 for a log-log fit")
    return float(np.polyfit(np.log(s), np.log(v), 1)[0])
