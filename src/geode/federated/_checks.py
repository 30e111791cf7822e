"""Validation shared by the field's experiment set-ups (private)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import fields
from typing import Any

from geode.core.validation import check_real


def check_float_fields(setup: Any, non_negative: Collection[str] = ()) -> None:
    """Reject a NaN, infinite, non-positive or non-numeric float field of dataclass ``setup``, naming the field.

    Fields typed ``float`` (or a tuple of floats) must be > 0, or >= 0 when named in ``non_negative``; ``None``
    is skipped. A tuple's entries are named ``field[i]``.
    """
    for f in fields(setup):
        v = getattr(setup, f.name)
        if "float" not in str(f.type) or v is None:
            continue
        for i, x in enumerate(v if isinstance(v, tuple) else (v,)):
            name = f"{f.name}[{i}]" if isinstance(v, tuple) else f.name
            check_real(name, x, low=0.0, low_inclusive=f.name in non_negative)
