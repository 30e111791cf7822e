"""PDE surrogate pre-training on 3D geometries (placeholder docstring)."""

from __future__ import annotations
