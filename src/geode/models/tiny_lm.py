r"""Tiny causal language models: random-init Hugging Face Llama / GPT-2 configurations trained in-process.

No pretrained weights of a small LM ship offline (except SmolLM2, see :func:`geode.models.load_smollm2`),
so experiments that need "a pretrained model adapted to a new task" build one here: a
``LlamaForCausalLM`` (or ``GPT2LMHeadModel``) of a few hundred thousand parameters, initialised from a
seed and trained for a few hundred Adam steps on a synthetic task of :mod:`geode.models.tasks`.
:func:`pretrained_tiny_lm` memoises the trained weights per process, so a test session or a claim
pays for pretraining once.

Training minimises the answer-token cross-entropy of :mod:`geode.models.tasks` with AdamW,

.. math::

    \theta_{t+1} = \operatorname{AdamW}\big(\theta_t, \nabla_\theta \mathcal{L}(\theta_t; \text{fresh batch}_t)\big),

drawing a fresh batch every step (the tasks are infinite), with gradient-norm clipping at 1.
The architecture needs ``transformers`` (the ``llm`` extra).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_choice, check_int, check_positive, check_real
from geode.models.tasks import SyntheticTask, TaskBatch, answer_accuracy

__all__ = ["build_tiny_lm", "evaluate_lm", "last_token_features", "lm_loss", "pretrained_tiny_lm", "train_lm"]


def _require_transformers() -> Any:
    try:
        import transformers
    except ImportError:  # pragma: no cover - the llm extra is installed in the dev environment
        raise ImportError("tiny language models need transformers: pip install 'geode[llm]'") from None
    return transformers


def build_tiny_lm(
    vocab_size: int,
    *,
    arch: str = "llama",
    d_model: int = 128,
    n_layers: int = 2,
    n_heads: int = 4,
    n_kv_heads: int | None = 2,
    d_ff: int | None = None,
    max_positions: int = 128,
    seed: int = 0,
) -> Any:
    """A randomly initialised Hugging Face causal LM, deterministic given ``seed``.

    Parameters
    ----------
    vocab_size : int
        Vocabulary size (e.g. ``task.vocab_size``).
    arch : {"llama", "gpt2"}
        ``LlamaForCausalLM`` (RMSNorm, rotary positions, SwiGLU MLP, grouped-query attention; its
        projections are ``nn.Linear``) or ``GPT2LMHeadModel`` (its projections are ``Conv1D``).
    d_model, n_layers, n_heads : int
        Width, depth and attention heads (``d_model`` divisible by ``n_heads``).
    n_kv_heads : int or None
        Key/value heads of the Llama attention (must divide ``n_heads``); None means ``n_heads``.
    d_ff : int, optional
        MLP width; default ``2 * d_model`` for Llama (SwiGLU), ``4 * d_model`` for GPT-2.
    max_positions : int
        Longest sequence.
    seed : int
        Seed of the initialisation (the global torch RNG is left untouched).

    Returns
    -------
    transformers.PreTrainedModel
        In train mode, float32, on the CPU.
    """
    tf = _require_transformers()
    import torch

    vocab_size = check_int("vocab_size", vocab_size, low=2)
    check_choice("arch", arch, ("llama", "gpt2"))
    d_model = check_int("d_model", d_model, low=1)
    n_layers = check_int("n_layers", n_layers, low=1)
    n_heads = check_int("n_heads", n_heads, low=1)
    if d_model % n_heads:
        raise ValueError(f"d_model must be divisible by n_heads; got d_model={d_model}, n_heads={n_heads}")
    kv = n_heads if n_kv_heads is None else check_int("n_kv_heads", n_kv_heads, low=1)
    if n_heads % kv:
        raise ValueError(f"n_kv_heads must divide n_heads; got n_kv_heads={kv}, n_heads={n_heads}")
    max_positions = check_int("max_positions", max_positions, low=2)
    seed = check_int("seed", seed, low=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if arch == "llama":
            ff = 2 * d_model if d_ff is None else check_int("d_ff", d_ff, low=1)
            cfg = tf.LlamaConfig(
                vocab_size=vocab_size,
                hidden_size=d_model,
                intermediate_size=ff,
                num_hidden_layers=n_layers,
                num_attention_heads=n_heads,
                num_key_value_heads=kv,
                max_position_embeddings=max_positions,
                tie_word_embeddings=False,
                pad_token_id=0,
                bos_token_id=1,
                eos_token_id=3,
            )
            model = tf.LlamaForCausalLM(cfg)
        else:
            ff = 4 * d_model if d_ff is None else check_int("d_ff", d_ff, low=1)
            cfg = tf.GPT2Config(
                vocab_size=vocab_size,
                n_embd=d_model,
                n_layer=n_layers,
                n_head=n_heads,
                n_inner=ff,
                n_positions=max_positions,
                resid_pdrop=0.0,
                embd_pdrop=0.0,
                attn_pdrop=0.0,
                bos_token_id=1,
                eos_token_id=3,
            )
            model = tf.GPT2LMHeadModel(cfg)
    model.train()
    return model


def lm_loss(model: Any, batch: TaskBatch) -> Any:
    """Mean next-token cross-entropy over the batch's answer positions (labels ``!= -100``)."""
    return model(input_ids=batch.input_ids, labels=batch.labels).loss


