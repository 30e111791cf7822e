"""Every script in ``examples/`` runs at its smallest size (``--smoke``), as a user would run it.

A script that needs an optional extra or offline asset that is missing prints "skipped: needs ..." and exits with
77; that is a skip here. ``federated_flower.py`` needs Flower, which lives in its own environment: it runs in
``make test-flower`` (``tests/federated/test_flower.py``), not here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "federated_flower.py")
SKIP = 77


def run_example(name: str, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env.update(TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
    cmd = [sys.executable, str(EXAMPLES / name), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=EXAMPLES.parent)


def test_there_is_an_example_per_field():
    from geode import catalog

    fields = {p.field for p in catalog.papers(status="implemented")}
    # <field>_example.py where <field>.py would shadow a standard module (ssl) for every script of the folder
    missing = [f for f in fields if f"{f}.py" not in SCRIPTS and f"{f}_example.py" not in SCRIPTS]
    assert not missing, f"add examples/<field>.py for: {sorted(missing)}"
    assert not [n for n in SCRIPTS if n[:-3] in sys.stdlib_module_names], "a script named like a standard module"


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_example_runs_at_smoke_size(name):
    done = run_example(name, "--smoke")
    if done.returncode == SKIP:
        pytest.skip(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else f"{name}: skipped")
    assert done.returncode == 0, f"{name} --smoke failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{name} prints nothing: an example should say what it found"
