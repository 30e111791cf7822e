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
