r"""Optimization engagement: the AGOP of the next-token loss against a probe-defined concept subspace.

For a layer :math:`l` of a sequence model, let :math:`h_{l,n} \in \mathbb{R}^d` be its output at token
:math:`n` and :math:`g_n = \partial L / \partial h_{l,n}` the gradient of the sequence's next-token loss
with respect to it. The *average gradient outer product* (AGOP) over :math:`N` tokens is

.. math::

    G = \frac{1}{N} \sum_{n=1}^{N} g_n g_n^\top \in \mathbb{R}^{d \times d},

the directions in which the loss pushes the representation hardest. A *concept subspace* is the span of a
linear probe's weights for the concept's labels, orthonormalised: :math:`U \in \mathbb{R}^{d\times k}`,
:math:`U^\top U = I_k`, :math:`P = U U^\top`. The *engagement* of the loss with the concept is the share of
the AGOP's trace inside the subspace, normalised by the share a uniformly random :math:`k`-dimensional
subspace gets in expectation (:math:`k/d`):

.. math::

    E = \frac{\operatorname{tr}(P G P) / \operatorname{tr} G}{k / d}
      = \frac{d}{k} \, \frac{\operatorname{tr}(U^\top G U)}{\operatorname{tr} G}.

:math:`E = 1` is "no more pressure on the concept than on a random subspace"; the raw share
(``normalize=False``) lies in :math:`[0, 1]`, is 1 for :math:`G = P` and 0 for a subspace orthogonal to
:math:`G`'s range. :func:`subspace_alignment` gives the principal-angle alignment between :math:`U` and the
top-:math:`k` eigenvectors of :math:`G` (mean squared cosine), reported beside :math:`E`.

Inferred details (the paper was not found; these follow the research notes and are the library's choices):

- :math:`g_n` is the gradient of the *sequence's summed* next-token loss with respect to :math:`h_{l,n}`
  (what one backward pass through a hook gives; with causal attention it includes the loss of later
  tokens that read :math:`h_{l,n}`), not the per-token :math:`\partial L_n / \partial h_{l,n}`, which would
  need one backward pass per token;
- the average is over every (sequence, position) pair unless ``positions`` restricts it;
- the probe is an L2-regularised (multinomial) logistic regression on the raw activations; its weight
  rows are centred over classes (a multinomial probe has one redundant direction) and orthonormalised by
  an SVD, keeping at most ``n_classes - 1`` directions; a binary probe gives its single weight vector;
- the normalisation by :math:`k/d` is the research notes' reading of "alignment".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_int, check_positive, check_tensor

__all__ = [
    "agop",
    "agop_loop",
    "concept_subspace",
    "engagement",
    "layer_names",
    "next_token_loss",
    "subspace_alignment",
]


def layer_names(model: Any) -> list[str]:
    """Names of ``model``'s submodules (``named_modules``), the valid values of ``layer``."""
    if not callable(getattr(model, "named_modules", None)):
        raise TypeError(f"model must be a torch nn.Module; got {type(model).__name__}")
    return [n for n, _ in model.named_modules() if n]


def _module(model: Any, layer: str) -> Any:
    if not isinstance(layer, str):
        raise TypeError(f"layer must be a module name (str); got {type(layer).__name__}")
    mods = dict(model.named_modules())
    if layer not in mods or not layer:
        raise ValueError(
            f"layer {layer!r} is not a submodule of the model; available: {', '.join(layer_names(model))}"
        )
    return mods[layer]


def next_token_loss(logits: Any, input_ids: Any) -> Any:
    """Summed next-token cross-entropy: token ``n`` predicts token ``n + 1`` (shapes ``(B, T, V)``, ``(B, T)``).

    ``logits`` must be finite and non-empty; ``input_ids`` integer token ids in ``[0, V)``. With ``T = 1`` no
    token has a successor and the loss is 0 (an empty sum).
    """
    import torch
    import torch.nn.functional as F

    check_tensor("logits", logits, ndim=3, floating=True)
    if not isinstance(input_ids, torch.Tensor):
        raise TypeError(f"input_ids must be a torch tensor of token ids; got {type(input_ids).__name__}")
    if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
        raise TypeError(f"input_ids must be an integer tensor of token ids; got {input_ids.dtype}")
    if tuple(input_ids.shape) != tuple(logits.shape[:2]):
        raise ValueError(
            f"logits must have shape (B, T, V) and input_ids (B, T); got {tuple(logits.shape)} and "
            f"{tuple(input_ids.shape)}"
        )
    v = logits.shape[-1]
    if int(input_ids.min()) < 0 or int(input_ids.max()) >= v:
        raise ValueError(
            f"input_ids must lie in [0, {v - 1}] (the last axis of logits); "
            f"got values in [{int(input_ids.min())}, {int(input_ids.max())}]"
        )
    return F.cross_entropy(logits[:, :-1].reshape(-1, v), input_ids[:, 1:].reshape(-1), reduction="sum")


