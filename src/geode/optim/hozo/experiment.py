r"""The experiment behind HoZO's claim check: fine-tune the int4 scales of a network from a near-zero start.

A network is trained in float on a synthetic task, quantised to int4 (RTN, per group) and its scales are
then multiplied by a log-uniform factor in ``[low, high]`` (default 1e-3..1): every group starts between
0.1% and 100% of its RTN scale, so many scales sit near the boundary of the positive orthant. Only the
scales are trained, on fresh training batches of the same task, by

- ``adam``: first-order Adam on the scales, projected onto :math:`\Delta \ge 0` after each step (reference);
- ``mezo``: MeZO on the scales + clamp at 0;
- ``qzo``: QZO (directional derivative clipping + projection);
- ``hozo``: HoZO (Riemannian steps, no projection);
- ``hozo_ddc``: HoZO with QZO's directional derivative clipping (the second reading of the paper).

A run *diverges* when a loss becomes non-finite or its final validation loss exceeds ``diverge_factor``
(1.1) times the validation loss at the start (it ended worse than the degraded model it started from).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_choice, check_int, check_positive, check_real
from geode.optim.hozo.optimizer import HoZO
from geode.optim.quant import quantize_model, scale_parameters
from geode.optim.zo import QZO, MeZO, optimizer_state_bytes

__all__ = [
    "METHODS",
    "Problem",
    "RunResult",
    "absolute_init",
    "bag_of_symbols",
    "degrade_scales",
    "make_mlp_problem",
    "make_optimizer",
    "make_smollm2_problem",
    "probe_directional_derivative",
    "train_scales",
]

METHODS: tuple[str, ...] = ("adam", "mezo", "qzo", "hozo", "hozo_ddc")
ZO_METHODS: tuple[str, ...] = ("mezo", "qzo", "hozo", "hozo_ddc")


def bag_of_symbols(batch: Any, n_symbols: int, length: int) -> torch.Tensor:
    """Symbol frequencies of a :class:`~geode.models.KeywordClassification` batch: shape (n, n_symbols)."""
    from geode.models.tasks import FIRST_SYMBOL

    x = batch.input_ids[:, 1 : 1 + length] - FIRST_SYMBOL
    f = torch.zeros(x.shape[0], n_symbols)
    f.scatter_add_(1, x, torch.ones(x.shape, dtype=f.dtype))
    return f / float(length)


def degrade_scales(model: nn.Module, low: float, high: float, seed: int) -> list[torch.Tensor]:
    """Multiply every scale by an independent log-uniform factor in ``[low, high]`` (in place); return copies."""
    check_positive("low", low)
    check_real("high", high, low=low)
    g = torch.Generator().manual_seed(check_int("seed", seed, low=0))
    out = []
    with torch.no_grad():
        for p in scale_parameters(model):
            u = torch.rand(p.shape, generator=g, dtype=torch.float64)
            p.mul_(torch.exp(math.log(low) + u * (math.log(high) - math.log(low))).to(p.device, p.dtype))
            out.append(p.detach().clone())
    return out


@dataclass
class Problem:
    """A quantised model with its degraded scales, a loss, training batches and the validation/test batches."""

    model: nn.Module
    init_scales: list[torch.Tensor]
    loss: Callable[[nn.Module, Any], torch.Tensor]
    train: Sequence[Any]
    val: Any
    test: Any
    reference: dict[str, float] = field(default_factory=dict)  # losses of the float and the RTN model

    def fresh_model(self) -> nn.Module:
        """A copy of the model with the degraded initial scales."""
        m = copy.deepcopy(self.model)
        with torch.no_grad():
            for p, s in zip(scale_parameters(m), self.init_scales):
                p.copy_(s)
        return m

    @torch.no_grad()
    def evaluate(self, model: nn.Module, which: str = "val") -> float:
        """Loss on the validation or test batch (``inf`` when it is not finite)."""
        check_choice("which", which, ("val", "test"))
        was = model.training
        model.eval()
        x = float(self.loss(model, self.val if which == "val" else self.test))
        model.train(was)
        return x if math.isfinite(x) else math.inf


def make_mlp_problem(
    *,
    seed: int,
    n_symbols: int = 32,
    n_classes: int = 4,
    length: int = 12,
    hidden: Sequence[int] = (128, 128),
    pretrain_steps: int = 600,
    pretrain_lr: float = 3e-3,
    steps: int = 1000,
    batch_size: int = 64,
    n_val: int = 1024,
    n_test: int = 2048,
    bits: int = 4,
    group_size: int = 32,
    low: float = 1e-3,
    high: float = 1.0,
    pack: bool = True,
) -> Problem:
    """The quick-mode problem: a ReLU MLP on bag-of-symbols features of keyword classification.

    The MLP is trained in float with Adam (``pretrain_steps``), quantised (all layers, ``bits``,
    ``group_size``), and its scales degraded by :func:`degrade_scales`. Training, validation and test
    batches are independent draws of the task (seeded streams that never overlap).
    """
    from geode.models import KeywordClassification, make_mlp

    task = KeywordClassification(n_symbols=n_symbols, n_classes=n_classes, length=length)
    rng = np.random.default_rng([seed, 0])

    def draw(n: int, r: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        b = task.sample(n, r)
        return bag_of_symbols(b, n_symbols, length), b.targets

    def loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return nn.functional.cross_entropy(model(batch[0]), batch[1])

    model = make_mlp(n_symbols, list(hidden), n_classes, seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=pretrain_lr)
    for _ in range(pretrain_steps):
        b = draw(batch_size, rng)
        opt.zero_grad(set_to_none=True)
        loss(model, b).backward()
        opt.step()
    val = draw(n_val, np.random.default_rng([seed, 1]))
    test = draw(n_test, np.random.default_rng([seed, 2]))
    train_rng = np.random.default_rng([seed, 3])
    train = [draw(batch_size, train_rng) for _ in range(steps)]
    with torch.no_grad():
        ref = {"float_val": float(loss(model, val)), "float_test": float(loss(model, test))}
    quantize_model(model, bits=bits, group_size=group_size, pack=pack)
    with torch.no_grad():
        ref.update(rtn_val=float(loss(model, val)), rtn_test=float(loss(model, test)))
    init = degrade_scales(model, low, high, seed=seed + 7919)
    problem = Problem(model, init, loss, train, val, test, ref)
    problem.reference.update(init_val=problem.evaluate(model, "val"), init_test=problem.evaluate(model, "test"))
    return problem


def absolute_init(problem: Problem, low: float, high: float, seed: int) -> Problem:
    """The same problem with the other reading of the initialisation: scales drawn log-uniform in ``[low, high]``.

    Absolute values, independent of the RTN scales (the codes keep the trained weights' signs and relative
    sizes within a group). Shares the model, loss and batches with ``problem``.
    """
    check_positive("low", low)
    check_real("high", high, low=low)
    g = torch.Generator().manual_seed(check_int("seed", seed, low=0))
    init = []
    for s in problem.init_scales:
        u = torch.rand(s.shape, generator=g, dtype=torch.float64)
        init.append(torch.exp(math.log(low) + u * (math.log(high) - math.log(low))).to(s.device, s.dtype))
    out = Problem(problem.model, init, problem.loss, problem.train, problem.val, problem.test, dict(problem.reference))
    m = out.fresh_model()
    out.reference.update(init_val=out.evaluate(m, "val"), init_test=out.evaluate(m, "test"))
    return out


def make_smollm2_problem(
    *,
    seed: int,
    steps: int = 3000,
    batch_size: int = 16,
    n_val: int = 512,
    n_test: int = 1024,
    bits: int = 4,
    group_size: int = 64,
    low: float = 1e-3,
    high: float = 1.0,
    device: str | None = None,
) -> Problem:
    """The full-mode problem: SmolLM2-135M, int4 (every linear layer but the tied LM head), on keyword classification.

    The task's tokens are mapped onto single SmolLM2 tokens (:func:`~geode.models.tokenizer_token_map`); the
    loss is the answer token's cross-entropy. Meant for a GPU (``device`` defaults to CUDA when present).
    """
    from geode.models import KeywordClassification, TokenMappedTask, lm_loss, load_smollm2, tokenizer_token_map

    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model, tok = load_smollm2()
    base = KeywordClassification(n_symbols=32, n_classes=4, length=12)
    task = TokenMappedTask(base, tokenizer_token_map(tok, base.vocab_size))

    def draw(n: int, r: np.random.Generator) -> Any:
        b = task.sample(n, r)
        return type(b)(b.input_ids.to(dev), b.labels.to(dev), b.targets.to(dev))

    def loss(m: nn.Module, batch: Any) -> torch.Tensor:
        if batch.input_ids.shape[0] > 64:  # evaluation batches in chunks (memory)
            parts = [
                lm_loss(m, type(batch)(*(t[i : i + 64] for t in batch))) * min(64, batch.input_ids.shape[0] - i)
                for i in range(0, batch.input_ids.shape[0], 64)
            ]
            return torch.stack(parts).sum() / batch.input_ids.shape[0]
        return lm_loss(m, batch)

    model.to(dev)
    val = draw(n_val, np.random.default_rng([seed, 1]))
    test = draw(n_test, np.random.default_rng([seed, 2]))
    train_rng = np.random.default_rng([seed, 3])
    train = [draw(batch_size, train_rng) for _ in range(steps)]
    model.eval()
    with torch.no_grad():
        ref = {"float_val": float(loss(model, val)), "float_test": float(loss(model, test))}
    quantize_model(model, bits=bits, group_size=group_size)
    with torch.no_grad():
        ref.update(rtn_val=float(loss(model, val)), rtn_test=float(loss(model, test)))
    init = degrade_scales(model, low, high, seed=seed + 7919)
    problem = Problem(model, init, loss, train, val, test, ref)
    problem.reference.update(init_val=problem.evaluate(model, "val"), init_test=problem.evaluate(model, "test"))
    return problem


def probe_directional_derivative(
    problem: Problem, method: str, *, eps: float = 1e-3, steps: int = 20, seed: int = 0
) -> float:
    r"""Median :math:`|d|` of ``method``'s two-point estimator at the initial scales (``lr = 0``, no clipping).

    Sets the scale of the directional derivative clipping grids: ``"qzo"``/``"mezo"`` measure the Euclidean
    :math:`d`, ``"hozo"``/``"hozo_ddc"`` the Riemannian one (along :math:`\Delta \odot z`).
    """
    check_choice("method", method, ZO_METHODS)
    steps = check_int("steps", steps, low=1, high=len(problem.train))
    model = problem.fresh_model()
    params = scale_parameters(model)
    opt = MeZO(params, lr=0.0, eps=eps, seed=seed) if method in ("mezo", "qzo") else HoZO(params, 0.0, eps, seed=seed)
    ds = []
    for t in range(steps):
        opt.step(lambda b=problem.train[t]: problem.loss(model, b))
        ds.append(abs(opt.projected_grad))
    return float(np.median(ds))


@dataclass
class RunResult:
    """One training run: final losses, divergence, boundary violations, optimiser state and a loss curve."""

    method: str
    params: dict[str, Any]
    val_loss: float
    test_loss: float
    diverged: bool
    violations: int
    perturb_violations: int
    update_violations: int
    state_bytes: int
    steps_done: int
    curve: list[float]
    min_scale: float
    curve_every: int = 1


class _Adam:
    """First-order Adam on the scales, projected onto the closed orthant (violations counted before the clamp)."""

    def __init__(self, params: list[torch.Tensor], lr: float) -> None:
        self.params = params
        self.opt = torch.optim.Adam(params, lr=lr)
        self.violations = {"perturb": 0, "update": 0}

    def step(self, closure: Callable[[], torch.Tensor]) -> float:
        self.opt.zero_grad(set_to_none=True)
        with torch.enable_grad():
            loss = closure()
        if not torch.isfinite(loss):
            raise ValueError("closure returned a non-finite loss")
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            for p in self.params:
                self.violations["update"] += int((p <= 0).sum())
                p.clamp_(min=0.0)
        return float(loss.detach())


def make_optimizer(method: str, params: list[torch.Tensor], cfg: dict[str, Any], seed: int) -> Any:
    """The optimiser of ``method`` with the settings ``cfg`` (``lr``, ``eps``, ``clip``)."""
    check_choice("method", method, METHODS)
    if method == "adam":
        return _Adam(params, cfg["lr"])
    eps = cfg.get("eps", 1e-3)
    if method == "mezo":
        return MeZO(params, lr=cfg["lr"], eps=eps, clamp_min=0.0, seed=seed)
    if method == "qzo":
        return QZO(params, lr=cfg["lr"], eps=eps, clip=cfg["clip"], seed=seed)
    if method == "hozo":
        return HoZO(params, lr=cfg["lr"], eps=eps, seed=seed)
    return HoZO(params, lr=cfg["lr"], eps=eps, clip=cfg["clip"], seed=seed)


def train_scales(
    problem: Problem,
    method: str,
    cfg: dict[str, Any],
    *,
    steps: int | None = None,
    seed: int = 0,
    diverge_factor: float = 1.1,
    curve_every: int | None = None,
) -> RunResult:
    """Train the scales of a fresh copy of ``problem.model`` with ``method`` for ``steps`` batches.

    The same batches, in the same order, for every method; ``seed`` seeds the zeroth-order directions.
    A non-finite loss stops the run (diverged).
    """
    steps = len(problem.train) if steps is None else check_int("steps", steps, low=1, high=len(problem.train))
    every = max(1, steps // 40) if curve_every is None else check_int("curve_every", curve_every, low=1)
    model = problem.fresh_model()
    model.train()
    params = scale_parameters(model)
    opt = make_optimizer(method, params, cfg, seed)
    curve: list[float] = []
    run_loss = math.nan
    done = 0
    diverged = False
    for t in range(steps):
        batch = problem.train[t]
        try:
            loss = opt.step(lambda b=batch: problem.loss(model, b))
        except ValueError:  # a non-finite loss: the run diverged
            diverged = True
            break
        run_loss = loss if math.isnan(run_loss) else 0.9 * run_loss + 0.1 * loss
        done = t + 1
        if done % every == 0:
            curve.append(float(run_loss))
    val = problem.evaluate(model, "val")
    test = problem.evaluate(model, "test")
    diverged = diverged or not math.isfinite(val) or val > diverge_factor * problem.reference["init_val"]
    v = opt.violations
    state = optimizer_state_bytes(opt.opt if method == "adam" else opt)
    with torch.no_grad():
        min_scale = float(min(float(p.min()) for p in params))
    return RunResult(
        method,
        dict(cfg),
        val,
        test,
        bool(diverged),
        int(v["perturb"] + v["update"]),
        int(v["perturb"]),
        int(v["update"]),
        state,
        done,
        curve,
        min_scale,
        every,
    )
