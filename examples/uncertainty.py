"""Conformal abstention for your classifier, beside the equivalent MAPIE call.

What it shows, on data the script makes itself: a scikit-learn MLP trained on a 5-class problem
(``make_classification``) is over-confident: much of its maximum softmax probability (MSP) sits above 0.99. We
ask when it may answer with a guarantee, with probability 1 - delta = 0.9 over the calibration set:
conditional correctness P(correct | answer) >= 0.95 and participation P(answer) >= 0.2.

1. ``ConformalAbstention`` (``geode.uncertainty``) with the default threshold grid 0, 0.01, ..., 0.99 (MAPIE's):
   for an over-confident network it may certify nothing, and its message says what to do;
2. with ``threshold_grid()``, a grid fixed before calibration and log-spaced towards 1 (or quantiles of
   held-out confidences, ``threshold_grid(scores=...)``), it certifies a threshold;
3. the same calibration with MAPIE's ``BinaryClassificationController`` (risk ``precision`` and a participation
   risk): the same certified thresholds, on every split (MAPIE's floating-point ``ceil`` can make it certify a
   subset, never more);
4. the guarantee over many random calibration/test splits: the share of splits whose test conditional
   correctness reaches the target (it must be >= 0.9 = 1 - delta).

Run::

    python examples/uncertainty.py           # 200 splits, about half a minute on one core
    python examples/uncertainty.py --smoke   # 10 splits, a few seconds

Needs: MAPIE (``pip install 'geode[uq]'``) for the comparison; no asset, no network.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

SKIP = 77
TARGET, PARTICIPATION, DELTA = 0.95, 0.2, 0.1


def mapie_thresholds(s: np.ndarray, c: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, float | None]:
    """The MAPIE-equivalent call: certified thresholds and the one with the largest participation."""
    from mapie.risk_control import BinaryClassificationController, BinaryRisk, precision

    participation = BinaryRisk(  # P(answer) >= tau_p; MAPIE's predicted_positive_fraction bounds it from above
        risk_occurrence=lambda y_true, y_pred: y_pred == 1,
        risk_condition=lambda y_true, y_pred: np.repeat(True, len(y_true)),
        higher_is_better=True,
    )
    ctl = BinaryClassificationController(
        predict_function=lambda conf: np.column_stack([1 - conf, conf]),  # the confidence as P(positive)
        risk=[precision, participation],  # precision = P(correct | answered)
        target_level=[TARGET, PARTICIPATION],
        confidence_level=1 - DELTA,
        best_predict_param_choice=participation,
        list_predict_params=grid,
    )
    with warnings.catch_warnings():  # MAPIE warns when nothing is certified; the caller reports it
        warnings.simplefilter("ignore", UserWarning)
        ctl.calibrate(s, c.astype(int))
    valid = np.sort(np.asarray(ctl.valid_predict_params, dtype=float).ravel())
    return valid, (float(ctl.best_predict_param) if valid.size else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (seconds; what the tests run)")
    parser.add_argument("--splits", type=int, default=None, help="calibration/test splits (default 200; 10 smoke)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every draw (default 0)")
    args = parser.parse_args()
    try:
        import mapie.risk_control  # noqa: F401
    except ImportError:
        print("skipped: needs MAPIE (pip install 'geode[uq]')")
        sys.exit(SKIP)
    from sklearn.datasets import make_classification
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    from geode.uncertainty import ConformalAbstention, threshold_grid

    t_start = time.process_time()
    splits = args.splits or (10 if args.smoke else 200)
    n_train, n_pool = (1000, 10000) if args.smoke else (3000, 10000)
    X, y = make_classification(
        n_train + n_pool, n_features=20, n_informative=8, n_classes=5, class_sep=1.2, random_state=args.seed
    )
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = MLPClassifier((128, 128), max_iter=200 if args.smoke else 400, random_state=args.seed)
        clf.fit(X[:n_train], y[:n_train])  # your classifier, trained long enough to be over-confident
        proba = clf.predict_proba(X[n_train:])
    s, c = proba.max(1), proba.argmax(1) == y[n_train:]  # the MSP and whether the answer is right
    print(
        f"an MLP on a 5-class problem: accuracy {c.mean():.3f} on {n_pool} held-out points; "
        f"{np.mean(s >= 0.99):.0%} of its MSPs are >= 0.99, {np.mean(s >= 0.999):.0%} >= 0.999"
    )
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(n_pool)
    cal, test = perm[: n_pool // 2], perm[n_pool // 2 :]

    asked = f"correctness >= {TARGET}, participation >= {PARTICIPATION}, delta {DELTA}"
    print(f"\n1. the default grid 0, 0.01, ..., 0.99; {asked}; {cal.size} calibration points")
    ca = ConformalAbstention(TARGET, DELTA, target_participation=PARTICIPATION).fit(s[cal], c[cal])
    if ca.feasible_:
        print(f"   certified threshold {ca.threshold_:.4f}")
    else:
        try:
            ca.predict(s[test])
        except RuntimeError as err:
            print("   " + str(err).replace(". ", ".\n   "))
    grid = threshold_grid()  # fixed before calibration: it uses no data
    print(f"\n2. threshold_grid(): {len(grid)} thresholds, 0 then 1 - 10^-k down to 1 - 1e-6")
    ours = ConformalAbstention(TARGET, DELTA, target_participation=PARTICIPATION, thresholds=grid).fit(s[cal], c[cal])
    if ours.feasible_:
        answer = ours.predict(s[test])
        print(
            f"   certified threshold {ours.threshold_:.6f}: on the test half it answers {answer.mean():.1%} "
            f"and is right on {c[test][answer].mean():.1%} of those (target {TARGET:.0%})"
        )
    else:
        print("   nothing certified on this split")
    valid, best = mapie_thresholds(s[cal], c[cal], grid)
    print(
        "\n3. MAPIE BinaryClassificationController, the same grid: "
        f"{valid.size} certified thresholds (geode {ours.valid_thresholds_.size}), selected "
        f"{best if best is None else round(best, 6)} (geode {ours.threshold_}); identical sets: "
        f"{np.array_equal(valid, ours.valid_thresholds_)}"
    )

    hits, same, subset, nothing = [], 0, 0, 0
    for _ in range(splits):
        perm = rng.permutation(n_pool)
        cal, test = perm[: n_pool // 2], perm[n_pool // 2 :]
        ca = ConformalAbstention(TARGET, DELTA, target_participation=PARTICIPATION, thresholds=grid)
        ca.fit(s[cal], c[cal])
        valid, _ = mapie_thresholds(s[cal], c[cal], grid)
        same += np.array_equal(valid, ca.valid_thresholds_)
        subset += set(valid) <= set(ca.valid_thresholds_)
        if not ca.feasible_:
            nothing += 1
            hits.append(True)  # abstaining on everything keeps the guarantee
            continue
        answer = ca.predict(s[test])
        hits.append(answer.any() and c[test][answer].mean() >= TARGET)
    print(
        f"\n4. over {splits} random calibration/test splits: the test conditional correctness reached {TARGET:.0%} "
        f"in {np.mean(hits):.1%} of them (the guarantee: >= {1 - DELTA:.0%}); nothing certified in {nothing}; "
        f"MAPIE certified the same set in {same}, a subset of geode's in {subset}"
    )
    print(f"\n{time.process_time() - t_start:.1f} CPU s")


if __name__ == "__main__":
    main()
