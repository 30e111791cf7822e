"""An analytic/event simulator of chiplet GPUs running kernel DAGs, and the scheduling/placement policies.

The model (every number is a parameter of :class:`ChipletGPU`; defaults are inferred, see the package
docstring):

* The GPU has :math:`C` chiplets of ``cus`` compute units each; memory is split in pages of ``page_bytes``;
  every page has a *home* chiplet, or is *replicated* (a copy on every chiplet).
* A kernel is a grid of workgroups; workgroup :math:`w` does ``flops[w]`` and touches, for each page
  :math:`p`, ``bytes[w, p]`` bytes (its reads and writes).
* A plan maps each workgroup to a chiplet and each page to a home. On chiplet :math:`c` a kernel's L2 keeps
  a page once it has been fetched, so the bytes fetched from page :math:`p` are
  :math:`f_{c,p} = \\min(\\text{page\\_bytes}, \\sum_{w \\mapsto c} \\text{bytes}[w, p])`; they are *local* when
  :math:`p` lives on :math:`c` (home or replica), *remote* otherwise.
* The time of a kernel on chiplet :math:`c` is the roofline

  .. math:: t_c = \\max\\Big(\\big\\lceil n_c / \\text{cus} \\big\\rceil
            \\max_{w \\mapsto c} \\frac{\\text{flops}_w}{F},
            \\; \\frac{L_c}{B_l} + \\frac{R_c}{B_r}\\Big) + \\ell_l + \\ell_r [R_c > 0]

  (:math:`n_c` workgroups in waves of ``cus``; local bytes :math:`L_c` at the local bandwidth, remote
  bytes :math:`R_c` over the chiplet's inter-chiplet link), and the kernel takes
  :math:`\\text{launch} + \\max_c t_c` on the chiplets it uses.
* Kernels are list-scheduled in a topological order of the DAG. A serialising plan (one stream, as
  MGPUSim's default) starts a kernel when the previous one ends; an overlapping plan starts it when its DAG
  predecessors have finished and the chiplets it uses are free (safe overlap: the DAG carries every RAW,
  WAR and WAW hazard on the buffers).

Bytes are conserved by construction: the bytes requested by the workgroups do not depend on the plan, and
for a fixed dispatch the fetched bytes :math:`\\sum_{c,p} f_{c,p}` do not depend on the placement (only
their local/remote split does); :class:`ChipletSimResult` carries both so the tests can check it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from geode.core.validation import check_int, check_real

__all__ = [
    "CLAP",
    "LADM",
    "RR",
    "Access",
    "ChipletGPU",
    "ChipletSimResult",
    "ChordPolicy",
    "Kernel",
    "KernelDAG",
    "Plan",
    "simulate_chiplets",
    "tile_pages",
]


# --------------------------------------------------------------------------------------------------- model
@dataclass(frozen=True)
class ChipletGPU:
    """A chiplet GPU: compute, local and inter-chiplet bandwidth and latency (time in microseconds).

    Parameters
    ----------
    chiplets : int
        Number of chiplets :math:`C` (>= 1).
    cus : int
        Compute units per chiplet (workgroups run in waves of ``cus``).
    cu_flops : float
        FLOPs per microsecond of one compute unit (64 lanes x 2 x 1 GHz = 128e3 by default).
    local_bw : float
        Bytes per microsecond of a chiplet's own memory (128e3: 128 GB/s, an R9 Nano's 512 GB/s over 4).
    remote_bw : float
        Bytes per microsecond of a chiplet's inter-chiplet link (``local_bw / 4`` by default).
    local_latency, remote_latency : float
        Microseconds added to a kernel's time on a chiplet (remote: only when it fetches remote bytes).
    launch : float
        Kernel launch overhead, microseconds.
    page_bytes : int
        Page size (4 KiB).
    """

    chiplets: int = 4
    cus: int = 16
    cu_flops: float = 128e3
    local_bw: float = 128e3
    remote_bw: float = 32e3
    local_latency: float = 0.5
    remote_latency: float = 1.5
    launch: float = 2.0
    page_bytes: int = 4096

    def __post_init__(self) -> None:
        if int(self.chiplets) != self.chiplets or self.chiplets < 1:
            raise ValueError(f"chiplets must be an integer >= 1; got {self.chiplets!r}")
        if int(self.cus) != self.cus or self.cus < 1:
            raise ValueError(f"cus must be an integer >= 1; got {self.cus!r}")
        for name in ("cu_flops", "local_bw", "remote_bw"):
            check_real(name, getattr(self, name), low=0.0, low_inclusive=False)
        for name in ("local_latency", "remote_latency", "launch"):
            check_real(name, getattr(self, name), low=0.0)
        if int(self.page_bytes) != self.page_bytes or self.page_bytes < 1:
            raise ValueError(f"page_bytes must be an integer >= 1; got {self.page_bytes!r}")


@dataclass
class Access:
    """What the workgroups of one kernel touch in one buffer: ``nbytes[i]`` bytes of page ``page[i]`` (an index
    inside the buffer) by workgroup ``wg[i]``. ``dynamic`` marks data-dependent accesses (a gather through an
    index or block table), which a static analysis of the kernel's index maps cannot see. ``wg``, ``page`` and
    ``nbytes`` are flattened (any shape of the same size is accepted)."""

    buffer: str
    wg: np.ndarray
    page: np.ndarray
    nbytes: np.ndarray
    dynamic: bool = False

    def __post_init__(self) -> None:
        self.wg = np.asarray(self.wg, dtype=np.int64).ravel()
        self.page = np.asarray(self.page, dtype=np.int64).ravel()
        try:
            self.nbytes = np.asarray(self.nbytes, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise TypeError(
                f"Access to {self.buffer!r}: nbytes must be an array of byte counts; got {type(self.nbytes).__name__}"
            ) from None
        if not (self.wg.shape == self.page.shape == self.nbytes.shape):
            raise ValueError(f"Access to {self.buffer!r}: wg, page and nbytes must have the same length")
        if self.nbytes.size and (not np.all(np.isfinite(self.nbytes)) or self.nbytes.min() < 0):
            raise ValueError(f"Access to {self.buffer!r}: nbytes must be finite and >= 0")


@dataclass
class Kernel:
    """A kernel: ``n_wg`` workgroups, FLOPs per workgroup, and the pages they read and write."""

    name: str
    n_wg: int
    flops: np.ndarray | float
    reads: list[Access] = field(default_factory=list)
    writes: list[Access] = field(default_factory=list)

    def __post_init__(self) -> None:
        if int(self.n_wg) != self.n_wg or self.n_wg < 1:
            raise ValueError(f"kernel {self.name!r}: n_wg must be an integer >= 1; got {self.n_wg!r}")
        self.n_wg = int(self.n_wg)
        try:
            f = np.broadcast_to(np.asarray(self.flops, dtype=np.float64), (self.n_wg,)).copy()
        except (TypeError, ValueError):
            raise ValueError(
                f"kernel {self.name!r}: flops must be a number or an array of n_wg={self.n_wg} numbers; "
                f"got {type(self.flops).__name__} of shape {np.shape(self.flops)}"
            ) from None
        if not np.all(np.isfinite(f)) or f.min() < 0:
            raise ValueError(f"kernel {self.name!r}: flops must be finite and >= 0")
        self.flops = f
        for a in (*self.reads, *self.writes):
            if a.wg.size and (a.wg.min() < 0 or a.wg.max() >= self.n_wg):
                raise ValueError(
                    f"kernel {self.name!r}: an access to {a.buffer!r} names a workgroup outside 0..n_wg-1"
                )


class KernelDAG:
    """A program as a DAG of kernels over buffers, with the page of every access.

    Edges are the hazards of program order (a later kernel that reads what an earlier one writes, RAW;
    writes what it reads, WAR; or writes what it writes, WAW) plus any explicit ``deps``; the DAG must be
    acyclic.

    Parameters
    ----------
    buffers : dict of str -> int
        Buffer sizes in bytes; each buffer starts on a page boundary.
    kernels : sequence of Kernel
        In program order.
    deps : sequence of (str, str), optional
        Extra edges ``(before, after)`` by kernel name.
    page_bytes : int
        Page size; must match the :class:`ChipletGPU` it runs on.
    name : str
        A label.
    """

    def __init__(
        self,
        buffers: Mapping[str, int],
        kernels: Sequence[Kernel],
        deps: Sequence[tuple[str, str]] = (),
        page_bytes: int = 4096,
        name: str = "",
    ) -> None:
        if not kernels:
            raise ValueError("kernels must hold at least one Kernel")
        if int(page_bytes) != page_bytes or page_bytes < 1:
            raise ValueError(f"page_bytes must be an integer >= 1; got {page_bytes!r}")
        self.name = name
        self.page_bytes = int(page_bytes)
        self.kernels = list(kernels)
        names = [k.name for k in self.kernels]
        if len(set(names)) != len(names):
            raise ValueError("kernels: kernel names must be unique")
        self.buffers = {str(b): int(n) for b, n in buffers.items()}
        self.offset: dict[str, int] = {}
        self.n_pages = 0
        for b, n in self.buffers.items():
            if n < 1:
                raise ValueError(f"buffers: buffer {b!r} must have at least one byte; got {n}")
            self.offset[b] = self.n_pages
            self.n_pages += -(-n // self.page_bytes)
        self.buffer_of_page = np.empty(self.n_pages, dtype=np.int64)
        for i, (b, n) in enumerate(self.buffers.items()):
            self.buffer_of_page[self.offset[b] : self.offset[b] + -(-n // self.page_bytes)] = i
        written: set[str] = set()
        for k in self.kernels:
            for a in (*k.reads, *k.writes):
                if a.buffer not in self.buffers:
                    raise ValueError(f"kernel {k.name!r} accesses unknown buffer {a.buffer!r}")
                size = -(-self.buffers[a.buffer] // self.page_bytes)
                if a.page.size and (a.page.min() < 0 or a.page.max() >= size):
                    raise ValueError(f"kernel {k.name!r}: a page of {a.buffer!r} is outside the buffer")
            written.update(a.buffer for a in k.writes)
        self.read_only = {b: b not in written for b in self.buffers}
        # hazard edges in program order, then explicit deps
        idx = {n: i for i, n in enumerate(names)}
        preds: list[set[int]] = [set() for _ in self.kernels]
        last_write: dict[str, int] = {}
        reads_since: dict[str, list[int]] = {}
        for j, k in enumerate(self.kernels):
            rb = {a.buffer for a in k.reads}
            wb = {a.buffer for a in k.writes}
            for b in rb:
                if b in last_write:
                    preds[j].add(last_write[b])  # RAW
            for b in wb:
                if b in last_write:
                    preds[j].add(last_write[b])  # WAW
                preds[j].update(reads_since.get(b, []))  # WAR
            for b in rb:
                reads_since.setdefault(b, []).append(j)
            for b in wb:
                last_write[b] = j
                reads_since[b] = []
            preds[j].discard(j)
        for before, after in deps:
            if before not in idx or after not in idx:
                raise ValueError(f"deps: unknown kernel in edge ({before!r}, {after!r})")
            preds[idx[after]].add(idx[before])
        self.preds = [sorted(p) for p in preds]
        self.order = _topological(self.preds, names)
        # global page index and per-kernel access arrays (reads and writes together), static and all
        self._acc: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for k in self.kernels:
            acc = [*k.reads, *k.writes]
            wg = np.concatenate([a.wg for a in acc]) if acc else np.zeros(0, np.int64)
            pg = np.concatenate([a.page + self.offset[a.buffer] for a in acc]) if acc else np.zeros(0, np.int64)
            nb = np.concatenate([a.nbytes for a in acc]) if acc else np.zeros(0)
            dyn = np.concatenate([np.full(a.wg.size, a.dynamic) for a in acc]) if acc else np.zeros(0, bool)
            self._acc.append((wg, pg, nb, dyn))

    def accesses(self, k: int, static: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(workgroup, global page, bytes) of kernel ``k``; ``static=True`` drops the dynamic accesses."""
        wg, pg, nb, dyn = self._acc[k]
        if static:
            keep = ~dyn
            return wg[keep], pg[keep], nb[keep]
        return wg, pg, nb

    def written_pages(self, k: int) -> np.ndarray:
        """Global pages kernel ``k`` writes."""
        ker = self.kernels[k]
        if not ker.writes:
            return np.zeros(0, np.int64)
        return np.unique(np.concatenate([a.page + self.offset[a.buffer] for a in ker.writes]))

    def read_only_pages(self) -> np.ndarray:
        """Mask of pages no kernel writes (weights, inputs, a KV cache read by this step)."""
        ro = np.array([self.read_only[b] for b in self.buffers])
        return ro[self.buffer_of_page]

    def requested_bytes(self) -> float:
        """Bytes requested by all workgroups (independent of any plan)."""
        return float(sum(a[2].sum() for a in self._acc))


