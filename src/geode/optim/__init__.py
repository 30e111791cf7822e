"""Optimisation: memory-efficient fine-tuning of quantised networks with zeroth-order optimisers.

The paper folders live below (``geode.optim.hozo``); what several of them can reuse sits here:

- :mod:`geode.optim.quant`: a weight-only quantiser (symmetric round-to-nearest int4/int8 per group of
  input columns, int4 codes packed two per byte, dequantised on the fly) whose per-group scales are the
  only trainable parameters (:class:`QuantLinear`, :func:`quantize_model`, :func:`scale_parameters`);
- :mod:`geode.optim.zo`: zeroth-order optimisers as ``torch.optim.Optimizer`` subclasses with
  ``step(closure)`` and the MeZO seed trick (O(1) state): the base :class:`ZerothOrderOptimizer`,
  :class:`MeZO` (Malladi et al., 2023) and :class:`QZO` (Shang et al., 2025: MeZO on the scales with
  directional derivative clipping and a projection onto the orthant), and :func:`optimizer_state_bytes`.

Papers and their names
----------------------
Every name below is importable from the field package and from its paper's package.

``hozo`` (``geode.optim.hozo``)::

    from geode.optim import EuclideanMetric, HoZO, LogMetric, OrthantMetric, get_metric

- ``HoZO``: the optimiser, a ``torch.optim.Optimizer``: ``step(closure)``, the closure returns the loss (no backward);
- ``LogMetric``: HoZO's complete metric on the positive orthant (closed-form exponential map);
- ``EuclideanMetric``: the flat metric (HoZO with it is MeZO), for ablations;
- ``OrthantMetric``: the base class of orthant metrics;
- ``get_metric``: a metric from its name (``"log"``, ``"euclidean"``).
"""

from __future__ import annotations

from geode.optim import hozo as _hozo
from geode.optim.hozo import *  # noqa: F403
from geode.optim.quant import (
    QuantLinear,
    dequantize_rtn,
    pack_int4,
    quantize_model,
    quantize_rtn,
    scale_parameters,
    unpack_int4,
)
from geode.optim.zo import QZO, MeZO, ZerothOrderOptimizer, check_loss, optimizer_state_bytes, step_seed

__all__ = [
    "QZO",
    "MeZO",
    "QuantLinear",
    "ZerothOrderOptimizer",
    "check_loss",
    "dequantize_rtn",
    "optimizer_state_bytes",
    "pack_int4",
    "quantize_model",
    "quantize_rtn",
    "scale_parameters",
    "step_seed",
    "unpack_int4",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_hozo.__all__]
