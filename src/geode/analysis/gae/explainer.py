r"""GAE: realign a sparse dictionary to unlabeled OOD activations in closed form, keeping its features.

Two modes (:class:`GAE` ``mode=``):

- ``"theory"`` (the default; the authors' release, ``MLAI-Yonsei/GAE``, ``gae.py``, its default mode):
  with the dictionary :math:`B = W_{dec}^\top \in \mathbb R^{d \times m}`,
  :math:`U_{ref}` = the top-``r`` left singular vectors of :math:`B` (the raw decoder, no usage weights),
  :math:`U_{ood}` = the top-``r`` eigenvectors of the OOD covariance (unbiased, :math:`n - 1`),
  :math:`R = Q V^\top` from :math:`U_{ood}^\top U_{ref} = Q S V^\top` (orthogonal Procrustes), and
  every atom is projected onto span(:math:`U_{ref}`), mapped and rescaled to its original norm,

  .. math::

      b_j' = \frac{\|b_j\|}{\|U_{ood} R U_{ref}^\top b_j\|}\, U_{ood} R U_{ref}^\top b_j .

  The encoder, :math:`b_{enc}`, :math:`b_{dec}` (and a JumpReLU threshold) are unchanged; there is no
  refit. ``r`` is given (the release's fixed 64), or the smallest number of OOD-covariance eigenvalues
  whose *squared* values reach a fraction ``energy`` of the total (the release's energy rule), capped
  by min(d, m, rank B, n - 1). On an OOD distribution that is a direct rotation :math:`T` of the ID
  subspace (angles below 90°), :math:`U_{ood} R U_{ref}^\top = T` on span(:math:`U_{ref}`): each atom
  inside it is rotated exactly as the data were; the encoder still reads the ID directions.
- ``"direct"`` (ours, inferred before the release was readable; reported beside the verdict): the five
  steps below, which rotate the encoder as well and refit the decoder.

Notation (rows are activations :math:`x \in \mathbb R^d`; the dictionary is a
:class:`geode.analysis.SparseAutoencoder` with :math:`a(x) = \sigma((x - b_{dec}) W_{enc} + b_{enc})`,
:math:`\hat x = a W_{dec} + b_{dec}`):

1. **OOD-active subspace.** :math:`\mu = \bar x_{ood}`,
   :math:`\Sigma_{ood} = \frac1n \sum_i (x_i - \mu)(x_i - \mu)^\top`, :math:`U_{ood}` = its top-``k``
   eigenvectors, ``k`` the smallest number reaching a fraction ``energy`` of the variance
   (:func:`active_subspace`).
2. **Dictionary subspace.** :math:`U_{id}` = the top-``k`` right singular vectors of the usage-weighted
   decoder :math:`\mathrm{diag}(\sqrt{\mathbb E\, a_j^2})\, W_{dec}` (:func:`dictionary_subspace`).
3. **Faithfulness gap.** :math:`\Delta = \|U_{id}U_{id}^\top - U_{ood}U_{ood}^\top\|_F / \sqrt 2
   = (\sum_i \sin^2\theta_i)^{1/2}` over the principal angles :math:`\theta_i` (:func:`faithfulness_gap`).
4. **Procrustes realignment.** With :math:`U_{id}^\top U_{ood} = V S W^\top`, :math:`R = V W^\top` is the
   orthogonal Procrustes solution :math:`\arg\min_R \|U_{id} R - U_{ood}\|_F`. We extend it to the
   *direct rotation* :math:`T` of :math:`\mathbb R^d` (Davis and Kahan, 1970): the rotation by
   :math:`\theta_i` in each plane spanned by a pair of principal vectors, the identity elsewhere, so
   that :math:`T U_{id} R = U_{ood}` and :math:`T` moves nothing it does not have to
   (:func:`direct_rotation`). Both sides of the dictionary are rotated,

   .. math::

       W_{enc}' = T W_{enc}, \qquad W_{dec}' = W_{dec} T^\top, \qquad
       b_{dec}' = \mu_{ood} + (b_{dec} - \mu_{id}) T^\top,

   which is the ID dictionary applied to the back-rotated input :math:`(x - \mu_{ood}) T + \mu_{id}`: each
   feature keeps its identity, and on an OOD distribution that is a pure (direct) rotation and shift of
   the ID one, the adapted dictionary reproduces the ID fidelity exactly.
5. **Constrained refit.** With the encoder fixed, :math:`A = a'(X_{ood})`, refit the decoder inside the
   OOD subspace, pulled towards the rotated one:

   .. math::

       W^* = \arg\min_{W:\ W = W P_{ood}} \|X_{ood} - b_{dec}' - A W\|_F^2 + \lambda \|W - W_{dec}'\|_F^2
           = (A^\top A + \lambda I)^{-1}\big(A^\top (X_{ood} - b_{dec}') + \lambda W_{dec}'\big) P_{ood},

   :math:`P_{ood} = U_{ood} U_{ood}^\top` (projecting the unconstrained ridge solution is exact because
   the constraint acts on the rows). :math:`\lambda` = ``ridge`` times the mean diagonal of
   :math:`A^\top A`. No gradient step anywhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from geode.analysis.sae import SparseAutoencoder
from geode.core.validation import check_choice, check_int, check_real

__all__ = [
    "GAE",
    "active_subspace",
    "dictionary_subspace",
    "direct_rotation",
    "faithfulness_gap",
    "mean_shift_adapt",
    "refit_decoder",
]


def _as_matrix(name: str, x: Any, d: int | None = None, min_rows: int = 2) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of shape (n_samples, d); got {type(x).__name__}") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (n_samples, d); got shape {arr.shape}")
    if d is not None and arr.shape[1] != d:
        raise ValueError(f"{name} must have {d} columns (the dictionary's d_in); got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows; got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def _check_sae(sae: Any) -> SparseAutoencoder:
    if not isinstance(sae, SparseAutoencoder):
        raise TypeError(f"sae must be a geode.analysis.SparseAutoencoder; got {type(sae).__name__}")
    return sae


def _k_from_energy(eigvals: np.ndarray, energy: float) -> int:
    total = float(eigvals.sum())
    if total <= 0.0:
        raise ValueError("the activations are constant (zero variance): they have no active subspace")
    frac = np.cumsum(eigvals) / total
    return int(np.searchsorted(frac, energy - 1e-12) + 1)


def active_subspace(
    X: Any, *, energy: float = 0.99, k: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Top principal subspace of activations: :math:`U` (d, k), the mean (d,) and all covariance eigenvalues.

    ``k`` is given, or the smallest number of directions explaining a fraction ``energy`` of the variance.
    Eigenvalues are returned in descending order.
    """
    x = _as_matrix("X", X)
    energy = check_real("energy", energy, low=0.0, high=1.0, low_inclusive=False)
    mu = x.mean(axis=0)
    xc = x - mu
    _, s, vh = np.linalg.svd(xc, full_matrices=False)
    ev = s**2 / x.shape[0]
    if k is None:
        k = _k_from_energy(ev, energy)
    k = check_int("k", k, low=1, high=min(x.shape[1], vh.shape[0]))
    return vh[:k].T.copy(), mu, ev


