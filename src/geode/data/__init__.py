"""Synthetic generators and offline loaders. Nothing here ever downloads."""

from __future__ import annotations

from geode.data.assets import ASSETS, Asset, asset_status
from geode.data.loaders import load_fashion_mnist, load_mnist, shakespeare_text

__all__ = ["ASSETS", "Asset", "asset_status", "load_fashion_mnist", "load_mnist", "shakespeare_text"]
