"""Start-up: ``geode list``, ``geode show <slug>`` and ``--help`` import no torch, and neither does loading a claim.

A timing assert would be flaky on a shared machine; what makes these commands slow is importing torch (and
sklearn, transformers) through a paper's package, so that is what is checked, each in a fresh interpreter.
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
import textwrap

import pytest

from geode import catalog

HEAVY = ("torch", "sklearn", "transformers")


def _fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object last."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_loading_every_claim_imports_no_heavy_library():
    slugs = [p.slug for p in catalog.papers(status="implemented")]
    out = _fresh(
        f"""
        import json, sys
        from geode.claims import load_claim
        heavy, docs = {{}}, {{}}
        for slug in {slugs!r}:
            c = load_claim(slug)
            docs[slug] = [c.module, c.doc]
            now = [m for m in {HEAVY!r} if m in sys.modules]
            if now and not heavy:
                heavy[slug] = now
        print(json.dumps({{"heavy": heavy, "docs": docs}}))
        """
    )
    assert not out["heavy"], f"loading a claim imported {out['heavy']}: import those inside run, not at module level"
    # a claim loaded without its package still carries the package's docstring, as when the package is imported
    for slug, (module, doc) in out["docs"].items():
        pkg = importlib.import_module(module.rpartition(".")[0])
        assert doc == inspect.cleandoc(pkg.__doc__ or ""), slug


def test_a_claim_loaded_alone_runs_once_its_package_is_imported():
    # load the claim without its packages, then import them (as run does): one module, the same claim
    out = _fresh(
        """
        import json, sys
        from geode.claims import load_claim
        c = load_claim("svf")
        alone = sys.modules[c.module]
        import geode.inference.svf
        from geode.inference.svf import claim
        from geode.inference.svf.claim import _policies
        from geode.inference.serving import Policy
        ok = all(isinstance(p, Policy) for p in _policies(0).values())
        print(json.dumps({"same": claim is alone and load_claim("svf") is c, "policies": ok}))
        """
    )
    assert out["same"] and out["policies"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["list"],
        ["show", "svf"],
        ["show", "castor"],
        ["show", "polar-vbll"],
        ["show", "weight-drift"],
        ["show", "moe-quant"],
        ["show", "comparability-fusion"],
    ],
    ids=" ".join,
)
def test_cheap_commands_import_no_heavy_library(argv, tmp_path):
    out = _fresh(
        f"""
        import contextlib, io, json, sys
        from geode.cli import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            try:
                main({[*argv, *(["--out", str(tmp_path)] if argv[0] == "show" else [])]!r})
            except SystemExit as exc:
                code = exc.code
            else:
                code = 0
        print(json.dumps({{"code": code, "heavy": [m for m in {HEAVY!r} if m in sys.modules], "out": buf.getvalue()}}))
        """
    )
    assert out["code"] in (0, None), out["out"][-2000:]
    assert out["out"].strip()
    assert not out["heavy"], f"`geode {' '.join(argv)}` imported {out['heavy']}"
