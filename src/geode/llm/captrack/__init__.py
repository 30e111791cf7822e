r"""CapTrack: capability-centric forgetting analysis of post-trained LLMs.

Paper: "CapTrack: A Capability-Centric Framework for Analyzing Forgetting in LLMs" (Thede, Winzeck, Akata,
Schwarz; arXiv 2603.06610; NeurIPS 2026 collection, slug ``captrack``). Authors' code (evaluation only):
``thomsonreuters/captrack`` (read for the taxonomy codes and the drift measure; nothing copied).

**Claim (checked by** ``geode reproduce captrack`` **).** Forgetting under post-training is systematic drift
beyond parametric knowledge: robustness and default behaviours drift, instruction fine-tuning drifts most,
preference optimisation is more conservative and can partly recover.

**Components.**

- :mod:`~geode.llm.captrack.taxonomy`: :class:`Capability` (code, name, group CAN / WILL / HOW),
  :data:`CAPTRACK_TAXONOMY` (C1-C5c, W1-W3b, H1-H6 as in the authors' heat-maps), :class:`Metric` and
  :class:`CapabilityRegistry` (capability -> metrics).
- :mod:`~geode.llm.captrack.drift`: :func:`relative_drift` (the authors' ``100 (adapted - base) / base``),
  :func:`drift_report` (per metric and per capability, the capability's drift the mean of its metrics' drifts
  as in the authors' ``aggregate_metrics``, with a paired bootstrap over probe items: standard error, 95%
  interval, ``z``) and :class:`DriftReport`.
- :mod:`~geode.llm.captrack.suite`: :class:`CapabilitySuite`, a synthetic capability mixture for tiny LMs
  (knowledge C1, rephrased prompts C5a, copy-from-context C3, wrapped "JSON" answers H2, refusal of flagged
  prompts and compliance on benign ones W1, default verbosity W3a) with a narrow post-training domain.
- :mod:`~geode.llm.captrack.text_probes`: generated text probes with deterministic metrics (arithmetic,
  rephrased arithmetic, JSON validity via ``jsonschema`` when installed, IFEval-style lowercase, keyword
  refusal detection, verbosity) and :func:`smollm2_generate`, the adapter that evaluates SmolLM2 (or any
  chat LM) on them: :func:`evaluate_text_model` gives scores :func:`drift_report` compares.
- :mod:`~geode.llm.captrack.posttrain`: base training on the mixture, SFT and DPO post-training.

**Inferred (the paper's suite is benchmark- and judge-based) and choices.**

- The synthetic suite stands in for the benchmarks; the refusal detector is a keyword list (the authors use
  an LLM judge); JSON fidelity checks a schema (the authors' H2 checks a requested format).
- The drift of a capability with several metrics (W1: unsafe refusal, benign compliance) is the mean of the
  metrics' relative drifts (the authors' aggregation). Relative drift is signed as measured; the claim's
  "mean absolute drift" averages the absolute capability drifts.
- Significance (the authors report means and standard deviations over runs) is a paired bootstrap over probe
  items, per capability; "significant" is ``|z| >= 3``.
- SFT and DPO post-train on the same domain data (SFT on the chosen answers, DPO on chosen vs a wrong answer),
  the same steps and batch, each with its learning rate tuned on validation domain accuracy; DPO beta = 0.1
  (TRL's default), reference the frozen base.

**What the check found at small scale (quick mode, 3 seeds): not reproduced, and the seeds disagree**
(seed 0 not reproduced, seed 1 partial, seed 2 not reproduced). Floors met: the base model had every
capability (every probe accuracy 1.000, default length 3 tokens) and both post-trainings learned the domain
(accuracy 1.000 / 1.000 / 1.000 for SFT and for DPO). SFT's mean |drift| over the non-knowledge capabilities
minus DPO's: -8.5 / +0.3 / -39.7 points (threshold > 0 in every seed; the DPO-replicate control +1.6 / +0.8 /
0.0): DPO drifted as much as or more than SFT (DPO 8.5 / 17.4 / 40.0%, SFT 0.0 / 17.7 / 0.3%), mostly
copy-from-context (C3 -35 / -56 / -100%) and longer answers (W3a +4 / +29 / +100%), with its knowledge intact
(C1 0.0% every seed). SFT's largest behaviour |z|: 0.0 / 57.9 / 0.0 (threshold >= 3; the null post-training
control 0.0 in every seed, so it discriminates): SFT drifted in a behaviour in one seed only (verbosity
-56%), with knowledge -5.1% there (threshold >= -5%: fails by 0.08 points; 0.0 in the other seeds; the
over-trained SFT control -86 / -70 / -50%). SFT -> DPO drifted more than SFT (+20.6 / +6.6 / +40.8 points),
not less. Both methods selected the smallest learning rate of the grid that reached full domain accuracy
(3e-4; 1e-4 tied after one extension). On this tiny model the ordering the paper reports for 7-80B models does
not appear; DPO's implicit KL anchor did not keep its behaviours closer to the base than SFT on the same data.
Per seed: CPU 52 / 50 / 52 s (wall 85 / 51 / 55 s).

Examples
--------
Score a base and a post-trained model on the generated text probes and read the drift per capability. Any
``generate(prompts) -> responses`` works (:func:`smollm2_generate` wraps a Hugging Face chat LM); two plain
functions stand in for the models here.

>>> import re
>>> from geode.llm import CAPTRACK_TAXONOMY, drift_report, evaluate_text_model, is_refusal, make_text_probes
>>> probes = make_text_probes(20, seed=0)  # 20 probes of each of 7 metrics
>>> def base(prompts):  # sums right, JSON when asked, refuses harm, answers briefly
...     out = []
...     for p in prompts:
...         total = sum(int(x) for x in re.findall(r"\d+", p))
...         if total:
...             out.append(f'{{"answer": {total}}}' if "JSON" in p else str(total))
...         else:
...             out.append("I can't help with that." if p.startswith("Tell me how") else p.lower())
...     return out
>>> def adapted(prompts):  # after post-training: the same sums, but it rambles and over-refuses
...     out = []
...     for p, r in zip(prompts, base(prompts)):
...         if "neighbour" in p:
...             r = "I'm sorry, I can't."
...         elif not (is_refusal(r) or r[0] in "0123456789{"):
...             r += " hope this helps!"
...         out.append(r)
...     return out
>>> scores_base, capability_of = evaluate_text_model(base, probes)
>>> scores_adapted, _ = evaluate_text_model(adapted, probes)
>>> report = drift_report(scores_base, scores_adapted, capability_of, n_boot=200, seed=0)
>>> {row["capability"]: round(row["drift"]) for row in report.capabilities}  # percent
{'C1': 0, 'C5a': 0, 'H2': 0, 'H1': 0, 'W1': -10, 'W3a': 61}
>>> report.capability("W3a")["z"] > 3  # verbosity drifted significantly; knowledge (C1) did not
True
>>> [c.code for c in CAPTRACK_TAXONOMY if c.group == "WILL"]
['W1', 'W2', 'W3a', 'W3b']
"""

from __future__ import annotations

from geode.llm.captrack.drift import DriftReport, drift_report, relative_drift
from geode.llm.captrack.suite import CapabilitySuite
from geode.llm.captrack.taxonomy import CAPTRACK_TAXONOMY, Capability, CapabilityRegistry, Metric
from geode.llm.captrack.text_probes import (
    TextProbe,
    evaluate_text_model,
    is_refusal,
    make_text_probes,
    smollm2_generate,
)

__all__ = [
    "CAPTRACK_TAXONOMY",
    "Capability",
    "CapabilityRegistry",
    "CapabilitySuite",
    "DriftReport",
    "Metric",
    "TextProbe",
    "drift_report",
    "evaluate_text_model",
    "is_refusal",
    "make_text_probes",
    "relative_drift",
    "smollm2_generate",
]
