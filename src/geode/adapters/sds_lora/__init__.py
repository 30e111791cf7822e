r"""SDS-LoRA: decoupling the singular values of LoRA's factors from the backward pass.

Paper: Oh, Baik, Lee, "SDS-LoRA: Overcoming Anisotropic Gradient Scaling in Low-Rank Adaptation"
(arXiv 2606.16454; NeurIPS 2026).

Claim, in one sentence: LoRA's convergence degrades with the condition number of its low-rank
factors while SDS-LoRA's does not, and SDS-LoRA narrows the gap to full fine-tuning.

The method: LoRA's update :math:`\Delta W = s B A` and forward are kept; in the backward pass the
full fine-tuning gradient :math:`G = \partial\mathcal{L}/\partial W` reaches the factors only through
orthonormal bases of their column spaces, :math:`\nabla_A = s Q_B^\top G` and :math:`\nabla_B = s G Q_A`
(:math:`B = Q_B R_B`, :math:`A^\top = Q_A R_A`), instead of LoRA's :math:`s R_B^\top Q_B^\top G` and
:math:`s G Q_A R_A`, whose triangular factors skew the gradient towards the dominant singular
directions. :class:`SDSLoRALinear` (same constructor and attributes as
:class:`geode.adapters.LoRALinear`) implements it with a custom autograd function that never forms
:math:`G`; :func:`sds_lora_config` plugs the same layer into Hugging Face PEFT through
``LoraConfig._register_custom_module``; checkpoints are plain LoRA checkpoints.

Details we inferred (no code or equations of the paper were available to us):

- The equations above are reconstructed from the abstract ("the full fine-tuning gradient
  backpropagates only through the orthonormal bases ... independent of their scales") and the
  predecessor methods (scaled GD / Riemannian preconditioned LoRA, whose :math:`(B^\top B)^{-1}` this is
  the square root of).
- The bases are the polar factors :math:`UV^\top` of :math:`B` and :math:`A^\top` (default
  ``basis="polar"``), recomputed at every backward outside autograd: with them the induced step on
  :math:`\Delta W` is always a descent direction (:math:`BQ_B^\top` and :math:`Q_A A` are positive
  semi-definite). The Q factors of thin QR with :math:`\operatorname{diag}(R) \ge 0`
  (:func:`geode.core.sign_fixed_qr`, ``basis="qr"``, the default before issue 20) are an option; they do
  not guarantee descent (a counterexample is tested). Without the sign fix, Householder QR flips column
  signs from step to step and training diverges (found in the project's pre-check).
- The gradient reaching the layer's input is the exact one, :math:`s A^\top B^\top g`: the paper's rule is
  about the factors only, and layers below should see the true gradient.
- Initialisation as LoRA (:math:`A` Kaiming-uniform, :math:`B = 0`); with :math:`B = 0` the basis of
  :math:`B` is arbitrary but deterministic (orthonormal either way), so :math:`A` moves at step 0 too.
- Two readings of the method, both implemented (the claim runs both; its verdict uses the dual-branch one):
  the *gradient reading* above (:class:`SDSLoRALinear`, our reconstruction from the abstract) and the
  *dual-branch reading* of the paper's Equation 8 that a third-party implementation follows
  (:class:`SDSDualLoRALinear`): :math:`\Delta W = s'(Q_B A + B Q_A^\top)` with frozen orthonormal bases and
  :math:`s' = (\alpha/r)\sqrt{r}`, reached after plain-LoRA warm-up steps (10) by an SVD
  re-parameterisation (:math:`A = \Sigma V^\top/(2s')`, :math:`B = U\Sigma/(2s')`: each branch carries half;
  the third party notes the paper's :math:`1/\sqrt{2s}` as a typo for :math:`1/(2s)`), bases refreshed by the
  same re-parameterisation on a phased schedule. Inferred by us in that reading (no code was read): the
  schedule (gaps of 10 steps doubling every 4 refreshes, :func:`~.experiment.refresh_schedule`), merging
  the rank-:math:`r` truncation residual of a refresh into the frozen base weight (so the function never
  jumps), and restarting the factors' Adam moments at each re-parameterisation.
- The claim check (:mod:`.claim`, revision 3): (a) the matrix-factorisation sweep of the notes (rank-r
  target of condition number :math:`\kappa`, singular values geometric from 1 to :math:`1/\kappa`, LoRA
  initialisation, GD and Adam, learning rate tuned per method and :math:`\kappa` on validation targets,
  steps to relative error :math:`10^{-2}` on test targets, fitted exponent of steps against :math:`\kappa`);
  (b) a tiny Llama (d = 128, 2 layers) pretrained on copying (task A) and adapted to reversal (task B)
  with r = 4, alpha = 8 on every projection, AdamW with cosine decay, every method's learning rate tuned
  on a validation batch; the "final loss" is the answer cross-entropy on held-out test sequences.

Examples
--------
The layer's forward is LoRA's; its factors' gradients are s Q_Bᵀ G and s G Q_A, where G = gᵀ x is the full
fine-tuning gradient of the weight (Q_B, Q_A: orthonormal bases of B and Aᵀ):

>>> import torch
>>> from torch import nn
>>> from geode.adapters import SDSLoRALinear, inject_adapters, remove_adapters, sds_lora_gradients
>>> _ = torch.manual_seed(0)
>>> layer = SDSLoRALinear(nn.Linear(8, 6), r=2, alpha=4)
>>> _ = nn.init.normal_(layer.lora_B)
>>> x, g = torch.randn(10, 8), torch.randn(10, 6)
>>> layer(x).backward(g)
>>> grad_a, grad_b = sds_lora_gradients(g.T @ x, layer.lora_A.detach(), layer.lora_B.detach(), layer.scaling)
>>> torch.allclose(layer.lora_A.grad, grad_a, atol=1e-5), torch.allclose(layer.lora_B.grad, grad_b, atol=1e-5)
(True, True)

In a model, with any ``torch.optim`` optimiser; merging gives back a plain model with the same outputs:

>>> model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
>>> inject_adapters(model, ["0", "2"], lambda lin: SDSLoRALinear(lin, r=4, alpha=8))
['0', '2']
>>> x, y = torch.randn(64, 16), torch.randn(64, 4)
>>> opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
>>> losses = []
>>> for _ in range(30):
...     opt.zero_grad()
...     loss = (model(x) - y).pow(2).mean()
...     loss.backward()
...     opt.step()
...     losses.append(loss.item())
>>> losses[-1] < 0.9 * losses[0]
True
>>> with torch.no_grad():
...     before = model(x)
...     plain = remove_adapters(model)  # merged into the base weights
...     torch.allclose(plain(x), before, atol=1e-5)
True

In Hugging Face PEFT: ``get_peft_model(model, sds_lora_config(r=8, lora_alpha=16, target_modules=[...]))``;
``examples/adapters.py`` trains, saves, loads and merges one.
"""

from __future__ import annotations

from geode.adapters.sds_lora.sds import (
    BASES,
    SDSDualLoRALinear,
    SDSLoRALinear,
    orthonormal_basis,
    sds_lora_config,
    sds_lora_delta,
    sds_lora_gradients,
)

__all__ = [
    "BASES",
    "SDSDualLoRALinear",
    "SDSLoRALinear",
    "orthonormal_basis",
    "sds_lora_config",
    "sds_lora_delta",
    "sds_lora_gradients",
]
