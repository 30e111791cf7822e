"""SafeCut: cut-reliability-gated mutual correction between a target model and a partner model.

:class:`SafeCut` is the authors' released method (``SeongJunLee-net/SafeCut_NIPS26``): both models are updated
every mini-batch, each distilling the other's soft prediction with complementary gate weights computed from
the EMA-smoothed reliabilities :func:`geode.ensembles.safecut.cut_reliability` (see its docstring for the
losses). :class:`SafeCutRounds` is revision 1's reading from the abstract, kept as a variant:

Each round, both models' pseudo-labels are scored with the cut statistic in their own representation
(:func:`geode.ensembles.safecut.cut_statistic`; low :math:`Z` = reliable), and the relative reliability

.. math::

    r_i = \\sigma\\Bigl(\\frac{Z^T_i - Z^V_i}{\\tau}\\Bigr) \\in (0, 1)

sets the direction and strength of supervision on sample :math:`i`:

.. math::

    w^T_i = \\max(2 r_i - 1, 0) \\quad (V \\to T), \\qquad w^V_i = \\max(1 - 2 r_i, 0) \\quad (T \\to V).

When the partner's label is the more reliable one (:math:`Z^V_i < Z^T_i`) the target model is pulled towards
it, and the more so the larger the gap; in the other case the partner learns from the target model. With
equal reliabilities (:math:`Z^T_i = Z^V_i`, or :math:`\\tau \\to \\infty`) both weights vanish and each model
keeps its own label: SafeCut reduces to self-training. As :math:`\\tau \\to 0` the gate becomes hard (weight one
towards the more reliable model), the structure of confidence-gated exchange with :math:`Z` in place of
the max-probability. Training on the gated soft targets is :class:`geode.ensembles.MutualCorrection`'s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_choice, check_int, check_real
from geode.ensembles.mutual import MutualCorrection, RoundState, _forward, _inputs, _trainable
from geode.ensembles.safecut.cutstat import DTYPES, GraphCache, cut_reliability, cut_statistic

__all__ = ["RELIABILITIES", "SafeCut", "SafeCutGate", "SafeCutRounds", "SafeCutRun", "diversity_loss", "iic_loss"]


class SafeCutGate:
    """The reliability gate :math:`r = \\sigma((Z^T - Z^V)/\\tau)`, :math:`w^T = (2r-1)_+`, :math:`w^V = (1-2r)_+`.

    Parameters
    ----------
    tau : float
        Temperature :math:`\\tau > 0` of the gate; ``math.inf`` turns every weight off, ``0`` is not allowed
        (use a small value for a hard gate).

    Examples
    --------
    >>> w_t, w_v = SafeCutGate(tau=1.0).weights([2.0, -1.0, 0.0], [-1.0, 2.0, 0.0])
    >>> np.round(w_t, 3).tolist(), np.round(w_v, 3).tolist()
    ([0.905, 0.0, 0.0], [0.0, 0.905, 0.0])
    """

    def __init__(self, tau: float = 1.0) -> None:
        if isinstance(tau, (int, float)) and not isinstance(tau, bool) and tau == math.inf:
            self.tau = math.inf
        else:
            self.tau = check_real("tau", tau, low=0.0, low_inclusive=False)

    def relative_reliability(self, z_t: Any, z_v: Any) -> np.ndarray:
        """:math:`r_i = \\sigma((Z^T_i - Z^V_i)/\\tau)`: above one half when the partner is the more reliable."""
        zt = check_array("z_t", z_t, ndim=1)
        zv = check_array("z_v", z_v, ndim=1)
        if zv.shape != zt.shape:
            raise ValueError(f"z_t and z_v must have the same length; got {zt.shape[0]} and {zv.shape[0]}")
        if self.tau == math.inf:
            return np.full(zt.shape[0], 0.5)
        u = (zt - zv) / self.tau
        return 0.5 * (1.0 + np.tanh(0.5 * u))  # the logistic sigmoid, overflow-free

    def weights(self, z_t: Any, z_v: Any) -> tuple[np.ndarray, np.ndarray]:
        """Per-sample weights :math:`(w^T, w^V)`: V -> T and T -> V supervision strengths, at most one non-zero."""
        r = self.relative_reliability(z_t, z_v)
        return np.maximum(2.0 * r - 1.0, 0.0), np.maximum(1.0 - 2.0 * r, 0.0)


class SafeCutRounds(MutualCorrection):
    """Revision 1's SafeCut: rounds of :class:`MutualCorrection` with the cut-statistic (Z) gate.

    Our reading of the abstract before the authors' code was public; kept as a variant (the claim reports
    it). :class:`SafeCut` is the released method.

    Parameters
    ----------
    k : int
        Neighbours of the kNN graphs of the cut statistic (default 20).
    tau : float
        Gate temperature (:class:`SafeCutGate`).
    rounds, epochs, lr, batch_size, im_weight, weight_decay, seed
        As in :class:`geode.ensembles.MutualCorrection`.

    Notes
    -----
    Each model's cut statistic is computed on its own representation (``model.embed(x)``, else its logits)
    with its own pseudo-labels. Examples of use are in ``geode.ensembles.safecut.experiment``.
    """

    def __init__(
        self,
        *,
        k: int = 20,
        tau: float = 1.0,
        rounds: int = 5,
        epochs: int = 5,
        lr: float = 1e-3,
        batch_size: int = 128,
        im_weight: float = 0.0,
        weight_decay: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__(
            "naive",
            rounds=rounds,
            epochs=epochs,
            lr=lr,
            batch_size=batch_size,
            im_weight=im_weight,
            weight_decay=weight_decay,
            seed=seed,
        )
        self.scheme = "safecut"
        self.k = check_int("k", k, low=1)
        self.gate_ = SafeCutGate(tau)
        self.last_z_: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def trains_partner(self) -> bool:
        return True

    def gate(self, state: RoundState) -> tuple[np.ndarray, np.ndarray]:
        """Cut statistics of both models' pseudo-labels, then :meth:`SafeCutGate.weights`."""
        c = state.probs_t.shape[1]
        z_t = cut_statistic(state.feats_t, state.labels_t, self.k, n_classes=c)
        z_v = cut_statistic(state.feats_v, state.labels_v, self.k, n_classes=c)
        self.last_z_ = (z_t, z_v)
        return self.gate_.weights(z_t, z_v)


