"""Layers: RubiConv, Pack3D and SpecDrop as ``torch.nn`` modules, trained with ``torch.optim`` on data made here.

What it shows:

1. **RubiConv** (``geode.layers``): packed sequences (documents concatenated in one row, boundaries in
   ``cu_seqlens``). An unknown per-channel causal filter is identified from packed input/output pairs by a
   :class:`RubiConv` layer trained with Adam; the same layer built on one FFT over the whole row
   (:func:`single_fft_conv`) cannot fit, because it leaks across documents. Then the exactness of
   :func:`packed_long_conv` against the per-document loop, and its forward time against the padded batch and
   the loop (CPU, one thread: a wall-clock reading, not the paper's GPU setting).
2. **Pack3D**: a small segmenter of 3-D volumes (:func:`make_segmenter`) with :class:`Pack3DAttention`, and the
   same network with 1-D RoPE on the packed index, trained on raster-packed volumes and tested on the same
   volumes packed along a Hilbert curve and at random: Pack3D's Dice does not move, the 1-D baseline's falls.
3. **SpecDrop**: tagged data whose rule depends on the tag; a :class:`SpecDropNet` (fixed routing by tag)
   against No-Routing, a learned router and a dense MLP given the tag, all with the same width, and the
   branch-pruning specialisation index.

Run::

    python examples/layers.py           # under a minute on one CPU core
    python examples/layers.py --smoke   # the smallest size, a few seconds

Needs only the core install (torch); no download, no network.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from geode.layers import (
    Pack3DAttention,
    RubiConv,
    SpecDropNet,
    branch_pruning_drops,
    cu_seqlens_from_lengths,
    grid_coords,
    macro_dice,
    make_segmenter,
    packed_long_conv,
    packing_order,
    padded_batch_conv,
    per_document_conv,
    repacking_volumes,
    sample_document_lengths,
    single_fft_conv,
    specialization_index,
)

SIZES = {
    "smoke": {"row": 1024, "conv_steps": 40, "bench_row": 4096, "grid": 8, "seg_steps": 10, "sd_steps": 60},
    "full": {"row": 4096, "conv_steps": 300, "bench_row": 32768, "grid": 8, "seg_steps": 150, "sd_steps": 600},
}


# ------------------------------------------------------------------------------------------------ RubiConv
class SingleFFTConv(torch.nn.Module):
    """The tempting shortcut: an explicit filter applied by one causal FFT over the whole packed row."""

    def __init__(self, channels: int, max_len: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(channels, max_len))

    def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        return single_fft_conv(x, self.weight, cu_seqlens)


def rubiconv_part(size: dict, seed: int) -> None:
    channels, max_len, row = 16, 512, size["row"]
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(max_len) / max_len
    h_true = torch.randn(channels, max_len, generator=g) * torch.exp(-torch.linspace(2, 12, channels)[:, None] * t)

    def packed_batch(i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        lengths = np.minimum(sample_document_lengths(row, "short", seed=np.random.default_rng([seed, i + 1])), max_len)
        cu = cu_seqlens_from_lengths(lengths)
        x = torch.randn(int(cu[-1]), channels, generator=g)
        return x, cu, packed_long_conv(x, h_true, cu)  # the system's output, document by document

    x, cu, _ = packed_batch(-1)  # (the test row is batch 10**6)
    print(
        f"RubiConv: identify a {channels}-channel causal filter of {max_len} taps from packed rows of {row} tokens "
        f"({len(cu) - 1} documents a row)"
    )
    for name, layer in (
        ("RubiConv", RubiConv(channels, max_len, filter="explicit", skip=False)),
        ("single FFT over the row", SingleFFTConv(channels, max_len)),
    ):
        opt = torch.optim.Adam(layer.parameters(), lr=2e-2)
        for step in range(size["conv_steps"]):
            x, cu, y = packed_batch(step)
            loss = torch.nn.functional.mse_loss(layer(x, cu), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        x, cu, y = packed_batch(10**6)
        with torch.no_grad():
            err = float((layer(x, cu) - y).norm() / y.norm())
        print(f"  {name:<24} relative test error {err:.4f} after {size['conv_steps']} Adam steps")

    d = 64
    lengths = sample_document_lengths(size["bench_row"], "mixed", seed=seed)
    cu = cu_seqlens_from_lengths(lengths)
    x, kernel = torch.randn(size["bench_row"], d, generator=g), torch.randn(d, 1024, generator=g) / 32
    ref = per_document_conv(x, kernel, cu)
    exact = float((packed_long_conv(x, kernel, cu) - ref).abs().max() / ref.abs().max())
    leak = float((single_fft_conv(x, kernel, cu) - ref).abs().max() / ref.abs().max())
    print(f"  packed_long_conv vs the per-document loop: largest relative error {exact:.1e} (single FFT: {leak:.2f})")
    times = {}
    for name, fn in (("RubiConv", packed_long_conv), ("padded batch", padded_batch_conv), ("loop", per_document_conv)):
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn(x, kernel, cu)
            runs.append(time.perf_counter() - t0)
        times[name] = float(np.median(runs))
    print(
        f"  forward of {size['bench_row']} tokens x {d} channels, {len(lengths)} documents (longest {lengths.max()}): "
        + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in times.items())
    )


# ------------------------------------------------------------------------------------------------ Pack3D
def pack3d_part(size: dict, seed: int) -> None:
    s, steps = size["grid"], size["seg_steps"]
    coords = torch.as_tensor(grid_coords((s, s, s)))  # raster (z, y, x) order: the packing seen in training
    test_occ, test_lab = repacking_volumes(16, s, seed=np.random.default_rng([seed, 99]))
    x_test = torch.as_tensor(test_occ.reshape(16, s**3, 1)).float()
    y_test = test_lab.reshape(16, -1)
    print(
        f"Pack3D: segment {s}^3 volumes (interior / z-surface / xy-surface), trained on raster packings, "
        f"{steps} AdamW steps; macro Dice per test packing"
    )
    for kind, label in (("pack3d", "Pack3D (axial RoPE on grid coordinates)"), ("rope1d_3d", "1-D RoPE on the index")):
        torch.manual_seed(seed)
        model = make_segmenter(kind, dim=32, heads=4, block_size=4)
        assert kind != "pack3d" or isinstance(model.blocks[0].attn, Pack3DAttention)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        rng = np.random.default_rng([seed, 1])
        model.train()
        for _ in range(steps):
            occ, lab = repacking_volumes(4, s, seed=rng)
            x, y = torch.as_tensor(occ.reshape(4, s**3, 1)).float(), torch.as_tensor(lab.reshape(-1))
            loss = torch.nn.functional.cross_entropy(model(x, coords).reshape(-1, 4), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        dice = {}
        for packing in ("raster_zyx", "hilbert", "random"):
            order = torch.as_tensor(packing_order((s, s, s), packing, seed=seed))  # token t sits at voxel order[t]
            with torch.no_grad():
                pred = model(x_test[:, order], coords[order]).argmax(-1).numpy()
            dice[packing] = macro_dice(pred, y_test[:, order.numpy()])[0]
        print(f"  {label:<40} " + "  ".join(f"{k} {v:.3f}" for k, v in dice.items()))


# ------------------------------------------------------------------------------------------------ SpecDrop
def specdrop_part(size: dict, seed: int) -> None:
    k, m, n_in, n_cls, hidden = 4, 4, 16, 4, 32
    g = torch.Generator().manual_seed(seed)
    rules = torch.randn(m, n_cls, n_in, generator=g)  # each category (tag) has its own labelling rule

    def data(n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = torch.randn(n, n_in, generator=g)
        tag = torch.randint(0, m, (n,), generator=g)
        return x, tag, torch.einsum("nki,ni->nk", rules[tag], x).argmax(-1)

    x_tr, c_tr, y_tr = data(4000)
    x_te, c_te, y_te = data(2000)

    class TagMLP(torch.nn.Module):  # the strong dense baseline: the tag as a one-hot input, width K x hidden
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(n_in + m, k * hidden), torch.nn.ReLU(), torch.nn.Linear(k * hidden, n_cls)
            )

        def forward(self, x: torch.Tensor, tag: torch.Tensor) -> torch.Tensor:
            return self.net(torch.cat([x, torch.nn.functional.one_hot(tag, m).float()], -1))

    print(f"SpecDrop: {m} tagged categories, {k} branches of width {hidden}, {size['sd_steps']} Adam steps")
    for name in ("specdrop", "none", "learned", "dense + tag"):
        torch.manual_seed(seed)
        if name == "dense + tag":
            net: torch.nn.Module = TagMLP()
        else:
            net = SpecDropNet(n_in, hidden, n_cls, k, m, routing=name, p_active=0.7, p_inactive=0.1)
        opt = torch.optim.Adam(net.parameters(), lr=3e-3)
        for _ in range(size["sd_steps"]):
            i = torch.randint(0, len(x_tr), (128,), generator=g)
            loss = torch.nn.functional.cross_entropy(net(x_tr[i], c_tr[i]), y_tr[i])
            if isinstance(net, SpecDropNet):
                loss = loss + 0.01 * net.aux_loss()  # the learned router's load balancing (zero otherwise)
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            acc = float((net(x_te, c_te).argmax(-1) == y_te).float().mean())
        line = f"  {name:<12} test accuracy {acc:.3f}"
        if isinstance(net, SpecDropNet) and name != "learned":
            drops = branch_pruning_drops(net, x_te, y_te, c_te, m)
            line += f", specialisation index {specialization_index(drops, [c % k for c in range(m)]):+.2f}"
        print(line + f" ({sum(p.numel() for p in net.parameters()):,} parameters)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (seconds)")
    parser.add_argument("--seed", type=int, default=0, help="seed of everything (default: 0)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    size = SIZES["smoke" if args.smoke else "full"]
    t0 = time.process_time()
    rubiconv_part(size, args.seed)
    pack3d_part(size, args.seed)
    specdrop_part(size, args.seed)
    print(f"done in {time.process_time() - t0:.0f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
