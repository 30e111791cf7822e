"""Claim check of MoE quantisation: routing replay and load-aware compensation each improve MXFP4 quality.

Thresholds (fixed by the issue, before any run): ``reproduced`` if both components each reduce perplexity
vs the plain MXFP4 baseline and the routing consistency (top-k agreement with the full-precision routes)
improves; ``partial`` if the combined method improves perplexity.

How "each component vs the plain MXFP4 baseline" is read (decided before the first run): each component
is compared with the same pipeline without it, the plain baseline of its stage:

- *load-aware compensation* (post-training, no fine-tuning) against plain compensation with the same total
  rank spread uniformly over the experts (``la_vs_uniform_ppl_ratio``). The literal reading, against
  MXFP4 with no compensation at all, cannot discriminate: any SVD compensation lowers the weight error,
  so the uniform allocation (the ablation without the paper's idea) would pass it too; it is reported
  (``la_vs_ptq_ppl_ratio``, ``uniform_vs_ptq_ppl_ratio``);
- *routing replay* against plain QAT from the same load-aware initialisation (own routes, routers
  trained with the adapters; ``replay_vs_noreplay_ppl_ratio``); the literal ratio to MXFP4 PTQ is reported;
- *routing consistency*: top-k agreement of the full method (load-aware + replay QAT) minus that of plain
  MXFP4 PTQ (``full_minus_ptq_agreement`` > 0);
- *combined* (partial): the full method against plain QAT (uniform compensation, no replay, routers
  trained; the strongest plain baseline, tuned the same way): ``full_vs_plainqat_ppl_ratio`` < 1.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: every threshold must hold in every seed (``all``);
- *validity floors*: the float model learned the text (test perplexity <= 0.5 x unigram, every seed);
  MXFP4 PTQ costs >= 0.2% perplexity (else there is nothing to recover; a pilot on seed 0 measured 0.4%
  with the attention projections quantised too, 0.16% with the experts alone, which is why the attention
  is MXFP4 as well, uncompensated, for every method); PTQ flips routes (agreement <= 0.995);
- *negative controls*: load-aware: the inverse-load allocation (weights :math:`1/p_e`, rank taken from the
  busy experts); replay and combined: replaying the full-precision routes of *other* tokens (a fixed
  permutation of the batch's tokens; routers frozen, adapters trained, same tuned learning rate);
  routing consistency: plain QAT (routers trained without replay).

Equal tuning: the three QAT methods (load-aware + replay, load-aware without replay, uniform without
replay) each get the Adam learning-rate grid {1e-3, 3e-3, 1e-2} (selected on validation perplexity, one
extension past an edge). The compensation allocations have nothing to tune (the total rank is fixed by
the budget; the allocation rule is the method), so protocol section 1 has nothing to equalise there.

QAT objective (inferred, the paper is unavailable): distillation, the KL divergence from the full-precision
model's next-token distribution to the quantised model's, on train windows; with plain next-token
cross-entropy the adapters keep training the under-trained tiny model and the comparison measures extra
training rather than recovery. "Limited" replay is read as: replay only inside QAT, routers frozen, only the
expert adapters trained (inference routes itself).

Reported beside (not judged): the load-blind spectral allocation (greedy on unweighted singular-value gains,
the strongest allocation without loads), the load-weighted compression error of each allocation (the
quantity the paper's theorem says decreases), and the expert loads.

Quick-mode verdict (3 seeds, first run): **not reproduced**, unstable (seeds 0 and 2 not reproduced, seed 1
reproduced); partial fails too. MXFP4 PTQ costs 0.4-0.7% perplexity and keeps 97.3% of the routed slots.
Per seed (0, 1, 2):

- load-aware vs uniform compensation, test perplexity ratio 0.9991, 0.9994, 1.0003 (fails in seed 2),
  although its load-weighted error is the lowest of every allocation in every seed (0.77, 0.76, 0.72 vs
  uniform 0.84, 0.84, 0.77: the paper's theorem holds, its translation to perplexity is within noise);
  inverse-load control 0.9986, 1.0001, 1.0005 (fails the all-seeds rule: discriminates);
- replay QAT vs QAT without replay 1.0021, 0.9987, 1.0031 (fails); the shuffled-route control 1.04-1.05;
- top-k agreement, full method minus PTQ +0.0050, +0.0036, +0.0015 (holds); plain QAT's trained router
  drifts away from the float routes (-0.025 .. -0.029, the control fails); replay raises agreement over
  the no-replay QAT by +0.015 .. +0.049 in every seed: replay does what it says to the routes, the
  perplexity does not follow at this scale;
- combined vs plain QAT 1.0001, 0.9993, 1.0014 (fails).
Tuning: the no-replay QAT chose lr 3.3e-4 in seed 0, at the lower edge after the one extension.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **reproduced**
(the v2 harness read reproduced on the same runs). Fresh seeds 10-12 (never used before): **inconclusive (floor
mxfp4_hurts failed in seeds 10 and 12; noreplay selected on a grid edge); per seed inconclusive / not reproduced /
inconclusive**. No idea ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from geode.claims import Outcome, Threshold, register, tune

if TYPE_CHECKING:
    import torch

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        problem=dict(d_model=64, n_layers=1, d_ff=64, n_experts=4, seq=32, steps=20, batch=8, n_calib=16, n_eval=16),
        rank=2,
        qat=dict(steps=5, batch=8),
        grid=[1e-3, 3e-3],
        extend=0,
    ),
    "quick": dict(
        problem=dict(d_model=128, n_layers=2, d_ff=128, n_experts=8, seq=64, steps=300, batch=32, n_calib=64),
        rank=4,
        qat=dict(steps=60, batch=16),
        grid=[1e-3, 3e-3, 1e-2],
        extend=1,
    ),
}
# full: a larger MoE LM trained longer (written for a GPU machine; not run on CPU here). The paper's
# Mixtral / DeepSeek / Qwen3 checkpoints are not available offline.
_MODES["full"] = dict(
    _MODES["quick"],
    problem=dict(d_model=512, n_layers=6, d_ff=512, n_experts=16, seq=256, steps=3000, batch=64, n_calib=256),
    rank=16,
    qat=dict(steps=500, batch=32),
)

_LIMITS = {"lr": (0.0, 1.0)}


def _ranks(spectra: list[list[torch.Tensor]], loads: torch.Tensor, per_expert: int, scheme: str) -> list[list[int]]:
    import torch

    from geode.compression.moe_quant import allocate_ranks

    out = []
    for li, spec in enumerate(spectra):
        n = len(spec)
        if scheme == "uniform":
            out.append([per_expert] * n)
            continue
        p = loads[li].double()
        w = {"load-aware": p, "spectral": torch.ones(n, dtype=torch.float64), "inverse-load": 1.0 / p.clamp_min(1e-3)}
        out.append(allocate_ranks(spec, w[scheme], per_expert * n))
    return out


@register(
    "moe-quant",
    claim=(
        "For MXFP4 MoE quantisation, replaying full-precision routes during QAT (routers frozen, expert adapters "
        "trained) and assigning low-rank compensation by load-weighted spectral gains each lower perplexity, and "
        "routing agrees more with the full-precision model."
    ),
    paper_figure=(
        "better perplexity and downstream accuracy than prior MXFP4 methods on Mixtral, DeepSeek and Qwen3 MoE; "
        "W4A8 serving on Qwen3-30B keeps most of the decode speed-up"
    ),
    baselines=("MXFP4 PTQ (RTN)", "uniform-rank SVD compensation", "plain QAT (no replay, router trained)"),
    thresholds=(
        Threshold(
            "loadaware_helps",
            "la_vs_uniform_ppl_ratio",
            "<",
            1.0,
            "load-aware compensation: lower test perplexity than uniform ranks at the same total rank, every seed",
            agg="all",
            control="invload_vs_uniform_ppl_ratio",
            arms=("la", "uniform"),
        ),
        Threshold(
            "replay_helps",
            "replay_vs_noreplay_ppl_ratio",
            "<",
            1.0,
            "routing-replay QAT: lower test perplexity than QAT without replay (same init, both tuned), every seed",
            agg="all",
            control="shuffled_vs_noreplay_ppl_ratio",
            arms=("replay", "noreplay"),
        ),
        Threshold(
            "routing_improves",
            "full_minus_ptq_agreement",
            ">",
            0.0,
            "top-k agreement with full-precision routes: full method above MXFP4 PTQ, every seed",
            agg="all",
            control="plainqat_minus_ptq_agreement",
            arms=("replay", "ptq"),
        ),
        Threshold(
            "combined_helps",
            "full_vs_plainqat_ppl_ratio",
            "<",
            1.0,
            "load-aware + replay QAT: lower test perplexity than plain QAT (uniform ranks, no replay), every seed",
            agg="all",
            control="shuffled_vs_plainqat_ppl_ratio",
            arms=("replay", "plainqat"),
        ),
    ),
    floors=(
        Threshold(
            "float_learned",
            "float_vs_unigram_ppl_ratio",
            "<=",
            0.5,
            "floor: the float MoE's test perplexity is at most half the unigram perplexity (every seed)",
            agg="all",
        ),
        Threshold(
            "mxfp4_hurts",
            "ptq_vs_float_ppl_ratio",
            ">=",
            1.002,
            "floor: MXFP4 PTQ costs >= 0.2% perplexity, so there is something to recover (every seed)",
            agg="all",
        ),
        Threshold(
            "routes_flip",
            "ptq_agreement",
            "<=",
            0.995,
            "floor: MXFP4 PTQ changes >= 0.5% of the routed slots (every seed)",
            agg="all",
        ),
    ),
    reproduced="loadaware_helps and replay_helps and routing_improves",
    partial="combined_helps",
    method=("replay", "la"),
    tuned=("replay", "noreplay", "plainqat"),
    untuned={
        "la": "no hyper-parameter (the total rank is fixed by the budget; the allocation rule is the method)",
        "uniform": "no hyper-parameter (the total rank is fixed by the budget, spread uniformly)",
        "ptq": "no hyper-parameter (MXFP4 round-to-nearest)",
    },
    key_metric="full_vs_plainqat_ppl_ratio",
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.compression.moe_quant import (
        expert_error_spectra,
        load_weighted_error,
        mxfp4_moe,
        routing_replay_qat,
        topk_agreement,
    )
    from geode.compression.moe_quant.experiment import make_problem, perplexity, routes_of

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    problem = make_problem(seed=seed, **cfg["problem"])
    ref = problem.model
    spectra = expert_error_spectra(ref)
    schemes = ("uniform", "load-aware", "spectral", "inverse-load")
    ranks = {s: _ranks(spectra, problem.loads, cfg["rank"], s) for s in schemes}
    models: dict[str, Any] = {"float": ref, "ptq": mxfp4_moe(ref)}
    short = {"uniform": "uniform", "load-aware": "la", "spectral": "spectral", "inverse-load": "invload"}
    for s in schemes:
        models[short[s]] = mxfp4_moe(ref, ranks[s])
    qat_steps, qat_batch = cfg["qat"]["steps"], cfg["qat"]["batch"]
    setups = {"replay": ("load-aware", True), "noreplay": ("load-aware", False), "plainqat": ("uniform", False)}

    def qat(init: str, replay: bool, lr: float, transform: Any = None) -> Any:
        m = mxfp4_moe(ref, ranks[init])
        routing_replay_qat(
            m,
            ref,
            problem.batch_fn(seed + 1000, qat_batch),
            steps=qat_steps,
            lr=lr,
            replay=replay,
            route_transform=transform,
        )
        return m

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        init, replay = setups[method]
        m = qat(init, replay, float(params["lr"]))
        val = perplexity(m, problem.val)
        return (val if math.isfinite(val) else math.inf), m

    res = tune(fit, {k: {"lr": cfg["grid"]} for k in setups}, maximize=False, extend=cfg["extend"], limits=_LIMITS)
    for k in setups:
        models[k] = res.payload(k)
    perm = torch.randperm(qat_batch * problem.seq, generator=torch.Generator().manual_seed(seed + 5))
    models["shuffled"] = qat("load-aware", True, float(res.params("replay")["lr"]), lambda rs: [r[perm] for r in rs])

    ref_routes = routes_of(ref, problem.test)
    ppl = {k: perplexity(m, problem.test) for k, m in models.items()}
    agree = {k: topk_agreement(ref_routes, routes_of(m, problem.test)) for k, m in models.items() if k != "float"}
    allocs = ("ptq", "uniform", "la", "spectral", "invload")
    werr = {k: load_weighted_error(models[k], ref, problem.loads) for k in allocs}
    metrics = {
        **{f"{k}_test_ppl": v for k, v in ppl.items()},
        **{f"{k}_agreement": v for k, v in agree.items()},
        **{f"{k}_load_weighted_error": v for k, v in werr.items()},
        "la_vs_uniform_ppl_ratio": ppl["la"] / ppl["uniform"],
        "invload_vs_uniform_ppl_ratio": ppl["invload"] / ppl["uniform"],
        "spectral_vs_uniform_ppl_ratio": ppl["spectral"] / ppl["uniform"],
        "la_vs_ptq_ppl_ratio": ppl["la"] / ppl["ptq"],
        "uniform_vs_ptq_ppl_ratio": ppl["uniform"] / ppl["ptq"],
        "replay_vs_noreplay_ppl_ratio": ppl["replay"] / ppl["noreplay"],
        "shuffled_vs_noreplay_ppl_ratio": ppl["shuffled"] / ppl["noreplay"],
        "replay_vs_ptq_ppl_ratio": ppl["replay"] / ppl["ptq"],
        "full_vs_plainqat_ppl_ratio": ppl["replay"] / ppl["plainqat"],
        "shuffled_vs_plainqat_ppl_ratio": ppl["shuffled"] / ppl["plainqat"],
        "full_minus_ptq_agreement": agree["replay"] - agree["ptq"],
        "plainqat_minus_ptq_agreement": agree["plainqat"] - agree["ptq"],
        "replay_minus_noreplay_agreement": agree["replay"] - agree["noreplay"],
        "float_vs_unigram_ppl_ratio": ppl["float"] / problem.unigram_ppl,
        "ptq_vs_float_ppl_ratio": ppl["ptq"] / ppl["float"],
        "max_expert_load": float(problem.loads.max()),
        "min_expert_load": float(problem.loads.min()),
        "unigram_ppl": problem.unigram_ppl,
    }
    names = {
        "float": "full precision (reference)",
        "ptq": "MXFP4 PTQ (experts + attention)",
        "uniform": f"+ uniform SVD compensation (rank {cfg['rank']} per expert)",
        "la": "+ load-aware compensation (same total rank)",
        "spectral": "+ load-blind spectral allocation (same total rank)",
        "invload": "+ inverse-load allocation (control)",
        "plainqat": "plain QAT (uniform init, router trained, no replay)",
        "noreplay": "QAT from load-aware init, no replay (ablation)",
        "replay": "load-aware + routing-replay QAT (full method)",
        "shuffled": "load-aware + replay of other tokens' routes (control)",
    }
    table = [
        {
            "method": names[k],
            "test perplexity": ppl[k],
            "vs float": ppl[k] / ppl["float"],
            "top-k agreement": agree.get(k, 1.0),
            "load-weighted error": werr.get(k, float("nan")),
        }
        for k in names
    ]
    summary = (
        f"test perplexity (float {ppl['float']:.4f}): MXFP4 PTQ {ppl['ptq']:.4f}, uniform comp {ppl['uniform']:.4f}, "
        f"load-aware comp {ppl['la']:.4f}; QAT: plain {ppl['plainqat']:.4f}, no replay {ppl['noreplay']:.4f}, "
        f"replay {ppl['replay']:.4f}; top-k agreement PTQ {agree['ptq']:.4f}, full {agree['replay']:.4f}, "
        f"plain QAT {agree['plainqat']:.4f}"
    )
    lay = "; ".join(
        f"layer {li}: loads {[round(float(x), 3) for x in problem.loads[li]]}, "
        f"load-aware ranks {ranks['load-aware'][li]}"
        for li in range(problem.loads.shape[0])
    )
    notes = [
        *res.notes(),
        f"Model: char-level MoE LM ({cfg['problem']['n_layers']} layers, {cfg['problem']['n_experts']} experts, "
        f"top-2) on pydoc_data text, float training {problem.train_seconds:.0f} s; unigram perplexity "
        f"{problem.unigram_ppl:.2f}. MXFP4 on experts and attention; routers, embeddings and head in float.",
        lay,
        "Load-weighted compression error (sum p_e ||E_e - A_e B_e||^2): "
        + ", ".join(f"{k} {v:.4f}" for k, v in werr.items()),
        f"QAT: {qat_steps} Adam steps of batch {qat_batch}, distillation from the float model.",
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=res.table())
