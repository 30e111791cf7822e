"""Claim check of SPHQuant: at 3 bits, lower perplexity than GPTQ and RTN at equal (or higher) bits.

Thresholds (fixed by the issue, before any run): ``reproduced`` if at 3 bits SPHQuant's perplexity (a
tiny LM in quick, SmolLM2 in full) is better than GPTQ's and RTN's at equal bits; ``partial`` if better than
RTN's. "Equal bits": SPHQuant at the README's W3 budget, 3.125 bits per weight (``k + b_rho = 16`` plus a
16-bit scale per 128 weights); RTN and GPTQ at 3 bits per group of 128 with a 16-bit scale and zero point,
3.25 bits per weight (the baselines get the larger budget). The shared codebook is left out of the
budget as in the paper and reported (at the tiny LM's size it is not negligible: see the notes).

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: "better" must hold in every seed (``all``, the ratio of test perplexities < 1);
- *validity floors*: the float model learned the text (test perplexity <= 0.5 x the unigram perplexity
  of the train split, every seed) and 3-bit RTN costs >= 1% perplexity (else 3 bits is lossless on this
  model and the comparison is vacuous; every seed);
- *negative control*: SPHQuant with a random positive codebook (no k-means, no fine-tuning; same
  ``k``, ``b_rho`` as the tuned SPHQuant), for both thresholds.

Equal tuning (3 configurations each, selected on validation perplexity): RTN's range clip, GPTQ's damping,
SPHQuant's split ``k`` of the 16 bits between direction and radius. Reported beside the verdict (not
judged): SPHQuant without angular fine-tuning (the ablation of that step), and the relative output error
of each quantiser on an outlier-heavy synthetic layer (Student-t weights with 1% outliers x10), the
setting in which the paper says SPHQuant's radius helps most.

Quick-mode verdict (3 seeds, first run): **not reproduced**, unstable over seeds (seeds 0 and 1 not
reproduced, seed 2 partial). Test perplexity ratio SPHQuant / GPTQ 1.015, 1.012, 1.002 and SPHQuant / RTN
1.008, 1.005, 0.986 (float 6.80-7.23; GPTQ costs 0.1-0.6%, RTN 1.1-1.7%). The tuned SPHQuant split is
``k = 10, b_rho = 6`` in every seed (the compactness limit of the grid); angular fine-tuning lowers the
summed output error by ~38% and the perplexity by ~1%; the random-codebook control fails both thresholds
(ratios 1.028-1.051 vs GPTQ). On the outlier-heavy synthetic layer SPHQuant's relative output error is
4-4.4x lower than GPTQ's and 6x lower than RTN's: the paper's mechanism shows where outliers exist, but the
small LM trained here has none to speak of. The codebook (1024 x 8 fp16) is 0.44 bits per weight at this
model size, not counted in the budget (as in the paper).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any

from geode.claims import Outcome, Threshold, register, tune

BITS = 3
GROUP = 128
SPH_CODE_BITS = 16  # k + b_rho at W3 (3.125 bpw with one 16-bit scale per 128 weights)

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        problem=dict(d_model=128, n_layers=1, d_ff=128, seq=32, steps=30, batch=8, n_calib=16, n_eval=16),
        grids=dict(rtn=dict(clip=[1.0, 0.9]), gptq=dict(damp=[0.01, 0.03]), sph=dict(direction_bits=[6, 8])),
        finetune_steps=5,
        extend=0,
        outlier=dict(n_out=32, n_in=128, n_samples=256),
    ),
    "quick": dict(
        problem=dict(d_model=128, n_layers=2, d_ff=256, seq=64, steps=300, batch=32, n_calib=64, n_eval=96),
        grids=dict(
            rtn=dict(clip=[1.0, 0.9, 0.8]),
            gptq=dict(damp=[0.003, 0.01, 0.03]),
            sph=dict(direction_bits=[6, 8, 10]),
        ),
        finetune_steps=100,
        extend=1,
        outlier=dict(n_out=256, n_in=512, n_samples=2048),
    ),
}
# full: SmolLM2-135M on the same text with its tokenizer (written for a GPU machine; not run on CPU here)
_MODES["full"] = dict(
    _MODES["quick"],
    smollm2=True,
    problem=dict(seq=256, n_calib=128, n_eval=64),
    finetune_steps=300,
)

_LIMITS = {"clip": (0.0, 1.0), "direction_bits": (6, 10)}  # k <= 10: a codebook of at most 1024 x 8 (16 KiB fp16)


def _sph_model(problem: Any, k: int, *, finetune_steps: int, seed: int, random_codebook: bool = False) -> Any:
    import torch

    from geode.compression.sphquant import sphquant_model

    model = copy.deepcopy(problem.model)
    book = None
    if random_codebook:
        g = torch.Generator().manual_seed(int(seed) + 7)
        book = torch.randn(2**k, 8, generator=g).abs()
        book = book / book.norm(dim=1, keepdim=True)
    info = sphquant_model(
        model,
        problem.hessians,
        problem.names,
        direction_bits=k,
        radius_bits=SPH_CODE_BITS - k,
        group_size=GROUP,
        finetune_steps=0 if random_codebook else finetune_steps,
        lr=1e-2,
        codebook=book,
        seed=seed,
    )
    return model, info


def _outlier_errors(seed: int, finetune_steps: int, k: int, **shape: int) -> dict[str, float]:
    import torch

    from geode.compression.quant import gptq_quantize, output_error, rtn_quantize
    from geode.compression.sphquant import sphquant_model
    from geode.compression.sphquant.experiment import outlier_layer
    from geode.core.quant import minmax_dequantize

    w, h = outlier_layer(seed, **shape)
    hf = h.float()
    rtn = float(output_error(w, minmax_dequantize(*rtn_quantize(w, bits=BITS, group_size=GROUP)), hf))
    gptq = float(output_error(w, minmax_dequantize(*gptq_quantize(w, h, bits=BITS, group_size=GROUP)), hf))
    lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
    lin.weight.data.copy_(w)
    m = torch.nn.Sequential(lin)
    sphquant_model(
        m,
        {"0": h},
        ["0"],
        direction_bits=k,
        radius_bits=SPH_CODE_BITS - k,
        group_size=GROUP,
        finetune_steps=finetune_steps,
        seed=seed,
    )
    sph = float(output_error(w, m[0].dequantize(), hf))
    return {"outlier_rtn_error": rtn, "outlier_gptq_error": gptq, "outlier_sph_error": sph}


@register(
    "sphquant",
    claim=(
        "Splitting 8-D weight vectors into signs, a radius with extra precision and a positive unit direction from "
        "a compact fine-tuned codebook gives lower 3-bit perplexity than GPTQ and RTN at equal bits."
    ),
    paper_figure=(
        "matches state-of-the-art extreme low-bit (rotation-free) methods at W2/W3 (2.25 / 3.125 bpw) on VLMs; "
        "+30.3% decode throughput (edge GPU)"
    ),
    baselines=("RTN g128", "GPTQ g128"),
    thresholds=(
        Threshold(
            "beats_gptq",
            "sph_vs_gptq_ppl_ratio",
            "<",
            1.0,
            "SPHQuant W3 (3.125 bpw) test perplexity below GPTQ 3-bit g128 (3.25 bpw), every seed",
            agg="all",
            control="sphrand_vs_gptq_ppl_ratio",
            arms=("sph", "gptq"),
        ),
        Threshold(
            "beats_rtn",
            "sph_vs_rtn_ppl_ratio",
            "<",
            1.0,
            "SPHQuant W3 test perplexity below RTN 3-bit g128, every seed",
            agg="all",
            control="sphrand_vs_rtn_ppl_ratio",
            arms=("sph", "rtn"),
        ),
    ),
    floors=(
        Threshold(
            "float_learned",
            "float_vs_unigram_ppl_ratio",
            "<=",
            0.5,
            "floor: the float model's test perplexity is at most half the unigram perplexity (every seed)",
            agg="all",
        ),
        Threshold(
            "three_bits_hurt",
            "rtn_vs_float_ppl_ratio",
            ">=",
            1.01,
            "floor: 3-bit RTN costs >= 1% perplexity, so 3 bits is not lossless on this model (every seed)",
            agg="all",
        ),
    ),
    reproduced="beats_gptq and beats_rtn",
    partial="beats_rtn",
    method="sph",
    tuned=("sph", "gptq", "rtn"),
    key_metric="sph_vs_gptq_ppl_ratio",
)
def run(mode: str, seed: int) -> Outcome:
    from geode.compression.sphquant.experiment import make_problem, make_smollm2_problem, perplexity, quantize_baseline

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    if cfg.get("smollm2"):
        problem = make_smollm2_problem(seed=seed, **cfg["problem"])
    else:
        problem = make_problem(seed=seed, **cfg["problem"])
    ft = cfg["finetune_steps"]

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        if method == "rtn":
            model = quantize_baseline(problem, "rtn", bits=BITS, group_size=GROUP, clip=params["clip"])
            info = None
        elif method == "gptq":
            model = quantize_baseline(problem, "gptq", bits=BITS, group_size=GROUP, damp=params["damp"])
            info = None
        else:
            model, info = _sph_model(problem, int(params["direction_bits"]), finetune_steps=ft, seed=seed)
        val = perplexity(model, problem.val)
        return (val if math.isfinite(val) else math.inf), (model, info)

    res = tune(fit, cfg["grids"], maximize=False, extend=cfg["extend"], limits=_LIMITS)
    k = int(res.params("sph")["direction_bits"])
    test = {m: perplexity(res.payload(m)[0], problem.test) for m in ("rtn", "gptq", "sph")}
    sph_info = res.payload("sph")[1]
    rand_model, _ = _sph_model(problem, k, finetune_steps=ft, seed=seed, random_codebook=True)
    noft_model, noft_info = _sph_model(problem, k, finetune_steps=0, seed=seed)
    test["sphrand"] = perplexity(rand_model, problem.test)
    test["sph_noft"] = perplexity(noft_model, problem.test)
    test["float"] = perplexity(problem.model, problem.test)
    out = _outlier_errors(seed, ft, k, **cfg["outlier"])
    n_w = problem.info["n_weights"]
    cb_bits = sph_info["codebook_bits"]
    metrics = {
        **{f"{m}_test_ppl": v for m, v in test.items()},
        "sph_vs_gptq_ppl_ratio": test["sph"] / test["gptq"],
        "sph_vs_rtn_ppl_ratio": test["sph"] / test["rtn"],
        "sphrand_vs_gptq_ppl_ratio": test["sphrand"] / test["gptq"],
        "sphrand_vs_rtn_ppl_ratio": test["sphrand"] / test["rtn"],
        "sph_noft_vs_gptq_ppl_ratio": test["sph_noft"] / test["gptq"],
        "float_vs_unigram_ppl_ratio": test["float"] / problem.unigram_ppl,
        "rtn_vs_float_ppl_ratio": test["rtn"] / test["float"],
        "gptq_vs_float_ppl_ratio": test["gptq"] / test["float"],
        "sph_bits_per_weight": sph_info["bits_per_weight"],
        "baseline_bits_per_weight": BITS + 32.0 / GROUP,
        "sph_codebook_bits_per_weight": cb_bits / n_w,
        "sph_direction_bits": float(k),
        "sph_output_error_before_ft": noft_info["error_before"],
        "sph_output_error_after_ft": sph_info["error_after"],
        "unigram_ppl": problem.unigram_ppl,
        **out,
        "outlier_sph_vs_gptq_error_ratio": out["outlier_sph_error"] / out["outlier_gptq_error"],
        "outlier_sph_vs_rtn_error_ratio": out["outlier_sph_error"] / out["outlier_rtn_error"],
    }
    names = {
        "float": "float (reference)",
        "rtn": "RTN 3-bit g128",
        "gptq": "GPTQ 3-bit g128",
        "sph": f"SPHQuant W3 (k={k}, b_rho={SPH_CODE_BITS - k})",
        "sph_noft": "SPHQuant W3 without angular fine-tuning (ablation)",
        "sphrand": "SPHQuant W3, random codebook (control)",
    }
    bpw = {"float": 32.0, "rtn": BITS + 32 / GROUP, "gptq": BITS + 32 / GROUP}
    table = [
        {
            "method": names[m],
            "bits per weight": bpw.get(m, sph_info["bits_per_weight"]),
            "test perplexity": test[m],
            "vs GPTQ": test[m] / test["gptq"],
        }
        for m in ("float", "rtn", "gptq", "sph", "sph_noft", "sphrand")
    ]
    summary = (
        f"3-bit test perplexity: SPHQuant {test['sph']:.4f} (3.125 bpw, k={k}) vs GPTQ {test['gptq']:.4f}, RTN "
        f"{test['rtn']:.4f} (3.25 bpw), float {test['float']:.4f}; random-codebook control {test['sphrand']:.4f}"
    )
    notes = [
        *res.notes(),
        f"Model: char-level tiny Llama ({problem.info['n_layers']} quantised linear layers, {n_w} weights, vocab "
        f"{problem.vocab}) on pydoc_data text; unigram perplexity {problem.unigram_ppl:.2f}.",
        f"The shared codebook ({2**k} x 8 fp16 = {cb_bits} bits) adds {cb_bits / n_w:.3f} bits per weight at this "
        "model size (the paper amortises it over billions of weights; ~0.001 bpw at 135M).",
        f"Angular fine-tuning lowered the summed relative output error from {noft_info['error_before']:.4f} to "
        f"{sph_info['error_after']:.4f}; test perplexity without it {test['sph_noft']:.4f}.",
        f"Outlier-heavy synthetic layer, relative output error: SPHQuant {out['outlier_sph_error']:.4f}, GPTQ "
        f"{out['outlier_gptq_error']:.4f}, RTN {out['outlier_rtn_error']:.4f} (reported, not judged).",
        "Strongest baseline: GPTQ (named by the issue); a rotation-based method (QuIP#, QuaRot) is not built here.",
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s (float training {problem.train_seconds:.0f} s).",
    ]
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=res.table())
