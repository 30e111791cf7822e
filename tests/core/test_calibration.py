from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.core import expected_calibration_error, negative_log_likelihood


def _ece_by_hand(p, y, m):
    """The definition, bin by bin: bins ((b-1)/M, b/M], the first one also holding 0."""
    conf, pred = p.max(1), p.argmax(1)
    total = 0.0
    for b in range(1, m + 1):
        lo, hi = (b - 1) / m, b / m
        inside = (conf > lo) & (conf <= hi) if b > 1 else (conf <= hi)
        if inside.any():
            total += inside.sum() / len(y) * abs((pred[inside] == y[inside]).mean() - conf[inside].mean())
    return total


@pytest.mark.parametrize("m", [1, 10, 15])
def test_ece_matches_its_definition(m):
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4) * 0.7, size=500)
    y = rng.integers(0, 4, size=500)
    assert expected_calibration_error(p, y, n_bins=m) == pytest.approx(_ece_by_hand(p, y, m), abs=1e-12)


def test_bins_are_closed_on_the_right():
    # confidence exactly 0.5 with 10 bins belongs to (0.4, 0.5]: alone there, it contributes |1 - 0.5| / 2
    p = np.array([[0.5, 0.5], [0.95, 0.05]])
    assert expected_calibration_error(p, [0, 0], n_bins=10) == pytest.approx((0.5 + 0.05) / 2)


def test_perfect_calibration_and_torch_input():
    p = torch.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    assert expected_calibration_error(p, torch.tensor([0, 1])) == 0.0
    assert negative_log_likelihood(p, torch.tensor([0, 1])) == pytest.approx(0.0)


@pytest.mark.parametrize(
    "p, y, msg",
    [
        ([[0.5, 0.6]], [0], "sum to one"),
        ([[1.0, 0.0]], [2], "lie in"),
        ([0.5, 0.5], [0], "shape"),
        ([[1.0, 0.0]], [0.5], "integers"),
    ],
)
def test_bad_input_is_named(p, y, msg):
    with pytest.raises(ValueError, match=msg):
        expected_calibration_error(p, y)
