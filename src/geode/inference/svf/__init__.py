"""SVF: Smallest Volume First scheduling for memory-constrained LLM serving, and its 1-bit variant.

Paper: "Geometry-Aware Online Scheduling for LLM Serving: From Theoretical Bound to System Practice"
(Li Kong, Qi Qi, Yinyu Ye, Zijie Zhou; NeurIPS 2026, arXiv 2606.22327).

Claim, in one sentence: ordering requests by the *volume* of their KV-cache footprint, the area under
the memory curve :math:`V = s\\,o + o(o+1)/2` of a request with prompt :math:`s` and output :math:`o`, gives
strong reductions of average and tail latency over time-centric schedulers (FCFS, SJF), 1-bit SVF
(one bit per request: long or short) is competitive, and SVF's competitive ratio with known output
lengths is at most 5.

The components:

* :class:`SVF`: a :class:`geode.inference.Policy` with priority :math:`\\hat V_i` (smallest first);
* :class:`OneBitSVF`: priority = the bit :math:`[\\hat V_i > \\theta]`, FCFS within a class;
* :func:`vllm_priority`: the integer ``priority`` values that make vLLM's ``priority`` scheduling policy
  follow SVF or 1-bit SVF;
* :mod:`geode.inference.svf.serve_sim`: the ``serve-sim`` command for a user's own trace.

They run on the field's simulator (:func:`geode.inference.simulate`), which carries the memory model,
admission, preemption and cost model; the batch-arrival benchmarks are in :mod:`geode.inference.bounds`.

What we inferred (the abstract is all the paper text available to us):

* **Volume.** The paper names "Smallest Volume First" and "2D spatio-temporal geometric growth"; we take
  the volume to be the trapezoid under the memory curve, :math:`\\sum_{j=1}^{o}(s + j)`, computed from the
  predicted output length.
* **Admission.** The paper does not specify it here; we use MC-SF's future-peak check (Jaillet et al.
  2025): a request is admitted only if the cache stays within :math:`M` at every predicted future
  completion, taking waiting requests in policy order and stopping at the first that does not fit
  (head-of-line, as vLLM does). With exact lengths no preemption then ever happens.
* **Preemption.** When memory does run out (under-predicted lengths, or vLLM-style greedy admission)
  the running request of lowest priority is preempted in vLLM's recompute mode: it keeps its generated
  tokens, loses its KV cache, and is prefilled again on readmission. Priorities are fixed at arrival,
  as vLLM's ``request.priority``.
* **The bit of 1-bit SVF.** Two readings (``OneBitSVF(variant=...)``): the paper's (issue 18), the bit
  classifies the predicted output length at the median and requests are ordered by a proxy volume with
  the known prompt and the class's median output; and ours (the default, ``"volume"``), predicted volume
  above the median, FCFS inside a class. The claim's verdict uses the paper's.
* **Anti-starvation.** ``SVF(aging=c)`` (our addition): the static key :math:`\\hat V_i + c\\,a_i`, the order
  of a priority that falls by :math:`c` per unit of waiting.
* **Cost model.** A step takes ``1 + prefill_tokens / 2048`` time units (one memory-bound decode step,
  plus one more per 2048 prefilled tokens); attention cost growing with the KV in use is not modelled.
* **Competitive ratio.** Measured in the batch-arrival, unit-step setting of the theory against the
  lower bound :math:`\\sum_k \\max(o_{(k)}, \\lceil \\sum_{i \\le k} V_{(i)}/M \\rceil)` and, for
  :math:`n \\le 10`, against the exact non-preemptive optimum (integer program).
* **Load.** The claim defines load against the server's measured capacity
  (:func:`geode.inference.workloads.measured_capacity`), not against :math:`M / E[V]`.
* **Workloads.** Azure conversation / code and arXiv summarisation length distributions are rebuilt from
  published quantiles (log-linear quantile interpolation; end points inferred); arrivals are Poisson, or
  Gamma renewal for burstiness. Real traces are not shipped.

Claim check (revision 2, issue 18; details in :mod:`geode.inference.svf.claim`): steady state at 70% and
90% of measured capacity, mean and p99 against FCFS and SJF, an adversarial competitive-ratio search
against the exact optimum with FCFS as its control, tail and aging sensitivity, and the third-party serQ
model's reference run as a check. Old verdict (revision 1, seed 0): not reproduced (mean -33% vs FCFS at
an offered load later measured as 91% of capacity; p99 above FCFS's; a CR test FCFS also passed).

Examples
--------
>>> from geode.inference import FCFS, SJF, SVF, OneBitSVF, simulate, synthetic_workload, vllm_priority, volume
>>> volume([900, 0], [10, 40]).tolist()            # KV-cache volume s*o + o(o+1)/2: a long prompt weighs
[9055, 820]
>>> w = synthetic_workload("azure-conv", 400, load=0.9, kv_slots=30_000, seed=0)   # or load_trace("my.csv")
>>> lat = {p.name: simulate(w, p, kv_slots=30_000).metrics()["mean_latency"] for p in (FCFS(), SJF(), SVF())}
>>> {name: round(v) for name, v in lat.items()}
{'FCFS': 422, 'SJF': 287, 'SVF': 269}
>>> simulate(w, OneBitSVF(), kv_slots=30_000).metrics()["mean_latency"] < lat["FCFS"]   # one bit per request
True
>>> vllm_priority("svf", [900, 0], [10, 40])        # priorities for vLLM's scheduling_policy="priority"
[9055, 820]
"""

from __future__ import annotations

from geode.inference.svf.policies import SVF, OneBitSVF, vllm_priority

__all__ = ["SVF", "OneBitSVF", "vllm_priority"]
