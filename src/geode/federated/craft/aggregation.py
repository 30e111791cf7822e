r"""CRAFT's conflict-free aggregation: a closed-form projection toward a reference direction, layer-wise.

For one layer group :math:`q` with :math:`K` client updates :math:`g_i = \theta_t - \theta_i \in
\mathbb R^{d_q}` (descent-signed), let :math:`U \in \mathbb R^{K \times d_q}` hold the unit rows
:math:`u_i = g_i / \|g_i\|` (clients with :math:`g_i = 0` are dropped), :math:`w \in \mathbb R^K` the
selected clients' data-size weights normalised to sum to 1, and :math:`\hat g` the unit previous
aggregate direction of the group (:math:`0` in the first round). CRAFT solves

.. math::

    x^\star = \arg\min_x \tfrac12 \|x - \hat g\|^2 \quad \text{s.t.} \quad U x = w ,

whose closed form (the minimum-norm correction of :math:`\hat g` onto the affine set) is

.. math::

    x^\star = \hat g + U^{+} (w - U \hat g), \qquad U^{+} = U^\top (U U^\top)^{+} .

When :math:`U` has full row rank, :math:`u_i^\top x^\star = w_i > 0` for every client: the update is
conflict-free, a common descent direction of all the selected clients' local objectives to first
order. When the constraints are inconsistent (more clients than dimensions, or collinear clients
with different weights) :math:`x^\star` is the least-squares solution, :math:`U x^\star = P w` with
:math:`P` the projector onto the range of :math:`U`. If :math:`\hat g` already satisfies the
constraints, :math:`x^\star = \hat g`.

The server then steps :math:`\theta \leftarrow \theta - \eta_s x^\star` group by group and keeps
:math:`x^\star` (unscaled) as the next reference, :math:`\hat g_{t+1} = x^\star / \|x^\star\|`. The
constraints fix :math:`u_i^\top x = w_i` with unit :math:`u_i`, so the step does not depend on the
*scale* of the client updates: a normalised step with momentum-like persistence of :math:`\hat g`. Its
norm does depend on the *geometry* of the updates:

- clients that all agree (:math:`u_i = u`) give :math:`x^\star = u / K` in the first round (the
  least-squares solution of :math:`u^\top x = w_i`, whose mean is :math:`1/K`): the FedAvg direction with
  norm :math:`1/K`, a step of :math:`\eta_s / K` whatever the size of the updates;
- two equally weighted clients at angle :math:`\theta` give :math:`\|x^\star\| = 1 / (2\cos(\theta/2))`,
  which grows without bound as they become opposed (5.7 at 170 degrees, 573 at 179.9 degrees).

``max_step_norm`` (off by default, as in the authors' code) caps :math:`\|x^\star\|` per group by
rescaling it; the capped direction keeps every alignment's sign, so it stays conflict-free.

Groups: a module's weight and bias belong to one group (:func:`module_groups`). With separate
groups, a bias of size :math:`d_q \le K` makes the system over-determined and CRAFT diverges (the
research notes measured this in 3 of 5 seeds).

Cost per group: :math:`O(K^2 d_q)` for the Gram matrix :math:`U U^\top` plus :math:`O(K^3)` for its
eigendecomposition; no iterative solver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_positive, check_real
from geode.federated.strategies import NDArrays, Strategy, check_client_updates

__all__ = ["CRAFT", "craft_direction", "module_groups"]


def craft_direction(
    updates: Any,
    weights: Any,
    reference: Any = None,
    *,
    rcond: float = 1e-6,
    log: bool = False,
) -> np.ndarray | tuple[np.ndarray, dict[str, Any]]:
    r"""CRAFT's conflict-free direction for one layer group (the closed form of the module docstring).

    .. math::

        x^\star = \hat g + U^\top (U U^\top)^{+} (w - U \hat g).

    Parameters
    ----------
    updates : array_like, shape (K, d)
        Client updates :math:`g_i = \theta_t - \theta_i` as rows (flattened over the group).
    weights : array_like, shape (K,)
        Non-negative client weights (data sizes); renormalised over the clients kept.
    reference : array_like, shape (d,), optional
        Previous aggregate of the group; it is normalised to :math:`\hat g`. ``None`` or zero means
        :math:`\hat g = 0` (the first round).
    rcond : float
        Relative cutoff on the singular values of :math:`U` in the pseudo-inverse: eigenvalues of
        :math:`U U^\top` below :math:`\max(\text{rcond}^2, 10 K \epsilon)\, \lambda_{\max}` are treated
        as zero (the Gram matrix squares the condition number, so its eigenvalues are only accurate to
        about :math:`K \epsilon \lambda_{\max}`). Clients whose directions differ by less than about
        ``rcond`` radians count as collinear.
    log : bool
        Also return diagnostics.

    Returns
    -------
    x : ndarray, shape (d,)
        The direction :math:`x^\star` (the server steps :math:`-\eta_s x^\star`). Zero if every update
        is zero.
    info : dict, only with ``log=True``
        ``kept`` (bool mask of non-zero clients), ``alignment`` (:math:`u_i^\top x^\star` of the kept
        clients), ``rank`` (numerical rank of :math:`U`), ``feasible`` (whether :math:`U x^\star = w`
        to 1e-8), ``correction_norm`` :math:`\|x^\star - \hat g\|`.

    Examples
    --------
    >>> import numpy as np
    >>> x = craft_direction([[1.0, 0.0], [0.0, 2.0]], [1, 1])   # orthogonal clients, first round
    >>> x
    array([0.5, 0.5])
    """
    g = check_array("updates", updates, ndim=2, min_rows=1)
    k, d = g.shape
    w_all = check_array("weights", weights, shape=(k,))
    if np.any(w_all < 0):
        raise ValueError("weights must be >= 0")
    rcond = check_real("rcond", rcond, low=0.0, high=1.0)
    if reference is None:
        ref = np.zeros(d)
    else:
        ref = check_array("reference", reference, shape=(d,))
    rnorm = float(np.linalg.norm(ref))
    g_hat = ref / rnorm if rnorm > 0 else np.zeros(d)

    # Work with the raw Gram matrix G = g gᵀ and rescale: U Uᵀ = D⁻¹ G D⁻¹ with D = diag(‖g_i‖), so the
    # (K x d) matrix of unit rows is never formed (one O(K² d) product is the whole large-d cost).
    graw = g @ g.T
    norms = np.sqrt(np.clip(np.diag(graw), 0.0, None))
    kept = norms > 0
    if not kept.any() or w_all[kept].sum() <= 0:
        x = np.zeros(d)
        info = {"kept": kept, "alignment": np.zeros(0), "rank": 0, "feasible": False, "correction_norm": 0.0}
        return (x, info) if log else x
    inv_norm = np.zeros(k)
    inv_norm[kept] = 1.0 / norms[kept]
    w = w_all[kept] / w_all[kept].sum()
    gram = (graw * np.outer(inv_norm, inv_norm))[np.ix_(kept, kept)]  # U Uᵀ of the kept clients
    u_ghat = ((g @ g_hat) * inv_norm)[kept]  # U ĝ
    resid = w - u_ghat  # w - U ĝ
    evals, evecs = np.linalg.eigh(gram)
    cutoff = max(rcond**2, 10 * gram.shape[0] * np.finfo(np.float64).eps) * max(float(evals[-1]), 0.0)
    good = evals > cutoff
    inv = np.zeros_like(evals)
    inv[good] = 1.0 / evals[good]
    lam = evecs @ (inv * (evecs.T @ resid))  # (U Uᵀ)⁺ (w - U ĝ)
    coef = np.zeros(k)
    coef[kept] = lam * inv_norm[kept]  # Uᵀ λ = gᵀ (λ / ‖g‖)
    x = g_hat + g.T @ coef  # ĝ + U⁺ (w - U ĝ)
    if not log:
        return x
    align = u_ghat + gram @ lam  # U x = U ĝ + U Uᵀ λ
    info = {
        "kept": kept,
        "alignment": align,
        "rank": int(good.sum()),
        "feasible": bool(np.allclose(align, w, atol=1e-8, rtol=1e-6)),
        "correction_norm": float(np.linalg.norm(x - g_hat)),
    }
    return x, info


def module_groups(model_or_names: Any) -> list[list[int]]:
    """Layer groups for :class:`CRAFT`, as index lists into the ``state_dict`` order.

    From a ``torch.nn.Module``: the parameters of one module (weight and bias) form one group; the
    parameters of a normalisation layer (BatchNorm, GroupNorm, LayerNorm, InstanceNorm) join the group
    of the module before it; every buffer (running statistics) is a group of its own. From a sequence
    of ``state_dict`` keys: keys are grouped by module prefix (``"fc1.weight"`` and ``"fc1.bias"``
    share ``"fc1"``), without the normalisation rule.

    Returns
    -------
    list of list of int
        A partition of ``range(len(state_dict))``.
    """
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        torch = None
    if torch is not None and isinstance(model_or_names, torch.nn.Module):
        model = model_or_names
        keys = list(model.state_dict().keys())
        pos = {k: i for i, k in enumerate(keys)}
        norm_types = (
            torch.nn.modules.batchnorm._NormBase,
            torch.nn.GroupNorm,
            torch.nn.LayerNorm,
        )
        groups: list[list[int]] = []
        seen: set[int] = set()
        for mname, mod in model.named_modules():
            prefix = f"{mname}." if mname else ""
            own = [pos[prefix + n] for n, _ in mod.named_parameters(recurse=False) if prefix + n in pos]
            bufs = [pos[prefix + n] for n, _ in mod.named_buffers(recurse=False) if prefix + n in pos]
            own = [i for i in own if i not in seen]
            if own:
                if isinstance(mod, norm_types) and groups:
                    groups[-1].extend(own)
                else:
                    groups.append(own)
                seen.update(own)
            for b in bufs:
                if b not in seen:
                    groups.append([b])
                    seen.add(b)
        rest = [i for i in range(len(keys)) if i not in seen]  # e.g. shared or unusual entries
        groups.extend([i] for i in rest)
        return [sorted(gr) for gr in groups]
    if isinstance(model_or_names, (str, bytes)) or not isinstance(model_or_names, Sequence):
        raise TypeError("model_or_names must be a torch.nn.Module or a sequence of state_dict keys")
    by_prefix: dict[str, list[int]] = {}
    for i, name in enumerate(model_or_names):
        if not isinstance(name, str):
            raise TypeError(f"model_or_names[{i}] must be a str key; got {type(name).__name__}")
        by_prefix.setdefault(name.rpartition(".")[0], []).append(i)
    return list(by_prefix.values())


def _check_groups(groups: Any, n_arrays: int) -> list[list[int]]:
    if groups is None:
        return [list(range(n_arrays))]
    out: list[list[int]] = []
    seen: list[int] = []
    for q, gr in enumerate(groups):
        idx = [int(i) for i in gr]
        if not idx:
            raise ValueError(f"groups[{q}] is empty")
        out.append(idx)
        seen.extend(idx)
    if sorted(seen) != list(range(n_arrays)):
        raise ValueError(
            f"groups must partition the {n_arrays} parameter arrays (each index 0..{n_arrays - 1} exactly once); "
            f"got {sorted(seen)}"
        )
    return out


class CRAFT(Strategy):
    r"""CRAFT (Conflict-Resolved Aggregation for Federated Training) as a server strategy.

    Per layer group :math:`q`: :math:`x_q^\star = \hat g_q + U_q^{+}(w - U_q \hat g_q)` (see
    :func:`craft_direction`), then :math:`\theta_q \leftarrow \theta_q - \eta_s x_q^\star` and
    :math:`\hat g_q \leftarrow x_q^\star / \|x_q^\star\|` for the next round.

    Parameters
    ----------
    server_lr : float
        :math:`\eta_s > 0` (the repository's default is 0.1; it needs a log-grid sweep).
    groups : list of list of int, optional
        Layer groups as indices into the parameter list (:func:`module_groups` builds the paper's
        grouping from a torch model); they must partition the arrays. ``None``: the whole model is one
        group.
    rcond : float
        Pseudo-inverse cutoff (see :func:`craft_direction`).
    max_step_norm : float, optional
        Cap on :math:`\|x_q^\star\|` per group: a longer direction is rescaled to this norm before the step
        (the reference stores the direction, so only the step changes). ``None`` (default, the authors'
        behaviour): no cap, and near-opposed clients can make the step arbitrarily long (see the module
        docstring). A cap of ``1`` bounds every group's step by :math:`\eta_s`.

    Attributes
    ----------
    last_alignment : list of ndarray
        Per group, :math:`u_i^\top x^\star` of the clients of the last round (all :math:`> 0` when the
        update was conflict-free).
    last_feasible : list of bool
        Per group, whether the last round's constraints :math:`U x = w` were met exactly (False when
        they were inconsistent and the least-squares solution was used).
    last_direction_norms : list of float
        Per group, :math:`\|x_q^\star\|` of the last round before any cap (the step is
        :math:`\eta_s` times it, or times ``max_step_norm`` when capped).
    """

    name = "CRAFT"

    def __init__(
        self,
        server_lr: float = 0.1,
        groups: Sequence[Sequence[int]] | None = None,
        *,
        rcond: float = 1e-6,
        max_step_norm: float | None = None,
    ):
        self.server_lr = check_positive("server_lr", server_lr)
        self.max_step_norm = None if max_step_norm is None else check_positive("max_step_norm", max_step_norm)
        if groups is not None and (isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence)):
            raise TypeError("groups must be a list of lists of parameter indices, or None")
        self.groups = None if groups is None else [list(map(int, g)) for g in groups]
        self.rcond = check_real("rcond", rcond, low=0.0, high=1.0)
        self._reference: list[np.ndarray | None] | None = None
        self.last_alignment: list[np.ndarray] = []
        self.last_feasible: list[bool] = []
        self.last_direction_norms: list[float] = []

    def reset(self) -> None:  # noqa: D102
        self._reference = None
        self.last_alignment = []
        self.last_feasible = []
        self.last_direction_norms = []

    def aggregate(
        self,
        global_params: NDArrays,
        client_params: Sequence[NDArrays],
        num_examples: Sequence[int],
        metrics: Sequence[Mapping[str, Any]] | None = None,
    ) -> NDArrays:
        """CRAFT's layer-wise conflict-free step (see the class docstring)."""
        glob, clients, n = check_client_updates(global_params, client_params, num_examples)
        groups = _check_groups(self.groups, len(glob))
        if self._reference is None or len(self._reference) != len(groups):
            self._reference = [None] * len(groups)
        k = len(clients)
        new = [np.asarray(g, dtype=np.float64).copy() for g in glob]
        self.last_alignment = []
        self.last_feasible = []
        self.last_direction_norms = []
        for q, idx in enumerate(groups):
            sizes = [glob[j].size for j in idx]
            d = int(sum(sizes))
            upd = np.empty((k, d))  # g_i = θ_t − θ_i, flattened over the group
            col = 0
            for j, sz in zip(idx, sizes):
                gj = glob[j].reshape(-1)
                for i, c in enumerate(clients):
                    np.subtract(gj, np.asarray(c[j]).reshape(-1), out=upd[i, col : col + sz])
                col += sz
            ref = self._reference[q]
            if ref is not None and ref.shape != (d,):
                ref = None
            x, info = craft_direction(upd, n, ref, rcond=self.rcond, log=True)
            self.last_alignment.append(info["alignment"])
            self.last_feasible.append(info["feasible"])
            if not info["kept"].any():
                continue  # every client left this group unchanged: no step, keep the reference
            xnorm = float(np.linalg.norm(x))
            self.last_direction_norms.append(xnorm)
            scale = self.server_lr
            if self.max_step_norm is not None and xnorm > self.max_step_norm:
                scale *= self.max_step_norm / xnorm
            col = 0
            for j, sz in zip(idx, sizes):
                new[j] -= scale * x[col : col + sz].reshape(glob[j].shape)
                col += sz
            self._reference[q] = x
        out = []
        for a, g in zip(new, glob):
            dt = g.dtype if np.issubdtype(g.dtype, np.inexact) else np.float64
            out.append(a.astype(dt))
        return out