def evaluate_lm(model: Any, batch: TaskBatch) -> dict[str, float]:
    """Answer loss and exact-answer accuracy (teacher forcing) of ``model`` on ``batch``, without gradients."""
    import torch

    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model(input_ids=batch.input_ids, labels=batch.labels)
    model.train(was_training)
    return {"loss": float(out.loss), "accuracy": answer_accuracy(out.logits, batch.labels)}


def train_lm(
    model: Any,
    task: SyntheticTask,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    seed: int | np.random.Generator = 0,
    parameters: Iterable[Any] | None = None,
    optimizer: Any = None,
    clip_norm: float | None = 1.0,
    callback: Callable[[int, float], None] | None = None,
) -> np.ndarray:
    """Train ``model`` on fresh batches of ``task``; returns the training loss of every step.

    Parameters
    ----------
    model : transformers causal LM
    task : SyntheticTask
    steps, batch_size : int
    lr, weight_decay : float
        AdamW settings (ignored when ``optimizer`` is given).
    seed : int or numpy Generator
        Seeds the batches.
    parameters : iterable of Parameter, optional
        What AdamW trains; default every parameter with ``requires_grad``.
    optimizer : torch.optim.Optimizer, optional
        Use this optimiser instead of AdamW.
    clip_norm : float or None
        Clip the gradient norm of the trained parameters (None: no clipping).
    callback : callable, optional
        ``callback(step, loss)`` after every step (e.g. to project parameters or log).
    """
    import torch

    steps = check_int("steps", steps, low=0)
    batch_size = check_int("batch_size", batch_size, low=1)
    check_positive("lr", lr)
    check_real("weight_decay", weight_decay, low=0.0)
    if clip_norm is not None:
        check_positive("clip_norm", clip_norm)
    rng = as_generator(seed)
    params = [p for p in (model.parameters() if parameters is None else parameters) if p.requires_grad]
    if not params:
        raise ValueError("parameters: nothing to train (no parameter requires grad)")
    opt = optimizer if optimizer is not None else torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    model.train()
    losses = np.empty(steps)
    for step in range(steps):
        batch = task.sample(batch_size, rng)
        loss = lm_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, clip_norm)
        opt.step()
        losses[step] = float(loss.detach())
        if callback is not None:
            callback(step, losses[step])
    return losses


_PRETRAINED: dict[tuple[Any, ...], tuple[dict[str, Any], dict[str, Any]]] = {}


def pretrained_tiny_lm(
    task: SyntheticTask,
    *,
    steps: int = 400,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    vocab_size: int | None = None,
    **build_kwargs: Any,
) -> Any:
    """A tiny LM built by :func:`build_tiny_lm` and trained on ``task``; memoised per process.

    The first call with given arguments trains (``steps`` AdamW steps); later calls return a fresh
    copy of the same weights, so callers may modify what they get.

    Parameters
    ----------
    task : SyntheticTask
        The pretraining task ("task A").
    steps, batch_size, lr : training settings
    seed : int
        Seeds both the initialisation and the batches.
    vocab_size : int, optional
        Default ``task.vocab_size``; pass a larger one when the model will later see other tasks.
    **build_kwargs
        Forwarded to :func:`build_tiny_lm` (``d_model``, ``n_layers``, ...).
    """
    if not isinstance(task, SyntheticTask):
        raise TypeError(f"task must be a SyntheticTask; got {type(task).__name__}")
    seed = check_int("seed", seed, low=0)
    vocab = task.vocab_size if vocab_size is None else check_int("vocab_size", vocab_size, low=task.vocab_size)
    key = (task, steps, batch_size, lr, seed, vocab, tuple(sorted(build_kwargs.items())))
    if key not in _PRETRAINED:
        model = build_tiny_lm(vocab, seed=seed, **build_kwargs)
        train_lm(model, task, steps=steps, batch_size=batch_size, lr=lr, seed=seed + 1)
        _PRETRAINED[key] = ({k: v.detach().clone() for k, v in model.state_dict().items()}, dict(build_kwargs))
    state, kwargs = _PRETRAINED[key]
    model = build_tiny_lm(vocab, seed=seed, **kwargs)
    model.load_state_dict(copy.deepcopy(state))
    return model


def last_token_features(model: Any, input_ids: Any, *, position: int = -1) -> Any:
    """Final hidden state (after the last norm) at ``position`` of each sequence: shape (n, d_model).

    This is the deterministic feature map of a Bayesian last layer on a causal LM: one backbone
    pass, the LM head unused.
    """
    out = model.base_model(input_ids=input_ids)
    return out.last_hidden_state[:, position, :]
