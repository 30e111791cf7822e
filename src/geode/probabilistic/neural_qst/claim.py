"""Claim check of neural QST: at low shot counts the msW1-trained network beats iterative MLE and keeps rising.

Thresholds (fixed by issue 30 before any run): ``reproduced`` if at S <= 100 shots the network's fidelity
exceeds iterative MLE's final fidelity (every shot level) and still rises when MLE has plateaued, and random
restarts reach fidelities within 0.01 of each other; ``partial`` if it beats MLE at one shot level.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: every threshold must hold in at least 2 of 3 seeds (``"2 of 3"``): fidelity gaps and
  spreads are noisy per-seed statistics (each seed draws new shots, new validation shots, new inits);
- *"still rises when MLE has plateaued"*: iMLE's plateau is the first checkpoint (of 20) at which its
  fidelity is within 0.005 of its final value; the network's rise is its fidelity at the end minus its
  fidelity at the same fraction of its own training; the threshold asks a rise >= 0.005 at every
  S <= 100 (if iMLE never plateaus before its last checkpoint the rise is 0 and the threshold fails);
- *validity floors*: iMLE reaches fidelity >= 0.5 at S = 100 (the baseline learned the state; a random
  state has 1/36), the msW1 training loss of the tuned network falls to <= 0.5 of its start at every
  shot level (training converged), and at most a quarter of the tuned runs diverged; all in every seed
  except the last (mean);
- *negative controls*: the untrained network (same architecture, step 0) against iMLE for both "beats"
  thresholds; iMLE's own rise after its plateau and the untrained network's (zero) rise for "keeps
  rising" (weak controls: they fail by construction, which we state rather than hide); for "restarts
  agree" the spread of the restarts' fidelities after 5% of training (the same restarts before they
  converge).

Equal tuning: each method (msW1 network, the same network on the binned NLL, Cholesky GD-QST, iMLE) gets 3
configurations (+1 past an edge) of its one knob (Adam learning rate; iMLE's dilution), selected on the
held-out NLL of a fresh validation draw of the same size (never on fidelity), at each shot level separately;
all methods run the same number of iterations. The verdict is against iMLE (the baseline the claim names);
the strongest of the other baselines is reported beside it with its own margin. A second reading of
"iMLE's final fidelity" (2x more iterations at its tuned dilution) is reported, not judged.

Changed after the first quick run (seed 0 only, then stopped; two real defects, neither a threshold): the
restarts' *untrained* spread was a second control of "restarts agree", but random states all have
fidelity ~1/36, so their spread (0.001) passes the 0.01 bound by construction: a control that cannot
fail; it is still reported (``untrained_restart_spread``), no longer a control. And the seed took 113 CPU
s against the 90 s budget: iMLE's other reading went from 4x to 2x the iterations and its adjoint map became
one matrix product (same numbers); nothing the verdict reads changed. That run's seed-0 verdict was
``partial`` (gap +0.033 / +0.152 at S = 100 / 20, rise after the plateau -0.039, restart spread 0.084).

**Quick-mode finding** (revision 1, seeds 0-2, measured once on the final set-up): *partial*, per seed
partial / partial / partial; floors met in every seed (iMLE fidelity at S = 100: 0.916, 0.924, 0.853; msW1
training loss to 0.42 / 0.39 / 0.37 of its start). Fidelity msW1 network vs iMLE: S = 20: 0.713 vs 0.561,
0.883 vs 0.685, 0.930 vs 0.794 (gap +0.15, +0.20, +0.14: beats iMLE at one level in 3/3 seeds); S = 100:
0.948 vs 0.916, 0.901 vs 0.924, 0.961 vs 0.853 (+0.033, -0.023, +0.108: every level in 2/3 seeds, passes).
"Keeps rising after iMLE's plateau" fails (rise -0.039, +0.063, +0.003 against 0.005; 1/3 seeds) and
"restarts agree" fails (spread 0.084, 0.017, 0.014 against 0.01; 0/3), so not *reproduced*. iMLE does
plateau (its own rise after the plateau 0.003-0.005; x2 iterations moves it by <= 0.016, gaps against it
+0.032/-0.025/+0.093 at S = 100). The strongest baseline is the *same network on the NLL*: 0.852, 0.922,
0.859 at S = 20 and 0.973, 0.979, 0.976 at S = 100, above the msW1 network in 5 of 6 (seed, S) pairs
(msW1 - NLL net: -0.139, -0.039, +0.071 at S = 20; -0.024, -0.078, -0.015 at S = 100): the gain over
iMLE comes from the rank-1 (pure-state) network, not from the msW1 loss. Cholesky GD-QST (full rank)
tracks iMLE (0.56-0.91). Controls: the untrained network fails both "beats" thresholds (gaps -0.55 to
-0.90); the restarts' spread at 5% of training (0.014, 0.48, 0.65) fails "restarts agree".
Tuning: selections on a grid edge after the one extension (Cholesky lr 0.09 in 3/6, iMLE dilution at
0.33 or 33 in 5/6) are flagged in the notes; the iMLE fidelity barely depends on it (x2 reading).
CPU per seed 94.7, 94.4, 77.0 s on the loaded 2-core machine (wall 210, 203, 104 s): slightly over the
90 s budget in two seeds.


Set-up (quick): two-mode even cat ``|a,a> + |-a,-a>``, a = 1, Fock cutoff 6 per mode (dimension 36), loss
eta = 0.9 and electronic noise sigma_e = 0.05 (known to every method), 4 x 4 phase settings (0, pi/4, pi/2,
3pi/4 per mode), S in {20, 100} shots per setting, 24 x 24 bins on [-4.5, 4.5]^2, 300 iterations, msW1 over
16 directions; 3 restarts at S = 100. ``full`` (for a GPU machine): cutoff 10, a = 1.5, 8 x 8 settings,
S in {20, 100, 500}, 48 bins, 2000 iterations.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: msw1, imle. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).

Revision 2 (2026-12-02): the network's weights are now drawn from its seed. Before, they came from the global
torch RNG, so every number above depended on what had drawn from it earlier in the worker process (the same
smoke run gave a restart spread of 0.40, 0.17 or 0.04 by import order alone). Quick seeds 0-2 re-run:
inconclusive / not reproduced / inconclusive (v3; not tuned by the protocol: msw1, imle); fidelity gap msW1 -
iMLE at S <= 100 from -0.069 to +0.035, -0.113 to -0.031, +0.037 to +0.106; rise after iMLE's plateau -0.037,
+0.348, +0.005; restart spread 0.66, 0.028, 0.072. The revision-1 "partial" above rested on one draw of the
global RNG per seed; seed 1 now loses to iMLE at every shot level.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

RISE_TOL = 0.005  # iMLE plateau tolerance and the rise the network must show after it
LONG = 2  # iMLE's other reading: this many times the iterations, at its tuned dilution
EARLY = 0.05  # fraction of training at which the restarts' early spread (control) is read

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        cutoff=3,
        alpha=0.8,
        n_phases=3,
        shots=(20, 100),
        bins=12,
        steps=30,
        restarts=2,
        width=32,
        n_directions=8,
        grids=dict(
            msw1=dict(lr=[3e-3, 1e-2]),
            nll_net=dict(lr=[3e-3, 1e-2]),
            cholesky=dict(lr=[1e-2, 3e-2]),
            imle=dict(dilution=[1.0, 10.0]),
        ),
        extend=0,
    ),
    "quick": dict(
        cutoff=6,
        alpha=1.0,
        n_phases=4,
        shots=(20, 100),
        bins=24,
        steps=300,
        restarts=3,
        width=128,
        n_directions=16,
        grids=dict(
            msw1=dict(lr=[1e-3, 3e-3, 1e-2]),
            nll_net=dict(lr=[1e-3, 3e-3, 1e-2]),
            cholesky=dict(lr=[3e-3, 1e-2, 3e-2]),
            imle=dict(dilution=[1.0, 3.0, 10.0]),
        ),
        extend=1,
    ),
    "full": dict(
        cutoff=10,
        alpha=1.5,
        n_phases=8,
        shots=(20, 100, 500),
        bins=48,
        steps=2000,
        restarts=5,
        width=256,
        n_directions=32,
        grids=dict(
            msw1=dict(lr=[3e-4, 1e-3, 3e-3, 1e-2]),
            nll_net=dict(lr=[3e-4, 1e-3, 3e-3, 1e-2]),
            cholesky=dict(lr=[1e-3, 3e-3, 1e-2, 3e-2]),
            imle=dict(dilution=[0.3, 1.0, 3.0, 10.0]),
        ),
        extend=2,
    ),
}
ETA, SIGMA_E, HALF_WIDTH = 0.9, 0.05, 4.5
_NAMES = {"msw1": "msW1 network", "nll_net": "network on NLL", "cholesky": "Cholesky GD-QST", "imle": "iMLE"}


def _rise_after_plateau(imle_f: list[float], f: list[float]) -> tuple[float, float, int]:
    """(network's rise after iMLE's plateau, iMLE's own rise after it, plateau checkpoint index)."""
    final = imle_f[-1]
    idx = next(i for i, v in enumerate(imle_f) if v >= final - RISE_TOL)
    frac = idx / (len(imle_f) - 1)
    j = int(round(frac * (len(f) - 1)))
    return f[-1] - f[j], imle_f[-1] - imle_f[idx], idx


def _figure(curves: dict[str, Any], restarts: list[Any], shots: int) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for m, r in curves.items():
        ax.plot(np.array(r.steps) / max(r.steps[-1], 1), r.fidelities, label=_NAMES[m])
    for k, r in enumerate(restarts):
        ax.plot(
            np.array(r.steps) / max(r.steps[-1], 1), r.fidelities, "k:", lw=0.8, label="restarts" if k == 0 else None
        )
    ax.set_xlabel("fraction of the iterations")
    ax.set_ylabel("fidelity with the true cat")
    ax.set_title(f"S = {shots} shots per setting (tuned)")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@register(
    "neural-qst",
    claim=(
        "An overparameterised network for the wavefunction, trained by rank-1 factored gradient descent on the "
        "max-sliced W1 between model and homodyne data, keeps improving the fidelity on noisy two-mode cat "
        "states at low shot counts where iterative MLE plateaus, and random restarts reach the same fidelity."
    ),
    paper_figure="fidelity vs iteration and vs shots on noisy two-mode cat states: msW1 network vs iterative MLE",
    baselines=("iterative MLE (RrhoR)", "same network on the NLL", "Cholesky GD-QST"),
    thresholds=(
        Threshold(
            "beats_imle_all_low_shots",
            "min_gap_low_shots",
            ">",
            0.0,
            "msW1 network's fidelity > iMLE's final fidelity at every S <= 100 (2 of 3 seeds)",
            agg="2 of 3",
            control="untrained_min_gap_low_shots",
            arms=("msw1", "imle"),
        ),
        Threshold(
            "keeps_rising",
            "min_rise_after_imle_plateau",
            ">=",
            RISE_TOL,
            "the network's fidelity still rises >= 0.005 after iMLE's plateau, at every S <= 100 (2 of 3)",
            agg="2 of 3",
            control=("imle_min_rise_after_plateau", "untrained_rise"),
            arms=("msw1", "imle"),
        ),
        Threshold(
            "restarts_agree",
            "restart_spread",
            "<=",
            0.01,
            "random restarts (S = 100) end within 0.01 fidelity of each other (2 of 3 seeds)",
            agg="2 of 3",
            control="early_restart_spread",
            arms=("msw1",),
        ),
        Threshold(
            "beats_imle_one_level",
            "max_gap_low_shots",
            ">",
            0.0,
            "msW1 network's fidelity > iMLE's at one S <= 100 at least (2 of 3 seeds)",
            agg="2 of 3",
            control="untrained_max_gap_low_shots",
            arms=("msw1", "imle"),
        ),
        Threshold(
            "network_trained",
            "msw1_max_loss_ratio",
            "<=",
            0.5,
            "reported: floor: the tuned msW1 network's training loss falls to <= 0.5 of its start at every S",
            agg="all",
            arms=("msw1",),
        ),
    ),
    floors=(
        Threshold(
            "imle_learns",
            "imle_fidelity_s100",
            ">=",
            0.5,
            "floor: iMLE fidelity >= 0.5 at S = 100",
            agg="all",
            arms=("imle",),
        ),
        Threshold(
            "few_collapsed", "tuned_diverged_fraction", "<=", 0.25, "floor: <= 1/4 of tuned runs diverged (mean)"
        ),
    ),
    reproduced="beats_imle_all_low_shots and keeps_rising and restarts_agree",
    partial="beats_imle_one_level",
    method="msw1",
    tuned=("msw1", "imle", "nll_net", "cholesky"),
    key_metric="min_gap_low_shots",
    revision=2,  # the network's weights are drawn from the seed (before, from the global torch RNG)
)
def run(mode: str, seed: int) -> Outcome:
    from geode.probabilistic.neural_qst import (
        MeasurementModel,
        QuadratureGrid,
        fidelity,
        fit_cholesky,
        fit_neural,
        imle,
        simulate_homodyne,
        two_mode_cat,
    )
    from geode.probabilistic.neural_qst.qst import NeuralWavefunction

    cfg = _MODES[mode]
    t0 = time.process_time()
    N = cfg["cutoff"]
    psi = two_mode_cat(cfg["alpha"], N)
    th = np.pi * np.arange(cfg["n_phases"]) / cfg["n_phases"]
    phases = np.array([(a, b) for a in th for b in th])
    grid = QuadratureGrid(cfg["bins"], HALF_WIDTH, eta=ETA, sigma_e=SIGMA_E)
    model = MeasurementModel(grid, N, phases)
    T = cfg["steps"]
    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    tuned: list[dict[str, Any]] = []
    notes: list[str] = []
    figures: dict[str, Any] = {}
    cpu: dict[str, float] = {m: 0.0 for m in _NAMES}
    low = [s for s in cfg["shots"] if s <= 100]
    diverged: list[bool] = []
    untrained = NeuralWavefunction(model.dim, cfg["width"], seed=10_000 + seed)
    f_untrained = fidelity(psi, untrained().detach().numpy())
    for si, S in enumerate(cfg["shots"]):
        rng = np.random.default_rng([seed, S])
        train = simulate_homodyne(psi, phases, S, grid, seed=rng)
        val = simulate_homodyne(psi, phases, S, grid, seed=rng)

        def fit(method: str, params: dict[str, Any], train=train, val=val) -> tuple[float, Any]:
            c = time.process_time()
            if method == "imle":
                r = imle(model, train, val, iterations=T, psi_true=psi, **params)
            elif method == "cholesky":
                r = fit_cholesky(model, train, val, steps=T, seed=seed, psi_true=psi, **params)
            else:
                loss = "msw1" if method == "msw1" else "nll"
                r = fit_neural(
                    model,
                    train,
                    val,
                    loss=loss,
                    steps=T,
                    width=cfg["width"],
                    n_directions=cfg["n_directions"],
                    seed=10_000 + seed,
                    psi_true=psi,
                    **params,
                )
            cpu[method] += time.process_time() - c
            return (r.val_nll if math.isfinite(r.val_nll) else math.inf), r

        res = tune(fit, cfg["grids"], maximize=False, extend=cfg["extend"], limits={"dilution": (0.0, math.inf)})
        best = {m: res.payload(m) for m in cfg["grids"]}
        tuned += [dict(r, shots=S) for r in res.table()]
        notes += [f"(S={S}) {n}" for n in res.notes()]
        F = {m: best[m].fidelities[-1] for m in best}
        for m in best:
            metrics[f"{m}_fidelity_s{S}"] = F[m]
            diverged.append(bool(best[m].diverged))
        rise, imle_rise, idx = _rise_after_plateau(best["imle"].fidelities, best["msw1"].fidelities)
        long = imle(model, train, None, iterations=LONG * T, psi_true=psi, dilution=best["imle"].params["dilution"])
        strongest = max(("nll_net", "cholesky"), key=lambda m: F[m])
        metrics.update(
            {
                f"gap_s{S}": F["msw1"] - F["imle"],
                f"untrained_gap_s{S}": f_untrained - F["imle"],
                f"rise_after_imle_plateau_s{S}": rise,
                f"imle_rise_after_plateau_s{S}": imle_rise,
                f"imle_plateau_fraction_s{S}": idx / (len(best["imle"].fidelities) - 1),
                f"msw1_loss_ratio_s{S}": best["msw1"].train_loss_end / best["msw1"].train_loss_start,
                f"imle_long_fidelity_s{S}": long.fidelities[-1],
                f"gap_vs_imle_long_s{S}": F["msw1"] - long.fidelities[-1],
                f"msw1_minus_strongest_s{S}": F["msw1"] - F[strongest],
            }
        )
        for m in best:
            r = best[m]
            table.append(
                {
                    "shots": S,
                    "method": _NAMES[m],
                    "tuned": ", ".join(f"{k}={v:g}" for k, v in r.params.items() if k != "loss"),
                    "val NLL": r.val_nll,
                    "fidelity (final)": F[m],
                    "fidelity at 1/2": r.fidelities[len(r.fidelities) // 2],
                    "diverged": r.diverged,
                }
            )
        table.append(
            {
                "shots": S,
                "method": "iMLE x2 iterations (other reading)",
                "tuned": "same dilution",
                "val NLL": math.nan,
                "fidelity (final)": long.fidelities[-1],
                "fidelity at 1/2": long.fidelities[len(long.fidelities) // 2],
                "diverged": long.diverged,
            }
        )
        notes.append(
            f"S={S}: fidelity msW1 {F['msw1']:.4f}, iMLE {F['imle']:.4f} (x2 iterations {long.fidelities[-1]:.4f}), "
            f"NLL network {F['nll_net']:.4f}, Cholesky {F['cholesky']:.4f}; strongest other baseline "
            f"{_NAMES[strongest]} (msW1 - it = {F['msw1'] - F[strongest]:+.4f}); iMLE plateau at "
            f"{idx}/{len(best['imle'].fidelities) - 1} of its run, network's rise after it {rise:+.4f}."
        )
        if S == 100 or si == len(cfg["shots"]) - 1 and "restart_spread" not in metrics:
            lr = best["msw1"].params["lr"]
            reps = [best["msw1"]] + [
                fit_neural(
                    model,
                    train,
                    val,
                    loss="msw1",
                    steps=T,
                    lr=lr,
                    width=cfg["width"],
                    n_directions=cfg["n_directions"],
                    seed=20_000 + 97 * seed + k,
                    psi_true=psi,
                )
                for k in range(1, cfg["restarts"])
            ]
            finals = [r.fidelities[-1] for r in reps]
            ei = max(1, int(round(EARLY * (len(reps[0].fidelities) - 1))))
            early = [r.fidelities[ei] for r in reps]
            init = [r.fidelities[0] for r in reps]
            metrics.update(
                restart_spread=max(finals) - min(finals),
                early_restart_spread=max(early) - min(early),
                untrained_restart_spread=max(init) - min(init),
            )
            notes.append(
                f"Restarts at S={S} (lr {lr:g}): final fidelities {', '.join(f'{v:.4f}' for v in finals)}; "
                f"at {EARLY:.0%} of training {', '.join(f'{v:.3f}' for v in early)}."
            )
            figures["neural_qst_fidelity"] = _figure(best, reps[1:], S)
    metrics.update(
        min_gap_low_shots=min(metrics[f"gap_s{S}"] for S in low),
        max_gap_low_shots=max(metrics[f"gap_s{S}"] for S in low),
        untrained_min_gap_low_shots=min(metrics[f"untrained_gap_s{S}"] for S in low),
        untrained_max_gap_low_shots=max(metrics[f"untrained_gap_s{S}"] for S in low),
        min_rise_after_imle_plateau=min(metrics[f"rise_after_imle_plateau_s{S}"] for S in low),
        imle_min_rise_after_plateau=min(metrics[f"imle_rise_after_plateau_s{S}"] for S in low),
        untrained_rise=0.0,
        untrained_fidelity=f_untrained,
        imle_fidelity_s100=metrics[f"imle_fidelity_s{100 if 100 in cfg['shots'] else low[-1]}"],
        msw1_max_loss_ratio=max(metrics[f"msw1_loss_ratio_s{S}"] for S in cfg["shots"]),
        tuned_diverged_fraction=float(np.mean(diverged)),
    )
    notes.append(
        "CPU seconds spent per method (tuning included): "
        + ", ".join(f"{_NAMES[m]} {v:.1f}" for m, v in cpu.items())
        + f"; this seed in all {time.process_time() - t0:.0f} s. Iterations are matched (the verdict's"
        " comparison); iMLE's x2 run is the matched-or-more-compute reading."
    )
    summary = (
        f"fidelity gap msW1 - iMLE at S<=100: min {metrics['min_gap_low_shots']:+.4f}, max "
        f"{metrics['max_gap_low_shots']:+.4f}; rise after iMLE plateau {metrics['min_rise_after_imle_plateau']:+.4f}; "
        f"restart spread {metrics['restart_spread']:.4f}"
    )
    return Outcome(metrics=metrics, table=table, figures=figures, summary=summary, notes=notes, tuned=tuned)
