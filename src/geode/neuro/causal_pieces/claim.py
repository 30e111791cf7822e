"""Claim check of the causal-pieces paper: more causal pieces at initialisation, better training.

Protocol v2 (issue 19), following the authors' release (``dodo47/snnpiece``; protocol section 5):

- network [4, 30, 3]: the raw Yin-Yang features are the input spike times, one hidden layer of exact nLIF
  neurons (tau_s = 0.5), a trainable linear decoder on the hidden spike times (later than 4.5 -> 0),
  cross-entropy (:mod:`geode.neuro.causal_pieces.release`);
- 16 initialisations per seed drawn as the release draws them (mu ~ U(0,1) - 0.2, sigma ~ U(0,1), raw
  N(mu, sigma^2) hidden weights), 3 seeds: rho is computed over the 16 runs of each seed;
- pieces: distinct joint causal states of the hidden neurons over the 5,000 training inputs, at init;
- training: Adam, batch 200, a half-cosine learning-rate decay, and the firing-ability term of Mostafa (2017)
  (the release's weight bumping, ``gamma``) against the collapse; the learning rate and ``gamma`` are tuned
  with :func:`geode.claims.tune` on validation accuracy over 3 extra initialisations (not the study's);
  every run's epoch is selected on a 1,000-point validation split (the release reports its best test
  epoch; we never select on test);
- thresholds unchanged from issue 12: ``reproduced`` if Spearman rho(log #pieces at init, test accuracy)
  >= 0.6 and the best run reaches >= 90% test accuracy; ``partial`` if rho >= 0.3. Each holds in at least 2
  of 3 seeds. Controls: rho with the piece counts shuffled across the runs (a random predictor), and the
  best test accuracy at initialisation (untrained);
- validity floors: at most 10% of runs collapsed (hidden layer spiking at init, silent on every training
  input after training; mean over seeds), and the closed-form spike times agree with forward Euler with
  an error that falls as the step shrinks (dt = 1e-2, 1e-3, 1e-4; the Euler step's own error is O(dt), the
  closed form matches a root finder to 1e-15, tests/neuro).

Old verdict (revision 1: all-spiking [5, 60, 3], latency code and bias spike, fan-in-scaled 16-point grid,
first-spike loss, Adam lr 5e-3, one seed): ``partial``, rho = 0.37, best 74.8%; 7 of 16 runs at exactly
1/3, five of them alive at init and silenced by training. The all-spiking variant stays available as
:func:`geode.neuro.causal_pieces.run_init_study`.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read reproduced on the same runs): not tuned by the protocol: release recipe. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        hidden=8,
        inits=4,
        n_train=300,
        n_val=200,
        n_test=200,
        epochs=2,
        tune_inits=1,
        tune_epochs=1,
        euler_samples=2,
        euler_dts=(1e-2, 1e-3),
    ),
    "quick": dict(
        hidden=30,
        inits=16,
        n_train=5000,
        n_val=1000,
        n_test=1000,
        epochs=40,
        tune_inits=3,
        tune_epochs=20,
        euler_samples=10,
        euler_dts=(1e-2, 1e-3, 1e-4),
    ),
    "full": dict(
        hidden=30,
        inits=50,
        n_train=5000,
        n_val=1000,
        n_test=1000,
        epochs=200,
        tune_inits=5,
        tune_epochs=100,
        euler_samples=100,
        euler_dts=(1e-2, 1e-3, 1e-4, 1e-5),
    ),
}

GRID: dict[str, list[float]] = {"lr": [1e-2, 3e-2], "gamma": [0.0, 1.0]}
"""Tuning grid (learning rate; weight of the firing-ability term), selected on validation accuracy."""

BATCH = 200
TAU_S = 0.5


def _euler_check(seed: int, n_samples: int, dts: tuple[float, ...]) -> tuple[list[float], float, Any, Any]:
    """Closed-form vs forward-Euler spike times of a 4-30 nLIF layer on raw Yin-Yang inputs, per step size."""
    import torch

    from geode.neuro.causal_pieces.release import DECODE_T, ReleaseInit, ReleaseNet, yinyang_raw
    from geode.neuro.lif import simulate_lif_euler

    x, _ = yinyang_raw(n_samples, seed * 1000 + 7, dtype=torch.float64)
    net = ReleaseNet(30, ReleaseInit(0.8, 0.8, seed * 1000 + 3)).double()
    exact = net.hidden(x)[0].detach().numpy()
    exact[exact > DECODE_T] = np.inf
    errs, agree, pair = [], 1.0, (np.zeros(0), np.zeros(0))
    for dt in dts:
        euler = simulate_lif_euler(x, net.hidden.weight, TAU_S, 1.0, dt=dt, t_end=DECODE_T)
        both = np.isfinite(exact) & np.isfinite(euler)
        agree = min(agree, float(np.mean(np.isfinite(exact) == np.isfinite(euler))))
        errs.append(float(np.max(np.abs(exact[both] - euler[both]))) if both.any() else 0.0)
        pair = (exact[both], euler[both])
    return errs, agree, pair[0], pair[1]


@register(
    "causal-pieces",
    claim=(
        "Initialisations of single-spike SNNs with more causal pieces on the training set strongly "
        "correlate with training success."
    ),
    paper_figure=(
        "Yin-Yang [4, 30, 3] nLIF nets, 50 random inits: strong positive correlation between #pieces at init "
        "and accuracy; best runs ~90-95 %"
    ),
    baselines=("shuffled piece counts (random predictor)", "untrained networks"),
    thresholds=(
        Threshold(
            "rho_strong",
            "spearman_rho",
            ">=",
            0.6,
            "Spearman rho(log #pieces at init, test acc) >= 0.6 (2 of 3 seeds)",
            agg="2 of 3",
            control="spearman_rho_shuffled",
            arms=("law", "release recipe"),
        ),
        Threshold(
            "best_90",
            "best_test_accuracy",
            ">=",
            0.90,
            "the best run reaches >= 90% test accuracy (2 of 3 seeds)",
            agg="2 of 3",
            control="best_test_accuracy_at_init",
            arms="release recipe",
        ),
        Threshold(
            "rho_some",
            "spearman_rho",
            ">=",
            0.3,
            "Spearman rho >= 0.3 (2 of 3 seeds)",
            agg="2 of 3",
            control="spearman_rho_shuffled",
            arms=("law", "release recipe"),
        ),
    ),
    floors=(
        Threshold(
            "few_collapsed",
            "collapsed_fraction",
            "<=",
            0.10,
            "validity: at most 10% of runs alive at init end silent after training (mean over seeds)",
            arms="release recipe",
        ),
        Threshold(
            "euler_converges",
            "euler_error_falls",
            ">=",
            1.0,
            "validity: the closed form's distance to forward Euler falls with the Euler step, every seed",
            agg="all",
        ),
    ),
    reproduced="rho_strong and best_90",
    partial="rho_some",
    key_metric="spearman_rho",
    timing_metrics=("seconds",),
    revision=2,
    method="law",
    tuned=("release recipe",),
    untuned={
        "law": "the paper's law: a prediction measured on the trained arms, nothing to tune",
        "shuffled piece counts": "no hyper-parameter: a permutation of the piece counts (random predictor)",
        "untrained networks": "no hyper-parameter: the networks at initialisation",
    },
)
def run(mode: str, seed: int) -> Outcome:
    """Run the claim check in ``mode`` ("smoke", "quick" or "full") with ``seed``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import torch

    from geode.neuro.causal_pieces.experiment import rank_correlation
    from geode.neuro.causal_pieces.release import ReleaseNet, release_inits, train_release, yinyang_raw

    t0 = time.perf_counter()
    p = _MODES[mode]
    torch.manual_seed(seed)
    data = {
        "train": yinyang_raw(p["n_train"], seed * 1000 + 42),
        "val": yinyang_raw(p["n_val"], seed * 1000 + 43),
        "test": yinyang_raw(p["n_test"], seed * 1000 + 41),
    }
    tune_inits = release_inits(p["tune_inits"], seed + 10_000)

    def fit(method: str, params: dict) -> float:
        accs = []
        for init in tune_inits:
            net = ReleaseNet(p["hidden"], init, tau_s=TAU_S)
            r = train_release(
                net,
                data,
                lr=params["lr"],
                gamma=params["gamma"],
                epochs=p["tune_epochs"],
                batch_size=BATCH,
                cosine=True,
                seed=init.seed,
            )
            accs.append(r["val_acc"])
        return float(np.mean(accs))

    res = tune(fit, {"release recipe": GRID})
    lr, gamma = res.params("release recipe")["lr"], res.params("release recipe")["gamma"]

    rows, curves = [], []
    for init in release_inits(p["inits"], seed):
        net = ReleaseNet(p["hidden"], init, tau_s=TAU_S)
        r = train_release(
            net, data, lr=lr, gamma=gamma, epochs=p["epochs"], batch_size=BATCH, cosine=True, seed=init.seed
        )
        curves.append(r.pop("test_curve"))
        rows.append({"init": init.name, "mean": init.mean, "std": init.std, **r, "init_test_acc": curves[-1][0]})

    log_pieces = np.array([r["log_pieces_init"] for r in rows])
    acc = np.array([r["test_acc"] for r in rows])
    rho, rho_ok = rank_correlation(log_pieces, acc)
    shuffled = np.random.default_rng([seed, 77]).permutation(log_pieces)
    rho_shuffled, _ = rank_correlation(shuffled, acc)
    collapsed = np.array([r["collapsed"] for r in rows])
    dead = np.array([r["spiking_init"] == 0 for r in rows])
    euler_errs, euler_agree, ex, eu = _euler_check(seed, p["euler_samples"], p["euler_dts"])
    order = np.argsort(log_pieces, kind="stable")
    half = len(rows) // 2
    metrics = {
        "spearman_rho": rho,
        "rho_defined": float(rho_ok),
        "spearman_rho_shuffled": rho_shuffled,
        "best_test_accuracy": float(acc.max()),
        "best_test_accuracy_at_init": float(max(r["init_test_acc"] for r in rows)),
        "median_test_accuracy": float(np.median(acc)),
        "worst_test_accuracy": float(acc.min()),
        "pearson_r_log_pieces": float(np.corrcoef(log_pieces, acc)[0, 1]) if np.ptp(log_pieces) * np.ptp(acc) else 0.0,
        "acc_gap_top_vs_bottom_half": float(acc[order[half:]].mean() - acc[order[:half]].mean()) if half else 0.0,
        "collapsed_fraction": float(collapsed.mean()),
        "dead_at_init_fraction": float(dead.mean()),
        "runs_at_chance": float(np.sum(acc < 0.4)),
        "max_log_pieces": float(log_pieces.max()),
        "selected_lr": float(lr),
        "selected_gamma": float(gamma),
        "euler_spike_agreement": euler_agree,
        "euler_error_falls": float(all(b < a for a, b in zip(euler_errs, euler_errs[1:]))),
        **{f"euler_error_dt_{dt:g}": e for dt, e in zip(p["euler_dts"], euler_errs)},
        "n_runs": float(len(rows)),
        "seconds": time.perf_counter() - t0,
    }

    fig1, ax = plt.subplots(figsize=(5, 3.6))
    ax.scatter(log_pieces, acc * 100, c=np.where(collapsed, "red", "C0"))
    ax.set_xlabel("log(#causal pieces at init, training set)")
    ax.set_ylabel("test accuracy (%, epoch selected on validation)")
    ax.set_title(f"Yin-Yang [4, {p['hidden']}, 3]: Spearman rho = {rho:.2f}")
    fig1.tight_layout()

    fig2, ax = plt.subplots(figsize=(5, 3.6))
    cmap = plt.get_cmap("viridis")
    span = max(float(log_pieces.max()), 1e-9)
    for i, r in enumerate(rows):
        ax.plot(np.arange(len(curves[i])), np.array(curves[i]) * 100, color=cmap(r["log_pieces_init"] / span), lw=1)
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("training curves, coloured by log(#pieces at init)")
    fig2.tight_layout()

    fig3, ax = plt.subplots(figsize=(4, 3.6))
    ax.loglog(p["euler_dts"], euler_errs, "o-")
    ax.set_xlabel("Euler step dt (units of time)")
    ax.set_ylabel("max |closed form - Euler|")
    ax.set_title("closed form vs forward Euler")
    fig3.tight_layout()

    table = [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]
    summary = (
        f"{mode}: Spearman rho(log #pieces at init, test acc) = {rho:.2f} over {len(rows)} inits (shuffled "
        f"{rho_shuffled:.2f}); best test acc {acc.max():.1%}, median {np.median(acc):.1%}; collapsed "
        f"{int(collapsed.sum())}, dead at init {int(dead.sum())}; lr {lr:g}, gamma {gamma:g}; Euler error "
        + " / ".join(f"{e:.1e}" for e in euler_errs)
        + " at dt = "
        + " / ".join(f"{d:g}" for d in p["euler_dts"])
    )
    notes = [
        f"[4, {p['hidden']}, 3]: raw Yin-Yang features as spike times, hidden nLIF (tau_s = {TAU_S}, theta = 1), "
        f"linear decoder on hidden times (> 4.5 -> 0), cross-entropy; {p['n_train']} train / {p['n_val']} "
        f"validation / {p['n_test']} test points; Adam, batch {BATCH}, {p['epochs']} epochs with a half-cosine "
        f"decay (the release: 200 epochs, constant lr 1e-2, gamma 0); epoch selected on validation.",
        f"lr and gamma tuned on the mean validation accuracy of {p['tune_inits']} extra initialisations trained "
        f"{p['tune_epochs']} epochs each (the same grid for every configuration of the recipe).",
        "pieces = distinct joint causal states of the hidden neurons on the training set at init (the release's "
        "Yin-Yang scan); runs dead at init (no hidden spike on any input) are kept, with 1 piece.",
        "Euler: forward Euler of the same neurons (geode.neuro.simulate_lif_euler); its error is O(dt). The "
        "closed form itself matches a bracketed root of V(t) to ~1e-15 (tests/neuro/test_lif.py).",
        *res.notes(),
    ]
    if not rho_ok:
        notes.append("Spearman rho is undefined (a constant variable) and is reported as 0.")
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"pieces_vs_accuracy": fig1, "training_curves": fig2, "euler_crosscheck": fig3},
        summary=summary,
        notes=notes,
        tuned=res.table(),
    )