RELIABILITIES = ("cut", "confidence", "shuffled", "naive")


def _check_probs(name: str, p: Any) -> None:
    """A (B, C) floating tensor (shape and type only: no scan of the values on the training path)."""
    if not (hasattr(p, "detach") and hasattr(p, "is_floating_point")):
        raise TypeError(f"{name} must be a torch tensor of probabilities; got {type(p).__name__}")
    if p.ndim != 2 or not p.is_floating_point():
        raise ValueError(f"{name} must be a floating tensor of shape (batch, classes); got {p.dtype} {tuple(p.shape)}")


def iic_loss(probs_a: Any, probs_b: Any, eps: float = 1e-8) -> Any:
    """Negative mutual information of the symmetrised joint :math:`P = \\tfrac12(A^\\top B + B^\\top A)/n` (IIC).

    .. math::

        L_{IIC} = -\\sum_{c, c'} P_{cc'} \\bigl(\\log P_{cc'} - \\log P_{c\\cdot} - \\log P_{\\cdot c'}\\bigr),

    with :math:`P` clamped at ``eps`` (Ji et al. 2019, as in the release's ``losses.py``). 0 for a batch of one
    (or none). A per-step training loss: shapes are checked (two (B, C) tensors of one shape) but values are not
    scanned, so a NaN in the probabilities propagates to the loss, as in torch's own losses.
    """
    import torch

    _check_probs("probs_a", probs_a)
    _check_probs("probs_b", probs_b)
    if probs_a.shape != probs_b.shape:
        raise ValueError(
            f"probs_a and probs_b must have the same shape; got {tuple(probs_a.shape)} and {tuple(probs_b.shape)}"
        )
    eps = check_real("eps", eps, low=0.0, low_inclusive=False)
    n = probs_a.shape[0]
    if n < 2:
        return probs_a.sum() * 0.0
    p = probs_a.t() @ probs_b / n
    p = ((p + p.t()) / 2).clamp(min=eps)
    pa, pb = p.sum(dim=1, keepdim=True), p.sum(dim=0, keepdim=True)
    return -(p * (torch.log(p) - torch.log(pa) - torch.log(pb))).sum()


