"""From a paper to its Python API: the import line, its public names with one line each, and its example.

``geode show <slug>`` prints this "Use it" block first. The example is the ``Examples`` section of the paper
package's docstring (numpydoc), which the test suite runs as a doctest, so what a user copies cannot rot.

The block is read from the sources (:mod:`ast`), so ``geode show`` does not import the paper's package (and
torch) to print it; where a name cannot be resolved statically, the package is imported instead. A test
checks that both ways give the same block for every paper.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import geode
from geode import catalog

__all__ = ["Usage", "dynamic_usage", "examples_section", "static_usage", "usage"]

_SECTION = re.compile(r"^(?P<title>[A-Z][A-Za-z ]+)\n-{3,}\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Usage:
    """How to use one paper's method: where it lives, what it exports, and a runnable example."""

    slug: str
    field: str
    module: str
    names: list[tuple[str, str]] = field(default_factory=list)  # (name, one-line summary)
    example: str = ""

    @property
    def import_line(self) -> str:
        """``from geode.<field> import A, B`` (every public name of the paper)."""
        return f"from geode.{self.field} import {', '.join(n for n, _ in self.names)}"


def examples_section(doc: str | None) -> str:
    """The body of the numpydoc ``Examples`` section of a docstring ("" when there is none)."""
    text = inspect.cleandoc(doc or "")
    heads = list(_SECTION.finditer(text))
    for i, m in enumerate(heads):
        if m.group("title").strip() == "Examples":
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            return textwrap.dedent(text[m.end() : end]).strip("\n")
    return ""


_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def _constant_text(obj: object) -> str:
    """How a public name without a docstring is shown: its type and a short repr."""
    import reprlib

    short = reprlib.Repr()
    short.maxstring, short.maxother, short.maxlist, short.maxtuple, short.maxdict = 40, 40, 4, 4, 3
    return f"constant {type(obj).__name__}: {short.repr(obj)}"


def _first_line(doc: str) -> str:
    """The first line of a docstring, with reST roles and literals shown as plain text."""
    line = doc.strip().splitlines()[0].strip()
    return _ROLE.sub(r"\1", line).replace("``", "`")


def _summary(obj: object) -> str:
    """The first line of an object's docstring, with reST roles and literals shown as plain text."""
    doc = inspect.getdoc(obj) if (inspect.isclass(obj) or callable(obj) or inspect.ismodule(obj)) else None
    if not doc:
        return _constant_text(obj)
    return _first_line(doc)


# --- static reading: the sources, parsed with ast, never imported ---------------------------------------------

_ROOT = Path(geode.__file__).resolve().parent


def _source(module: str) -> Path | None:
    """The source file of ``geode.*`` module ``module`` (None outside geode or when there is none)."""
    parts = module.split(".")
    if parts[0] != "geode":
        return None
    base = _ROOT.joinpath(*parts[1:])
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=512)
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


