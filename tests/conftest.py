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
        # a sequence (of arrays, of sequences of arrays, of numbers): corrupt its first element, and empty it;
        # a NamedTuple keeps its fields (it cannot be empty)
        named = hasattr(value, "_fields")
        for kind, bad in _corruptions(value[0]):
            if kind in ("nan", "inf", "wrong shape"):
                items = [bad, *value[1:]]
                out.append((kind, type(value)(*items) if named else type(value)(items)))
        if not named:
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


# A field's contract test module defines its table and two one-line tests:
#   PACKAGE = geode.<field>
#   CALLS = {name: lambda: (args, kwargs)}        every callable public name (and "Class.method" wrappers)
#   METHODS = {"Class.method": wrapper}           optional: wrappers whose parameters carry the method's names
#                                                 (or a public name's, where the call needs adapting)
#   NOT_CALLED = {name: reason}                   optional: constants, types, containers, long runs
#   OK = {name: {(argument, corruption): reason}} optional: documented results for a bad input
#   def test_every_public_name_is_covered(api_coverage): assert api_coverage == []
#   def test_bad_inputs_fail_cleanly(public_name, api_problems): assert api_problems(public_name) == []
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "public_name" in metafunc.fixturenames:
        metafunc.parametrize("public_name", sorted(metafunc.module.CALLS))


@pytest.fixture
def api_coverage(request: pytest.FixtureRequest) -> list[str]:
    """What the module's contract table misses: names of ``PACKAGE.__all__`` neither called nor excused, and more."""
    mod = request.module
    names = set(mod.PACKAGE.__all__)
    methods, not_called = getattr(mod, "METHODS", {}), getattr(mod, "NOT_CALLED", {})
    called = {n for n in mod.CALLS if "." not in n}  # "Class.method" entries call a method of a public class
    out = [f"{n}: neither in CALLS nor in NOT_CALLED" for n in sorted(names - called - set(not_called))]
    out += [f"{n}: not a public name" for n in sorted((called | set(not_called)) - names)]
    out += [f"{n}: both called and not called" for n in sorted(set(mod.CALLS) & set(not_called))]
    out += [f"{m}: its class is not public" for m in sorted(mod.CALLS) if "." in m and m.split(".")[0] not in names]
    out += [f"{m}: a method wrapper without a call in CALLS" for m in sorted(set(methods) - set(mod.CALLS))]
    return out


@pytest.fixture
def api_problems(request: pytest.FixtureRequest):
    """``api_problems(name)``: :func:`check_api` of the module's ``CALLS[name]`` (its wrapper for a method)."""
    mod = request.module

    def run(name: str) -> list[str]:
        methods = getattr(mod, "METHODS", {})
        fn = methods[name] if name in methods else getattr(mod.PACKAGE, name)
        args, kwargs = mod.CALLS[name]()
        return check_api(fn, *args, ok=getattr(mod, "OK", {}).get(name, {}), **kwargs)

    return run
