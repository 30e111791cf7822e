r"""RISE as a server strategy plus a client trainer for the simulator (and Flower), with its baselines.

RISE changes the *client* objective; the server aggregates with FedAvg and broadcasts the regulariser
weights every round through ``configure_fit`` (like FedProx's ``"proximal-mu"``):

.. math:: L_k(\theta) = \mathrm{CE} + \lambda_b L_{\mathrm{BLSC}} + \lambda_m L_{\mathrm{MRGA}}
   \;[+ \beta L_{\mathrm{decorr}} + \lambda_{kd} L_{\mathrm{proto}} + \tfrac\mu2\|\theta - \theta_t\|^2],

per mini-batch, on the penultimate features of the client's network. :class:`GeometryClient` reads the
config keys ``"rise-blsc"``, ``"rise-mrga"``, ``"feddecorr-beta"``, ``"proto-kd"`` and ``"proximal-mu"``
(each 0 when absent); with all of them 0 its update is exactly :class:`~geode.federated.TorchClient`'s
(a test checks it), so ``RISE(0, 0)`` is FedAvg. The pre-trained geometry
(:class:`~geode.federated.rise.PretrainedGeometry`: prototypes, basis, profile) is broadcast once before
round 1 and held by the clients; Flower config values are scalars, so it does not travel per round.
Every strategy here is a :class:`~geode.federated.Strategy`, hence runs on Flower through
:func:`~geode.federated.to_flower`.

:meth:`RISE.prepare_geometry` does the set-up in one call: from the pre-trained model and the clients' data it
computes each client's feature statistics, aggregates them into the geometry and builds the
:class:`GeometryClient` s (a :class:`RISEFederation`). Because RISE acts only through the clients,
:class:`GeometryClient` reports the regulariser weights it applied in its fit metrics (the same keys), and
RISE, FedDecorr and ProtoKD warn (once per run) when a client's result does not confirm a non-zero weight: such
a client (a plain :class:`~geode.federated.TorchClient`, or a Flower client that ignores the keys) trained
plain FedAvg.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from geode.core.validation import check_real
from geode.federated.clients import TorchClient, _fit_options
from geode.federated.rise.regularizers import (
    BLSCLoss,
    MRGALoss,
    PretrainedGeometry,
    aggregate_geometry,
    client_feature_stats,
    feddecorr_loss,
    proto_kd_loss,
)
from geode.federated.strategies import FedAvg, NDArrays

__all__ = ["RISE", "FedDecorr", "GeometryClient", "ProtoKD", "RISEFederation"]

CLIENT_KEYS = ("rise-blsc", "rise-mrga", "feddecorr-beta", "proto-kd", "proximal-mu")
"""The config keys :class:`GeometryClient` reads (and reports back in its fit metrics)."""


class RISEFederation(NamedTuple):
    """What :meth:`RISE.prepare_geometry` returns: the geometry, the clients and the global model at round 0.

    Attributes
    ----------
    geometry : PretrainedGeometry
        The pre-trained geometry aggregated from every client's feature statistics.
    clients : list of GeometryClient
        One client per entry of ``client_data``, all sharing one copy of the model (never the caller's).
    initial_parameters : list of ndarray
        The pre-trained model's ``state_dict`` as numpy arrays (the simulator's ``initial_parameters``).
    """

    geometry: PretrainedGeometry
    clients: list[GeometryClient]
    initial_parameters: NDArrays


class _ClientSideStrategy(FedAvg):
    """FedAvg whose method lives in the clients: warn when client results do not confirm the config it sent."""

    _warned = False

    def reset(self) -> None:  # noqa: D102
        self._warned = False

    def aggregate(self, global_params, client_params, num_examples, metrics=None):  # noqa: D102
        self._check_clients_applied(metrics, len(client_params))
        return super().aggregate(global_params, client_params, num_examples, metrics)

    def _check_clients_applied(self, metrics: Sequence[Mapping[str, Any]] | None, n_clients: int) -> None:
        if metrics is not None and len(metrics) != n_clients:
            raise ValueError(
                f"metrics must hold one fit-metrics dict per entry of client_params; got {len(metrics)} "
                f"for {n_clients}"
            )
        sent = {k: float(v) for k, v in self.configure_fit(0).items() if float(v) > 0}
        if not sent or self._warned:
            return
        rows = list(metrics) if metrics is not None else [{}] * n_clients

        def confirms(m: Mapping[str, Any]) -> bool:
            try:
                return all(np.isclose(float(m[k]), v, rtol=1e-6, atol=0.0) for k, v in sent.items())
            except (KeyError, TypeError, ValueError):
                return False

        ignored = sum(not confirms(m or {}) for m in rows)
        if ignored:
            self._warned = True
            keys = ", ".join(repr(k) for k in sent)
            warnings.warn(
                f"{self.name}: {ignored} of {len(rows)} client results do not confirm the config {keys} in their fit "
                f"metrics, so those clients ignore {self.name}'s settings and trained plain FedAvg. Use "
                "GeometryClient (RISE.prepare_geometry builds them), or report the applied weights under the same "
                "keys in your client's fit metrics. (Warned once per run.)",
                UserWarning,
                stacklevel=3,
            )


class RISE(_ClientSideStrategy):
    r"""RISE: FedAvg aggregation, clients regularised by BLSC and MRGA (module docstring).

    Parameters
    ----------
    lambda_blsc : float
        Weight :math:`\lambda_b \ge 0` of the subspace-correction loss (0 ablates it).
    lambda_mrga : float
        Weight :math:`\lambda_m \ge 0` of the relation-graph loss (0 ablates it).

    Notes
    -----
    RISE acts through its clients: they must be :class:`GeometryClient` s (or any client that applies the
    ``"rise-blsc"`` / ``"rise-mrga"`` config keys and reports the weights it applied under the same keys in its
    fit metrics). :meth:`aggregate` warns once per run when a client result does not confirm them, since such a
    client trained plain FedAvg. :meth:`prepare_geometry` builds the geometry and the clients.

    Examples
    --------
    >>> RISE(0.5, 1.0).configure_fit(1)
    {'rise-blsc': 0.5, 'rise-mrga': 1.0}
    """

    name = "RISE"

    def __init__(self, lambda_blsc: float = 1.0, lambda_mrga: float = 1.0) -> None:
        self.lambda_blsc = check_real("lambda_blsc", lambda_blsc, low=0.0)
        self.lambda_mrga = check_real("lambda_mrga", lambda_mrga, low=0.0)

    def configure_fit(self, server_round: int) -> dict[str, Any]:  # noqa: D102
        return {"rise-blsc": self.lambda_blsc, "rise-mrga": self.lambda_mrga}

    @staticmethod
    def prepare_geometry(
        model: torch.nn.Sequential,
        client_data: Sequence[Sequence[Any]],
        *,
        rank: int | None = None,
        n_classes: int | None = None,
        tau: float = 0.1,
        lr: float = 0.01,
        epochs: int = 1,
        batch_size: int = 20,
        weight_decay: float = 0.0,
    ) -> RISEFederation:
        r"""The pre-trained geometry and the RISE clients, from a pre-trained model and the clients' data.

        The four steps in one call: (1) each client's penultimate features of the frozen pre-trained model
        (``model[:-1]`` in eval mode); (2) each client's statistics (:func:`client_feature_stats`: class counts
        and sums, :math:`\sum z z^\top`), computed where the data are; (3) the server's
        :func:`aggregate_geometry` (prototypes, top-``rank`` basis, energy profile); (4) one
        :class:`GeometryClient` per client holding that geometry. In a real deployment steps (1)-(2) run on
        the clients and only the statistics travel (through :func:`geode.federated.secure_sum` if wanted).

        Parameters
        ----------
        model : torch.nn.Sequential
            The pre-trained network; its last module is the classifier. It is copied, never modified.
        client_data : sequence of (x, y) or (x, y, x_test, y_test)
            Each client's training data (and optional local evaluation data), arrays or tensors.
        rank : int, optional
            BLSC's subspace rank :math:`r` (default ``min(8, d)``, the claim's value, ``d`` the feature width).
        n_classes : int, optional
            Number of classes (default: the classifier's ``out_features``, else the largest label + 1).
        tau, lr, epochs, batch_size, weight_decay
            As in :class:`GeometryClient`.

        Returns
        -------
        RISEFederation
            ``(geometry, clients, initial_parameters)``: pass ``clients`` and ``initial_parameters`` to
            :class:`~geode.federated.Simulator` with ``RISE(...)``.

        Examples
        --------
        >>> import numpy as np, torch
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
        >>> rng = np.random.default_rng(0)
        >>> data = [(rng.normal(size=(30, 5)), rng.integers(0, 3, 30)) for _ in range(2)]
        >>> fed = RISE.prepare_geometry(model, data, rank=4)
        >>> fed.geometry.prototypes.shape, fed.geometry.basis.shape, len(fed.clients)
        ((3, 8), (8, 4), 2)
        """
        if not isinstance(model, torch.nn.Sequential) or len(model) < 2:
            raise TypeError(
                "model must be an nn.Sequential of >= 2 modules whose last module is the classifier "
                f"(features = model[:-1]); got {type(model).__name__}"
            )
        if isinstance(client_data, (str, bytes)) or not isinstance(client_data, Sequence) or not client_data:
            raise ValueError(
                "client_data must be a non-empty sequence of (x, y) or (x, y, x_test, y_test), one a client"
            )
        rows = []
        for k, entry in enumerate(client_data):
            if isinstance(entry, (str, bytes)) or not isinstance(entry, Sequence) or len(entry) not in (2, 4):
                raise ValueError(f"client_data[{k}] must be (x, y) or (x, y, x_test, y_test)")
            rows.append(tuple(entry) if len(entry) == 4 else (entry[0], entry[1], None, None))
        template = copy.deepcopy(model)  # the clients overwrite their model's weights every round
        initial = [v.detach().cpu().numpy().copy() for v in model.state_dict().values()]
        labels = [np.asarray(y.cpu() if isinstance(y, torch.Tensor) else y).astype(np.int64) for _, y, _, _ in rows]
        if n_classes is None:
            out = getattr(model[-1], "out_features", None)
            n_classes = int(out) if out is not None else max(int(y.max()) for y in labels if y.size) + 1
        body = template[:-1]
        was_training = template.training
        template.eval()
        stats = []
        with torch.no_grad():
            for k, ((x, _, _, _), y) in enumerate(zip(rows, labels)):
                xt = torch.as_tensor(np.asarray(x.cpu() if isinstance(x, torch.Tensor) else x, dtype=np.float32))
                if not bool(torch.isfinite(xt).all()):
                    raise ValueError(f"client_data[{k}][0] (x) must contain only finite values (found NaN or inf)")
                try:
                    feats = body(xt).numpy()
                except RuntimeError as exc:
                    raise ValueError(
                        f"client_data[{k}][0] (x) of shape {tuple(xt.shape)} does not fit the model: {exc}"
                    ) from exc
                try:
                    stats.append(client_feature_stats(feats, y, n_classes))
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"client_data[{k}]: {exc}") from exc
        template.train(was_training)
        d = stats[0][1].shape[1]
        geometry = aggregate_geometry(stats, rank=min(8, d) if rank is None else rank)
        clients = [
            GeometryClient(
                template, x, y, xt, yt, geometry=geometry, tau=tau, lr=lr, epochs=epochs, batch_size=batch_size,
                weight_decay=weight_decay,
            )
            for x, y, xt, yt in rows
        ]  # fmt: skip
        return RISEFederation(geometry, clients, initial)


class FedDecorr(_ClientSideStrategy):
    r"""FedDecorr (Shi et al., ICLR 2023): FedAvg, clients penalise :math:`\beta \|\mathrm{corr}(Z)\|_F^2/d^2`."""

    name = "FedDecorr"

    def __init__(self, beta: float = 0.1) -> None:
        self.beta = check_real("beta", beta, low=0.0)

    def configure_fit(self, server_round: int) -> dict[str, Any]:  # noqa: D102
        return {"feddecorr-beta": self.beta}


class ProtoKD(_ClientSideStrategy):
    r"""Prototype KD (FedProto-style): FedAvg; clients pull features to the global prototypes (weight lambda)."""

    name = "ProtoKD"

    def __init__(self, lambda_kd: float = 1.0) -> None:
        self.lambda_kd = check_real("lambda_kd", lambda_kd, low=0.0)

    def configure_fit(self, server_round: int) -> dict[str, Any]:  # noqa: D102
        return {"proto-kd": self.lambda_kd}


class GeometryClient(TorchClient):
    r"""A :class:`~geode.federated.TorchClient` whose local loss adds the geometry regularisers.

    The model must be an ``nn.Sequential`` whose last module is the classifier: the features are the
    output of ``model[:-1]``.

    Parameters
    ----------
    model, x, y, x_test, y_test, lr, epochs, batch_size, weight_decay
        As in :class:`~geode.federated.TorchClient`.
    geometry : PretrainedGeometry
        The broadcast pre-trained geometry (feature dimension must match ``model[:-1]``'s output).
    tau : float
        MRGA's temperature :math:`\tau`.
    """

    def __init__(
        self,
        model: Any,
        x: Any,
        y: Any,
        x_test: Any = None,
        y_test: Any = None,
        *,
        geometry: PretrainedGeometry,
        tau: float = 0.1,
        lr: float = 0.01,
        epochs: int = 1,
        batch_size: int = 20,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(
            model, x, y, x_test, y_test, lr=lr, epochs=epochs, batch_size=batch_size, weight_decay=weight_decay
        )
        if not isinstance(model, torch.nn.Sequential) or len(model) < 2:
            raise TypeError("model must be an nn.Sequential of >= 2 modules (features = model[:-1])")
        if not isinstance(geometry, PretrainedGeometry):
            raise TypeError(f"geometry must be a PretrainedGeometry; got {type(geometry).__name__}")
        with torch.no_grad():
            d = int(model[:-1](self.x[:1]).shape[1])
        if geometry.prototypes.shape[1] != d:
            raise ValueError(f"geometry has feature dim {geometry.prototypes.shape[1]}; model[:-1] outputs {d}")
        if int(self.y.max()) >= geometry.prototypes.shape[0]:
            raise ValueError("y holds a class beyond geometry.prototypes' rows")
        self.blsc = BLSCLoss(geometry.basis, geometry.profile)
        self.mrga = MRGALoss(geometry.prototypes, tau=tau)
        self.prototypes = torch.as_tensor(geometry.prototypes, dtype=torch.float32)

    def fit(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[NDArrays, int, dict[str, Any]]:
        """Local SGD on the regularised loss; returns (parameters, examples, ``{"train_loss"}``)."""
        import torch.nn.functional as F

        lam = {k: check_real(f"config[{k!r}]", config.get(k, 0.0), low=0.0) for k in CLIENT_KEYS}
        if not any(lam[k] > 0 for k in CLIENT_KEYS[:-1]):
            params, n, metrics = super().fit(parameters, config)
            return params, n, {**metrics, **lam}
        self._load(parameters)
        lr, epochs, bs, _ = _fit_options(config, self.lr, self.epochs, self.batch_size)
        gen = torch.Generator().manual_seed(int(config.get("seed", 0)))
        model = self.model
        body, head = model[:-1], model[-1]
        model.train()
        with torch.no_grad():
            start_loss = float(F.cross_entropy(model(self.x), self.y))
        params = [p for p in model.parameters() if p.requires_grad]
        mu = lam["proximal-mu"]
        anchor = [p.detach().clone() for p in params] if mu > 0 else None
        opt = torch.optim.SGD(params, lr=lr, weight_decay=self.weight_decay)
        n = self.num_examples
        for _ in range(epochs):
            order = torch.randperm(n, generator=gen)
            for s in range(0, n, bs):
                idx = order[s : s + bs]
                z = body(self.x[idx])
                yb = self.y[idx]
                loss = F.cross_entropy(head(z), yb)
                if lam["rise-blsc"] > 0:
                    loss = loss + lam["rise-blsc"] * self.blsc(z)
                if lam["rise-mrga"] > 0:
                    loss = loss + lam["rise-mrga"] * self.mrga(z, yb)
                if lam["feddecorr-beta"] > 0:
                    loss = loss + lam["feddecorr-beta"] * feddecorr_loss(z)
                if lam["proto-kd"] > 0:
                    loss = loss + lam["proto-kd"] * proto_kd_loss(z, yb, self.prototypes)
                if anchor is not None:
                    loss = loss + 0.5 * mu * sum(((p - a) ** 2).sum() for p, a in zip(params, anchor))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        return self.get_parameters(), n, {"train_loss": start_loss, **lam}