def dictionary_subspace(sae: SparseAutoencoder, X: Any, k: int) -> np.ndarray:
    r"""The dictionary's active subspace: the top-``k`` right singular vectors of the usage-weighted decoder.

    The weighted decoder is :math:`\mathrm{diag}(\sqrt{\mathbb E\,a_j^2})\,W_{dec}`.

    Feature usage :math:`\mathbb E\, a_j^2` is measured on the activations ``X`` (e.g. a sample of the
    ID data the dictionary was trained on), so unused (dead) features do not count.
    """
    sae = _check_sae(sae)
    x = _as_matrix("X", X, sae.d_in, min_rows=1)
    k = check_int("k", k, low=1, high=sae.d_in)
    with torch.no_grad():
        a = sae.encode(torch.as_tensor(x, dtype=sae.W_dec.dtype)).double().numpy()
        w = sae.W_dec.detach().double().numpy()
    usage = np.sqrt(np.mean(a**2, axis=0))
    if not np.any(usage > 0):
        raise ValueError("no dictionary feature is active on X: the dictionary subspace is undefined")
    _, _, vh = np.linalg.svd(usage[:, None] * w, full_matrices=False)
    if vh.shape[0] < k:
        raise ValueError(f"k = {k} exceeds the rank available from the decoder ({vh.shape[0]})")
    return vh[:k].T.copy()


