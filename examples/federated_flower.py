"""A complete Flower app with geode's CRAFT: a ClientApp and a ServerApp, run by Flower's simulation engine.

What it shows: the server side is one line, ``to_flower(CRAFT(...))``, a real Flower strategy (a subclass of
``flwr.serverapp.strategy.FedAvg`` whose aggregation is CRAFT's), started inside a ``ServerApp`` with
``strategy.start(grid, initial_arrays, num_rounds, ...)``. The client side is an ordinary Flower ``ClientApp``:
its ``train`` function loads the received ``ArrayRecord`` into a torch model, trains it on the node's own
data (here with geode's ``TorchClient``; any training loop works) and replies with

- an ``ArrayRecord`` of the trained arrays (same keys and shapes as the global model), and
- a ``MetricRecord`` holding ``"num-examples"`` (CRAFT's and FedAvg's weights) and ``"train_loss"``.

Each simulated node makes its own share of a non-IID data set (scikit-learn's ``make_classification``,
Dirichlet label skew) from its ``partition-id``. The server evaluates the global model centrally each round
(``evaluate_fn``) and the clients evaluate it on their local test data (``evaluate``; "local acc." is their
example-weighted mean after the last round). CRAFT's server step is not scaled by the client updates, so its
``server_lr`` needs a sweep (``examples/federated.py`` shows one); 1.0 is used here. The full size compares
CRAFT with plain FedAvg under the same Flower machinery; ``--smoke`` runs CRAFT only, 2 nodes, 2 rounds.

Run, in the Flower environment (Flower pins older typer/rich and its own Ray, so it lives apart)::

    make .venv-flower/bin/.installed                  # once: .venv-flower with geode[flower]
    .venv-flower/bin/python examples/federated_flower.py            # about a minute
    .venv-flower/bin/python examples/federated_flower.py --smoke    # the smallest size

Needs the ``flower`` extra (``pip install "geode[flower]" "flwr[simulation]"``); without flwr (or Ray) it
prints "skipped: needs ..." and exits with code 77. No network: Ray runs locally.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SKIP = 77
N_FEATURES, N_CLASSES = 20, 6


def client_data(partition_id: int, num_partitions: int, seed: int, n_samples: int) -> tuple[np.ndarray, ...]:
    """Node ``partition_id``'s train and test data: its Dirichlet(0.3) share of one synthetic data set."""
    from sklearn.datasets import make_classification

    from geode.federated import dirichlet_partition

    x, y = make_classification(
        n_samples=n_samples, n_features=N_FEATURES, n_informative=12, n_redundant=4, n_classes=N_CLASSES,
        n_clusters_per_class=2, class_sep=1.5, random_state=seed,
    )  # fmt: skip
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    parts = dirichlet_partition(y, num_partitions, 0.3, min_size=20, seed=seed)
    idx = np.random.default_rng(seed + partition_id).permutation(parts[partition_id])
    cut = int(0.8 * len(idx))
    return x[idx[:cut]], y[idx[:cut]], x[idx[cut:]], y[idx[cut:]]


