"""A plain ReLU MLP, the small network several papers' experiments train."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from geode.core.validation import check_int

__all__ = ["make_mlp"]


def make_mlp(n_in: int, hidden: Sequence[int], n_out: int, seed: int) -> Any:
    """A ReLU MLP ``n_in -> hidden[0] -> ... -> n_out`` with torch's default initialisation drawn from ``seed``.

    Returns
    -------
    torch.nn.Sequential
        ``Linear, ReLU, ..., Linear`` (no activation after the last layer).
    """
    import torch

    check_int("n_in", n_in, low=1)
    check_int("n_out", n_out, low=1)
    for i, h in enumerate(hidden):
        check_int(f"hidden[{i}]", h, low=1)
    check_int("seed", seed, low=0)
    torch.manual_seed(seed)
    layers: list[Any] = []
    last = n_in
    for h in hidden:
        layers += [torch.nn.Linear(last, h), torch.nn.ReLU()]
        last = h
    layers.append(torch.nn.Linear(last, n_out))
    return torch.nn.Sequential(*layers)
