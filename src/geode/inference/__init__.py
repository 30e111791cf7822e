"""Inference systems: a discrete-event LLM serving simulator with a KV-cache memory model, and the field's methods.

* :mod:`geode.inference.serving`: requests (:class:`Workload`), the cost model, the baseline policies
  :class:`FCFS` and :class:`SJF`, and :func:`simulate`;
* :mod:`geode.inference.workloads`: length distributions rebuilt from public trace statistics, Poisson
  and Gamma arrivals, and a CSV loader for a user's own trace;
* :mod:`geode.inference.bounds`: batch-arrival lower bound and exact optimum (competitive ratios);
* :mod:`geode.inference.svf`: Smallest Volume First and 1-bit SVF (paper ``svf``);
* :mod:`geode.inference.chord`: a chiplet-GPU kernel-DAG simulator and CHoRD's joint scheduling and data
  placement, with RR, CLAP and LADM (paper ``chord``);
* :mod:`geode.inference.spirit`: layer-skipping self-speculative decoding with lossless greedy verification,
  and SPIRIT-like and SWIFT-like skip-set policies on a shifting request stream (paper ``spirit``);
* :mod:`geode.inference.speculative`: the speculative-decoding core: draft trees, lossless greedy and sampling
  tree verification, a KV-cached target session for HF causal LMs, acceptance statistics, a cost model;
* :mod:`geode.inference.specblock`: SpecBlock's block-iterative drafter with EAGLE-like and Medusa-like
  drafters and the cost-aware bandit (paper ``specblock``).

Papers and their names
----------------------
Every paper's public names are importable from the field (``from geode.inference import SVF``) and from the
paper's package (``from geode.inference.svf import SVF``); ``geode show <slug>`` prints the same with an example.

``svf``: Smallest Volume First scheduling for memory-constrained LLM serving::

    from geode.inference import SVF, OneBitSVF, vllm_priority

* ``SVF``: the policy that serves the request of smallest KV-cache volume first (``aging=`` against starvation);
* ``OneBitSVF``: 1-bit SVF, one bit per request (long or short), FCFS inside a class;
* ``vllm_priority``: the integer ``priority`` values that make vLLM's priority scheduler follow SVF or 1-bit SVF.

Run them with the field's simulator (``simulate``, ``Workload``, ``load_trace`` for a CSV trace, the
``geode serve-sim`` command).

``chord``: CHoRD, joint kernel scheduling and data placement on chiplet GPUs::

    from geode.inference import (CLAP, LADM, RR, WORKLOADS, Access, ChipletGPU, ChipletSimResult, ChordPolicy,
                                 Kernel, KernelDAG, Plan, make_workload, simulate_chiplets, tile_pages)

* ``ChordPolicy``: CHoRD's planner (``mode="static"`` or ``"profiled"``): kernel mapping, overlap, placement;
* ``RR``, ``CLAP``, ``LADM``: the baselines (round robin, placement only, locality-aware dispatch);
* ``ChipletGPU``: the hardware (chiplets, compute units, local and inter-chiplet bandwidth, latencies);
* ``Kernel``, ``Access``, ``KernelDAG``: a program as kernels over buffers, with the pages each workgroup touches;
* ``Plan``: a dispatch of workgroups to chiplets and a placement of pages;
* ``simulate_chiplets``: run a DAG under a plan; ``ChipletSimResult``: makespan, bytes, per-kernel times;
* ``make_workload``, ``WORKLOADS``: the nine CNN and transformer inference DAGs (a tuple of their names);
* ``tile_pages``: the pages and bytes of a tile of a row-major matrix (to describe your own kernels).

``spirit``: SPIRIT, self-speculative decoding by layer skipping::

    from geode.inference import (DecodeStats, SpiritPolicy, StaticPolicy, SwiftPolicy, greedy_decode, matchness,
                                 run_stream, self_speculative_decode, skip_layers, skippable_layers, step_cost)

* ``self_speculative_decode``: lossless greedy decoding with drafts from the model minus a set of layers;
* ``greedy_decode``: the plain greedy reference; ``DecodeStats``: forwards, acceptance, modelled speed;
* ``SpiritPolicy``: SPIRIT's speed-driven choice of the skip set over a request stream (shift-aware);
* ``SwiftPolicy``, ``StaticPolicy``: the SWIFT-like agreement baseline and a fixed skip set;
* ``run_stream``: decode a stream of requests window by window under a policy;
* ``skip_layers`` (a context manager), ``skippable_layers``, ``matchness``, ``step_cost``: the pieces.

``specblock``: SpecBlock, block-iterative speculative drafting::

    from geode.inference import (BRANCH_WIDTHS, CostAwareBandit, DrafterData, EagleDrafter, ParallelDrafter,
                                 SpecBlockDrafter, drafter_loss, evaluate_drafter, make_drafter_data, prune_tree,
                                 rank_buckets, rank_features, train_drafter)

* ``SpecBlockDrafter``: the drafter (K dependent positions per call, layer-wise shift, rank head);
* ``EagleDrafter``, ``ParallelDrafter``: the EAGLE-like autoregressive and Medusa-like parallel baselines;
* ``make_drafter_data`` (returns ``DrafterData``), ``train_drafter``, ``evaluate_drafter``: drafter training
  on your own HF causal LM and prompts (of any lengths; ``verbose=True`` shows progress);
* ``drafter_loss``: the training loss (valid-prefix mask, training-time test, rank loss);
* ``CostAwareBandit``: whether a deployment-time drafter update pays for itself;
* ``prune_tree``, ``rank_buckets``, ``rank_features``, ``BRANCH_WIDTHS`` (children per rank bucket): tree pieces.

Decode with the field's core: ``speculative_decode`` (lossless tree verification) returns ``SpecStats``.
"""

from __future__ import annotations

from geode.inference import chord as _chord
from geode.inference import specblock as _specblock
from geode.inference import spirit as _spirit
from geode.inference import svf as _svf
from geode.inference.bounds import adversarial_batch_ratio, batch_lower_bound, optimal_batch_cost
from geode.inference.chord import *  # noqa: F403
from geode.inference.serving import FCFS, SJF, CostModel, Policy, SimResult, Workload, simulate, volume
from geode.inference.specblock import *  # noqa: F403
from geode.inference.speculative import (
    DraftTree,
    SpecCostModel,
    SpecStats,
    TargetSession,
    acceptance_probs,
    autoregressive_decode,
    speculative_decode,
    verify_greedy,
    verify_sampling,
)
from geode.inference.spirit import *  # noqa: F403
from geode.inference.svf import *  # noqa: F403
from geode.inference.workloads import (
    TRACES,
    arrival_times,
    load_trace,
    measured_capacity,
    predict_output_lengths,
    rate_for_load,
    synthetic_workload,
)

__all__ = [
    "FCFS",
    "SJF",
    "TRACES",
    "CostModel",
    "DraftTree",
    "Policy",
    "SimResult",
    "SpecCostModel",
    "SpecStats",
    "TargetSession",
    "Workload",
    "acceptance_probs",
    "adversarial_batch_ratio",
    "arrival_times",
    "autoregressive_decode",
    "batch_lower_bound",
    "load_trace",
    "measured_capacity",
    "optimal_batch_cost",
    "predict_output_lengths",
    "rate_for_load",
    "simulate",
    "speculative_decode",
    "synthetic_workload",
    "verify_greedy",
    "verify_sampling",
    "volume",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_svf.__all__, *_chord.__all__, *_spirit.__all__, *_specblock.__all__]
