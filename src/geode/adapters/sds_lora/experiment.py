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

from geode.adapters.lora import LoRALinear, adapter_modules, inject_adapters, trainable_parameters
from geode.adapters.sds_lora.sds import BASES, SDSLoRALinear, orthonormal_basis
from geode.core.linalg import effective_rank
from geode.core.random import as_generator, torch_generator
from geode.core.validation import check_choice, check_int, check_positive

__all__ = [
    "ADAPT_METHODS",
    "adapt_language_model",
    "factorization_sweep",
    "low_rank_target",
]

ADAPT_METHODS = ("lora", "sds", "full")


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
    basis: str = "qr",
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
    diag_every: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    r"""Adapt ``model`` (in place) to ``task`` with LoRA, SDS-LoRA or full fine-tuning.

    AdamW (no weight decay) with a cosine decay of the learning rate to 0 over ``steps`` steps,
    gradient-norm clipping at 1, a fresh batch per step.

    Parameters
    ----------
    model : transformers causal LM
        The pretrained model; it is modified.
    task : SyntheticTask or callable
        ``task.sample(n, rng)`` gives batches (see :mod:`geode.models.tasks`).
    method : {"lora", "sds", "full"}
    r, alpha : int, float
        Adapter rank and :math:`\alpha` (``scaling = alpha / r``).
    target_modules : str or sequence of str
        Layers to adapt (as :func:`~geode.adapters.inject_adapters`).
    steps, batch_size, lr : training settings.
    eval_batch : TaskBatch, optional
        Held-out batch for the final loss and accuracy.
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
        cls = LoRALinear if method == "lora" else SDSLoRALinear
        inject_adapters(model, target_modules, lambda lin: cls(lin, r, alpha, generator=g))
    params = trainable_parameters(model)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _cosine_schedule(s, steps))
    rng = as_generator(seed + 1)
    losses = np.empty(steps)
    eranks, cosines = [], []
    adapters = adapter_modules(model)
    model.train()
    for step in range(steps):
        batch = task.sample(batch_size, rng)
        diag = method != "full" and diag_every > 0 and step % diag_every == 0
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
                step_w = m.lora_B.detach() @ ga + gb @ m.lora_A.detach()  # induced ΔW direction (up to -s)
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
    return out