def diversity_loss(probs: Any, eps: float = 1e-8) -> Any:
    """:math:`\\sum_c \\bar p_c \\log \\bar p_c` of the batch mean :math:`\\bar p` (low = diverse).

    A per-step training loss on a non-empty (B, C) tensor: shapes are checked but values are not scanned, so a
    NaN in the probabilities propagates to the loss, as in torch's own losses.
    """
    _check_probs("probs", probs)
    if probs.shape[0] == 0:
        raise ValueError("probs must hold at least one row; got an empty batch")
    eps = check_real("eps", eps, low=0.0, low_inclusive=False)
    m = probs.mean(dim=0).clamp(min=eps)
    return (m * m.log()).sum()


class SafeCut:
    """SafeCut as released: reliability-gated mutual distillation, both models updated every mini-batch.

    Per sample :math:`i`, the reliabilities of the two models' pseudo-labels, :math:`r^T_i` (target model, on
    its current features) and :math:`r^P_i` (partner, on its frozen features), come from
    :func:`~geode.ensembles.safecut.cut_reliability` and are smoothed over epochs,
    :math:`w \\leftarrow m_e w + (1 - m_e) r` with :math:`m_e` rising from 0.7 to 0.95 on a half cosine. The
    gate is :math:`g^{P\\to T}_i = \\sigma(\\beta (w^P_i - w^T_i))`, :math:`g^{T\\to P}_i = 1 - g^{P\\to T}_i`
    (:math:`\\beta = 6`): both directions are always on, with complementary weights. On a mini-batch,

    .. math::

        L_T &= \\overline{g^{P\\to T} \\mathrm{KL}(p^P \\| p^T)} + \\lambda_{IIC} L_{IIC}(p^T, p^P)
              + \\lambda_{div} \\sum_c \\bar p^T_c \\log \\bar p^T_c
              + \\lambda_{tmp} \\overline{g^{T\\to P} \\mathrm{KL}(\\tilde p^T \\| p^T)}, \\\\
        L_P &= \\overline{g^{T\\to P} \\mathrm{KL}(p^T \\| p^P)} + \\lambda_{IIC} L_{IIC}(p^P, p^T)
              + \\lambda_{div} \\sum_c \\bar p^P_c \\log \\bar p^P_c
              + \\lambda_{tmp} \\overline{g^{P\\to T} \\mathrm{KL}(\\tilde p^P \\| p^P)},

    the other model's prediction detached, :math:`\\tilde p` the model's own cached prediction from its last
    visit of the sample (the warm-up pass at first): a model that is the more reliable is held to its past
    prediction, the less reliable one is pulled to its partner. Defaults are the release's run scripts:
    k = 50, :math:`\\tau_{sim}` = 0.1, :math:`\\beta` = 6, :math:`\\lambda_{IIC}` = 1.3, :math:`\\lambda_{div}`
    = 0.5, :math:`\\lambda_{tmp}` = 1.

    Parameters
    ----------
    k, tau_sim, isolated, fallback_knn, backend
        :func:`cut_reliability`'s.
    knn_dtype : {"float64", "float32"}
        :func:`cut_reliability`'s ``dtype``: precision of the kNN search (default float64, as the claim runs;
        float32 is about twice as fast and may swap near-tied neighbours).
    beta : float
        Gate sharpness :math:`\\beta \\ge 0`.
    iic_weight, div_weight, temporal_weight : float
        :math:`\\lambda_{IIC}, \\lambda_{div}, \\lambda_{tmp} \\ge 0`.
    ema_start, ema_end : float
        EMA momentum of the reliabilities at the first and the last epoch, in [0, 1).
    epochs : int
        Passes over the unlabelled data; reliabilities are refreshed after each.
    lr, lr_partner : float
        Adam learning rates of the target model and of the partner (default ``lr``).
    batch_size : int
    weight_decay : float
        Adam weight decay of both models.
    reliability : {"cut", "confidence", "shuffled", "naive"}
        ``"cut"``: SafeCut. The others are baselines and controls with the same training: ``"confidence"``
        uses the max-probability in place of :math:`r`; ``"shuffled"`` permutes the cut reliabilities across
        samples at each refresh (same distribution of gates, no per-sample information: a negative control);
        ``"naive"`` sets both gates to one (naive mutual exchange).
    seed : int
        Seed of the mini-batch order (and of the shuffling control).

    Notes
    -----
    Deliberate differences from the release: Adam for both models (the release: SGD with momentum and the
    "inv" schedule for the target network, AdamW with a cosine schedule for CLIP's prompts); the partner is any
    module whose ``embed`` is frozen (the release: CLIP with learnable prompts; its image features are
    cached once, as here); the last epoch's models are returned (the release also reports the best epoch by
    labelled target accuracy, which we never do). The caches of the target model's features and predictions
    are refreshed from the training-mode forward of each mini-batch, as in the release. The partner's kNN graph
    is built once per :meth:`fit` (:class:`~geode.ensembles.safecut.cutstat.GraphCache`): its features are frozen, so
    each epoch's refresh rebuilds only the target model's graph (the same reliabilities, bit for bit).
    """

    def __init__(
        self,
        *,
        k: int = 50,
        tau_sim: float = 0.1,
        beta: float = 6.0,
        iic_weight: float = 1.3,
        div_weight: float = 0.5,
        temporal_weight: float = 1.0,
        ema_start: float = 0.7,
        ema_end: float = 0.95,
        epochs: int = 10,
        lr: float = 1e-3,
        lr_partner: float | None = None,
        batch_size: int = 128,
        weight_decay: float = 0.0,
        reliability: str = "cut",
        isolated: float = 0.1,
        fallback_knn: bool = True,
        backend: str = "brute",
        knn_dtype: str = "float64",
        seed: int = 0,
    ) -> None:
        self.k = check_int("k", k, low=1)
        self.tau_sim = check_real("tau_sim", tau_sim, low=0.0, low_inclusive=False)
        self.beta = check_real("beta", beta, low=0.0)
        self.iic_weight = check_real("iic_weight", iic_weight, low=0.0)
        self.div_weight = check_real("div_weight", div_weight, low=0.0)
        self.temporal_weight = check_real("temporal_weight", temporal_weight, low=0.0)
        self.ema_start = check_real("ema_start", ema_start, low=0.0, high=1.0, high_inclusive=False)
        self.ema_end = check_real("ema_end", ema_end, low=0.0, high=1.0, high_inclusive=False)
        self.epochs = check_int("epochs", epochs, low=1)
        self.lr = check_real("lr", lr, low=0.0, low_inclusive=False)
        self.lr_partner = self.lr if lr_partner is None else check_real("lr_partner", lr_partner, low=0.0)
        self.batch_size = check_int("batch_size", batch_size, low=1)
        self.weight_decay = check_real("weight_decay", weight_decay, low=0.0)
        self.reliability = check_choice("reliability", reliability, RELIABILITIES)
        self.isolated = check_real("isolated", isolated, low=0.0, high=1.0)
        self.fallback_knn = bool(fallback_knn)
        self.backend = check_choice("backend", backend, ("brute", "sklearn", "torch"))
        self.knn_dtype = check_choice("knn_dtype", knn_dtype, DTYPES)
        self.seed = check_int("seed", seed, low=0)

    def ema_momentum(self, epoch: int) -> float:
        """:math:`m_e = m_0 + (m_1 - m_0)(1 - \\cos(\\pi e/(E-1)))/2` (the release's cosine ramp)."""
        t = epoch / max(self.epochs - 1, 1)
        return self.ema_start + (self.ema_end - self.ema_start) * (1.0 - math.cos(math.pi * t)) / 2.0

    def reliabilities(
        self, feats: np.ndarray, probs: np.ndarray, rng: np.random.Generator, cache: GraphCache | None = None
    ) -> np.ndarray:
        """Per-sample reliability of ``probs``' arg-max labels in ``feats`` (by :attr:`reliability`).

        ``cache``: a :class:`~geode.ensembles.safecut.cutstat.GraphCache` for features that do not change between
        calls (the frozen partner's)."""
        if self.reliability == "confidence":
            return probs.max(axis=1)
        if self.reliability == "naive":
            return np.ones(probs.shape[0])
        r = cut_reliability(
            feats,
            probs.argmax(axis=1),
            self.k,
            tau_sim=self.tau_sim,
            isolated=self.isolated,
            fallback_knn=self.fallback_knn,
            backend=self.backend,
            dtype=self.knn_dtype,
            cache=cache,
        )
        return rng.permutation(r) if self.reliability == "shuffled" else r

    def gates(self, w_t: Any, w_p: Any) -> tuple[np.ndarray, np.ndarray]:
        """:math:`g^{P\\to T} = \\sigma(\\beta(w^P - w^T))`, :math:`g^{T\\to P} = 1 - g^{P\\to T}` (ones if naive)."""
        wt = check_array("w_t", w_t, ndim=1)
        wp = check_array("w_p", w_p, ndim=1)
        if wp.shape != wt.shape:
            raise ValueError(f"w_t and w_p must have the same length; got {wt.shape[0]} and {wp.shape[0]}")
        if self.reliability == "naive":
            return np.ones_like(wt), np.ones_like(wt)
        g = 0.5 * (1.0 + np.tanh(0.5 * self.beta * (wp - wt)))
        return g, 1.0 - g

    def losses(self, logp_t: Any, logp_v: Any, t_prev: Any, p_prev: Any, g_p2t: Any, g_t2p: Any) -> tuple[Any, Any]:
        """The mini-batch losses :math:`(L_T, L_P)` of the class docstring (torch; the other model detached).

        ``logp_t``, ``logp_v``: log-probabilities (B, C) of the target model and the partner; ``t_prev``,
        ``p_prev``: their cached previous predictions; ``g_p2t``, ``g_t2p``: the gates (B,).
        """
        import torch.nn.functional as F

        p_t, p_v = logp_t.exp(), logp_v.exp()
        loss_t = (
            (g_p2t * F.kl_div(logp_t, p_v.detach(), reduction="none").sum(1)).mean()
            + self.iic_weight * iic_loss(p_t, p_v.detach())
            + self.div_weight * diversity_loss(p_t)
            + self.temporal_weight * (g_t2p * F.kl_div(logp_t, t_prev, reduction="none").sum(1)).mean()
        )
        loss_v = (
            (g_t2p * F.kl_div(logp_v, p_t.detach(), reduction="none").sum(1)).mean()
            + self.iic_weight * iic_loss(p_v, p_t.detach())
            + self.div_weight * diversity_loss(p_v)
            + self.temporal_weight * (g_p2t * F.kl_div(logp_v, p_prev, reduction="none").sum(1)).mean()
        )
        return loss_t, loss_v

    def fit(self, model_t: Any, model_v: Any, x: Any, *, y: Any = None) -> tuple[Any, Any, list[dict[str, float]]]:
        """Adapt copies of the target model and the partner on unlabelled ``x``; return them and a history.

        Parameters
        ----------
        model_t, model_v : torch.nn.Module
            Target model and partner, mapping ``x`` to logits over the same C classes; the partner's
            ``embed`` (if any) must not be trained: its features are computed once.
        x : torch.Tensor or array_like, shape (N, ...)
            Unlabelled target samples.
        y : array_like of int, shape (N,), optional
            True labels, used **only** for the history (accuracies, net corrections).

        Returns
        -------
        model_t, model_v : torch.nn.Module
        history : list of dict
            One entry before training and one per epoch: mean gates and, with ``y``, the accuracies and the
            gate-weighted net correction of each direction (as in :meth:`MutualCorrection.fit`).
        """
        run = self.start(model_t, model_v, x, y=y)
        for epoch in range(self.epochs):
            run.epoch(epoch)
        return run.model_t, run.model_v, run.history

    def start(self, model_t: Any, model_v: Any, x: Any, *, y: Any = None) -> SafeCutRun:
        """The state of :meth:`fit` after its warm-up pass: run its epochs with :meth:`SafeCutRun.epoch`.

        ``fit`` is ``run = start(...)``, then ``run.epoch(e)`` for each epoch; a run exposes the two parts of
        an epoch (:meth:`SafeCutRun.train_pass`, :meth:`SafeCutRun.refresh`), e.g. to time the gate's share.
        """
        return SafeCutRun(self, model_t, model_v, x, y)

    def _record(self, epoch: int, yy: Any, w_t: Any, w_p: Any, pt: np.ndarray, pv: np.ndarray) -> dict[str, float]:
        g_p2t, g_t2p = self.gates(w_t, w_p)
        rec = {"epoch": float(epoch), "mean_g_p2t": float(g_p2t.mean()), "mean_g_t2p": float(g_t2p.mean())}
        if yy is not None:
            lt, lv = pt.argmax(1), pv.argmax(1)
            ok_t, ok_v = lt == yy, lv == yy
            rec["acc_t"], rec["acc_v"] = float(ok_t.mean()), float(ok_v.mean())
            rec["net_correction_t"] = float(np.mean(g_p2t * (ok_v & ~ok_t)) - np.mean(g_p2t * (~ok_v & ok_t)))
            rec["net_correction_v"] = float(np.mean(g_t2p * (ok_t & ~ok_v)) - np.mean(g_t2p * (~ok_t & ok_v)))
        return rec


