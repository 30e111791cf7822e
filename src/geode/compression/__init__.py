"""Compression: weight quantisation, activation compression and low-rank inference control.

The paper folders live below (``geode.compression.sphquant``, ``geode.compression.stac_r``,
``geode.compression.moe_quant``, ``geode.compression.sara``); what
several of them reuse sits here
(:mod:`geode.compression.quant`): round-to-nearest per group and GPTQ (our own implementation) as the
field's quantisation baselines, a bit-packed quantised linear layer, calibration Hessians from forward
hooks and in-place layer replacement. The integer packing and the min-max grid they use live in
:mod:`geode.core.quant` (shared with :mod:`geode.optim.quant`).
"""

from __future__ import annotations

from geode.compression import moe_quant as _moe_quant
from geode.compression import sara as _sara
from geode.compression import sphquant as _sphquant
from geode.compression import stac_r as _stac_r
from geode.compression.moe_quant import *  # noqa: F403
from geode.compression.quant import (
    PackedLinear,
    calibration_hessians,
    gptq_quantize,
    linear_names,
    output_error,
    pad_columns,
    replace_linears,
    rtn_quantize,
)
from geode.compression.sara import *  # noqa: F403
from geode.compression.sphquant import *  # noqa: F403
from geode.compression.stac_r import *  # noqa: F403

__all__ = [
    "PackedLinear",
    "calibration_hessians",
    "gptq_quantize",
    "linear_names",
    "output_error",
    "pad_columns",
    "replace_linears",
    "rtn_quantize",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_moe_quant.__all__, *_sara.__all__, *_sphquant.__all__, *_stac_r.__all__]
