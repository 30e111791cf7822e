"""Benchmark of GA-SRMC: the cost of a step against SRMC's (the strongest baseline at equal steps) and MALA's.

The paper says the online Fisher estimate serves both roles "at no additional cost" (no extra score
evaluation); issue 02 fixed the budget at 1.5x an SRMC step. One chain, one thread; each timed call runs
d steps, so it holds one refresh of the Fisher estimate (every d steps): the amortised cost. Targets:
Bayesian logistic regression with synthetic rows (n = 1000; MNIST-shaped d = 785 in ``full``) and a dense
Gaussian (one d x d mat-vec per score, the worst case for GA's extra O(d^2) work).
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase, Target

__all__ = ["cases"]

_DIMS = {"smoke": (10,), "quick": (100,), "full": (100, 785)}


def _stepper(kernel: Any, x0: Any, n: int, seed: int) -> Any:
    import numpy as np

    rng = np.random.default_rng(seed)
    box = [kernel.init(x0)]

    def run() -> Any:
        s = box[0]
        for _ in range(n):
            s, _ = kernel.step(rng, s)
        box[0] = s
        return s.position

    return run


def cases(size: str) -> list[BenchCase]:
    """Per dimension: d steps of GA-SRMC (online Fisher metric) against SRMC, logistic and Gaussian; then MALA."""
    import numpy as np

    from geode.probabilistic import MALA, SRMC, GaussianTarget, synthetic_logistic
    from geode.probabilistic.ga_srmc import GASRMC

    out = []
    for d in _DIMS[size]:
        rng = np.random.default_rng(0)
        logi = synthetic_logistic(n=1000 if size != "smoke" else 100, dim=d, seed=0)
        b = logi.map_estimate()
        a = rng.normal(size=(d, d)) / np.sqrt(d)
        gauss = GaussianTarget(np.zeros(d), a @ a.T + 0.1 * np.eye(d))
        step = 0.5 * d ** (-1 / 3)
        targets = {
            "logistic n=1000": (logi, b, step / float(np.linalg.eigvalsh(-logi.hessian(b))[-1])),
            "dense Gaussian": (gauss, gauss.sample(1, 1)[0], step / float(np.linalg.eigvalsh(gauss.precision)[-1])),
        }
        for name, (t, x0, tau) in targets.items():
            kw = dict(fisher_warmup=0)  # time the metric in use, not the warm-up
            out.append(
                BenchCase(
                    f"{d} steps, d={d}, {name}",
                    candidate=_stepper(GASRMC(t.log_prob, t.grad_log_prob, tau, 1.0, metric="fisher", **kw), x0, d, 1),
                    baselines={"SRMC": _stepper(SRMC(t.log_prob, t.grad_log_prob, tau, 1.0), x0, d, 1)},
                    target=Target(
                        "ratio",
                        ">=",
                        1 / 1.5,
                        "issues 02 and 44: a GA-SRMC step <= 1.5x an SRMC step",
                        baseline="SRMC",
                    ),
                    differs={
                        "*": "SRMC is another Markov kernel (no Fisher metric): the chains move differently by design"
                    },
                )
            )
    t, x0, tau = targets["logistic n=1000"]
    out.append(
        BenchCase(
            f"{d} steps, d={d}, logistic, against the base kernel",
            candidate=_stepper(GASRMC(t.log_prob, t.grad_log_prob, tau, 1.0, fisher_warmup=0), x0, d, 1),
            baselines={"MALA": _stepper(MALA(t.log_prob, t.grad_log_prob, tau), x0, d, 1)},
            differs={"*": "MALA is another Markov kernel: the chains move differently by design"},
        )
    )
    return out
