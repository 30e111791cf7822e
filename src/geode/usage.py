"""From a paper to its Python API: the import line, its public names with one line each, and its example.

``geode show <slug>`` prints this "Use it" block first. The example is the ``Examples`` section of the paper
package's docstring (numpydoc), which the test suite runs as a doctest, so what a user copies cannot rot.
"""

from __future__ import annotations

import importlib
import inspect
import re
import textwrap
from dataclasses import dataclass, field

from geode import catalog

__all__ = ["Usage", "examples_section", "usage"]

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


def _summary(obj: object) -> str:
    """The first line of an object's docstring, with reST roles and literals shown as plain text."""
    doc = inspect.getdoc(obj) if (inspect.isclass(obj) or callable(obj) or inspect.ismodule(obj)) else None
    if not doc:
        import reprlib

        short = reprlib.Repr()
        short.maxstring, short.maxother, short.maxlist, short.maxtuple, short.maxdict = 40, 40, 4, 4, 3
        return f"constant {type(obj).__name__}: {short.repr(obj)}"
    line = doc.strip().splitlines()[0].strip()
    return _ROLE.sub(r"\1", line).replace("``", "`")


def usage(slug: str) -> Usage:
    """The "Use it" block of paper ``slug``: it imports the paper's package (and so its dependencies).

    Raises
    ------
    KeyError
        For an unknown slug or a planned paper.
    """
    paper = catalog.get(slug)
    if paper.status != "implemented":
        raise KeyError(f"paper {slug!r} is planned: it has no component yet")
    pkg = importlib.import_module(paper.module)
    names = [(n, _summary(getattr(pkg, n))) for n in getattr(pkg, "__all__", [])]
    return Usage(slug, paper.field, paper.module, names, examples_section(pkg.__doc__))
