r"""The experiments of the SDS-LoRA claim: a matrix-factorisation condition-number sweep and LLM adaptation.

(a) :func:`factorization_sweep`: gradient descent on :math:`\tfrac12 \lVert B A - T \rVert_F^2` with a
rank-:math:`r` target :math:`T = U \operatorname{diag}(\sigma) V^\top` whose singular values are
geometric from 1 to :math:`1/\kappa`. The full gradient is :math:`G = BA - T`; LoRA steps along
:math:`(B^\top G, G A^\top)`, SDS-LoRA along :math:`(Q_B^\top G, G Q_A)` (:func:`sds_lora_gradients`). For
each method and :math:`\kappa` the learning rate is the best of a grid (fewest median steps to reach
relative error ``tol``), all seeds and learning rates running as one batched tensor program.

(b) :func:`adapt_language_model`: a causal LM adapted to a new task with LoRA, SDS-LoRA or full
fine-tuning (AdamW with cosine decay), recording the loss curve, the held-out loss and accuracy,
and gradient diagnostics of the adapters: the effective rank (Roy-Vetterli) of :math:`\nabla_A` and
the cosine between the :math:`\Delta W` step the adapter's raw gradients induce,
:math:`-s(B \nabla_A + \nabla_B A)`, and the full fine-tuning direction :math:`-G`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.adapters.lora import DoRALinear, LoRALinear, adapter_modules, inject_adapters, trainable_parameters
from geode.adapters.sds_lora.sds import BASES, SDSDualLoRALinear, SDSLoRALinear, orthonormal_basis
from geode.core.linalg import effective_rank
from geode.core.random import as_generator, torch_generator
from geode.core.validation import check_choice, check_int, check_positive

__all__ = [
    "ADAPT_METHODS",
    "MF_METHODS",
    "OPTIMIZERS",
    "adapt_language_model",
    "factorization_run",
    "factorization_sweep",
    "kappa_exponent",
    "low_rank_target",
    "refresh_schedule",
]

ADAPT_METHODS = ("lora", "sds", "sds-dual", "dora", "full")


def low_rank_target(
    d: int, r: int, kappa: float, n: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""``n`` rank-``r`` targets :math:`T = U \operatorname{diag}(\sigma) V^\top` (d x d) in factored form, float64.

    :math:`U, V` are random orthonormal (n, d, r) and :math:`\sigma_i = \kappa^{-(i-1)/(r-1)}`, geometric from
    1 to :math:`1/\kappa`, so :math:`\kappa(T) = \kappa` on its range. Returns ``(u, sigma, v)``;
    ``(u * sigma) @ v.mT`` is the target.
    """
    d = check_int("d", d, low=1)
    r = check_int("r", r, low=1, high=d)
    n = check_int("n", n, low=1)
    kappa = check_positive("kappa", kappa)
    if kappa < 1:
        raise ValueError(f"kappa must be >= 1; got {kappa}")
    g = torch_generator(seed)
    u = torch.linalg.qr(torch.randn(n, d, r, generator=g, dtype=torch.float64))[0]
    v = torch.linalg.qr(torch.randn(n, d, r, generator=g, dtype=torch.float64))[0]
    sigma = kappa ** (-torch.arange(r, dtype=torch.float64) / max(r - 1, 1))
    return u, sigma, v


