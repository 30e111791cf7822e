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
"""

from __future__ import annotations

from typing import Any

import torch

from geode.core.validation import check_real
from geode.federated.clients import TorchClient, _fit_options
from geode.federated.rise.regularizers import (
    BLSCLoss,
    MRGALoss,
    PretrainedGeometry,
    feddecorr_loss,
    proto_kd_loss,
)
from geode.federated.strategies import FedAvg, NDArrays

__all__ = ["RISE", "FedDecorr", "GeometryClient", "ProtoKD"]


class RISE(FedAvg):
    r"""RISE: FedAvg aggregation, clients regularised by BLSC and MRGA (module docstring).

    Parameters
    ----------
    lambda_blsc : float
        Weight :math:`\lambda_b \ge 0` of the subspace-correction loss (0 ablates it).
    lambda_mrga : float
        Weight :math:`\lambda_m \ge 0` of the relation-graph loss (0 ablates it).

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


class FedDecorr(FedAvg):
    r"""FedDecorr (Shi et al., ICLR 2023): FedAvg, clients penalise :math:`\beta \|\mathrm{corr}(Z)\|_F^2/d^2`."""

    name = "FedDecorr"

    def __init__(self, beta: float = 0.1) -> None:
        self.beta = check_real("beta", beta, low=0.0)

    def configure_fit(self, server_round: int) -> dict[str, Any]:  # noqa: D102
        return {"feddecorr-beta": self.beta}


class ProtoKD(FedAvg):
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

        lam = {
            k: check_real(f"config[{k!r}]", config.get(k, 0.0), low=0.0)
            for k in ("rise-blsc", "rise-mrga", "feddecorr-beta", "proto-kd", "proximal-mu")
        }
        if not any(lam[k] > 0 for k in ("rise-blsc", "rise-mrga", "feddecorr-beta", "proto-kd")):
            return super().fit(parameters, config)
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
        return self.get_parameters(), n, {"train_loss": start_loss}
