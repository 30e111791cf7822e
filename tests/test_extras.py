"""Without any one optional extra, every field imports and every paper's claim and "Use it" block load (so
``geode list``, ``geode show`` and ``geode reproduce`` work for the papers that do not need it), and using a
component that needs the extra raises an ImportError that names it.

Absence is simulated in a fresh interpreter by ``sys.modules[name] = None`` (``import name`` then raises).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

EXTRAS = {
    "llm": ("transformers", "peft", "trl", "gguf", "accelerate"),
    "ot": ("ot",),
    "uq": ("skfem", "mapie"),
    "kan": ("kan",),
    "graphs": ("torch_geometric",),
    "flows": ("zuko",),
    "vision3d": ("cv2",),
    "ray": ("ray",),
}

_SCRIPT = """
import sys
for name in {mods!r}:
    sys.modules[name] = None
from geode import catalog
from geode.claims import load_claim
from geode.usage import usage
import importlib
bad = []
for field in sorted({{p.field for p in catalog.papers(status="implemented")}}):
    try:
        importlib.import_module("geode." + field)
    except Exception as exc:
        bad.append(f"import geode.{{field}}: {{type(exc).__name__}}: {{exc}}")
for p in catalog.papers(status="implemented"):
    for what, call in (("claim", lambda: load_claim(p.slug)), ("use it", lambda: usage(p.slug))):
        try:
            call()
        except Exception as exc:
            bad.append(f"{{p.slug}} {{what}}: {{type(exc).__name__}}: {{exc}}")
print("\\n".join(bad) or "ok")
"""


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_every_field_and_paper_loads_without_the_extra(extra):
    code = textwrap.dedent(_SCRIPT.format(mods=EXTRAS[extra]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout[-4000:] + done.stderr[-2000:]


def test_a_component_that_needs_the_graphs_extra_names_it():
    code = textwrap.dedent(
        """
        import sys
        sys.modules["torch_geometric"] = None
        from geode.graphs import CastorConv
        try:
            CastorConv(4, hops=2)
        except ImportError as exc:
            print(exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert "geode[graphs]" in done.stdout, done.stdout + done.stderr[-2000:]
