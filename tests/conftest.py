"""Test-suite setup: one BLAS/torch thread per (xdist) worker, offline, non-interactive plotting."""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pytest  # noqa: E402

try:
    import torch  # noqa: E402

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests whose offline asset is absent, with a reason that says how to install it."""
    from geode.data.assets import ASSETS

    have = {a.name: a.path() is not None for a in ASSETS}
    need = {"needs_lm": "smollm2-gguf", "needs_fmnist": "fashion-mnist"}
    for item in items:
        for marker, asset in need.items():
            if item.get_closest_marker(marker) and not have[asset]:
                install = next(a.install for a in ASSETS if a.name == asset)
                item.add_marker(pytest.mark.skip(reason=f"asset {asset} not installed ({install})"))


# --------------------------------------------------------------------------------------------- API contract
def _corruptions(value: object) -> list[tuple[str, object]]:
    """Bad variants of one valid argument: NaN, inf, empty, wrong shape, wrong type (those that apply)."""
    import numpy as np

    out: list[tuple[str, object]] = []
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if torch is not None and isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
        nan, inf = value.clone(), value.clone()
        nan.view(-1)[0], inf.view(-1)[0] = float("nan"), float("inf")
        out += [("nan", nan), ("inf", inf), ("empty", value[:0]), ("wrong shape", value.reshape(-1)[..., None, None])]
        out.append(("wrong type", "not a tensor"))
    elif isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating) and value.size:
        nan, inf = value.copy(), value.copy()
        nan.flat[0], inf.flat[0] = np.nan, np.inf
        out += [("nan", nan), ("inf", inf), ("empty", value[:0]), ("wrong shape", value.reshape(-1)[:, None, None])]
        out.append(("wrong type", "not an array"))
    elif isinstance(value, float):
        out += [("nan", float("nan")), ("inf", float("inf")), ("wrong type", "not a number")]
    elif isinstance(value, (list, tuple)) and value:
        # a sequence (of arrays, of sequences of arrays, of numbers): corrupt its first element, and empty it
        for kind, bad in _corruptions(value[0]):
            if kind in ("nan", "inf", "wrong shape"):
                out.append((kind, type(value)([bad, *value[1:]])))
        out.append(("empty", type(value)()))
    return out


def _finite_result(result: object) -> bool:
    import numpy as np

    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if torch is not None and isinstance(result, torch.Tensor):
        return bool(torch.isfinite(result).all()) if result.is_floating_point() else True
    if isinstance(result, np.ndarray):
        return bool(np.isfinite(result).all()) if np.issubdtype(result.dtype, np.number) else True
    if isinstance(result, float):
        return bool(np.isfinite(result))
    if isinstance(result, (list, tuple)):
        return all(_finite_result(r) for r in result)
    if isinstance(result, dict):
        return all(_finite_result(r) for r in result.values())
    return True


def check_api(fn, *args, ok: dict[tuple[str, str], str] | None = None, **kwargs) -> list[str]:
    """Call ``fn`` once per corruption of each argument (NaN, inf, empty, wrong shape, wrong type); return one line
    per corruption that neither raised a ``ValueError``/``TypeError`` whose message names the argument nor
    returned a finite result. ``ok`` maps ``(argument, corruption)`` to why a finite result is documented behaviour
    (or why an error that does not name the argument is acceptable).

    The valid call ``fn(*args, **kwargs)`` must itself succeed.
    """
    import inspect

    ok = ok or {}
    fn(*args, **kwargs)
    signature = inspect.signature(fn)
    problems = []
    for name, value in signature.bind(*args, **kwargs).arguments.items():
        for kind, bad in _corruptions(value):
            if (name, kind) in ok:
                continue
            call = signature.bind(*args, **kwargs)
            call.arguments[name] = bad
            try:
                result = fn(*call.args, **call.kwargs)
            except (ValueError, TypeError) as exc:
                if name not in str(exc):
                    problems.append(f"{name} {kind}: {type(exc).__name__} does not name {name!r}: {str(exc)[:120]}")
                continue
            except Exception as exc:  # an internal error instead of a message about the argument
                problems.append(f"{name} {kind}: {type(exc).__name__}: {str(exc)[:120]}")
                continue
            if not _finite_result(result):
                problems.append(f"{name} {kind}: a non-finite result, no error")
            else:
                problems.append(f"{name} {kind}: a result from a bad input, no error (silent); document it in ok=")
    return problems


@pytest.fixture
def api_contract():
    """``check_api(fn, *args, ok=..., **kwargs)``: the calls of bad inputs that do not fail cleanly (empty: all do)."""
    return check_api
