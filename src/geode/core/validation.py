"""Input validation helpers that name the argument and the accepted range.

Every public function in geode validates user input with these helpers, so that a bad call fails
at once with a ``ValueError``/``TypeError`` such as ``"step_size must be > 0; got -0.1"`` rather
than a silent NaN far downstream.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection
from typing import Any

import numpy as np

__all__ = [
    "check_array",
    "check_choice",
    "check_finite",
    "check_int",
    "check_positive",
    "check_probability",
    "check_real",
    "check_tensor",
]


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Return ``value`` as a finite ``float`` inside the given bounds, else raise naming ``name``.

    Examples
    --------
    >>> check_real("alpha", 0.5, low=0.0)
    0.5
    >>> check_real("alpha", -1, low=0.0)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be >= 0.0; got -1
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite; got {value!r}")
    if low is not None and (x < low or (not low_inclusive and x == low)):
        raise ValueError(f"{name} must be {'>=' if low_inclusive else '>'} {low}; got {value!r}")
    if high is not None and (x > high or (not high_inclusive and x == high)):
        raise ValueError(f"{name} must be {'<=' if high_inclusive else '<'} {high}; got {value!r}")
    return x


def check_positive(name: str, value: Any) -> float:
    """Return ``value`` as a finite ``float`` that is strictly positive, else raise naming ``name``."""
    return check_real(name, value, low=0.0, low_inclusive=False)


def check_probability(name: str, value: Any, *, open_interval: bool = False) -> float:
    """Return ``value`` as a float in [0, 1] (or (0, 1) with ``open_interval``), else raise."""
    return check_real(
        name, value, low=0.0, high=1.0, low_inclusive=not open_interval, high_inclusive=not open_interval
    )


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an ``int`` in [low, high] (bounds optional), else raise naming ``name``.

    Booleans and floats are rejected, even integral ones, since they usually signal a mix-up.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    v = int(value)
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}; got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}; got {v}")
    return v


def check_choice(name: str, value: Any, choices: Collection[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``, else raise a ``ValueError`` listing them."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value


def check_finite(name: str, array: Any) -> None:
    """Raise ``ValueError`` naming ``name`` if ``array`` (numpy or torch) holds a NaN or an infinity."""
    if hasattr(array, "detach"):  # torch tensor, without importing torch here
        ok = bool(array.detach().isfinite().all())
    else:
        ok = bool(np.all(np.isfinite(np.asarray(array))))
    if not ok:
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")


def check_array(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    shape: tuple[int | None, ...] | None = None,
    dtype: Any = float,
    finite: bool = True,
    min_rows: int | None = None,
) -> np.ndarray:
    """Convert ``value`` to a numpy array and check its rank, shape and values.

    Parameters
    ----------
    name : str
        The argument's name, used in error messages.
    value : array_like
        The input.
    ndim : int or tuple of int, optional
        Accepted number(s) of dimensions.
    shape : tuple, optional
        Expected shape; ``None`` entries match any size.
    dtype : numpy dtype, optional
        Target dtype (default ``float``, i.e. float64); ``None`` keeps the input's.
    finite : bool
        Reject NaN and infinity (for floating dtypes).
    min_rows : int, optional
        Minimum size of the first axis.

    Returns
    -------
    numpy.ndarray
    """
    try:
        arr = np.asarray(value, dtype=dtype) if dtype is not None else np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be array-like of {np.dtype(dtype).name}; got {type(value).__name__}") from exc
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name} must have {want} dimension(s); got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}; got {arr.shape}")
    if min_rows is not None and (arr.ndim == 0 or arr.shape[0] < min_rows):
        raise ValueError(f"{name} must have at least {min_rows} rows; got shape {arr.shape}")
    if finite and np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def check_tensor(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    shape: tuple[int | None, ...] | None = None,
    finite: bool = True,
    nonempty: bool = True,
    floating: bool = False,
) -> Any:
    """Check that ``value`` is a torch tensor of the given rank and shape, finite and non-empty; return it.

    The torch counterpart of :func:`check_array` (torch is not imported here: a tensor is recognised by its
    interface). Raises ``TypeError`` for a non-tensor (or a non-floating tensor when ``floating``) and
    ``ValueError`` for a wrong rank or shape, an empty tensor or a NaN/inf, each naming ``name``.
    """
    if not (hasattr(value, "detach") and hasattr(value, "shape") and hasattr(value, "dtype")):
        raise TypeError(f"{name} must be a torch tensor; got {type(value).__name__}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor; got {value.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if value.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{name} must have {want} dimension(s); got shape {tuple(value.shape)}")
    if shape is not None:
        if value.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, value.shape)):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}; got {tuple(value.shape)}")
    if nonempty and value.numel() == 0:
        raise ValueError(f"{name} must not be empty; got shape {tuple(value.shape)}")
    if finite and value.is_floating_point() and not bool(value.detach().isfinite().all()):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return value
