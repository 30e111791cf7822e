r"""RISE's experiment: a pre-trained MLP fine-tuned federatedly on label-skewed digits, RISE against baselines.

One seed of :func:`run_rise_experiment`:

1. scikit-learn's digits (1,797 8x8 images, offline) split stratified into train (70 %), validation
   (10 %) and test (20 %); a balanced "public" share of the training split (``public_fraction``)
   pre-trains an MLP 64-64-32-10 centrally (Adam, ``pretrain_epochs``); the rest is partitioned among
   ``n_clients`` clients with Dirichlet(``alpha``) label skew;
2. the server aggregates per-client statistics of the frozen pre-trained features (32-d penultimate
   layer) into the :class:`~geode.federated.rise.PretrainedGeometry` (prototypes, top-``rank``
   covariance basis and profile);
3. every method runs ``rounds`` rounds of the simulator from the pre-trained weights, all clients every
   round, client SGD (``lr``, ``local_epochs``, ``batch_size``) through
   :class:`~geode.federated.rise.GeometryClient`;
4. equal tuning (:func:`geode.claims.tune`, the same budget for every method, validation accuracy of the
   global model): FedAvg's server step, FedProx's :math:`\mu`, ProtoKD's :math:`\lambda`, FedDecorr's
   :math:`\beta`, RISE's :math:`\lambda_b = \lambda_m`;
5. at RISE's selection, its two ablations (:math:`\lambda_b = 0`, :math:`\lambda_m = 0`) and two
   negative controls: the selected FedAvg and the selected RISE re-run with another simulator seed
   (other local shuffles: the noise floor of a difference between two runs).

Reported per method: test accuracy of the global model and the effective rank
(:func:`geode.core.effective_rank`) of its centred penultimate test features.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from geode.claims.tuning import tune
from geode.core import effective_rank
from geode.core.validation import check_int, check_positive
from geode.federated.partition import dirichlet_partition
from geode.federated.rise.regularizers import aggregate_geometry, client_feature_stats
from geode.federated.rise.strategy import RISE, FedDecorr, GeometryClient, ProtoKD
from geode.federated.simulator import Simulator
from geode.federated.strategies import FedAvgM, FedProx, Strategy

__all__ = ["METHODS", "RiseSetup", "run_rise_experiment"]

METHODS = ("FedAvg", "FedProx", "ProtoKD", "FedDecorr", "RISE")


@dataclass(frozen=True)
class RiseSetup:
    """One configuration of the experiment (defaults: quick mode).

    Attributes
    ----------
    n_clients, rounds, local_epochs, batch_size : int
    alpha : float
        Dirichlet label-skew concentration.
    lr : float
        Client SGD step.
    hidden : tuple of int
        MLP hidden widths (the last is the feature dimension).
    rank : int
        BLSC's principal-subspace rank :math:`r`.
    tau : float
        MRGA's temperature.
    pretrain_epochs : int
        Centralised Adam epochs on the public split.
    public_fraction : float
        Share of the training split held out, class-balanced, as the public pre-training set.
    grids : dict
        Every method's validation grid (equal budget).
    budget, extend : int
        Configurations per method, and trials past a grid's edge (:func:`geode.claims.tune`).
    """

    n_clients: int = 10
    alpha: float = 0.05
    rounds: int = 15
    local_epochs: int = 3
    batch_size: int = 32
    lr: float = 0.05
    hidden: tuple[int, ...] = (64, 32)
    rank: int = 8
    tau: float = 0.1
    pretrain_epochs: int = 30
    public_fraction: float = 0.05
    budget: int = 3
    extend: int = 1
    grids: dict[str, list[dict[str, float]]] = field(
        default_factory=lambda: {
            "FedAvg": [{"server_lr": v} for v in (0.5, 1.0, 2.0)],
            "FedProx": [{"mu": v} for v in (0.01, 0.1, 1.0)],
            "ProtoKD": [{"lambda_kd": v} for v in (0.01, 0.1, 1.0)],
            "FedDecorr": [{"beta": v} for v in (0.1, 1.0, 10.0)],
            "RISE": [{"lambda_blsc": v, "lambda_mrga": v} for v in (0.3, 1.0, 3.0)],
        }
    )


def _strategy(method: str, p: dict[str, float]) -> Strategy:
    if method == "FedAvg":
        return FedAvgM(server_learning_rate=p["server_lr"], server_momentum=0.0)
    if method == "FedProx":
        return FedProx(p["mu"])
    if method == "ProtoKD":
        return ProtoKD(p["lambda_kd"])
    if method == "FedDecorr":
        return FedDecorr(p["beta"])
    if method == "RISE":
        return RISE(p["lambda_blsc"], p["lambda_mrga"])
    raise ValueError(f"method must be one of {METHODS}; got {method!r}")


def _data(seed: int, public_fraction: float) -> dict[str, np.ndarray]:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    y = y.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, stratify=y, random_state=seed)
    x_tr, x_va, y_tr, y_va = train_test_split(x_tr, y_tr, test_size=0.125, stratify=y_tr, random_state=seed)
    x_cl, x_pub, y_cl, y_pub = train_test_split(
        x_tr, y_tr, test_size=public_fraction, stratify=y_tr, random_state=seed
    )
    return {"x_pub": x_pub, "y_pub": y_pub, "x_cl": x_cl, "y_cl": y_cl, "x_va": x_va, "y_va": y_va,
            "x_te": x_te, "y_te": y_te}  # fmt: skip


def _pretrain(x: np.ndarray, y: np.ndarray, hidden: tuple[int, ...], epochs: int, seed: int) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    layers: list[torch.nn.Module] = []
    d = x.shape[1]
    for h in hidden:
        layers += [torch.nn.Linear(d, h), torch.nn.ReLU()]
        d = h
    model = torch.nn.Sequential(*layers, torch.nn.Linear(d, int(y.max()) + 1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(len(yt), generator=gen)
        for s in range(0, len(yt), 32):
            idx = order[s : s + 32]
            loss = torch.nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def _evaluate(
    model: torch.nn.Sequential, params: list[np.ndarray], x: np.ndarray, y: np.ndarray
) -> tuple[float, float]:
    model.load_state_dict({k: torch.as_tensor(a) for k, a in zip(model.state_dict(), params)})
    with torch.no_grad():
        xt = torch.as_tensor(x)
        z = model[:-1](xt)
        acc = float((model[-1](z).argmax(1) == torch.as_tensor(y)).double().mean())
        er = float(effective_rank((z - z.mean(0)).numpy().astype(np.float64)))
    return acc, er


def run_rise_experiment(setup: RiseSetup, seed: int) -> dict[str, Any]:
    """One seed of the experiment (module docstring); returns per-method test and validation numbers."""
    seed = check_int("seed", seed, low=0)
    check_positive("alpha", setup.alpha)
    d = _data(seed, setup.public_fraction)
    model = _pretrain(d["x_pub"], d["y_pub"], setup.hidden, setup.pretrain_epochs, seed)
    init = [v.detach().numpy().copy() for v in model.state_dict().values()]
    n_classes = int(d["y_cl"].max()) + 1
    parts = dirichlet_partition(d["y_cl"], setup.n_clients, setup.alpha, min_size=setup.batch_size // 2, seed=seed)
    with torch.no_grad():
        feats = model[:-1](torch.as_tensor(d["x_cl"])).numpy()
    geometry = aggregate_geometry(
        [client_feature_stats(feats[p], d["y_cl"][p], n_classes) for p in parts], rank=setup.rank
    )
    clients = [
        GeometryClient(
            model,
            d["x_cl"][p],
            d["y_cl"][p],
            geometry=geometry,
            tau=setup.tau,
            lr=setup.lr,
            epochs=setup.local_epochs,
            batch_size=setup.batch_size,
        )
        for p in parts
    ]
    evalm = torch.nn.Sequential(*[m for m in model])  # the clients overwrite `model`; evaluation reloads it

    def train(method: str, p: dict[str, float], sim_seed: int) -> list[np.ndarray]:
        sim = Simulator(clients, _strategy(method, p), init, clients_per_round=len(clients), seed=sim_seed)
        return sim.run(setup.rounds, eval_every=setup.rounds).parameters

    def score(method: str, p: dict[str, Any]) -> tuple[float, Any]:
        params = train(method, p, seed)
        return _evaluate(evalm, params, d["x_va"], d["y_va"])[0], params

    res = tune(score, setup.grids, budget=setup.budget, extend=setup.extend, seed=seed)
    out: dict[str, Any] = {"tuned": res, "test": {}, "val": {}}
    for m in METHODS:
        out["test"][m] = _evaluate(evalm, res.payload(m), d["x_te"], d["y_te"])
        out["val"][m] = res.score(m)
    sel = res.params("RISE")
    runs = {
        "RISE-w/o-BLSC": ("RISE", {**sel, "lambda_blsc": 0.0}, seed),
        "RISE-w/o-MRGA": ("RISE", {**sel, "lambda_mrga": 0.0}, seed),
        "FedAvg-resampled": ("FedAvg", res.params("FedAvg"), seed + 1000),
        "RISE-resampled": ("RISE", sel, seed + 1000),
    }
    for name, (m, p, s) in runs.items():
        out["test"][name] = _evaluate(evalm, train(m, p, s), d["x_te"], d["y_te"])
    out["test"]["pretrained"] = _evaluate(evalm, init, d["x_te"], d["y_te"])
    out["client_sizes"] = [len(p) for p in parts]
    out["classes_per_client"] = [int(np.unique(d["y_cl"][p]).size) for p in parts]
    return out
