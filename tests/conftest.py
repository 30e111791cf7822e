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
