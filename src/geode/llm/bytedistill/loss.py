r"""The BLDA loss (byte-level distribution alignment) and the ULD baseline (universal logit distillation).

**BLDA.** With :math:`P_T(\cdot \mid b_{<j})` and :math:`P_S(\cdot \mid b_{<j})` the next-byte distributions
of teacher and student projected along their own observed paths over the same bytes
(:func:`~geode.llm.bytedistill.projection.byte_distributions`),

.. math::

    \mathcal{L}_{\mathrm{BLDA}} = \frac{1}{|M|} \sum_{j \in M}
        \mathrm{KL}\big(P_T(\cdot \mid b_{<j}) \,\|\, P_S(\cdot \mid b_{<j})\big)
        = \frac{1}{|M|} \sum_{j \in M} \sum_{c=0}^{255} P_T(c) \,(\log P_T(c) - \log P_S(c)),

over the bytes :math:`M` selected by ``byte_mask`` (all bytes by default; the answer bytes in the claim
check), the teacher held fixed. ``reduction="chunk"`` instead averages over the aligned decoded chunks
(:func:`~geode.llm.bytedistill.projection.aligned_chunks`) the KL summed inside each chunk. A temperature
:math:`\tau` divides both models' token logits before the projection (and the loss is multiplied by
:math:`\tau^2`, as in Hinton et al.).

**ULD** (Boizard et al. 2024, "Towards cross-tokenizer distillation: the universal logit distillation loss
for LLMs"): the teacher's and student's token distributions are sorted in decreasing order, the shorter
padded with zeros, and compared by the :math:`\ell_1` distance (the Wasserstein-1 distance under their
uniform-cost assumption),

.. math::

    \mathcal{L}_{\mathrm{ULD}} = \frac{1}{n} \sum_{i=1}^{n} \sum_{r}
        \big| p^{\downarrow}_{S,i}(r) - p^{\downarrow}_{T,i}(r) \big|,

on rows aligned by position: the :math:`i`-th answer token of the student with the :math:`i`-th answer token
of the teacher, truncated to the shorter (their alignment; TRL GOLD's ``uld_token_merge_strategy`` variants
are not implemented).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from geode.core.validation import check_choice, check_positive, check_tensor
from geode.llm.bytedistill.projection import BytePath, ByteVocab, aligned_chunks, byte_distributions

__all__ = ["blda_from_byte_probs", "blda_loss", "uld_loss"]


def blda_from_byte_probs(teacher_probs: Any, student_log_probs: Any, *, mask: Any = None, weights: Any = None) -> Any:
    r"""BLDA from precomputed byte distributions: the (weighted) mean over rows of KL(teacher || student).

    Parameters
    ----------
    teacher_probs : torch.Tensor (N, 256)
        Teacher next-byte probabilities (treated as constants).
    student_log_probs : torch.Tensor (N, 256)
        Student next-byte log-probabilities.
    mask : torch.BoolTensor (N,), optional
        Rows that count.
    weights : torch.Tensor (N,), optional
        Row weights (normalised to sum to one over the counted rows).

    A training loss run at every step: types and shapes are checked, values are not (a NaN propagates like torch's
    own losses).
    """
    import torch

    check_tensor("teacher_probs", teacher_probs, finite=False, floating=True)
    check_tensor("student_log_probs", student_log_probs, finite=False, floating=True)
    if teacher_probs.shape != student_log_probs.shape or teacher_probs.ndim != 2 or teacher_probs.shape[1] != 256:
        raise ValueError(
            f"teacher_probs and student_log_probs must both be (N, 256); got {tuple(teacher_probs.shape)} and "
            f"{tuple(student_log_probs.shape)}"
        )
    t = teacher_probs.detach().to(student_log_probs.dtype)
    tlog = torch.where(t > 0, torch.log(t.clamp_min(1e-300)), torch.zeros_like(t))
    kl = (t * (tlog - student_log_probs)).sum(-1)
    w = torch.ones_like(kl) if weights is None else weights.to(kl.dtype)
    if mask is not None:
        if mask.shape != kl.shape:
            raise ValueError(f"mask must have shape ({kl.shape[0]},); got {tuple(mask.shape)}")
        w = w * mask.to(kl.dtype)
    tot = w.sum()
    if float(tot) <= 0:
        raise ValueError("mask selects no byte")
    return (kl * w).sum() / tot


def _as_list(paths: BytePath | Sequence[BytePath]) -> list[BytePath]:
    return [paths] if isinstance(paths, BytePath) else list(paths)


def blda_loss(
    teacher_logits: Any,
    teacher_paths: BytePath | Sequence[BytePath],
    teacher_vocab: ByteVocab,
    student_logits: Any,
    student_paths: BytePath | Sequence[BytePath],
    student_vocab: ByteVocab,
    *,
    byte_mask: Any = None,
    temperature: float = 1.0,
    reduction: str = "mean",
    utf8_errors: str = "merge",
) -> Any:
    r"""Byte-level distribution alignment between a teacher and a student with different tokenizers.

    Parameters
    ----------
    teacher_logits, student_logits : torch.Tensor (B, T, V_teacher) and (B, T', V_student)
        Next-token logits along each model's own observed path (``logits[i, k]`` predicts token ``k``).
    teacher_paths, student_paths : list of BytePath
        The observed paths (:meth:`ByteVocab.path`); pair ``i`` must decode to the same bytes.
    teacher_vocab, student_vocab : ByteVocab
    byte_mask : sequence of bool arrays or torch.BoolTensor (sum N_i,), optional
        Which bytes count (e.g. the answer); default all.
    temperature : float
        Distillation temperature :math:`\tau` (the loss is scaled by :math:`\tau^2`).
    reduction : {"mean", "chunk"}
        ``"mean"``: mean KL per counted byte. ``"chunk"``: mean over aligned chunks (with at least one counted
        byte) of the KL summed over the chunk's counted bytes.
    utf8_errors : {"merge", "strict"}
        How :func:`aligned_chunks` treats chunk boundaries that are not valid UTF-8 (only used by
        ``reduction="chunk"`` and for checking with ``"strict"``).

    A training loss run at every step: types and shapes are checked, values are not (a NaN propagates like torch's
    own losses).

    Returns
    -------
    torch.Tensor (scalar), differentiable in ``student_logits``.
    """
    import torch

    tau = check_positive("temperature", temperature)
    check_choice("reduction", reduction, ("mean", "chunk"))
    check_choice("utf8_errors", utf8_errors, ("merge", "strict"))
    tp, sp = _as_list(teacher_paths), _as_list(student_paths)
    if len(tp) != len(sp):
        raise ValueError(f"teacher_paths and student_paths must pair up; got {len(tp)} and {len(sp)}")
    for i, (a, b) in enumerate(zip(tp, sp)):
        if a.data != b.data:
            raise ValueError(f"pair {i}: teacher and student paths decode to different bytes")
    check_tensor("teacher_logits", teacher_logits, finite=False, floating=True)
    check_tensor("student_logits", student_logits, finite=False, floating=True)
    try:
        with torch.no_grad():
            t = byte_distributions(teacher_logits.detach() / tau, tp, teacher_vocab)
    except ValueError as exc:
        raise ValueError(f"teacher_logits, teacher_paths, teacher_vocab: {exc}") from None
    try:
        s = byte_distributions(student_logits / tau, sp, student_vocab, log=True)
    except ValueError as exc:
        raise ValueError(f"student_logits, student_paths, student_vocab: {exc}") from None
    n = sum(p.n_bytes for p in sp)
    if byte_mask is None:
        mask = torch.ones(n, dtype=torch.bool)
    elif isinstance(byte_mask, torch.Tensor):
        mask = byte_mask.to(torch.bool).reshape(-1)
    else:
        mask = torch.from_numpy(np.concatenate([np.asarray(m, dtype=bool) for m in byte_mask]))
    if mask.shape != (n,):
        raise ValueError(f"byte_mask must select among the {n} bytes of the batch; got {tuple(mask.shape)}")
    weights = None
    need_chunks = reduction == "chunk" or utf8_errors == "strict"
    if need_chunks:
        w = np.zeros(n)
        off = 0
        m_np = mask.numpy()
        n_chunks = 0
        for a, b in zip(tp, sp):
            for st, en in aligned_chunks(a, b, errors=utf8_errors):
                if m_np[off + st : off + en].any():
                    w[off + st : off + en] = 1.0
                    n_chunks += 1
            off += a.n_bytes
        if reduction == "chunk":
            weights = torch.from_numpy(w)
            loss = blda_from_byte_probs(t, s, mask=mask, weights=weights)
            return loss * (float((weights * mask).sum()) / max(n_chunks, 1)) * tau**2
    return blda_from_byte_probs(t, s, mask=mask) * tau**2


def uld_loss(teacher_probs: Any, student_logits: Any, *, temperature: float = 1.0) -> Any:
    r"""Universal logit distillation: mean over aligned rows of the :math:`\ell_1` distance of sorted probabilities.

    Parameters
    ----------
    teacher_probs : torch.Tensor (n, V_teacher)
        Teacher token probabilities on the aligned rows (constants), at temperature :math:`\tau` already.
    student_logits : torch.Tensor (n, V_student)
        Student logits on the same rows; divided by ``temperature`` before the softmax.
    temperature : float

    Returns
    -------
    torch.Tensor (scalar)

    A training loss run at every step: types and shapes are checked, values are not (a NaN propagates like torch's
    own losses).
    """
    import torch

    tau = check_positive("temperature", temperature)
    check_tensor("teacher_probs", teacher_probs, finite=False, nonempty=False, floating=True)
    check_tensor("student_logits", student_logits, finite=False, nonempty=False, floating=True)
    if teacher_probs.ndim != 2 or student_logits.ndim != 2 or teacher_probs.shape[0] != student_logits.shape[0]:
        raise ValueError(
            f"teacher_probs (n, V_t) and student_logits (n, V_s) must have the same rows; got "
            f"{tuple(teacher_probs.shape)} and {tuple(student_logits.shape)}"
        )
    if teacher_probs.shape[0] == 0:
        raise ValueError("uld_loss needs at least one aligned row")
    ps = torch.softmax(student_logits / tau, dim=-1)
    pt = teacher_probs.detach().to(ps.dtype)
    v = max(ps.shape[1], pt.shape[1])
    ps_sorted = torch.sort(ps, dim=-1, descending=True).values
    pt_sorted = torch.sort(pt, dim=-1, descending=True).values
    ps_sorted = torch.nn.functional.pad(ps_sorted, (0, v - ps.shape[1]))
    pt_sorted = torch.nn.functional.pad(pt_sorted, (0, v - pt.shape[1]))
    return (ps_sorted - pt_sorted).abs().sum(-1).mean()
