"""Cost per step of GA-SRMC against SRMC and MALA, one chain, one process, at d = 100 and d = 785.

The paper says the online Fisher estimate costs "no additional" score evaluation; the issue fixes the
budget: a GA-SRMC step may cost at most 1.5x an SRMC step. Each timed block runs d steps, so it
contains one refresh of the Fisher estimate (every d steps), i.e. the amortised cost.

Targets: Bayesian logistic regression with n = 1000 synthetic rows (MNIST-shaped at d = 785), and a
dense Gaussian (one d x d mat-vec per score: the worst case for GA-SRMC's extra O(d^2) work).

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_ga_srmc.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from geode.core import set_single_thread, speed_ratio  # noqa: E402
from geode.probabilistic import MALA, SRMC, GaussianTarget, synthetic_logistic  # noqa: E402
from geode.probabilistic.ga_srmc import GASRMC  # noqa: E402


def _stepper(kernel, x0: np.ndarray, n: int, seed: int):
    rng = np.random.default_rng(seed)
    box = [kernel.init(x0), 0.0, 0]

    def run() -> np.ndarray:
        s = box[0]
        for _ in range(n):
            s, info = kernel.step(rng, s)
            box[1] += float(info.acceptance_rate)
            box[2] += 1
        box[0] = s
        return s.position

    return run, box


def _targets(d: int):
    """Targets, initial points and MALA step sizes tau = 0.5 d^(-1/3) / lambda_max (acceptance well above 0)."""
    rng = np.random.default_rng(0)
    logi = synthetic_logistic(n=1000, dim=d, seed=0)
    b = logi.map_estimate()
    lam_l = float(np.linalg.eigvalsh(-logi.hessian(b))[-1])
    a = rng.normal(size=(d, d)) / np.sqrt(d)
    gauss = GaussianTarget(np.zeros(d), a @ a.T + 0.1 * np.eye(d))
    lam_g = float(np.linalg.eigvalsh(gauss.precision)[-1])
    step = 0.5 * d ** (-1 / 3)
    return {
        "logistic n=1000": (logi, b, step / lam_l),
        "dense Gaussian": (gauss, gauss.sample(1, 1)[0], step / lam_g),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    set_single_thread()
    repeats = 2 if args.quick else 5
    print("cost per step, one chain; ratio = candidate time / baseline time (GA-SRMC budget: <= 1.5x SRMC)")
    for d in (100, 785):
        for name, (t, x0, tau) in _targets(d).items():
            n = d  # one Fisher refresh per timed block
            ga, ga_box = _stepper(GASRMC(t.log_prob, t.grad_log_prob, tau, 1.0, metric="fisher"), x0, n, 1)
            sr, sr_box = _stepper(SRMC(t.log_prob, t.grad_log_prob, tau, 1.0), x0, n, 1)
            ma, _ = _stepper(MALA(t.log_prob, t.grad_log_prob, tau), x0, n, 1)
            vs_sr = speed_ratio(ga, sr, repeats=repeats, warmup=1)
            vs_ma = speed_ratio(sr, ma, repeats=repeats, warmup=1)
            ga_ms = 1e3 * vs_sr["candidate_s"] / n
            sr_ms = 1e3 * vs_sr["baseline_s"] / n
            ma_ms = 1e3 * vs_ma["baseline_s"] / n
            cost = 1 / vs_sr["speedup"]
            verdict = "ok" if cost <= 1.5 else "OVER BUDGET"
            acc = f"acceptance SRMC {sr_box[1] / sr_box[2]:.2f} GA {ga_box[1] / ga_box[2]:.2f}"
            theta = np.linalg.norm(ga_box[0].theta)
            print(
                f"d={d:4d} {name:16s} GA-SRMC {ga_ms:7.3f} ms  SRMC {sr_ms:7.3f} ms  MALA {ma_ms:7.3f} ms  "
                f"GA/SRMC = {cost:.2f}x ({verdict})  SRMC/MALA = {1 / vs_ma['speedup']:.2f}x  "
                f"[{acc}, |theta| {theta:.2g}]"
            )


if __name__ == "__main__":
    main()
