from __future__ import annotations

import pytest
import torch

from geode.models import make_mlp


def test_mlp_shape_layers_and_seed():
    net = make_mlp(5, [7, 3], 2, seed=4)
    assert [type(m).__name__ for m in net] == ["Linear", "ReLU", "Linear", "ReLU", "Linear"]
    assert net(torch.zeros(6, 5)).shape == (6, 2)
    again = make_mlp(5, [7, 3], 2, seed=4)
    assert all(torch.equal(a, b) for a, b in zip(net.parameters(), again.parameters()))
    assert not torch.equal(next(make_mlp(5, [7, 3], 2, seed=5).parameters()), next(net.parameters()))
    assert len(make_mlp(3, [], 1, seed=0)) == 1  # no hidden layer: a linear model


def test_mlp_validates_sizes():
    with pytest.raises(ValueError, match=r"hidden\[1\] must be >= 1"):
        make_mlp(3, [4, 0], 2, seed=0)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        make_mlp(3, [4], 2, seed=-1)
