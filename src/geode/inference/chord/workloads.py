"""Kernel DAGs of CNN and transformer inference, with the page of every access (fp16, row-major buffers).

Nine workloads after the paper's "nine CNN and transformer-based inference workloads" (the paper's list is
not public; ours is inferred): ``resnet``, ``vgg``, ``inception``, ``mobilenet`` (CNNs, convolutions as
implicit-im2col GEMMs with a halo of input rows), ``mlp``, ``bert``, ``vit`` (encoder blocks),
``gpt-decode`` (one decode step over a paged KV cache: embedding gather and attention through block
tables, both data-dependent) and ``moe`` (a mixture-of-experts layer with data-dependent token routing).
Shapes are drawn from ``rng`` within small ranges, so each seed is a different draw of the same family.
Weights follow PyTorch's ``Linear`` layout (out x in): a workgroup's weight tile is a contiguous block of rows.
"""

from __future__ import annotations

import numpy as np

from geode.inference.chord.chiplet import Access, Kernel, KernelDAG, tile_pages

__all__ = ["WORKLOADS", "make_workload"]

E = 2  # bytes per element (fp16)


class _Prog:
    def __init__(self, page_bytes: int, tile: int = 64) -> None:
        self.pb = page_bytes
        self.t = tile
        self.shapes: dict[str, tuple[int, int]] = {}
        self.kernels: list[Kernel] = []

    def buf(self, name: str, rows: int, cols: int) -> str:
        self.shapes[name] = (int(rows), int(cols))
        return name

    def _acc(self, acc: list[tuple[int, np.ndarray, np.ndarray]], buf: str, dynamic: bool = False) -> Access:
        wg = np.concatenate([np.full(p.size, w) for w, p, _ in acc]) if acc else np.zeros(0, np.int64)
        pg = np.concatenate([p for _, p, _ in acc]) if acc else np.zeros(0, np.int64)
        nb = np.concatenate([b for _, _, b in acc]) if acc else np.zeros(0)
        return Access(buf, wg, pg, nb, dynamic)

    def tile(self, buf: str, rows: tuple[int, int], cols: tuple[int, int] | None = None):
        shape = self.shapes[buf]
        return tile_pages(shape, rows, cols if cols is not None else (0, shape[1]), E, self.pb)

    def rows(self, buf: str, idx: np.ndarray):
        """Pages of a set of whole rows (a gather)."""
        shape = self.shapes[buf]
        ps, bs = zip(*(self.tile(buf, (int(r), int(r) + 1)) for r in idx)) if len(idx) else ((), ())
        if not ps:
            return np.zeros(0, np.int64), np.zeros(0)
        p = np.concatenate(ps)
        up, inv = np.unique(p, return_inverse=True)
        del shape
        return up, np.bincount(inv, weights=np.concatenate(bs), minlength=up.size)

    def gemm(
        self, name: str, a: str, w: str, out: str, halo: int = 0, flop_k: int | None = None, t: int | None = None
    ):
        """out[M, N] = a[M, K] @ w[N, K]^T, tiles of t x t; ``halo`` extra input rows each side (a conv)."""
        m, k = self.shapes[a]
        n = self.shapes[w][0]
        fk = flop_k or k
        t = t or self.t
        tm, tn = min(t, m), min(t, n)
        gm, gn = -(-m // tm), -(-n // tn)
        ra, rw, wo, fl = [], [], [], []
        for i in range(gm):
            for j in range(gn):
                wid = i * gn + j
                r0, r1 = i * tm, min(m, (i + 1) * tm)
                c0, c1 = j * tn, min(n, (j + 1) * tn)
                ra.append((wid, *self.tile(a, (r0 - halo, r1 + halo))))
                rw.append((wid, *self.tile(w, (c0, c1))))
                wo.append((wid, *self.tile(out, (r0, r1), (c0, c1))))
                fl.append(2.0 * (r1 - r0) * (c1 - c0) * fk)
        reads = [self._acc(ra, a), self._acc(rw, w)]
        self.kernels.append(Kernel(name, gm * gn, np.array(fl), reads, [self._acc(wo, out)]))

    def rowwise(
        self, name: str, ins: list[str], out: str, flops_per: float = 4.0, t: int | None = None, halo: int = 0
    ):
        """out = f(ins...) row block by row block (elementwise, norms, pooling with a halo)."""
        m, n = self.shapes[out]
        t = t or self.t
        g = -(-m // t)
        reads = {b: [] for b in ins}
        wo, fl = [], []
        for i in range(g):
            r0, r1 = i * t, min(m, (i + 1) * t)
            for b in ins:
                reads[b].append((i, *self.tile(b, (r0 - halo, r1 + halo))))
            wo.append((i, *self.tile(out, (r0, r1))))
            fl.append(flops_per * (r1 - r0) * n)
        acc = [self._acc(v, b) for b, v in reads.items()]
        self.kernels.append(Kernel(name, g, np.array(fl), acc, [self._acc(wo, out)]))

    def gather(self, name: str, table: str, idx: np.ndarray, out: str, t: int = 16, read_out: bool = False):
        """out[r] = table[idx[r]] (a data-dependent read); ``read_out`` also reads ``out`` (accumulate)."""
        g = -(-len(idx) // t)
        rd, wo = [], []
        for i in range(g):
            r0, r1 = i * t, min(len(idx), (i + 1) * t)
            rd.append((i, *self.rows(table, idx[r0:r1])))
            wo.append((i, *self.tile(out, (r0, r1))))
        reads = [self._acc(rd, table, dynamic=True)]
        if read_out:
            reads.append(self._acc(wo, out))
        n = self.shapes[out][1]
        self.kernels.append(Kernel(name, g, 2.0 * t * n, reads, [self._acc(wo, out)]))

    def paged_attention(self, name: str, q: str, pool: str, tables: list[np.ndarray], out: str, heads: int):
        """Decode attention: workgroup (sequence s, head h) reads q[s], the KV blocks of s through its block
        table (data-dependent), and writes out[s, head h]."""
        d = self.shapes[q][1]
        dh = d // heads
        rq, rk, wo, fl = [], [], [], []
        for s, blocks in enumerate(tables):
            for h in range(heads):
                wid = s * heads + h
                rq.append((wid, *self.tile(q, (s, s + 1), (h * dh, (h + 1) * dh))))
                ps, bs = [], []
                for b in blocks:  # a block row holds 16 tokens x (K, V) x d
                    p, by = self.tile(pool, (int(b), int(b) + 1), (h * 2 * 16 * dh, (h + 1) * 2 * 16 * dh))
                    ps.append(p)
                    bs.append(by)
                rk.append((wid, np.concatenate(ps), np.concatenate(bs)))
                wo.append((wid, *self.tile(out, (s, s + 1), (h * dh, (h + 1) * dh))))
                fl.append(4.0 * 16 * len(blocks) * dh)
        reads = [self._acc(rq, q), self._acc(rk, pool, dynamic=True)]
        self.kernels.append(Kernel(name, len(tables) * heads, np.array(fl), reads, [self._acc(wo, out)]))

    def dag(self, name: str) -> KernelDAG:
        bufs = {b: r * c * E for b, (r, c) in self.shapes.items()}
        return KernelDAG(bufs, self.kernels, page_bytes=self.pb, name=name)


def _conv_net(p: _Prog, m: int, width: int, chans: list[int], residual: bool) -> None:
    x = p.buf("x0", m, chans[0])
    for i, (ci, co) in enumerate(zip(chans[:-1], chans[1:])):
        w = p.buf(f"w{i}", co, ci * 9)
        y = p.buf(f"x{i + 1}", m, co)
        # implicit im2col: the workgroup reads its rows of x plus one image row above and below (3x3)
        p.gemm(f"conv{i}", x, w, y, halo=width + 1, flop_k=ci * 9)
        if residual and ci == co and i % 2 == 1:
            z = p.buf(f"r{i + 1}", m, co)
            p.rowwise(f"add{i}", [y, f"x{i - 1}"], z, flops_per=2.0)
            y = z
        x = y


def _w(p: _Prog, name: str, a: str, out: str, n: int) -> None:
    k = p.shapes[a][1]
    w = p.buf(f"W_{name}", n, k)
    if out not in p.shapes:
        p.buf(out, p.shapes[a][0], n)
    p.gemm(name, a, w, out)


def _encoder(p: _Prog, x: str, s: int, d: int, heads: int, ff: int, tag: str) -> str:
    qkv = p.buf(f"{tag}qkv", s, 3 * d)
    _w(p, f"{tag}qkv_proj", x, qkv, 3 * d)
    o = p.buf(f"{tag}attn", s, d)
    dh = d // heads
    t = p.t
    g = -(-s // t)
    rq, rk, wo, fl = [], [], [], []
    for i in range(g):
        r0, r1 = i * t, min(s, (i + 1) * t)
        for h in range(heads):
            wid = i * heads + h
            rq.append((wid, *p.tile(qkv, (r0, r1), (h * dh, (h + 1) * dh))))
            pk, bk = p.tile(qkv, (0, s), (d + h * dh, d + (h + 1) * dh))
            pv, bv = p.tile(qkv, (0, s), (2 * d + h * dh, 2 * d + (h + 1) * dh))
            rk.append((wid, np.concatenate([pk, pv]), np.concatenate([bk, bv])))
            wo.append((wid, *p.tile(o, (r0, r1), (h * dh, (h + 1) * dh))))
            fl.append(4.0 * (r1 - r0) * s * dh)
    p.kernels.append(
        Kernel(f"{tag}attention", g * heads, np.array(fl), [p._acc(rq, qkv), p._acc(rk, qkv)], [p._acc(wo, o)])
    )
    a = p.buf(f"{tag}proj", s, d)
    _w(p, f"{tag}out_proj", o, a, d)
    h1 = p.buf(f"{tag}h1", s, d)
    p.rowwise(f"{tag}add_ln1", [a, x], h1, flops_per=8.0)
    f = p.buf(f"{tag}ff", s, ff)
    _w(p, f"{tag}ff1", h1, f, ff)
    f2 = p.buf(f"{tag}ff2o", s, d)
    _w(p, f"{tag}ff2", f, f2, d)
    h2 = p.buf(f"{tag}h2", s, d)
    p.rowwise(f"{tag}add_ln2", [f2, h1], h2, flops_per=8.0)
    return h2


def make_workload(name: str, rng: np.random.Generator, page_bytes: int = 4096, tile: int = 64) -> KernelDAG:
    """Build workload ``name`` (one of :data:`WORKLOADS`) with shapes and data drawn from ``rng``.

    ``tile`` is the output tile (rows x columns) of a GEMM workgroup and the rows of an elementwise or
    attention workgroup (64 by default; inferred).
    """
    if int(tile) != tile or tile < 1:
        raise ValueError(f"tile must be an integer >= 1; got {tile!r}")
    if name not in WORKLOADS:
        raise ValueError(f"name must be one of {', '.join(WORKLOADS)}; got {name!r}")
    p = _Prog(page_bytes, int(tile))
    if name == "resnet":
        side = int(rng.choice([14, 16, 20]))
        _conv_net(p, 2 * side * side, side, [64] * 5, residual=True)
    elif name == "vgg":
        side = int(rng.choice([14, 16, 20]))
        _conv_net(p, 2 * side * side, side, [32, 64, 64, 128, 128], residual=False)
    elif name == "mobilenet":
        side = int(rng.choice([14, 16, 20]))
        m, x = 2 * side * side, p.buf("x0", 2 * side * side, 64)
        for i, c in enumerate([64, 128, 128]):
            dw = p.buf(f"dw{i}", m, p.shapes[x][1])
            p.rowwise(f"depthwise{i}", [x], dw, flops_per=18.0, halo=side + 1)
            y = p.buf(f"pw{i}", m, c)
            _w(p, f"pointwise{i}", dw, y, c)
            x = y
    elif name == "inception":
        side = int(rng.choice([14, 16, 20]))
        m = 2 * side * side
        x = p.buf("x", m, 192)
        b1 = p.buf("b1", m, 64)
        _w(p, "b1_1x1", x, b1, 64)
        r3 = p.buf("r3", m, 96)
        _w(p, "b3_reduce", x, r3, 96)
        b3 = p.buf("b3", m, 128)
        w3 = p.buf("W_b3", 128, 96 * 9)
        p.gemm("b3_3x3", r3, w3, b3, halo=side + 1, flop_k=96 * 9)
        r5 = p.buf("r5", m, 16)
        _w(p, "b5_reduce", x, r5, 16)
        b5 = p.buf("b5", m, 32)
        w5 = p.buf("W_b5", 32, 16 * 25)
        p.gemm("b5_5x5", r5, w5, b5, halo=2 * side + 2, flop_k=16 * 25)
        pool = p.buf("pool", m, 192)
        p.rowwise("pool_3x3", [x], pool, flops_per=9.0, halo=side + 1)
        bp = p.buf("bp", m, 32)
        _w(p, "bp_1x1", pool, bp, 32)
        cat = p.buf("cat", m, 256)
        p.rowwise("concat", [b1, b3, b5, bp], cat, flops_per=1.0)
        y = p.buf("y", m, 128)
        _w(p, "next_1x1", cat, y, 128)
    elif name == "mlp":
        m = int(rng.choice([256, 384, 512]))
        x = p.buf("x", m, 512)
        h = p.buf("h1", m, 1024)
        _w(p, "fc1", x, h, 1024)
        g = p.buf("g1", m, 1024)
        p.rowwise("gelu1", [h], g, flops_per=8.0)
        h2 = p.buf("h2", m, 1024)
        _w(p, "fc2", g, h2, 1024)
        g2 = p.buf("g2", m, 1024)
        p.rowwise("gelu2", [h2], g2, flops_per=8.0)
        y = p.buf("y", m, 512)
        _w(p, "fc3", g2, y, 512)
    elif name in ("bert", "vit"):
        s, d, heads, ff = (int(rng.choice([256, 384])), 512, 8, 1024) if name == "bert" else (197, 384, 6, 768)
        x = p.buf("x", s, d)
        if name == "vit":
            patches = p.buf("patches", s, 768)
            _w(p, "patch_embed", patches, x, d)
        x = _encoder(p, x, s, d, heads, ff, "l0_")
        _encoder(p, x, s, d, heads, ff, "l1_")
    elif name == "gpt-decode":
        b, d, heads, vocab = 32, 512, 8, 4096
        ctx = rng.integers(128, 513, size=b) // 16  # blocks of 16 tokens per sequence
        n_blocks = int(ctx.sum())
        table = p.buf("embed", vocab, d)
        x = p.buf("x", b, d)
        p.gather("embed_gather", table, rng.integers(0, vocab, size=b), x, t=4)
        for layer in range(2):
            tag = f"l{layer}_"
            qkv = p.buf(f"{tag}q", b, d)
            _w(p, f"{tag}q_proj", x, qkv, d)
            pool = p.buf(f"{tag}kv_pool", n_blocks, 2 * 16 * d)  # block-major: 16 tokens x (K, V) x d
            perm = rng.permutation(n_blocks)
            cuts = np.cumsum(ctx)[:-1]
            o = p.buf(f"{tag}o", b, d)
            p.paged_attention(f"{tag}paged_attention", qkv, pool, np.split(perm, cuts), o, heads)
            a = p.buf(f"{tag}a", b, d)
            _w(p, f"{tag}out_proj", o, a, d)
            f = p.buf(f"{tag}f", b, 4 * d)
            _w(p, f"{tag}ff1", a, f, 4 * d)
            y = p.buf(f"{tag}y", b, d)
            _w(p, f"{tag}ff2", f, y, d)
            x = y
    elif name == "moe":
        m, d, ff, n_exp = int(rng.choice([256, 384])), 384, 768, 4
        x = p.buf("x", m, d)
        route = rng.integers(0, n_exp, size=m)
        for e in range(n_exp):
            idx = np.flatnonzero(route == e)
            if idx.size == 0:
                continue
            xe = p.buf(f"x_e{e}", idx.size, d)
            p.gather(f"dispatch_e{e}", x, idx, xe)
            he = p.buf(f"h_e{e}", idx.size, ff)
            _w(p, f"e{e}_ff1", xe, he, ff)
            ye = p.buf(f"y_e{e}", idx.size, d)
            _w(p, f"e{e}_ff2", he, ye, d)
        y = p.buf("y", m, d)
        ins = [f"y_e{e}" for e in range(n_exp) if f"y_e{e}" in p.shapes]
        # combine: each token's row comes back from its expert (data-dependent reads)
        t = 16
        g = -(-m // t)
        rd: dict[str, list] = {b: [] for b in ins}
        wo = []
        pos = np.zeros(m, np.int64)
        for e in range(n_exp):
            pos[route == e] = np.arange(np.count_nonzero(route == e))
        for i in range(g):
            r0, r1 = i * t, min(m, (i + 1) * t)
            for e in range(n_exp):
                sel = np.arange(r0, r1)[route[r0:r1] == e]
                if sel.size:
                    rd[f"y_e{e}"].append((i, *p.rows(f"y_e{e}", pos[sel])))
            wo.append((i, *p.tile(y, (r0, r1))))
        acc = [p._acc(v, b, dynamic=True) for b, v in rd.items()]
        p.kernels.append(Kernel("combine", g, 2.0 * t * d, acc, [p._acc(wo, y)]))
    return p.dag(name)


WORKLOADS = ("resnet", "vgg", "inception", "mobilenet", "mlp", "bert", "vit", "gpt-decode", "moe")
