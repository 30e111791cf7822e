"""Adapters: parameter-efficient fine-tuning layers that wrap ``nn.Linear``, and the field's shared tools.

The paper folders live below (``geode.adapters.sds_lora``, ``geode.adapters.polar_vbll``,
``geode.adapters.sd_lora``); what several of them reuse sits here (:mod:`geode.adapters.lora`): the
adapter base class, LoRA and DoRA as
baselines, :func:`inject_adapters` to wrap the matching linear layers of any model, merging and
unmerging, and export to / import from Hugging Face PEFT's LoRA checkpoint format.
"""

from __future__ import annotations

from geode.adapters import polar_vbll as _polar_vbll
from geode.adapters import sama as _sama
from geode.adapters import sd_lora as _sd_lora
from geode.adapters import sds_lora as _sds_lora
from geode.adapters.lora import (
    AdapterLinear,
    DoRALinear,
    LoRALinear,
    adapter_modules,
    check_rank,
    inject_adapters,
    merge_adapters,
    remove_adapters,
    trainable_parameters,
    unmerge_adapters,
)
from geode.adapters.peft_format import load_peft_lora, save_peft_lora
from geode.adapters.polar_vbll import *  # noqa: F403
from geode.adapters.sama import *  # noqa: F403
from geode.adapters.sd_lora import *  # noqa: F403
from geode.adapters.sds_lora import *  # noqa: F403

__all__ = [
    "AdapterLinear",
    "DoRALinear",
    "LoRALinear",
    "adapter_modules",
    "check_rank",
    "inject_adapters",
    "load_peft_lora",
    "merge_adapters",
    "remove_adapters",
    "save_peft_lora",
    "trainable_parameters",
    "unmerge_adapters",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_polar_vbll.__all__, *_sama.__all__, *_sd_lora.__all__, *_sds_lora.__all__]
