"""OT estimates beside POT, with weights; and a GA-SRMC sampler kernel on a target you define.

What it shows, on data the script makes itself:

1. The POT-style functions of ``ot-sampling-error`` (``geode.probabilistic``) on your own point clouds, next to
   POT itself. The data: an importance-weighted sample of a target rho = N(0, I_3) (draws of a wider proposal
   N(0, 1.5^2 I), self-normalised weights ``a``) and a direct sample of rho (uniform weights ``b``).

   - ``wasserstein_pp(X, Y, a, b)`` is ``ot.emd2(a, b, M)`` (and, with ``reg``, ``ot.sinkhorn2``); the weights
     matter: without them the same points estimate W_2^2(proposal, rho) = 0.75 instead of 0;
   - ``sampling_error``: the solver-free estimate of OT(rho, rho_n) (nearest neighbours only), with weighted
     query points; a lower bound of POT's exact OT, equal to it when the atoms' weights are their Voronoi cells'
     masses;
   - ``intrinsic_dimension`` of a rolled 2-D sheet in R^10, beside TwoNN and the Levina-Bickel MLE;
   - ``richardson_wasserstein``: the plug-in W_2^2 between two translated cubes (truth: |t|^2) and its
     debiased value, over repetitions.

2. A sampler in blackjax's kernel idiom (``init(position)``, ``step(rng, state)``, many chains at once):
   ``GASRMC`` (the method: the repulsion in the online inverse-Fisher geometry) beside ``SRMC`` and ``MALA`` on
   a rotated Gaussian with condition number 100 that you give by its log density and score. Each repulsive
   kernel runs at a few repellence strengths alpha (GA-SRMC's gain needs a large alpha); the error is the
   squared distance of each chain's mean from the true mean, averaged over chains.

Run::

    python examples/probabilistic.py           # about a minute on one core
    python examples/probabilistic.py --smoke   # the smallest size, a few seconds

Needs: POT (``pip install 'geode[ot]'``); no asset, no network.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

SKIP = 77


def ot_part(rng: np.random.Generator, smoke: bool) -> None:
    import ot

    from geode.probabilistic import (
        intrinsic_dimension,
        mle_dimension,
        richardson_wasserstein,
        sampling_error,
        twonn_dimension,
        wasserstein_pp,
    )

    n, m = (120, 100) if smoke else (600, 500)
    X = 1.5 * rng.standard_normal((n, 3))  # draws of the proposal N(0, 1.5^2 I)
    log_w = -0.5 * (X**2).sum(1) * (1 - 1 / 1.5**2)  # log rho/q up to a constant
    a = np.exp(log_w - log_w.max())
    a /= a.sum()  # self-normalised importance weights: (X, a) is a sample of rho
    Y = rng.standard_normal((m, 3))  # a direct sample of rho
    b = np.full(m, 1 / m)
    M = ot.dist(X, Y)  # squared Euclidean: W_2^2
    print(f"1. OT on your point clouds (n = {n} weighted draws, m = {m} direct draws of N(0, I_3)), beside POT")
    ours, pot = wasserstein_pp(X, Y, a, b), ot.emd2(a, b, M, numItermax=10**7)
    print(f"   W_2^2 with weights: geode {ours:.6f}   POT emd2 {pot:.6f}   |difference| {abs(ours - pot):.1e}")
    k = min(n, m, 150)  # the entropic solver is the slow part: a sub-sample, its weights renormalised
    a_k, b_k = a[:k] / a[:k].sum(), np.full(k, 1 / k)
    ent = wasserstein_pp(X[:k], Y[:k], a_k, b_k, reg=0.1)
    pot_ent = ot.sinkhorn2(a_k, b_k, M[:k, :k], 0.1, method="sinkhorn_log", numItermax=5000, stopThr=1e-8)
    print(f"   entropic (reg 0.1, {k} x {k} points): geode {ent:.6f}   POT sinkhorn2 {float(pot_ent):.6f}")
    print(
        f"   the weights matter: unweighted, the same points give {wasserstein_pp(X, Y):.3f} "
        "(they estimate W_2^2(proposal, rho) = 0.75; weighted, the truth is 0 and what remains is sampling bias)"
    )
    atoms = Y[: m // 5]
    Ma = ot.dist(X, atoms)
    h0, info = sampling_error(atoms, X_fresh=X, a=a, log=True)
    exact = ot.emd2(a, np.full(len(atoms), 1 / len(atoms)), Ma, numItermax=10**7)
    tight = ot.emd2(a, info["cell_mass"], Ma, numItermax=10**7)
    print(
        f"   sampling error of {len(atoms)} atoms against the weighted queries: solver-free {h0:.4f} <= POT's exact "
        f"OT {exact:.4f} (uniform atom weights; total-variation gap to the Voronoi masses {info['mass_gap']:.2f}); "
        f"with the Voronoi masses as atom weights POT gives {tight:.4f}, equal"
    )
    n_id = 500 if smoke else 3000
    t, h = rng.uniform(1.5 * np.pi, 4.5 * np.pi, n_id), rng.uniform(0, 10, n_id)
    sheet = np.c_[t * np.cos(t), h, t * np.sin(t)] @ np.linalg.qr(rng.standard_normal((10, 10)))[0][:3]
    print(
        f"   intrinsic dimension of a rolled sheet in R^10 ({n_id} points; truth 2): OT decay "
        f"{intrinsic_dimension(sheet, seed=0):.2f}, TwoNN {twonn_dimension(sheet):.2f}, MLE {mle_dimension(sheet):.2f}"
    )
    reps, n_r = (2, 100) if smoke else (10, 400)
    shift = np.array([0.3, 0.0, 0.0, 0.0])
    plug, rich = [], []
    for r in range(reps):
        A, B = rng.random((n_r, 4)), rng.random((n_r, 4)) + shift
        est, info = richardson_wasserstein(A, B, d_int=4.0, seed=r, log=True)
        plug.append(info["plugin"])
        rich.append(est)
    truth = float(shift @ shift)
    print(
        f"   W_2^2 between translated cubes in R^4 (truth {truth:.3f}; {reps} repetitions of n = {n_r}): "
        f"bias of the plug-in {np.mean(plug) - truth:+.4f}, after Richardson {np.mean(rich) - truth:+.4f}"
    )


def sampler_part(rng: np.random.Generator, smoke: bool) -> None:
    from geode.probabilistic import GASRMC, MALA, SRMC, sample

    d, kappa = 10, 100.0
    q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    variances = kappa ** (np.arange(d) / (d - 1))  # 1 .. 100
    prec = q @ np.diag(1 / variances) @ q.T
    mean = np.ones(d)

    def log_prob(x: np.ndarray) -> np.ndarray:  # vectorised over chains: (c, d) -> (c,)
        z = x - mean
        return -0.5 * np.einsum("...i,ij,...j->...", z, prec, z)

    def grad_log_prob(x: np.ndarray) -> np.ndarray:
        return -(x - mean) @ prec

    chains, steps = (8, 300) if smoke else (40, 3000)
    x0 = mean + rng.standard_normal((chains, d)) * np.sqrt(variances) @ q.T  # start from the target
    pilot = {}
    for tau in (0.2, 0.4, 0.7, 1.0, 1.4):  # MALA's step size tuned by a pilot to acceptance ~0.7, shared by all
        pilot[tau] = sample(MALA(log_prob, grad_log_prob, tau), x0, 100, seed=0).acceptance_rate
    step_size = min(pilot, key=lambda tau: abs(pilot[tau] - 0.7))
    print(
        f"\n2. samplers on a rotated Gaussian in R^{d}, condition number {kappa:.0f} ({chains} chains, {steps} steps)"
    )

    def err(kernel, seed: int) -> tuple[float, float]:
        res = sample(kernel, x0, steps, seed=seed, burn_in=steps // 5)
        return float(np.mean(np.sum((res.mean - mean) ** 2, axis=1))), res.acceptance_rate

    # the kernel driven by hand, once, in blackjax's idiom
    kernel = GASRMC(log_prob, grad_log_prob, step_size, alpha=1.0)
    state, step_rng = kernel.init(x0), np.random.default_rng(0)
    for _ in range(10):
        state, info = kernel.step(step_rng, state)
    print(f"   GASRMC.init/step: positions {state.position.shape}, acceptance per chain {info.acceptance_rate.shape}")
    print(f"   step size {step_size} (pilot: MALA acceptance closest to 0.7), shared by every kernel")
    base, acc = err(MALA(log_prob, grad_log_prob, step_size), 1)
    print(f"   {'MALA':8s}              error of the chain means {base:.4f}  (acceptance {acc:.2f})")
    for alpha in (1.0, 5.0, 20.0, 50.0):
        e_sr, _ = err(SRMC(log_prob, grad_log_prob, step_size, alpha), 1)
        e_ga, acc = err(GASRMC(log_prob, grad_log_prob, step_size, alpha), 1)
        show = {k: f"{v:.4f}" if v < 1e6 else "diverged" for k, v in (("SRMC", e_sr), ("GA", e_ga))}
        ratio = f"SRMC / GA-SRMC {e_sr / e_ga:.2f}x; " if max(e_sr, e_ga) < 1e6 else ""
        print(f"   alpha {alpha:4.0f}: SRMC {show['SRMC']}   GA-SRMC {show['GA']}   ({ratio}GA acceptance {acc:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (seconds; what the tests run)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every draw (default 0)")
    args = parser.parse_args()
    try:
        import ot  # noqa: F401
    except ImportError:
        print("skipped: needs POT (pip install 'geode[ot]')")
        sys.exit(SKIP)
    from threadpoolctl import threadpool_limits  # one BLAS thread (scikit-learn's dependency; no torch here)

    t0 = time.process_time()
    rng = np.random.default_rng(args.seed)
    with threadpool_limits(1):
        ot_part(rng, args.smoke)
        sampler_part(rng, args.smoke)
    print(f"\n{time.process_time() - t0:.1f} CPU s")


if __name__ == "__main__":
    main()
