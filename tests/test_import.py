from __future__ import annotations

import subprocess
import sys
import time


def test_import_geode_is_light_and_fast():
    code = (
        "import sys, time; t = time.perf_counter(); import geode, geode.catalog; dt = time.perf_counter() - t; "
        "mods = ('torch', 'matplotlib', 'transformers', 'ray', 'ot', 'sklearn', 'scipy'); "
        "heavy = [m for m in mods if m in sys.modules]; "
        "print(dt, heavy)"
    )
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(
        maxsplit=1
    )
    assert float(out[0]) < 0.5
    assert out[1].strip() == "[]"
    assert time.perf_counter() - t0 < 10


def test_the_all_extra_leaves_out_flower_which_needs_its_own_environment():
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    (spec,) = extras["all"]
    inside = set(spec.split("[", 1)[1].rstrip("]").split(","))
    assert "flower" not in inside and inside == set(extras) - {"all", "flower", "dev"}
