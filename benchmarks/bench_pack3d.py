"""Benchmark: Pack3D attention against dense SDPA with the same projections and axial RoPE.

For full grids of N tokens it prints the forward wall time of one attention layer (batch 1, one CPU thread) of

- :class:`~geode.layers.pack3d.Pack3DAttention` (exact 27-voxel neighbourhood, 4^3 block summaries),
- :class:`~geode.layers.pack3d.DenseAxialRoPEAttention` (PyTorch ``scaled_dot_product_attention``),

as ``speedup = dense time / Pack3D time`` (interleaved medians, :func:`geode.core.speed_ratio`), the same for
forward + backward at small N, the extra peak resident memory of one forward of each (in a fresh process: the
high-water mark of the call above the resident memory before it), and the crossover (the smallest N at which
Pack3D wins).

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_pack3d.py [--tokens 4096 16384 32768] [--dim 64 --heads 4]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from functools import partial

import torch

from geode.core import set_single_thread, speed_ratio
from geode.layers.pack3d import DenseAxialRoPEAttention, Pack3DAttention, grid_coords

SHAPES = {
    512: (8, 8, 8),
    1024: (8, 8, 16),
    2048: (8, 16, 16),
    4096: (16, 16, 16),
    8192: (16, 16, 32),
    16384: (16, 32, 32),
    32768: (32, 32, 32),
    65536: (32, 32, 64),
}


def layers(args: argparse.Namespace) -> tuple[Pack3DAttention, DenseAxialRoPEAttention]:
    torch.manual_seed(args.seed)
    pack = Pack3DAttention(args.dim, args.heads, args.radius, args.block)
    dense = DenseAxialRoPEAttention(args.dim, args.heads)
    dense.load_state_dict(pack.state_dict())
    return pack, dense


def inputs(n: int, args: argparse.Namespace) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(args.seed)
    return torch.randn(1, n, args.dim, generator=gen), torch.as_tensor(grid_coords(SHAPES[n]))


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_memory_child(method: str, n: int, argv: list[str]) -> None:
    """In a fresh process: extra peak RSS (MiB) of one forward of ``method`` at ``n`` tokens, printed as JSON.

    The kernel's high-water mark is reset (``/proc/self/clear_refs``, Linux >= 4.0) just before the call, so the
    number is the forward's own peak above the resident memory it started from.
    """
    args = parse(argv)
    set_single_thread()
    torch.set_num_threads(1)
    pack, dense = layers(args)
    x, g = inputs(n, args)
    layer = pack if method == "pack3d" else dense
    with torch.no_grad():
        layer(x[:, :8], g[:8])  # load kernels on a tiny input first
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset VmHWM to the current RSS
        before = _status_kib("VmRSS")
        layer(x, g)
        peak = _status_kib("VmHWM")
    print(json.dumps({"peak_mib": (peak - before) / 1024.0}))


def peak_memory(method: str, n: int, argv: list[str]) -> float:
    cmd = [sys.executable, __file__, "--child", method, str(n), *argv]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    return float(json.loads(out)["peak_mib"])


def fwd_bwd(layer: torch.nn.Module, x: torch.Tensor, g: torch.Tensor):
    def step():
        xx = x.detach().requires_grad_(True)
        layer(xx, g).sum().backward()
        return xx.grad

    return step


def timed_ratio(ours, base, repeats: int, budget_s: float) -> tuple[dict, int]:
    """:func:`speed_ratio` after one warm-up call each, with fewer repeats when the baseline is slow."""
    ours()
    t0 = time.perf_counter()
    base()
    probe = time.perf_counter() - t0
    reps = max(1, min(repeats, int(budget_s / max(probe, 1e-9))))
    return speed_ratio(ours, base, repeats=reps, warmup=0), reps


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[1024, 2048, 4096, 16384, 32768], choices=sorted(SHAPES))
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--radius", type=int, default=1)
    ap.add_argument("--block", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--budget", type=float, default=30.0, help="seconds of dense runs per point before cutting repeats"
    )
    ap.add_argument("--backward-max", type=int, default=4096, help="time forward+backward up to this N")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurement (one process each)")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        peak_memory_child(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
        return
    argv = sys.argv[1:]
    args = parse(argv)
    set_single_thread()
    torch.set_num_threads(1)
    pack, dense = layers(args)
    print(
        f"Pack3D vs dense SDPA: dim {args.dim}, {args.heads} heads, r={args.radius}, b={args.block}, batch 1, "
        f"1 thread; speedup = dense time / Pack3D time (interleaved medians); peak = extra RSS of one forward"
    )
    header = (
        f"{'N':>6} {'grid':>12} {'pass':8} {'Pack3D ms':>10} {'dense ms':>10} {'speedup':>8} {'reps':>4} "
        f"{'Pack3D MiB':>10} {'dense MiB':>10}"
    )
    print(header)
    print("-" * len(header))
    crossover = None
    for n in sorted(args.tokens):
        x, g = inputs(n, args)
        with torch.no_grad():
            r, reps = timed_ratio(partial(pack, x, g), partial(dense, x, g), args.repeats, args.budget)
        mem_p = mem_d = ""
        if not args.no_memory:
            mem_p = f"{peak_memory('pack3d', n, argv):.0f}"
            mem_d = f"{peak_memory('dense', n, argv):.0f}"
        grid = "x".join(map(str, SHAPES[n]))
        print(
            f"{n:>6} {grid:>12} {'forward':8} {r['candidate_s'] * 1e3:>10.1f} {r['baseline_s'] * 1e3:>10.1f} "
            f"{r['speedup']:>8.2f} {reps:>4} {mem_p:>10} {mem_d:>10}",
            flush=True,
        )
        if crossover is None and r["speedup"] > 1.0:
            crossover = n
        if n <= args.backward_max:
            rb, reps = timed_ratio(fwd_bwd(pack, x, g), fwd_bwd(dense, x, g), args.repeats, args.budget)
            print(
                f"{n:>6} {grid:>12} {'fwd+bwd':8} {rb['candidate_s'] * 1e3:>10.1f} {rb['baseline_s'] * 1e3:>10.1f} "
                f"{rb['speedup']:>8.2f} {reps:>4}",
                flush=True,
            )
    cost_p = lambda n: n * ((2 * args.radius + 1) ** 3 + n / args.block**3)  # noqa: E731
    print(
        f"Forward crossover: Pack3D first faster at N = {crossover}"
        if crossover
        else "Forward crossover: Pack3D was not faster at any measured N"
    )
    n_max = max(args.tokens)
    k = (2 * args.radius + 1) ** 3
    print(
        f"Attention scores per layer at N = {n_max}: Pack3D {cost_p(n_max):.3g} by definition ({k} exact + "
        f"N/{args.block**3} summaries per query), dense {float(n_max) ** 2:.3g} "
        f"({float(n_max) ** 2 / cost_p(n_max):.0f}x)"
    )


if __name__ == "__main__":
    main()
