"""Claim check of the CD scaling law: fitted token effectiveness falls with repetition and model size,
saturates with corpus expansion, and paraphrasing beats repetition.

Thresholds (fixed by issue 33, before any run): ``reproduced`` if the fitted token effectiveness decreases
with repetition and with model size, saturates with corpus expansion, and paraphrase beats repetition
(with confidence bounds); ``partial`` if two of these hold; else ``not reproduced``.

Set-up (the paper's LMs on Dolma-3 are replaced by a CPU stand-in, :mod:`geode.llm.cd_scaling.experiment`):
teacher-student regression whose teacher reads 4 "meaning" coordinates of 8; students are tanh MLPs of
widths 4..64 (41..641 parameters) trained on one pass over ``D`` samples ("tokens"); a corpus of
``U = 256`` unique samples is expanded by repetition (reshuffled epochs) or paraphrase (surface coordinates
redrawn, meaning and label kept) to ``D = 2U .. 32U``; fresh-data runs span ``U/4 .. 32U``. Each width's
Adam learning rate is tuned on validation (fresh data, ``D = 8U``) and then used for every run of it. The
CD law (:class:`~geode.llm.cd_scaling.CDScalingLaw`, strategies repeat and paraphrase, shared Chinchilla
core) is fitted to all runs; the four properties are read off the fitted :math:`\\eta` at the middle width
(161 parameters) and ``U = 256``:

- *decreases with repetition*: :math:`\\eta_{rep}(R=1) - \\eta_{rep}(R=31) \\ge 0.05`;
- *decreases with model size*: :math:`\\eta_{rep}(N=41) - \\eta_{rep}(N=641) \\ge 0.05` at the same
  ``(U, D = 32U)`` (the experiment's reading; at the same tokens-per-parameter ratio is reported beside);
- *saturates*: the marginal worth of one more repeated token at ``D = 32U``,
  :math:`\\partial D_{\\mathrm{eff}} / \\partial D`, is ``<= 0.5`` (half a fresh token or less);
- *paraphrase beats repetition*: :math:`\\eta_{para} - \\eta_{rep} \\ge 0.05` at ``D = 32U``.

Added before the first run (the protocol needs them; the issue names none):

- *margins and aggregation*: "decreases"/"beats" need a margin of 0.05 in effectiveness (the functional
  form makes :math:`\\eta` decrease in :math:`R` for any finite :math:`R^*`, so a bare ``> 0`` could not
  fail); every threshold applies to the one-sided 95% t bound over seeds (``bound95``);
- *negative controls*: the same CD fit where the "derived" runs are fresh-data runs relabelled as derived
  (true :math:`\\eta = 1`: must fail the repetition, size and saturation thresholds), and a CD fit where a
  second repetition run with other shuffles stands in for paraphrase (the noise floor of a strategy
  comparison: must fail "paraphrase beats repetition");
- *validity floors*: the widest student on fresh ``D = 32U`` reaches <= half the test MSE of the constant
  predictor (every seed); the CD fit's RMS residual of log loss is <= 0.1 (mean); no student run diverged
  (<= 5% non-finite, mean);
- *held-out extrapolation* (reported, not in the verdict: the issue's rule does not name it): the laws
  are fitted on runs with ``D <= 8U``, each law's Huber ``delta`` is selected on the ``D = 16U`` runs with
  equal budget (same grid, same starts and iterations; :func:`geode.claims.tune`), and their RMS log-loss
  error is measured on the ``D = 32U`` runs: CD against Muennighoff (constant :math:`R^*` per strategy, the
  strongest baseline) and Chinchilla (every token fresh; or only unique tokens).

Issue 33 asks for 5 seeds; the harness default and the quick verdict use 3 (``min_seeds=3``); run
``--seeds 5`` for the issue's count. ``full`` mode is the same driver at widths up to 256 and ``U = 1024``
(numpy; no GPU needed, sized for a larger machine).

**Quick verdict (3 seeds, measured once with the set-up above): inconclusive**, every seed, because the
``law_fits`` floor failed: the CD law's RMS log-loss residual over all 115 runs was 0.276 / 0.231 / 0.212
(mean 0.240, floor <= 0.1). The toy's losses are not a clean power law: the shortest fresh runs (``D = U/4``,
16 Adam steps) sit near the constant predictor's loss, single student inits are noisy (the widest fresh
curve is not monotone), and model size matters little on this task (width 4 reaches MSE ~0.04 where width
64 reaches ~0.03). We did not change the set-up after seeing this; the numbers below are what the
thresholds *would* say, reported and not judged:

- falls with repetition: fitted eta_rep 0.96/0.97/0.99 at R=1 -> 0.18/0.26/0.49 at R=31; drop 0.78 / 0.71 /
  0.51, 95% bound 0.43 >= 0.05 (control, fresh runs relabelled as derived: bound -0.13, fails: discriminates);
- falls with model size: drop 0.44 / -0.03 / 0.06, bound -0.27 (fails; the control is as erratic,
  0.78 / -0.39 / 0.01: the fitted eta is poorly identified at large N and D where the data term is
  negligible); the other reading (same tokens per parameter) gives 0.56 / 0.12 / 0.36, reported only;
- saturates: marginal worth of a repeated token at 32U -0.04 / -0.03 / 0.08, bound 0.11 <= 0.5 (control
  0.92 / 1.00 / 1.00, fails: discriminates); negative values mean extra epochs hurt (overfitting);
- paraphrase beats repetition: eta_para - eta_rep 0.63 / 0.28 / 0.46, bound 0.17 >= 0.05 (replicate-repetition
  control -0.02 / +0.00 / -0.08, fails: discriminates); the non-parametric estimator agrees in direction
  (mean over widths at 32U: repeat 0.27 / 0.23 / 0.47, paraphrase 0.41 / 0.47 / 0.62, replicate 0.25 / 0.22 /
  0.47);
- held-out extrapolation to 32U: RMS log error CD 0.385 / 0.274 / 0.266, Muennighoff 0.416 / 0.259 / 0.319,
  Chinchilla (all tokens) 0.430 / 0.316 / 0.297, Chinchilla (unique) 0.80 / 0.73 / 1.24; CD / Muennighoff
  geometric mean 0.94 (<= 1 passes; the Chinchilla / Muennighoff control 1.06 fails). All errors are large in
  absolute terms (the same poor fit the floor reports).

Had the floor held, the rule would give ``partial`` (three of four properties). Two more seeds (``--seeds 5``,
the issue's count) leave this unchanged: inconclusive (law_fits mean 0.236); bounds over 5 seeds: repetition
0.58, size -0.10, saturation 0.04, paraphrase 0.17, extrapolation geomean 0.96; every control fails its
threshold. Quick mode costs 29-41 CPU s per seed (75-109 s wall on the loaded 2-core machine).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read inconclusive on the same runs): unresolved: falls_with_size; not tuned by the protocol: CD. No
idea ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

MARGIN = 0.05

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        widths=(4, 16),
        U=32,
        fresh=(0.5, 1, 2, 4, 8, 16, 32),
        derived=(2, 4, 8, 16, 32),
        lr=[0.03],
        delta=[1e-2],
        n_starts=1,
        maxiter=100,
        n_eval=256,
        extend=0,
    ),
    "quick": dict(
        widths=(4, 8, 16, 32, 64),
        U=256,
        fresh=(0.25, 0.5, 1, 2, 4, 8, 16, 32),
        derived=(2, 4, 8, 16, 32),
        lr=[0.01, 0.03, 0.1],
        delta=[1e-3, 1e-2, 1e-1],
        n_starts=5,
        maxiter=300,
        n_eval=4096,
        extend=1,
    ),
    "full": dict(
        widths=(4, 8, 16, 32, 64, 128, 256),
        U=1024,
        fresh=(0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64),
        derived=(2, 4, 8, 16, 32, 64),
        lr=[0.003, 0.01, 0.03, 0.1],
        delta=[1e-4, 1e-3, 1e-2, 1e-1],
        n_starts=16,
        maxiter=500,
        n_eval=8192,
        extend=2,
    ),
}
_LAWS = ("CD", "Muennighoff", "Chinchilla (all tokens)", "Chinchilla (unique tokens)")
_CODES = {"fresh": 1, "repeat": 2, "paraphrase": 3, "replicate": 4}


def _law(name: str, strategies: tuple[str, ...], delta: float, cfg: dict[str, Any], seed: int) -> Any:
    from geode.llm.cd_scaling import CDScalingLaw, ChinchillaLaw, MuennighoffLaw

    kw = dict(delta=delta, n_starts=cfg["n_starts"], maxiter=cfg["maxiter"], seed=seed)
    if name == "CD":
        return CDScalingLaw(strategies, **kw)
    if name == "Muennighoff":
        return MuennighoffLaw(strategies, **kw)
    return ChinchillaLaw(strategies, tokens="all" if "all" in name else "unique", **kw)


def _rms_log(law: Any, rows: dict[str, np.ndarray], mask: np.ndarray) -> float:
    pred = law.predict(rows["N"][mask], rows["D"][mask], rows["U"][mask], rows["s"][mask])
    return float(np.sqrt(np.mean((np.log(pred) - np.log(rows["L"][mask])) ** 2)))


def _figure(fit: Any, ctrl: Any, Ns: list[float], U: float, np_eta: dict[tuple[str, int], float], derived) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    R = np.linspace(1, max(derived) - 1, 60)
    for ax, s in zip(axes, ("repeat", "paraphrase")):
        for i, n in enumerate(Ns):
            c = plt.cm.viridis(i / max(len(Ns) - 1, 1))
            ax.plot(R, fit.eta(n, U * (1 + R), U, s), color=c, label=f"N={int(n)}")
            ax.scatter([f - 1 for f in derived], [np_eta[(s, int(n))][k] for k in range(len(derived))], color=c, s=10)
        ax.plot(R, ctrl.eta(Ns[len(Ns) // 2], U * (1 + R), U, "repeat"), "k:", label="control (fresh)")
        ax.set_xscale("log")
        ax.set_xlabel("derived tokens per unique token R")
        ax.set_title(f"{s}: fitted eta (lines), estimator (dots)")
    axes[0].set_ylabel("token effectiveness eta")
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    return fig


def _pairs(names: tuple[str, ...]) -> str:
    return " or ".join(f"({a} and {b})" for i, a in enumerate(names) for b in names[i + 1 :])


_PROPS = ("falls_with_repetition", "falls_with_size", "saturates", "paraphrase_beats_repetition")


@register(
    "cd-scaling",
    claim=(
        "The token effectiveness of derived tokens fitted by the Compute-Data scaling law is far from constant: "
        "it decreases with repetition and with model size, saturates as the corpus is expanded, and paraphrasing "
        "is worth more than repetition."
    ),
    paper_figure=(
        "eta fitted for repetition and paraphrasing at 14M-600M parameters on Dolma-3: depends on model size, "
        "tokens-per-parameter and amount of derived data, saturates; three regimes (compute-, data-, model-bound)"
    ),
    baselines=("Chinchilla (every token fresh)", "Chinchilla (unique tokens)", "Muennighoff (constant R*)"),
    thresholds=(
        Threshold(
            "falls_with_repetition",
            "rep_eta_drop",
            ">=",
            MARGIN,
            "fitted eta_rep(R=1) - eta_rep(R=31) >= 0.05 at the middle width (95% bound over seeds)",
            agg="bound95",
            control="ctrl_fresh_eta_drop",
        ),
        Threshold(
            "falls_with_size",
            "rep_eta_size_drop",
            ">=",
            MARGIN,
            "fitted eta_rep(smallest) - eta_rep(largest student) >= 0.05 at D = 32U (95% bound)",
            agg="bound95",
            control="ctrl_fresh_eta_size_drop",
        ),
        Threshold(
            "saturates",
            "rep_marginal_at_max",
            "<=",
            0.5,
            "one more repeated token at D = 32U is worth <= half a fresh token (95% bound)",
            agg="bound95",
            control="ctrl_fresh_marginal_at_max",
        ),
        Threshold(
            "paraphrase_beats_repetition",
            "para_minus_rep_eta",
            ">=",
            MARGIN,
            "fitted eta_para - eta_rep >= 0.05 at D = 32U, middle width (95% bound)",
            agg="bound95",
            control="ctrl_replicate_minus_rep_eta",
        ),
        Threshold(
            "cd_extrapolates",
            "cd_over_muennighoff_test_rmse",
            "<=",
            1.0,
            "reported: CD's held-out (D = 32U) log-loss error no larger than Muennighoff's (geometric mean)",
            agg="geomean",
            control="chinchilla_over_muennighoff_test_rmse",
        ),
        Threshold(
            "law_fits",
            "cd_fit_rms_log",
            "<=",
            0.1,
            "reported: CD fit's RMS log-loss residual <= 0.1",
        ),
    ),
    floors=(
        Threshold(
            "students_learn",
            "widest_fresh_mse_fraction",
            "<=",
            0.5,
            "floor: the widest student on fresh D = 32U reaches <= half the constant predictor's MSE (every seed)",
            agg="all",
        ),
        Threshold("no_collapse", "diverged_fraction", "<=", 0.05, "floor: <= 5% of student runs non-finite"),
    ),
    reproduced=" and ".join(_PROPS),
    partial=_pairs(_PROPS),
    method="CD",
    tuned=("CD",),
    key_metric="para_minus_rep_eta",
)
def run(mode: str, seed: int) -> Outcome:
    from geode.llm.cd_scaling import CDScalingLaw, estimate_token_effectiveness
    from geode.llm.cd_scaling.experiment import TeacherTask, make_stream, n_params, train_student

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    U = int(cfg["U"])
    task = TeacherTask(seed=seed)
    g_eval = np.random.default_rng([seed, 0])
    evals = {"val": task.sample(cfg["n_eval"], g_eval), "test": task.sample(cfg["n_eval"], g_eval)}
    base = task.sample(U, np.random.default_rng([seed, 5]))  # the corpus every strategy expands
    var_test = float(np.var(evals["test"][1]))

    def stream(strategy: str, D: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng([seed, _CODES[strategy], D])
        return make_stream(
            task, strategy, D, D if strategy == "fresh" else U, rng, None if strategy == "fresh" else base
        )

    def student(width: int, strategy: str, D: int, lr: float) -> dict[str, float]:
        x, y = stream(strategy, D)
        return train_student(width, x, y, evals, lr=lr, seed=seed * 1000 + width)

    # 1. each width's learning rate, tuned on validation with fresh data at D = 8U (same grid for every width)
    lr_res = tune(
        lambda m, p: (student(int(m.split()[1]), "fresh", 8 * U, p["lr"])["val"], None),
        {f"width {w}": {"lr": list(cfg["lr"])} for w in cfg["widths"]},
        maximize=False,
        extend=cfg["extend"],
    )
    lrs = {w: lr_res.params(f"width {w}")["lr"] for w in cfg["widths"]}

    # 2. the runs
    runs: list[dict[str, Any]] = []
    for w in cfg["widths"]:
        for f in cfg["fresh"]:
            D = max(int(round(f * U)), 1)
            runs.append(dict(width=w, strategy="fresh", D=D, U=D, **student(w, "fresh", D, lrs[w])))
        for s in ("repeat", "paraphrase", "replicate"):
            for f in cfg["derived"]:
                runs.append(dict(width=w, strategy=s, D=f * U, U=U, **student(w, s, f * U, lrs[w])))
    bad = [r for r in runs if not math.isfinite(r["test"])]
    diverged_fraction = len(bad) / len(runs)
    cap = 10 * var_test
    for r in runs:
        r["N"] = float(n_params(r["width"]))
        r["test"] = min(r["test"], cap) if math.isfinite(r["test"]) else cap

    def rows_of(strategies: tuple[str, ...], relabel: dict[str, str] | None = None) -> dict[str, np.ndarray]:
        relabel = relabel or {}
        sel = [r for r in runs if r["strategy"] in ("fresh", *strategies)]
        out = {
            "N": np.array([r["N"] for r in sel]),
            "D": np.array([float(r["D"]) for r in sel]),
            "U": np.array([float(r["U"]) for r in sel]),
            "L": np.array([r["test"] for r in sel]),
            "s": np.array([relabel.get(r["strategy"], r["strategy"]) for r in sel], dtype=object),
        }
        return out

    main = rows_of(("repeat", "paraphrase"))

    # 3. held-out extrapolation: fit D <= 8U, select delta on D = 16U, test on the largest D
    d_fit, d_val, d_test = 8 * U, 16 * U, max(cfg["derived"]) * U
    split_fit = main["D"] <= d_fit
    split_val = main["D"] == d_val
    split_test = main["D"] == d_test
    fit_rows = {k: v[split_fit] for k, v in main.items()}

    def fit_law(name: str, p: dict[str, Any]) -> tuple[float, Any]:
        law = _law(name, ("repeat", "paraphrase"), p["delta"], cfg, seed)
        law.fit(fit_rows["N"], fit_rows["D"], fit_rows["U"], fit_rows["L"], fit_rows["s"])
        return _rms_log(law, main, split_val), law

    law_res = tune(fit_law, {n: {"delta": list(cfg["delta"])} for n in _LAWS}, maximize=False, extend=cfg["extend"])
    test_rmse = {n: _rms_log(law_res.payload(n), main, split_test) for n in _LAWS}
    delta_cd = law_res.params("CD")["delta"]

    # 4. the CD law on every run, and the two controls, with CD's selected delta
    def cd_fit(rows: dict[str, np.ndarray], strategies: tuple[str, ...]) -> Any:
        law = CDScalingLaw(strategies, delta=delta_cd, n_starts=cfg["n_starts"], maxiter=cfg["maxiter"], seed=seed)
        return law.fit(rows["N"], rows["D"], rows["U"], rows["L"], rows["s"])

    fit = cd_fit(main, ("repeat", "paraphrase"))
    fresh_rows = rows_of(())
    der = [r for r in runs if r["strategy"] == "fresh" and r["D"] > U and r["D"] // U in cfg["derived"]]
    ctrl_rows = {
        k: np.concatenate([fresh_rows[k], np.array(v, dtype=fresh_rows[k].dtype)])
        for k, v in {
            "N": [r["N"] for r in der],
            "D": [float(r["D"]) for r in der],
            "U": [float(U)] * len(der),
            "L": [r["test"] for r in der],
            "s": ["repeat"] * len(der),
        }.items()
    }
    ctrl = cd_fit(ctrl_rows, ("repeat",))
    rep_ctrl = cd_fit(rows_of(("repeat", "replicate")), ("repeat", "replicate"))

    Ns = [float(n_params(w)) for w in cfg["widths"]]
    n_lo, n_mid, n_hi = Ns[0], Ns[len(Ns) // 2], Ns[-1]
    r1, rmax = 2.0 * U, float(d_test)

    def props(law: Any, other: str) -> dict[str, float]:
        e = lambda n, d, s="repeat": float(law.eta(n, d, U, s))  # noqa: E731
        return {
            "eta_R1": e(n_mid, r1),
            "eta_Rmax": e(n_mid, rmax),
            "eta_drop": e(n_mid, r1) - e(n_mid, rmax),
            "size_drop": e(n_lo, rmax) - e(n_hi, rmax),
            "marginal": float(law.marginal_effectiveness(n_mid, rmax, U, "repeat")),
            "other_minus_rep": (e(n_mid, rmax, other) - e(n_mid, rmax)) if other else 0.0,
        }

    pm, pc, pr = props(fit, "paraphrase"), props(ctrl, ""), props(rep_ctrl, "replicate")
    # the other reading of "with model size": same tokens-per-parameter ratio and the same R
    rho = rmax / n_mid
    eta_rho = [float(fit.eta(n, rho * n, rho * n / (rmax / U), "repeat")) for n in (n_lo, n_hi)]

    # non-parametric estimator per width, from the fresh curve of that width
    np_eta: dict[tuple[str, int], list[float]] = {}
    for w, n in zip(cfg["widths"], Ns):
        fr = [r for r in runs if r["width"] == w and r["strategy"] == "fresh"]
        for s in ("repeat", "paraphrase", "replicate"):
            dr = sorted((r for r in runs if r["width"] == w and r["strategy"] == s), key=lambda r: r["D"])
            est = estimate_token_effectiveness(
                [r["D"] for r in fr], [r["test"] for r in fr], [r["D"] for r in dr], U, [r["test"] for r in dr]
            )
            np_eta[(s, int(n))] = [float(v) for v in est]

    # regimes and allocation
    grid_reg = fit.regime(np.array(Ns), rmax, U, "repeat")
    C = 6.0 * n_mid * rmax
    n_cd, d_cd = fit.optimal_allocation(C, U=U, strategy="repeat")
    chin = law_res.payload("Chinchilla (all tokens)")
    n_ch, d_ch = chin.optimal_allocation(C)
    loss_cd_at_cd = float(fit.predict(n_cd, d_cd, min(U, d_cd), "repeat"))
    loss_cd_at_ch = float(fit.predict(n_ch, d_ch, min(U, d_ch), "repeat"))

    widest_fresh = [r for r in runs if r["width"] == cfg["widths"][-1] and r["strategy"] == "fresh"]
    widest_fresh_mse = max(widest_fresh, key=lambda r: r["D"])["test"]
    resid = np.log(fit.predict(main["N"], main["D"], main["U"], main["s"])) - np.log(main["L"])
    metrics = {
        "rep_eta_R1": pm["eta_R1"],
        "rep_eta_Rmax": pm["eta_Rmax"],
        "para_eta_Rmax": pm["eta_Rmax"] + pm["other_minus_rep"],
        "rep_eta_drop": pm["eta_drop"],
        "rep_eta_size_drop": pm["size_drop"],
        "rep_eta_size_drop_fixed_rho": eta_rho[0] - eta_rho[1],
        "rep_marginal_at_max": pm["marginal"],
        "para_minus_rep_eta": pm["other_minus_rep"],
        "ctrl_fresh_eta_drop": pc["eta_drop"],
        "ctrl_fresh_eta_size_drop": pc["size_drop"],
        "ctrl_fresh_marginal_at_max": pc["marginal"],
        "ctrl_fresh_eta_Rmax": pc["eta_Rmax"],
        "ctrl_replicate_minus_rep_eta": pr["other_minus_rep"],
        **{f"fit_{k.replace('[', '_').replace(']', '')}": float(v) for k, v in fit.params_.items()},
        "np_eta_rep_Rmax_mean": float(np.mean([np_eta[("repeat", int(n))][-1] for n in Ns])),
        "np_eta_para_Rmax_mean": float(np.mean([np_eta[("paraphrase", int(n))][-1] for n in Ns])),
        "np_eta_replicate_Rmax_mean": float(np.mean([np_eta[("replicate", int(n))][-1] for n in Ns])),
        **{f"test_rmse_{n.split()[0].lower()}{'_unique' if 'unique' in n else ''}": v for n, v in test_rmse.items()},
        "cd_over_muennighoff_test_rmse": test_rmse["CD"] / test_rmse["Muennighoff"],
        "chinchilla_over_muennighoff_test_rmse": test_rmse["Chinchilla (all tokens)"] / test_rmse["Muennighoff"],
        "model_bound_fraction_at_Rmax": float(np.mean(grid_reg == "model-bound")),
        "cd_optimal_N": n_cd,
        "chinchilla_optimal_N": n_ch,
        "cd_loss_gain_over_chinchilla_allocation": loss_cd_at_ch - loss_cd_at_cd,
        "widest_fresh_mse_fraction": widest_fresh_mse / var_test,
        "cd_fit_rms_log": float(np.sqrt(np.mean(resid**2))),
        "diverged_fraction": diverged_fraction,
    }
    table = [
        {
            "width": r["width"],
            "N": int(r["N"]),
            "strategy": r["strategy"],
            "D / U": round(r["D"] / U, 3),
            "lr": lrs[r["width"]],
            "test MSE": r["test"],
            "val MSE": r["val"] if math.isfinite(r["val"]) else cap,
        }
        for r in runs
    ]
    for (s, n), vals in np_eta.items():
        for f, v in zip(cfg["derived"], vals):
            table.append({"width": "", "N": n, "strategy": f"estimator eta ({s})", "D / U": f, "test MSE": v})
    elapsed = time.perf_counter() - t0
    summary = (
        f"fitted eta_rep {pm['eta_R1']:.2f} -> {pm['eta_Rmax']:.2f} (R=1 -> {int(rmax / U) - 1}), size drop "
        f"{pm['size_drop']:.2f}, marginal at 32U {pm['marginal']:.2f}, para - rep {pm['other_minus_rep']:+.2f} "
        f"(controls {pc['eta_drop']:.2f}, {pc['size_drop']:.2f}, {pc['marginal']:.2f}, {pr['other_minus_rep']:+.2f}); "
        f"held-out RMSE CD {test_rmse['CD']:.3f} vs Muennighoff {test_rmse['Muennighoff']:.3f}, Chinchilla "
        f"{test_rmse['Chinchilla (all tokens)']:.3f}"
    )
    notes = [
        *lr_res.notes(),
        *law_res.notes(),
        "Held-out RMS log-loss error at D = 32U (fit D <= 8U, delta selected on 16U): "
        + ", ".join(f"{n} {v:.4f}" for n, v in test_rmse.items())
        + "; strongest baseline: Muennighoff (constant R* per strategy).",
        f"CD fit on every run (delta {delta_cd:g}): " + ", ".join(f"{k}={v:.3g}" for k, v in fit.params_.items()),
        f"Other reading of 'falls with model size' (same tokens per parameter and R): eta_rep {eta_rho[0]:.3f} "
        f"(N={int(n_lo)}) vs {eta_rho[1]:.3f} (N={int(n_hi)}).",
        f"Non-parametric estimator at D=32U (mean over widths): repeat {metrics['np_eta_rep_Rmax_mean']:.3f}, "
        f"paraphrase {metrics['np_eta_para_Rmax_mean']:.3f}, replicate {metrics['np_eta_replicate_Rmax_mean']:.3f}.",
        f"Regimes at D=32U, U={U} (repeat): " + ", ".join(f"N={int(n)} {r}" for n, r in zip(Ns, grid_reg)),
        f"Allocation at C = 6 x {int(n_mid)} x {int(rmax)}: CD optimum N={n_cd:.0f} (U={U}) vs Chinchilla "
        f"N={n_ch:.0f}; the CD law predicts a loss gain of {metrics['cd_loss_gain_over_chinchilla_allocation']:.4f}.",
        f"Students: lr per width {lrs}; {len(runs)} runs, {len(bad)} non-finite; constant-predictor MSE "
        f"{var_test:.3f}; wall time of this seed {elapsed:.0f} s.",
    ]
    return Outcome(
        metrics=metrics,
        table=table,
        figures={"cd_scaling_eta": _figure(fit, ctrl, Ns, U, np_eta, cfg["derived"])},
        summary=summary,
        notes=notes,
        tuned=lr_res.table() + law_res.table(),
    )
