"""Model merging baselines on state dicts: averaging, task arithmetic, TIES, AdaMerging-style coefficients.

A merge combines ``K`` fine-tuned copies :math:`\\theta_k` of one base model :math:`\\theta_0` into a single
set of parameters, tensor by tensor (mergekit's per-tensor convention: a function of the base tensor and
the ``K`` fine-tuned tensors of the same name). With task vectors :math:`\\tau_k = \\theta_k - \\theta_0`:

* averaging: :math:`\\theta = \\tfrac1K \\sum_k \\theta_k`;
* task arithmetic (Ilharco et al. 2023): :math:`\\theta = \\theta_0 + \\lambda \\sum_k \\tau_k`;
* TIES (Yadav et al. 2023): trim each :math:`\\tau_k` to its top-``density`` magnitudes, elect the sign
  :math:`\\gamma = \\operatorname{sign}\\sum_k \\hat\\tau_k`, average the entries that agree with it (disjoint
  mean) and add :math:`\\lambda` times the result;
* AdaMerging, layer-wise (Yang et al. 2024): :math:`\\theta_l = \\theta_{0,l} + \\sum_k \\lambda_{k,l}\\tau_{k,l}`
  with the coefficients learned by minimising the prediction entropy on unlabeled data
  (:class:`LayerwiseMerger`, shared with MDA, whose task vectors are aligned first).

Every function validates that the state dicts share names and shapes, and names the offending tensor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from geode.core.validation import check_int, check_positive, check_real, check_tensor

__all__ = [
    "LayerwiseMerger",
    "average_merge",
    "check_state_dicts",
    "task_arithmetic",
    "task_vectors",
    "ties_merge",
    "ties_tensor",
]


def _sd(model: Any, name: str = "model") -> dict[str, Any]:
    if hasattr(model, "state_dict"):
        return {k: v.detach() for k, v in model.state_dict().items()}
    if isinstance(model, Mapping):
        for k, v in model.items():
            if not hasattr(v, "is_floating_point"):
                raise TypeError(f"{name} tensor {k!r} must be a torch tensor; got {type(v).__name__}")
        return dict(model)
    raise TypeError(f"{name} must be an nn.Module or a state dict; got {type(model).__name__}")


def check_state_dicts(base: Any, finetuned: Sequence[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Return the state dicts of ``base`` and ``finetuned``; raise if the architectures do not match.

    Raises
    ------
    ValueError
        ``finetuned`` is empty, or a model lacks a tensor of the base, has an extra one, or a shape differs,
        or a floating-point tensor holds a NaN or an infinity (it would poison the merge, or vanish in TIES).
    TypeError
        ``base`` or an entry of ``finetuned`` is neither an nn.Module nor a state dict.
    """
    if isinstance(finetuned, Mapping) or not isinstance(finetuned, Sequence) or len(finetuned) == 0:
        raise ValueError("finetuned_models must be a non-empty sequence of models or state dicts")
    b = _sd(base, "base")
    _check_finite_sd(b, "base")
    out = []
    for i, m in enumerate(finetuned):
        s = _sd(m, f"finetuned[{i}]")
        if set(s) != set(b):
            missing = sorted(set(b) - set(s))
            extra = sorted(set(s) - set(b))
            raise ValueError(
                f"finetuned_models[{i}] has a different architecture: missing {missing[:3]}, extra {extra[:3]}"
            )
        for k, v in b.items():
            if tuple(s[k].shape) != tuple(v.shape):
                raise ValueError(
                    f"finetuned_models[{i}] tensor {k!r} has shape {tuple(s[k].shape)}, base has {tuple(v.shape)}"
                )
        _check_finite_sd(s, f"finetuned[{i}]")
        out.append(s)
    return b, out


def _check_finite_sd(sd: dict[str, Any], where: str) -> None:
    for k, v in sd.items():
        if hasattr(v, "is_floating_point") and v.is_floating_point() and not bool(v.isfinite().all()):
            raise ValueError(f"{where} tensor {k!r} must contain only finite values (found NaN or inf)")


def task_vectors(base: Any, finetuned: Sequence[Any]) -> list[dict[str, Any]]:
    """:math:`\\tau_k = \\theta_k - \\theta_0` for every floating-point tensor (others are left out)."""
    b, fs = check_state_dicts(base, finetuned)
    return [{k: f[k] - b[k] for k in b if b[k].is_floating_point()} for f in fs]


def _per_tensor(base: Any, finetuned: Sequence[Any], fn: Callable[[Any, list[Any]], Any]) -> dict[str, Any]:
    b, fs = check_state_dicts(base, finetuned)
    return {k: (fn(v, [f[k] for f in fs]) if v.is_floating_point() else v.clone()) for k, v in b.items()}


def average_merge(base: Any, finetuned: Sequence[Any]) -> dict[str, Any]:
    """Uniform average of the fine-tuned parameters (``base`` fixes names and checks shapes)."""
    return _per_tensor(base, finetuned, lambda b, ts: sum(ts) / len(ts))


def task_arithmetic(base: Any, finetuned: Sequence[Any], lam: float = 0.3) -> dict[str, Any]:
    """:math:`\\theta_0 + \\lambda\\sum_k\\tau_k`; ``lam = 1/K`` is averaging."""
    lam = check_real("lam", lam)
    return _per_tensor(base, finetuned, lambda b, ts: b + lam * sum(t - b for t in ts))


