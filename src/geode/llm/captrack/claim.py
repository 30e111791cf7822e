"""Claim check of CapTrack: post-training forgetting goes beyond knowledge, and SFT drifts more than DPO.

Thresholds (fixed by the issue, before any run): ``reproduced`` if SFT's mean absolute drift over the
non-knowledge capabilities exceeds DPO's in all seeds AND the drift of at least one behaviour capability
(WILL or HOW) is significant while knowledge accuracy holds; ``partial`` if the SFT > DPO ordering holds.

Made precise before the first run (the issue leaves these open):

- *significant*: the largest ``|z|`` over the behaviour capabilities (W1, W3a, H2) of SFT's drift is >= 3, with
  ``z`` the drift over its paired-bootstrap standard error over probe items (3 is about a Bonferroni-corrected
  two-sided 5% over the capabilities measured), in every seed;
- *knowledge holds*: SFT's C1 (knowledge) relative drift is >= -5% in every seed;
- the drift measure is the authors' relative difference ``100 (adapted - base) / base`` per metric,
  averaged per capability.

Added before the first run (the protocol needs them; the issue names none):

- *validity floors*: the base model has every capability (the smallest base score among the accuracy-type
  probes >= 0.7, every seed); both post-trainings learn the domain (domain accuracy >= 0.5 for SFT and for
  DPO, mean over seeds; the base is at chance, ~0.1);
- *negative controls*: for the SFT > DPO ordering, a second DPO run (another data stream) in place of SFT
  (the noise floor of the difference); for significance, a null post-training (continued training on the
  base's own mixture, SFT's steps and learning rate), whose behaviour drift must not be significant; for
  knowledge holding, SFT at 10x its selected learning rate (over-training, which must show as lost knowledge).

Equal tuning: SFT and DPO tune the learning rate on validation domain accuracy (what a practitioner selects
on), the same grid, steps and batch. SFT -> DPO (DPO from the SFT model, the SFT model as reference, DPO's
selected learning rate) is reported, not judged (the paper: DPO "can partially recover").

Set-up changes before the final run (thresholds untouched; each earlier run was seed 0 only):

1. domain ``(x1 + x2) mod 10``, filler length uniform in {1, 2, 3}: ``inconclusive``, floor
   ``sft_learns_domain`` failed (SFT domain accuracy 0.199, DPO 0.539); the greedy response length sat on a
   knife-edge between equally likely lengths. Changed: a lookup domain, filler length 2 the clear mode.
2. domain = a second fact table about the *same entities* as the knowledge probes: floors met, but the
   post-training data contradicted C1 by construction (knowledge drift SFT -78.9%, DPO -93.8%; SFT minus DPO
   non-knowledge drift -7.2 points), so this run would have read ``not reproduced``. That measured
   interference built into the task, not forgetting; changed (after seeing it, said here) to a digit table
   ``BOS MUL d EQ -> w(d)`` that shares no prompt token with the knowledge probes but the digits.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        model=dict(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=64, max_positions=16),
        pretrain=dict(steps=30, batch_size=32),
        post=dict(steps=3, batch_size=8),
        lrs=[3e-4, 3e-3],
        extend=0,
        n_probe=32,
        n_boot=200,
    ),
    "quick": dict(
        model=dict(d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=128, max_positions=16),
        pretrain=dict(steps=1500, batch_size=64),
        post=dict(steps=150, batch_size=32),
        lrs=[3e-4, 1e-3, 3e-3],
        extend=1,
        n_probe=256,
        n_boot=1000,
    ),
    # full: a wider tiny Llama, longer training and more probes (written for a GPU machine)
    "full": dict(
        model=dict(d_model=256, n_layers=4, n_heads=4, n_kv_heads=2, max_positions=16),
        pretrain=dict(steps=6000, batch_size=128),
        post=dict(steps=600, batch_size=64),
        lrs=[1e-4, 3e-4, 1e-3, 3e-3],
        extend=2,
        n_probe=2048,
        n_boot=2000,
    ),
}

ACC_PROBES = ("knowledge", "rephrased", "context", "format", "refusal", "compliance")
BEHAVIOUR = ("W1", "W3a", "H2")
NON_KNOWLEDGE = ("C3", "C5a", "W1", "W3a", "H2")
METHODS = ("sft", "dpo")


@register(
    "captrack",
    claim=(
        "Post-training forgetting goes beyond parametric knowledge: robustness and default behaviours drift, "
        "and instruction fine-tuning drifts more than preference optimisation."
    ),
    paper_figure=(
        "Qwen3-80B: IFT drifts most, DPO is more conservative and partly recovers; drift in robustness "
        "and defaults (authors' relative_differences.csv)"
    ),
    baselines=("SFT (instruction fine-tuning)", "DPO", "SFT -> DPO"),
    thresholds=(
        Threshold(
            "sft_drifts_more",
            "sft_minus_dpo_nonknowledge_drift",
            ">",
            0.0,
            "SFT's mean |relative drift| over non-knowledge capabilities exceeds DPO's (every seed)",
            agg="all",
            control="dpo_replicate_minus_dpo_nonknowledge_drift",
            arms=("sft", "dpo"),
        ),
        Threshold(
            "behaviour_drift_significant",
            "sft_behaviour_max_abs_z",
            ">=",
            3.0,
            "SFT's drift in at least one behaviour capability (W1, W3a, H2) has |z| >= 3 (every seed)",
            agg="all",
            control="replay_behaviour_max_abs_z",
            arms=("sft",),
        ),
        Threshold(
            "knowledge_holds",
            "sft_knowledge_drift",
            ">=",
            -5.0,
            "SFT's knowledge (C1) relative drift is >= -5% (every seed)",
            agg="all",
            control="overtrained_sft_knowledge_drift",
            arms=("sft",),
        ),
    ),
    floors=(
        Threshold(
            "base_capable",
            "base_min_acc",
            ">=",
            0.7,
            "floor: the base model's smallest accuracy over the capability probes is >= 0.7 (every seed)",
            agg="all",
        ),
        Threshold(
            "sft_learns_domain",
            "sft_domain_acc",
            ">=",
            0.5,
            "floor: SFT reaches domain accuracy >= 0.5 (mean)",
            arms=("sft",),
        ),
        Threshold(
            "dpo_learns_domain",
            "dpo_domain_acc",
            ">=",
            0.5,
            "floor: DPO reaches domain accuracy >= 0.5 (mean)",
            arms=("dpo",),
        ),
    ),
    reproduced="sft_drifts_more and behaviour_drift_significant and knowledge_holds",
    partial="sft_drifts_more",
    method="CapTrack",
    tuned=("sft", "dpo"),
    untuned={"CapTrack": "the paper's measurement suite (drift on capability probes): nothing to tune"},
    key_metric="sft_minus_dpo_nonknowledge_drift",
)
def run(mode: str, seed: int) -> Outcome:
    from geode.llm.captrack.drift import drift_report
    from geode.llm.captrack.posttrain import dpo_posttrain, finite, pretrain_mixture, sft_posttrain
    from geode.llm.captrack.suite import CAPABILITY_OF, PROBES, CapabilitySuite
    from geode.models import build_tiny_lm

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    suite = CapabilitySuite(seed)
    base = build_tiny_lm(suite.vocab_size, seed=seed, **cfg["model"])
    pretrain_mixture(base, suite, seed=seed, **cfg["pretrain"])
    base.eval()
    for p in base.parameters():
        p.requires_grad_(False)
    val = suite.probes(cfg["n_probe"], 10_000 + seed)
    test = suite.probes(cfg["n_probe"], 20_000 + seed)
    post = cfg["post"]
    data_seed = 30_000 + seed  # the same domain data stream for every method

    def domain_acc(model: Any, probes: Any) -> float:
        return float(suite.evaluate(model, probes, ("domain",))["domain"].mean())

    def fit(kind: str, params: dict[str, Any]) -> tuple[float, Any]:
        train = sft_posttrain if kind == "sft" else dpo_posttrain
        model, losses = train(base, suite, lr=params["lr"], seed=data_seed, **post)
        return (domain_acc(model, val) if finite(losses) else float("nan")), (model, losses)

    res = tune(fit, {k: {"lr": cfg["lrs"]} for k in METHODS}, extend=cfg["extend"])
    sft, dpo = res.payload("sft")[0], res.payload("dpo")[0]
    lr_s, lr_d = res.params("sft")["lr"], res.params("dpo")["lr"]
    models = {
        "sft": sft,
        "dpo": dpo,
        "sft_dpo": dpo_posttrain(sft, suite, lr=lr_d, seed=data_seed + 1, reference=sft, **post)[0],
        "dpo_replicate": dpo_posttrain(base, suite, lr=lr_d, seed=data_seed + 2, **post)[0],
        "replay": sft_posttrain(base, suite, lr=lr_s, seed=data_seed, data="replay", **post)[0],
        "overtrained_sft": sft_posttrain(base, suite, lr=10 * lr_s, seed=data_seed, **post)[0],
    }
    scores = {"base": suite.evaluate(base, test)}
    scores.update({k: suite.evaluate(m, test) for k, m in models.items()})
    dom = {k: domain_acc(m, test) for k, m in [("base", base), *models.items()]}
    reports = {
        k: drift_report(scores["base"], scores[k], CAPABILITY_OF, n_boot=cfg["n_boot"], seed=40_000 + seed)
        for k in models
    }

    def nonknow(k: str) -> float:
        return reports[k].mean_abs_drift(NON_KNOWLEDGE)

    def max_z(k: str) -> float:
        return float(max(abs(reports[k].capability(c)["z"]) for c in BEHAVIOUR))

    elapsed = time.perf_counter() - t0
    base_acc = {k: float(scores["base"][k].mean()) for k in ACC_PROBES}
    metrics: dict[str, float] = {
        "base_min_acc": min(base_acc.values()),
        **{f"base_{k}": float(scores["base"][k].mean()) for k in PROBES},
        **{f"{k}_domain_acc": v for k, v in dom.items()},
        **{f"{k}_nonknowledge_drift": nonknow(k) for k in models},
        "sft_minus_dpo_nonknowledge_drift": nonknow("sft") - nonknow("dpo"),
        "dpo_replicate_minus_dpo_nonknowledge_drift": nonknow("dpo_replicate") - nonknow("dpo"),
        "sft_dpo_minus_sft_nonknowledge_drift": nonknow("sft_dpo") - nonknow("sft"),
        **{f"{k}_behaviour_max_abs_z": max_z(k) for k in models},
        **{f"{k}_knowledge_drift": reports[k].capability("C1")["drift"] for k in models},
        **{f"{k}_drift_{r['capability']}": r["drift"] for k in models for r in reports[k].capabilities},
    }
    # non-finite values, counted: a base metric with mean 0 leaves its relative drift undefined (NaN, stored
    # as 0; the floor base_capable fails then), and a drift with no bootstrap spread (every probe flipped the
    # same way) has |z| = inf (stored as 1e6: a certain change)
    nonfinite = sum(not np.isfinite(v) for v in metrics.values())
    metrics = {k: float(np.nan_to_num(v, nan=0.0, posinf=1e6, neginf=-1e6)) for k, v in metrics.items()}
    metrics["nonfinite_values"] = float(nonfinite)
    caps = [r["capability"] for r in reports["sft"].capabilities]
    table = [
        {
            "model": k,
            "lr": f"{lr:g}" if lr else "",
            "domain acc": dom[k],
            **{c: round(float(np.nan_to_num(reports[k].capability(c)["drift"])), 2) for c in caps},
            "mean |drift| non-C1": nonknow(k),
        }
        for k, lr in (
            ("sft", lr_s),
            ("dpo", lr_d),
            ("sft_dpo", lr_d),
            ("dpo_replicate", lr_d),
            ("replay", lr_s),
            ("overtrained_sft", 10 * lr_s),
        )
    ]
    summary = (
        f"mean |drift| over non-knowledge capabilities: SFT {nonknow('sft'):.1f}%, DPO {nonknow('dpo'):.1f}%, "
        f"SFT->DPO {nonknow('sft_dpo'):.1f}%; SFT knowledge drift {metrics['sft_knowledge_drift']:+.1f}%; largest "
        f"behaviour |z| SFT {max_z('sft'):.1f} (null post-training {max_z('replay'):.1f}); domain accuracy SFT "
        f"{dom['sft']:.3f}, DPO {dom['dpo']:.3f}"
    )
    notes = [
        *res.notes(),
        "Base scores on the test probes: "
        + ", ".join(f"{k} {float(scores['base'][k].mean()):.3f}" for k in PROBES)
        + f"; domain {dom['base']:.3f}.",
        "Per-capability drift of SFT (z): "
        + ", ".join(f"{r['capability']} {r['drift']:+.1f}% ({r['z']:.1f})" for r in reports["sft"].capabilities)
        + ".",
        "Per-capability drift of DPO (z): "
        + ", ".join(f"{r['capability']} {r['drift']:+.1f}% ({r['z']:.1f})" for r in reports["dpo"].capabilities)
        + ".",
        f"SFT -> DPO minus SFT (mean |drift| non-knowledge): {metrics['sft_dpo_minus_sft_nonknowledge_drift']:+.1f} "
        "points (negative: DPO recovers part of SFT's drift).",
        f"Wall time of this seed: {elapsed:.0f} s.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"drift": _figure(table, caps)},
        summary=summary,
        notes=notes,
        tuned=res.table(),
    )


def _figure(table: list[dict[str, Any]], caps: list[str]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = np.array([[r[c] for c in caps] for r in table], dtype=float)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    cap = max(float(np.nanmax(np.abs(data))), 1e-9)
    im = ax.imshow(data, cmap="RdBu", vmin=-cap, vmax=cap, aspect="auto")
    ax.set_xticks(range(len(caps)), caps)
    ax.set_yticks(range(len(table)), [r["model"] for r in table])
    for i in range(data.shape[0]):
        for j in range(data.shape[1]):
            ax.text(j, i, f"{data[i, j]:.0f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label="relative drift (%)")
    fig.tight_layout()
    return fig
