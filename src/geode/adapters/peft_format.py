r"""Hugging Face PEFT's LoRA checkpoint format: save geode adapters for ``peft``, load ``peft`` checkpoints.

A checkpoint is a folder with ``adapter_config.json`` (``peft_type = "LORA"``, ``r``, ``lora_alpha``,
``target_modules``, per-module ``rank_pattern``/``alpha_pattern``, ``use_rslora``, ``use_dora``) and
``adapter_model.safetensors`` with keys ``base_model.model.<module>.lora_A.weight`` (r, in),
``...lora_B.weight`` (out, r) and, for DoRA, ``...lora_magnitude_vector`` (out,). The weight update is
:math:`\Delta W = s B A` with :math:`s = \alpha / r` (or :math:`\alpha/\sqrt{r}` with rsLoRA).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from geode.adapters.lora import AdapterLinear, DoRALinear, LoRALinear, _linear_names, _require_adapters

__all__ = ["load_peft_lora", "save_peft_lora"]

_PEFT_PREFIX = "base_model.model."


def save_peft_lora(
    model: nn.Module,
    path: str | Path,
    *,
    base_model_name_or_path: str | None = None,
) -> Path:
    r"""Save the adapters of ``model`` in Hugging Face PEFT's LoRA format; returns the folder.

    Writes ``adapter_config.json`` (``peft_type = "LORA"``; ``r`` and ``lora_alpha``, per-module
    ``rank_pattern``/``alpha_pattern`` when they differ) and ``adapter_model.safetensors`` with keys
    ``base_model.model.<module>.lora_A.weight`` / ``lora_B.weight`` (and ``lora_magnitude_vector``
    for DoRA). Any adapter with :meth:`AdapterLinear.lora_factors` is exported as
    :math:`\Delta W = s B A`; ``peft.PeftModel.from_pretrained(base, path)`` then reproduces the
    model's outputs. The adapters must be unmerged.

    Parameters
    ----------
    model : nn.Module
        A model with adapters (all LoRA-shaped, or all DoRA).
    path : str or Path
        Folder to write (created if needed).
    base_model_name_or_path : str, optional
        Recorded in the config, as PEFT does.
    """
    from safetensors.torch import save_file

    mods = _require_adapters(model)
    merged = [n for n, m in mods.items() if m.merged]
    if merged:
        raise RuntimeError(f"unmerge the adapters before saving; merged: {merged}")
    dora = {n for n, m in mods.items() if isinstance(m, DoRALinear)}
    if dora and len(dora) != len(mods):
        raise ValueError("cannot save DoRA and non-DoRA adapters in one PEFT checkpoint")
    tensors: dict[str, torch.Tensor] = {}
    ranks: dict[str, int] = {}
    alphas: dict[str, float] = {}
    rslora = set()
    for name, m in mods.items():
        if isinstance(m, DoRALinear):
            a, b, s = m.lora_A, m.lora_B, m.scaling
            tensors[f"{_PEFT_PREFIX}{name}.lora_magnitude_vector"] = m.lora_magnitude_vector.detach()
            rslora.add(m.use_rslora)
        else:
            a, b, s = m.lora_factors()
            rslora.add(bool(getattr(m, "use_rslora", False)))
        r = a.shape[0]
        if a.shape != (r, m.in_features) or b.shape != (m.out_features, r):
            raise ValueError(f"{name}: lora_factors must have shapes (r, in) and (out, r); got {a.shape}, {b.shape}")
        tensors[f"{_PEFT_PREFIX}{name}.lora_A.weight"] = a.detach().contiguous()
        tensors[f"{_PEFT_PREFIX}{name}.lora_B.weight"] = b.detach().contiguous()
        ranks[name] = int(r)
        alphas[name] = float(s) * (math.sqrt(r) if (getattr(m, "use_rslora", False)) else r)
    if len(rslora) > 1:
        raise ValueError("cannot save rsLoRA and plain-scaling adapters in one PEFT checkpoint")
    r0 = max(set(ranks.values()), key=list(ranks.values()).count)
    a0 = max(set(alphas.values()), key=list(alphas.values()).count)
    config = {
        "peft_type": "LORA",
        "task_type": None,
        "base_model_name_or_path": base_model_name_or_path,
        "r": r0,
        "lora_alpha": a0,
        "target_modules": sorted(mods),
        "rank_pattern": {n: r for n, r in ranks.items() if r != r0},
        "alpha_pattern": {n: a for n, a in alphas.items() if a != a0},
        "lora_dropout": 0.0,
        "bias": "none",
        "fan_in_fan_out": False,
        "use_rslora": bool(rslora.pop()),
        "use_dora": bool(dora),
        "init_lora_weights": True,
        "inference_mode": True,
        "modules_to_save": None,
    }
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    (out / "adapter_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    save_file(tensors, str(out / "adapter_model.safetensors"))
    return out


def load_peft_lora(model: nn.Module, path: str | Path, *, factory: type[LoRALinear] | None = None) -> list[str]:
    """Load a PEFT LoRA checkpoint into ``model`` (in place), as :class:`LoRALinear` adapters.

    The inverse of :func:`save_peft_lora`, and it reads checkpoints written by ``peft`` itself
    (``PeftModel.save_pretrained``). Modules named in the checkpoint are wrapped by ``factory``
    (default :class:`LoRALinear`, or :class:`DoRALinear` when ``use_dora``; pass e.g. ``SDSLoRALinear``
    to continue training with another LoRA-shaped rule) with the checkpoint's rank and alpha, and
    their weights are loaded.

    Returns
    -------
    list of str
        Names of the adapted modules.

    Raises
    ------
    ValueError
        A tensor's shape differs from the model's layer (the message names the key and both
        shapes), a module named in the checkpoint is missing or not an ``nn.Linear``, or the
        checkpoint is not a LoRA one.
    """
    from safetensors.torch import load_file

    folder = Path(path)
    cfg_file, w_file = folder / "adapter_config.json", folder / "adapter_model.safetensors"
    if not cfg_file.is_file() or not w_file.is_file():
        raise FileNotFoundError(f"{folder} must hold adapter_config.json and adapter_model.safetensors")
    cfg = json.loads(cfg_file.read_text(encoding="utf-8"))
    if cfg.get("peft_type") != "LORA":
        raise ValueError(f"not a LoRA checkpoint: peft_type={cfg.get('peft_type')!r}")
    if cfg.get("fan_in_fan_out"):
        raise ValueError("fan_in_fan_out checkpoints (GPT-2 Conv1D) are not supported; use peft directly")
    tensors = load_file(str(w_file))
    groups: dict[str, dict[str, torch.Tensor]] = {}
    for key, t in tensors.items():
        if not key.startswith(_PEFT_PREFIX):
            raise ValueError(f"unexpected key {key!r}: PEFT LoRA keys start with {_PEFT_PREFIX!r}")
        body = key[len(_PEFT_PREFIX) :]
        for suffix in (".lora_A.weight", ".lora_B.weight", ".lora_magnitude_vector"):
            if body.endswith(suffix):
                groups.setdefault(body[: -len(suffix)], {})[suffix.split(".")[1]] = t
                break
        else:
            raise ValueError(f"unexpected key {key!r} in a LoRA checkpoint")
    use_dora = bool(cfg.get("use_dora"))
    cls = factory if factory is not None else (DoRALinear if use_dora else LoRALinear)
    modules = dict(model.named_modules())
    for name, g in groups.items():
        if "lora_A" not in g or "lora_B" not in g:
            raise ValueError(f"{name}: the checkpoint needs both lora_A and lora_B")
        mod = modules.get(name)
        if isinstance(mod, AdapterLinear):
            raise ValueError(f"{name} already has an adapter; load into a model without adapters")
        if not isinstance(mod, nn.Linear):
            linears = _linear_names(model)
            raise ValueError(f"checkpoint module {name!r} is not an nn.Linear of the model; available: {linears}")
        r = g["lora_A"].shape[0]
        want = {
            "lora_A": (r, mod.in_features),
            "lora_B": (mod.out_features, r),
            "lora_magnitude_vector": (mod.out_features,),
        }
        for k, t in g.items():
            if tuple(t.shape) != want[k]:
                raise ValueError(
                    f"shape mismatch for {_PEFT_PREFIX}{name}.{k}: checkpoint has {tuple(t.shape)}, the model's "
                    f"Linear({mod.in_features}, {mod.out_features}) needs {want[k]}"
                )
    rank_pattern, alpha_pattern = cfg.get("rank_pattern") or {}, cfg.get("alpha_pattern") or {}

    def pattern(d: dict[str, Any], name: str, default: Any) -> Any:
        for k, v in d.items():
            if name == k or name.endswith("." + k) or re.fullmatch(k, name):
                return v
        return default

    done = []
    for name, g in groups.items():
        r = g["lora_A"].shape[0]
        if pattern(rank_pattern, name, cfg.get("r", r)) != r:
            raise ValueError(f"{name}: rank {r} in the weights differs from the config's rank")
        alpha = float(pattern(alpha_pattern, name, cfg.get("lora_alpha", r)))
        parent_name, _, leaf = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        base = getattr(parent, leaf)
        new = cls(base, r, alpha, use_rslora=bool(cfg.get("use_rslora", False)))
        with torch.no_grad():
            new.lora_A.copy_(g["lora_A"])
            new.lora_B.copy_(g["lora_B"])
            if "lora_magnitude_vector" in g:
                if not hasattr(new, "lora_magnitude_vector"):
                    raise ValueError(f"{name}: a DoRA checkpoint needs a DoRA factory; got {cls.__name__}")
                new.lora_magnitude_vector.copy_(g["lora_magnitude_vector"])
        setattr(parent, leaf, new)
        done.append(name)
    return done


def refused_layer_types(method: str) -> dict[type, type]:
    """For a PEFT custom-module config of ``method``: every non-``nn.Linear`` layer type, mapped to a raising class.

    ``LoraConfig._register_custom_module`` replaces only the layer types it is given; a targeted GPT-2 ``Conv1D``,
    embedding or convolution would silently become a plain LoRA layer. Registering these classes makes
    ``get_peft_model`` raise a ``TypeError`` that names ``method`` instead.
    """

    class Refused:
        def __init__(self, target: Any, adapter_name: str, config: Any = None, **kwargs: Any) -> None:
            base = target.get_base_layer() if hasattr(target, "get_base_layer") else target
            raise TypeError(
                f"{method} supports nn.Linear targets only; target_modules matched a {type(base).__name__} "
                f"(GPT-2-style Conv1D, embedding or convolution) that would silently become a plain LoRA layer. "
                "Narrow target_modules, use a plain peft.LoraConfig for those layers, or a model with nn.Linear "
                "projections."
            )

    Refused.__name__ = Refused.__qualname__ = f"Refused{''.join(c for c in method if c.isalnum())}Layer"
    out: dict[type, type] = {t: Refused for t in (nn.Embedding, nn.Conv1d, nn.Conv2d, nn.Conv3d)}
    try:
        from transformers.pytorch_utils import Conv1D
    except ImportError:  # pragma: no cover - transformers is in the llm extra with peft
        return out
    out[Conv1D] = Refused
    return out
