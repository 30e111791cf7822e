"""SD-LoRA: structural distillation of a training-only graph teacher into CLIP-LoRA (NeurIPS 2026).

Claim: a heterogeneous graph teacher over patch tokens, used only during training and distilled (implicit
distillation through the shared LoRA backbone + Prototype Predictive Alignment) into a CLIP-LoRA student
with a cache classifier, beats CLIP-LoRA in few-shot classification at identical inference cost.

Components: :class:`SDLoRA` (student + teacher + cache, merge/unmerge, PEFT export of the student through
:func:`geode.adapters.save_peft_lora`), :class:`GraphTeacher`, :func:`cache_logits`, :func:`fit`, and the
experiment's :class:`TinyCLIP` / :class:`RelationWorld` / :func:`pretrain_clip`.

Inferred details (the paper's text was not available; the authors' ``rgtmodel.py`` of
``MR-Sherif/SD-LoRA`` was read):

- one typed graph-attention layer (per-node-type Q/K/V and a learned bias per relation) instead of PyG's
  ``HGTConv`` (several layers, per-relation attention matrices) and without the authors' per-type
  transformer encoders before the graph layers;
- edges: patch-patch = 4-neighbour grid + ``knn`` cosine neighbours, global-local = CLS <-> patches,
  visual-text = all visual nodes <-> all class-caption nodes, self loops;
- pooling as the authors: CLS + LayerNorm(sum of the top-k salient patches); we gate the pooled patches by
  sigmoid(saliency) so the scorer is trained (the release's top-k sum gives it no gradient);
- Prototype Predictive Alignment = cross-entropy of s cos(P(g), p_c) with a predictor MLP P (the release's
  ``jepa_predictor``) and prototypes p_c = normalised means of detached student support embeddings,
  refreshed every 10 steps; lambda_1 = lambda_2 = 1;
- the cache classifier is Tip-Adapter's (training-free) on the student's embeddings, its alpha and beta
  selected on validation; CLIP-LoRA gets the same cache and the same selection (alpha = 0 is in the grid,
  so plain CLIP-LoRA is included);
- LoRA r = 2 on q/k/v of both encoders as CLIP-LoRA; AdamW, cosine decay; the teacher trains with the
  LoRA weights at the same learning rate.

Deliberate differences from the release: checkpoints and hyper-parameters are selected on a validation
split, never on test data (the release's README admits test-set selection).
"""

from __future__ import annotations

from geode.adapters.sd_lora.clip import RelationWorld, TinyCLIP, pretrain_clip
from geode.adapters.sd_lora.sd_lora import GraphTeacher, SDLoRA, cache_logits, fit

__all__ = ["GraphTeacher", "RelationWorld", "SDLoRA", "TinyCLIP", "cache_logits", "fit", "pretrain_clip"]
