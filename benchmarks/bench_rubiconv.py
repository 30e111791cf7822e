"""Benchmark: RubiConv's packed long convolution against its baselines, as interleaved time ratios.

For every document-length mix and packed length it prints, forward and forward+backward,
``speedup = baseline time / RubiConv time`` (medians, interleaved, one process, one thread) against

- the padded-batch FFT (unpack to ``(M, n_max)``, one batched FFT),
- block-sparse document-masked attention (heads of dimension 64),
- the per-document loop of FFTs (the reference),

and how close the packing overhead leaves RubiConv to the FFT limit: its achieved FLOP/s (nominal
:math:`2.5 F \\log_2 F` per real FFT of size :math:`F`, plus 6 per complex product), and its time against a plain
``torch.fft`` convolution of one contiguous ``(D, N)`` row of the same total length (``fft_limit``: plain
time / RubiConv time; 1.0 would mean packing costs nothing).

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_rubiconv.py [--totals 16384 65536] [--channels 64]``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch

from geode.core import set_single_thread, speed_ratio
from geode.layers.attention import document_masked_attention
from geode.layers.rubiconv import (
    MIXES,
    cu_seqlens_from_lengths,
    fft_size,
    packed_long_conv,
    padded_batch_conv,
    per_document_conv,
    plan_packed_conv,
    sample_document_lengths,
)


def fft_conv_flops(rows_x_sizes: list[tuple[int, int]], channels: int) -> float:
    """Nominal FLOPs of rFFT + complex product + irFFT over rows of the given FFT sizes, per channel set."""
    total = 0.0
    for rows, f in rows_x_sizes:
        total += rows * (2 * 2.5 * f * math.log2(f) + 6 * (f // 2 + 1))
    return total * channels


def fwd_bwd(fn, x, k, cu, g):
    def step():
        xx = x.detach().requires_grad_(True)
        kk = k.detach().requires_grad_(True)
        fn(xx, kk, cu).backward(g)
        return xx.grad

    return step


def attn_fwd_bwd(q, k, v, cu, g):
    def step():
        qq, kk, vv = (t.detach().requires_grad_(True) for t in (q, k, v))
        document_masked_attention(qq, kk, vv, cu).backward(g)
        return qq.grad

    return step


def bench_point(mix: str, total: int, args: argparse.Namespace) -> None:
    """Time one (mix, N) point and print its forward (and fwd+bwd) rows."""
    d = args.channels
    heads = max(1, d // 64)
    rng = np.random.default_rng([args.seed, total, MIXES.index(mix)])
    lengths = sample_document_lengths(total, mix, rng)
    cu = cu_seqlens_from_lengths(lengths)
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(total, d, generator=gen)
    k = torch.randn(d, total, generator=gen) * torch.exp(-torch.arange(total) / 1000.0)
    q, kk, v = (torch.randn(total, heads, d // heads, generator=gen) for _ in range(3))
    g = torch.randn(total, d, generator=gen)
    ga = torch.randn(total, heads, d // heads, generator=gen)
    attn_gflop = 4.0 * d * float((lengths * (lengths + 1) // 2).sum()) / 1e9

    plan = plan_packed_conv(cu, total, total)
    flops = fft_conv_flops(list(zip(plan.rows, plan.sizes)), d)
    f_plain = fft_size(2 * total - 1)
    plain_flops = fft_conv_flops([(1, f_plain)], d)
    xt = x.T.contiguous()
    kf = torch.fft.rfft(k, n=f_plain, dim=-1)

    def plain():
        return torch.fft.irfft(torch.fft.rfft(xt, n=f_plain, dim=-1) * kf, n=f_plain, dim=-1)

    passes = [
        (
            "forward",
            lambda: packed_long_conv(x, k, cu),
            {
                "padded": lambda: padded_batch_conv(x, k, cu),
                "attn": lambda: document_masked_attention(q, kk, v, cu),
                "loop": lambda: per_document_conv(x, k, cu),
            },
        )
    ]
    if total <= args.backward_max_total:
        passes.append(
            (
                "fwd+bwd",
                fwd_bwd(packed_long_conv, x, k, cu, g),
                {
                    "padded": fwd_bwd(padded_batch_conv, x, k, cu, g),
                    "attn": attn_fwd_bwd(q, kk, v, cu, ga),
                    "loop": fwd_bwd(per_document_conv, x, k, cu, g),
                },
            )
        )
    for name, cand, baselines in passes:
        cells, times = {}, []
        for bname, fn in baselines.items():
            if bname == "attn" and attn_gflop > args.attention_max_gflop:
                cells[bname] = "skip"
                continue
            r = speed_ratio(cand, fn, repeats=args.repeats, warmup=1)
            cells[bname] = f"{r['speedup']:.2f}"
            times.append(r["candidate_s"])
        gflops = gflops_plain = limit = ""
        if name == "forward":
            r = speed_ratio(cand, plain, repeats=args.repeats, warmup=1)
            gflops = f"{flops / r['candidate_s'] / 1e9:.2f}"
            gflops_plain = f"{plain_flops / r['baseline_s'] / 1e9:.2f}"
            limit = f"{r['speedup']:.2f}"
            times.append(r["candidate_s"])
        t_ours = float(np.median(times))
        print(
            f"{mix:6} {total:>6} {lengths.size:>5} {int(lengths.max()):>6} {name:8} {t_ours * 1e3:>8.1f} "
            f"{cells['padded']:>9} {cells['attn']:>8} {cells['loop']:>7} "
            f"{gflops:>6} {gflops_plain:>8} {limit:>9}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--totals", type=int, nargs="+", default=[16384, 65536])
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--mixes", nargs="+", default=list(MIXES), choices=MIXES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--attention-max-gflop", type=float, default=100.0, help="skip attention above this cost")
    ap.add_argument("--backward-max-total", type=int, default=16384, help="time fwd+bwd only up to this N")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    set_single_thread()
    torch.set_num_threads(1)
    heads = max(1, args.channels // 64)
    print(
        f"RubiConv benchmark: D={args.channels} channels, {heads} attention head(s) of {args.channels // heads}, "
        f"1 thread, median of {args.repeats} interleaved runs; speedup = baseline time / RubiConv time"
    )
    header = (
        f"{'mix':6} {'N':>6} {'docs':>5} {'n_max':>6} {'pass':8} {'ours ms':>8} {'x padded':>9} "
        f"{'x attn':>8} {'x loop':>7} {'GF/s':>6} {'GF/s fft':>8} {'fft_limit':>9}"
    )
    print(header)
    print("-" * len(header))
    for mix in args.mixes:
        for total in args.totals:
            bench_point(mix, total, args)
    print(
        "GF/s: nominal FFT-convolution GFLOP/s of RubiConv (its own FFT sizes) and of a plain contiguous torch.fft "
        "convolution of one (D, N) row; fft_limit = plain time / RubiConv time (1.0: packing costs nothing)."
    )


if __name__ == "__main__":
    main()
