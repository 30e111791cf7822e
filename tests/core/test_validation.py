from __future__ import annotations

import numpy as np
import pytest
import torch

from geode.core import (
    as_generator,
    check_array,
    check_choice,
    check_finite,
    check_int,
    check_positive,
    check_probability,
    check_real,
    seed_everything,
    speed_ratio,
    torch_generator,
)


def test_check_real_bounds_and_types():
    assert check_real("x", 2, low=0) == 2.0
    with pytest.raises(ValueError, match=r"x must be > 0.0; got 0"):
        check_real("x", 0, low=0.0, low_inclusive=False)
    with pytest.raises(ValueError, match=r"x must be <= 1"):
        check_real("x", 2, high=1)
    with pytest.raises(ValueError, match="x must be finite"):
        check_real("x", float("inf"))
    with pytest.raises(TypeError, match="x must be a real number; got str"):
        check_real("x", "1")
    with pytest.raises(TypeError):
        check_real("x", True)
    assert check_positive("step_size", 0.1) == 0.1
    with pytest.raises(ValueError, match="step_size must be > 0"):
        check_positive("step_size", -0.1)
    assert check_probability("p", 1.0) == 1.0
    with pytest.raises(ValueError, match="p must be < 1"):
        check_probability("p", 1.0, open_interval=True)


def test_check_int_and_choice():
    assert check_int("n", np.int64(3), low=1) == 3
    with pytest.raises(TypeError, match="n must be an integer; got float"):
        check_int("n", 3.0)
    with pytest.raises(ValueError, match="n must be >= 1; got 0"):
        check_int("n", 0, low=1)
    assert check_choice("base", "mala", ("mala", "fisher-mala")) == "mala"
    with pytest.raises(ValueError, match="base must be one of 'mala', 'fisher-mala'; got 'hmc'"):
        check_choice("base", "hmc", ("mala", "fisher-mala"))


def test_check_array_and_finite():
    x = check_array("X", [[1, 2], [3, 4]], ndim=2, shape=(None, 2), min_rows=2)
    assert x.dtype == np.float64
    with pytest.raises(ValueError, match=r"X must have shape \(\*, 3\); got \(2, 2\)"):
        check_array("X", np.ones((2, 2)), shape=(None, 3))
    with pytest.raises(ValueError, match="X must have 1 dimension"):
        check_array("X", np.ones((2, 2)), ndim=1)
    with pytest.raises(ValueError, match="X must contain only finite"):
        check_array("X", [np.nan])
    with pytest.raises(ValueError, match="at least 3 rows"):
        check_array("X", np.ones((2, 2)), min_rows=3)
    check_finite("t", torch.ones(3))
    with pytest.raises(ValueError, match="t must contain only finite"):
        check_finite("t", torch.tensor([1.0, float("nan")]))


def test_seeding_is_reproducible():
    a = as_generator(5).normal(size=3)
    b = as_generator(5).normal(size=3)
    np.testing.assert_array_equal(a, b)
    g = np.random.default_rng(1)
    assert as_generator(g) is g
    with pytest.raises(ValueError, match="seed must be >= 0"):
        as_generator(-1)
    with pytest.raises(TypeError, match="seed must be an int"):
        as_generator(1.5)
    t1 = torch.randn(3, generator=torch_generator(7))
    t2 = torch.randn(3, generator=torch_generator(7))
    assert torch.equal(t1, t2)
    seed_everything(3)
    x = torch.rand(2), np.random.rand(2)
    seed_everything(3)
    y = torch.rand(2), np.random.rand(2)
    assert torch.equal(x[0], y[0]) and np.array_equal(x[1], y[1])


def test_speed_ratio_orders_a_slow_and_a_fast_function():
    import time

    r = speed_ratio(lambda: None, lambda: time.sleep(0.002), repeats=3)
    assert r["speedup"] > 1.0 and r["baseline_s"] >= 0.002
