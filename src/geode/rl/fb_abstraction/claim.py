"""Claim check of fb-abstraction: action repetition lowers the SR's effective rank and rank-d error.

Thresholds (fixed by issue 36, before any run): ``reproduced`` if the SR's effective rank and rank-d error
decrease monotonically with k at both discount factors, AND at gamma = 0.99 FB with k = 4 reaches higher
zero-shot success than k = 1 (3 seeds); ``partial`` if the exact spectral result holds.

FB part (written after the spectral verdict below was measured, before any FB run): a 2-D point mass in
the unit box, five discrete actions of length 0.05 (noise 0.01), 20k offline macro transitions from uniform
states and actions, FB with d = 16, two hidden layers of 128, 1,500 updates of batch 256, Polyak 0.01,
orthonormality weight 1, macro discount 0.99^k, k in {1, 4}; the learning rate of each k is tuned equally
over {1e-4, 5e-4} on the success over 100 validation start/goal pairs; success is measured on 200 test
pairs: reaching within 0.075 of the goal within 60 primitive steps (60/k macro steps). ``fb_gain`` needs
k = 4 > k = 1 in 2 of 3 seeds (the issue says "3 seeds"; we read it as a majority). Floor ``fb_learns``:
the better FB agent reaches >= 20% of test goals. Controls for ``fb_gain``: a k = 1 agent retrained with
another seed at its tuned learning rate (noise floor of the difference), and the random policy with k = 4
minus k = 1 (repetition alone covers more distance). gamma = 0.9 is not run for FB (the issue's threshold
needs only 0.99; CPU budget).

Set-up (quick): a 20x20 grid, 10% of cells blocked at random (layout from the seed), uniformly random
policy that repeats its action k times, k in {1, 2, 4, 8}, gamma in {0.9, 0.99} per primitive step (macro
discount gamma^k, as the paper notes infer), d = 16 (the notes' smaller FB width), 32 random Gaussian
reward vectors for the value error. ``SR = (I - gamma^k P_k)^{-1}`` with the macro kernel
``P_k = mean_a P_a^k``. Nothing is tuned: the computation is exact (no ``tune`` call; no hyperparameter).

Added before the first claim run (the protocol needs them; the issue names none):

- *aggregation*: monotonicity must hold in every seed (``all``): it is an exact statement per layout;
- *validity floors*: the SR solves its defining equation (residual <= 1e-8), the rank-d value error bound
  ``||(SR - SR_d) r|| <= sigma_{d+1} ||r||`` holds for every reward (slack >= 0; checks the SVD path), and the
  k = 1 SR at gamma = 0.99 is not already rank-d (rank-d error >= 0.01, so there is something to filter);
- *negative control*: a deterministic cycle of 401 states (a permutation, every |lambda| = 1, nothing to
  low-pass filter) must fail the monotonicity threshold.

Disclosure: before writing this file the spectra of one layout (seed 0) were computed while building the
components, for both the SR and FB's successor measure ``P_k (I - gamma^k P_k)^{-1}`` (which excludes the
current state, the object ``M = F B^T`` fits). Both *increased* with k at gamma^k per macro step. The set-up
above was not changed after that: the verdict uses the SR the issue names; the successor measure is
reported beside it (``measure_*`` metrics) as the second reading.

**Quick-mode verdict (3 seeds, 360 free states, d = 16): not reproduced** (valid: every floor met; SR
residual 0, value bound slack >= 9.0, k = 1 rank-d error 0.25-0.28, best FB success 0.38-0.44).

*Spectral part (fails in every seed, 12 of 12 steps).* The SR's effective rank and rank-d error *rise* with
k: effective rank at gamma 0.99 for k = 1, 2, 4, 8 is 110/162/191/240 (seed 0; seeds 1-2: from 120-123 to
248-254), at gamma 0.9 260/303/333/352; rank-d error at gamma 0.99 0.25/0.35/0.38/0.51; the rank-d value
error follows (0.28/0.38/0.43/0.56). The reason is the macro discount gamma^k: it shortens the horizon, so
the SR moves towards the identity, whose spectrum is flat; the filtering of |lambda| < 1 components does
not outweigh it. FB's successor measure (second reading) also rises (10-11 of 12 steps violate; at gamma
0.9 it dips only from k = 4 to 8). The cycle control fails too (12/12), so here it cannot show that the
threshold discriminates. Not tested: a comparison at a matched horizon (gamma per macro step fixed), which
is probably the paper's reading of "low-pass filter"; it was not in the issue's set-up and was not run.

*FB part (fails: 1 of 3 seeds).* Test success k = 1 vs k = 4 at gamma 0.99: 0.415/0.425, 0.375/0.355,
0.435/0.400 (differences +0.010, -0.020, -0.035); random policy 0.12-0.17 (k = 1) and 0.12-0.18 (k = 4).
Controls: the replicate k = 1 agent scored 0.095-0.10 *below* the tuned one in every seed (it is not
selected on validation and sees another data set), so the noise floor of the difference is ~0.1, larger
than any k = 4 - k = 1 gap; random k = 4 - k = 1: +0.03, -0.025, +0.015. Tuning selected lr = 5e-4 (the
grid's upper edge) for both k in every seed; the grid was not widened after seeing this. CPU time ~36-43 s
per seed (wall 80-110 s under contention).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register

KS: tuple[int, ...] = (1, 2, 4, 8)
GAMMAS: tuple[float, ...] = (0.9, 0.99)

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        size=6,
        obstacles=0.1,
        d=4,
        n_rewards=4,
        cycle=13,
        fb=dict(n_data=2000, updates=20, batch=64, hidden=32, z_dim=4),
        lrs=[3e-4],
        n_val=20,
        n_test=20,
    ),
    "quick": dict(
        size=20,
        obstacles=0.1,
        d=16,
        n_rewards=32,
        cycle=401,
        fb=dict(n_data=20000, updates=1500, batch=256, hidden=128, z_dim=16),
        lrs=[1e-4, 5e-4],
        n_val=100,
        n_test=200,
    ),
    # full: a 40x40 grid and longer FB training (written for a GPU machine; not run)
    "full": dict(
        size=40,
        obstacles=0.1,
        d=32,
        n_rewards=64,
        cycle=1601,
        fb=dict(n_data=100000, updates=20000, batch=512, hidden=256, z_dim=32),
        lrs=[1e-4, 3e-4, 1e-3],
        n_val=200,
        n_test=500,
    ),
}
FB_GAMMA = 0.99  # the FB comparison: gamma = 0.99, k = 4 against k = 1


def _violations(rows: list[dict[str, float]]) -> int:
    """Count non-decreasing steps in k of effective rank and rank-d error (rows ordered by k)."""
    bad = 0
    for a, b in zip(rows, rows[1:], strict=False):
        bad += int(b["effective_rank"] >= a["effective_rank"]) + int(b["rank_d_error"] >= a["rank_d_error"])
    return bad


def _spectra(p: np.ndarray, d: int, rewards: np.ndarray | None, include_current: bool) -> dict[float, list[Any]]:
    from geode.rl.fb_abstraction.spectra import sr_spectrum, successor_representation

    out: dict[float, list[Any]] = {}
    for g in GAMMAS:
        rows = []
        for k in KS:
            sr = successor_representation(p, g, k, include_current=include_current)
            row = sr_spectrum(sr, d, rewards)
            if include_current:
                macro = np.mean([np.linalg.matrix_power(pa, k) for pa in (p if p.ndim == 3 else p[None])], axis=0)
                row["residual"] = float(np.abs((np.eye(len(sr)) - g**k * macro) @ sr - np.eye(len(sr))).max())
            rows.append(row)
        out[g] = rows
    return out


@register(
    "fb-abstraction",
    claim=(
        "Temporal abstraction (action repetition k) is a spectral low-pass filter: it lowers the effective rank "
        "and the rank-d approximation error of the successor representation, and stabilises FB learning at "
        "high discount (higher zero-shot success with k = 4 than k = 1 at gamma = 0.99)."
    ),
    paper_figure="SR effective rank falls with k; FB with repetition is stable at high gamma (dm_control)",
    baselines=("k = 1 (no repetition)", "deterministic cycle (negative control)"),
    thresholds=(
        Threshold(
            "spectral_monotone",
            "sr_monotone_violations",
            "<=",
            0.0,
            "SR effective rank and rank-d error strictly fall with k in {1,2,4,8} at gamma 0.9 and 0.99 (every seed)",
            agg="all",
            control="cycle_monotone_violations",
            arms=("law",),
            requires=("sr_exact", "bound_holds", "not_trivial"),
        ),
        Threshold(
            "fb_gain",
            "fb_k4_minus_k1_success",
            ">",
            0.0,
            "FB at gamma = 0.99: k = 4 beats k = 1 in zero-shot goal success on test goals (2 of 3 seeds)",
            agg="2 of 3",
            control=("fb_replicate_minus_k1_success", "random_k4_minus_k1_success"),
            arms=("fb_k4", "fb_k1"),
            requires=("fb_learns",),
        ),
    ),
    floors=(
        Threshold(
            "fb_learns", "fb_best_success", ">=", 0.2, "floor: the better FB agent reaches >= 20% of goals", agg="all"
        ),
        Threshold("sr_exact", "sr_residual", "<=", 1e-8, "floor: the SR solves (I - g^k P_k) SR = I", agg="all"),
        Threshold("bound_holds", "bound_slack", ">=", 0.0, "floor: rank-d value error bound holds", agg="all"),
        Threshold(
            "not_trivial", "k1_rank_d_error", ">=", 0.01, "floor: k = 1 SR at gamma 0.99 is not rank-d", agg="all"
        ),
    ),
    reproduced="spectral_monotone and fb_gain",
    partial="spectral_monotone",
    method=("fb_k4", "law"),
    tuned=("fb_k1", "fb_k4"),
    untuned={"law": "the paper's spectral bound, checked on exact successor representations: nothing to tune"},
    key_metric="sr_monotone_violations",
)
def run(mode: str, seed: int) -> Outcome:
    from geode.rl.fb_abstraction.spectra import grid_walk

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    p, cells = grid_walk(cfg["size"], cfg["size"], cfg["obstacles"], seed=seed)
    rewards = np.random.default_rng(10_000 + seed).normal(size=(len(cells), cfg["n_rewards"]))
    d = cfg["d"]
    sr = _spectra(p, d, rewards, include_current=True)
    measure = _spectra(p, d, None, include_current=False)
    n = cfg["cycle"]
    cyc = _spectra(np.roll(np.eye(n), 1, axis=1), d, None, include_current=True)
    table, metrics = [], {}
    for name, res in (("SR", sr), ("successor measure", measure), ("cycle SR (control)", cyc)):
        for g in GAMMAS:
            for k, row in zip(KS, res[g], strict=True):
                table.append(
                    dict(
                        object=name,
                        gamma=g,
                        k=k,
                        effective_rank=row["effective_rank"],
                        rank_d_error=row["rank_d_error"],
                        value_error=row.get("value_error", float("nan")) if name == "SR" else 0.0,
                    )
                )
                tag = f"g{int(round(g * 100))}_k{k}"
                if name == "SR":
                    metrics[f"erank_{tag}"] = row["effective_rank"]
                    metrics[f"rank_d_error_{tag}"] = row["rank_d_error"]
                    metrics[f"value_error_{tag}"] = row["value_error"]
                elif name == "successor measure":
                    metrics[f"measure_erank_{tag}"] = row["effective_rank"]
    metrics["sr_monotone_violations"] = float(sum(_violations(sr[g]) for g in GAMMAS))
    metrics["measure_monotone_violations"] = float(sum(_violations(measure[g]) for g in GAMMAS))
    metrics["cycle_monotone_violations"] = float(sum(_violations(cyc[g]) for g in GAMMAS))
    metrics["sr_residual"] = max(r["residual"] for g in GAMMAS for r in sr[g])
    metrics["bound_slack"] = min(r["bound_slack"] for g in GAMMAS for r in sr[g])
    metrics["k1_rank_d_error"] = sr[0.99][0]["rank_d_error"]
    fb_metrics, fb_table, tuned, tune_notes = _fb_study(cfg, seed)
    metrics.update(fb_metrics)
    table += fb_table
    metrics["n_states"] = float(len(cells))
    elapsed = time.perf_counter() - t0
    e = [round(r["effective_rank"], 1) for r in sr[0.99]]
    summary = (
        f"{len(cells)} states, d={d}: SR effective rank at gamma 0.99 for k={KS}: {e}; "
        f"monotone violations SR {metrics['sr_monotone_violations']:.0f}/12, successor measure "
        f"{metrics['measure_monotone_violations']:.0f}/12, cycle control {metrics['cycle_monotone_violations']:.0f}/12"
    )
    summary += (
        f"; FB zero-shot success at gamma 0.99: k=1 {metrics['fb_k1_success']:.2f}, k=4 "
        f"{metrics['fb_k4_success']:.2f} (random policy {metrics['random_k1_success']:.2f}/"
        f"{metrics['random_k4_success']:.2f})"
    )
    notes = [
        "The spectral computation is exact and has no hyperparameter; the FB agents' learning rates are tuned "
        "equally (geode.claims.tune) on validation goal success.",
        *tune_notes,
        f"Wall time of this seed: {elapsed:.1f} s.",
    ]
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=tuned)


def _fb_study(cfg: dict[str, Any], seed: int) -> tuple[dict[str, float], list[dict[str, Any]], list[Any], list[str]]:
    """Tune FB for k = 1 and k = 4 equally (learning rate, validation success), test, and run the controls."""
    from geode.claims import tune
    from geode.rl.fb_abstraction.fb import PointMass, goal_success, train_fb

    envs = {"fb_k1": PointMass(k=1), "fb_k4": PointMass(k=4)}
    val_seed, test_seed = 50_000 + seed, 60_000 + seed

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        agent = train_fb(envs[method], FB_GAMMA, seed=seed, lr=params["lr"], **cfg["fb"])
        return goal_success(agent, envs[method], cfg["n_val"], val_seed), agent

    res = tune(fit, {m: {"lr": list(cfg["lrs"])} for m in envs}, maximize=True)
    m: dict[str, float] = {}
    for name, env in envs.items():
        m[f"{name}_success"] = goal_success(res.payload(name), env, cfg["n_test"], test_seed)
    rep = train_fb(envs["fb_k1"], FB_GAMMA, seed=seed + 777, lr=res.params("fb_k1")["lr"], **cfg["fb"])
    m["fb_replicate_k1_success"] = goal_success(rep, envs["fb_k1"], cfg["n_test"], test_seed)
    for k in (1, 4):
        m[f"random_k{k}_success"] = goal_success(None, PointMass(k=k), cfg["n_test"], test_seed)
    m["fb_k4_minus_k1_success"] = m["fb_k4_success"] - m["fb_k1_success"]
    m["fb_replicate_minus_k1_success"] = m["fb_replicate_k1_success"] - m["fb_k1_success"]
    m["random_k4_minus_k1_success"] = m["random_k4_success"] - m["random_k1_success"]
    m["fb_best_success"] = max(m["fb_k1_success"], m["fb_k4_success"])
    table = [
        dict(object="zero-shot goal success (test)", gamma=FB_GAMMA, k=k, method=name, success=m[key])
        for name, k, key in (
            ("FB", 1, "fb_k1_success"),
            ("FB", 4, "fb_k4_success"),
            ("FB replicate (control)", 1, "fb_replicate_k1_success"),
            ("random policy (control)", 1, "random_k1_success"),
            ("random policy (control)", 4, "random_k4_success"),
        )
    ]
    return m, table, res.table(), res.notes()
