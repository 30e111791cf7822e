"""Run a geode strategy on real Flower: :func:`to_flower` wraps it as a Flower message-API strategy.

Our :class:`~geode.federated.Simulator` is the embedded default; Flower (the ``flower`` extra,
``pip install "geode[flower]"``) is how a user takes the same aggregation rule across real machines.
The wrapper subclasses ``flwr.serverapp.strategy.FedAvg`` (so sampling, evaluation and metric
aggregation are Flower's) and replaces ``aggregate_train`` with the wrapped strategy's
``aggregate(global_params, client_params, num_examples, metrics)``:

- ``configure_train`` keeps the current global ``ArrayRecord`` (CRAFT, FedAvgM and QFedAvg need
  :math:`\\theta_t`) and adds the strategy's ``configure_fit`` entries (FedProx's ``"proximal-mu"``) to the
  ``ConfigRecord``;
- ``aggregate_train`` drops replies that carry an error, and replies whose arrays do not match the
  global model's shapes or hold NaN (logged, never averaged in); the weights are the replies'
  ``"num-examples"`` metric (``weighted_by_key``), and the array keys of the global record are kept.

flwr is imported inside :func:`to_flower` only; importing this module never needs it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from geode.federated.strategies import Strategy, client_update_problem

__all__ = ["to_flower"]


def _import_flwr() -> dict[str, Any]:
    try:
        from flwr.serverapp.strategy import FedAvg as FlowerFedAvg
    except ImportError as exc:
        raise ImportError(
            'to_flower needs Flower (the "flower" extra): pip install "geode[flower]" '
            '(add "flwr[simulation]" to run Flower simulations)'
        ) from exc
    try:
        from flwr.app import Array, ArrayRecord, MetricRecord
    except ImportError:  # older flwr releases export the records from flwr.common
        from flwr.common import Array, ArrayRecord, MetricRecord
    try:
        from flwr.common import log
    except ImportError:  # pragma: no cover
        log = None
    return {
        "FedAvg": FlowerFedAvg,
        "Array": Array,
        "ArrayRecord": ArrayRecord,
        "MetricRecord": MetricRecord,
        "log": log,
    }


def to_flower(strategy: Strategy, **fedavg_kwargs: Any) -> Any:
    """Wrap a geode strategy as a real Flower strategy (``flwr.serverapp.strategy.FedAvg`` subclass).

    Parameters
    ----------
    strategy : Strategy
        Any geode strategy (:class:`~geode.federated.FedAvg`, :class:`~geode.federated.FedAvgM`,
        :class:`~geode.federated.QFedAvg`, :class:`~geode.federated.FedProx`, CRAFT, ...). Its server
        state is reset once, here.
    **fedavg_kwargs
        Passed to Flower's ``FedAvg`` (``fraction_train``, ``min_train_nodes``, ``weighted_by_key``, ...).

    Returns
    -------
    flwr.serverapp.strategy.Strategy
        Use it as any Flower strategy: ``result = to_flower(CRAFT(0.3)).start(grid, initial_arrays,
        num_rounds)`` inside a ``ServerApp``. Clients reply with an ``ArrayRecord`` of the trained arrays
        and a ``MetricRecord`` holding ``"num-examples"`` (and ``"train_loss"`` for QFedAvg).

    Raises
    ------
    ImportError
        flwr is not installed (install the ``flower`` extra).
    """
    if not isinstance(strategy, Strategy):
        raise TypeError(f"strategy must be a geode.federated.Strategy; got {type(strategy).__name__}")
    fl = _import_flwr()
    base = fl["FedAvg"]

    class GeodeStrategy(base):  # type: ignore[misc, valid-type]
        """A geode aggregation rule inside Flower's FedAvg machinery."""

        def __init__(self, inner: Strategy, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.inner = inner
            self.inner.reset()
            self.current_arrays: Any = None
            self.excluded: list[tuple[int, int, str]] = []  # (round, node id, reason)

        def summary(self) -> None:
            if fl["log"] is not None:
                import logging

                fl["log"](logging.INFO, "\t├──> geode strategy: %r", self.inner)
            super().summary()

        def configure_train(self, server_round: int, arrays: Any, config: Any, grid: Any) -> Any:
            self.current_arrays = arrays
            for k, v in self.inner.configure_fit(server_round).items():
                config[k] = v
            return super().configure_train(server_round, arrays, config, grid)

        def aggregate_train(self, server_round: int, replies: Any) -> tuple[Any, Any]:
            if self.current_arrays is None:
                raise RuntimeError("aggregate_train called before configure_train: the global arrays are unknown")
            keys = list(self.current_arrays.keys())
            global_nd = self.current_arrays.to_numpy_ndarrays()
            ok_msgs, params, nums, metrics = [], [], [], []
            for msg in replies:
                node = getattr(getattr(msg, "metadata", None), "src_node_id", -1)
                if msg.has_error():
                    self.excluded.append((server_round, node, f"error reply: {msg.error.reason}"))
                    continue
                arrs = list(msg.content.array_records.values())
                mets = list(msg.content.metric_records.values())
                if not arrs or not mets or self.weighted_by_key not in mets[0]:
                    self.excluded.append(
                        (server_round, node, f"reply lacks an ArrayRecord or the {self.weighted_by_key!r} metric")
                    )
                    continue
                nd = arrs[0].to_numpy_ndarrays()
                n = mets[0][self.weighted_by_key]
                n = int(n) if isinstance(n, (int, float)) and float(n).is_integer() else n
                problem = client_update_problem(global_nd, nd, n)
                if problem is not None:
                    self.excluded.append((server_round, node, problem))
                    continue
                ok_msgs.append(msg)
                params.append(nd)
                nums.append(n)
                metrics.append(dict(mets[0]))
            if fl["log"] is not None:
                import logging

                for r, node, why in self.excluded:
                    if r == server_round:
                        fl["log"](logging.WARNING, "geode: excluded node %s in round %s: %s", node, r, why)
            if not ok_msgs:
                return None, None
            new = self.inner.aggregate(global_nd, params, nums, metrics)
            record = fl["ArrayRecord"](OrderedDict((k, fl["Array"](np.asarray(a))) for k, a in zip(keys, new)))
            agg_metrics = self.train_metrics_aggr_fn([m.content for m in ok_msgs], self.weighted_by_key)
            return record, agg_metrics

    GeodeStrategy.__name__ = GeodeStrategy.__qualname__ = f"Flower{type(strategy).__name__}"
    return GeodeStrategy(strategy, **fedavg_kwargs)
