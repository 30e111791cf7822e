"""Reusable networks: tiny models built in-process and the offline pretrained LM loader."""

from __future__ import annotations

from geode.models.pretrained import load_smollm2, prepare_smollm2_cache, smollm2_cache_dir, smollm2_gguf_path

__all__ = ["load_smollm2", "prepare_smollm2_cache", "smollm2_cache_dir", "smollm2_gguf_path"]
