"""ByteDistill (placeholder docstring)."""

from geode.llm.bytedistill.loss import blda_from_byte_probs, blda_loss, uld_loss
from geode.llm.bytedistill.projection import (
    BytePath,
    ByteVocab,
    aligned_chunks,
    byte_distributions,
    byte_level_bytes,
    tokenizer_vocab_bytes,
)

__all__ = [
    "BytePath",
    "ByteVocab",
    "aligned_chunks",
    "blda_from_byte_probs",
    "blda_loss",
    "byte_distributions",
    "byte_level_bytes",
    "tokenizer_vocab_bytes",
    "uld_loss",
]
