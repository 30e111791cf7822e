"""``examples/federated_flower.py`` (a Flower ClientApp + ServerApp with CRAFT) runs in ``make test-flower``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("flwr") is None, reason="needs the flower extra")

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "federated_flower.py"


def test_the_flower_example_runs_at_smoke_size():
    assert SCRIPT.is_file(), "examples/federated_flower.py is missing"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode != 77, "flwr is installed, yet the example skipped"
    assert done.returncode == 0, f"failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