class SafeCutRun:
    """One :meth:`SafeCut.fit` in progress: the models, optimisers, caches and smoothed reliabilities.

    Built by :meth:`SafeCut.start` (copies of the models, the warm-up pass, the first reliabilities); each
    :meth:`epoch` is :meth:`train_pass` (the mini-batches) then :meth:`refresh` (the gate: both models'
    reliabilities on the cached features and predictions, EMA-smoothed). The partner's kNN graph is kept in
    :attr:`partner_graph` (a :class:`~geode.ensembles.safecut.cutstat.GraphCache`) across refreshes.

    Attributes
    ----------
    model_t, model_v : torch.nn.Module
        The models being adapted (copies of those given).
    history : list of dict
        :meth:`SafeCut.fit`'s history so far.
    w_t, w_p : numpy.ndarray
        The smoothed reliabilities.
    """

    def __init__(self, method: SafeCut, model_t: Any, model_v: Any, x: Any, y: Any = None) -> None:
        import copy

        import torch

        from geode.core.random import torch_generator

        self.method = m = method
        x, yy = _inputs(x, y)
        n = x.shape[0]
        if m.reliability in ("cut", "shuffled") and m.k > n - 1:
            raise ValueError(f"k must be <= n_samples - 1 = {n - 1}; got {m.k}")
        model_t, model_v = copy.deepcopy(model_t), copy.deepcopy(model_v)
        self.gen = torch_generator(m.seed)
        self.rng = rng = np.random.default_rng(m.seed)
        pt, ft = _forward(model_t, x)  # warm-up pass (eval mode)
        pv, fv = _forward(model_v, x)
        if pt.shape[1] != pv.shape[1]:
            raise ValueError(f"the two models must predict the same classes; got {pt.shape[1]} and {pv.shape[1]}")
        self.t_prob, self.p_prob = torch.as_tensor(pt, dtype=torch.float32), torch.as_tensor(pv, dtype=torch.float32)
        self.t_feat = torch.as_tensor(ft, dtype=torch.float32)
        self.fv = fv  # the partner's features: frozen, computed once
        self.partner_graph = GraphCache()
        self.w_t = m.reliabilities(ft, pt, rng)
        self.w_p = m.reliabilities(fv, pv, rng, self.partner_graph)
        self.history = [m._record(0, yy, self.w_t, self.w_p, pt, pv)]
        self.opt_t = torch.optim.Adam(_trainable(model_t), lr=m.lr, weight_decay=m.weight_decay)
        params_v = _trainable(model_v)
        self.opt_v = torch.optim.Adam(params_v, lr=m.lr_partner, weight_decay=m.weight_decay) if params_v else None
        self.model_t, self.model_v, self.x, self.yy, self.n = model_t, model_v, x, yy, n

    def epoch(self, epoch: int) -> None:
        """One pass over the data with the current gates, then the refresh of the reliabilities."""
        self.train_pass()
        self.refresh(epoch)

    def train_pass(self) -> None:
        """The mini-batches of one epoch, gated by the current reliabilities (the caches are updated)."""
        import torch
        import torch.nn.functional as F

        m, model_t, model_v, x, n = self.method, self.model_t, self.model_v, self.x, self.n
        t_prob, p_prob, t_feat = self.t_prob, self.p_prob, self.t_feat
        g_p2t_all, g_t2p_all = (torch.as_tensor(g, dtype=torch.float32) for g in m.gates(self.w_t, self.w_p))
        model_t.train()
        model_v.train()
        perm = torch.randperm(n, generator=self.gen)
        for start in range(0, n, m.batch_size):
            b = perm[start : start + m.batch_size]
            xb, g_p2t, g_t2p = x[b], g_p2t_all[b], g_t2p_all[b]
            t_prev, p_prev = t_prob[b].clone(), p_prob[b].clone()
            logits_t = model_t(xb)
            logp_t = F.log_softmax(logits_t, dim=1)
            logp_v = F.log_softmax(model_v(xb), dim=1)
            with torch.no_grad():
                t_prob[b], p_prob[b] = logp_t.exp(), logp_v.exp()
                t_feat[b] = model_t.embed(xb).detach() if hasattr(model_t, "embed") else logits_t.detach()
            loss_t, loss_v = m.losses(logp_t, logp_v, t_prev, p_prev, g_p2t, g_t2p)
            self.opt_t.zero_grad()
            loss_t.backward()
            self.opt_t.step()
            if self.opt_v is not None:
                self.opt_v.zero_grad()
                loss_v.backward()
                self.opt_v.step()

    def refresh(self, epoch: int) -> None:
        """The gate: both reliabilities from the caches, EMA-smoothed (release: every epoch); appends history."""
        m = self.method
        mom = m.ema_momentum(epoch)
        tp, pp = self.t_prob.double().numpy(), self.p_prob.double().numpy()
        self.w_t = mom * self.w_t + (1.0 - mom) * m.reliabilities(self.t_feat.double().numpy(), tp, self.rng)
        self.w_p = mom * self.w_p + (1.0 - mom) * m.reliabilities(self.fv, pp, self.rng, self.partner_graph)
        self.history.append(m._record(epoch + 1, self.yy, self.w_t, self.w_p, tp, pp))