def central_test(seed: int, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """A held-out test set from the same distribution (another draw of the generator's noise)."""
    from sklearn.datasets import make_classification

    x, y = make_classification(
        n_samples=n_samples, n_features=N_FEATURES, n_informative=12, n_redundant=4, n_classes=N_CLASSES,
        n_clusters_per_class=2, class_sep=1.5, random_state=seed,
    )  # fmt: skip
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    return x[-n_samples // 5 :], y[-n_samples // 5 :]


def make_model(seed: int = 0):
    import torch

    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(N_FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, N_CLASSES))


def build_apps(strategy_name: str, num_nodes: int, num_rounds: int, seed: int, n_samples: int, out_path: str):
    """The ClientApp and the ServerApp (built in a function: Ray ships them to its workers by value)."""
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp

    client_app = ClientApp()

    @client_app.train()
    def train(msg: Message, context: Context) -> Message:
        import torch

        from geode.federated import TorchClient

        torch.set_num_threads(1)
        pid, n_nodes = int(context.node_config["partition-id"]), int(context.node_config["num-partitions"])
        x, y, _, _ = client_data(pid, n_nodes, seed, n_samples)
        config = dict(msg.content["config"])  # "lr", "local-epochs" from the server; CRAFT adds nothing
        client = TorchClient(make_model(), x, y, lr=0.05, batch_size=32)
        params, n, metrics = client.fit(msg.content["arrays"].to_numpy_ndarrays(), {**config, "seed": pid})
        reply = RecordDict({
            "arrays": ArrayRecord(params),  # the trained arrays, in the global model's order
            "metrics": MetricRecord({"num-examples": n, "train_loss": metrics["train_loss"]}),
        })  # fmt: skip
        return Message(content=reply, reply_to=msg)

    @client_app.evaluate()
    def evaluate(msg: Message, context: Context) -> Message:
        from geode.federated import TorchClient

        pid, n_nodes = int(context.node_config["partition-id"]), int(context.node_config["num-partitions"])
        x, y, x_test, y_test = client_data(pid, n_nodes, seed, n_samples)
        loss, n, metrics = TorchClient(make_model(), x, y, x_test, y_test).evaluate(
            msg.content["arrays"].to_numpy_ndarrays(), {}
        )
        reply = MetricRecord({"num-examples": n, "local_loss": loss, "local_accuracy": metrics["accuracy"]})
        return Message(content=RecordDict({"metrics": reply}), reply_to=msg)

    server_app = ServerApp()

    @server_app.main()
    def main(grid: Grid, context: Context) -> None:
        import torch

        from geode.federated import CRAFT, FedAvg, module_groups, to_flower

        model = make_model(seed)
        inner = CRAFT(server_lr=1.0, groups=module_groups(model)) if strategy_name == "CRAFT" else FedAvg()
        strategy = to_flower(
            inner, fraction_train=1.0, fraction_evaluate=1.0,
            min_train_nodes=num_nodes, min_evaluate_nodes=num_nodes, min_available_nodes=num_nodes,
        )  # fmt: skip
        x_te, y_te = central_test(seed, n_samples)

        def central_eval(server_round: int, arrays: ArrayRecord) -> MetricRecord:
            net = make_model()
            net.load_state_dict(arrays.to_torch_state_dict())
            with torch.no_grad():
                acc = float((net(torch.as_tensor(x_te)).argmax(1).numpy() == y_te).mean())
            return MetricRecord({"accuracy": acc})

        result = strategy.start(
            grid=grid,
            initial_arrays=ArrayRecord(model.state_dict()),
            num_rounds=num_rounds,
            train_config=ConfigRecord({"lr": 0.05, "local-epochs": 1}),
            evaluate_fn=central_eval,
        )
        summary = {
            "central": {int(r): dict(m) for r, m in result.evaluate_metrics_serverapp.items()},
            "clients": {int(r): dict(m) for r, m in result.evaluate_metrics_clientapp.items()},
            "excluded": [list(e) for e in strategy.excluded],
            "alignment": [a.tolist() for a in getattr(inner, "last_alignment", [])],
        }
        Path(out_path).write_text(json.dumps(summary))

    return client_app, server_app


def run(strategy_name: str, num_nodes: int, num_rounds: int, seed: int, n_samples: int) -> dict:
    """One Flower simulation; returns the ServerApp's summary."""
    from flwr.simulation import run_simulation

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "summary.json"
        client_app, server_app = build_apps(strategy_name, num_nodes, num_rounds, seed, n_samples, str(out))
        run_simulation(
            server_app=server_app,
            client_app=client_app,
            num_supernodes=num_nodes,
            backend_config={
                "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                "init_args": {"num_cpus": 1, "include_dashboard": False},
            },
        )
        if not out.is_file():
            raise SystemExit(f"the {strategy_name} ServerApp wrote no summary: see Flower's log above")
        return json.loads(out.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="CRAFT only, 2 nodes, 2 rounds")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    missing = [m for m in ("flwr", "ray") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"skipped: needs the flower extra ({', '.join(missing)} missing): "
              'pip install "geode[flower]" "flwr[simulation]" in its own environment '
              "(make .venv-flower/bin/.installed)")  # fmt: skip
        return SKIP
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    t0 = time.time()
    nodes, rounds, n_samples = (2, 2, 800) if args.smoke else (6, 10, 3000)
    strategies = ("CRAFT",) if args.smoke else ("CRAFT", "FedAvg")
    results = {name: run(name, nodes, rounds, args.seed, n_samples) for name in strategies}
    print(f"\nFlower simulation: {nodes} nodes, {rounds} rounds, Dirichlet(0.3) label skew")
    print(f"{'strategy':<8} {'local acc.':>10}  central accuracy, rounds 0..{rounds}")
    for name, res in results.items():
        central = [res["central"][r]["accuracy"] for r in sorted(res["central"], key=int)]
        last = res["clients"][max(res["clients"], key=int)] if res["clients"] else {}
        local = last.get("local_accuracy", float("nan"))
        print(f"{name:<8} {local:>10.3f}  {' '.join(f'{a:.2f}' for a in central)}")
        if res["alignment"]:
            a = np.concatenate([np.asarray(x) for x in res["alignment"]])
            state = "all > 0: conflict-free" if a.min() > 0 else "some <= 0: inconsistent constraints"
            print(f"         CRAFT's last alignments u_i . x* in [{a.min():.3f}, {a.max():.3f}] ({state})")
        if res["excluded"]:
            print(f"         excluded replies: {res['excluded']}")
    print(f"done in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
