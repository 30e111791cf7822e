"""Mutual correction between two models on unlabelled target data, and its baselines.

Two classifiers see the same unlabelled samples :math:`x_1..x_N`: a *target* model :math:`f_T` (e.g. a
source-pretrained network being adapted) and a *partner* :math:`f_V` (e.g. a vision-language model). Each
round, both predict; a *gate* decides, per sample, how strongly each model is pulled towards the other's
pseudo-label; then each model is trained for a few epochs on the soft targets

.. math::

    t^T_i = (1 - w^T_i)\\, e_{\\hat y^T_i} + w^T_i\\, e_{\\hat y^V_i}, \\qquad
    t^V_i = (1 - w^V_i)\\, e_{\\hat y^V_i} + w^V_i\\, e_{\\hat y^T_i}, \\qquad w_i \\in [0, 1],

with the loss :math:`-\\frac1N\\sum_i t_i^\\top \\log f(x_i) + \\lambda_{IM} L_{IM}` (the information-maximisation
term :math:`L_{IM}` of SHOT, Liang et al. 2020, on the target model only, when ``im_weight > 0``). With
:math:`w = 0` each model keeps its own pseudo-label (self-training); :math:`w = 1` hands it the other's.

The baselines are gates (``scheme``):

* ``"self"``: self-training, :math:`w^T = w^V = 0`;
* ``"teacher_student"``: one-directional :math:`V \\to T` distillation, :math:`w^T = 1`, the partner is frozen;
* ``"naive"``: naive mutual exchange, :math:`w^T = w^V = 1`;
* ``"confidence"``: confidence-gated exchange, the more confident model (max-probability) supervises the
  other with weight one, :math:`w^T = \\mathbb{1}[c^V > c^T]`, :math:`w^V = \\mathbb{1}[c^T > c^V]`.

A paper's gate subclasses :class:`MutualCorrection` and overrides :meth:`MutualCorrection.gate`
(revision 1 of SafeCut: :class:`geode.ensembles.safecut.SafeCutRounds`; the released SafeCut has its own
trainer, :class:`geode.ensembles.safecut.SafeCut`). Importing this module needs numpy only; torch is
imported when a model is trained.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_choice, check_int, check_real

__all__ = [
    "SCHEMES",
    "MutualCorrection",
    "RoundState",
    "confidence_gate",
    "information_maximization",
    "mutual_targets",
]

SCHEMES = ("self", "teacher_student", "naive", "confidence")


@dataclass
class RoundState:
    """What a gate sees at the start of a round (numpy arrays over the N unlabelled samples).

    Attributes
    ----------
    probs_t, probs_v : numpy.ndarray, shape (N, C)
        The target model's and the partner's predicted distributions.
    feats_t, feats_v : numpy.ndarray, shape (N, d_T) and (N, d_V)
        Their representations (``model.embed(x)`` when the model has one, else its logits).
    round : int
        Round index, from 0.
    """

    probs_t: np.ndarray
    probs_v: np.ndarray
    feats_t: np.ndarray
    feats_v: np.ndarray
    round: int

    @property
    def labels_t(self) -> np.ndarray:
        return self.probs_t.argmax(axis=1)

    @property
    def labels_v(self) -> np.ndarray:
        return self.probs_v.argmax(axis=1)


def mutual_targets(labels_self: Any, labels_partner: Any, weight: Any, n_classes: int) -> np.ndarray:
    """Soft targets :math:`t_i = (1 - w_i) e_{\\hat y^{self}_i} + w_i e_{\\hat y^{partner}_i}`, shape (N, C)."""
    a = check_array("labels_self", labels_self, ndim=1, dtype=np.int64)
    b = check_array("labels_partner", labels_partner, shape=(a.shape[0],), dtype=np.int64)
    w = check_array("weight", weight, shape=(a.shape[0],))
    n_classes = check_int("n_classes", n_classes, low=1)
    if w.size and (w.min() < 0 or w.max() > 1):
        raise ValueError(f"weight must lie in [0, 1]; got range [{w.min():.3g}, {w.max():.3g}]")
    for name, lab in (("labels_self", a), ("labels_partner", b)):
        if lab.size and (lab.min() < 0 or lab.max() >= n_classes):
            raise ValueError(f"{name} must hold labels in [0, {n_classes - 1}]")
    t = np.zeros((a.shape[0], n_classes))
    rows = np.arange(a.shape[0])
    np.add.at(t, (rows, a), 1.0 - w)
    np.add.at(t, (rows, b), w)
    return t


def confidence_gate(conf_t: Any, conf_v: Any) -> tuple[np.ndarray, np.ndarray]:
    """Confidence-gated exchange: :math:`w^T = \\mathbb{1}[c^V > c^T]`, :math:`w^V = \\mathbb{1}[c^T > c^V]`."""
    ct = check_array("conf_t", conf_t, ndim=1)
    cv = check_array("conf_v", conf_v, ndim=1)
    if cv.shape != ct.shape:
        raise ValueError(f"conf_t and conf_v must have the same length; got {ct.shape[0]} and {cv.shape[0]}")
    return (cv > ct).astype(float), (ct > cv).astype(float)


def information_maximization(probs: Any, eps: float = 1e-8) -> Any:
    """SHOT's information-maximisation loss on a batch of probabilities (torch), to be minimised.

    .. math::

        L_{IM} = \\frac1B \\sum_i H(p_i) - H\\Bigl(\\frac1B \\sum_i p_i\\Bigr),

    low when each prediction is confident (first term) and the batch's predictions are diverse (second).
    """
    import torch

    ent = -(probs * torch.log(probs + eps)).sum(dim=1).mean()
    mean = probs.mean(dim=0)
    div = -(mean * torch.log(mean + eps)).sum()
    return ent - div


def _inputs(x: Any, y: Any) -> tuple[Any, np.ndarray | None]:
    """``x`` as a finite float32 tensor of shape (N >= 2, ...) and ``y`` as N integer labels (or None)."""
    import torch

    x = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x, dtype=torch.float32)
    if x.ndim < 2 or x.shape[0] < 2:
        raise ValueError(f"x must have shape (N, ...) with N >= 2; got {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x must contain only finite values (found NaN or inf)")
    if y is None:
        return x, None
    yy = check_array("y", y, ndim=1, dtype=np.int64)
    if yy.shape[0] != x.shape[0]:
        raise ValueError(f"y must hold one label per row of x ({x.shape[0]}); got {yy.shape[0]}")
    return x, yy


def _forward(model: Any, x: Any, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities, features) of ``model`` on ``x``, without gradients, ``chunk`` rows at a time."""
    import torch

    model.eval()
    probs, feats = [], []
    with torch.no_grad():
        for start in range(0, x.shape[0], chunk):
            xb = x[start : start + chunk]
            logits = model(xb)
            f = model.embed(xb) if hasattr(model, "embed") else logits
            probs.append(torch.softmax(logits.double(), dim=1).numpy())
            feats.append(f.double().numpy())
    return np.concatenate(probs), np.concatenate(feats)


