"""MDA: merging with directional alignment in parameter space and feature space (paper ``mda``).

See the package docstring (:mod:`geode.ensembles.mda`) for the method, the inferred details and the claim.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from geode.core.validation import check_int, check_positive, check_real, check_tensor
from geode.ensembles.merging import LayerwiseMerger, check_state_dicts

__all__ = ["MDA", "align_task_vectors", "mda_tensor", "polar"]


def polar(m: Any) -> Any:
    """The orthogonal polar factor of a matrix: the nearest one with orthonormal columns (Procrustes).

    For :math:`m = P\\Sigma Q^\\top` it is :math:`PQ^\\top`, the nearest matrix with orthonormal columns (or
    rows when ``m`` is wide) in Frobenius norm: the Procrustes solution.

    Singular directions with :math:`\\sigma \\le 10^{-6}\\sigma_{\\max}` are dropped, which makes the factor
    unique for a rank-deficient ``m`` (the partial isometry on its range; duplicated tasks share it).
    ``m`` must be a finite, non-empty 2-D tensor.
    """

    check_tensor("m", m, ndim=2)
    return _polar(m)


def _polar(m: Any) -> Any:
    import torch

    p, s, qh = torch.linalg.svd(m, full_matrices=False)
    keep = s > 1e-6 * s.max().clamp(min=1e-30)
    return p[:, keep] @ qh[keep]


def _rank(shape: tuple[int, ...], k: int, rank_frac: float) -> int:
    return max(1, int(round(rank_frac * min(shape) / k)))


def align_task_vectors(tensors: Sequence[Any], *, rank_frac: float = 1.0) -> list[Any]:
    """Directionally aligned task vectors of one 2-D tensor.

    Each :math:`\\tau_k \\approx U_k\\Sigma_kV_k^\\top` (rank :math:`r = \\max(1, \\mathrm{round}(\\rho\\,
    \\min(m, n)/K))`, :math:`\\rho` = ``rank_frac``); the stacked dominant directions
    :math:`U = [U_1 \\dots U_K]`, :math:`V = [V_1 \\dots V_K]` are replaced by their Procrustes-nearest
    orthonormal frames :math:`\\tilde U = \\mathrm{polar}(U)`, :math:`\\tilde V = \\mathrm{polar}(V)` (the task
    subspaces become mutually orthogonal, each moved as little as possible), and
    :math:`\\tilde\\tau_k = \\tilde U_k\\Sigma_k\\tilde V_k^\\top`. Tensors that are not 2-D are returned as they are.

    Identities (tested): if the task subspaces are already orthogonal and of rank <= r, nothing changes;
    ``K`` identical task vectors of rank <= r become ``τ/K`` each, so their sum is ``τ``.
    """

    rank_frac = check_positive("rank_frac", rank_frac)
    _check_tensors("tensors", tensors)
    return _align(tensors, rank_frac)


def _check_tensors(name: str, tensors: Any, shape: tuple[int, ...] | None = None) -> None:
    """``tensors``: a non-empty sequence of finite, non-empty tensors of one shape (``shape`` if given)."""
    if isinstance(tensors, (str, bytes)) or not isinstance(tensors, Sequence) or len(tensors) == 0:
        raise ValueError(f"{name} must hold at least one task vector (a non-empty sequence of tensors)")
    for i, t in enumerate(tensors):
        check_tensor(f"{name}[{i}]", t, floating=True)
        want = tuple(tensors[0].shape) if shape is None else shape
        if tuple(t.shape) != want:
            ref = "tensors[0]" if shape is None else "base"
            raise ValueError(f"{name}[{i}] has shape {tuple(t.shape)}, {ref} has {want} (one shape for all)")


def _align(tensors: Sequence[Any], rank_frac: float) -> list[Any]:
    import torch

    if tensors[0].dim() != 2:
        return [t.clone() for t in tensors]
    k = len(tensors)
    r = min(_rank(tuple(tensors[0].shape), k, rank_frac), min(tensors[0].shape))
    us, ss, vs = [], [], []
    for t in tensors:
        u, s, vh = torch.linalg.svd(t, full_matrices=False)
        us.append(u[:, :r])
        ss.append(s[:r])
        vs.append(vh[:r].T)
    u_al = _polar(torch.cat(us, 1))
    v_al = _polar(torch.cat(vs, 1))
    return [u_al[:, i * r : (i + 1) * r] @ torch.diag(ss[i]) @ v_al[:, i * r : (i + 1) * r].T for i in range(k)]


def mda_tensor(base: Any, tensors: Sequence[Any], *, lam: float = 1.0, rank_frac: float = 1.0) -> Any:
    """MDA's data-free stage on one tensor (mergekit per-tensor convention).

    :math:`\\theta = \\theta_0 + \\lambda\\sum_k\\tilde\\tau_k` with :math:`\\tilde\\tau_k` from
    :func:`align_task_vectors`; 1-D tensors (biases, norms) get task arithmetic.

    Parameters
    ----------
    base : Tensor
        The base tensor :math:`\\theta_0`.
    tensors : sequence of Tensor
        The fine-tuned tensors :math:`\\theta_k` (same shape as ``base``).
    lam : float
        Scale of the merged task vector.
    rank_frac : float
        Rank per task as a fraction of ``min(m, n) / K``.
    """
    lam = check_real("lam", lam)
    rank_frac = check_positive("rank_frac", rank_frac)
    check_tensor("base", base, floating=True)
    _check_tensors("tensors", tensors, tuple(base.shape))
    al = _align([t - base for t in tensors], rank_frac)
    return base + lam * sum(al)


class _Aligned(LayerwiseMerger):
    """Layer-wise coefficients on aligned task vectors, plus a per-task Cayley rotation of the features
    before the task's head, trained on entropy + ETF alignment + rotation regularisation."""

    def __init__(self, *, init: float, lr: float, steps: int, beta: float, gamma: float, rotate: bool) -> None:
        super().__init__(init=init, lr=lr, steps=steps)
        self.beta, self.gamma, self.rotate = float(beta), float(gamma), bool(rotate)
        self._skew: list[Any] = []

    def _extra_params(self, n_tasks: int, features: Sequence[Any]) -> list[Any]:
        return list(self._skew)

    def rotation(self, k: int) -> Any:
        import torch

        if not self.rotate or not self._skew:
            return None
        a = self._skew[k] - self._skew[k].T
        eye = torch.eye(a.shape[0])
        return torch.linalg.solve(eye + a, eye - a)  # Cayley: (I + A)^-1 (I - A), orthogonal for skew A

    def _task_logits(self, k: int, feats: Any, head: Any) -> tuple[Any, Any]:
        import torch

        rot = self.rotation(k)
        z = feats @ rot.T if rot is not None else feats
        logits = head(z)
        reg = 0.0
        if self.beta > 0:
            w = head.weight - head.weight.mean(0, keepdim=True)  # centred class directions: the ETF vertices
            target = w[logits.argmax(-1)].detach()
            zc = z - z.mean(0, keepdim=True)
            reg = reg + self.beta * (1 - torch.nn.functional.cosine_similarity(zc, target, dim=-1)).mean()
        if rot is not None and self.gamma > 0:
            reg = reg + self.gamma * ((rot - torch.eye(rot.shape[0])) ** 2).sum()
        return logits, reg

    def fit(self, backbone: Any, base: Any, taus: Any, heads: Any, data: Any) -> dict[str, Any]:
        import torch
        from torch.func import functional_call

        # create the rotations up front so the optimiser sees them
        self._skew = []
        if self.rotate:
            with torch.no_grad():
                d = functional_call(backbone, dict(base), (data[0][:2],)).shape[1]
            self._skew = [torch.zeros(d, d, requires_grad=True) for _ in taus]
        return super().fit(backbone, base, taus, heads, data)


