r"""Server strategies with a Flower-shaped interface: FedAvg, FedAvgM, QFedAvg and FedProx.

Parameters travel as Flower's ``NDArrays``: a list of numpy arrays per model (one list per client).
Every strategy implements the pure aggregation rule

``aggregate(global_params, client_params, num_examples, metrics=None) -> new_params``

which our in-process :class:`~geode.federated.Simulator` and the Flower adapter
(:func:`~geode.federated.to_flower`) both call, and ``configure_fit(server_round) -> config`` for what
the server sends to clients (FedProx's ``"proximal-mu"``). Config and metric keys follow Flower's
message API: ``"server-round"``, ``"proximal-mu"``, ``"num-examples"``, ``"train_loss"``.

Strategies that keep server state between rounds (FedAvgM's momentum, CRAFT's reference direction)
expose :meth:`Strategy.reset`. Client parameters are validated before anything is averaged:
mismatched shapes, NaN or infinite values, a negative example count or an empty round raise a
``ValueError`` naming the client; the simulator uses :func:`client_update_problem` to report and
exclude one failing client instead of averaging it in.

References
----------
1. McMahan et al., "Communication-efficient learning of deep networks from decentralized data",
   AISTATS 2017 (FedAvg).
2. Hsu, Qi and Brown, "Measuring the effects of non-identical data distribution for federated visual
   classification", 2019 (FedAvgM).
3. Li, Sanjabi, Beirami and Smith, "Fair resource allocation in federated learning", ICLR 2020 (q-FFL,
   q-FedAvg).
4. Li et al., "Federated optimization in heterogeneous networks", MLSys 2020 (FedProx).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_positive, check_real

__all__ = [
    "FedAvg",
    "FedAvgM",
    "FedProx",
    "NDArrays",
    "QFedAvg",
    "Strategy",
    "check_client_updates",
    "client_update_problem",
    "weighted_average",
]

NDArrays = list[np.ndarray]
"""A model's parameters as a list of numpy arrays (Flower's ``NDArrays``)."""


def _as_ndarrays(name: str, params: Any) -> NDArrays:
    if isinstance(params, np.ndarray) or not isinstance(params, Sequence) or isinstance(params, (str, bytes)):
        raise TypeError(f"{name} must be a list of numpy arrays (Flower NDArrays); got {type(params).__name__}")
    out = []
    for j, a in enumerate(params):
        if type(a) is np.ndarray:
            out.append(a)
            continue
        try:
            out.append(np.asarray(a))
        except (TypeError, ValueError) as exc:  # pragma: no cover - np.asarray accepts nearly anything
            raise TypeError(f"{name}[{j}] is not array-like: {exc}") from None
    return out


def client_update_problem(global_params: Sequence[np.ndarray], params: Any, num_examples: Any) -> str | None:
    """Why one client's result cannot be aggregated, or ``None`` when it can.

    Checks that ``params`` is a list of arrays with the global model's number of arrays and shapes, that
    every value is finite, and that ``num_examples`` is a non-negative integer. A problem is *returned* as a
    sentence (the simulator reports and excludes that client), not raised. ``global_params`` is trusted: it is
    the round's global model, validated once per round by :func:`check_client_updates`.
    """
    if isinstance(num_examples, bool) or not isinstance(num_examples, numbers.Integral) or num_examples < 0:
        return f"num_examples must be a non-negative integer; got {num_examples!r}"
    try:
        arrays = _as_ndarrays("parameters", params)
    except TypeError as exc:
        return str(exc)
    if len(arrays) != len(global_params):
        return f"returned {len(arrays)} arrays; the global model has {len(global_params)}"
    for j, (a, g) in enumerate(zip(arrays, global_params)):
        if a.shape != np.shape(g):
            return f"array {j} has shape {a.shape}; the global model's has {np.shape(g)}"
        kind = a.dtype.kind
        if kind not in "biufc":
            return f"array {j} has non-numeric dtype {a.dtype}"
        if kind in "fc" and not np.isfinite(a).all():
            return f"array {j} contains NaN or inf"
    return None


def check_client_updates(
    global_params: Any, client_params: Any, num_examples: Any
) -> tuple[NDArrays, list[NDArrays], np.ndarray]:
    """Validate one round's inputs to ``aggregate`` and return them as arrays.

    Returns
    -------
    global_params : list of ndarray
    client_params : list of list of ndarray
    num_examples : ndarray of float64, shape (K,)

    Raises
    ------
    ValueError
        No client in the round, a length mismatch between ``client_params`` and ``num_examples``, a
        client whose arrays do not match the global model's shapes, NaN/inf values, or example counts
        that are negative or sum to zero.
    """
    glob = _as_ndarrays("global_params", global_params)
    for j, g in enumerate(glob):
        if not np.issubdtype(g.dtype, np.number):
            raise TypeError(f"global_params[{j}] must be numeric; got dtype {g.dtype}")
        if np.issubdtype(g.dtype, np.inexact) and not np.all(np.isfinite(g)):
            raise ValueError(f"global_params[{j}] contains NaN or inf")
    if isinstance(client_params, np.ndarray) or not isinstance(client_params, Sequence):
        kind = type(client_params).__name__
        raise TypeError(f"client_params must be a list with one NDArrays per client; got {kind}")
    if len(client_params) == 0:
        raise ValueError("client_params is empty: a round needs at least one client result to aggregate")
    nums = list(num_examples) if not isinstance(num_examples, np.ndarray) else num_examples.tolist()
    if len(nums) != len(client_params):
        raise ValueError(f"num_examples has {len(nums)} entries but client_params has {len(client_params)} clients")
    for i, (p, n) in enumerate(zip(client_params, nums)):
        problem = client_update_problem(glob, p, n)
        if problem is not None:
            raise ValueError(f"client_params[{i}] does not fit global_params: {problem}")
    n_arr = np.asarray(nums, dtype=np.float64)
    if n_arr.sum() <= 0:
        raise ValueError("num_examples must sum to a positive number; every client reported 0 examples")
    return glob, [_as_ndarrays(f"client_params[{i}]", p) for i, p in enumerate(client_params)], n_arr


def weighted_average(client_params: Sequence[NDArrays], weights: np.ndarray) -> list[np.ndarray]:
    r"""Array-wise weighted mean :math:`\sum_k w_k \theta_k / \sum_k w_k` in float64.

    Parameters
    ----------
    client_params : list of list of ndarray
        One ``NDArrays`` per client, all with the same number of arrays and the same shapes, finite.
    weights : array_like, shape (K,)
        One finite, non-negative weight per client, with a positive sum (e.g. the example counts).

    Raises
    ------
    ValueError
        No client, a weight count that differs from the client count, a negative, NaN or infinite weight,
        weights summing to zero, clients whose arrays differ in number or shape, or NaN/inf parameters.
    TypeError
        ``client_params`` is not a list of lists of arrays.

    Examples
    --------
    >>> import numpy as np
    >>> weighted_average([[np.ones(2)], [np.full(2, 4.0)]], np.array([3.0, 1.0]))[0]
    array([1.75, 1.75])
    """
    if isinstance(client_params, np.ndarray) or not isinstance(client_params, Sequence):
        kind = type(client_params).__name__
        raise TypeError(f"client_params must be a list with one NDArrays per client; got {kind}")
    if len(client_params) == 0:
        raise ValueError("client_params is empty: the average needs at least one client")
    clients = [_as_ndarrays(f"client_params[{i}]", p) for i, p in enumerate(client_params)]
    first = clients[0]
    for i, p in enumerate(clients):
        if len(p) != len(first):
            raise ValueError(f"client_params[{i}] has {len(p)} arrays; client_params[0] has {len(first)}")
        for j, (a, a0) in enumerate(zip(p, first)):
            if a.shape != a0.shape:
                raise ValueError(f"client_params[{i}][{j}] has shape {a.shape}; client_params[0][{j}] has {a0.shape}")
            if a.dtype.kind not in "biufc":
                raise TypeError(f"client_params[{i}][{j}] must be numeric; got dtype {a.dtype}")
            if a.dtype.kind in "fc" and not np.isfinite(a).all():
                raise ValueError(f"client_params[{i}][{j}] contains NaN or inf")
    w = check_array("weights", weights, ndim=1)
    if w.shape[0] != len(clients):
        raise ValueError(f"weights must have one entry per client; got {w.shape[0]} for {len(clients)}")
    if w.min() < 0:
        raise ValueError(f"weights must be non-negative; got min {w.min():g}")
    if not w.sum() > 0:
        raise ValueError("weights must have a positive sum; every weight is 0")
    return _weighted_average(clients, w)


def _weighted_average(client_params: Sequence[NDArrays], weights: np.ndarray) -> list[np.ndarray]:
    """:func:`weighted_average` without validation (for inputs checked by :func:`check_client_updates`)."""
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    out = []
    for j in range(len(client_params[0])):
        acc = np.zeros(np.shape(client_params[0][j]), dtype=np.float64)
        for wk, p in zip(w, client_params):
            acc += wk * np.asarray(p[j], dtype=np.float64)
        out.append(acc)
    return out


def _cast_like(new: Sequence[np.ndarray], like: Sequence[np.ndarray]) -> NDArrays:
    out = []
    for a, g in zip(new, like):
        dt = g.dtype if np.issubdtype(g.dtype, np.inexact) else np.float64
        out.append(np.asarray(a, dtype=dt).reshape(g.shape))
    return out


class Strategy:
    """Base class of server strategies (Flower-shaped).

    Subclasses implement :meth:`aggregate`; they may override :meth:`configure_fit` (what is sent to
    clients with the global parameters) and :meth:`reset` (clear server state between experiments).
    """

    name: str = "strategy"

    def configure_fit(self, server_round: int) -> dict[str, Any]:
        """Config entries sent to every client of round ``server_round`` (merged into the simulator's)."""
        return {}

    def aggregate(
        self,
        global_params: NDArrays,
        client_params: Sequence[NDArrays],
        num_examples: Sequence[int],
        metrics: Sequence[Mapping[str, Any]] | None = None,
    ) -> NDArrays:
        """New global parameters from the clients' trained parameters.

        Parameters
        ----------
        global_params : list of ndarray
            The global model the clients started from, :math:`\\theta_t`.
        client_params : list of list of ndarray
            One ``NDArrays`` per client, :math:`\\theta_k`, each with the global model's shapes.
        num_examples : sequence of int
            The clients' training-set sizes :math:`n_k`.
        metrics : sequence of dict, optional
            The clients' fit metrics (QFedAvg needs ``"train_loss"``).

        Returns
        -------
        list of ndarray
            :math:`\\theta_{t+1}`, with the global model's shapes and floating dtypes.
        """
        raise NotImplementedError

    def reset(self) -> None:
        """Forget any server state (momentum, reference direction); stateless strategies do nothing."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


class FedAvg(Strategy):
    r"""Federated averaging: the example-weighted mean of the client models.

    .. math::

        \theta_{t+1} = \sum_{k \in S_t} \frac{n_k}{\sum_{j \in S_t} n_j}\, \theta_k .

    Examples
    --------
    >>> import numpy as np
    >>> FedAvg().aggregate([np.zeros(2)], [[np.ones(2)], [np.full(2, 4.0)]], [3, 1])[0]
    array([1.75, 1.75])
    """

    name = "FedAvg"

    def aggregate(self, global_params, client_params, num_examples, metrics=None):  # noqa: D102
        glob, clients, n = check_client_updates(global_params, client_params, num_examples)
        return _cast_like(_weighted_average(clients, n), glob)


class FedProx(FedAvg):
    r"""FedProx: FedAvg on the server; each client adds :math:`\frac{\mu}{2}\|\theta - \theta_t\|^2` to its loss.

    The strategy sends ``{"proximal-mu": mu}`` with the global parameters (Flower's key);
    :class:`~geode.federated.TorchClient` adds the proximal term when it is present. ``mu = 0`` is FedAvg.

    Parameters
    ----------
    proximal_mu : float
        :math:`\mu \ge 0`.
    """

    name = "FedProx"

    def __init__(self, proximal_mu: float = 0.01) -> None:
        self.proximal_mu = check_real("proximal_mu", proximal_mu, low=0.0)

    def configure_fit(self, server_round: int) -> dict[str, Any]:  # noqa: D102
        return {"proximal-mu": self.proximal_mu}


class FedAvgM(Strategy):
    r"""FedAvg with server momentum (Hsu et al., 2019), in Flower's convention.

    With the pseudo-gradient :math:`\Delta_t = \theta_t - \bar\theta_t` (:math:`\bar\theta_t` the FedAvg
    mean of the client models), the server keeps :math:`v_t = \beta v_{t-1} + \Delta_t` (with
    :math:`v_1 = \Delta_1`) and steps :math:`\theta_{t+1} = \theta_t - \eta\, v_t`. With :math:`\beta = 0`
    and :math:`\eta = 1` this is FedAvg.

    Parameters
    ----------
    server_learning_rate : float
        :math:`\eta > 0`.
    server_momentum : float
        :math:`\beta \in [0, 1)`.
    """

    name = "FedAvgM"

    def __init__(self, server_learning_rate: float = 1.0, server_momentum: float = 0.9) -> None:
        self.server_learning_rate = check_positive("server_learning_rate", server_learning_rate)
        self.server_momentum = check_real("server_momentum", server_momentum, low=0.0, high=1.0, high_inclusive=False)
        self._momentum: list[np.ndarray] | None = None

    def reset(self) -> None:  # noqa: D102
        self._momentum = None

    def aggregate(self, global_params, client_params, num_examples, metrics=None):  # noqa: D102
        glob, clients, n = check_client_updates(global_params, client_params, num_examples)
        mean = _weighted_average(clients, n)
        g64 = [np.asarray(g, dtype=np.float64) for g in glob]
        pseudo = [g - m for g, m in zip(g64, mean)]
        if self._momentum is None or [v.shape for v in self._momentum] != [p.shape for p in pseudo]:
            self._momentum = pseudo
        else:
            self._momentum = [self.server_momentum * v + p for v, p in zip(self._momentum, pseudo)]
        new = [g - self.server_learning_rate * v for g, v in zip(g64, self._momentum)]
        return _cast_like(new, glob)


class QFedAvg(Strategy):
    r"""q-FedAvg (Li et al., ICLR 2020): fair aggregation that up-weights clients with a high loss.

    With :math:`L = 1/\eta_{\text{client}}` (an estimate of the Lipschitz constant), the client's loss
    :math:`F_k` of the global model on its data and :math:`\Delta w_k = L(\theta_t - \theta_k)`:

    .. math::

        \Delta_k = F_k^{q}\, \Delta w_k, \qquad
        h_k = q F_k^{q-1} \|\Delta w_k\|^2 + L F_k^{q}, \qquad
        \theta_{t+1} = \theta_t - \frac{\sum_k \Delta_k}{\sum_k h_k}.

    ``q = 0`` gives the unweighted mean of the client models. Each client's ``metrics`` must hold
    ``"train_loss"`` (Flower's key); :class:`~geode.federated.TorchClient` reports the loss of the
    *received* global model on its training data, as q-FFL defines :math:`F_k(\theta_t)`.

    Parameters
    ----------
    client_learning_rate : float
        The clients' SGD step size (:math:`L = 1/\eta_{\text{client}}`).
    q : float
        Fairness exponent :math:`q \ge 0`.
    """

    name = "QFedAvg"

    def __init__(self, client_learning_rate: float, q: float = 0.1, train_loss_key: str = "train_loss") -> None:
        self.client_learning_rate = check_positive("client_learning_rate", client_learning_rate)
        self.q = check_real("q", q, low=0.0)
        if not isinstance(train_loss_key, str):
            raise TypeError(f"train_loss_key must be a str; got {type(train_loss_key).__name__}")
        self.train_loss_key = train_loss_key

    def aggregate(self, global_params, client_params, num_examples, metrics=None):  # noqa: D102
        glob, clients, _ = check_client_updates(global_params, client_params, num_examples)
        if metrics is None or len(metrics) != len(clients):
            raise ValueError(
                f"QFedAvg needs one metrics dict with {self.train_loss_key!r} per client; got "
                f"{'none' if metrics is None else len(metrics)} for {len(clients)} clients"
            )
        losses = []
        for i, m in enumerate(metrics):
            v = m.get(self.train_loss_key) if isinstance(m, Mapping) else None
            if v is None or isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v < 0:
                raise ValueError(f"metrics[{i}][{self.train_loss_key!r}] must be a finite loss >= 0; got {v!r}")
            losses.append(float(v))
        lip = 1.0 / self.client_learning_rate  # L
        f = np.asarray(losses) + 1e-10
        g64 = [np.asarray(g, dtype=np.float64) for g in glob]
        sum_delta = [np.zeros_like(g) for g in g64]
        sum_h = 0.0
        for k, p in enumerate(clients):
            grad = [lip * (g - np.asarray(a, dtype=np.float64)) for g, a in zip(g64, p)]  # Δw_k
            sq = float(sum(np.vdot(x, x) for x in grad))
            fq = f[k] ** self.q
            for s, x in zip(sum_delta, grad):
                s += fq * x
            sum_h += self.q * f[k] ** (self.q - 1.0) * sq + lip * fq
        return _cast_like([g - s / sum_h for g, s in zip(g64, sum_delta)], glob)
