r"""The PoLAR-VBLL claim's experiment: few-shot classification with an adapted LM, calibration in and out of domain.

A causal LM (a tiny Llama pretrained on a source keyword-classification task, or SmolLM2) is adapted
to a few-shot target task (:class:`geode.models.tasks.KeywordClassification` with new classes and
keywords, ``shots`` examples per class) by four methods: {LoRA, PoLAR} x {MAP head, VBLL head}.
Each is evaluated on an in-distribution test set and on a covariate-shifted one (same classes and
keywords, fewer true-class keywords, more distractors, other noise symbols): accuracy, expected
calibration error (15 bins), negative log-likelihood, and the stable rank
:math:`\lVert \Delta W\rVert_F^2 / \lVert \Delta W \rVert_2^2` of the learned updates (mean over layers).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.adapters.lora import LoRALinear, adapter_modules, inject_adapters
from geode.adapters.polar_vbll.polar import PoLARLinear
from geode.adapters.polar_vbll.training import class_features, predict_proba, train_map, train_vbll_alternating
from geode.adapters.polar_vbll.vbll import VBLLClassifier, expected_calibration_error, negative_log_likelihood
from geode.core.linalg import stable_rank
from geode.core.random import as_generator, torch_generator
from geode.core.validation import check_choice, check_int

__all__ = ["METHODS", "classification_inputs", "few_shot_split", "run_method"]

METHODS = ("lora-map", "polar-map", "lora-vbll", "polar-vbll")
"""The four methods of the study: adapter-head."""


def classification_inputs(batch: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids without the answer token, class labels)`` of a classification :class:`TaskBatch`."""
    return batch.input_ids[:, :-1], batch.targets.long()


def few_shot_split(task: Any, shots: int, seed: int | np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Exactly ``shots`` examples per class of a classification task, in a seeded random order."""
    shots = check_int("shots", shots, low=1)
    rng = as_generator(seed)
    k = task.task.n_classes if hasattr(task, "task") else task.n_classes
    xs, ys = [], []
    counts = np.zeros(k, dtype=int)
    while counts.min() < shots:
        x, y = classification_inputs(task.sample(4 * shots * k, rng))
        for c in range(k):
            take = np.flatnonzero(y.numpy() == c)[: shots - counts[c]]
            xs.append(x[take])
            ys.append(y[take])
            counts[c] += len(take)
    x, y = torch.cat(xs), torch.cat(ys)
    perm = torch.from_numpy(rng.permutation(len(y)))
    return x[perm], y[perm]


def run_method(
    method: str,
    model: nn.Module,
    train: tuple[torch.Tensor, torch.Tensor],
    tests: dict[str, tuple[torch.Tensor, torch.Tensor]],
    *,
    n_classes: int,
    r: int = 8,
    alpha: float = 16.0,
    target_modules: Any = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    steps: int = 150,
    rounds: int = 5,
    head_steps: int = 100,
    batch_size: int = 64,
    lr: float = 3e-3,
    lr_head: float = 1e-2,
    weight_decay: float = 1e-2,
    landing_lambda: float = 1.0,
    vbll_kwargs: dict[str, Any] | None = None,
    n_samples: int = 256,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    keep_probs: bool = False,
) -> dict[str, Any]:
    """Adapt ``model`` (in place) with one of :data:`METHODS` and evaluate it on each test set.

    MAP methods take ``steps`` joint steps; VBLL methods ``rounds`` alternations of
    ``steps // rounds`` adapter steps and ``head_steps`` head steps (the same adapter budget).

    Returns
    -------
    dict
        ``<test>_acc``, ``<test>_ece``, ``<test>_nll`` for every test set, ``train_acc`` (on the
        training set), ``srank`` (mean stable rank of ΔW over the adapted layers), ``delta_fro`` (mean
        Frobenius norm of ΔW over the layers), ``orth_error`` (max Stiefel error of PoLAR's frames, 0
        for LoRA), ``train_s`` and ``predict_s`` (wall times); with ``keep_probs`` also ``probs``
        (test name -> predictive probabilities) and ``logits`` (test name -> MAP logits, MAP heads only).
    """
    check_choice("method", method, METHODS)
    adapter, head_kind = method.split("-")
    g = torch_generator(seed)
    if adapter == "lora":
        inject_adapters(model, target_modules, lambda lin: LoRALinear(lin, r, alpha, generator=g))
    else:
        inject_adapters(model, target_modules, lambda lin: PoLARLinear(lin, r, alpha, generator=g))
    x, y = train
    d = model.config.hidden_size
    t0 = time.perf_counter()
    if head_kind == "map":
        head: nn.Module = nn.Linear(d, n_classes)
        with torch.no_grad():
            bound = 1.0 / np.sqrt(d)
            head.weight.uniform_(-bound, bound, generator=g)
            head.bias.zero_()
        train_map(
            model,
            head,
            x,
            y,
            steps=steps,
            batch_size=batch_size,
            lr=lr,
            weight_decay=weight_decay,
            landing_lambda=landing_lambda,
            seed=seed,
        )
    else:
        head = VBLLClassifier(d, n_classes, generator=g, **(vbll_kwargs or {}))
        train_vbll_alternating(
            model,
            head,
            x,
            y,
            rounds=rounds,
            backbone_steps=max(steps // rounds, 1),
            head_steps=head_steps,
            batch_size=batch_size,
            lr=lr,
            lr_head=lr_head,
            weight_decay=weight_decay,
            landing_lambda=landing_lambda,
            seed=seed,
        )
    out: dict[str, Any] = {"train_s": time.perf_counter() - t0}
    t0 = time.perf_counter()
    kept: dict[str, torch.Tensor] = {}
    for name, (xt, yt) in tests.items():
        probs = predict_proba(model, head, xt, n_samples=n_samples, generator=torch_generator(seed + 17))
        out[f"{name}_acc"] = float((probs.argmax(1) == yt).double().mean())
        out[f"{name}_ece"] = expected_calibration_error(probs, yt, n_bins=15)
        out[f"{name}_nll"] = negative_log_likelihood(probs, yt)
        kept[name] = probs
    out["predict_s"] = time.perf_counter() - t0
    with torch.no_grad():
        p_train = predict_proba(model, head, x, n_samples=n_samples, generator=torch_generator(seed + 18))
    out["train_acc"] = float((p_train.argmax(1) == y).double().mean())
    if keep_probs:
        out["probs"] = kept
        if head_kind == "map":
            model.eval()
            with torch.no_grad():
                out["logits"] = {n: head(class_features(model, xt)) for n, (xt, _) in tests.items()}
    mods = adapter_modules(model)
    with torch.no_grad():
        out["srank"] = float(np.mean([float(stable_rank(m.delta_weight().double())) for m in mods.values()]))
        out["delta_fro"] = float(np.mean([float(torch.linalg.norm(m.delta_weight().double())) for m in mods.values()]))
    out["orth_error"] = max(
        (m.orthogonality_error() for m in mods.values() if isinstance(m, PoLARLinear)), default=0.0
    )
    if progress is not None:
        progress(f"{method} seed {seed}: " + ", ".join(f"{k}={v:.3f}" for k, v in out.items() if isinstance(v, float)))
    return out