class MDA:
    """Merging with Directional Alignment (paper ``mda``), in two stages.

    1. *Parameter space* (data-free, :func:`mda_tensor`): each 2-D task vector's dominant directions are
       aligned to a common orthogonal frame by Procrustes (:func:`align_task_vectors`), so the tasks stop
       interfering along shared directions while each keeps its singular values.
    2. *Feature space* (needs a little unlabeled data per task, and the task heads): layer-wise merging
       coefficients :math:`\\lambda_{k,l}` on the aligned task vectors and one orthogonal rotation
       :math:`R_k = (I + A_k)^{-1}(I - A_k)` (Cayley, :math:`A_k` skew) per task before its fixed head, learned
       with Adam on

       .. math:: \\frac1K\\sum_k \\Big[ H\\big(\\mathrm{softmax}(h_k(R_k f_\\theta(x)))\\big)
                 + \\beta\\,\\big(1 - \\cos(R_k \\bar f_\\theta(x),\\ \\bar w_{k,\\hat y})\\big)
                 + \\gamma\\,\\|R_k - I\\|_F^2 \\Big]

       where :math:`\\bar w_{k,c}` is the centred row ``c`` of head ``k`` (the ETF vertex of class ``c``
       under Neural Collapse), :math:`\\hat y` the head's prediction and :math:`\\bar f` the batch-centred
       feature.

    Parameters
    ----------
    lam : float
        Scale of the merged task vector (stage 1) and initial coefficient (stage 2).
    rank_frac : float
        Rank per task of the aligned directions, as a fraction of ``min(m, n) / K``.
    align : bool
        Stage 1's alignment; ``False`` gives task arithmetic (and, with data, AdaMerging plus rotations).
    lr, steps : float, int
        Adam on stage 2 (ignored without data).
    beta : float
        Weight of the ETF alignment term.
    gamma : float
        Weight of the rotation regulariser; Cayley keeps :math:`R_k^\\top R_k = I` exactly, so the paper's
        :math:`\\|R^\\top R - I\\|^2` is replaced by closeness to the identity.
    rotate : bool
        Learn the feature rotations (``False``: coefficients only).

    Attributes
    ----------
    rotations_ : list of Tensor or None
        :math:`R_k` after :meth:`merge` with data (apply as ``features @ R_k.T`` before head ``k``).
    """

    def __init__(
        self,
        lam: float = 0.3,
        rank_frac: float = 1.0,
        align: bool = True,
        lr: float = 1e-2,
        steps: int = 100,
        beta: float = 0.1,
        gamma: float = 1.0,
        rotate: bool = True,
    ) -> None:
        lam = check_real("lam", lam)
        rank_frac = check_positive("rank_frac", rank_frac)
        lr = check_positive("lr", lr)
        steps = check_int("steps", steps, low=0)
        beta = check_real("beta", beta, low=0.0)
        gamma = check_real("gamma", gamma, low=0.0)
        self.lam, self.rank_frac, self.align = float(lam), float(rank_frac), bool(align)
        self.lr, self.steps, self.beta, self.gamma, self.rotate = lr, int(steps), beta, gamma, rotate
        self.rotations_: list[Any] | None = None

    def aligned_task_vectors(self, base: Any, finetuned_models: Sequence[Any]) -> tuple[dict, list[dict]]:
        """The base state dict and the (aligned, if ``align``) task vectors of every floating tensor."""
        b, fs = check_state_dicts(base, finetuned_models)
        names = [n for n in b if b[n].is_floating_point()]
        taus: list[dict[str, Any]] = [{} for _ in fs]
        for n in names:
            tv = [f[n] - b[n] for f in fs]
            al = _align(tv, self.rank_frac) if self.align else tv
            for k in range(len(fs)):
                taus[k][n] = al[k]
        return b, taus

    def merge(
        self,
        base: Any,
        finetuned_models: Sequence[Any],
        data: Sequence[Any] | None = None,
        heads: Sequence[Any] | None = None,
    ) -> Any:
        """Merge ``finetuned_models`` (modules or state dicts sharing ``base``'s architecture).

        Parameters
        ----------
        base : nn.Module or state dict
            The pre-trained model :math:`\\theta_0`.
        finetuned_models : sequence of nn.Module or state dict
            The ``K`` fine-tuned copies.
        data : sequence of Tensor, optional
            One batch of unlabeled inputs per task, shaped like the base model's input; without it only the
            data-free stage runs.
        heads : sequence of nn.Module, optional
            The task heads (needed with ``data``).

        Returns
        -------
        nn.Module or dict
            A copy of ``base`` holding the merged parameters (a state dict if ``base`` is one).
        """
        import torch

        b, taus = self.aligned_task_vectors(base, finetuned_models)
        self.rotations_ = None
        if data is None:
            merged = {n: (v + self.lam * sum(t[n] for t in taus) if n in taus[0] else v.clone()) for n, v in b.items()}
        else:
            if not hasattr(base, "state_dict"):
                raise ValueError("merging with data needs base as an nn.Module (its forward gives the features)")
            if heads is None or len(heads) != len(taus):
                raise ValueError(
                    f"heads must hold one head per model ({len(taus)}), got {None if heads is None else len(heads)}"
                )
            if len(data) != len(taus):
                raise ValueError(f"data must hold one unlabeled batch per model ({len(taus)}), got {len(data)}")
            in_f = next(m for m in base.modules() if hasattr(m, "in_features")).in_features
            for i, x in enumerate(data):
                if not torch.is_tensor(x) or x.dim() != 2 or x.shape[1] != in_f or x.shape[0] < 2:
                    raise ValueError(
                        f"data[{i}] must be a tensor of shape (n >= 2, {in_f}), got "
                        f"{tuple(x.shape) if torch.is_tensor(x) else type(x).__name__}"
                    )
            fitter = _Aligned(
                init=self.lam, lr=self.lr, steps=self.steps, beta=self.beta, gamma=self.gamma, rotate=self.rotate
            )
            merged = fitter.fit(base, b, taus, heads, data)
            if self.rotate:
                with torch.no_grad():
                    self.rotations_ = [fitter.rotation(k).detach() for k in range(len(taus))]
        if not hasattr(base, "state_dict"):
            return merged
        out = copy.deepcopy(base)
        out.load_state_dict(merged)
        return out
