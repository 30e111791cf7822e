"""Finite-element (cotangent-Laplacian) ground-truth solvers on a closed mesh: screened Poisson and Fisher-KPP.

With the stiffness :math:`L` and lumped mass :math:`M` of :class:`~geode.sciml.pde_pretrain.mesh.Mesh`:

- *screened Poisson* :math:`-\\Delta u + \\alpha u = f` is, in P1 finite elements with a lumped load,
  :math:`(L + \\alpha M) u = M f` (well posed on a closed surface for :math:`\\alpha > 0`);
- *Fisher-KPP* :math:`\\partial_t u = \\kappa \\Delta u + r u (1 - u)` is stepped IMEX (implicit diffusion,
  explicit reaction): :math:`(M + \\Delta t\\,\\kappa L) u_{n+1} = M (u_n + \\Delta t\\, r\\, u_n (1 - u_n))`;
  :math:`r = 0` is the heat equation by implicit Euler, which conserves :math:`\\mathbf 1^\\top M u`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg

from geode.core import as_generator, check_array, check_int, check_real
from geode.sciml.pde_pretrain.mesh import Mesh, _as_mesh

__all__ = ["fisher_kpp_rollout", "random_smooth_field", "screened_poisson"]


def _field(mesh: Mesh, f: Any, name: str) -> np.ndarray:
    x = check_array(name, f, ndim=1)
    if x.shape[0] != mesh.n_vertices:
        raise ValueError(f"{name} must have one value per vertex ({mesh.n_vertices}); got shape {x.shape}")
    return x


def screened_poisson(mesh: Mesh, f: Any, alpha: float) -> np.ndarray:
    """Solve :math:`(L + \\alpha M) u = M f` on a closed mesh (sparse LU).

    Parameters
    ----------
    mesh : Mesh
    f : array_like, shape (n,)
        Source at the vertices.
    alpha : float > 0
        Screening coefficient (the screening length is :math:`1/\\sqrt\\alpha`).

    Examples
    --------
    >>> from geode.sciml.pde_pretrain.mesh import icosphere
    >>> m = Mesh(*icosphere(3))
    >>> z = m.vertices[:, 2]
    >>> u = screened_poisson(m, (2 + 1.0) * z, 1.0)  # -Lap z = 2z on the unit sphere
    >>> bool(np.abs(u - z).max() < 0.02)
    True
    """
    mesh = _as_mesh(mesh)
    a = check_real("alpha", alpha, low=0.0, low_inclusive=False)
    rhs = mesh.mass * _field(mesh, f, "f")
    A = (mesh.L + a * sp.diags(mesh.mass)).tocsc()
    return scipy.sparse.linalg.spsolve(A, rhs)


def fisher_kpp_rollout(mesh: Mesh, u0: Any, *, kappa: float, r: float, dt: float, n_steps: int) -> np.ndarray:
    """IMEX rollout of Fisher-KPP (heat when ``r = 0``); returns the states ``(n_steps + 1, n)``, ``u0`` first.

    Parameters
    ----------
    mesh : Mesh
    u0 : array_like, shape (n,)
    kappa : float > 0
        Diffusivity.
    r : float >= 0
        Reaction rate (logistic growth toward 1).
    dt : float > 0
    n_steps : int >= 1
    """
    mesh = _as_mesh(mesh)
    u = _field(mesh, u0, "u0")
    k = check_real("kappa", kappa, low=0.0, low_inclusive=False)
    rr = check_real("r", r, low=0.0)
    h = check_real("dt", dt, low=0.0, low_inclusive=False)
    n = check_int("n_steps", n_steps, low=1)
    lu = scipy.sparse.linalg.splu((sp.diags(mesh.mass) + h * k * mesh.L).tocsc())
    out = [u]
    for _ in range(n):
        u = lu.solve(mesh.mass * (u + h * rr * u * (1.0 - u)))
        out.append(u)
    return np.stack(out)


def random_smooth_field(mesh: Mesh, seed: Any, *, n_modes: int = 16, decay: float = 1.0) -> np.ndarray:
    """A random smooth field in [0, 1]: low Laplace-Beltrami modes with weights :math:`(1 + \\lambda)^{-decay}`.

    The combination :math:`g = \\sum_{k \\ge 1} c_k (1+\\lambda_k)^{-decay} \\phi_k`, :math:`c_k \\sim N(0, 1)`, is
    mapped affinely to [0, 1] (min to 0, max to 1); the constant mode is left out.
    """
    mesh = _as_mesh(mesh)
    rng = as_generator(seed)
    k = check_int("n_modes", n_modes, low=1, high=mesh.n_vertices - 1)
    d = check_real("decay", decay, low=0.0)
    lam, phi = mesh.eigenpairs(k + 1)
    g = phi[:, 1:] @ (rng.standard_normal(k) * (1.0 + lam[1:]) ** (-d))
    return (g - g.min()) / (g.max() - g.min())
