"""Claim check of optimization engagement (AGOP vs probe concept subspace) on a synthetic agreement language.

Thresholds (fixed by the issue, before any run): ``reproduced`` if the Spearman correlation between the
engagement :math:`E` and :math:`|dB/dt|` over the checkpoints exceeds 0.3 in at least 4 of 5 seeds AND
:math:`E`'s peak precedes or coincides with the steepest rise of the behaviour :math:`B` in at least 3 of
5 seeds; ``partial`` if the correlation condition holds. The harness turns "k of 5" into the fraction
k/5 of the seeds run: with the protocol's 3 seeds, "4 of 5" needs 3 of 3 and "3 of 5" needs 2 of 3.

The set-up (written before the first run of this claim):

- *task and model*: :class:`~geode.analysis.agop_engagement.experiment.AgreementLanguage` (``BOS subj
  d1 d2 d3 d4 verb``; 8+8 nouns, 4 verb lemmas x 2 forms, 16 fillers, an attractor noun of the opposite
  number in one slot with probability 0.5), a 2-layer pre-LN transformer (d=64, 2 heads), AdamW (lr
  1e-3, weight decay 0.01, batch 64, gradient clipping at 1) on the next-token loss of every position,
  2000 steps (quick), 30 checkpoints log-spaced from step 0 (as Pythia's early checkpoints);
- *behaviour* :math:`B`: minimal-pair probability of the agreeing verb form at the verb-prediction
  position on 512 evaluation sequences; :math:`|dB/dt|` is the central difference of :math:`B` over the
  checkpoint index (``numpy.gradient``), and the "steepest rise" is its argmax;
- *engagement* :math:`E` per block output (``blocks.0``, ``blocks.1``): the AGOP of the summed
  next-token loss over every position of the 512 evaluation sequences, against the 1-dimensional subspace
  of a logistic-regression probe of subject number at the verb-prediction position (256 probe-training
  sequences, 256 validation sequences, other than the evaluation ones), normalised by a random
  subspace (:func:`~geode.analysis.agop_engagement.engagement`); the verdict uses the mean of the two
  blocks' :math:`E` (per-block values are reported);
- *equal tuning*: the probe's inverse L2 strength ``C`` is the only tuned quantity; the concept probe and
  the shuffled-label control probe of each block get the same grid, selected on validation accuracy at
  the final checkpoint (``tune``, one extension past an edge), and used at every checkpoint. The model's
  training is not tuned: all measurements read the same training run.

Added before the first run (the protocol needs them; the issue names none):

- *validity floors* (every seed): the model learns agreement (:math:`B \\geq 0.9` at the last
  checkpoint), :math:`B` actually changes (:math:`B_\\text{last} - B_0 \\geq 0.3`), and the concept is
  linearly decodable at the end (the better block's probe validation accuracy >= 0.9);
- *negative controls* for both thresholds: the engagement of a fixed random direction (same AGOP), and of
  the subspace of a probe fitted to shuffled subject-number labels (same procedure, no concept);
- *baselines reported beside* (not judged): the AGOP trace (gradient norm) and the probe-accuracy curve,
  each correlated with :math:`|dB/dt|` the same way (the gradient norm is the strongest reasonable
  baseline: it needs no probe);
- *other readings* (inferred details that could decide the verdict; reported, not judged): the AGOP
  restricted to the verb-prediction position (``verb_*``), the principal-angle alignment of the probe
  direction with the AGOP's top eigenvector (``align_*``), each block alone, a "lead within one decade
  of steps" reading of precedence (the peak is at or before the steepest rise and at a step >= 1/10 of
  its step, which a peak at initialisation fails), and the number of peaks of :math:`E` (local maxima at
  >= 80% of the maximum; the paper reports single peaks, plateaus and multiple peaks).

Seen before these rules were fixed: one exploratory run of seed 0 (with ``C = 1``) while building the
pipeline; it showed :math:`B` rising between steps ~230 and ~400 and :math:`E` rising before it. Nothing
was changed after it except writing the rules above.

Changed after the first quick run (3 seeds; not a threshold): the probes' ``C`` grid kept one extension
past an edge, and in seed 1 two probes were selected on the extended upper edge (``C = 100``); the
protocol asks for a larger grid, so ``extend`` is now 2 (quick and full). In seed 1 the same two probes
then select ``C = 1000`` (validation accuracy 0.770 against 0.766 at ``C = 100``: the unregularised
limit, where accuracy has stopped moving), which the run flags and we left there. The verdict and both
threshold outcomes were the same before and after (first run: rho 0.50, -0.21, 0.42).

Quick-mode verdict over 3 seeds (seeds 0-2, measured with these rules): **not reproduced**, and unstable
(per seed: reproduced, not reproduced, reproduced). All floors met in every seed (B at the end 0.999,
a rise of 0.49-0.50 from chance; the block-1 probe decodes subject number at 1.00). 31-34 CPU-seconds
per seed (81-95 s wall under contention).

- ``aligned`` fails: rho(E, |dB/dt|) = +0.50, -0.13, +0.42 (> 0.3 in 2 of 3 seeds; "4 of 5" needs 3 of 3).
  It would not carry a verdict anyway: the shuffled-label probe control passes it in every seed (rho
  +0.58, +0.53, +0.69, higher than the concept's), while the random-direction control fails it (-0.35,
  -0.22, +0.59). The engagement of *any* data-fitted probe direction rises around the behavioural
  transition here, so the correlation is not specific to the concept.
- ``precedes`` holds (3 of 3 seeds: E peaks at step 77, 174, 174; steepest rise of B at 299, 174, 174,
  i.e. a lead of 5, 0, 0 checkpoints) but does not discriminate either: the shuffled-label control
  peaks at or before the rise in 2 of 3 seeds (the random direction in 1 of 3).
- Other readings (not judged): block 0 alone rho +0.65, -0.33, +0.65; block 1 alone +0.24, +0.00,
  +0.25; the AGOP at the verb-prediction position only +0.40, +0.21, +0.39; the eigen-alignment +0.59,
  -0.19, -0.42. Baselines: the gradient norm (AGOP trace) anti-correlates (-0.31, -0.42, -0.23; it
  decays from initialisation and peaks at step 0, so it "precedes" trivially); the probe-accuracy curve
  +0.18, +0.10, +0.28. The peak lies within a decade of steps before the rise in every seed (random
  direction: never; shuffled probe: 2 of 3). E shows a single peak in seeds 0 and 2 and three peaks in
  seed 1 (the paper's "multiple peaks" pattern).

The issue's 5 seeds (seeds 3 and 4 run after, same rules, ``--seeds 5``): still **not reproduced**
(per seed: reproduced, not, reproduced, not, reproduced). rho = +0.50, -0.13, +0.42, -0.08, +0.41
(> 0.3 in 3 of 5; needs 4); with 5 seeds the shuffled-label control passes ``aligned`` in 3 of 5 only
(+0.58, +0.53, +0.69, +0.03, -0.18), so the threshold discriminates there, barely; ``precedes`` holds in
5 of 5 (leads 5, 0, 0, 0, 2 checkpoints) and the shuffled control passes it in 4 of 5 (does not
discriminate). The probe-accuracy baseline correlates about as well as E (rho +0.18, +0.10, +0.28,
+0.54, +0.35); E has 1, 3, 1, 2, 1 peaks.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

RHO = 0.3  # the Spearman threshold
PEAK_FRACTION = 0.8  # a peak of E: a local maximum at >= 80% of the series' maximum (reported only)

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        train=dict(steps=40, n_checkpoints=6, lr=1e-3, d=16, n_layers=2, heads=2, batch=16),
        n_eval=32,
        n_probe=64,
        grid=[0.1, 1.0],
        extend=0,
    ),
    "quick": dict(
        train=dict(steps=2000, n_checkpoints=30, lr=1e-3, d=64, n_layers=2, heads=2, batch=64),
        n_eval=512,
        n_probe=512,
        grid=[0.01, 0.1, 1.0, 10.0],
        extend=2,
    ),
    # full: a wider, deeper model trained longer (written for a GPU machine; same language and rules)
    "full": dict(
        train=dict(steps=20000, n_checkpoints=40, lr=5e-4, d=256, n_layers=4, heads=4, batch=128),
        n_eval=2048,
        n_probe=2048,
        grid=[0.01, 0.1, 1.0, 10.0],
        extend=2,
    ),
}


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    r = float(spearmanr(a, b).statistic)
    return r if math.isfinite(r) else 0.0


def _n_peaks(e: np.ndarray) -> int:
    top = PEAK_FRACTION * float(np.max(e))
    pad = np.concatenate([[-np.inf], e, [-np.inf]])
    return int(sum(pad[i] > pad[i - 1] and pad[i] >= pad[i + 1] and pad[i] >= top for i in range(1, len(e) + 1)))


@register(
    "agop-engagement",
    claim=(
        "Optimization engagement (alignment of the next-token loss's AGOP with a probe-defined concept "
        "subspace) is temporally aligned with behavioural change on the concept and tends to peak before "
        "the largest behavioural change, though not universally."
    ),
    paper_figure=(
        "12 lexical/syntactic/semantic tasks x 19 Pythia-410M/1B checkpoints: engagement temporally aligned "
        "with behaviour, often peaking before the largest behavioural change; also plateaus and multiple peaks"
    ),
    baselines=("random-direction engagement", "shuffled-label probe engagement", "gradient norm (AGOP trace)"),
    thresholds=(
        Threshold(
            "aligned",
            "rho_engagement",
            ">",
            RHO,
            "Spearman rho(E, |dB/dt|) over the checkpoints > 0.3 (E: mean over blocks) in >= 4 of 5 seeds",
            agg="4 of 5",
            control=("rho_random", "rho_shuffled"),
            arms=("engagement", "probe @ blocks.0", "probe @ blocks.1"),
        ),
        Threshold(
            "precedes",
            "precedes",
            ">=",
            1.0,
            "E's peak is at or before the steepest rise of B (1 = yes) in >= 3 of 5 seeds",
            agg="3 of 5",
            control=("random_precedes", "shuffled_precedes"),
            arms=("engagement", "probe @ blocks.0", "probe @ blocks.1"),
        ),
    ),
    floors=(
        Threshold(
            "learns",
            "behaviour_final",
            ">=",
            0.9,
            "floor: B >= 0.9 at the last checkpoint (every seed)",
            agg="all",
        ),
        Threshold(
            "behaviour_changes",
            "behaviour_rise",
            ">=",
            0.3,
            "floor: B rises by >= 0.3 from the first to the last checkpoint (every seed)",
            agg="all",
        ),
        Threshold(
            "concept_decodable",
            "probe_final",
            ">=",
            0.9,
            "floor: subject number decodable (probe validation accuracy >= 0.9, better block) at the end",
            agg="all",
            arms=("probe @ blocks.0", "probe @ blocks.1"),
        ),
    ),
    reproduced="aligned and precedes",
    partial="aligned",
    key_metric="rho_engagement",
    method="engagement",
    tuned=("probe @ blocks.0", "probe @ blocks.1", "shuffled @ blocks.0", "shuffled @ blocks.1"),
    untuned={
        "engagement": "the paper's measure (AGOP engagement of the probe's subspace): nothing to tune",
        "random direction": "no hyper-parameter: a fixed random direction under the same AGOP",
        "gradient norm": "no hyper-parameter: the AGOP trace",
    },
)
def run(mode: str, seed: int) -> Outcome:
    from sklearn.exceptions import ConvergenceWarning

    from geode.analysis.agop_engagement.engagement import concept_subspace
    from geode.analysis.agop_engagement.experiment import (
        AgreementLanguage,
        _features,
        make_sets,
        measure_series,
        shuffled_labels,
        train_checkpoints,
    )

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    lang = AgreementLanguage()
    model, ckpts, states, last_loss = train_checkpoints(lang, seed=seed, **cfg["train"])
    eval_set, probe_set = make_sets(lang, cfg["n_eval"], cfg["n_probe"], seed)
    ids_p, plural_p, _ = probe_set
    n_tr = len(plural_p) // 2
    shuffled = shuffled_labels(plural_p, seed)
    layers = [f"blocks.{i}" for i in range(cfg["train"]["n_layers"])]

    # equal tuning of the probes' C at the final checkpoint, on validation accuracy
    model.load_state_dict(states[-1])
    feats = {lay: _features(model, ids_p, i) for i, lay in enumerate(layers)}

    def fit(method: str, p: dict[str, Any]) -> float:
        kind, lay = method.split(" @ ")
        y = plural_p if kind == "probe" else shuffled
        _, probe = concept_subspace(feats[lay][:n_tr], y[:n_tr], 1, C=p["C"], return_probe=True)
        return float(probe.score(feats[lay][n_tr:], y[n_tr:]))

    methods = [f"{k} @ {lay}" for lay in layers for k in ("probe", "shuffled")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = tune(fit, {m: {"C": list(cfg["grid"])} for m in methods}, maximize=True, extend=cfg["extend"])
        c_probe = {lay: float(res.params(f"probe @ {lay}")["C"]) for lay in layers}
        c_shuf = {lay: float(res.params(f"shuffled @ {lay}")["C"]) for lay in layers}
        s = measure_series(model, ckpts, states, lang, eval_set, probe_set, C=c_probe, C_shuffled=c_shuf, seed=seed)

    b = s.behaviour
    db = np.abs(np.gradient(b))
    rise = int(np.argmax(np.gradient(b)))
    mean = {
        k: np.mean([getattr(s, k)[lay] for lay in layers], axis=0)
        for k in ("e", "e_verb", "align", "e_random", "e_shuffled", "grad_norm", "probe_acc")
    }

    def precedes(e: np.ndarray) -> float:
        return float(int(np.argmax(e)) <= rise)

    def within_decade(e: np.ndarray) -> float:
        p = int(np.argmax(e))
        return float(p <= rise and ckpts[p] >= ckpts[rise] / 10.0)

    metrics: dict[str, float] = {
        "rho_engagement": _spearman(mean["e"], db),
        "rho_random": _spearman(mean["e_random"], db),
        "rho_shuffled": _spearman(mean["e_shuffled"], db),
        "rho_grad_norm": _spearman(mean["grad_norm"], db),
        "rho_probe_acc": _spearman(mean["probe_acc"], db),
        "rho_verb": _spearman(mean["e_verb"], db),
        "rho_align": _spearman(mean["align"], db),
        **{f"rho_engagement_{lay.replace('.', '')}": _spearman(s.e[lay], db) for lay in layers},
        "precedes": precedes(mean["e"]),
        "random_precedes": precedes(mean["e_random"]),
        "shuffled_precedes": precedes(mean["e_shuffled"]),
        "grad_norm_precedes": precedes(mean["grad_norm"]),
        "verb_precedes": precedes(mean["e_verb"]),
        **{f"precedes_{lay.replace('.', '')}": precedes(s.e[lay]) for lay in layers},
        "precedes_within_decade": within_decade(mean["e"]),
        "random_precedes_within_decade": within_decade(mean["e_random"]),
        "shuffled_precedes_within_decade": within_decade(mean["e_shuffled"]),
        "lead_checkpoints": float(rise - int(np.argmax(mean["e"]))),
        "peak_step": float(ckpts[int(np.argmax(mean["e"]))]),
        "steepest_rise_step": float(ckpts[rise]),
        "n_peaks": float(_n_peaks(mean["e"])),
        "max_engagement": float(np.max(mean["e"])),
        "behaviour_final": float(b[-1]),
        "behaviour_rise": float(b[-1] - b[0]),
        "probe_final": float(max(s.probe_acc[lay][-1] for lay in layers)),
        "shuffled_probe_final": float(max(s.shuffled_acc[lay][-1] for lay in layers)),
        "train_loss_final": float(last_loss),
    }
    table = [
        {
            "checkpoint": i,
            "step": st,
            "B": float(b[i]),
            "|dB/dt|": float(db[i]),
            "E (mean)": float(mean["e"][i]),
            **{f"E {lay}": float(s.e[lay][i]) for lay in layers},
            "E verb-pos": float(mean["e_verb"][i]),
            "alignment": float(mean["align"][i]),
            "E random dir": float(mean["e_random"][i]),
            "E shuffled probe": float(mean["e_shuffled"][i]),
            "AGOP trace": float(mean["grad_norm"][i]),
            "probe acc": float(mean["probe_acc"][i]),
        }
        for i, st in enumerate(ckpts)
    ]
    summary = (
        f"rho(E, |dB/dt|) {metrics['rho_engagement']:+.2f} (random dir {metrics['rho_random']:+.2f}, shuffled "
        f"probe {metrics['rho_shuffled']:+.2f}, grad norm {metrics['rho_grad_norm']:+.2f}); E peaks at step "
        f"{ckpts[int(np.argmax(mean['e']))]}, steepest rise of B at step {ckpts[rise]}"
    )
    notes = [
        *res.notes(),
        f"Probe C selected on validation at the final checkpoint: concept {c_probe}, shuffled {c_shuf}.",
        "Per-block rho(E, |dB/dt|): "
        + ", ".join(f"{lay} {_spearman(s.e[lay], db):+.2f}" for lay in layers)
        + f"; verb-position AGOP {metrics['rho_verb']:+.2f}; eigen-alignment {metrics['rho_align']:+.2f}; "
        f"probe accuracy {metrics['rho_probe_acc']:+.2f}.",
        f"Precedence: lead {int(metrics['lead_checkpoints'])} checkpoints; within one decade of steps: "
        f"{bool(metrics['precedes_within_decade'])} (random dir {bool(metrics['random_precedes_within_decade'])}, "
        f"shuffled {bool(metrics['shuffled_precedes_within_decade'])}); peaks of E (>= 80% of max): "
        f"{int(metrics['n_peaks'])}.",
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    return Outcome(
        metrics={k: (v if math.isfinite(v) else 1e6) for k, v in metrics.items()},
        table=table,
        summary=summary,
        notes=notes,
        tuned=res.table(),
    )