def faithfulness_gap(U: Any, V: Any) -> float:
    r"""Projection distance :math:`\|P_U - P_V\|_F / \sqrt 2` between two subspaces (orthonormal bases not needed).

    Equal to :math:`(\sum_i \sin^2 \theta_i)^{1/2}` over the principal angles when the dimensions agree;
    in general :math:`\big(\tfrac{k_U + k_V}{2} - \sum_i \cos^2 \theta_i\big)^{1/2}`. 0 for the same
    subspace; :math:`\sqrt{k}` for orthogonal ones of dimension ``k``. A zero matrix spans no subspace and is
    refused.
    """
    u = _as_matrix("U", U, min_rows=1)
    v = _as_matrix("V", V, min_rows=1)
    for name, m in (("U", u), ("V", v)):
        if m.shape[1] == 0 or not np.any(m):
            raise ValueError(f"{name} spans no direction (no columns, or all zeros): it is not a subspace basis")
    if u.shape[0] != v.shape[0]:
        raise ValueError(f"U and V must live in the same space (same rows); got {u.shape} and {v.shape}")
    # from the projectors themselves: sqrt(k - sum cos^2) loses half the digits (1e-16 -> 1e-8) near 0
    pu, pv = _projector(u), _projector(v)
    return float(np.linalg.norm(pu - pv) / np.sqrt(2.0))


def _projector(a: np.ndarray) -> np.ndarray:
    """Orthogonal projector onto the column space of ``a`` (numerical rank from the SVD)."""
    q, s, _ = np.linalg.svd(a, full_matrices=False)
    rank = int(np.sum(s > s.max(initial=0.0) * max(a.shape) * np.finfo(float).eps)) if s.size else 0
    q = q[:, :rank]
    return q @ q.T


def direct_rotation(U_from: Any, U_to: Any, *, tol: float = 1e-10) -> np.ndarray:
    r"""The direct rotation :math:`T \in O(d)` taking span(``U_from``) onto span(``U_to``).

    With principal vectors :math:`a_i = (U_{from} V)_i`, :math:`b_i = (U_{to} W)_i` (from the SVD
    :math:`U_{from}^\top U_{to} = V \cos\Theta\, W^\top`) and :math:`w_i = (b_i - \cos\theta_i\, a_i)/\sin\theta_i`,

    .. math::

        T = I + \sum_i (\cos\theta_i - 1)(a_i a_i^\top + w_i w_i^\top) + \sin\theta_i\,(w_i a_i^\top - a_i w_i^\top),

    the rotation by :math:`\theta_i` in each plane :math:`(a_i, w_i)` (these planes are mutually
    orthogonal). Then :math:`T a_i = b_i`, so :math:`T U_{from} R = U_{to}` with the Procrustes
    :math:`R = V W^\top`, and :math:`T` is the identity on the orthogonal complement of both subspaces.
    Angles below ``tol`` are left alone. Both bases must be orthonormal with the same number of columns.

    Returns
    -------
    ndarray, shape (d, d), orthogonal, acting on column vectors (rows: multiply by :math:`T^\top`).
    """
    a = _as_matrix("U_from", U_from, min_rows=1)
    b = _as_matrix("U_to", U_to, min_rows=1)
    tol = check_real("tol", tol, low=0.0)
    if a.shape != b.shape:
        raise ValueError(f"U_from and U_to must have the same shape (d, k); got {a.shape} and {b.shape}")
    d, k = a.shape
    for name, m in (("U_from", a), ("U_to", b)):
        if not np.allclose(m.T @ m, np.eye(k), atol=1e-8):
            raise ValueError(f"{name} must have orthonormal columns")
    v, c, wt = np.linalg.svd(a.T @ b)
    c = np.clip(c, -1.0, 1.0)
    s = np.sqrt(np.maximum(1.0 - c**2, 0.0))
    pa = a @ v  # principal vectors of U_from
    pb = b @ wt.T  # principal vectors of U_to
    keep = s > tol
    pa, pb, c, s = pa[:, keep], pb[:, keep], c[keep], s[keep]
    t = np.eye(d)
    if pa.shape[1]:
        w = (pb - pa * c) / s
        t += (pa * (c - 1.0)) @ pa.T + (w * (c - 1.0)) @ w.T + (w * s) @ pa.T - (pa * s) @ w.T
    return t


def _with_params(sae: SparseAutoencoder, **params: np.ndarray) -> SparseAutoencoder:
    out = sae.copy()
    with torch.no_grad():
        for name, value in params.items():
            getattr(out, name).copy_(torch.as_tensor(value, dtype=out.W_dec.dtype))
    return out


