"""geode: the methods of 57 NeurIPS 2026 papers as reusable components, each with a claim check.

Importing ``geode`` is cheap: it imports nothing heavy (no torch, no matplotlib). Use the
subpackages directly, e.g. ``from geode.core import stable_rank`` or ``geode.catalog.papers()``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
