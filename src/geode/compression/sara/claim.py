"""Claim check of SARA: at 30% fewer MACs, rank schedules beat uniform truncation on sample quality.

Thresholds (fixed by the issue, before any run): ``reproduced`` if at 30% fewer MACs the DP schedule's
sample quality (FID proxy on digits) is better than uniform truncation's; ``partial`` if online SARA
beats uniform.

Set-up: a residual-MLP denoiser (4 blocks, width 256, hidden 512) trained on 8x8 digits; deterministic
DDIM, 25 steps; the 8 block linears are the targets. "30% fewer MACs": every method spends at most 0.7 x
the MACs per sample of the full-rank sampler (all layers, all steps, counted exactly by
:func:`ddim_sample`). Uniform truncation: the largest single rank of every target at every step within the
budget. SARA-DP: LRAE measured on 16 warm-up noises over the rank menu {8, 16, 24, 32, 48, 64, 80, 96,
112, 128, 160, full}, knapsack solved exactly. SARA-Online: the smallest tolerance tau whose MACs on the
warm-up noises fit the budget (bisection; no calibration of anything else, as in the paper the rule is
closed-form); its test MACs are reported. FID proxy: Frechet distance of 16 PCA features between 1000
generated samples and the held-out test digits (360); all methods start from the same noises.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: "better" (FD ratio to uniform < 1) must hold in every seed (``all``);
- *validity floors*: the denoiser learned the digits (full-rank FD <= 0.25 x the FD of an untrained
  denoiser's samples; a pilot on seed 0 measured 0.65 vs 7.3 and a noise floor of 0.28 between real train
  and test digits); the budget bites (uniform truncation's samples deviate from the full-rank samples
  from the same noises by PSNR <= 40 dB; pilot: 16 dB);
- *negative controls*: DP: the DP's own ranks randomly permuted over (step, block) (same MACs, same rank
  multiset, no LRAE information); Online: the online run's per-step ranks replayed in reverse step order
  (same MACs).

Equal tuning (protocol section 1): the methods are training-free and share one trained denoiser; uniform
has no free parameter at a fixed budget, DP's only input is the budget, and Online's tau is set by the
budget on warm-up noises, so there is nothing to equalise; the rank menu is fixed above.

Inferred details that can move the verdict, both run (protocol section 5): the online spectrum of the
previous output read per sample as its 8x8 image (``sample``, used by the verdict: the image analogue of
the paper's tokens x channels) or as the batch's samples x pixels matrix (``batch``, reported); LRAE as the
error of that step's output (the paper's definition, used by the verdict) or as the error of the final
sample with only that (step, block) truncated (``measure="sample"``, propagation included; reported as
``dp_sample``, added after the final run's DP result, so it is not judged).
Reported beside (not judged): step caching at the same MACs (the network skipped at 8 of 25 evenly spread
steps, the previous epsilon reused: the strongest cache-axis baseline here), PSNR of every method against
the full-rank samples, the FD between each method's samples and the full-rank samples, and the
effective-rank variation of the denoiser output across steps (the paper's motivating observation).

A first quick run (seed 0 only, then stopped) showed the Online comparison malformed: its rank fraction
moved in steps of 1/8 (8 singular values of an 8x8 output), so tau set on 16 warm-up noises did not carry
to the 1000 test noises and Online spent 78% of the MACs against uniform's 70% (FD ratio 0.68 to uniform
at 70%: ``partial`` in that seed). Changed before the final run: the rank fraction is now interpolated
between whole ranks (continuous in tau), and the Online threshold compares with uniform truncation at the
Online run's realised MACs (``online_vs_uniform_matched_fd_ratio``; the ratio to uniform at 70% is still
reported). Nothing on the DP side changed (its seed-0 numbers were FD 3.66 vs uniform 2.74).

Quick-mode verdict (3 seeds, final run): **partial**, unstable (seeds 0 and 1 partial, seed 2 reproduced).
Per seed (0, 1, 2):

- SARA-DP vs uniform (FD ratio at 69-70% MACs) 1.33, 1.53, 0.34: fails in two seeds; the DP's ranks
  permuted at random (control) 0.78, 1.24, 0.74 do *better* than the DP in two seeds. The additive
  single-block LRAE misleads the DP here: it starves some blocks (rank 16-64) over the early steps and
  the errors compound along the trajectory (DP PSNR vs full 11.8-12.6 dB, uniform 12.6-15.8 dB);
- SARA-Online vs uniform at the Online's own MACs (72%, 71%, 71%) 0.93, 0.89, 0.86 (holds); control
  (Online's ranks in reverse step order) 1.06, 1.05, 0.98 (fails the all-seeds rule: discriminates).
  Online's rank fraction is nearly constant (0.42-0.45 after a full-rank first step): the output's
  effective rank barely moves across steps here (6.1-6.4 of 8), so its gain is mostly the full-rank first
  step; the batch-spectrum reading overspends (81-93% MACs, reported only);
- step caching at 68% MACs (reported, strongest baseline) is far better than every rank schedule: FD
  0.44-0.70 vs uniform 1.78-9.53 (full rank 0.41-0.65, real-data noise floor 0.23-0.34).
Floors met in every seed (full-rank FD / untrained 0.05-0.09; uniform PSNR vs full 12.6-15.8 dB).

The alternative LRAE reading (added after that run, reported, not judged; the verdict rows above are
unchanged by the rerun): the DP on the final-sample error of each single truncation, which includes its
propagation along the trajectory, reaches FD ratio 0.39, 0.46, 0.09 to uniform (PSNR vs full 21.8-22.6 dB
against uniform's 12.6-15.8) at 69% MACs, passing in every seed. The DP machinery works; the step-local
LRAE of the paper's definition is what fails on this denoiser. Per seed CPU time with it: 61-67 s.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **partial** (the
v2 harness read partial on the same runs). No idea ablation or learned-arm reference is declared yet (protocol v3;
the rework issues 45-50).
"""

