"""Claim check: RubiConv is exact on packed data, leak-free, and faster than padded-batch FFT and attention.

Protocol v2 (issue 19; the thresholds of issue 6 are unchanged, what decides them is not):

- no tuning step: every compared method computes the same exact convolution (or attention) with no
  hyper-parameter, so protocol section 1 has nothing to equalise;

- packings of ``total`` tokens drawn from the "mixed" document-length distribution (many short documents and
  a few long ones; :func:`~geode.layers.rubiconv.sample_document_lengths`, whose long tail is now capped at
  ``N/4`` so that a 16k row no longer holds only two documents), at 16k and 64k tokens in quick mode plus the
  "short" mix at 64k; ``D`` channels (64 in quick), a decaying random per-channel kernel as long as the pack.
  Each seed draws its own packings, so the 3 seeds are 3 packing seeds.
- **Exactness** (``exact``): max abs error of :func:`packed_long_conv` (float32) against the float64
  per-document reference, relative to the reference's max, <= 1e-4 at every point of every seed (``all``).
  Negative control: the single FFT over the whole pack (same total length, leaks), which must fail it.
- **No leakage** (``no_leak``): replacing one document by noise changes no other document's output
  (largest change <= 1e-6, every seed). Control: the single FFT's change, which must fail it.
- **Speed is a GPU claim** (protocol section 4; the paper's regime is kernel-launch-bound GPUs). The speed
  thresholds (>= 3x the padded batch, >= 5x document-masked attention, geometric 95% lower bound over seeds)
  are judged only when the run is on a GPU (``on_gpu``, ``full`` mode on a CUDA machine). On a CPU they are
  measured and reported, not judged, so a CPU verdict is at best ``partial`` (exact and leak-free). The
  report also gives the ratio to the per-document FFT loop (the strongest CPU baseline), forward and
  forward+backward, and to a plain FFT of the same total length.
- **Validity floor** (``mixed_regime``): the reference packing holds >= 10 documents in every seed (the
  claim is about packed *many* documents; a 2-document row is the "long" mix).
- ``reproduced``: exact, no_leak, on_gpu, fast_padded and fast_attention; ``partial``: exact and no_leak.

Old verdict (revision 1, one seed, CPU): ``reproduced``, carried by the padded batch, which does 23.6x more
FFT work by construction at the reference point, while RubiConv was at parity with the per-document loop
(0.97x forward). That verdict judged a GPU speed claim on a CPU; revision 2 does not.

In ``full`` mode on a CUDA device the run also times FlexAttention with a document mask (where
``torch.nn.attention.flex_attention`` exists) and FlashFFTConv on the padded batch is not attempted (it is
not installable here; the padded-batch FFT is its algorithmic equivalent).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **partial** (the
v2 harness read partial on the same runs). No idea ablation or learned-arm reference is declared yet (protocol v3;
the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register
from geode.core import speed_ratio

if TYPE_CHECKING:
    import torch

__all__ = ["SETTINGS", "run"]

SETTINGS: dict[str, dict] = {
    "smoke": {
        "totals": (1024, 4096),
        "reference": 4096,
        "channels": 16,
        "extra_mixes": ("short",),
        "repeats": 2,
        "budget_s": 1.0,
        "attention_budget": 1e10,
    },
    "quick": {
        "totals": (16384, 65536),
        "reference": 65536,
        "channels": 64,
        "extra_mixes": ("short",),
        "repeats": 3,
        "budget_s": 3.0,
        "attention_budget": 2e11,
    },
    "full": {
        "totals": (4096, 16384, 65536, 262144),
        "reference": 65536,
        "channels": 256,
        "extra_mixes": ("short", "long"),
        "repeats": 5,
        "budget_s": 60.0,
        "attention_budget": 1e15,
    },
}
"""Sizes per mode. ``repeats`` interleaved timings per comparison, fewer when a baseline's runs would exceed
``budget_s`` seconds (at least one); ``attention_budget`` caps the attention FLOPs (4 h sum_d n_d^2 / 2) timed
at a point other than the reference."""


def _kernel(channels: int, length: int, gen: torch.Generator) -> torch.Tensor:
    """Decaying random causal filters, time constants log-spaced from 16 to length/4, unit l2 norm."""
    import torch

    tau = torch.logspace(math.log10(16.0), math.log10(max(16.0, length / 4)), channels, dtype=torch.float64)
    t = torch.arange(length, dtype=torch.float64)
    k = torch.randn(channels, length, generator=gen, dtype=torch.float64) * torch.exp(-t[None, :] / tau[:, None])
    return (k / k.norm(dim=1, keepdim=True)).float()


def _ratio(ours, baseline, repeats: int, budget_s: float) -> tuple[dict[str, float], int]:
    """:func:`speed_ratio` with the repeats cut so that the baseline's runs take about ``budget_s`` seconds.

    One untimed call of each function first warms them up and measures the baseline's cost; a baseline slower
    than ``budget_s`` is timed once (its ratio to RubiConv is then far from any threshold).
    """
    ours()
    t0 = time.perf_counter()
    baseline()
    probe = time.perf_counter() - t0
    reps = max(1, min(repeats, int(budget_s / max(probe, 1e-9))))
    return speed_ratio(ours, baseline, repeats=reps, warmup=0), reps


def _rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return float((a.double() - ref).abs().max() / ref.abs().max())


def _measure(mix: str, total: int, cfg: dict, seed: int, device: torch.device, *, reference: bool) -> dict:
    import torch

    from geode.layers.attention import document_masked_attention
    from geode.layers.rubiconv.conv import (
        fft_size,
        packed_long_conv,
        padded_batch_conv,
        per_document_conv,
        plan_packed_conv,
        single_fft_conv,
    )
    from geode.layers.rubiconv.packing import cu_seqlens_from_lengths, sample_document_lengths

    rng = np.random.default_rng([seed, total, ["short", "mixed", "long"].index(mix)])
    lengths = sample_document_lengths(total, mix, rng)
    cu = cu_seqlens_from_lengths(lengths)
    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    d = cfg["channels"]
    x = torch.randn(total, d, generator=gen).to(device)
    k = _kernel(d, total, gen).to(device)
    heads = max(1, d // 64)
    q, kk, v = (torch.randn(total, heads, d // heads, generator=gen).to(device) for _ in range(3))

    y = packed_long_conv(x, k, cu)
    ref = per_document_conv(x.double(), k.double(), cu)
    row: dict = {
        "mix": mix,
        "total_tokens": total,
        "documents": int(lengths.size),
        "longest": int(lengths.max()),
        "rel_err_rubiconv": _rel(y, ref),
        "rel_err_single_fft": _rel(single_fft_conv(x, k, cu), ref),
        "rel_err_padded": _rel(padded_batch_conv(x, k, cu), ref),
    }
    # FFT work per channel (transform length) and attention score count, as a cost model.
    plan = plan_packed_conv(cu, total, total)
    n_max = int(lengths.max())
    row["fft_len_rubiconv"] = plan.buffer_len
    row["fft_len_padded"] = int(lengths.size) * fft_size(n_max + n_max - 1)
    row["fft_len_loop"] = int(sum(fft_size(2 * int(n) - 1) for n in lengths))
    row["attention_scores"] = int((lengths * (lengths + 1) // 2).sum())

    reps = cfg["repeats"]
    ours = lambda: packed_long_conv(x, k, cu)  # noqa: E731
    ours_times = []
    for name, fn in (
        ("padded", lambda: padded_batch_conv(x, k, cu)),
        ("loop", lambda: per_document_conv(x, k, cu)),
        ("single_fft", lambda: single_fft_conv(x, k, cu)),
    ):
        r, used = _ratio(ours, fn, reps, cfg["budget_s"])
        row[f"repeats_{name}"] = used
        row[f"speedup_vs_{name}"] = r["speedup"]
        row[f"time_{name}_s"] = r["baseline_s"]
        ours_times.append(r["candidate_s"])
    flops = 4.0 * (d // heads) * heads * row["attention_scores"]
    if flops <= cfg["attention_budget"] or reference:
        r, used = _ratio(ours, lambda: document_masked_attention(q, kk, v, cu), reps, cfg["budget_s"])
        row["repeats_attention"] = used
        row["speedup_vs_attention"] = r["speedup"]
        row["time_attention_s"] = r["baseline_s"]
        ours_times.append(r["candidate_s"])
    else:
        row["speedup_vs_attention"] = "not timed (cost)"
        row["time_attention_s"] = "not timed (cost)"
    row["time_rubiconv_s"] = float(np.median(ours_times))  # over all interleaved runs of the point

    if reference:  # forward+backward against the per-document loop (the strongest CPU baseline)
        g = torch.randn(total, d, generator=gen).to(device)

        def fwd_bwd(fn):
            def step():
                xx, kk2 = x.detach().requires_grad_(True), k.detach().requires_grad_(True)
                fn(xx, kk2, cu).backward(g)
                return xx.grad

            return step

        r, used = _ratio(fwd_bwd(packed_long_conv), fwd_bwd(per_document_conv), reps, cfg["budget_s"])
        row["speedup_fwdbwd_vs_loop"] = r["speedup"]
        flex = _flex_attention(q, kk, v, cu) if device.type == "cuda" else None
        if flex is not None:
            r, used = _ratio(ours, flex, reps, cfg["budget_s"])
            row["speedup_vs_flex_attention"] = r["speedup"]

    if reference:  # no-leak property: replace one middle document, measure the change elsewhere
        j = int(lengths.size // 2)
        s, e = int(cu[j]), int(cu[j + 1])
        x2 = x.clone()
        x2[s:e] = torch.randn(e - s, d, generator=gen).to(device)
        outside = torch.ones(total, dtype=torch.bool, device=device)
        outside[s:e] = False
        for name, fn in (("rubiconv", packed_long_conv), ("single_fft", single_fft_conv)):
            diff = (fn(x2, k, cu) - fn(x, k, cu))[outside]  # empty for a one-document packing
            row[f"cross_doc_change_{name}"] = float(diff.abs().max()) if diff.numel() else 0.0
    return row


def _flex_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor):
    """FlexAttention with a causal document mask on a GPU (None where it is not available)."""
    import torch

    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError:  # pragma: no cover - old torch
        return None
    from geode.layers.attention import document_ids

    doc = document_ids(cu).to(q.device)
    n = q.shape[0]

    def mask(b, h, qi, ki):
        return (doc[qi] == doc[ki]) & (ki <= qi)

    block = create_block_mask(mask, None, None, n, n, device=q.device)
    qq, kk, vv = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
    fn = torch.compile(flex_attention)
    return lambda: fn(qq, kk, vv, block_mask=block)


def _figures(rows: list[dict], leak: dict, device: str) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = {}
    mixed = [r for r in rows if r["mix"] == "mixed"]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    totals = [r["total_tokens"] for r in mixed]
    for key, label, style in (
        ("time_rubiconv_s", "RubiConv (bucketed FFT)", "o-"),
        ("time_loop_s", "per-document loop FFT", "s--"),
        ("time_padded_s", "padded-batch FFT", "^-"),
        ("time_attention_s", "document-masked attention", "v-"),
        ("time_single_fft_s", "single FFT (leaks)", "x:"),
    ):
        pts = [(t, r[key]) for t, r in zip(totals, mixed) if isinstance(r.get(key), float)]
        if pts:
            ax.plot(*zip(*pts), style, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("packed tokens N ('mixed' document lengths)")
    ax.set_ylabel("forward time (s, 1 CPU thread)" if device == "cpu" else f"forward time (s, {device})")
    ax.legend(fontsize=7)
    ax.set_title("Packed long convolution: forward wall time")
    fig.tight_layout()
    figs["forward_time"] = fig

    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    t = np.arange(leak["err_single"].size)
    ax.semilogy(t, leak["err_single"] + 1e-12, lw=0.7, label="single FFT over the pack")
    ax.semilogy(t, leak["err_rubiconv"] + 1e-12, lw=0.7, label="RubiConv")
    for b in leak["boundaries"]:
        ax.axvline(b, color="grey", lw=0.4, alpha=0.5)
    ax.set_xlabel("token (grey: document boundaries)")
    ax.set_ylabel("|y - per-document reference|")
    ax.set_title(f"Leakage across documents, N={t.size}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    figs["leakage"] = fig
    return figs


@register(
    "rubiconv",
    claim=(
        "RubiConv computes exact boundary-respecting long convolutions on packed sequences with significant "
        "speedups over attention and over standard FFT-based baselines."
    ),
    paper_figure="'significant speedups over both attention and standard FFT-based baselines' (abstract; no number)",
    baselines=("padded-batch FFT", "document-masked attention", "per-document loop FFT", "single FFT (leaky)"),
    thresholds=(
        Threshold(
            "exact",
            "rel_err",
            "<=",
            1e-4,
            "max relative error vs the float64 per-document reference <= 1e-4 at every point, every seed",
            agg="all",
            control="leak_rel_err_single_fft",
            arms=("RubiConv",),
        ),
        Threshold(
            "no_leak",
            "cross_doc_change_rubiconv",
            "<=",
            1e-6,
            "replacing one document changes no other document's output (every seed)",
            agg="all",
            control="cross_doc_change_single_fft",
            arms=("RubiConv",),
        ),
        Threshold(
            "on_gpu",
            "on_gpu",
            ">=",
            1.0,
            "the speed thresholds are judged only on a GPU (protocol section 4: a GPU speed claim)",
            agg="all",
            arms=(),
        ),
        Threshold(
            "fast_padded",
            "speedup_vs_padded",
            ">=",
            3.0,
            ">= 3x faster than padded-batch FFT at 64k (geometric 95% lower bound over seeds)",
            agg="geobound95",
            arms=("RubiConv", "padded-batch FFT"),
        ),
        Threshold(
            "fast_attention",
            "speedup_vs_attention",
            ">=",
            5.0,
            ">= 5x faster than document-masked attention at 64k (geometric 95% lower bound over seeds)",
            agg="geobound95",
            arms=("RubiConv", "document-masked attention"),
        ),
    ),
    floors=(
        Threshold(
            "mixed_regime",
            "documents_reference",
            ">=",
            10.0,
            "validity: the 64k 'mixed' reference packing holds >= 10 documents in every seed",
            agg="all",
        ),
    ),
    reproduced="exact and no_leak and on_gpu and fast_padded and fast_attention",
    partial="exact and no_leak",
    method="RubiConv",
    untuned={
        "RubiConv": "no hyper-parameter (an exact convolution)",
        "padded-batch FFT": "no hyper-parameter (the same exact convolution)",
        "document-masked attention": "no hyper-parameter (exact block-sparse attention, the same heads)",
        "per-document loop FFT": "no hyper-parameter (the same exact convolution)",
        "single FFT (leaky)": "no hyper-parameter (the negative control)",
    },
    key_metric="rel_err",
    revision=2,
    timing_metrics=(
        "seconds",
        "speedup_vs_attention",
        "speedup_vs_loop",
        "speedup_vs_padded",
        "speedup_vs_single_fft",
        "speedup_fwdbwd_vs_loop",
    ),
)
def run(mode: str, seed: int) -> Outcome:
    """Run the claim check in ``mode`` ("smoke", "quick" or "full") with ``seed``."""
    import torch

    from geode.layers.rubiconv.conv import packed_long_conv, per_document_conv, single_fft_conv
    from geode.layers.rubiconv.packing import cu_seqlens_from_lengths, sample_document_lengths

    cfg = SETTINGS[mode]
    device = torch.device(device_for(mode))
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    rows = []
    for total in cfg["totals"]:
        rows.append(_measure("mixed", total, cfg, seed, device, reference=total == cfg["reference"]))
    for mix in cfg["extra_mixes"]:
        rows.append(_measure(mix, max(cfg["totals"]), cfg, seed, device, reference=False))
    ref = next(r for r in rows if r["mix"] == "mixed" and r["total_tokens"] == cfg["reference"])

    # Leakage picture on the smallest packing.
    small = min(cfg["totals"])
    rng = np.random.default_rng([seed, small, 99])
    lengths = sample_document_lengths(small, "mixed", rng)
    cu = cu_seqlens_from_lengths(lengths)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(small, cfg["channels"], generator=gen)
    k = _kernel(cfg["channels"], small, gen)
    yref = per_document_conv(x.double(), k.double(), cu)
    leak = {
        "err_single": (single_fft_conv(x, k, cu).double() - yref).abs().amax(1).numpy(),
        "err_rubiconv": (packed_long_conv(x, k, cu).double() - yref).abs().amax(1).numpy(),
        "boundaries": cu[1:-1].tolist(),
    }

    metrics = {
        "rel_err": max(r["rel_err_rubiconv"] for r in rows),
        "leak_rel_err_single_fft": ref["rel_err_single_fft"],
        "cross_doc_change_rubiconv": ref["cross_doc_change_rubiconv"],
        "cross_doc_change_single_fft": ref["cross_doc_change_single_fft"],
        "speedup_vs_padded": ref["speedup_vs_padded"],
        "speedup_vs_attention": ref["speedup_vs_attention"],
        "speedup_vs_loop": ref["speedup_vs_loop"],
        "speedup_vs_single_fft": ref["speedup_vs_single_fft"],
        "speedup_fwdbwd_vs_loop": ref["speedup_fwdbwd_vs_loop"],
        "documents_reference": float(ref["documents"]),
        "on_gpu": float(device.type == "cuda"),
        "fft_work_ratio_padded": ref["fft_len_padded"] / ref["fft_len_rubiconv"],
        "reference_total_tokens": float(cfg["reference"]),
        "seconds": time.perf_counter() - t0,
    }
    summary = (
        f"{mode}, 'mixed' packing of {cfg['reference']} tokens, D={cfg['channels']}: rel. error "
        f"{metrics['rel_err']:.1e} (single FFT {metrics['leak_rel_err_single_fft']:.2f}); forward "
        f"{metrics['speedup_vs_padded']:.1f}x faster than padded-batch FFT, {metrics['speedup_vs_attention']:.1f}x "
        f"than masked attention, {metrics['speedup_vs_loop']:.2f}x the per-document loop "
        f"({metrics['speedup_fwdbwd_vs_loop']:.2f}x forward+backward); {ref['documents']} documents"
        + ("" if device.type == "cuda" else "; speed reported, not judged (CPU)")
        + (f"; {ref['speedup_vs_flex_attention']:.1f}x FlexAttention" if "speedup_vs_flex_attention" in ref else "")
    )
    notes = [
        f"Device {device.type}, one thread; forward times are interleaved medians of up to {cfg['repeats']} runs "
        f"after one warm-up call (fewer for baselines slower than {cfg['budget_s']:g} s a call; see repeats_*).",
        "Thresholds are evaluated on the 'mixed' packing at the reference total (64k tokens in quick and full; "
        "smoke uses 4k and its verdict is not a claim check).",
        "The per-document loop has no kernel-launch overhead on a CPU, so on a CPU it is a strong baseline: "
        "RubiConv performs the same FFT work (same sizes) plus one gather/scatter; the issue thresholds only "
        "padded batch and attention, and only on a GPU (revision 2); on a CPU the speed rows are reported.",
        "Attention is block-sparse (128-token tiles meeting the causal document mask), heads of dimension 64; "
        "points whose attention cost exceeds the mode's budget are not timed.",
        "fft_len_* is the FFT length per channel each method transforms (cost model); attention_scores is "
        "sum_d n_d (n_d + 1) / 2.",
    ]
    return Outcome(
        metrics=metrics, table=rows, figures=_figures(rows, leak, device.type), summary=summary, notes=notes
    )