def mean_shift_adapt(sae: SparseAutoencoder, X_ood: Any) -> SparseAutoencoder:
    """Baseline: move the decoder bias (the dictionary's centre) to the OOD mean; nothing else changes."""
    sae = _check_sae(sae)
    x = _as_matrix("X_ood", X_ood, sae.d_in)
    return _with_params(sae, b_dec=x.mean(axis=0))


def _ridge_decoder(a: np.ndarray, target: np.ndarray, prior: np.ndarray, ridge: float) -> np.ndarray:
    gram = a.T @ a
    lam = ridge * max(float(np.trace(gram)) / gram.shape[0], 1e-12)
    return np.linalg.solve(gram + lam * np.eye(gram.shape[0]), a.T @ target + lam * prior)


def refit_decoder(sae: SparseAutoencoder, X_ood: Any, *, ridge: float = 0.1) -> SparseAutoencoder:
    r"""Baseline: closed-form ridge refit of the decoder on OOD data, encoder untouched, no subspace constraint.

    :math:`W = (A^\top A + \lambda I)^{-1}(A^\top (X - \mu) + \lambda W_{dec})`, :math:`b_{dec} \leftarrow \mu`,
    with :math:`A` the (unchanged) encoder's codes of the re-centred data.
    """
    sae = _check_sae(sae)
    ridge = check_real("ridge", ridge, low=0.0)
    x = _as_matrix("X_ood", X_ood, sae.d_in)
    shifted = mean_shift_adapt(sae, x)
    with torch.no_grad():
        a = shifted.encode(torch.as_tensor(x, dtype=sae.W_dec.dtype)).double().numpy()
    mu = x.mean(axis=0)
    w = _ridge_decoder(a, x - mu, sae.W_dec.detach().double().numpy(), ridge)
    return _with_params(shifted, W_dec=w)


