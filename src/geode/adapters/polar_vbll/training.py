r"""Training an adapted backbone with a MAP head or a VBLL head (alternating), and one-pass prediction.

The classifier is :math:`p(y \mid x) = \text{head}(\phi_\theta(x))` where :math:`\phi_\theta(x)` is the final
hidden state of the (adapter-wrapped) causal LM at the last real position (:func:`class_features`; every
function here takes the ``attention_mask`` of a right-padded batch).

- **MAP** (:func:`train_map`): adapter and a linear head trained jointly on the cross-entropy, AdamW.
- **VBLL** (:func:`train_vbll_alternating`), the alternating scheme of PoLAR-VBLL:

  .. math::

      \text{repeat } R \text{ times:}\quad
      (\bar W, S, \sigma) \leftarrow K' \text{ AdamW steps on } \mathcal{L}_{\text{VBLL}}(\cdot\,; \phi_\theta(X))
      \text{ (features fixed)}; \quad
      \theta \leftarrow K \text{ steps on } \mathcal{L}_{\text{VBLL}}(\phi_\theta(\cdot)) \text{ (} q \text{ fixed)},

  then a last head phase, so the posterior matches the final features. Head phases use the
  features of the whole training set computed once (no backbone gradients), so they are cheap.

Adapter steps use :class:`LandingAdamW`: PoLAR's frames follow the landing field, everything else
(:math:`\Theta`, LoRA's factors, the MAP head) plain AdamW. Prediction (:func:`predict_proba`) runs
the backbone once per input; the VBLL head's predictive is a Monte Carlo average over logit draws.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from geode.adapters.polar_vbll.polar import LandingAdamW, polar_parameter_groups
from geode.adapters.polar_vbll.vbll import VBLLClassifier
from geode.core.random import as_generator
from geode.core.validation import check_int, check_positive, check_real

__all__ = ["class_features", "predict_proba", "train_map", "train_vbll_alternating"]


def class_features(
    model: nn.Module, input_ids: torch.Tensor, *, attention_mask: torch.Tensor | None = None, chunk: int = 256
) -> torch.Tensor:
    """Final hidden state at the last real position, shape (n, d_model); gradients flow unless under ``no_grad``.

    ``model`` is a Hugging Face causal LM (its ``base_model`` returns ``last_hidden_state``). Without
    ``attention_mask`` every sequence is taken to fill its row and the feature is the state at the last
    position. With a right-padded batch pass its ``attention_mask`` (1 on real tokens, 0 on padding, shape
    ``(n, seq_len)``): it goes to the model and the feature of row ``i`` is the state at its last real token
    (the last position where the mask is 1), so padding changes nothing. Left padding is not supported by
    this rule (the model's position ids would shift); pad on the right.
    """
    if not isinstance(input_ids, torch.Tensor):
        raise TypeError(f"input_ids must be a torch tensor (n, seq_len); got {type(input_ids).__name__}")
    if input_ids.ndim != 2:
        raise ValueError(f"input_ids must have shape (n, seq_len); got {tuple(input_ids.shape)}")
    check_int("chunk", chunk, low=1)
    if attention_mask is not None:
        if not isinstance(attention_mask, torch.Tensor):
            raise TypeError(f"attention_mask must be a torch tensor or None; got {type(attention_mask).__name__}")
        if attention_mask.shape != input_ids.shape:
            raise ValueError(
                f"attention_mask must have the shape of input_ids {tuple(input_ids.shape)}; "
                f"got {tuple(attention_mask.shape)}"
            )
        mask = attention_mask.bool()
        if not bool(mask.any(1).all()):
            raise ValueError("attention_mask has a row without any real token")
        # index of the last 1 in each row
        last = mask.shape[1] - 1 - mask.flip(1).to(torch.int8).argmax(1)
        if bool((mask[:, 1:] & ~mask[:, :-1]).any()):  # a real token after padding
            raise ValueError("attention_mask must be right-padded: each row's real tokens first, then padding")
    outs = []
    for i in range(0, len(input_ids), chunk):
        if attention_mask is None:
            outs.append(model.base_model(input_ids=input_ids[i : i + chunk]).last_hidden_state[:, -1, :])
        else:
            h = model.base_model(
                input_ids=input_ids[i : i + chunk], attention_mask=attention_mask[i : i + chunk]
            ).last_hidden_state
            outs.append(h[torch.arange(len(h)), last[i : i + chunk]])
    return torch.cat(outs) if len(outs) > 1 else outs[0]


def _check_data(inputs: torch.Tensor, labels: torch.Tensor, attention_mask: torch.Tensor | None = None) -> None:
    for name, t in (("inputs", inputs), ("labels", labels)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor; got {type(t).__name__}")
    if attention_mask is not None and not isinstance(attention_mask, torch.Tensor):
        raise TypeError(f"attention_mask must be a torch tensor or None; got {type(attention_mask).__name__}")
    if inputs.ndim != 2 or labels.ndim != 1 or len(inputs) != len(labels):
        raise ValueError(
            f"inputs (n, seq_len) and labels (n,) must match; got {tuple(inputs.shape)}, {tuple(labels.shape)}"
        )
    if attention_mask is not None and attention_mask.shape != inputs.shape:
        raise ValueError(
            f"attention_mask must have the shape of inputs {tuple(inputs.shape)}; got {tuple(attention_mask.shape)}"
        )


def _rows(mask: torch.Tensor | None, idx: torch.Tensor) -> torch.Tensor | None:
    return None if mask is None else mask[idx]


def _adapter_optimizer(
    model: nn.Module, lr: float, landing_lambda: float, weight_decay: float, extra: list[nn.Parameter] | None = None
) -> LandingAdamW:
    groups = polar_parameter_groups(model, lr=lr, landing_lambda=landing_lambda, weight_decay=weight_decay)
    if extra:
        groups.append({"params": extra, "lr": lr, "weight_decay": weight_decay})
    return LandingAdamW(groups, lr=lr)


def train_map(
    model: nn.Module,
    head: nn.Linear,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    *,
    steps: int = 150,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 1e-2,
    landing_lambda: float = 1.0,
    seed: int = 0,
    attention_mask: torch.Tensor | None = None,
) -> np.ndarray:
    """Train adapter and linear head jointly on the cross-entropy (MAP); returns the loss per step.

    ``model`` must already hold its adapters (only parameters with ``requires_grad`` train); the
    head is an ``nn.Linear(d_model, K)`` that is added to the optimiser here. ``attention_mask``: that of
    a right-padded ``inputs`` (see :func:`class_features`).
    """
    _check_data(inputs, labels, attention_mask)
    steps = check_int("steps", steps, low=1)
    batch_size = check_int("batch_size", batch_size, low=1)
    check_positive("lr", lr)
    check_real("weight_decay", weight_decay, low=0.0)
    check_real("landing_lambda", landing_lambda, low=0.0)
    head_params = list(head.parameters())
    body = [p for p in model.parameters() if p.requires_grad]
    if not body:
        raise ValueError("model has no trainable parameters (inject adapters first)")
    opt = _adapter_optimizer(model, lr, landing_lambda, weight_decay, extra=head_params)
    rng = as_generator(seed)
    n = len(labels)
    losses = np.empty(steps)
    model.train()
    for step in range(steps):
        idx = torch.from_numpy(rng.choice(n, size=min(batch_size, n), replace=False))
        logits = head(class_features(model, inputs[idx], attention_mask=_rows(attention_mask, idx)))
        loss = nn.functional.cross_entropy(logits, labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(body + head_params, 1.0)
        opt.step()
        losses[step] = float(loss.detach())
    return losses


def _head_phase(
    head: VBLLClassifier, opt: torch.optim.Optimizer, feats: torch.Tensor, labels: torch.Tensor, steps: int
) -> float:
    loss = torch.zeros(())
    for _ in range(steps):
        loss = head.loss(feats, labels, len(labels))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return float(loss.detach())


def train_vbll_alternating(
    model: nn.Module,
    head: VBLLClassifier,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    *,
    rounds: int = 5,
    backbone_steps: int = 30,
    head_steps: int = 100,
    batch_size: int = 64,
    lr: float = 3e-3,
    lr_head: float = 1e-2,
    weight_decay: float = 1e-2,
    landing_lambda: float = 1.0,
    seed: int = 0,
    attention_mask: torch.Tensor | None = None,
) -> dict[str, np.ndarray]:
    """PoLAR-VBLL's alternating optimisation (see the module docstring); returns the loss histories.

    Parameters
    ----------
    model : causal LM with adapters
    head : VBLLClassifier
    inputs, labels : training set, shapes (N, seq_len) and (N,)
    rounds : int
        Alternations :math:`R`; the backbone takes ``rounds * backbone_steps`` steps in all.
    backbone_steps, head_steps : int
        :math:`K` (adapter steps, minibatches of ``batch_size``, head frozen) and :math:`K'` (head steps
        on the full set of cached features, backbone frozen).
    lr, lr_head : float
        AdamW rates of the adapter and of the head.
    weight_decay : float
        On the adapter's non-Stiefel parameters (the head has its KL term instead).
    landing_lambda : float
    seed : int
    attention_mask : tensor, optional
        That of a right-padded ``inputs`` (see :func:`class_features`).

    Returns
    -------
    dict with ``backbone_loss`` (per adapter step) and ``head_loss`` (the last loss of each head phase).
    """
    _check_data(inputs, labels, attention_mask)
    rounds = check_int("rounds", rounds, low=1)
    backbone_steps = check_int("backbone_steps", backbone_steps, low=1)
    head_steps = check_int("head_steps", head_steps, low=1)
    batch_size = check_int("batch_size", batch_size, low=1)
    check_positive("lr", lr)
    check_positive("lr_head", lr_head)
    check_real("weight_decay", weight_decay, low=0.0)
    check_real("landing_lambda", landing_lambda, low=0.0)
    if not isinstance(head, VBLLClassifier):
        raise TypeError(f"head must be a VBLLClassifier; got {type(head).__name__}")
    body = [p for p in model.parameters() if p.requires_grad]
    if not body:
        raise ValueError("model has no trainable parameters (inject adapters first)")
    opt_body = _adapter_optimizer(model, lr, landing_lambda, weight_decay)
    opt_head = torch.optim.AdamW(head.parameters(), lr=lr_head, weight_decay=0.0)
    head_params = list(head.parameters())
    rng = as_generator(seed)
    n = len(labels)
    body_losses, head_losses = [], []

    def head_phase() -> None:
        model.eval()
        with torch.no_grad():
            feats = class_features(model, inputs, attention_mask=attention_mask)
        model.train()
        head_losses.append(_head_phase(head, opt_head, feats, labels, head_steps))

    for _ in range(rounds):
        head_phase()
        for p in head_params:
            p.requires_grad_(False)
        try:
            for _ in range(backbone_steps):
                idx = torch.from_numpy(rng.choice(n, size=min(batch_size, n), replace=False))
                loss = head.loss(
                    class_features(model, inputs[idx], attention_mask=_rows(attention_mask, idx)), labels[idx], n
                )
                opt_body.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(body, 1.0)
                opt_body.step()
                body_losses.append(float(loss.detach()))
        finally:  # an error in a backbone phase must not leave the head frozen
            for p in head_params:
                p.requires_grad_(True)
    head_phase()
    return {"backbone_loss": np.asarray(body_losses), "head_loss": np.asarray(head_losses)}


def predict_proba(
    model: nn.Module,
    head: nn.Module,
    inputs: torch.Tensor,
    *,
    n_samples: int = 256,
    generator: torch.Generator | None = None,
    attention_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Class probabilities from one backbone pass: softmax of a linear head, or a VBLL head's predictive.

    ``attention_mask``: that of a right-padded ``inputs`` (see :func:`class_features`).
    """
    was = model.training
    model.eval()
    with torch.no_grad():
        feats = class_features(model, inputs, attention_mask=attention_mask)
        if isinstance(head, VBLLClassifier):
            probs = head.predictive(feats, n_samples=n_samples, generator=generator)
        else:
            probs = torch.softmax(head(feats), dim=-1)
    model.train(was)
    return probs
