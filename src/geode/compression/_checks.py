"""Input checks shared by the compression layers (issue 51, F10)."""

from __future__ import annotations

from typing import Any

from geode.core.validation import check_tensor


def check_input(name: str, x: Any, n_in: int) -> Any:
    """A layer's input at call time: a floating tensor with ``n_in`` features on its last axis.

    Only the type and the shape are checked (cheap): the values are not scanned, since this runs at every forward;
    a NaN or inf propagates like torch's own layers, and an empty batch gives an empty output.
    """
    check_tensor(name, x, finite=False, nonempty=False, floating=True)
    if x.ndim < 1 or x.shape[-1] != n_in:
        raise ValueError(f"{name} must have {n_in} features on its last axis; got shape {tuple(x.shape)}")
    return x


def check_bias(bias: Any, n_out: int) -> Any:
    """``None`` or a finite floating tensor of shape ``(n_out,)``."""
    if bias is not None:
        check_tensor("bias", bias, shape=(n_out,), floating=True)
    return bias