class _Unresolved(Exception):
    """A name the static reading cannot follow (the caller imports the package instead)."""


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[: -(node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _static_summary(module: str, name: str, depth: int = 0) -> str:
    """The summary of ``module.name`` as :func:`_summary` would give it, read from the sources."""
    path = _source(module)
    if path is None or depth > 20:
        raise _Unresolved(f"{module}.{name}")
    is_package = path.name == "__init__.py"
    bound: ast.stmt | ast.alias | None = None
    origin = ""
    stars: list[str] = []
    for st in _tree(path).body:
        if isinstance(st, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == name:
            bound = st
        elif isinstance(st, ast.ImportFrom):
            for alias in st.names:
                if alias.name == "*":
                    stars.append(_absolute(module, is_package, st))
                elif (alias.asname or alias.name) == name:
                    bound, origin = alias, _absolute(module, is_package, st)
        elif isinstance(st, ast.Import):
            if any((a.asname or a.name.partition(".")[0]) == name for a in st.names):
                bound = st
        elif isinstance(st, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in st.targets):
                bound = st if len(st.targets) == 1 else None
                if bound is None:
                    raise _Unresolved(f"{module}.{name}")
            elif any(name in {n.id for n in ast.walk(t) if isinstance(n, ast.Name)} for t in st.targets):
                raise _Unresolved(f"{module}.{name}")  # unpacking or subscript assignment: not followed
        elif isinstance(st, (ast.AnnAssign, ast.AugAssign)):
            if isinstance(st.target, ast.Name) and st.target.id == name:
                bound = st
        elif name in {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}:
            raise _Unresolved(f"{module}.{name}")  # bound inside if/try/for/with: not followed
    if bound is None:
        for star in reversed(stars):
            try:
                return _static_summary(star, name, depth + 1)
            except _Unresolved:
                continue
        raise _Unresolved(f"{module}.{name}")
    if isinstance(bound, ast.alias):
        try:
            return _static_summary(origin, bound.name, depth + 1)
        except _Unresolved:
            sub = f"{origin}.{bound.name}"  # `from pkg import submodule`
            if _source(sub) is not None and _source(sub) != _source(origin):
                doc = ast.get_docstring(_tree(_source(sub)))
                if doc:
                    return _first_line(doc)
            raise
    if isinstance(bound, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        doc = ast.get_docstring(bound)
        if not doc:  # a class may inherit one, a function shows as a constant: let the import decide
            raise _Unresolved(f"{module}.{name}")
        return _first_line(doc)
    if isinstance(bound, ast.Assign | ast.AnnAssign) and bound.value is not None:
        if isinstance(bound.value, ast.Name):
            return _static_summary(module, bound.value.id, depth + 1)
        try:
            return _constant_text(_literal(bound.value))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        known = _KNOWN_CONSTANTS.get(f"{module}.{name}")
        if known is not None and known[0] == _fingerprint(bound.value):
            return known[1]
        raise _Unresolved(f"{module}.{name}")
    raise _Unresolved(f"{module}.{name}")


_BUILDERS = {"dict": dict, "tuple": tuple, "list": list, "set": set, "frozenset": frozenset}


def _literal(node: ast.expr) -> object:
    """``ast.literal_eval``, also through ``dict(a=1)``, ``tuple([...])`` and the like."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BUILDERS:
        build = _BUILDERS[node.func.id]
        if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            raise ValueError("unpacking")
        if node.keywords and build is not dict or len(node.args) > 1:
            raise ValueError("not a literal builder call")
        args = [_literal(a) for a in node.args]
        return build(*args, **{k.arg: _literal(k.value) for k in node.keywords})  # type: ignore[operator]
    return ast.literal_eval(node)


def _fingerprint(node: ast.expr) -> str:
    import hashlib

    return hashlib.sha256(ast.unparse(node).encode()).hexdigest()[:16]


# Constants whose value the sources alone cannot give (objects built by code): their text, as the imported
# package shows it, kept with a fingerprint of the defining expression. A changed expression is not trusted
# (the package is imported instead), and tests/test_use_it.py checks every entry against the import.
_KNOWN_CONSTANTS: dict[str, tuple[str, str]] = {
    "geode.analysis.weight_drift.drift.ACTIVATIONS": (
        "42b62230bb65b87e",
        "constant dict: {'clipped_gelu2': <class 'geode.anal...rift.ClippedGELU2'>, 'clipped_relu2': "
        "<class 'geode.anal...rift.ClippedReLU2'>, 'gelu': <class 'torch.nn.m...s.activation.GELU'>, ...}",
    ),
    "geode.llm.captrack.taxonomy.CAPTRACK_TAXONOMY": (
        "05699d2e220cf384",
        "constant tuple: (Capability(code='C...ed in the weights'), Capability(code='C...and step validity'), "
        "Capability(code='C...en in the context'), Capability(code='C...vidence, truthful'), ...)",
    ),
    "geode.neuro.causal_pieces.experiment.INIT_GRID": (
        "38895d579579e8c0",
        "constant tuple: (InitConfig(mean=1.....1, positive=False), InitConfig(mean=1.....5, positive=False), "
        "InitConfig(mean=1.....5, positive=False), InitConfig(mean=1.....1, positive=False), ...)",
    ),
    "geode.sciml.inr_error.families.FAMILIES": (
        "e168aa6054fe237d",
        "constant dict: {'cp': <class 'geode.scim...s.CPFactorisation'>, 'fourier': <class "
        "'geode.scim...s.FourierFeatures'>, 'grid': <class 'geode.scim...lies.BilinearGrid'>, ...}",
    ),
    "geode.sciml.pde_pretrain.tasks.HKS_TIMES": (
        "e4bdf9736023b82d",
        "constant tuple: (np.float64(0.01), np.float64(0.023535468936502525), np.float64(0.05539182980610754), "
        "np.float64(0.1303672689737678), ...)",
    ),
}


def static_usage(slug: str) -> Usage | None:
    """The "Use it" block of paper ``slug`` read from its sources, or None where the sources do not settle it."""
    paper = catalog.get(slug)
    if paper.status != "implemented":
        raise KeyError(f"paper {slug!r} is planned: it has no component yet")
    path = _source(paper.module)
    if path is None or path.name != "__init__.py":
        return None
    try:
        tree = _tree(path)
        exported: list[str] | None = None
        for st in tree.body:
            target = st.targets[0] if isinstance(st, ast.Assign) and len(st.targets) == 1 else None
            target = st.target if isinstance(st, ast.AnnAssign | ast.AugAssign) else target
            if isinstance(target, ast.Name) and target.id == "__all__":
                if not isinstance(st, ast.Assign | ast.AnnAssign) or st.value is None:
                    return None
                exported = list(ast.literal_eval(st.value))
        if exported is None or not all(isinstance(n, str) for n in exported):
            return None
        names = [(n, _static_summary(paper.module, n)) for n in exported]
        doc = ast.get_docstring(tree, clean=False)
    except (_Unresolved, ValueError, TypeError, SyntaxError, OSError):
        return None
    return Usage(slug, paper.field, paper.module, names, examples_section(doc))


def dynamic_usage(slug: str) -> Usage:
    """The "Use it" block of paper ``slug`` read from the imported package (and so its dependencies)."""
    paper = catalog.get(slug)
    if paper.status != "implemented":
        raise KeyError(f"paper {slug!r} is planned: it has no component yet")
    pkg = importlib.import_module(paper.module)
    names = [(n, _summary(getattr(pkg, n))) for n in getattr(pkg, "__all__", [])]
    return Usage(slug, paper.field, paper.module, names, examples_section(pkg.__doc__))


def usage(slug: str) -> Usage:
    """The "Use it" block of paper ``slug``, read from its sources (importing the package only if need be).

    Raises
    ------
    KeyError
        For an unknown slug or a planned paper.
    """
    return static_usage(slug) or dynamic_usage(slug)