from __future__ import annotations

import copy
import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from geode.claims import Outcome, Threshold, register

if TYPE_CHECKING:
    import torch

MACS_FRACTION = 0.7
MENU = (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 160, None)

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        problem=dict(width=64, hidden=128, n_blocks=2, steps=100, batch=64),
        steps=6,
        n_warm=8,
        n_gen=200,
        menu=(8, 16, 32, None),
    ),
    "quick": dict(
        problem=dict(width=256, hidden=512, n_blocks=4, steps=2000, batch=128),
        steps=25,
        n_warm=16,
        n_gen=1000,
        menu=MENU,
    ),
}
# full: wider denoiser, longer training, more samples (written for a GPU machine; not run on CPU here;
# the paper's SDXL / SD3 / Stable Audio Open checkpoints need downloads)
_MODES["full"] = dict(
    _MODES["quick"],
    problem=dict(width=512, hidden=1024, n_blocks=6, steps=20000, batch=256),
    steps=50,
    n_warm=32,
    n_gen=5000,
)


def _psnr(x: torch.Tensor, ref: torch.Tensor) -> float:
    mse = float((x - ref).pow(2).mean())
    return 10.0 * math.log10(4.0 / max(mse, 1e-12))  # pixel range [-1, 1]


@register(
    "sara",
    claim=(
        "Treating the SVD rank of a denoiser's linear layers as an inference-time control, chosen per step and "
        "block by dynamic programming on a measured low-rank approximation error (or per step online from the "
        "output spectrum), gives better samples than uniform truncation at the same MACs."
    ),
    paper_figure=(
        "training-free speed-ups on SDXL, SD3, Stable Audio Open and TangoFlux at small quality loss; compounds "
        "with solver- and cache-axis acceleration"
    ),
    baselines=("uniform rank truncation", "step caching (reported)"),
    thresholds=(
        Threshold(
            "dp_beats_uniform",
            "dp_vs_uniform_fd_ratio",
            "<",
            1.0,
            "SARA-DP's FID proxy below uniform truncation's at 30% fewer MACs, every seed",
            agg="all",
            control="dpperm_vs_uniform_fd_ratio",
            arms=("dp", "uniform"),
        ),
        Threshold(
            "online_beats_uniform",
            "online_vs_uniform_matched_fd_ratio",
            "<",
            1.0,
            "SARA-Online's FID proxy below uniform truncation's at the same MACs (tau set for 30% fewer on "
            "warm-up noises), every seed",
            agg="all",
            control="onlinerev_vs_uniform_matched_fd_ratio",
            arms=("online", "uniform"),
        ),
    ),
    floors=(
        Threshold(
            "model_learned",
            "full_vs_untrained_fd_ratio",
            "<=",
            0.25,
            "floor: the full-rank sampler's FD is at most 0.25 x an untrained denoiser's (every seed)",
            agg="all",
        ),
        Threshold(
            "budget_bites",
            "uniform_psnr_vs_full",
            "<=",
            40.0,
            "floor: uniform truncation at the budget changes the samples (PSNR vs full rank <= 40 dB, every seed)",
            agg="all",
        ),
    ),
    reproduced="dp_beats_uniform",
    partial="online_beats_uniform",
    method=("dp", "online"),
    untuned={
        "dp": "no hyper-parameter (training-free; its only input is the MACs budget, the rank menu is fixed)",
        "online": "no hyper-parameter (training-free; tau is set by the MACs budget on warm-up noises)",
        "uniform": "no hyper-parameter (the largest single rank within the MACs budget)",
    },
    key_metric="dp_vs_uniform_fd_ratio",
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.compression.sara import (
        DigitDenoiser,
        SaraOnline,
        apply_sara,
        ddim_sample,
        lrae_table,
        sara_dp,
    )
    from geode.compression.sara.experiment import frechet_distance, make_problem

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    problem = make_problem(seed=seed, **cfg["problem"])
    model = apply_sara(copy.deepcopy(problem.model))
    steps, menu = cfg["steps"], cfg["menu"]
    nb = len(model.blocks)
    warm = torch.randn(cfg["n_warm"], 64, generator=torch.Generator().manual_seed(seed + 100))
    noise = torch.randn(cfg["n_gen"], 64, generator=torch.Generator().manual_seed(seed + 200))

    samples: dict[str, torch.Tensor] = {}
    macs: dict[str, float] = {}
    secs: dict[str, float] = {}

    def sample(name: str, **kw: Any) -> None:
        t = time.perf_counter()
        x, m = ddim_sample(model, noise, steps=steps, **kw)
        secs[name] = time.perf_counter() - t
        samples[name], macs[name] = x.clamp(-1, 1), m

    sample("full")
    full_macs = macs["full"]
    budget = MACS_FRACTION * full_macs
    pair = model.targets()[0]
    fixed = model.macs() - sum(m.macs() for p in model.targets() for m in p)
    per_rank = sum(m.in_features + m.out_features for m in pair)  # MACs per unit of rank of one block
    full_block = sum(m.in_features * m.out_features for m in pair)
    r_uni = int((budget / steps - fixed) // (nb * per_rank))
    sample("uniform", schedule=[[r_uni] * nb] * steps)

    # SARA-DP
    t = time.perf_counter()
    table = lrae_table(model, warm, menu, steps=steps)
    costs = np.array([full_block if r is None else min(r * per_rank, full_block) for r in menu], dtype=float)
    picks = sara_dp(table.numpy(), costs, budget - steps * fixed)
    dp_seconds = time.perf_counter() - t
    dp_sched = [[menu[j] for j in row] for row in picks.tolist()]
    sample("dp", schedule=dp_sched)
    # the alternative reading of LRAE (final-sample error of one truncation, propagation included): reported
    table_s = lrae_table(model, warm, menu, steps=steps, measure="sample")
    picks_s = sara_dp(table_s.numpy(), costs, budget - steps * fixed)
    sample("dp_sample", schedule=[[menu[j] for j in row] for row in picks_s.tolist()])
    flat = [r for row in dp_sched for r in row]
    perm = np.random.default_rng(seed + 7).permutation(len(flat))
    sample("dpperm", schedule=[[flat[perm[i * nb + b]] for b in range(nb)] for i in range(steps)])

    # SARA-Online (both readings)
    full_ranks = [min(m.full_rank for m in p) for p in model.targets()]
    taus: dict[str, float] = {}
    for reading in ("sample", "batch"):
        lo, hi = 0.0, 0.999
        for _ in range(20):  # least tau whose warm-up MACs fit the budget (MACs fall as tau grows)
            mid = 0.5 * (lo + hi)
            _, m = ddim_sample(model, warm, steps=steps, controller=SaraOnline(mid, full_ranks, reading=reading))
            lo, hi = (lo, mid) if m <= budget else (mid, hi)
        taus[reading] = hi
        ctl = SaraOnline(hi, full_ranks, reading=reading)
        name = "online" if reading == "sample" else "online_batch"
        sample(name, controller=ctl)
        if reading == "sample":
            fr = ctl.fractions
            rev = [
                [None if fr[steps - 1 - i] >= 1 else max(1, math.ceil(fr[steps - 1 - i] * k)) for k in full_ranks]
                for i in range(steps)
            ]
            online_fracs = list(fr)
            sample("onlinerev", schedule=rev)
            # uniform truncation at the online run's realised MACs (tau was set on warm-up noises)
            r_match = int((macs["online"] / steps - fixed) // (nb * per_rank))
            sample("uniform_matched", schedule=[[min(r_match, full_ranks[0])] * nb] * steps)
    # step caching at the same MACs
    n_skip = math.ceil((1 - MACS_FRACTION) * steps)
    skip = sorted({int(round(x)) for x in np.linspace(1, steps - 1, n_skip + 2)[1:-1]})
    sample("cache", cache_steps=skip)

    untrained = DigitDenoiser(
        dim=64, width=problem.model.width, hidden=cfg["problem"]["hidden"], n_blocks=nb, seed=seed + 999
    )
    xu, _ = ddim_sample(untrained, noise, steps=steps)
    fd = {k: problem.fd(v) for k, v in samples.items()}
    fd_untrained = problem.fd(xu.clamp(-1, 1))
    rng = np.random.default_rng(seed + 3)
    noise_floor = problem.fd(problem.train[rng.choice(len(problem.train), len(problem.test), replace=False)])
    ff = problem.features(samples["full"])
    fd_to_full = {k: frechet_distance(problem.features(v), ff) for k, v in samples.items() if k != "full"}
    psnr = {k: _psnr(v, samples["full"]) for k, v in samples.items() if k != "full"}
    # effective rank of the output across steps (motivation): entropy rank of each sample's 8x8 epsilon
    traj: list[torch.Tensor] = []
    ddim_sample(model, warm, steps=steps, record=traj)
    from geode.compression.sara.sara import _ddim_times, ddpm_alphas

    times = _ddim_times(len(ddpm_alphas()), steps)
    eranks = []
    with torch.no_grad():
        for x, tt in zip(traj, times, strict=True):
            s = torch.linalg.svdvals(model(x, torch.full((x.shape[0],), tt)).reshape(-1, 8, 8).double())
            p = s / s.sum(-1, keepdim=True)
            eranks.append(float(torch.exp(-(p * p.clamp_min(1e-300).log()).sum(-1)).mean()))

    metrics = {
        **{f"{k}_fd": v for k, v in fd.items()},
        **{f"{k}_macs_fraction": v / full_macs for k, v in macs.items()},
        **{f"{k}_psnr_vs_full": v for k, v in psnr.items()},
        **{f"{k}_fd_to_full": v for k, v in fd_to_full.items()},
        "dp_vs_uniform_fd_ratio": fd["dp"] / fd["uniform"],
        "dpperm_vs_uniform_fd_ratio": fd["dpperm"] / fd["uniform"],
        "online_vs_uniform_fd_ratio": fd["online"] / fd["uniform"],
        "online_vs_uniform_matched_fd_ratio": fd["online"] / fd["uniform_matched"],
        "onlinerev_vs_uniform_matched_fd_ratio": fd["onlinerev"] / fd["uniform_matched"],
        "online_batch_vs_uniform_fd_ratio": fd["online_batch"] / fd["uniform"],
        "cache_vs_uniform_fd_ratio": fd["cache"] / fd["uniform"],
        "dp_sample_vs_uniform_fd_ratio": fd["dp_sample"] / fd["uniform"],
        "dp_vs_cache_fd_ratio": fd["dp"] / fd["cache"],
        "full_vs_untrained_fd_ratio": fd["full"] / fd_untrained,
        "untrained_fd": fd_untrained,
        "real_noise_floor_fd": noise_floor,
        "uniform_rank": float(r_uni),
        "uniform_matched_rank": float(r_match),
        "online_tau": taus["sample"],
        "online_batch_tau": taus["batch"],
        "output_effective_rank_min": min(eranks),
        "output_effective_rank_max": max(eranks),
    }
    names = {
        "full": "full rank",
        "uniform": f"uniform truncation (rank {r_uni})",
        "dp": "SARA-DP",
        "dp_sample": "SARA-DP on final-sample LRAE (alternative reading, reported)",
        "dpperm": "SARA-DP ranks permuted (control)",
        "online": f"SARA-Online, per-sample 8x8 spectrum (tau {taus['sample']:.3g})",
        "online_batch": f"SARA-Online, batch spectrum (tau {taus['batch']:.3g})",
        "onlinerev": "SARA-Online ranks in reverse step order (control)",
        "uniform_matched": f"uniform truncation at SARA-Online's MACs (rank {r_match})",
        "cache": f"step caching ({len(skip)} of {steps} steps reused)",
    }
    table_rows = [
        {
            "method": names[k],
            "MACs / full": macs[k] / full_macs,
            "FD to test digits": fd[k],
            "vs uniform": fd[k] / fd["uniform"],
            "PSNR vs full (dB)": psnr.get(k, float("inf")),
            "sampling s": secs[k],
        }
        for k in names
    ]
    summary = (
        f"FD proxy at {MACS_FRACTION:.0%} MACs: SARA-DP {fd['dp']:.3f}, SARA-Online {fd['online']:.3f} vs uniform "
        f"{fd['uniform']:.3f} (uniform at Online's {macs['online'] / full_macs:.0%} MACs {fd['uniform_matched']:.3f}; "
        f"full rank {fd['full']:.3f}, step cache {fd['cache']:.3f}; controls: DP permuted "
        f"{fd['dpperm']:.3f}, Online reversed {fd['onlinerev']:.3f})"
    )
    notes = [
        f"Denoiser trained {problem.train_seconds:.0f} s; FD of an untrained denoiser {fd_untrained:.2f}, "
        f"real train vs test digits (noise floor) {noise_floor:.3f}.",
        "DP schedule (rows = steps, columns = blocks; None = full): "
        + "; ".join(",".join("F" if r is None else str(r) for r in row) for row in dp_sched),
        "Online rank fractions per step: " + ", ".join(f"{f:.2f}" for f in online_fracs),
        f"Output effective rank (8x8, entropy) over steps: {min(eranks):.2f} .. {max(eranks):.2f}.",
        "MACs fractions: " + ", ".join(f"{k} {v / full_macs:.3f}" for k, v in macs.items()),
        "Wall-clock is reported, not judged: at width 256 on CPU the factored matmuls are not faster per MAC.",
        f"LRAE table + DP solve: {dp_seconds:.1f} s. Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    return Outcome(metrics=metrics, table=table_rows, summary=summary, notes=notes)
