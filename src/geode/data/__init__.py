"""Synthetic generators and offline loaders. Nothing here ever downloads."""

from __future__ import annotations

from geode.data.assets import ASSETS, Asset, asset_status
from geode.data.loaders import load_fashion_mnist, load_mnist, pydoc_char_ids, shakespeare_text
from geode.data.yinyang import YINYANG_CLASS_NAMES, YinYangDataset, yinyang_class

__all__ = [
    "ASSETS",
    "YINYANG_CLASS_NAMES",
    "Asset",
    "YinYangDataset",
    "asset_status",
    "load_fashion_mnist",
    "load_mnist",
    "pydoc_char_ids",
    "shakespeare_text",
    "yinyang_class",
]
