"""Benchmark: SafeCut's cut-statistic gate and a full SafeCut adaptation against confidence-gated exchange.

The hot path SafeCut adds is two cut statistics (exact kNN graphs) per round. Times, on ``--n`` target samples of
the complementary-failure test bed, (1) the gate alone: :meth:`SafeCut.gate` against the confidence gate, and
(2) a whole adaptation (``--rounds`` rounds of 2 epochs) of :class:`geode.ensembles.SafeCut` against
:class:`geode.ensembles.MutualCorrection` with ``scheme="confidence"`` (the strongest baseline), with
:func:`geode.core.speed_ratio` (``speedup`` > 1 means SafeCut is faster).

Run with one thread: ``OMP_NUM_THREADS=1 python benchmarks/bench_safecut.py [--n 4000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from geode.core import speed_ratio, torch_generator  # noqa: E402
from geode.ensembles import MutualCorrection, SafeCut  # noqa: E402
from geode.ensembles.mutual import RoundState  # noqa: E402
from geode.ensembles.safecut.experiment import (  # noqa: E402
    FrozenEncoderClassifier,
    MLPClassifier,
    complementary_failure_data,
    train_supervised,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000, help="unlabelled target samples")
    ap.add_argument("--rounds", type=int, default=2, help="adaptation rounds")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the side-by-side timing")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    d = complementary_failure_data(args.n, 2000, seed=0)
    model_t = train_supervised(MLPClassifier(16, 10), d.x_source, d.y_source, epochs=20, seed=0)
    partner = FrozenEncoderClassifier(16, 10, scale=5.0, generator=torch_generator(1))
    x = torch.as_tensor(d.x_target)
    with torch.no_grad():
        probs = [torch.softmax(m(x).double(), 1).numpy() for m in (model_t, partner)]
        feats = [m.embed(x).double().numpy() for m in (model_t, partner)]
    state = RoundState(probs[0], probs[1], feats[0], feats[1], 0)
    print(f"SafeCut: N = {args.n} target samples, d = 16, 10 classes, k = 20, one thread")
    safecut, conf = SafeCut(k=20), MutualCorrection("confidence")
    r = speed_ratio(lambda: safecut.gate(state), lambda: conf.gate(state), repeats=args.repeats)
    print(
        f"gate: SafeCut (two cut statistics) {1e3 * r['candidate_s']:.1f} ms vs confidence "
        f"{1e3 * r['baseline_s']:.3f} ms, speedup {r['speedup']:.4f}x"
    )
    kw = {"rounds": args.rounds, "epochs": 2, "seed": 0}
    r = speed_ratio(
        lambda: SafeCut(**kw).fit(model_t, partner, x),
        lambda: MutualCorrection("confidence", **kw).fit(model_t, partner, x),
        repeats=args.repeats,
        warmup=0,
    )
    print(
        f"adaptation ({args.rounds} rounds x 2 epochs): SafeCut {r['candidate_s']:.2f} s vs confidence gating "
        f"{r['baseline_s']:.2f} s, speedup {r['speedup']:.2f}x"
    )


if __name__ == "__main__":
    main()
