"""The experiments of the weight-drift claim: an MLP on scikit-learn's bundled digits, trained with Adam.

``digits_splits(seed)`` gives standardised train/validation/test splits (60/20/20, stratified, drawn from
``seed``); ``make_net`` an MLP with a chosen activation; ``train_net`` trains it with Adam on
cross-entropy, records the weight drift of every matrix that consumes an activation (the "downstream"
weights: every ``Linear`` but the first) over the first ``drift_steps`` steps, and returns validation
and test accuracy and the test-time sparsity of every activation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.analysis.weight_drift.drift import SparsityMonitor, downstream_drift, make_activation

__all__ = ["DigitSplits", "TrainResult", "digits_splits", "make_net", "train_net"]


@dataclass
class DigitSplits:
    """Standardised digits: ``x_*`` float32 tensors of 64 features, ``y_*`` int64 labels."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def digits_splits(seed: int) -> DigitSplits:
    """60/20/20 stratified splits of ``sklearn.datasets.load_digits`` (bundled, offline), standardised on train."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, test_size=0.4, stratify=y, random_state=seed)
    x_va, x_te, y_va, y_te = train_test_split(x_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=seed)
    mu, sd = x_tr.mean(0), x_tr.std(0) + 1e-6

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.tensor((a - mu) / sd, dtype=torch.float32)

    def lab(a: np.ndarray) -> torch.Tensor:
        return torch.tensor(a, dtype=torch.long)

    return DigitSplits(t(x_tr), lab(y_tr), t(x_va), lab(y_va), t(x_te), lab(y_te))


def make_net(
    activation: str, hidden: Sequence[int], seed: int, n_in: int = 64, n_out: int = 10, **act_kw: Any
) -> nn.Sequential:
    """``Linear, act, ..., Linear`` with torch's default initialisation drawn from ``seed``."""
    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    last = n_in
    for h in hidden:
        layers += [nn.Linear(last, h), make_activation(activation, **act_kw)]
        last = h
    layers.append(nn.Linear(last, n_out))
    return nn.Sequential(*layers)


@dataclass
class TrainResult:
    """What :func:`train_net` measured."""

    val_acc: float
    test_acc: float
    drift: dict[str, np.ndarray]  # downstream matrix -> relative mean drift at steps 0..drift_steps
    sparsity: list[float]  # test-time fraction of exact zeros per activation
    final_loss: float
    diverged: bool
    grad_stat: dict[str, float] = field(default_factory=dict)


def _accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((net(x).argmax(1) == y).float().mean())


def train_net(
    data: DigitSplits,
    activation: str,
    *,
    hidden: Sequence[int] = (256, 256, 256),
    lr: float = 1e-3,
    steps: int = 400,
    batch: int = 128,
    drift_steps: int = 100,
    seed: int = 0,
    loss: str = "ce",
    **act_kw: Any,
) -> TrainResult:
    """Train an MLP with Adam; record the downstream weights' drift over ``drift_steps`` steps.

    ``loss`` is ``"ce"`` (cross-entropy) or ``"mse"`` (mean squared error to one-hot targets).
    """
    if loss not in ("ce", "mse"):
        raise ValueError(f"loss must be 'ce' or 'mse'; got {loss!r}")
    from geode.analysis.weight_drift.drift import expected_preactivation_gradient

    net = make_net(activation, hidden, seed, **act_kw)
    g = torch.Generator().manual_seed(10_000 + seed)
    n = data.x_train.shape[0]
    first = torch.randperm(n, generator=g)[:batch]
    grad_stat = expected_preactivation_gradient(net, data.x_train[first], data.y_train[first], loss=loss)
    linears = [m for m in net if isinstance(m, nn.Linear)][1:]

    def snap() -> dict[str, torch.Tensor]:
        return {f"W{i + 2}": m.weight.detach().clone() for i, m in enumerate(linears)}

    history = [snap()]
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    loss_v = float("nan")
    diverged = False
    for step in range(steps):
        idx = torch.randint(0, n, (batch,), generator=g)
        out = net(data.x_train[idx])
        if loss == "ce":
            value = nn.functional.cross_entropy(out, data.y_train[idx])
        else:
            value = nn.functional.mse_loss(out, nn.functional.one_hot(data.y_train[idx], out.shape[1]).to(out.dtype))
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
        loss_v = float(value.detach())
        if not np.isfinite(loss_v):
            diverged = True
            break
        if step < drift_steps:
            history.append(snap())
    while len(history) < drift_steps + 1:
        history.append(history[-1])
    net.eval()
    with SparsityMonitor(net) as mon:
        test_acc = _accuracy(net, data.x_test, data.y_test)
        spars = [v["sparsity"] for v in mon.summary().values()]
    val_acc = _accuracy(net, data.x_val, data.y_val)
    return TrainResult(
        val_acc=val_acc if not diverged else 0.0,
        test_acc=test_acc if not diverged else 0.0,
        drift=downstream_drift(history),
        sparsity=spars,
        final_loss=loss_v,
        diverged=diverged,
        grad_stat=grad_stat,
    )
