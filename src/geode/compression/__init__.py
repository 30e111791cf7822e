r"""Compression: weight quantisation, activation compression and low-rank inference control.

The paper folders live below (``geode.compression.sphquant``, ``geode.compression.stac_r``,
``geode.compression.moe_quant``, ``geode.compression.sara``); what
several of them reuse sits here
(:mod:`geode.compression.quant`): round-to-nearest per group and GPTQ (our own implementation) as the
field's quantisation baselines, a bit-packed quantised linear layer, calibration Hessians from forward
hooks and in-place layer replacement. The integer packing and the min-max grid they use live in
:mod:`geode.core.quant` (shared with :mod:`geode.optim.quant`).

Papers and their names
----------------------
Each paper's public names, importable from this package (``geode show <slug>`` prints the same with an example).

``moe-quant``: MoE quantisation with routing replay and load-aware low-rank compensation::

    from geode.compression import (E2M1_VALUES, MoELM, MoELayer, QuantAdapterLinear, allocate_ranks,
                                   expert_error_spectra, expert_loads, load_weighted_error, mxfp4_moe,
                                   mxfp4_quantize, record_routes, routing_replay_qat, set_replay, topk_agreement)

- ``MoELM``, ``MoELayer``: a tiny top-k MoE language model and its MoE feed-forward (routes can be replayed).
- ``mxfp4_quantize``: OCP MXFP4 fake quantisation; ``E2M1_VALUES``: the non-negative FP4 E2M1 values.
- ``mxfp4_moe``: a copy of a MoELM with MXFP4 experts, each matrix a ``QuantAdapterLinear`` (frozen quantised
  weight + low-rank adapter initialised from the quantisation error).
- ``expert_loads``, ``expert_error_spectra``, ``allocate_ranks``: load-aware rank allocation (greedy, optimal).
- ``load_weighted_error``: the load-weighted compression error the allocation minimises.
- ``record_routes``, ``set_replay``, ``topk_agreement``: record, force and compare expert selections.
- ``routing_replay_qat``: fine-tune the adapters with the full-precision routes replayed (or plain QAT).

``sara``: SARA, step-adaptive SVD rank for diffusion inference::

    from geode.compression import (DigitDenoiser, SVDLinear, SaraOnline, apply_sara, ddim_sample, ddpm_alphas,
                                   lrae_table, sara_dp, set_block_ranks)

- ``SVDLinear``: a linear layer runnable at any rank (``set_rank``, ``macs``), from any ``nn.Linear``.
- ``DigitDenoiser``: the residual-MLP epsilon-prediction denoiser of the claim; ``apply_sara`` makes its block
  linears ``SVDLinear``; ``set_block_ranks`` sets one rank per block.
- ``ddim_sample``: deterministic DDIM with a fixed rank schedule, a per-step controller or step caching (+ MACs);
  ``ddpm_alphas``: the linear DDPM schedule.
- ``lrae_table``: low-rank approximation error of every (step, block, rank); ``sara_dp``: SARA-DP, the exact
  multiple-choice knapsack under a MACs budget.
- ``SaraOnline``: SARA-Online, per-step ranks from the spectrum of the previous output.

``sphquant``: SPHQuant, rotation-free spherical weight-only quantisation::

    from geode.compression import (SPHCodebook, SPHCodes, SPHLinear, angles_to_vectors, sph_bits_per_weight,
                                   sph_decode, sph_encode, spherical_kmeans, sphquant_model, vectors_to_angles)

- ``sphquant_model``: quantise a model's named linear layers in place with one shared codebook (k-means, then
  fine-tuning on calibration Hessians).
- ``SPHLinear``: the packed layer (signs, direction and radius codes, group scales); a batch of up to 4 rows
  multiplies through codeword tables without decoding the weight, larger batches dequantise on the fly.
- ``sph_encode``, ``sph_decode``, ``SPHCodes``: the format's encoder, decoder and discrete codes.
- ``SPHCodebook``, ``spherical_kmeans``: the codebook of positive unit 8-D directions and its k-means.
- ``angles_to_vectors``, ``vectors_to_angles``: the hyperspherical parameterisation of the codewords.
- ``sph_bits_per_weight``: the bit budget :math:`(8 + k + b_\rho)/8 + 16/\text{group\_size}`.

``stac-r``: STAC-R, subspace-tracked compression of the activations saved for backward::

    from geode.compression import (ActivationCompressor, StacrLinear, bridge_cosine_bound, saved_bytes,
                                   stacr_unwrap, stacr_wrap)

- ``stacr_wrap``, ``stacr_unwrap``: wrap (undo) a model's linear layers (``nn.Linear`` or HF ``Conv1D``) in place.
- ``StacrLinear``: one wrapped layer; ``ActivationCompressor``: its tracked basis and compression rule.
- ``saved_bytes``: context manager counting the bytes autograd saves for backward.
- ``bridge_cosine_bound``: the gradient bridge, a lower bound on the weight-gradient cosine.

Field-level baselines (:mod:`geode.compression.quant`)::

    from geode.compression import (PackedLinear, calibration_hessians, gptq_quantize, linear_names, output_error,
                                   pad_columns, replace_linears, rtn_quantize)

- ``rtn_quantize``, ``gptq_quantize``: round-to-nearest and GPTQ per group; ``PackedLinear``: their packed layer.
- ``calibration_hessians``: :math:`H = \tfrac{2}{n}X^\top X` of named linear layers from forward hooks;
  ``linear_names`` lists them, ``replace_linears`` swaps them, ``output_error`` is the relative output error,
  ``pad_columns`` pads a weight to a multiple of the group size.
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