class GAE:
    """Geometry-Adaptive Explainer: closed-form realignment of a dictionary to unlabeled OOD activations.

    See the module docstring for the five steps.

    Parameters
    ----------
    mode : {"theory", "direct"}
        ``"theory"``: the authors' release (decoder atoms rotated and rescaled; encoder and biases fixed; no
        refit). ``"direct"``: ours (encoder and decoder rotated by the direct rotation, re-centred, refit).
    energy : float in (0, 1]
        Fraction that sets the subspace dimension ``k`` when ``k`` is not given: of the variance
        (``"direct"``), of the squared covariance eigenvalues (``"theory"``, as the release).
    k : int, optional
        Subspace dimension (the release's ``r``).
    ridge : float
        ``"direct"`` only: relative strength :math:`\\lambda` of the pull towards the rotated decoder in the
        refit (``>= 0``).
    refit : bool
        ``"direct"`` only: run step 5 (otherwise the dictionary is only rotated and re-centred).

    Attributes (after :meth:`fit`)
    ------------------------------
    adapted_ : SparseAutoencoder
        The realigned dictionary (same features, same order).
    rotation_ : ndarray
        ``"direct"``: the direct rotation :math:`T` (d, d); ``"theory"``: the Procrustes :math:`R` (r, r).
    U_id_, U_ood_ : ndarray (d, k)
        Dictionary and OOD-active subspaces (``"theory"``: :math:`U_{ref}`, from the raw decoder).
    gap_ : float
        Faithfulness gap of the unadapted dictionary; ``gap_after_`` that of the adapted one.
    k_ : int

    Examples
    --------
    >>> gae = GAE(energy=0.99).fit(sae, X_ood, X_id=X_id)  # doctest: +SKIP
    >>> sae_ood = gae.adapted_  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        mode: str = "theory",
        energy: float = 0.99,
        k: int | None = None,
        ridge: float = 0.1,
        refit: bool = True,
    ):
        self.mode = check_choice("mode", mode, ("theory", "direct"))
        self.energy = check_real("energy", energy, low=0.0, high=1.0, low_inclusive=False)
        self.k = None if k is None else check_int("k", k, low=1)
        self.ridge = check_real("ridge", ridge, low=0.0)
        self.refit = bool(refit)

    def fit(self, sae: SparseAutoencoder, X_ood: Any, X_id: Any = None) -> GAE:
        """Realign ``sae`` to the OOD activations ``X_ood`` (unlabeled; a few thousand rows suffice).

        ``X_id`` (optional) is a sample of ID activations, used for the dictionary's feature usage and
        the ID mean; without it, usage is measured on ``X_ood`` and the ID mean is taken to be ``b_dec``.
        """
        sae = _check_sae(sae)
        x = _as_matrix("X_ood", X_ood, sae.d_in)
        if self.mode == "theory":
            return self._fit_theory(sae, x)
        u_ood, mu_ood, _ = active_subspace(x, energy=self.energy, k=self.k)
        k = u_ood.shape[1]
        if X_id is not None:
            x_id = _as_matrix("X_id", X_id, sae.d_in)
            u_id = dictionary_subspace(sae, x_id, k)
            mu_id = x_id.mean(axis=0)
        else:
            u_id = dictionary_subspace(sae, x, k)
            mu_id = sae.b_dec.detach().double().numpy()
        t = direct_rotation(u_id, u_ood)
        w_enc = sae.W_enc.detach().double().numpy()
        w_dec = sae.W_dec.detach().double().numpy()
        b_dec = sae.b_dec.detach().double().numpy()
        b_new = mu_ood + (b_dec - mu_id) @ t.T
        w_rot = w_dec @ t.T
        rotated = _with_params(sae, W_enc=t @ w_enc, W_dec=w_rot, b_dec=b_new)
        adapted = rotated
        self.identity_cosine_ = 1.0
        if self.refit:
            with torch.no_grad():
                a = rotated.encode(torch.as_tensor(x, dtype=sae.W_dec.dtype)).double().numpy()
            proj = u_ood @ u_ood.T
            w_new = _ridge_decoder(a, x - b_new, w_rot, self.ridge) @ proj
            adapted = _with_params(rotated, W_dec=w_new)
            used = np.any(a > 0, axis=0)
            num = np.sum(w_new * w_rot, axis=1)
            den = np.linalg.norm(w_new, axis=1) * np.linalg.norm(w_rot, axis=1)
            cos = num[used] / np.maximum(den[used], 1e-300)
            self.identity_cosine_ = float(np.mean(cos)) if cos.size else 1.0
        self.adapted_ = adapted
        self.rotated_ = rotated
        self.rotation_ = t
        self.U_id_ = u_id
        self.U_ood_ = u_ood
        self.k_ = k
        self.gap_ = faithfulness_gap(u_id, u_ood)
        self.gap_after_ = faithfulness_gap(t @ u_id, u_ood)
        return self

    def _fit_theory(self, sae: SparseAutoencoder, x: np.ndarray) -> GAE:
        b = sae.W_dec.detach().double().numpy().T  # (d, m): the release's dictionary B = W_dec^T
        d, m = b.shape
        u, s, _ = np.linalg.svd(b, full_matrices=False)
        rank_b = int(np.sum(s > s.max(initial=0.0) * max(b.shape) * np.finfo(float).eps))
        xc = x - x.mean(axis=0)
        cov = xc.T @ xc / max(x.shape[0] - 1, 1)
        ev, evec = np.linalg.eigh(cov)
        order = np.argsort(ev)[::-1]
        ev, evec = ev[order], evec[:, order]
        cap = max(1, min(d, m, rank_b, x.shape[0] - 1))
        if self.k is not None:
            r = check_int("k", self.k, low=1, high=cap)
        else:
            energy2 = ev**2
            if float(energy2.sum()) <= 0.0:
                raise ValueError("the activations are constant (zero variance): they have no active subspace")
            r = min(max(_k_from_energy(energy2, self.energy), 1), cap)
        u_ref, u_ood = u[:, :r], evec[:, :r]
        q, _, vt = np.linalg.svd(u_ood.T @ u_ref)
        rot = q @ vt  # (r, r), Procrustes: U_ood R ~ U_ref in the release's convention
        mapped = u_ood @ rot @ (u_ref.T @ b)
        old, new = np.linalg.norm(b, axis=0), np.linalg.norm(mapped, axis=0)
        mapped = mapped * (old / np.maximum(new, 1e-300))
        adapted = _with_params(sae, W_dec=mapped.T)
        self.adapted_ = adapted
        self.rotated_ = adapted
        self.rotation_ = rot
        self.U_id_ = u_ref
        self.U_ood_ = u_ood
        self.k_ = r
        self.gap_ = faithfulness_gap(u_ref, u_ood)
        self.gap_after_ = faithfulness_gap(u_ood @ rot, u_ood)
        self.identity_cosine_ = 1.0
        return self
