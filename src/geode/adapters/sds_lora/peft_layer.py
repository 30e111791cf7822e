"""SDS-LoRA inside Hugging Face PEFT, through LoRA's custom-module hook (imports ``peft``).

``LoraConfig._register_custom_module({nn.Linear: SDSPeftLinear})`` makes ``get_peft_model`` build
this layer instead of PEFT's ``lora.Linear`` for every targeted ``nn.Linear``. It is a
``peft.tuners.lora.layer.Linear`` (same ``lora_A``/``lora_B`` modules, scaling, merging, saving) whose
forward routes the adapter path through :func:`~geode.adapters.sds_lora.sds_lora_delta`, so a
checkpoint is a plain LoRA checkpoint that any PEFT/vLLM LoRA loader reads.
"""

from __future__ import annotations

from typing import Any

import torch
from peft.tuners.lora.layer import Linear as PeftLoraLinear

from geode.adapters.sds_lora.sds import sds_lora_delta

__all__ = ["SDSPeftLinear", "SDSPeftLinearPolar", "refused_layer_types"]


class SDSPeftLinear(PeftLoraLinear):
    """PEFT's LoRA ``Linear`` with the SDS-LoRA backward and sign-fixed QR bases (``sds_basis = "qr"``)."""

    sds_basis = "qr"

    def __init__(self, base_layer: Any, adapter_name: str, config: Any, **kwargs: Any) -> None:
        if getattr(config, "use_dora", False) or getattr(config, "lora_bias", False):
            raise ValueError("SDS-LoRA supports plain LoRA only: set use_dora=False and lora_bias=False")
        super().__init__(base_layer, adapter_name, config=config, **kwargs)

    def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if self.disable_adapters or self.merged or kwargs.get("adapter_names") is not None or self.lora_variant:
            return super().forward(x, *args, **kwargs)
        self._check_forward_args(x, *args, **kwargs)
        result = self.base_layer(x, *args, **kwargs)
        out_dtype = result.dtype
        for name in self.active_adapters:
            if name not in self.lora_A:
                continue
            a, b = self.lora_A[name].weight, self.lora_B[name].weight
            xx = self._cast_input_dtype(x, a.dtype)
            result = result + sds_lora_delta(self.lora_dropout[name](xx), a, b, self.scaling[name], self.sds_basis)
        return result.to(out_dtype)

    def __repr__(self) -> str:
        return "sds_" + super().__repr__()


class SDSPeftLinearPolar(SDSPeftLinear):
    """:class:`SDSPeftLinear` with polar-factor bases (the default of ``sds_lora_config``)."""

    sds_basis = "polar"


def refused_layer_types() -> dict[type, type]:
    """Layer types that :func:`~geode.adapters.sds_lora.sds_lora_config` refuses (mapped to a raising class)."""
    from geode.adapters.peft_format import refused_layer_types as field_refused

    return field_refused("SDS-LoRA")