def _check_inputs(inputs: Any) -> Any:
    import torch

    x = torch.as_tensor(inputs)
    if x.ndim < 1 or x.shape[0] < 1:
        raise ValueError(f"inputs must be a non-empty batch (first axis = sequences); got shape {tuple(x.shape)}")
    return x


def _hooked_grads(
    model: Any, x: Any, module: Any, loss_fn: Callable[[Any, Any], Any], output_index: int | None
) -> Any:
    import torch

    store: dict[str, Any] = {}

    def hook(_m: Any, _inp: Any, out: Any) -> Any:
        h = out if output_index is None else out[output_index]
        if not isinstance(h, torch.Tensor):
            raise TypeError("the layer's output is not a tensor; pass output_index to pick one from a tuple")
        if not h.requires_grad:  # e.g. an identity layer on raw inputs: differentiate w.r.t. a leaf copy
            h = h.detach().requires_grad_(True)
            out = h if output_index is None else (*out[:output_index], h, *out[output_index + 1 :])
        store["h"] = h
        return out

    handle = module.register_forward_hook(hook)
    try:
        out = model(x)
    finally:
        handle.remove()
    if "h" not in store:
        raise RuntimeError("the layer was not called in the model's forward pass")
    loss = loss_fn(out, x)
    (g,) = torch.autograd.grad(loss, store["h"], allow_unused=False)
    return g


def _select(g: Any, positions: Any) -> Any:
    if g.ndim == 2:  # (B, d): one vector per example
        return g
    if positions is not None:
        g = g[:, positions]
    return g.reshape(-1, g.shape[-1])


def agop(
    model: Any,
    inputs: Any,
    layer: str,
    *,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    positions: Any = None,
    batch_size: int = 128,
    output_index: int | None = None,
) -> Any:
    r"""Average gradient outer product of a loss with respect to one layer's output.

    One batched backward pass per chunk of ``batch_size`` sequences through a forward hook on ``layer``;
    every sequence's loss depends only on its own activations (no batch statistics), so the gradient of
    the batch's summed loss at a sequence's activations equals that sequence's own gradient.

    Parameters
    ----------
    model : torch.nn.Module
        Called as ``model(inputs_chunk)``; left in its current train/eval mode, parameters untouched.
    inputs : array_like, shape (N, ...)
        A batch of inputs (token ids of shape ``(N, T)`` for a language model).
    layer : str
        Name of the submodule whose output :math:`h` is differentiated (see :func:`layer_names`).
    loss_fn : callable, optional
        ``loss_fn(model_output, inputs_chunk) -> scalar`` summed over the chunk. Default
        :func:`next_token_loss` (the model returns logits ``(B, T, V)``).
    positions : int, slice or index array, optional
        For a ``(B, T, d)`` layer output, the token positions whose gradients enter the average;
        default all.
    batch_size : int
        Sequences per backward pass.
    output_index : int, optional
        When the layer returns a tuple, which element is :math:`h`.

    Returns
    -------
    torch.Tensor, shape (d, d), float64
        :math:`G = \frac1N \sum_n g_n g_n^\top`, symmetric positive semi-definite.
    """
    import torch

    x = _check_inputs(inputs)
    module = _module(model, layer)
    batch_size = check_int("batch_size", batch_size, low=1)
    loss_fn = next_token_loss if loss_fn is None else loss_fn
    if not callable(loss_fn):
        raise TypeError("loss_fn must be callable as loss_fn(output, inputs)")
    total: Any = None
    count = 0
    for i in range(0, x.shape[0], batch_size):
        g = _select(_hooked_grads(model, x[i : i + batch_size], module, loss_fn, output_index), positions)
        g = g.detach().to(torch.float64)
        outer = g.T @ g
        total = outer if total is None else total + outer
        count += g.shape[0]
    return total / count


def agop_loop(
    model: Any,
    inputs: Any,
    layer: str,
    *,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    positions: Any = None,
    output_index: int | None = None,
) -> Any:
    """The same AGOP as :func:`agop`, one backward pass per sequence (the naive baseline of the benchmark)."""
    return agop(model, inputs, layer, loss_fn=loss_fn, positions=positions, batch_size=1, output_index=output_index)


def _as_matrix(name: str, a: Any) -> np.ndarray:
    try:
        import torch

        if isinstance(a, torch.Tensor):
            a = a.detach().cpu().double().numpy()
    except ImportError:  # pragma: no cover
        pass
    return check_array(name, a, ndim=2)


def _check_agop(g: Any) -> np.ndarray:
    g = _as_matrix("agop", g)
    if g.shape[0] != g.shape[1]:
        raise ValueError(f"agop must be a square matrix; got shape {g.shape}")
    if not np.allclose(g, g.T, rtol=1e-6, atol=1e-10 * max(1.0, float(np.abs(g).max()))):
        raise ValueError("agop must be symmetric")
    if np.trace(g) <= 0:
        raise ValueError("agop must have a positive trace (all gradients were zero?)")
    return 0.5 * (g + g.T)


