"""Benchmark: the solver-free sampling-error estimate against exact OT with POT's solver on the same data.

For n atoms (uniform on a 5-dimensional cube rotated into R^20) and m = n fresh draws, times
:func:`geode.probabilistic.ot_sampling_error.sampling_error` (one KD-tree: the semi-dual H(0)) against
``ot.emd2`` on the m x n cost matrix (the solver-based OT between the fresh draws and the atoms, the
reference the paper says is not needed), side by side with :func:`geode.core.speed_ratio`, and reports the
agreement H(0) / OT (at most 1: H(0) is a lower bound of OT with the same fresh points).

Run with one thread: ``OMP_NUM_THREADS=1 python benchmarks/bench_ot_sampling_error.py [--n 500 2000 8000]``.
The n = 8000 solve holds a 512 MB cost matrix and takes minutes on a shared core; it runs once.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from geode.core import speed_ratio  # noqa: E402
from geode.probabilistic.ot_sampling_error import sampling_error  # noqa: E402

D_INT, AMBIENT = 5, 20


def main() -> None:
    import ot

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[500, 2000, 8000], help="sample sizes")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the side-by-side ratio (1 above n = 2000)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((AMBIENT, AMBIENT)))
    frame = Q[:D_INT]
    print(f"uniform [0,1]^{D_INT} in R^{AMBIENT}, p = 2, m = n fresh draws, one thread")
    print(f"{'n':>6} {'H(0) s':>9} {'POT emd s':>10} {'speedup':>9} {'H(0)':>10} {'OT':>10} {'H(0)/OT':>8}")
    for n in args.n:
        atoms, fresh = rng.random((n, D_INT)) @ frame, rng.random((n, D_INT)) @ frame
        w = np.full(n, 1.0 / n)

        values: dict[str, float] = {}

        def solver(
            atoms: np.ndarray = atoms, fresh: np.ndarray = fresh, w: np.ndarray = w, values: dict = values
        ) -> float:
            values["ot"] = float(ot.emd2(w, w, ot.dist(fresh, atoms), numItermax=10**8))
            return values["ot"]

        def estimate(atoms: np.ndarray = atoms, fresh: np.ndarray = fresh, values: dict = values) -> float:
            values["h0"] = float(sampling_error(atoms, p=2, X_fresh=fresh))
            return values["h0"]

        r = speed_ratio(estimate, solver, repeats=args.repeats if n <= 2000 else 1, warmup=0)
        h0, exact = values["h0"], values["ot"]
        print(
            f"{n:>6} {r['candidate_s']:>9.4f} {r['baseline_s']:>10.2f} {r['speedup']:>8.0f}x {h0:>10.5f} "
            f"{exact:>10.5f} {h0 / exact:>8.3f}"
        )


if __name__ == "__main__":
    main()
