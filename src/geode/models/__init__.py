"""Reusable networks: tiny models built in-process and the offline pretrained loaders (SmolLM2, MiniLM)."""

from __future__ import annotations

from geode.models.mlp import make_mlp
from geode.models.pretrained import (
    load_smollm2,
    minilm_available,
    minilm_embed,
    prepare_smollm2_cache,
    smollm2_cache_dir,
    smollm2_gguf_path,
)
from geode.models.tasks import (
    Copy,
    KeywordClassification,
    ModularArithmetic,
    Reversal,
    SyntheticTask,
    TaskBatch,
    TokenMappedTask,
    answer_accuracy,
    tokenizer_token_map,
)
from geode.models.tiny_lm import (
    build_tiny_lm,
    evaluate_lm,
    last_token_features,
    lm_loss,
    pretrained_tiny_lm,
    train_lm,
)

__all__ = [
    "Copy",
    "KeywordClassification",
    "ModularArithmetic",
    "Reversal",
    "SyntheticTask",
    "TaskBatch",
    "TokenMappedTask",
    "answer_accuracy",
    "build_tiny_lm",
    "evaluate_lm",
    "last_token_features",
    "lm_loss",
    "load_smollm2",
    "make_mlp",
    "minilm_available",
    "minilm_embed",
    "prepare_smollm2_cache",
    "pretrained_tiny_lm",
    "smollm2_cache_dir",
    "smollm2_gguf_path",
    "tokenizer_token_map",
    "train_lm",
]
