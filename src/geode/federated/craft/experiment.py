r"""CRAFT's experiment: label-skewed federated classification, CRAFT against FedAvg and the fairness baselines.

One seed of :func:`run_fl_benchmark` splits a data set into train / validation / test (stratified),
partitions the training set among clients with Dirichlet label skew, and trains one MLP per method
with the in-process simulator (all sampled clients of a round trained together by
:class:`~geode.federated.BatchedTorchClients`). Per-client accuracy is the global model's per-class
test accuracy reweighted by each client's label mix (:func:`~geode.federated.label_mix_accuracy`);
a method is summarised by the mean, worst, 10th percentile and standard deviation across clients.

Equal tuning (:func:`geode.claims.tune`): every method gets the same budget of configurations of its
server knob, and the one with the best *validation* mean client accuracy is kept (the test set never
picks anything): FedAvg's server learning rate (FedAvg with a server step, i.e. FedAvgM with momentum
0), CRAFT's :math:`\eta_s`, FedAvgM's momentum (server lr 1), QFedAvg's :math:`q`, FedProx's
:math:`\mu`. Two negative controls come with every seed: the selected FedAvg re-run with another
client-sampling seed (the noise floor of a difference between two runs) and the untrained model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geode.claims.tuning import tune
from geode.core.validation import check_choice, check_int, check_positive
from geode.federated._checks import check_float_fields
from geode.federated.clients import BatchedTorchClients
from geode.federated.craft.aggregation import CRAFT, module_groups
from geode.federated.partition import dirichlet_partition, label_distribution
from geode.federated.simulator import Simulator, disparity, label_mix_accuracy
from geode.federated.strategies import FedAvg, FedAvgM, FedProx, QFedAvg, Strategy
from geode.models.mlp import make_mlp

__all__ = ["FLSetup", "load_fl_dataset", "make_mlp", "run_fl_benchmark"]

DATASETS = ("digits", "fashion-mnist")


_NON_NEGATIVE = (
    "fedavgm_momenta",
    "qfedavg_qs",
    "fedprox_mus",
)  # float settings that may be 0 (the others must be > 0)


@dataclass(frozen=True)
class FLSetup:
    r"""One federated benchmark configuration (defaults: the research notes' digits setup).

    Attributes
    ----------
    dataset : {"digits", "fashion-mnist"}
    n_clients, clients_per_round, rounds : int
        Population, clients sampled per round, communication rounds.
    alpha : float
        Dirichlet label-skew concentration.
    min_client_size : int
        Smallest allowed client (passed to :func:`~geode.federated.dirichlet_partition`).
    hidden : tuple of int
        MLP hidden widths.
    lr, lr_decay, batch_size, local_epochs : float, float, int, int
        Client SGD: step size ``lr * lr_decay**round`` (the CRAFT repository's 0.999 decay).
    fedavg_server_lrs, craft_lrs, fedavgm_momenta, qfedavg_qs, fedprox_mus : tuple of float
        The validation grids (FedAvg's server step, CRAFT's :math:`\eta_s`, FedAvgM's momentum, q-FFL's
        :math:`q`, FedProx's :math:`\mu`).
    budget, extend : int
        Configurations per method, and extra trials past a grid's edge (:func:`geode.claims.tune`).
    max_train : int or None
        Subsample the training pool (Fashion-MNIST) to this many examples.
    eval_every : int
        Rounds between validation/test evaluations (for the curves).
    """

    dataset: str = "digits"
    n_clients: int = 60
    clients_per_round: int = 30
    rounds: int = 150
    alpha: float = 0.1
    min_client_size: int = 2
    hidden: tuple[int, ...] = (32,)
    lr: float = 0.05
    lr_decay: float = 0.999
    batch_size: int = 10
    local_epochs: int = 1
    fedavg_server_lrs: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0)
    craft_lrs: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0, 3.0)
    fedavgm_momenta: tuple[float, ...] = (0.8, 0.9, 0.95, 0.97, 0.99)
    qfedavg_qs: tuple[float, ...] = (0.01, 0.1, 0.5, 1.0, 5.0)
    fedprox_mus: tuple[float, ...] = (0.001, 0.01, 0.1, 0.3, 1.0)
    budget: int = 5
    extend: int = 1
    max_train: int | None = None
    eval_every: int = 10
    ablations: bool = True

    def __post_init__(self) -> None:
        """Reject a NaN, infinite, non-positive or non-numeric float setting, naming the field."""
        check_float_fields(self, _NON_NEGATIVE)


def load_fl_dataset(name: str, seed: int, max_train: int | None = None) -> dict[str, np.ndarray]:
    """Train (70 %), validation (10 %) and test (20 %) splits, stratified, features scaled to [0, 1].

    ``digits`` is scikit-learn's 8x8 digits (1,797 images, offline); ``fashion-mnist`` needs the Debian
    package ``dataset-fashion-mnist`` (its 70,000 images pooled, then split the same way; 28x28 images
    are average-pooled to 14x14 to keep the MLP small).
    """
    from sklearn.model_selection import train_test_split

    check_choice("name", name, DATASETS)
    if name == "digits":
        from sklearn.datasets import load_digits

        x, y = load_digits(return_X_y=True)
        x = x / 16.0
    else:
        from geode.data.loaders import load_fashion_mnist

        xa, ya = load_fashion_mnist("train")
        xb, yb = load_fashion_mnist("test")
        x = np.concatenate([xa, xb]).astype(np.float32) / 255.0
        x = x.reshape(-1, 14, 2, 14, 2).mean(axis=(2, 4)).reshape(len(x), -1)
        y = np.concatenate([ya, yb])
    y = np.asarray(y, dtype=np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, stratify=y, random_state=seed)
    x_tr, x_va, y_tr, y_va = train_test_split(x_tr, y_tr, test_size=0.125, stratify=y_tr, random_state=seed)
    if max_train is not None and len(y_tr) > max_train:
        keep, _ = train_test_split(np.arange(len(y_tr)), train_size=max_train, stratify=y_tr, random_state=seed)
        x_tr, y_tr = x_tr[keep], y_tr[keep]
    f32 = np.float32
    return {
        "x_train": x_tr.astype(f32),
        "y_train": y_tr,
        "x_val": x_va.astype(f32),
        "y_val": y_va,
        "x_test": x_te.astype(f32),
        "y_test": y_te,
        "n_classes": np.int64(int(y.max()) + 1),
    }


@dataclass
class MethodResult:
    """One trained method: test and validation summaries, its hyper-parameter and curves."""

    name: str
    hyper: float
    test: dict[str, float]
    val: dict[str, float]
    client_acc: np.ndarray
    curve_rounds: np.ndarray
    curve_mean: np.ndarray
    curve_worst: np.ndarray
    extra: dict[str, float] = field(default_factory=dict)


#: method -> (its knob, the FLSetup field holding the knob's grid)
KNOBS: dict[str, tuple[str, str]] = {
    "FedAvg": ("server_lr", "fedavg_server_lrs"),
    "CRAFT": ("server_lr", "craft_lrs"),
    "FedAvgM": ("momentum", "fedavgm_momenta"),
    "QFedAvg": ("q", "qfedavg_qs"),
    "FedProx": ("mu", "fedprox_mus"),
}


def grids(setup: FLSetup) -> dict[str, dict[str, list[float]]]:
    """The tuning grid of every method (one knob each), from ``setup``."""
    return {m: {knob: list(getattr(setup, field))} for m, (knob, field) in KNOBS.items()}


def _strategy(setup: FLSetup, groups: list[list[int]], method: str, value: float) -> Strategy:
    if method == "FedAvg":
        return FedAvg() if value == 1.0 else FedAvgM(value, 0.0)  # FedAvg with a server step size
    if method == "CRAFT":
        return CRAFT(value, groups=groups)
    if method == "FedAvgM":
        return FedAvgM(1.0, value)
    if method == "QFedAvg":
        return QFedAvg(setup.lr, value)
    if method == "FedProx":
        return FedProx(value)
    raise ValueError(f"method must be one of {sorted(KNOBS)}; got {method!r}")


def run_fl_benchmark(setup: FLSetup, seed: int) -> dict[str, Any]:
    r"""Train every method of ``setup`` for one seed; return the validation-selected result per method.

    Returns
    -------
    dict with ``methods`` (name -> :class:`MethodResult` at the validation-selected value of its knob),
    ``all`` (every configuration tried), ``tuned`` (the :class:`~geode.claims.tuning.TuneResult`),
    ``ablations`` (CRAFT with weight and bias in separate groups, and with the whole model as one group,
    at the selected :math:`\eta_s`), ``controls`` (``"FedAvg-resampled"``: the selected FedAvg with
    another client-sampling seed), ``untrained`` (the initial model's test and validation summaries) and
    ``client_sizes``. CRAFT results carry ``extra``: ``alignment_min`` (the smallest client alignment
    :math:`u_i^\top x^\star` over all rounds and groups), ``feasible_fraction`` (the share of group
    aggregations whose constraints held exactly) and the median, 99th percentile and maximum of the
    direction norms :math:`\|x_q^\star\|` (the step is :math:`\eta_s` times it).
    """
    import torch

    seed = check_int("seed", seed, low=0)
    check_positive("setup.alpha", setup.alpha)
    torch.set_num_threads(1)
    data = load_fl_dataset(setup.dataset, seed, setup.max_train)
    n_classes = int(data["n_classes"])
    parts = dirichlet_partition(
        data["y_train"], setup.n_clients, setup.alpha, min_size=setup.min_client_size, seed=seed
    )
    mix = label_distribution(data["y_train"], parts, n_classes)
    model = make_mlp(data["x_train"].shape[1], setup.hidden, n_classes, seed)
    init = [v.detach().numpy().copy() for v in model.state_dict().values()]
    keys = list(model.state_dict().keys())
    pool = BatchedTorchClients(
        model,
        [(data["x_train"][p], data["y_train"][p]) for p in parts],
        lr=setup.lr,
        epochs=setup.local_epochs,
        batch_size=setup.batch_size,
    )
    xv, xt = torch.from_numpy(data["x_val"]), torch.from_numpy(data["x_test"])

    def predict(params: list[np.ndarray], x: Any) -> np.ndarray:
        model.load_state_dict({k: torch.as_tensor(a) for k, a in zip(keys, params)})
        with torch.no_grad():
            return model(x).argmax(1).numpy()

    def client_acc(params: list[np.ndarray], split: str) -> np.ndarray:
        x = xv if split == "val" else xt
        return label_mix_accuracy(data[f"y_{split}"], predict(params, x), mix)

    def evaluate(_: int, params: list[np.ndarray]) -> dict[str, float]:
        d = disparity(client_acc(params, "test"))
        return {"test_mean": d["mean"], "test_worst": d["worst"]}

    def train(name: str, hyper: float, strategy: Strategy, sim_seed: int | None = None) -> MethodResult:
        sim = Simulator(
            pool,
            strategy,
            init,
            clients_per_round=setup.clients_per_round,
            seed=seed if sim_seed is None else sim_seed,
            fit_config=lambda r: {"lr": setup.lr * setup.lr_decay ** (r - 1)},
        )
        align_min = np.inf
        feasible: list[bool] = []
        norms: list[float] = []
        hist_rounds = []
        for t in range(setup.rounds):
            rec = sim.fit_round()
            if isinstance(strategy, CRAFT):
                feasible += strategy.last_feasible
                norms += strategy.last_direction_norms
                for a in strategy.last_alignment:
                    if a.size:
                        align_min = min(align_min, float(a.min()))
            if (t + 1) % setup.eval_every == 0 or t + 1 == setup.rounds:
                rec.eval_metrics = evaluate(rec.server_round, sim.parameters)
            hist_rounds.append(rec)
        params = sim.parameters
        acc_test = client_acc(params, "test")
        evald = [r for r in hist_rounds if r.eval_metrics]
        extra = (
            {
                "alignment_min": align_min,
                "feasible_fraction": float(np.mean(feasible)) if feasible else 0.0,
                "direction_norm_median": float(np.median(norms)) if norms else 0.0,
                "direction_norm_p99": float(np.quantile(norms, 0.99)) if norms else 0.0,
                "direction_norm_max": float(np.max(norms)) if norms else 0.0,
            }
            if isinstance(strategy, CRAFT)
            else {}
        )
        return MethodResult(
            name,
            hyper,
            disparity(acc_test),
            disparity(client_acc(params, "val")),
            acc_test,
            np.array([r.server_round for r in evald]),
            np.array([r.eval_metrics["test_mean"] for r in evald]),
            np.array([r.eval_metrics["test_worst"] for r in evald]),
            extra,
        )

    groups = module_groups(model)
    every: list[MethodResult] = []

    def fit(method: str, params: dict[str, Any]) -> tuple[float, MethodResult]:
        value = float(params[KNOBS[method][0]])
        res = train(method, value, _strategy(setup, groups, method, value))
        every.append(res)
        return res.val["mean"], res

    tuned = tune(
        fit, grids(setup), budget=setup.budget, extend=setup.extend, limits={"momentum": (0.0, 0.995)}, seed=seed
    )
    selected: dict[str, MethodResult] = {m: tuned.payload(m) for m in KNOBS}
    ablations: dict[str, MethodResult] = {}
    if setup.ablations:
        eta = selected["CRAFT"].hyper
        ablations["CRAFT-split-bias"] = train(
            "CRAFT-split-bias", eta, CRAFT(eta, groups=[[i] for i in range(len(init))])
        )
        ablations["CRAFT-one-group"] = train("CRAFT-one-group", eta, CRAFT(eta, groups=None))
    # negative controls: the selected FedAvg with another client-sampling seed, and the untrained model
    lr_fedavg = selected["FedAvg"].hyper
    controls = {
        "FedAvg-resampled": train(
            "FedAvg-resampled", lr_fedavg, _strategy(setup, groups, "FedAvg", lr_fedavg), sim_seed=seed + 7919
        ),
    }
    return {
        "methods": selected,
        "all": every,
        "ablations": ablations,
        "controls": controls,
        "untrained": {"test": disparity(client_acc(init, "test")), "val": disparity(client_acc(init, "val"))},
        "tuned": tuned,
        "client_sizes": np.array([len(p) for p in parts]),
    }