def _check_basis(basis: Any, d: int) -> np.ndarray:
    u = _as_matrix("subspace", basis)
    if u.shape[0] != d:
        raise ValueError(f"subspace must have {d} rows (the AGOP's dimension); got shape {u.shape}")
    if u.shape[1] < 1 or u.shape[1] > d:
        raise ValueError(f"subspace must have between 1 and {d} columns; got {u.shape[1]}")
    q, r = np.linalg.qr(u)
    if np.min(np.abs(np.diag(r))) < 1e-10 * max(1.0, float(np.abs(r).max())):
        raise ValueError("subspace columns must be linearly independent")
    return q


def engagement(agop: Any, subspace: Any, *, normalize: bool = True) -> float:
    r"""Share of the AGOP's trace inside a subspace, relative to a random subspace of the same dimension.

    .. math::

        E = \frac{d}{k}\,\frac{\operatorname{tr}(Q^\top G Q)}{\operatorname{tr} G},

    :math:`Q` an orthonormal basis of ``subspace``'s column span (any basis of the same span gives the same
    value).

    Parameters
    ----------
    agop : array_like, shape (d, d)
        Symmetric positive semi-definite with positive trace (e.g. from :func:`agop`).
    subspace : array_like, shape (d, k)
        Columns spanning the concept subspace (need not be orthonormal; must be independent).
    normalize : bool
        Divide by :math:`k/d` (default). ``False`` returns the raw share in :math:`[0, 1]`.

    Returns
    -------
    float
    """
    g = _check_agop(agop)
    q = _check_basis(subspace, g.shape[0])
    share = float(np.trace(q.T @ g @ q) / np.trace(g))
    return share / (q.shape[1] / g.shape[0]) if normalize else share


def subspace_alignment(agop: Any, subspace: Any) -> float:
    r"""Mean squared cosine of the principal angles between ``subspace`` and the AGOP's top-:math:`k` eigenvectors.

    1 when the subspace is the span of the :math:`k` leading eigenvectors, 0 when orthogonal to it;
    :math:`k` is ``subspace``'s number of columns. Ties in the spectrum make the top-:math:`k` span
    ambiguous; numpy's ``eigh`` order decides them.
    """
    g = _check_agop(agop)
    q = _check_basis(subspace, g.shape[0])
    k = q.shape[1]
    _, vecs = np.linalg.eigh(g)
    top = vecs[:, ::-1][:, :k]
    cos = np.linalg.svd(q.T @ top, compute_uv=False)
    return float(np.mean(np.clip(cos, 0.0, 1.0) ** 2))


def concept_subspace(
    activations: Any,
    labels: Sequence[Any] | Any,
    k: int | None = None,
    *,
    C: float = 1.0,
    max_iter: int = 1000,
    return_probe: bool = False,
) -> Any:
    r"""Orthonormal basis of the subspace spanned by a linear probe's weights for ``labels``.

    Fits an L2-regularised logistic regression (multinomial for more than two classes) of ``labels`` on
    ``activations``; the weight rows :math:`W \in \mathbb{R}^{c \times d}` (one row for a binary probe) are
    centred over classes (for :math:`c > 2`) and the top-:math:`k` right singular vectors are returned.

    Parameters
    ----------
    activations : array_like, shape (n, d)
    labels : array_like, shape (n,)
        At least two classes.
    k : int, optional
        Dimension of the subspace, ``1 <= k <= min(d, n_classes - 1)``; default ``n_classes - 1`` (capped
        at ``d``).
    C : float
        Inverse L2 strength of the probe (scikit-learn's ``C``).
    max_iter : int
        Iterations of the probe's solver.
    return_probe : bool
        Also return the fitted ``LogisticRegression``.

    Returns
    -------
    numpy.ndarray, shape (d, k)
        Orthonormal columns; with ``return_probe`` a tuple ``(basis, probe)``.
    """
    from sklearn.linear_model import LogisticRegression

    x = _as_matrix("activations", activations)
    y = np.asarray(labels)
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(f"labels must have one entry per row of activations ({x.shape[0]}); got shape {y.shape}")
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError("labels must contain at least two classes")
    d = x.shape[1]
    kmax = min(d, classes.size - 1)
    if k is None:
        k = kmax
    k = check_int("k", k, low=1)
    if k > kmax:
        raise ValueError(f"k must be <= min(d, n_classes - 1) = {kmax} (d={d}, {classes.size} classes); got {k}")
    C = check_positive("C", C)
    probe = LogisticRegression(C=C, max_iter=check_int("max_iter", max_iter, low=1))
    probe.fit(x, y)
    w = np.asarray(probe.coef_, dtype=float)
    if w.shape[0] > 1:
        w = w - w.mean(axis=0, keepdims=True)
    if not np.any(w):
        raise ValueError("the probe's weights are all zero; cannot define a subspace (C too small?)")
    _, _, vt = np.linalg.svd(w, full_matrices=False)
    basis = vt[:k].T.copy()
    return (basis, probe) if return_probe else basis
