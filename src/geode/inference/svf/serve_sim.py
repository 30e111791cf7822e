"""``serve-sim``: replay a user's CSV trace through the serving simulator with FCFS, SJF, SVF or 1-bit SVF.

Usage (``python -m geode.inference.svf.serve_sim`` or, once wired into the ``geode`` command,
``geode serve-sim``)::

    serve-sim --trace FILE.csv --kv-slots M [--policy fcfs|sjf|svf|1bit-svf] [--predictor-error E] [--seed S]
              [--admission peak|greedy] [--step-time T] [--sort] [--json]

``serve-sim --help`` lists every option with its default (policy ``svf``, predictor error 0, admission
``peak``, step time 1).

The trace has a header with ``arrival,prompt_tokens,output_tokens`` (and optionally
``predicted_output_tokens``); see :func:`geode.inference.workloads.load_trace`. Bad input (a missing
file or column, a non-numeric or negative value, unsorted arrivals without ``--sort``, a cache smaller
than a request's peak) prints one line naming the problem and exits with code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from geode.core.validation import check_choice, check_int, check_real
from geode.inference.serving import FCFS, SJF, CostModel, Policy, simulate
from geode.inference.svf.policies import SVF, OneBitSVF
from geode.inference.workloads import UnsortedTraceError, load_trace, predict_output_lengths

__all__ = ["POLICY_NAMES", "main", "make_policy", "serve_sim"]

POLICY_NAMES: tuple[str, ...] = ("fcfs", "sjf", "svf", "1bit-svf")


def make_policy(name: str) -> Policy:
    """The policy called ``name``: one of ``fcfs``, ``sjf``, ``svf``, ``1bit-svf`` (case-insensitive)."""
    if not isinstance(name, str):
        raise TypeError(f"policy must be a str; got {type(name).__name__}")
    key = check_choice("policy", name.lower(), POLICY_NAMES)
    return {"fcfs": FCFS, "sjf": SJF, "svf": SVF, "1bit-svf": OneBitSVF}[key]()


def serve_sim(
    trace: str | Path,
    policy: str = "svf",
    kv_slots: int = 30_000,
    *,
    predictor_error: float = 0.0,
    seed: int = 0,
    admission: str = "peak",
    step_time: float = 1.0,
    sort: bool = False,
) -> dict[str, float]:
    """Simulate a CSV trace and return the metrics of :meth:`geode.inference.SimResult.metrics`.

    Parameters
    ----------
    trace : str or Path
        CSV file (``arrival,prompt_tokens,output_tokens``).
    policy : {"fcfs", "sjf", "svf", "1bit-svf"}
        Scheduling policy.
    kv_slots : int
        KV-cache size :math:`M` in tokens.
    predictor_error : float
        If > 0, the scheduler sees noisy output lengths
        (:func:`~geode.inference.workloads.predict_output_lengths`); else the trace's
        ``predicted_output_tokens`` column if present, else the true lengths.
    seed : int
        Seed of the predictor's noise.
    admission : {"peak", "greedy"}
        Admission rule (see :func:`geode.inference.simulate`).
    step_time : float
        Duration of one decode step in the trace's time unit (``0.03`` for arrivals in seconds and a
        30 ms step); a 2048-token prefill costs one more step.
    sort : bool
        Sort an unsorted trace by arrival instead of rejecting it.
    """
    pol = make_policy(policy)
    kv_slots = check_int("kv_slots", kv_slots, low=1, high=10**15)
    predictor_error = check_real("predictor_error", predictor_error, low=0.0)
    step_time = check_real("step_time", step_time, low=0.0, low_inclusive=False)
    work = load_trace(trace, sort=sort)
    if predictor_error > 0:
        work = work.with_predicted(predict_output_lengths(work.output, predictor_error, seed))
    cost = CostModel(step_time, step_time / 2048.0, 0.0)
    return simulate(work, pol, kv_slots, cost=cost, admission=admission).metrics()


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage block), raised instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="serve-sim",
        description=(
            "Replay a request trace (CSV with arrival,prompt_tokens,output_tokens and optionally "
            "predicted_output_tokens) through the KV-cache serving simulator and print its metrics."
        ),
        epilog="Bad input prints one line naming the problem and exits with code 2.",
    )
    p.add_argument("--trace", required=True, metavar="FILE", help="CSV trace file (required)")
    p.add_argument("--policy", default="svf", metavar="NAME", help=f"{', '.join(POLICY_NAMES)} (default: %(default)s)")
    p.add_argument("--kv-slots", type=int, required=True, metavar="M", help="KV-cache size M in tokens (required)")
    p.add_argument(
        "--predictor-error",
        type=float,
        default=0.0,
        metavar="E",
        help="log-sd of the noisy output-length predictor; 0 uses the trace's predicted_output_tokens column, "
        "else the true lengths (default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the predictor noise (default: %(default)s)")
    p.add_argument(
        "--admission",
        default="peak",
        metavar="RULE",
        help="peak (the MC-SF future-peak check) or greedy (vLLM's rule) (default: %(default)s)",
    )
    p.add_argument(
        "--step-time",
        type=float,
        default=1.0,
        metavar="T",
        help="one decode step in the trace's time unit, 0.03 for arrivals in seconds and a 30 ms step; a "
        "2048-token prefill costs one more step (default: %(default)s)",
    )
    p.add_argument(
        "--sort", action="store_true", help="sort the trace by arrival instead of rejecting it (default: off)"
    )
    p.add_argument("--json", action="store_true", help="print the metrics as JSON instead of a table (default: off)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit code (0 ok or ``--help``, 2 bad input)."""
    try:
        args = _parser().parse_args(argv)
    except _UsageError as exc:
        print(f"serve-sim: error: {exc} (see serve-sim --help)", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help printed the help
        return int(exc.code or 0)
    try:
        metrics = serve_sim(
            args.trace,
            args.policy,
            args.kv_slots,
            predictor_error=args.predictor_error,
            seed=args.seed,
            admission=args.admission,
            step_time=args.step_time,
            sort=args.sort,
        )
    except UnsortedTraceError as exc:  # on the command line the switch is the flag --sort
        print(f"serve-sim: error: {exc.with_fix('pass --sort')}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OverflowError) as exc:
        print(f"serve-sim: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a missing, unreadable or vanished file
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"serve-sim: error: cannot read the trace{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(metrics, indent=2))
    else:
        width = max(len(k) for k in metrics)
        for k, v in metrics.items():
            print(f"{k:<{width}}  {v:.6g}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