def _topological(preds: list[list[int]] | list[set[int]], names: list[str]) -> list[int]:
    n = len(preds)
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for j, ps in enumerate(preds):
        for i in ps:
            succ[i].append(j)
            indeg[j] += 1
    ready = [j for j in range(n) if indeg[j] == 0]
    order: list[int] = []
    while ready:
        ready.sort()
        j = ready.pop(0)
        order.append(j)
        for s in succ[j]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    if len(order) != n:
        stuck = [names[j] for j in range(n) if indeg[j] > 0]
        raise ValueError(f"the kernel DAG has a cycle through {', '.join(stuck[:5])}")
    return order


def tile_pages(
    shape: tuple[int, int], rows: tuple[int, int], cols: tuple[int, int], elem_bytes: int, page_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Pages and bytes per page of the tile ``[r0:r1, c0:c1]`` of a row-major ``shape`` matrix.

    An empty tile (after clipping to the matrix) gives no pages.
    """
    for name, pair in (("shape", shape), ("rows", rows), ("cols", cols)):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"{name} must be a pair of integers; got {pair!r}")
        for v in pair:
            check_int(name, v)
    check_int("elem_bytes", elem_bytes, low=1)
    check_int("page_bytes", page_bytes, low=1)
    n_rows, n_cols = shape
    r0, r1 = max(0, rows[0]), min(n_rows, rows[1])
    c0, c1 = max(0, cols[0]), min(n_cols, cols[1])
    if r1 <= r0 or c1 <= c0:
        return np.zeros(0, np.int64), np.zeros(0)
    r = np.arange(r0, r1, dtype=np.int64)
    start = (r * n_cols + c0) * elem_bytes
    end = (r * n_cols + c1) * elem_bytes
    first, last = start // page_bytes, (end - 1) // page_bytes
    cnt = last - first + 1
    seg = np.repeat(np.arange(r.size), cnt)
    page = np.repeat(first, cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    nb = np.minimum(end[seg], (page + 1) * page_bytes) - np.maximum(start[seg], page * page_bytes)
    up, inv = np.unique(page, return_inverse=True)
    return up, np.bincount(inv, weights=nb.astype(float), minlength=up.size)


# ---------------------------------------------------------------------------------------------------- simulate
@dataclass
class Plan:
    """A schedule and a placement: ``dispatch[k][w]`` is the chiplet of workgroup ``w`` of kernel ``k``,
    ``home[p]`` the chiplet of page ``p``, ``replicated[p]`` whether ``p`` has a copy on every chiplet, and
    ``overlap`` whether independent kernels may run at the same time on disjoint chiplets.

    A plain record: :func:`simulate_chiplets` checks it against the DAG and the GPU (one dispatch per kernel,
    one home per page, chiplets in range)."""

    dispatch: list[np.ndarray]
    home: np.ndarray
    replicated: np.ndarray
    overlap: bool = False
    name: str = ""


@dataclass
class ChipletSimResult:
    """What :func:`simulate_chiplets` measured: makespan, per-kernel times, bytes and the access profile.

    A plain record of the simulator's output: it stores what it is given without checking (build it with
    :func:`simulate_chiplets`)."""

    makespan: float
    start: np.ndarray
    finish: np.ndarray
    kernel_time: np.ndarray
    memory_bound: np.ndarray  # kernel whose slowest chiplet is memory-bound
    local_bytes: float
    remote_bytes: float
    requested_bytes: float
    fetched: np.ndarray  # (chiplets, pages): bytes fetched by each chiplet from each page over the run
    busy: np.ndarray  # (chiplets,): busy time of each chiplet

    @property
    def remote_fraction(self) -> float:
        """Remote over fetched bytes."""
        tot = self.local_bytes + self.remote_bytes
        return self.remote_bytes / tot if tot > 0 else 0.0


def _check_plan(dag: KernelDAG, gpu: ChipletGPU, plan: Plan) -> None:
    c = gpu.chiplets
    if len(plan.dispatch) != len(dag.kernels):
        raise ValueError(
            f"plan.dispatch must have one array per kernel ({len(dag.kernels)}); got {len(plan.dispatch)}"
        )
    for k, d in zip(dag.kernels, plan.dispatch):
        if d.shape != (k.n_wg,) or d.min() < 0 or d.max() >= c:
            raise ValueError(f"plan.dispatch of kernel {k.name!r} must map its {k.n_wg} workgroups to 0..{c - 1}")
    if plan.home.shape != (dag.n_pages,) or plan.home.min() < 0 or plan.home.max() >= c:
        raise ValueError(f"plan.home must map the {dag.n_pages} pages to chiplets 0..{c - 1}")
    if plan.replicated.shape != (dag.n_pages,):
        raise ValueError(f"plan.replicated must have one flag per page ({dag.n_pages})")


def simulate_chiplets(dag: KernelDAG, gpu: ChipletGPU, plan: Plan) -> ChipletSimResult:
    """Run ``dag`` on ``gpu`` under ``plan``; see the module docstring for the cost model.

    Returns
    -------
    ChipletSimResult
        ``fetched`` is the profile a profiling run collects (bytes per chiplet and page).
    """
    if dag.page_bytes != gpu.page_bytes:
        raise ValueError(f"dag.page_bytes ({dag.page_bytes}) != gpu.page_bytes ({gpu.page_bytes})")
    _check_plan(dag, gpu, plan)
    c, npg, pb = gpu.chiplets, dag.n_pages, float(gpu.page_bytes)
    nk = len(dag.kernels)
    start, finish, ktime = np.zeros(nk), np.zeros(nk), np.zeros(nk)
    membound = np.zeros(nk, dtype=bool)
    free = np.zeros(c)
    busy = np.zeros(c)
    fetched_all = np.zeros((c, npg))
    loc_tot = rem_tot = 0.0
    prev_finish = 0.0
    for k in dag.order:
        ker = dag.kernels[k]
        d = plan.dispatch[k]
        wg, pg, nb = dag.accesses(k)
        chip = d[wg]
        key = chip * npg + pg
        uk, inv = np.unique(key, return_inverse=True)
        got = np.minimum(np.bincount(inv, weights=nb, minlength=uk.size), pb)
        uc, up = uk // npg, uk % npg
        np.add.at(fetched_all, (uc, up), got)
        local = plan.replicated[up] | (plan.home[up] == uc)
        lb = np.bincount(uc[local], weights=got[local], minlength=c)
        rb = np.bincount(uc[~local], weights=got[~local], minlength=c)
        loc_tot += float(lb.sum())
        rem_tot += float(rb.sum())
        n_c = np.bincount(d, minlength=c)
        fmax = np.zeros(c)
        np.maximum.at(fmax, d, ker.flops)
        comp = np.ceil(n_c / gpu.cus) * fmax / gpu.cu_flops
        mem = lb / gpu.local_bw + rb / gpu.remote_bw
        used = n_c > 0
        t = np.maximum(comp, mem) + gpu.local_latency + gpu.remote_latency * (rb > 0)
        t[~used] = 0.0
        slow = int(np.argmax(t))
        membound[k] = mem[slow] > comp[slow]
        dur = gpu.launch + float(t.max())
        deps = max((finish[p] for p in dag.preds[k]), default=0.0)
        if plan.overlap:
            s = max(deps, float(free[used].max()))
        else:
            s = max(deps, prev_finish)
        start[k], finish[k], ktime[k] = s, s + dur, dur
        free[used] = s + dur
        busy[used] += dur
        prev_finish = s + dur
    return ChipletSimResult(
        makespan=float(finish.max()),
        start=start,
        finish=finish,
        kernel_time=ktime,
        memory_bound=membound,
        local_bytes=loc_tot,
        remote_bytes=rem_tot,
        requested_bytes=dag.requested_bytes(),
        fetched=fetched_all,
        busy=busy,
    )


# ------------------------------------------------------------------------------------------------ policies
def _interleaved(dag: KernelDAG, c: int) -> np.ndarray:
    return np.arange(dag.n_pages, dtype=np.int64) % c


def _rr_dispatch(dag: KernelDAG, c: int) -> list[np.ndarray]:
    return [np.arange(k.n_wg, dtype=np.int64) % c for k in dag.kernels]


def _chunk_dispatch(n: int, chiplets: np.ndarray) -> np.ndarray:
    """Contiguous chunks of a grid over the given chiplets (workgroup w -> chiplets[w * m // n])."""
    m = chiplets.size
    return chiplets[(np.arange(n, dtype=np.int64) * m) // n]


class RR:
    """MGPUSim's default: workgroup :math:`w` of every kernel on chiplet :math:`w \\bmod C`, pages interleaved
    (page :math:`p` on chiplet :math:`p \\bmod C`), one stream (no overlap)."""

    name = "RR"

    def plan(self, dag: KernelDAG, gpu: ChipletGPU) -> Plan:
        """The plan of ``dag`` on ``gpu``."""
        c = gpu.chiplets
        return Plan(_rr_dispatch(dag, c), _interleaved(dag, c), np.zeros(dag.n_pages, bool), False, self.name)


class CLAP:
    """CLAP-like placement only (Park et al., MICRO'25): RR dispatch; a profiling run with small pages finds,
    for each group of ``group`` virtually contiguous pages, the chiplet that fetches most of it, and places
    the group there (a large page of ``group`` small pages).

    A group moves only when it has chiplet-locality (its main accessor fetches more than ``locality`` of
    its bytes); the others keep the default interleaving.

    Parameters
    ----------
    group : int
        Pages per group (CLAP's large-page size in small pages), >= 1.
    locality : float
        Share of a group's fetched bytes its main accessor must exceed, in [0, 1) (0.5 inferred).
    """

    name = "CLAP"

    def __init__(self, group: int = 16, locality: float = 0.5) -> None:
        if int(group) != group or group < 1:
            raise ValueError(f"group must be an integer >= 1; got {group!r}")
        check_real("locality", locality, low=0.0, high=1.0, high_inclusive=False)
        self.group = int(group)
        self.locality = float(locality)

    def plan(self, dag: KernelDAG, gpu: ChipletGPU) -> Plan:
        """Profile RR, then place each page group at its main accessor."""
        c = gpu.chiplets
        prof = simulate_chiplets(dag, gpu, RR().plan(dag, gpu)).fetched
        home = _interleaved(dag, c)
        for b, off in dag.offset.items():
            n = -(-dag.buffers[b] // dag.page_bytes)
            for g0 in range(0, n, self.group):
                sl = slice(off + g0, off + min(n, g0 + self.group))
                tot = prof[:, sl].sum(axis=1)
                if tot.max() > self.locality * tot.sum() and tot.max() > 0:
                    home[sl] = int(np.argmax(tot))
        return Plan(_rr_dispatch(dag, c), home, np.zeros(dag.n_pages, bool), False, self.name)


class LADM:
    """Locality-aware dispatch with first-touch (or main-accessor) placement, the strongest prior baseline we
    add (after Arunkumar et al. ISCA'17 batched CTA scheduling and Khairy et al. LADM): each kernel's grid in
    :math:`C` contiguous chunks, a page placed at the chiplet that first touches it (``placement="first"``)
    or that fetches most of it in a profiling run (``"main"``); one stream, no replication, no cross-kernel
    alignment beyond what the grid order gives."""

    name = "LADM"

    def __init__(self, placement: str = "first") -> None:
        if placement not in ("first", "main"):
            raise ValueError(f"placement must be 'first' or 'main'; got {placement!r}")
        self.placement = placement

    def plan(self, dag: KernelDAG, gpu: ChipletGPU) -> Plan:
        """Chunked dispatch, then first-touch or main-accessor placement."""
        c = gpu.chiplets
        all_c = np.arange(c)
        disp = [_chunk_dispatch(k.n_wg, all_c) for k in dag.kernels]
        home = _interleaved(dag, c)
        if self.placement == "first":
            seen = np.zeros(dag.n_pages, bool)
            for k in dag.order:
                wg, pg, _ = dag.accesses(k)
                o = np.lexsort((wg, pg))
                pg_s, ch_s = pg[o], disp[k][wg[o]]
                first = np.r_[True, pg_s[1:] != pg_s[:-1]]
                new = first & ~seen[pg_s]
                home[pg_s[new]] = ch_s[new]
                seen[pg_s[first]] = True
        else:
            prof = simulate_chiplets(dag, gpu, Plan(disp, home, np.zeros(dag.n_pages, bool))).fetched
            hit = prof.sum(axis=0) > 0
            home[hit] = np.argmax(prof[:, hit], axis=0)
        return Plan(disp, home, np.zeros(dag.n_pages, bool), False, self.name)


class ChordPolicy:
    """CHoRD: joint kernel-to-chiplet mapping, safe inter-kernel overlap and data placement.

    Parameters
    ----------
    mode : {"static", "profiled"}
        ``static`` derives every decision from the kernels' static index maps (dynamic, data-dependent
        accesses are invisible to it) and FLOP/byte estimates; ``profiled`` first runs the static plan once
        in the simulator (the "single lightweight run") and uses its full access profile and measured
        kernel times.
    replicate : bool
        Replicate read-only pages read by several chiplets, within ``capacity``.
    overlap : bool
        Run independent kernels (no hazard between them) at the same time on disjoint chiplet sets.
    capacity : float
        Memory per chiplet as a multiple of the program's footprint over :math:`C` (replicas must fit).

    Notes
    -----
    The four decisions of the abstract, as we reconstruct them (all inferred):

    1. *Chiplet-level kernel mapping*: kernels are visited in topological order; each workgroup gets an
       affinity :math:`a_{w,c}` = bytes it touches on pages already homed on :math:`c` (pages written by
       earlier kernels, homed with their writer); workgroups are assigned greedily by decreasing affinity to
       their best chiplet with room left (at most :math:`\\lceil n/|S| \\rceil` per chiplet of the kernel's set
       :math:`S`), and a workgroup without affinity goes to the contiguous chunk of the grid. The pages a
       kernel writes take the home of their main writer, so consumers align with producers.
    2. *Safe overlap*: kernels in the same level of the DAG (no path between them) share the chiplets, each
       getting a contiguous set sized in proportion to its estimated work (static: roofline of FLOPs and
       bytes; profiled: measured time x chiplets used), when the level has at most :math:`C` kernels.
    3. *Intra-chiplet parallelism* is not modelled beyond the waves of the cost model (our simulator has
       no per-CU contention to improve).
    4. *Data placement*: a never-written page goes to the chiplet that touches it most (static counts, or
       the profile); pages with no static access stay interleaved; read-only pages fetched by several
       chiplets are replicated while the per-chiplet capacity allows, largest saving first.
    """

    def __init__(
        self, mode: str = "static", replicate: bool = True, overlap: bool = True, capacity: float = 1.5
    ) -> None:
        if mode not in ("static", "profiled"):
            raise ValueError(f"mode must be 'static' or 'profiled'; got {mode!r}")
        check_real("capacity", capacity)
        if not capacity >= 1.0:
            raise ValueError(f"capacity must be >= 1 (the footprint must fit); got {capacity!r}")
        self.mode, self.replicate, self.overlap, self.capacity = mode, bool(replicate), bool(overlap), float(capacity)
        self.name = f"CHoRD-{mode}"

    def plan(self, dag: KernelDAG, gpu: ChipletGPU) -> Plan:
        """The joint plan; ``profiled`` simulates the static plan once first."""
        if self.mode == "static":
            return self._plan(dag, gpu, profile=None, times=None)
        first = ChordPolicy("static", self.replicate, self.overlap, self.capacity)._plan(dag, gpu, None, None)
        res = simulate_chiplets(dag, gpu, first)
        work = res.kernel_time * np.array([np.unique(d).size for d in first.dispatch])
        return self._plan(dag, gpu, profile=True, times=work)

    # the estimate of a kernel's work (chiplet-microseconds) without profiling: a roofline on one chiplet
    @staticmethod
    def _estimate(dag: KernelDAG, gpu: ChipletGPU, k: int) -> float:
        ker = dag.kernels[k]
        _, _, nb = dag.accesses(k, static=True)
        return max(float(ker.flops.sum()) / (gpu.cus * gpu.cu_flops), float(nb.sum()) / gpu.local_bw) + gpu.launch

    def _sets(self, dag: KernelDAG, gpu: ChipletGPU, times: np.ndarray | None) -> list[np.ndarray]:
        c = gpu.chiplets
        nk = len(dag.kernels)
        sets = [np.arange(c) for _ in range(nk)]
        if self.overlap:
            level = np.zeros(nk, np.int64)
            for k in dag.order:
                level[k] = max((level[p] + 1 for p in dag.preds[k]), default=0)
            for lv in np.unique(level):
                ks = [k for k in dag.order if level[k] == lv]
                if len(ks) < 2 or len(ks) > c:
                    continue
                w = np.array([times[k] if times is not None else self._estimate(dag, gpu, k) for k in ks])
                share = np.maximum(1, np.floor(w / w.sum() * c).astype(int))
                while share.sum() > c:
                    share[np.argmax(share)] -= 1
                while share.sum() < c:
                    share[np.argmax(w / share)] += 1
                at = 0
                for k, s in zip(ks, share):
                    sets[k] = np.arange(at, at + s)
                    at += s
        return sets

    def _plan(self, dag: KernelDAG, gpu: ChipletGPU, profile: bool | None, times: np.ndarray | None) -> Plan:
        c, npg = gpu.chiplets, dag.n_pages
        static = profile is None
        sets = self._sets(dag, gpu, times)
        home = np.full(npg, -1, np.int64)  # -1: not decided yet
        disp: list[np.ndarray] = [np.zeros(k.n_wg, np.int64) for k in dag.kernels]
        for k in dag.order:
            ker = dag.kernels[k]
            s = sets[k]
            wg, pg, nb = dag.accesses(k, static=static)
            known = home[pg] >= 0
            aff = np.zeros((ker.n_wg, c))
            np.add.at(aff, (wg[known], home[pg[known]]), nb[known])
            aff = aff[:, s]
            d = _chunk_dispatch(ker.n_wg, s)
            if aff.sum() > 0:
                cap = -(-ker.n_wg // s.size)
                room = np.full(s.size, cap)
                d = np.full(ker.n_wg, -1, np.int64)
                best = aff.max(axis=1)
                for w in np.argsort(-best, kind="stable"):
                    if best[w] <= 0:
                        break
                    for j in np.argsort(-aff[w], kind="stable"):
                        if room[j] > 0:
                            d[w] = s[j]
                            room[j] -= 1
                            break
                rest = np.flatnonzero(d < 0)
                if rest.size:  # the others keep grid order over the chiplets with room
                    slots = np.repeat(s, np.maximum(room, 0))
                    d[rest] = slots[(np.arange(rest.size) * slots.size) // rest.size]
            disp[k] = d
            # pages this kernel writes: home of the main writer (first writer wins)
            wpg = dag.written_pages(k)
            new = wpg[home[wpg] < 0]
            if new.size:
                m = np.isin(pg, new)
                acc = np.zeros((c, npg))
                np.add.at(acc, (d[wg[m]], pg[m]), nb[m])
                home[new] = np.argmax(acc[:, new], axis=0)
        # never-written pages: main accessor (static counts or the profile), else interleaved
        counts = np.zeros((c, npg))
        for k in range(len(dag.kernels)):
            wg, pg, nb = dag.accesses(k, static=static)
            np.add.at(counts, (disp[k][wg], pg), np.minimum(nb, dag.page_bytes))
        und = home < 0
        seen = und & (counts.sum(axis=0) > 0)
        home[seen] = np.argmax(counts[:, seen], axis=0)
        rest = und & ~seen
        home[rest] = np.flatnonzero(rest) % c
        rep = np.zeros(npg, bool)
        if self.replicate:
            ro = dag.read_only_pages()
            readers = (counts > 0).sum(axis=0)
            saving = counts.sum(axis=0) - counts[home, np.arange(npg)]
            cand = np.flatnonzero(ro & (readers > 1) & (saving > 0))
            budget = int(math.floor((self.capacity - 1.0) * npg / c))  # pages of spare room per chiplet
            rep[cand[np.argsort(-saving[cand], kind="stable")][:budget]] = True
        return Plan(disp, home, rep, self.overlap, self.name)
