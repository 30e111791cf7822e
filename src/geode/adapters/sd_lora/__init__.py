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

Examples
--------
Few-shot adaptation of a CLIP-like model (any module with ``image_tokens``, ``encode_image``, ``encode_text``,
``logit_scale``, ``d`` and ``grid``; here a small untrained ``TinyCLIP``, in practice a pre-trained one such
as ``pretrain_clip``'s) on 4 shots of the 8 novel classes of a procedural world:

>>> import torch
>>> from geode.adapters import RelationWorld, SDLoRA, TinyCLIP, fit
>>> _ = torch.manual_seed(0)
>>> world = RelationWorld()
>>> clip = TinyCLIP(vocab_size=world.vocab_size, d=32, layers=1, embed_dim=16)
>>> images, labels = world.sample(world.novel, per_class=4, seed=0)
>>> captions = world.captions(world.novel)
>>> images.shape, captions.shape
(torch.Size([32, 16, 16]), torch.Size([8, 3]))
>>> model = SDLoRA(clip, r=2, generator=torch.Generator().manual_seed(0))
>>> losses = fit(model, images, labels, captions, steps=15, lr=1e-2)
>>> losses[-1] < losses[0]
True

Inference is one student pass plus the Tip-Adapter cache; the graph teacher is training-only, and the LoRA
updates merge into the frozen weights:

>>> model.build_cache(images, labels, n_classes=8)
>>> logits = model.predict(images, captions, alpha=1.0, beta=5.0)
>>> logits.shape
torch.Size([32, 8])
>>> model.drop_teacher()
>>> torch.equal(model.predict(images, captions, alpha=1.0, beta=5.0), logits)
True
>>> model.merge()
>>> torch.allclose(model.predict(images, captions, alpha=1.0, beta=5.0), logits, atol=1e-4)
True
"""

from __future__ import annotations

from geode.adapters.sd_lora.clip import RelationWorld, TinyCLIP, pretrain_clip
from geode.adapters.sd_lora.sd_lora import GraphTeacher, SDLoRA, cache_logits, fit

__all__ = ["GraphTeacher", "RelationWorld", "SDLoRA", "TinyCLIP", "cache_logits", "fit", "pretrain_clip"]
