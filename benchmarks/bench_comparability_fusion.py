"""Benchmark: comparability recovery (fit + fuse) against the fusion baselines, side by side.

Times, on ``--n`` samples of the synthetic radial-distortion setup (4 oracles, 10 classes), the closed form and
the alternating variant of :class:`geode.ensembles.ComparabilityRecovery` (fit on unlabelled outputs, then fuse)
against mean fusion + one global temperature and against label-supervised per-oracle temperature scaling (the
strongest baseline), with :func:`geode.core.speed_ratio` (``speedup`` > 1 means comparability recovery is faster).

Run with one thread: ``OMP_NUM_THREADS=1 python benchmarks/bench_comparability_fusion.py [--n 20000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from geode.core import speed_ratio  # noqa: E402
from geode.ensembles import (  # noqa: E402
    ComparabilityRecovery,
    PerOracleTemperatureScaling,
    TemperatureScaling,
    mean_fusion,
)
from geode.ensembles.comparability_fusion.experiment import radial_oracles  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000, help="samples")
    ap.add_argument("--repeats", type=int, default=5, help="repeats of the side-by-side timing")
    args = ap.parse_args()
    _q, P, y = radial_oracles(args.n, [0.4, 1.0, 2.5, 5.0], seed=0)
    print(f"comparability recovery: M = 4 oracles, N = {args.n}, C = 10, one thread")

    def closed_form():
        return ComparabilityRecovery("closed_form").fit(P).fuse(P)

    def alternating():
        return ComparabilityRecovery("alternating").fit(P).fuse(P)

    def mean_gts():
        f = mean_fusion(P)
        return TemperatureScaling().fit(f, y).transform(f)

    def per_oracle_ts():
        return PerOracleTemperatureScaling().fit(P, y).fuse(P)

    for cand_name, cand in (("closed form", closed_form), ("alternating", alternating)):
        for base_name, base in (("mean + global TS", mean_gts), ("per-oracle TS", per_oracle_ts)):
            r = speed_ratio(cand, base, repeats=args.repeats)
            print(
                f"{cand_name:>12} vs {base_name:<17}: {1e3 * r['candidate_s']:8.1f} ms vs "
                f"{1e3 * r['baseline_s']:8.1f} ms, speedup {r['speedup']:.2f}x"
            )


if __name__ == "__main__":
    main()
