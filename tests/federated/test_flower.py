"""The Flower adapter: a geode strategy wrapped as a real Flower strategy (skipped when flwr is absent)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from geode.federated import FedAvg, Simulator, to_flower
from geode.federated.craft import CRAFT
from geode.federated.rise import RISE

HAVE_FLWR = importlib.util.find_spec("flwr") is not None


@pytest.mark.skipif(HAVE_FLWR, reason="flwr is installed")
def test_to_flower_without_flwr_names_the_extra():
    with pytest.raises(ImportError, match=r"geode\[flower\]"):
        to_flower(FedAvg())


def test_to_flower_rejects_non_strategies():
    with pytest.raises(TypeError, match="Strategy"):
        to_flower("FedAvg")


class _PullClient:
    """Moves every weight halfway to (partition id + 1): the same rule as the Flower ClientApp below."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def fit(self, params, config):
        return [a + 0.5 * (np.full_like(a, self.pid + 1.0) - a) for a in params], self.pid + 1, {"train_loss": 1.0}

    def evaluate(self, params, config):
        return 0.0, 1, {}


def _run_flower(strategy, tmp_path, num_rounds: int = 2) -> list[np.ndarray]:
    from flwr.simulation import run_simulation

    out_file = tmp_path / "arrays.npz"

    def build_apps(out_path: str):  # closures: Ray pickles them by value
        from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
        from flwr.clientapp import ClientApp
        from flwr.serverapp import Grid, ServerApp

        client_app = ClientApp()

        @client_app.train()
        def train(msg: Message, context: Context) -> Message:
            import numpy

            pid = int(context.node_config["partition-id"])
            arrays = msg.content["arrays"].to_numpy_ndarrays()
            new = [a + 0.5 * (numpy.full_like(a, pid + 1.0) - a) for a in arrays]
            content = RecordDict(
                {"arrays": ArrayRecord(new), "metrics": MetricRecord({"num-examples": pid + 1, "train_loss": 1.0})}
            )
            return Message(content=content, reply_to=msg)

        server_app = ServerApp()

        @server_app.main()
        def main(grid: Grid, context: Context) -> None:
            import numpy

            initial = ArrayRecord([numpy.zeros(3), numpy.zeros((2, 2))])
            result = strategy.start(grid=grid, initial_arrays=initial, num_rounds=num_rounds)
            numpy.savez(out_path, *result.arrays.to_numpy_ndarrays())

        return client_app, server_app

    client_app, server_app = build_apps(str(out_file))
    run_simulation(
        server_app=server_app,
        client_app=client_app,
        num_supernodes=2,
        backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}},
    )
    with np.load(out_file) as f:
        return [f[f"arr_{i}"] for i in range(len(f.files))]


def _run_ours(strategy, num_rounds: int = 2) -> list[np.ndarray]:
    sim = Simulator([_PullClient(0), _PullClient(1)], strategy, [np.zeros(3), np.zeros((2, 2))], clients_per_round=2)
    return sim.run(num_rounds).parameters


@pytest.mark.skipif(not HAVE_FLWR, reason="flwr not installed (pip install 'geode[flower]' 'flwr[simulation]')")
@pytest.mark.slow
@pytest.mark.parametrize(
    "make", [FedAvg, lambda: CRAFT(0.5, groups=[[0], [1]]), lambda: RISE(0.5, 1.0)], ids=["FedAvg", "CRAFT", "RISE"]
)
def test_two_client_two_round_flower_simulation_matches_our_simulator(make, tmp_path, monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    flower_strategy = to_flower(make(), fraction_evaluate=0.0, min_train_nodes=2, min_available_nodes=2)
    got = _run_flower(flower_strategy, tmp_path)
    want = _run_ours(make())
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    if isinstance(make(), FedAvg):  # hand-computed: weights 1 and 2, targets 1 and 2
        np.testing.assert_allclose(got[0], np.full(3, 1.25))
