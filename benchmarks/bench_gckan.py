"""Benchmark: GC-KAN and our vectorised B-spline KAN, one forward+backward (and Adam) step at a time.

1. Our spline ``KAN`` against pykan's ``KAN`` (optional: only when ``pykan`` is installed; ``auto_save=False``)
   at width [4, 8, 1], grid 5, cubic, batch 1024. The goal is >= 5x.
2. GC-KAN against our spline KAN: one Adam step at width [4, 8, 1], batch 1024.
3. The fused kernels against autograd through the same expressions (GC-KAN edges, cubic spline edges).
4. A stacked ensemble of 24 tiny [2, 4, 1] GC-KANs (one vectorised step) against 24 separate steps.

Run with ``OMP_NUM_THREADS=1 python benchmarks/bench_gckan.py``. Ratios > 1 mean the first-named is faster.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from geode.core import speed_ratio  # noqa: E402
from geode.sciml import KAN  # noqa: E402
from geode.sciml.gckan import GCKAN  # noqa: E402

torch.set_num_threads(1)


def fwd_bwd(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor):
    def step() -> torch.Tensor:
        model.zero_grad(set_to_none=True)
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        return loss

    return step


def adam_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    return step


def fmt(r: dict[str, float]) -> str:
    return f"{r['speedup']:6.2f}x  ({r['candidate_s'] * 1e3:7.2f} ms vs {r['baseline_s'] * 1e3:7.2f} ms)"


def main() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(1024, 4, generator=g) * 2 - 1
    y = torch.sin(x.sum(-1, keepdim=True))
    ours = KAN([4, 8, 1], grid=5, k=3, seed=0)

    print("1. spline KAN forward+backward, width [4, 8, 1], G=5, k=3, batch 1024")
    try:
        from kan import KAN as PyKAN  # type: ignore[import-not-found]
    except ImportError:
        print("   pykan is not installed (pip install pykan): comparison skipped")
    else:
        theirs = PyKAN(width=[4, 8, 1], grid=5, k=3, seed=0, auto_save=False)
        if hasattr(theirs, "speed"):
            theirs.speed()
        r = speed_ratio(fwd_bwd(ours, x, y), fwd_bwd(theirs, x, y), repeats=9)
        print(f"   geode KAN vs pykan KAN:            {fmt(r)}   goal >= 5x")

    print("2. one Adam step, width [4, 8, 1], batch 1024")
    gc = GCKAN([4, 8, 1], atoms=4, seed=0)
    r = speed_ratio(adam_step(gc, x, y), adam_step(KAN([4, 8, 1], grid=5, k=3, seed=0), x, y), repeats=9)
    print(f"   GC-KAN (K=4) vs spline KAN (G=5):   {fmt(r)}")

    print("3. fused kernels vs autograd through the same expression, forward+backward, batch 1024")
    r = speed_ratio(
        fwd_bwd(GCKAN([4, 8, 1], 4, seed=0), x, y), fwd_bwd(GCKAN([4, 8, 1], 4, seed=0, fused=False), x, y)
    )
    print(f"   GC-KAN fused vs autograd:          {fmt(r)}")
    r = speed_ratio(fwd_bwd(KAN([4, 8, 1], 10, seed=0), x, y), fwd_bwd(KAN([4, 8, 1], 10, seed=0, fused=False), x, y))
    print(f"   spline KAN (G=10) fused vs autograd: {fmt(r)}")

    print("4. 24 tiny GC-KANs [2, 4, 1] on 64 points each: one stacked step vs 24 separate steps")
    E = 24
    xs = torch.rand(E, 64, 2, generator=g) * 2 - 1
    ys = torch.cos(3 * xs.sum(-1, keepdim=True))
    stacked = GCKAN([2, 4, 1], 4, ensemble=E, seed=0)
    separate = [GCKAN([2, 4, 1], 4, seed=s) for s in range(E)]
    steps = [adam_step(m, xs[i], ys[i]) for i, m in enumerate(separate)]

    opt = torch.optim.Adam(stacked.parameters(), lr=1e-3)

    def one_stacked() -> torch.Tensor:  # the step fit_ensemble runs: sum of the members' mean losses
        opt.zero_grad(set_to_none=True)
        loss = ((stacked(xs) - ys) ** 2).mean((1, 2)).sum()
        loss.backward()
        opt.step()
        return loss

    def all_separate() -> None:
        for s in steps:
            s()

    r = speed_ratio(one_stacked, all_separate, repeats=9)
    print(f"   stacked ensemble vs loop:          {fmt(r)}")


if __name__ == "__main__":
    main()