def _trainable(model: Any) -> list[Any]:
    return [p for p in model.parameters() if p.requires_grad]


class MutualCorrection:
    """Rounds of pseudo-label exchange between a target model and a partner, gated per sample.

    Parameters
    ----------
    scheme : {"self", "teacher_student", "naive", "confidence"}
        The baseline gate (see the module docstring); subclasses override :meth:`gate` instead.
    rounds : int
        Exchange rounds (each recomputes predictions, features and gates).
    epochs : int
        Training epochs per round and model.
    lr : float
        Adam learning rate.
    batch_size : int
        Mini-batch size.
    im_weight : float
        Weight :math:`\\lambda_{IM}` of SHOT's information maximisation on the target model.
    weight_decay : float
        Adam weight decay.
    seed : int
        Seed of the mini-batch order.

    Notes
    -----
    Models are ``torch.nn.Module`` s mapping a float tensor ``x`` (N, ...) to logits (N, C); a model with an
    ``embed(x)`` method exposes its representation to the gate. Only parameters with ``requires_grad`` are
    trained (freeze an encoder to train a head only). :meth:`fit` trains copies; the inputs are not modified.
    """

    def __init__(
        self,
        scheme: str = "self",
        *,
        rounds: int = 5,
        epochs: int = 5,
        lr: float = 1e-3,
        batch_size: int = 128,
        im_weight: float = 0.0,
        weight_decay: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.scheme = check_choice("scheme", scheme, SCHEMES)
        self.rounds = check_int("rounds", rounds, low=1)
        self.epochs = check_int("epochs", epochs, low=1)
        self.lr = check_real("lr", lr, low=0.0, low_inclusive=False)
        self.batch_size = check_int("batch_size", batch_size, low=1)
        self.im_weight = check_real("im_weight", im_weight, low=0.0)
        self.weight_decay = check_real("weight_decay", weight_decay, low=0.0)
        self.seed = check_int("seed", seed, low=0)

    @property
    def trains_partner(self) -> bool:
        """Whether the partner model is trained (not for one-directional teacher -> student)."""
        return self.scheme != "teacher_student"

    def gate(self, state: RoundState) -> tuple[np.ndarray, np.ndarray]:
        """Per-sample weights :math:`(w^T, w^V)` in [0, 1] towards the other model's pseudo-label."""
        n = state.probs_t.shape[0]
        if self.scheme == "self":
            return np.zeros(n), np.zeros(n)
        if self.scheme == "teacher_student":
            return np.ones(n), np.zeros(n)
        if self.scheme == "naive":
            return np.ones(n), np.ones(n)
        return confidence_gate(state.probs_t.max(axis=1), state.probs_v.max(axis=1))

    def _train(self, model: Any, x: Any, targets: np.ndarray, gen: Any, im: bool) -> None:
        import torch

        params = _trainable(model)
        if not params:
            return
        opt = torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
        t = torch.as_tensor(targets, dtype=torch.float32)
        n = x.shape[0]
        model.train()
        for _ in range(self.epochs):
            perm = torch.randperm(n, generator=gen)
            for start in range(0, n, self.batch_size):
                b = perm[start : start + self.batch_size]
                logp = torch.log_softmax(model(x[b]), dim=1)
                loss = -(t[b] * logp).sum(dim=1).mean()
                if im and self.im_weight > 0:
                    loss = loss + self.im_weight * information_maximization(logp.exp())
                opt.zero_grad()
                loss.backward()
                opt.step()

    def fit(self, model_t: Any, model_v: Any, x: Any, *, y: Any = None) -> tuple[Any, Any, list[dict[str, float]]]:
        """Run the rounds on unlabelled inputs ``x``; return the adapted copies and a per-round history.

        Parameters
        ----------
        model_t, model_v : torch.nn.Module
            Target model and partner, each mapping ``x`` to logits over the same C classes.
        x : torch.Tensor or array_like, shape (N, ...)
            Unlabelled target samples.
        y : array_like of int, shape (N,), optional
            True labels, used **only** to record accuracies and correction counts in the history.

        Returns
        -------
        model_t, model_v : torch.nn.Module
            Adapted copies.
        history : list of dict
            Per round (before its training, plus a final entry): mean gate weights and, with ``y``, the
            accuracies and the net correction of each direction,

            .. math::

                \\frac1N \\sum_i w_i \\bigl(\\mathbb{1}[\\text{partner right, self wrong}]
                    - \\mathbb{1}[\\text{partner wrong, self right}]\\bigr).
        """

        from geode.core.random import torch_generator

        x, yy = _inputs(x, y)
        model_t, model_v = copy.deepcopy(model_t), copy.deepcopy(model_v)
        gen = torch_generator(self.seed)
        history: list[dict[str, float]] = []
        for r in range(self.rounds + 1):
            pt, ft = _forward(model_t, x)
            pv, fv = _forward(model_v, x)
            if pt.shape[1] != pv.shape[1]:
                raise ValueError(f"the two models must predict the same classes; got {pt.shape[1]} and {pv.shape[1]}")
            state = RoundState(pt, pv, ft, fv, r)
            rec: dict[str, float] = {"round": float(r)}
            if yy is not None:
                rec["acc_t"] = float(np.mean(state.labels_t == yy))
                rec["acc_v"] = float(np.mean(state.labels_v == yy))
            if r == self.rounds:
                history.append(rec)
                break
            w_t, w_v = self.gate(state)
            w_t = np.clip(np.asarray(w_t, dtype=float), 0.0, 1.0)
            w_v = np.clip(np.asarray(w_v, dtype=float), 0.0, 1.0)
            if not self.trains_partner:
                w_v = np.zeros_like(w_v)
            rec["mean_w_t"], rec["mean_w_v"] = float(w_t.mean()), float(w_v.mean())
            if yy is not None:
                ok_t, ok_v = state.labels_t == yy, state.labels_v == yy
                rec["net_correction_t"] = float(np.mean(w_t * (ok_v & ~ok_t)) - np.mean(w_t * (~ok_v & ok_t)))
                rec["net_correction_v"] = float(np.mean(w_v * (ok_t & ~ok_v)) - np.mean(w_v * (~ok_t & ok_v)))
            history.append(rec)
            c = pt.shape[1]
            self._train(model_t, x, mutual_targets(state.labels_t, state.labels_v, w_t, c), gen, im=True)
            if self.trains_partner:
                self._train(model_v, x, mutual_targets(state.labels_v, state.labels_t, w_v, c), gen, im=False)
        return model_t, model_v, history
