r"""Knowledge-involvement geometry of hidden states and the confidence calibrator built on it.

For one query, let :math:`h_0, \dots, h_L \in \mathbb{R}^d` be the model's hidden states of the answer
(the residual stream after each layer, averaged over the answer's tokens for an LM). The features
(the paper's "proximity, embedding rotation, anisotropy alignment"; their exact form is inferred):

- *rotation* :math:`\rho = \sum_{l} \arccos \cos(h_l, h_{l+1})`: how much the layers turn the state (how
  much stored knowledge the forward pass brings in);
- *norm growth* :math:`\log \|h_L\| - \log \|h_0\|`;
- *anisotropy alignment* :math:`|\cos(h_L - \mu, u_1)|` with :math:`\mu, u_1` the mean and the first
  principal direction of the reference (calibrator-fitting) states;
- *proximity* :math:`\frac1k \sum_{j \in \mathrm{kNN}} \cos(h_L, e_j)`: mean cosine similarity to the ``k``
  nearest reference states of correctly answered queries ("known" exemplars; a reference point never
  counts itself).

The calibrated confidence is a logistic regression of correctness on the standardised
:math:`[\operatorname{logit} c, \text{features}]`, fit on a split disjoint from the conformal calibration
set (:class:`GeometryCalibrator`). :func:`lm_answer_states` computes :math:`c` (the mean token probability
of the answer) and the states from a Hugging Face causal LM.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.validation import check_int, check_real

__all__ = ["GEOMETRY_FEATURES", "GeometryCalibrator", "geometry_features", "lm_answer_states"]

GEOMETRY_FEATURES: tuple[str, ...] = ("rotation", "norm_growth", "anisotropy", "proximity")


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _check_states(hidden: Any, name: str = "hidden") -> np.ndarray:
    if hasattr(hidden, "detach"):
        hidden = hidden.detach().cpu().numpy()
    try:
        h = np.asarray(hidden, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array (n, layers, d) of numbers; got {type(hidden).__name__}") from exc
    if h.ndim != 3 or h.shape[0] < 1 or h.shape[1] < 2 or h.shape[2] < 1:
        raise ValueError(f"{name} must have shape (n >= 1, layers >= 2, d >= 1); got {h.shape}")
    if not np.all(np.isfinite(h)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return h


def _check_conf(name: str, c: Any, n: int) -> np.ndarray:
    if hasattr(c, "detach"):
        c = c.detach().cpu().numpy()
    try:
        a = np.asarray(c, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of probabilities; got {type(c).__name__}") from exc
    if a.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one per query of hidden; got {a.shape}")
    if np.isnan(a).any() or (a.size and (a.min() < 0 or a.max() > 1)):
        raise ValueError(f"{name} must be probabilities in [0, 1] without NaN")
    return a


def geometry_features(
    hidden: Any, reference: Any = None, known: Any = None, *, k: int = 10, exclude_self: bool = False
) -> np.ndarray:
    """The four features of each query, ``(n, 4)`` in the order of :data:`GEOMETRY_FEATURES`.

    Parameters
    ----------
    hidden : array (n, L + 1, d)
        Hidden states of each query, layer by layer.
    reference : array (m, L + 1, d), optional
        Reference states (the calibrator's fitting split); default ``hidden`` itself.
    known : bool array (m,), optional
        Which reference queries were answered correctly (the proximity exemplars); default all.
    k : int
        Neighbours of the proximity feature.
    exclude_self : bool
        ``hidden`` is ``reference`` and a point must not be its own neighbour.
    """
    h = _check_states(hidden)
    ref = h if reference is None else _check_states(reference, "reference")
    if ref.shape[1:] != h.shape[1:]:
        raise ValueError(f"reference must have shape (m, {h.shape[1]}, {h.shape[2]}); got {ref.shape}")
    k = check_int("k", k, low=1)
    u = _unit(h)
    rotation = np.arccos(np.clip((u[:, 1:] * u[:, :-1]).sum(-1), -1.0, 1.0)).sum(1)
    norms = np.linalg.norm(h, axis=-1)
    growth = np.log(np.maximum(norms[:, -1], 1e-12)) - np.log(np.maximum(norms[:, 0], 1e-12))
    last_ref = ref[:, -1]
    mu = last_ref.mean(0)
    _, _, vt = np.linalg.svd(last_ref - mu, full_matrices=False)
    aniso = np.abs(_unit(h[:, -1] - mu) @ vt[0])
    kn = np.ones(len(ref), dtype=bool) if known is None else np.asarray(known, dtype=bool)
    if kn.shape != (len(ref),):
        raise ValueError(f"known must have shape ({len(ref)},); got {kn.shape}")
    idx = np.flatnonzero(kn)
    if idx.size == 0:
        prox = np.zeros(len(h))
    else:
        sims = _unit(h[:, -1]) @ _unit(last_ref[idx]).T
        if exclude_self:
            if len(h) != len(ref):
                raise ValueError("exclude_self needs hidden to be the reference itself")
            sims[idx, np.arange(idx.size)] = -np.inf
        kk = max(1, min(k, idx.size - (1 if exclude_self else 0)))
        top = -np.sort(-sims, axis=1)[:, :kk]
        top = np.where(np.isfinite(top), top, 0.0)
        prox = top.mean(1)
    return np.stack([rotation, growth, aniso, prox], axis=1)


def _logit(c: np.ndarray) -> np.ndarray:
    c = np.clip(c, 1e-6, 1 - 1e-6)
    return np.log(c) - np.log1p(-c)


class GeometryCalibrator:
    r"""Logistic calibration of correctness on :math:`[\operatorname{logit} c, \text{geometry features}]`.

    Parameters
    ----------
    C : float
        Inverse L2 strength of the logistic regression.
    k : int
        Neighbours of the proximity feature.
    features : tuple of str
        Which of :data:`GEOMETRY_FEATURES` to use (``()``: a logistic recalibration of :math:`c` alone).
    """

    def __init__(self, C: float = 1.0, *, k: int = 10, features: tuple[str, ...] = GEOMETRY_FEATURES) -> None:
        self.C = check_real("C", C, low=0.0, low_inclusive=False)
        self.k = check_int("k", k, low=1)
        bad = [f for f in features if f not in GEOMETRY_FEATURES]
        if bad:
            raise ValueError(f"features must be among {GEOMETRY_FEATURES}; got {bad}")
        self.features = tuple(features)
        self._cols = [GEOMETRY_FEATURES.index(f) for f in self.features]

    def _design(self, conf: np.ndarray, feats: np.ndarray) -> np.ndarray:
        return np.column_stack([_logit(conf), feats[:, self._cols]])

    def fit(self, confidence: Any, hidden: Any, correct: Any) -> GeometryCalibrator:
        """Fit on a split disjoint from the conformal calibration set."""
        from sklearn.linear_model import LogisticRegression

        h = _check_states(hidden)
        c = _check_conf("confidence", confidence, len(h))
        y = np.asarray(correct).astype(bool)
        if y.shape != (len(h),):
            raise ValueError(f"correct must have shape ({len(h)},); got {y.shape}")
        if y.all() or not y.any():
            raise ValueError("correct must hold both correct and incorrect answers to fit a calibrator")
        self.reference_ = h
        self.known_ = y
        f = geometry_features(h, h, y, k=self.k, exclude_self=True)
        x = self._design(c, f)
        self.mean_, self.scale_ = x.mean(0), np.maximum(x.std(0), 1e-12)
        self.model_ = LogisticRegression(C=self.C, max_iter=1000).fit((x - self.mean_) / self.scale_, y)
        return self

    def predict_confidence(self, confidence: Any, hidden: Any) -> np.ndarray:
        """Calibrated probability that each answer is correct."""
        if not hasattr(self, "model_"):
            raise RuntimeError("call fit(confidence, hidden, correct) first")
        h = _check_states(hidden)
        c = _check_conf("confidence", confidence, len(h))
        f = geometry_features(h, self.reference_, self.known_, k=self.k)
        x = (self._design(c, f) - self.mean_) / self.scale_
        return self.model_.predict_proba(x)[:, 1]


def lm_answer_states(model: Any, tokenizer: Any, prompts: list[str], answers: list[str]) -> tuple[Any, Any]:
    """Mean token probability of each answer and its hidden states ``(n, L + 1, d)`` from a causal LM.

    One forward pass of ``prompt + answer``; the states are the ``output_hidden_states`` of every layer,
    averaged over the answer's tokens (needs the ``llm`` extra; SmolLM2-135M via
    :func:`geode.models.load_smollm2`).
    """
    import torch

    if len(prompts) != len(answers):
        raise ValueError(f"prompts and answers must have the same length; got {len(prompts)} and {len(answers)}")
    confs, states = [], []
    with torch.no_grad():
        for p, a in zip(prompts, answers):
            p_ids = tokenizer(p, return_tensors="pt").input_ids
            a_ids = tokenizer(a, add_special_tokens=False, return_tensors="pt").input_ids
            if a_ids.shape[1] == 0:
                a_ids = torch.tensor([[tokenizer.eos_token_id]])
            ids = torch.cat([p_ids, a_ids], 1)
            out = model(input_ids=ids, output_hidden_states=True)
            start = p_ids.shape[1]
            logp = torch.log_softmax(out.logits[0, start - 1 : -1].float(), -1)
            tok = logp.gather(1, ids[0, start:, None]).squeeze(1)
            confs.append(float(tok.mean().exp()))
            states.append(torch.stack([hs[0, start:].float().mean(0) for hs in out.hidden_states]).numpy())
    return np.asarray(confs), np.stack(states)
