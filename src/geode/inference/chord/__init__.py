"""CHoRD: chiplet-hierarchy-oriented residency and dispatch, joint kernel scheduling and data placement for
chiplet GPUs (paper ``chord``, NeurIPS 2026; the paper text is not public, only its abstract).

Claim, in one sentence: on 4-chiplet MGPUSim GPUs, coordinating chiplet-level kernel mapping, safe
inter-kernel overlap and access-driven data placement gives 2.57x (static) and 2.94x (profiled)
geometric-mean end-to-end speed-ups over round-robin dispatch, 1.46x / 1.66x over the placement-only CLAP,
with larger gains at 8 chiplets.

The components (a model study on our own simulator, not MGPUSim):

* :class:`ChipletGPU`, :class:`KernelDAG` (kernels, buffers, page-level accesses; hazard edges RAW/WAR/WAW;
  cycles rejected), :class:`Plan` and :func:`simulate_chiplets`, an analytic/event simulator: per chiplet a
  roofline of waves of workgroups against local and inter-chiplet bytes (L2 keeps a page once per kernel
  and chiplet), list scheduling with or without overlap; bytes are conserved
  (:mod:`geode.inference.chord.chiplet` has the equations);
* the policies :class:`RR` (MGPUSim's default), :class:`CLAP` (placement only), :class:`LADM` (chunked
  dispatch with first-touch placement, the strongest prior baseline we add) and :class:`ChordPolicy`
  (``mode="static"`` or ``"profiled"``);
* :func:`make_workload`: nine CNN and transformer inference DAGs (:data:`WORKLOADS`).

What we inferred (every item; the abstract is all we have):

* **Mapping.** Workgroups follow the pages their kernel touches that earlier kernels already homed
  (affinity in bytes), balanced over the kernel's chiplets; pages take the home of their main writer, so
  consumers align with producers. Without affinity, contiguous chunks of the grid.
* **Overlap.** Kernels on one level of the DAG (no path between them, at most :math:`C` of them) get
  disjoint contiguous chiplet sets in proportion to estimated work (static: a roofline estimate; profiled:
  measured time x chiplets).
* **Intra-chiplet parallelism** is not modelled beyond the cost model's waves.
* **Placement.** Never-written pages go to their main accessor; read-only pages fetched by several
  chiplets are replicated within a per-chiplet capacity of 1.5x the even share of the footprint.
* **Static vs profiled.** Static analysis sees the affine index maps of each workgroup's tiles, not the
  data-dependent accesses (gathers through token ids, paged-KV block tables, MoE routing); the profiled
  mode runs the static plan once in the simulator and uses the full accesses and measured kernel times.
* **CLAP.** Profiled on the RR run (all allocations, not a fraction: an upper bound on CLAP's profile);
  a group of ``group`` contiguous pages moves to its main accessor when it fetches more than half its bytes.
* **Hardware.** R9-Nano-like chiplets (16 CUs, 128 GB/s), inter-chiplet link at a quarter of local
  bandwidth (a second reading at an eighth in the claim), 4 KiB pages, latencies and launch overhead ours.
* **Workloads.** The paper's nine workloads are not listed in the abstract; ours are in
  :mod:`geode.inference.chord.workloads`.

Claim check: :mod:`geode.inference.chord.claim` (quick-mode verdict there).

Examples
--------
>>> import numpy as np
>>> from geode.inference import RR, Access, ChipletGPU, ChordPolicy, Kernel, KernelDAG, simulate_chiplets
>>> n, page = 64, 4096
>>> wg, pages = np.repeat(np.arange(n), 2), np.arange(2 * n)    # workgroup w touches pages 2w and 2w + 1
>>> def stream(name, src, dst):                                  # an elementwise kernel: dst = f(src)
...     reads = [Access(src, wg, pages, np.full(2 * n, page))]
...     return Kernel(name, n, flops=1e4, reads=reads, writes=[Access(dst, wg, pages, np.full(2 * n, page))])
>>> dag = KernelDAG({b: 2 * n * page for b in "xyz"}, [stream("scale", "x", "y"), stream("relu", "y", "z")])
>>> gpu = ChipletGPU(chiplets=4)
>>> rr = simulate_chiplets(dag, gpu, RR().plan(dag, gpu))              # round-robin dispatch, interleaved pages
>>> chord = simulate_chiplets(dag, gpu, ChordPolicy("static").plan(dag, gpu))
>>> round(rr.remote_fraction, 2), round(chord.remote_fraction, 2)     # share of bytes over the chiplet links
(0.75, 0.0)
>>> round(rr.makespan / chord.makespan, 2)                             # end-to-end speed-up over RR
2.68
"""

from __future__ import annotations

from geode.inference.chord.chiplet import (
    CLAP,
    LADM,
    RR,
    Access,
    ChipletGPU,
    ChipletSimResult,
    ChordPolicy,
    Kernel,
    KernelDAG,
    Plan,
    simulate_chiplets,
    tile_pages,
)
from geode.inference.chord.workloads import WORKLOADS, make_workload

__all__ = [
    "CLAP",
    "LADM",
    "RR",
    "WORKLOADS",
    "Access",
    "ChipletGPU",
    "ChipletSimResult",
    "ChordPolicy",
    "Kernel",
    "KernelDAG",
    "Plan",
    "make_workload",
    "simulate_chiplets",
    "tile_pages",
]
