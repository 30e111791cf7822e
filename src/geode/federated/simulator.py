r"""A deterministic in-process federated-learning simulator in Flower's vocabulary.

Clients look like Flower's ``NumPyClient``: ``fit(parameters, config) -> (parameters, num_examples,
metrics)`` and ``evaluate(parameters, config) -> (loss, num_examples, metrics)``, with parameters as
``NDArrays`` (a list of numpy arrays). One round of :class:`Simulator`:

1. samples ``clients_per_round`` clients without replacement (from the simulator's seed);
2. sends each the global parameters and a config: ``"server-round"``, a per-client ``"seed"`` derived
   from (seed, round, client id), the simulator's ``fit_config`` and the strategy's
   :meth:`~geode.federated.Strategy.configure_fit` (e.g. FedProx's ``"proximal-mu"``);
3. checks every result (:func:`~geode.federated.client_update_problem`): a client that raises, or that
   returns mismatched shapes or NaN, is recorded in the round's ``failures`` and excluded;
4. aggregates the rest with the strategy's ``aggregate``; a round where every client failed raises.

A population object with ``fit_many(cids, parameters, configs)`` and ``len()``
(:class:`~geode.federated.BatchedTorchClients`) may stand in for the list of clients: the round then
trains all its clients in one vectorised call, with the same checks on every result.

:func:`label_mix_accuracy` turns the global model's per-class accuracy into per-client accuracies
(the metric CRAFT reports as mean, worst and standard deviation across clients).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_array, check_int
from geode.federated.strategies import NDArrays, Strategy, client_update_problem

__all__ = [
    "Client",
    "History",
    "RoundRecord",
    "Simulator",
    "disparity",
    "label_mix_accuracy",
]


@runtime_checkable
class Client(Protocol):
    """What the simulator needs from a client (the shape of Flower's ``NumPyClient``)."""

    def fit(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[NDArrays, int, dict[str, Any]]:
        """Train from ``parameters``; return the new parameters, the example count and metrics."""
        ...

    def evaluate(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[float, int, dict[str, Any]]:
        """Evaluate ``parameters`` on local data; return the loss, the example count and metrics."""
        ...


@dataclass
class RoundRecord:
    """What happened in one round.

    Attributes
    ----------
    server_round : int
        1-based round number.
    clients : list of int
        Ids of the clients whose results were aggregated.
    failures : list of (int, str)
        Sampled clients that were excluded, with the reason.
    fit_metrics : dict of str to float
        Example-weighted means of the aggregated clients' numeric fit metrics.
    eval_metrics : dict of str to float
        What ``evaluate_fn`` returned after this round (empty if it did not run).
    """

    server_round: int
    clients: list[int]
    failures: list[tuple[int, str]] = field(default_factory=list)
    fit_metrics: dict[str, float] = field(default_factory=dict)
    eval_metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class History:
    """The rounds of a simulation and its final global parameters."""

    rounds: list[RoundRecord] = field(default_factory=list)
    parameters: NDArrays = field(default_factory=list)

    def metric(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Rounds at which ``evaluate_fn`` reported ``name``, and its values."""
        pts = [(r.server_round, r.eval_metrics[name]) for r in self.rounds if name in r.eval_metrics]
        if not pts:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        rounds, vals = zip(*pts)
        return np.asarray(rounds, dtype=np.int64), np.asarray(vals, dtype=np.float64)

    @property
    def failures(self) -> list[tuple[int, int, str]]:
        """Every excluded client as (round, client id, reason)."""
        return [(r.server_round, cid, why) for r in self.rounds for cid, why in r.failures]


_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _client_seed(seed: int, server_round: int, cid: int) -> int:
    """A 63-bit seed for (simulation seed, round, client), mixed with splitmix64 (cheap, deterministic)."""
    return _splitmix64(_splitmix64(_splitmix64(int(seed)) ^ int(server_round)) ^ int(cid)) >> 1


class Simulator:
    """Run federated rounds in-process: sample clients, train them, aggregate with a strategy.

    Parameters
    ----------
    clients : sequence of Client, or a population with ``fit_many``
        The population; client ``i`` has id ``i``.
    strategy : Strategy
        Server aggregation rule (:class:`~geode.federated.FedAvg`, CRAFT, ...). It is ``reset()`` when
        the simulator is built.
    initial_parameters : list of ndarray
        The global model at round 0: a non-empty list of finite arrays. The simulator does not know the
        model, so the clients check the shapes in ``fit``; a client that rejects them is recorded as a failure
        (and a round where every client fails raises ``RuntimeError``).
    clients_per_round : int
        Clients sampled (without replacement) each round, ``1 <= m <= len(clients)``.
    seed : int
        Seeds client sampling and every client's local shuffling; the same seed gives the same run.
    fit_config : dict or callable, optional
        Extra config for every client, or ``fit_config(server_round) -> dict`` (e.g. a decaying ``"lr"``).
    evaluate_fn : callable, optional
        ``evaluate_fn(server_round, parameters) -> dict of str to float``: centralised evaluation
        (Flower's ``evaluate_fn``), called by :meth:`run` at round 0 and every ``eval_every`` rounds.

    Examples
    --------
    >>> import numpy as np
    >>> from geode.federated import FedAvg
    >>> class Add:  # a client that adds its id to every weight
    ...     def __init__(self, i): self.i = i
    ...     def fit(self, p, config): return [a + self.i for a in p], 1, {}
    ...     def evaluate(self, p, config): return 0.0, 1, {}
    >>> sim = Simulator([Add(1), Add(3)], FedAvg(), [np.zeros(2)], clients_per_round=2, seed=0)
    >>> sim.run(2).parameters[0]
    array([4., 4.])
    """

    def __init__(
        self,
        clients: Sequence[Client],
        strategy: Strategy,
        initial_parameters: NDArrays,
        *,
        clients_per_round: int,
        seed: int = 0,
        fit_config: Mapping[str, Any] | Callable[[int], Mapping[str, Any]] | None = None,
        evaluate_fn: Callable[[int, NDArrays], Mapping[str, float]] | None = None,
    ) -> None:
        self._pool = clients if callable(getattr(clients, "fit_many", None)) else None
        if self._pool is None:
            if isinstance(clients, (str, bytes)) or not isinstance(clients, Sequence):
                raise TypeError(f"clients must be a sequence of clients; got {type(clients).__name__}")
            for i, c in enumerate(clients):
                if not (callable(getattr(c, "fit", None)) and callable(getattr(c, "evaluate", None))):
                    raise TypeError(f"clients[{i}] must have fit(parameters, config) and evaluate(parameters, config)")
        if len(clients) == 0:
            raise ValueError("clients must not be empty: a federation needs at least one client")
        if not isinstance(strategy, Strategy):
            raise TypeError(f"strategy must be a geode.federated.Strategy; got {type(strategy).__name__}")
        self.clients = clients if self._pool is not None else list(clients)
        self.strategy = strategy
        self.clients_per_round = check_int("clients_per_round", clients_per_round, low=1, high=len(self.clients))
        self.seed = check_int("seed", seed, low=0)
        if fit_config is not None and not (callable(fit_config) or isinstance(fit_config, Mapping)):
            raise TypeError("fit_config must be a dict or a callable fit_config(server_round) -> dict")
        if evaluate_fn is not None and not callable(evaluate_fn):
            raise TypeError("evaluate_fn must be callable as evaluate_fn(server_round, parameters)")
        self.fit_config = fit_config
        self.evaluate_fn = evaluate_fn
        if isinstance(initial_parameters, (str, bytes, np.ndarray)) or not isinstance(initial_parameters, Sequence):
            raise TypeError(
                "initial_parameters must be a list of numpy arrays (NDArrays); got "
                f"{type(initial_parameters).__name__}"
            )
        if len(initial_parameters) == 0:
            raise ValueError("initial_parameters must hold at least one array (the global model's parameters)")
        params = [np.array(a, copy=True) for a in initial_parameters]
        for j, a in enumerate(params):
            if np.issubdtype(a.dtype, np.inexact) and not np.all(np.isfinite(a)):
                raise ValueError(f"initial_parameters[{j}] contains NaN or inf")
        self.parameters: NDArrays = params
        self._rng = as_generator(self.seed)
        self.server_round = 0
        self.strategy.reset()

    def _config(self, server_round: int, cid: int) -> dict[str, Any]:
        cfg: dict[str, Any] = {}
        if self.fit_config is not None:
            extra = self.fit_config(server_round) if callable(self.fit_config) else self.fit_config
            cfg.update(extra)
        cfg.update(self.strategy.configure_fit(server_round))
        cfg["server-round"] = server_round
        cfg["seed"] = _client_seed(self.seed, server_round, cid)
        return cfg

    def fit_round(self) -> RoundRecord:
        """Run one round and update :attr:`parameters`; return what happened.

        Raises
        ------
        RuntimeError
            Every sampled client failed (the reasons are listed), or the strategy produced NaN/inf.
        """
        self.server_round += 1
        r = self.server_round
        chosen = np.sort(self._rng.choice(len(self.clients), size=self.clients_per_round, replace=False))
        ok_ids: list[int] = []
        ok_params: list[NDArrays] = []
        ok_n: list[int] = []
        ok_metrics: list[dict[str, Any]] = []
        failures: list[tuple[int, str]] = []
        outs: list[Any]
        if self._pool is not None:
            try:
                ids = chosen.tolist()
                res = self._pool.fit_many(ids, self.parameters, [self._config(r, c) for c in ids])
                outs = (
                    list(res) if len(res) == len(chosen) else [f"fit_many returned {len(res)} results"] * len(chosen)
                )
            except Exception as exc:  # the whole vectorised call failed: every client of the round did
                outs = [f"{type(exc).__name__}: {exc}"] * len(chosen)
        else:
            outs = []
            for cid in chosen.tolist():
                try:
                    outs.append(self.clients[cid].fit([a.copy() for a in self.parameters], self._config(r, cid)))
                except Exception as exc:  # a failing client is reported and excluded, never averaged in
                    outs.append(f"{type(exc).__name__}: {exc}")
        for cid, out in zip(chosen.tolist(), outs):
            if isinstance(out, str):
                failures.append((cid, out))
                continue
            try:
                params, n, metrics = out
            except (TypeError, ValueError):
                failures.append((cid, "fit must return (parameters, num_examples, metrics)"))
                continue
            problem = client_update_problem(self.parameters, params, n)
            if problem is None and not isinstance(metrics, Mapping):
                problem = f"metrics must be a dict; got {type(metrics).__name__}"
            if problem is None and int(n) == 0:
                problem = "reported 0 training examples"
            if problem is not None:
                failures.append((cid, problem))
                continue
            ok_ids.append(cid)
            ok_params.append([np.asarray(a) for a in params])
            ok_n.append(int(n))
            ok_metrics.append(dict(metrics))
        if not ok_ids:
            reasons = "; ".join(f"client {c}: {why}" for c, why in failures)
            raise RuntimeError(f"round {r}: no client result to aggregate (every sampled client failed: {reasons})")
        new = self.strategy.aggregate(self.parameters, ok_params, ok_n, ok_metrics)
        for j, a in enumerate(new):
            if np.issubdtype(np.asarray(a).dtype, np.inexact) and not np.all(np.isfinite(a)):
                raise RuntimeError(f"round {r}: {self.strategy.name} produced NaN/inf in array {j}")
        self.parameters = [np.asarray(a) for a in new]
        return RoundRecord(r, ok_ids, failures, _mean_metrics(ok_metrics, ok_n))

    def run(self, num_rounds: int, *, eval_every: int = 1) -> History:
        """Run ``num_rounds`` rounds; evaluate with ``evaluate_fn`` at round 0, every ``eval_every``
        rounds and after the last one."""
        num_rounds = check_int("num_rounds", num_rounds, low=1)
        eval_every = check_int("eval_every", eval_every, low=1)
        hist = History()
        if self.evaluate_fn is not None and self.server_round == 0:
            hist.rounds.append(RoundRecord(0, [], eval_metrics=self._evaluate(0)))
        for t in range(num_rounds):
            rec = self.fit_round()
            if self.evaluate_fn is not None and ((t + 1) % eval_every == 0 or t + 1 == num_rounds):
                rec.eval_metrics = self._evaluate(rec.server_round)
            hist.rounds.append(rec)
        hist.parameters = [a.copy() for a in self.parameters]
        return hist

    def _evaluate(self, server_round: int) -> dict[str, float]:
        assert self.evaluate_fn is not None
        res = self.evaluate_fn(server_round, [a.copy() for a in self.parameters])
        if not isinstance(res, Mapping):
            raise TypeError(f"evaluate_fn must return a dict of metrics; got {type(res).__name__}")
        return {str(k): float(v) for k, v in res.items()}

    def evaluate_clients(self, parameters: NDArrays | None = None) -> list[tuple[float, int, dict[str, Any]]]:
        """Federated evaluation: every client's ``evaluate`` of ``parameters`` (default: the global model)."""
        params = self.parameters if parameters is None else parameters
        cfg = {"server-round": self.server_round}
        clients = [self.clients.client(i) for i in range(len(self.clients))] if self._pool else self.clients
        return [c.evaluate([a.copy() for a in params], dict(cfg)) for c in clients]


def _mean_metrics(metrics: list[dict[str, Any]], n: list[int]) -> dict[str, float]:
    keys = set.intersection(*(set(m) for m in metrics)) if metrics else set()
    w = np.asarray(n, dtype=np.float64)
    out = {}
    for k in sorted(keys):
        vals = [m[k] for m in metrics]
        if all(isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) for v in vals):
            out[k] = float(np.dot(w, vals) / w.sum())
    return out


def label_mix_accuracy(y_true: Any, y_pred: Any, label_mix: Any) -> np.ndarray:
    r"""Per-client accuracy of one global model, reweighting its per-class accuracy by each client's label mix.

    .. math::

        \mathrm{acc}_k = \sum_c p_k(c)\, \mathrm{acc}_c, \qquad
        \mathrm{acc}_c = \frac{\#\{i : y_i = c,\ \hat y_i = c\}}{\#\{i : y_i = c\}},

    i.e. the accuracy client :math:`k` would see on a test set with its own label distribution (the
    protocol of label-skew FL benchmarks, where clients' local test sets would hold a handful of
    examples). A class absent from the test set counts as accuracy 0 for the clients that hold it.

    Parameters
    ----------
    y_true, y_pred : array_like of int, shape (N,)
        Test labels and the global model's predictions.
    label_mix : array_like, shape (K, C)
        Client label distributions (rows sum to 1; :func:`~geode.federated.label_distribution`).

    Returns
    -------
    ndarray, shape (K,)
    """
    yt = check_array("y_true", y_true, ndim=1, dtype=np.int64)
    yp = check_array("y_pred", y_pred, shape=(yt.shape[0],), dtype=np.int64)
    mix = check_array("label_mix", label_mix, ndim=2, min_rows=1)
    c = mix.shape[1]
    if yt.size and (yt.max() >= c or yt.min() < 0):
        raise ValueError(f"y_true holds labels outside [0, {c}) (label_mix has {c} columns)")
    support = np.bincount(yt, minlength=c).astype(np.float64)
    correct = np.bincount(yt[yt == yp], minlength=c).astype(np.float64)
    per_class = np.divide(correct, support, out=np.zeros(c), where=support > 0)
    return mix @ per_class


def disparity(acc: Any) -> dict[str, float]:
    """Mean, worst (minimum), 10th percentile and standard deviation of per-client accuracies."""
    a = check_array("acc", acc, ndim=1, min_rows=1)
    return {
        "mean": float(a.mean()),
        "worst": float(a.min()),
        "p10": float(np.percentile(a, 10)),
        "std": float(a.std()),
    }
