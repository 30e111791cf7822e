r"""Adapters: parameter-efficient fine-tuning layers that wrap ``nn.Linear``, and the field's shared tools.

The paper folders live below (``geode.adapters.sds_lora``, ``geode.adapters.polar_vbll``,
``geode.adapters.sd_lora``, ``geode.adapters.sama``); what several of them reuse sits here
(:mod:`geode.adapters.lora`): the adapter base class, LoRA and DoRA as baselines, :func:`inject_adapters` to wrap
the matching linear layers of any model, merging and unmerging, and export to / import from Hugging Face PEFT's
LoRA checkpoint format (:mod:`geode.adapters.peft_format`).

Two ways to use an adapter. (1) geode's own layers, on any ``nn.Module``: ``inject_adapters(model, targets,
factory)``, train with any ``torch.optim`` optimiser, then ``merge_adapters`` / ``remove_adapters``, or
``save_peft_lora`` for a plain PEFT LoRA checkpoint (every LoRA-shaped adapter exports exactly: SDS-LoRA, PoLAR
as :math:`B = X\Theta, A = Y^\top`, SaMA as its rank-:math:`pck` LoRA form). (2) Inside Hugging Face PEFT:
``get_peft_model(model, sds_lora_config(...))`` or ``get_peft_model(model, polar_config(...))`` (PoLAR trains with
:class:`LandingAdamW`; its PEFT checkpoints hold a third tensor, ``lora_S``, and reload with
``config=polar_config(from_checkpoint=path)``). ``examples/adapters.py`` does both on SmolLM2.

Field tools (:mod:`geode.adapters.lora`, :mod:`geode.adapters.peft_format`)::

    from geode.adapters import (AdapterLinear, DoRALinear, LoRALinear, adapter_modules, check_rank,
                                inject_adapters, load_peft_lora, merge_adapters, remove_adapters, save_peft_lora,
                                trainable_parameters, unmerge_adapters)

- ``AdapterLinear``: base class of an adapter around a frozen ``nn.Linear`` (``delta_weight``, merge, unmerge).
- ``LoRALinear``, ``DoRALinear``: the LoRA and DoRA baselines.
- ``inject_adapters``: wrap the ``nn.Linear`` modules whose names match ``target_modules`` (PEFT's matching rule).
- ``adapter_modules``, ``trainable_parameters``: the adapters of a model; the parameters that train.
- ``merge_adapters``, ``unmerge_adapters``, ``remove_adapters``: fold updates in and out; put the base layers back.
- ``save_peft_lora``, ``load_peft_lora``: write / read PEFT's LoRA checkpoint format.
- ``check_rank``: validate a rank against a layer's shape.

Papers and their names
----------------------
Each paper's public names, importable from this package (``geode show <slug>`` prints the same with an example).

``polar-vbll``: PoLAR-VBLL, a variational Bayesian last layer on polar-decomposed low-rank adapters::

    from geode.adapters import (LandingAdamW, PoLARLinear, VBLLClassifier, class_features,
                                expected_calibration_error, landing_field, negative_log_likelihood,
                                orthogonality_error, polar_adapters, polar_config, polar_parameter_groups,
                                predict_proba, retract_, stiefel_parameters, train_map, train_vbll_alternating)

- ``PoLARLinear``: the PoLAR adapter :math:`\Delta W = s X \Theta Y^\top` with orthonormal frames :math:`X, Y`.
- ``polar_config``: PoLAR's ``peft.LoraConfig`` for ``get_peft_model`` (``lora_A`` = Yᵀ, ``lora_B`` = X,
  ``lora_S`` = Θ).
- ``LandingAdamW``: AdamW whose frame groups step along the landing field (keeps :math:`X, Y` near the manifold).
- ``polar_parameter_groups``: the optimiser groups (column frames, row frames, everything else).
- ``landing_field``: the landing field of a frame and its gradient.
- ``retract_``: put frames exactly back on the Stiefel manifold (QR or polar factor).
- ``orthogonality_error``: :math:`\lVert X^\top X - I\rVert_F` of a frame.
- ``stiefel_parameters``, ``polar_adapters``: a model's frame parameters; its PoLAR layers by name.
- ``VBLLClassifier``: the variational Bayesian last layer (Gaussian weights, ELBO loss, MC or probit predictive).
- ``class_features``: the last real token's final hidden state of a causal LM (right padding supported).
- ``train_map``, ``train_vbll_alternating``: MAP training; PoLAR-VBLL's alternating optimisation.
- ``predict_proba``: class probabilities from one backbone pass.
- ``expected_calibration_error``, ``negative_log_likelihood``: the calibration metrics.

``sama``: SaMA, a generalised-Kronecker (perfect-shuffle) adapter whose rank grows quadratically with its budget::

    from geode.adapters import (SaMAConfig, SaMALinear, effective_rank, inject_sama, jacobian_nullity,
                                lora_nullity_theory, sama_delta, sama_nullity_theory)

- ``SaMALinear``: the SaMA adapter around a frozen ``nn.Linear`` (blocks ``blocks_in`` x ``blocks_out``, inner
  width ``rank``).
- ``SaMAConfig``, ``inject_sama``: the PEFT-style configuration, and wrapping a model's layers with it.
- ``sama_delta``: :math:`\Delta W` from the blocks.
- ``jacobian_nullity``: the number of flat directions of any adapter's parameterisation.
- ``sama_nullity_theory``, ``lora_nullity_theory``: their closed forms (:math:`pck^2`, :math:`r^2`).
- ``effective_rank``: the Roy-Vetterli effective rank of a matrix.

``sd-lora``: SD-LoRA, a training-only graph teacher distilled into CLIP-LoRA::

    from geode.adapters import GraphTeacher, RelationWorld, SDLoRA, TinyCLIP, cache_logits, fit, pretrain_clip

- ``SDLoRA``: LoRA student + graph teacher + Tip-Adapter cache around a CLIP-like model (``predict``, ``merge``).
- ``GraphTeacher``: the heterogeneous graph teacher over patch tokens and class captions (training only).
- ``fit``: train an ``SDLoRA`` on a support set.
- ``cache_logits``: Tip-Adapter's training-free cache term.
- ``TinyCLIP``, ``pretrain_clip``: a small CLIP and its contrastive pre-training.
- ``RelationWorld``: procedural two-glyph images with three-word captions (the claim check's data).

``sds-lora``: SDS-LoRA, LoRA whose factors' gradients go through orthonormal bases only::

    from geode.adapters import (BASES, SDSDualLoRALinear, SDSLoRALinear, orthonormal_basis, sds_lora_config,
                                sds_lora_delta, sds_lora_gradients)

- ``SDSLoRALinear``: the SDS-LoRA layer (LoRA's forward, :math:`s Q_B^\top G`, :math:`s G Q_A` backward).
- ``sds_lora_config``: SDS-LoRA's ``peft.LoraConfig`` for ``get_peft_model`` (checkpoints are plain LoRA).
- ``SDSDualLoRALinear``: the dual-branch reading of the paper's Equation 8.
- ``sds_lora_delta``: the adapter output with the SDS backward (a functional form).
- ``sds_lora_gradients``: the closed-form gradients from a full gradient :math:`G`.
- ``orthonormal_basis``: the polar or sign-fixed QR basis of a matrix's columns; ``BASES``: the two choices.
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