def ties_tensor(base: Any, tensors: Sequence[Any], *, density: float = 0.2, lam: float = 1.0) -> Any:
    """TIES on one tensor: trim to the top ``density`` magnitudes, elect signs, disjoint mean, scale.

    ``density = 1`` keeps every entry; if all ``tau_k`` agree in sign it is then task arithmetic with
    :math:`\\lambda/K` (the disjoint mean of agreeing entries is their mean). ``base`` and every tensor must be
    finite, non-empty and of one shape (a NaN would otherwise vanish in the trimming, silently).
    """

    density, lam = _check_ties(density, lam)
    check_tensor("base", base, floating=True)
    if isinstance(tensors, (str, bytes)) or not isinstance(tensors, Sequence) or len(tensors) == 0:
        raise ValueError("tensors must be a non-empty sequence of tensors (one per fine-tuned model)")
    for i, t in enumerate(tensors):
        check_tensor(f"tensors[{i}]", t, floating=True)
        if tuple(t.shape) != tuple(base.shape):
            raise ValueError(f"tensors[{i}] has shape {tuple(t.shape)}, base has {tuple(base.shape)}")
    return _ties_tensor(base, tensors, density, lam)


def _check_ties(density: Any, lam: Any) -> tuple[float, float]:
    density = check_real("density", density, low=0.0, high=1.0, low_inclusive=False)
    return density, check_real("lam", lam)


def _ties_tensor(base: Any, tensors: Sequence[Any], density: float, lam: float) -> Any:
    import torch

    taus = torch.stack([t - base for t in tensors])
    if density < 1.0:
        flat = taus.reshape(len(tensors), -1).abs()
        keep = max(1, int(round(density * flat.shape[1])))
        thr = flat.kthvalue(flat.shape[1] - keep + 1, dim=1).values.view(-1, *([1] * (taus.dim() - 1)))
        taus = torch.where(taus.abs() >= thr, taus, torch.zeros_like(taus))
    sign = torch.sign(taus.sum(0))
    agree = (torch.sign(taus) == sign) & (taus != 0)
    num = (taus * agree).sum(0)
    cnt = agree.sum(0).clamp(min=1)
    return base + lam * num / cnt


def ties_merge(base: Any, finetuned: Sequence[Any], density: float = 0.2, lam: float = 1.0) -> dict[str, Any]:
    """TIES merging of every floating-point tensor (:func:`ties_tensor`).

    Every floating-point tensor must be finite (:func:`check_state_dicts`): TIES trims by magnitude, so a NaN
    would otherwise drop out together with the real values beside it.
    """
    density, lam = _check_ties(density, lam)
    return _per_tensor(base, finetuned, lambda b, ts: _ties_tensor(b, ts, density, lam))


class LayerwiseMerger:
    """Layer-wise merging coefficients learned by entropy minimisation on unlabeled data (AdaMerging).

    :math:`\\theta_l(\\lambda) = \\theta_{0,l} + \\sum_k \\lambda_{k,l}\\,\\tau_{k,l}`, one coefficient per task and
    per tensor, initialised at ``init``; the loss is the mean over tasks of the Shannon entropy of the task
    head's predictions on that task's unlabeled inputs (plus any extra loss terms a subclass adds).

    Parameters
    ----------
    init : float
        Initial coefficient (task arithmetic's :math:`\\lambda`).
    lr : float
        Adam learning rate on the coefficients.
    steps : int
        Adam steps (full batch over each task's unlabeled data).
    """

    def __init__(self, init: float = 0.3, lr: float = 1e-2, steps: int = 100) -> None:
        steps = check_int("steps", steps, low=0)
        lr = check_positive("lr", lr)
        self.init, self.lr, self.steps = check_real("init", init), float(lr), int(steps)

    # hooks for subclasses
    def _extra_params(self, n_tasks: int, features: Sequence[Any]) -> list[Any]:
        return []

    def _task_logits(self, k: int, feats: Any, head: Any) -> tuple[Any, Any]:
        return head(feats), 0.0

    def fit(
        self,
        backbone: Any,
        base: Mapping[str, Any],
        taus: Sequence[Mapping[str, Any]],
        heads: Sequence[Any],
        data: Sequence[Any],
    ) -> dict[str, Any]:
        """Learn the coefficients; return the merged state dict (detached)."""
        import torch
        from torch.func import functional_call

        if len(taus) == 0:
            raise ValueError("taus must hold at least one task vector (a dict of tensors)")
        if len(heads) != len(taus) or len(data) != len(taus):
            raise ValueError(
                f"need one head and one unlabeled batch per task: {len(taus)} taus, "
                f"{len(heads)} heads, {len(data)} data batches"
            )
        for k, x in enumerate(data):
            check_tensor(f"data[{k}]", x)
        names = [k for k in base if base[k].is_floating_point()]
        lam = torch.full((len(taus), len(names)), self.init, requires_grad=True)
        extra = self._extra_params(len(taus), data)
        self.lambdas_ = lam

        def params() -> dict[str, Any]:
            p = dict(base)
            for j, n in enumerate(names):
                p[n] = base[n] + sum(lam[k, j] * taus[k][n] for k in range(len(taus)))
            return p

        if self.steps:
            opt = torch.optim.Adam([lam, *extra], lr=self.lr)
            for _ in range(self.steps):
                opt.zero_grad()
                p = params()
                loss = 0.0
                for k, (head, x) in enumerate(zip(heads, data, strict=True)):
                    try:
                        feats = functional_call(backbone, p, (x,))
                    except RuntimeError as exc:
                        raise ValueError(
                            f"data[{k}] of shape {tuple(x.shape)} does not fit the backbone: {exc}"
                        ) from exc
                    logits, reg = self._task_logits(k, feats, head)
                    logp = torch.log_softmax(logits, dim=-1)
                    loss = loss + (-(logp.exp() * logp).sum(-1).mean()) + reg
                (loss / len(taus)).backward()
                opt.step()
        with torch.no_grad():
            return {k: v.detach().clone() for k, v in params().items()}
