r"""PoLAR inside Hugging Face PEFT, through LoRA's custom-module hook (imports ``peft``).

``LoraConfig._register_custom_module({nn.Linear: PoLARPeftLinear})`` (what
:func:`~geode.adapters.polar_vbll.polar_config` does) makes ``get_peft_model`` build this layer for every targeted
``nn.Linear``. It is a ``peft.tuners.lora.layer.Linear`` with one more adapter module, in the layout of the PoLAR
authors' PEFT layer: ``lora_A`` holds :math:`Y^\top` (r, in) with orthonormal rows, ``lora_B`` holds :math:`X`
(out, r) with orthonormal columns, and ``lora_S`` holds the free scale matrix :math:`\Theta` (r, r), so that
:math:`\Delta W = s\, X \Theta Y^\top` with :math:`s = \alpha / r`. The frames are flagged for
:class:`~geode.adapters.polar_vbll.LandingAdamW` (``lora_A.weight.stiefel = "rows"``,
``lora_B.weight.stiefel = True``). Merging, unmerging, ``merge_and_unload`` and ``save_pretrained`` are PEFT's,
through :meth:`PoLARPeftLinear.get_delta_weight`; a checkpoint holds three tensors per layer (``lora_A``,
``lora_S``, ``lora_B``) and records ``init_lora_weights = "polar"``, which a plain ``LoraConfig`` refuses
(it would otherwise read :math:`X Y^\top` as the update).
"""

from __future__ import annotations

from typing import Any

import torch
from peft.tuners.lora.layer import Linear as PeftLoraLinear
from torch import nn

from geode.core.linalg import sign_fixed_qr

__all__ = ["INIT", "PoLARPeftLinear"]

INIT = "polar"
"""The ``init_lora_weights`` value a PoLAR checkpoint records (PEFT's own LoRA layers refuse it)."""


class PoLARPeftLinear(PeftLoraLinear):
    r"""PEFT's LoRA ``Linear`` as PoLAR: :math:`y = W x + b + s\, B S A x`, :math:`A = Y^\top, S = \Theta, B = X`.

    Initialisation (any ``init_lora_weights`` other than ``False``): :math:`X, Y` orthonormal (sign-fixed QR of a
    Gaussian drawn from torch's global generator), :math:`\Theta = 0`, so the layer starts as its base layer.
    """

    adapter_layer_names = (*PeftLoraLinear.adapter_layer_names, "lora_S")

    def __init__(self, base_layer: Any, adapter_name: str, config: Any, **kwargs: Any) -> None:
        if getattr(config, "use_dora", False) or getattr(config, "lora_bias", False):
            raise ValueError("PoLAR supports plain LoRA settings only: set use_dora=False and lora_bias=False")
        if getattr(config, "fan_in_fan_out", False):
            raise ValueError("fan_in_fan_out (GPT-2 Conv1D) is not supported: PoLAR wraps nn.Linear only")
        super().__init__(base_layer, adapter_name, config=config, **kwargs)

    def update_layer(self, adapter_name: str, r: int, lora_alpha: int, config: Any, **kwargs: Any) -> None:
        if "lora_S" not in self._modules:
            self.lora_S = nn.ModuleDict({})
        self.lora_S[adapter_name] = nn.Linear(r, r, bias=False)
        super().update_layer(adapter_name, r, lora_alpha=lora_alpha, config=config, **kwargs)
        self.lora_A[adapter_name].weight.stiefel = "rows"
        self.lora_B[adapter_name].weight.stiefel = True

    def reset_lora_parameters(self, adapter_name: str, init_lora_weights: Any) -> None:
        if init_lora_weights is False or adapter_name not in self.lora_A:
            return
        a, b, s = self.lora_A[adapter_name].weight, self.lora_B[adapter_name].weight, self.lora_S[adapter_name].weight
        r = a.shape[0]
        with torch.no_grad():
            a.copy_(sign_fixed_qr(torch.randn(self.in_features, r, dtype=torch.float64))[0].T)
            b.copy_(sign_fixed_qr(torch.randn(self.out_features, r, dtype=torch.float64))[0])
            s.zero_()

    def get_delta_weight(self, adapter: str) -> torch.Tensor:
        r""":math:`\Delta W = s X \Theta Y^\top` (shape (out, in)), in float32 for half-precision weights on a CPU."""
        a, b, s = self.lora_A[adapter].weight, self.lora_B[adapter].weight, self.lora_S[adapter].weight
        dtype = b.dtype
        if b.device.type == "cpu" and dtype in (torch.float16, torch.bfloat16):
            a, b, s = a.float(), b.float(), s.float()
        return (self.scaling[adapter] * (b @ s @ a)).to(dtype)

    def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if kwargs.get("adapter_names") is not None:
            raise ValueError("PoLAR in PEFT does not support mixed-adapter batches (adapter_names=)")
        self._check_forward_args(x, *args, **kwargs)
        if self.disable_adapters:
            if self.merged:
                self.unmerge()
            return self.base_layer(x, *args, **kwargs)
        if self.merged:
            return self.base_layer(x, *args, **kwargs)
        result = self.base_layer(x, *args, **kwargs)
        out_dtype = result.dtype
        for name in self.active_adapters:
            if name not in self.lora_A:
                continue
            a, b, s = self.lora_A[name], self.lora_B[name], self.lora_S[name]
            xx = self._cast_input_dtype(x, a.weight.dtype)
            result = result + b(s(a(self.lora_dropout[name](xx)))) * self.scaling[name]
        return result.to(out_dtype)

    def __repr__(self) -> str:
        return "polar." + super().__repr__()