def _factored_step(
    a: torch.Tensor, b: torch.Tensor, u: torch.Tensor, sigma: torch.Tensor, v: torch.Tensor, method: str, basis: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Squared error and the (LoRA or SDS) gradients of :math:`\tfrac12\lVert BA - U\Sigma V^\top\rVert_F^2`.

    Never forms a d x d matrix: with :math:`G = BA - U \Sigma V^\top`,
    :math:`M^\top G = (M^\top B) A - (M^\top U) \Sigma V^\top` and
    :math:`G N = B (A N) - U \Sigma (V^\top N)` for :math:`M \in \{B, Q_B\}`, :math:`N \in \{A^\top, Q_A\}`, and
    :math:`\lVert G \rVert_F^2 = \operatorname{tr}(B^\top B A A^\top)
    - 2 \operatorname{tr}(B^\top U \Sigma V^\top A^\top) + \lVert \sigma \rVert^2`.
    Identical to :func:`sds_lora_gradients` on the full :math:`G` (tested).
    """
    btb = b.mT @ b
    aat = a @ a.mT
    btu = b.mT @ u
    vtat = v.mT @ a.mT
    err2 = (btb * aat).sum((-2, -1)) - 2 * ((btu * sigma) * vtat.mT).sum((-2, -1)) + (sigma**2).sum()
    if method == "lora":
        m_b, m_u, n_a, n_v = btb, btu, aat, vtat
    else:
        q_b = orthonormal_basis(b, basis)
        q_a = orthonormal_basis(a.mT, basis)
        m_b, m_u, n_a, n_v = q_b.mT @ b, q_b.mT @ u, a @ q_a, v.mT @ q_a
    grad_a = m_b @ a - (m_u * sigma) @ v.mT
    grad_b = b @ n_a - (u * sigma) @ n_v
    return err2.clamp_min(0.0), grad_a, grad_b


def factorization_sweep(
    kappas: tuple[float, ...] = (1.0, 10.0, 100.0),
    *,
    d: int = 64,
    r: int = 4,
    lrs: tuple[float, ...] | None = None,
    n_seeds: int = 3,
    tol: float = 1e-2,
    max_steps: int = 5000,
    methods: tuple[str, ...] = ("lora", "sds"),
    basis: str = "polar",
    seed: int = 0,
) -> list[dict[str, Any]]:
    r"""Steps of plain gradient descent to reach :math:`\lVert BA - T\rVert_F / \lVert T \rVert_F \le` ``tol``.

    Initialisation as LoRA: :math:`A_{ij} \sim \mathcal{N}(0, 1/d)`, :math:`B = 0`, the same for both
    methods and every learning rate. The best learning rate of the grid is the one with the fewest
    median steps over the seeds (ties: the smaller rate); the sweep of a setting stops as soon as
    that is decided and every seed at the best rate has reached ``tol``. A run that never reaches
    ``tol`` counts ``max_steps`` (a lower bound; ``censored`` says so); a diverging run never reaches it.

    Parameters
    ----------
    kappas : tuple of float
        Condition numbers of the target (>= 1).
    d, r : int
        Matrix size and rank (of the target and of the factors).
    lrs : tuple of float, optional
        Learning-rate grid; default :math:`2^{-6}, 2^{-5.5}, \dots, 2^{1}`.
    n_seeds : int
        Independent targets and initialisations per setting.
    tol : float
        Relative-error tolerance.
    max_steps : int
    methods : tuple of {"lora", "sds"}
    basis : {"qr", "polar"}
        SDS-LoRA's orthonormalisation.
    seed : int

    Returns
    -------
    list of dict
        One row per (method, kappa): ``best_lr``, ``steps`` (list per seed at the best lr),
        ``median_steps``, ``censored`` (fraction of seeds that did not reach ``tol``) and
        ``curve`` (median relative error per step at the best lr, for plotting).
    """
    n_seeds = check_int("n_seeds", n_seeds, low=1)
    max_steps = check_int("max_steps", max_steps, low=1)
    check_positive("tol", tol)
    check_choice("basis", basis, BASES)
    for m in methods:
        check_choice("methods", m, ("lora", "sds"))
    grid = lrs if lrs is not None else [2.0**k for k in np.arange(-6.0, 1.01, 0.5)]
    lr_grid = torch.tensor([check_positive("lrs", x) for x in grid], dtype=torch.float64)
    n_lr = len(lr_grid)
    need = n_seeds // 2 + 1  # hits that fix the median (the upper median for an even count)
    rows = []
    for kappa in kappas:
        u, sigma, v = low_rank_target(d, r, kappa, n_seeds, seed * 7919 + 1)
        t_norm = float(sigma.norm())
        g = torch_generator(seed * 7919 + 2)
        a0 = torch.randn(n_seeds, r, d, generator=g, dtype=torch.float64) / math.sqrt(d)
        for method in methods:
            a = a0.expand(n_lr, -1, -1, -1).clone()
            b = torch.zeros(n_lr, n_seeds, d, r, dtype=torch.float64)
            lr = lr_grid.view(-1, 1, 1, 1)
            hit = torch.full((n_lr, n_seeds), max_steps, dtype=torch.long)
            dead = torch.zeros(n_lr, n_seeds, dtype=torch.bool)
            errs = []
            best = None
            for step in range(max_steps + 1):
                err2, ga, gb = _factored_step(a, b, u, sigma, v, method, basis)
                err = err2.sqrt() / t_norm
                dead |= ~torch.isfinite(err) | (err > 1e3)
                err = torch.where(dead, torch.full_like(err, float("inf")), err)
                errs.append(err)
                newly = (err <= tol) & (hit == max_steps) & ~dead
                hit[newly] = step
                reached = hit < max_steps
                if best is None and bool((reached.sum(1) >= need).any()):
                    med = torch.where(reached, hit, max_steps + 1).sort(dim=1).values[:, need - 1]
                    best = int(torch.argmin(med))  # first (smallest) lr among ties
                if step == max_steps or (best is not None and bool(reached[best].all())):
                    break
                if bool(dead.any()):  # keep dead runs finite; they never count as reaching tol
                    keep = ~dead[..., None, None]
                    a = torch.where(keep, a, a0.expand_as(a))
                    b = torch.where(keep, b, torch.zeros_like(b))
                    _, ga, gb = _factored_step(a, b, u, sigma, v, method, basis)
                a = a - lr * ga
                b = b - lr * gb
            if best is None:  # nothing reached tol: the smallest final error decides
                final = torch.where(torch.isfinite(errs[-1]), errs[-1], torch.full_like(errs[-1], 1e300))
                best = int(torch.argmin(final.median(dim=1).values))
            steps = [int(x) for x in hit[best]]
            curve = torch.stack([e[best] for e in errs]).clamp(max=1e3).median(dim=1).values.numpy()
            rows.append(
                {
                    "method": method,
                    "kappa": float(kappa),
                    "best_lr": float(lr_grid[best]),
                    "steps": steps,
                    "median_steps": float(np.median(steps)),
                    "censored": float(np.mean([x >= max_steps for x in steps])),
                    "curve": curve,
                }
            )
    return rows


def _cosine_schedule(step: int, total: int) -> float:
    return 0.5 * (1.0 + math.cos(math.pi * step / max(total, 1)))


def adapt_language_model(
    model: nn.Module,
    task: Any,
    method: str,
    *,
    r: int = 4,
    alpha: float = 8.0,
    target_modules: Any = (
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ),
    steps: int = 300,
    batch_size: int = 32,
    lr: float = 3e-3,
    eval_batch: Any = None,
    val_batch: Any = None,
    diag_every: int = 0,
    warmup: int = 10,
    refresh_every: int = 10,
    refresh_phase: int = 4,
    seed: int = 0,
) -> dict[str, Any]:
    r"""Adapt ``model`` (in place) to ``task`` with LoRA, SDS-LoRA (either reading) or full fine-tuning.

    AdamW (no weight decay) with a cosine decay of the learning rate to 0 over ``steps`` steps,
    gradient-norm clipping at 1, a fresh batch per step.

    Parameters
    ----------
    model : transformers causal LM
        The pretrained model; it is modified.
    task : SyntheticTask or callable
        ``task.sample(n, rng)`` gives batches (see :mod:`geode.models.tasks`).
    method : {"lora", "sds", "sds-dual", "dora", "full"}
        ``"sds"``: :class:`SDSLoRALinear` (the gradient reading); ``"sds-dual"``: :class:`SDSDualLoRALinear`
        (the dual-branch reading), re-parameterised at the steps of :func:`refresh_schedule`
        (``warmup``, ``refresh_every``, ``refresh_phase``) before that step's forward; the AdamW moments of
        the factors restart at each re-parameterisation (the factors are new coordinates).
    r, alpha : int, float
        Adapter rank and :math:`\alpha` (``scaling = alpha / r``).
    target_modules : str or sequence of str
        Layers to adapt (as :func:`~geode.adapters.inject_adapters`).
    steps, batch_size, lr : training settings.
    eval_batch : TaskBatch, optional
        Held-out batch for the final loss and accuracy.
    val_batch : TaskBatch, optional
        A second held-out batch (validation, for tuning): ``val_loss`` and ``val_accuracy``.
    diag_every : int
        Every so many steps (0: never) record the adapters' gradient diagnostics.
    seed : int
        Seeds the adapter initialisation and the batches.

    Returns
    -------
    dict
        ``losses`` (per step), ``eval_loss``, ``eval_accuracy``, ``grad_erank`` and ``step_cosine``
        (mean over adapted layers, per diagnostic step), ``n_trainable``.
    """
    from geode.models.tiny_lm import evaluate_lm, lm_loss

    check_choice("method", method, ADAPT_METHODS)
    steps = check_int("steps", steps, low=1)
    check_positive("lr", lr)
    diag_every = check_int("diag_every", diag_every, low=0)
    g = torch_generator(seed)
    if method == "full":
        for p in model.parameters():
            p.requires_grad_(True)
    else:
        cls = {"lora": LoRALinear, "sds": SDSLoRALinear, "sds-dual": SDSDualLoRALinear, "dora": DoRALinear}[method]
        inject_adapters(model, target_modules, lambda lin: cls(lin, r, alpha, generator=g))
    params = trainable_parameters(model)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _cosine_schedule(s, steps))
    rng = as_generator(seed + 1)
    losses = np.empty(steps)
    eranks, cosines = [], []
    adapters = adapter_modules(model)
    refresh = set(refresh_schedule(warmup, refresh_every, refresh_phase, steps)) if method == "sds-dual" else set()
    model.train()
    for step in range(steps):
        if step in refresh:  # new coordinates: the factors' AdamW moments restart
            for m in adapters.values():
                m.reparameterize()
                opt.state.pop(m.lora_A, None)
                opt.state.pop(m.lora_B, None)
        batch = task.sample(batch_size, rng)
        diag = method in ("lora", "sds", "sds-dual") and diag_every > 0 and step % diag_every == 0
        if diag:
            for m in adapters.values():
                m.base.weight.requires_grad_(True)
        loss = lm_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if diag:
            er, co = [], []
            for m in adapters.values():
                ga, gb, gw = m.lora_A.grad, m.lora_B.grad, m.base.weight.grad
                er.append(float(effective_rank(ga.detach())))
                if getattr(m, "dual", False):  # induced ΔW direction (up to -s')
                    step_w = m.q_b @ ga + gb @ m.q_a.T
                else:  # induced ΔW direction (up to -s)
                    step_w = m.lora_B.detach() @ ga + gb @ m.lora_A.detach()
                denom = float(step_w.norm() * gw.norm())
                co.append(float((step_w * gw).sum()) / denom if denom > 0 else 0.0)
                m.base.weight.requires_grad_(False)
                m.base.weight.grad = None
            eranks.append(float(np.mean(er)))
            cosines.append(float(np.mean(co)))
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses[step] = float(loss.detach())
    out: dict[str, Any] = {
        "losses": losses,
        "grad_erank": eranks,
        "step_cosine": cosines,
        "n_trainable": int(sum(p.numel() for p in params)),
    }
    if eval_batch is not None:
        ev = evaluate_lm(model, eval_batch)
        out["eval_loss"], out["eval_accuracy"] = ev["loss"], ev["accuracy"]
    if val_batch is not None:
        ev = evaluate_lm(model, val_batch)
        out["val_loss"], out["val_accuracy"] = ev["loss"], ev["accuracy"]
    return out


MF_METHODS = ("lora", "sds", "sds-dual")
OPTIMIZERS = ("gd", "adam")


def refresh_schedule(warmup: int, every: int, phase: int, max_steps: int) -> list[int]:
    r"""Steps at which the dual-branch reading re-parameterises: after ``warmup``, then on a phased schedule.

    The first re-parameterisation comes at step ``warmup``; the gap to the next one starts at ``every``
    steps and doubles after every ``phase`` refreshes (10, 10, 10, 10, 20, 20, 20, 20, 40, ... with the
    defaults): frequent while the bases move, rare once they have settled.
    """
    warmup = check_int("warmup", warmup, low=0)
    every = check_int("every", every, low=1)
    phase = check_int("phase", phase, low=1)
    out, t, k = [], warmup, 0
    while t <= max_steps:
        out.append(t)
        t += every * 2 ** (k // phase)
        k += 1
    return out


def _svd_reparam(m: torch.Tensor, r: int, s: float) -> tuple[torch.Tensor, ...]:
    r"""Dual-branch re-parameterisation of an update ``m``: :math:`m = C + s(Q_B A + B Q_A^\top)`.

    With the thin SVD :math:`m = U \Sigma V^\top` truncated to rank ``r``: :math:`Q_B = U_r`, :math:`Q_A = V_r`,
    :math:`A = \Sigma_r V_r^\top / (2s)`, :math:`B = U_r \Sigma_r / (2s)` (each branch carries half), and the
    truncation residual :math:`C = m - U_r \Sigma_r V_r^\top` is frozen (merged into the base weight), so the
    function does not change. Returns ``(q_b, q_a, a, b, c)``.
    """
    u, sv, vh = torch.linalg.svd(m, full_matrices=False)
    u, sv, vh = u[..., :r], sv[..., :r], vh[..., :r, :]
    a = sv[..., :, None] * vh / (2 * s)
    b = u * sv[..., None, :] / (2 * s)
    return u, vh.mT, a, b, m - (u * sv[..., None, :]) @ vh


def factorization_run(
    method: str,
    kappa: float,
    lrs: tuple[float, ...],
    *,
    d: int = 64,
    r: int = 4,
    n_seeds: int = 3,
    tol: float = 1e-2,
    max_steps: int = 5000,
    optimizer: str = "gd",
    basis: str = "polar",
    warmup: int = 10,
    refresh_every: int = 10,
    refresh_phase: int = 4,
    stop_when_decided: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    r"""Steps to the relative error :math:`\lVert \Delta W - T \rVert_F / \lVert T \rVert_F \le` ``tol``.

    One run per learning rate of ``lrs`` and seed.

    The target is :func:`low_rank_target` (``n_seeds`` independent targets and initialisations, drawn from
    ``seed``); every learning rate starts from the same LoRA initialisation (:math:`A_{ij} \sim
    \mathcal{N}(0, 1/d)`, :math:`B = 0`). All learning rates and seeds run as one batched program.

    Methods (:math:`G = \Delta W - T`):

    - ``"lora"``: :math:`\Delta W = BA`, gradients :math:`(B^\top G, G A^\top)`;
    - ``"sds"`` (the gradient reading, :class:`SDSLoRALinear`): :math:`\Delta W = BA`, gradients
      :math:`(Q_B^\top G, G Q_A)` with bases recomputed every step;
    - ``"sds-dual"`` (the dual-branch reading of the paper's Equation 8): ``warmup`` plain LoRA steps, then
      :math:`\Delta W = C + s(Q_B A + B Q_A^\top)` with frozen bases from an SVD re-parameterisation
      (:func:`_svd_reparam`, :math:`s = \sqrt{r}`, i.e. :math:`(\alpha/r)\sqrt{r}` at LoRA's scale 1), refreshed on
      :func:`refresh_schedule`; gradients :math:`(s Q_B^\top G, s G Q_A)`. A refresh is not counted as a step.

    Optimisers: ``"gd"`` (plain gradient descent) or ``"adam"`` (Adam, :math:`\beta = (0.9, 0.999)`,
    :math:`\epsilon = 10^{-8}`, no decay; the moments restart at each re-parameterisation, whose factors are new
    coordinates).

    A run whose error exceeds 1e3 or is not finite is dead (reset to the initialisation and never counted
    as reaching ``tol``). With ``stop_when_decided`` the program stops once some learning rate has every
    seed at ``tol``; the others' scores are then lower bounds that cannot beat it.

    Returns
    -------
    dict
        ``hit`` (n_lr, n_seeds) steps to ``tol`` (``max_steps`` if never), ``dead`` (bool), ``final_err``,
        ``score`` (n_lr,): the median over seeds of the steps, with a run that never reached ``tol`` scored
        :math:`\text{max\_steps}\,(1 + \log_{10}(\text{err}/\text{tol}))` and a dead one :math:`+\infty`;
        ``curves`` (n_lr, steps) median relative error per step; ``steps_run``.
    """
    check_choice("method", method, MF_METHODS)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_choice("basis", basis, BASES)
    n_seeds = check_int("n_seeds", n_seeds, low=1)
    max_steps = check_int("max_steps", max_steps, low=1)
    check_positive("tol", tol)
    lr_grid = torch.tensor([check_positive("lrs", x) for x in lrs], dtype=torch.float64)
    n_lr = len(lr_grid)
    u, sigma, v = low_rank_target(d, r, kappa, n_seeds, seed * 7919 + 1)
    target = (u * sigma) @ v.mT  # (n_seeds, d, d); d is small in this experiment
    t_norm = float(sigma.norm())
    g = torch_generator(seed * 7919 + 2)
    a0 = torch.randn(n_seeds, r, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    a = a0.expand(n_lr, -1, -1, -1).clone()
    b = torch.zeros(n_lr, n_seeds, d, r, dtype=torch.float64)
    lr = lr_grid.view(-1, 1, 1, 1)
    s_dual = math.sqrt(r)
    refresh = set(refresh_schedule(warmup, refresh_every, refresh_phase, max_steps)) if method == "sds-dual" else set()
    dual = False
    q_a = q_b = c = None
    m_a, v_a, m_b, v_b = (torch.zeros_like(a), torch.zeros_like(a), torch.zeros_like(b), torch.zeros_like(b))
    t_adam = 0
    hit = torch.full((n_lr, n_seeds), max_steps, dtype=torch.long)
    dead = torch.zeros(n_lr, n_seeds, dtype=torch.bool)
    errs = []
    stopped_early = False
    for step in range(max_steps + 1):
        if step in refresh:
            cur = c + s_dual * (q_b @ a + b @ q_a.mT) if dual else b @ a
            q_b, q_a, a, b, c_new = _svd_reparam(cur - (c if dual else 0.0), r, s_dual)
            c = (c if dual else torch.zeros_like(cur)) + c_new
            dual = True
            m_a, v_a, m_b, v_b = (torch.zeros_like(a), torch.zeros_like(a), torch.zeros_like(b), torch.zeros_like(b))
            t_adam = 0
        if dual:
            dw = c + s_dual * (q_b @ a + b @ q_a.mT)
            gw = dw - target
            ga, gb = s_dual * (q_b.mT @ gw), s_dual * (gw @ q_a)
            err = gw.flatten(-2).norm(dim=-1) / t_norm
        else:
            err2, ga, gb = _factored_step(a, b, u, sigma, v, "lora" if method == "sds-dual" else method, basis)
            err = err2.sqrt() / t_norm
        dead |= ~torch.isfinite(err) | (err > 1e3)
        err = torch.where(dead, torch.full_like(err, float("inf")), err)
        errs.append(err)
        newly = (err <= tol) & (hit == max_steps) & ~dead
        hit[newly] = step
        reached = hit < max_steps
        if bool((reached | dead).all()) or (stop_when_decided and bool(reached.all(1).any())):
            stopped_early = step < max_steps
            break
        if step == max_steps:
            break
        if bool(dead.any()):  # keep dead runs finite; they never count as reaching tol
            keep = ~dead[..., None, None]
            ga, gb = torch.where(keep, ga, torch.zeros_like(ga)), torch.where(keep, gb, torch.zeros_like(gb))
            if not dual:
                a = torch.where(keep, a, a0.expand_as(a))
                b = torch.where(keep, b, torch.zeros_like(b))
        if optimizer == "gd":
            a = a - lr * ga
            b = b - lr * gb
        else:
            t_adam += 1
            k = t_adam
            m_a = 0.9 * m_a + 0.1 * ga
            v_a = 0.999 * v_a + 0.001 * ga**2
            m_b = 0.9 * m_b + 0.1 * gb
            v_b = 0.999 * v_b + 0.001 * gb**2
            bc1, bc2 = 1 - 0.9**k, 1 - 0.999**k
            a = a - lr * (m_a / bc1) / ((v_a / bc2).sqrt() + 1e-8)
            b = b - lr * (m_b / bc1) / ((v_b / bc2).sqrt() + 1e-8)
    steps_run = len(errs) - 1
    final = errs[-1]
    per_run = torch.where(
        hit < max_steps,
        hit.double(),
        torch.where(
            dead,
            torch.full_like(final, float("inf")),
            torch.full_like(final, float(steps_run + 1))
            if stopped_early
            else max_steps * (1.0 + torch.log10(final.clamp_min(tol) / tol)),
        ),
    )
    curves = torch.stack(errs, dim=-1).clamp(max=1e3).median(dim=1).values.numpy()
    return {
        "hit": hit.numpy(),
        "dead": dead.numpy(),
        "final_err": final.numpy(),
        "score": np.median(per_run.numpy(), axis=1),
        "curves": curves,
        "steps_run": steps_run,
    }


def kappa_exponent(kappas: Any, steps: Any) -> float:
    r"""Fitted slope :math:`p` of :math:`\log(\text{steps}) = c + p \log \kappa` (steps grow as :math:`\kappa^p`)."""
    k = np.log(np.asarray(kappas, dtype=float))
    s = np.log(np.maximum(np.asarray(steps, dtype=float), 1.0))
    if k.size < 2 or np.ptp(k) == 0:
        raise ValueError("kappa_exponent needs at least two distinct kappas")
    return float(np.polyfit(k, s, 1)[0])
