"""Federated learning with geode: CRAFT and RISE in geode's in-process ``Simulator`` (Flower-shaped clients).

What it shows, on a non-IID federation the script makes itself (scikit-learn's ``make_classification``, 6
classes, split among clients with Dirichlet label skew by ``dirichlet_partition``):

1. FedAvg against CRAFT (conflict-free aggregation, the paper's layer groups from ``module_groups``), from the
   same initial model: global test accuracy, and the spread of the per-client accuracies (each client's label
   mix applied to the global model's per-class accuracy: ``label_mix_accuracy``, ``disparity``), plus CRAFT's
   alignments (each client's unit update against the step: positive means conflict-free).
2. RISE: a network pre-trained on a small public share of the data, then ``RISE.prepare_geometry`` (the
   pre-trained geometry and the RISE clients in one call), RISE against FedAvg from the same pre-trained start;
   and the warning RISE gives when its clients ignore its settings (a plain ``TorchClient`` trains FedAvg).

Run::

    python examples/federated.py            # about a minute on one core
    python examples/federated.py --smoke    # the smallest size, a few seconds

Needs geode's core install only (numpy, torch, scikit-learn); no asset, no network. The same CRAFT strategy
on real Flower (a ClientApp and a ServerApp) is ``examples/federated_flower.py``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch


def make_federation(n_samples: int, n_clients: int, alpha: float, seed: int) -> dict:
    """Standardised features, a stratified test split, and the clients' Dirichlet(alpha) label-skewed shares."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    from geode.federated import dirichlet_partition, label_distribution

    x, y = make_classification(
        n_samples=n_samples, n_features=20, n_informative=12, n_redundant=4, n_classes=6,
        n_clusters_per_class=2, class_sep=1.5, random_state=seed,
    )  # fmt: skip
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.25, stratify=y, random_state=seed)
    x_pub, x_cl, y_pub, y_cl = train_test_split(x_tr, y_tr, train_size=0.05, stratify=y_tr, random_state=seed)
    parts = dirichlet_partition(y_cl, n_clients, alpha, min_size=10, seed=seed)
    return {
        "clients": [(x_cl[p], y_cl[p]) for p in parts],
        "label_mix": label_distribution(y_cl, parts, n_classes=6),
        "public": (x_pub, y_pub),
        "test": (x_te, y_te),
    }


def make_model(seed: int) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 6))


def state(model: torch.nn.Module) -> list[np.ndarray]:
    return [v.detach().numpy().copy() for v in model.state_dict().values()]


def evaluator(fed: dict):
    """``evaluate_fn`` for the Simulator: global accuracy and the per-client accuracies' mean, worst and spread."""
    from geode.federated import disparity, label_mix_accuracy

    x_te, y_te = fed["test"]
    net = make_model(0)

    def evaluate(server_round: int, params: list[np.ndarray]) -> dict[str, float]:
        net.load_state_dict({k: torch.as_tensor(a) for k, a in zip(net.state_dict(), params)})
        with torch.no_grad():
            pred = net(torch.as_tensor(x_te)).argmax(1).numpy()
        per_client = disparity(label_mix_accuracy(y_te, pred, fed["label_mix"]))
        return {"accuracy": float((pred == y_te).mean()), **{f"client_{k}": v for k, v in per_client.items()}}

    return evaluate


def pretrain(model: torch.nn.Sequential, x: np.ndarray, y: np.ndarray, epochs: int) -> None:
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    for _ in range(epochs):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xt), yt).backward()
        opt.step()


def row(name: str, m: dict[str, float]) -> str:
    cells = (m["accuracy"], m["client_mean"], m["client_worst"], m["client_std"])
    return f"{name:<28} " + " ".join(f"{v:>{w}.3f}" for v, w in zip(cells, (8, 12, 12, 10)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the smallest size (seconds)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.time()
    size = (
        dict(n_samples=1200, n_clients=4, rounds=3, local_epochs=1, pretrain=30, etas=(1.0,), server_lrs=(1.0,))
        if args.smoke
        else dict(
            n_samples=6000,
            n_clients=16,
            rounds=30,
            local_epochs=2,
            pretrain=150,
            etas=(0.3, 1.0, 3.0),
            server_lrs=(1.0, 2.0, 4.0),
        )
    )
    alpha = 0.3

    from geode.federated import (
        CRAFT,
        RISE,
        BatchedTorchClients,
        FedAvg,
        FedAvgM,
        Simulator,
        TorchClient,
        module_groups,
    )

    fed = make_federation(size["n_samples"], size["n_clients"], alpha, args.seed)
    sizes = [len(y) for _, y in fed["clients"]]
    print(f"{size['n_clients']} clients, Dirichlet({alpha}) label skew, {min(sizes)}-{max(sizes)} examples each;")
    print(f"{size['rounds']} rounds, every client every round, {size['local_epochs']} local epochs of SGD (lr 0.05)\n")
    evaluate = evaluator(fed)
    header = f"{'method':<28} {'accuracy':>8} {'client mean':>12} {'client worst':>12} {'client std':>10}"

    # 1. FedAvg vs CRAFT from the same random start: BatchedTorchClients trains a round's clients together
    model = make_model(args.seed)
    init = state(model)
    clients = BatchedTorchClients(model, fed["clients"], lr=0.05, epochs=size["local_epochs"], batch_size=32)
    results = {}
    # CRAFT's step does not scale with the client updates (unit rows, alignments = data weights), so its server
    # learning rate eta needs a sweep, and so, to be fair, does FedAvg's server step; in real use select both on
    # validation data, with the same budget (the claim check does, with geode.claims.tune).
    crafts = {eta: CRAFT(server_lr=eta, groups=module_groups(model)) for eta in size["etas"]}
    strategies = [(f"FedAvg (server lr {lr:g})", FedAvgM(server_learning_rate=lr, server_momentum=0.0))
                  for lr in size["server_lrs"]]  # fmt: skip
    strategies += [(f"CRAFT (eta {eta:g})", c) for eta, c in crafts.items()]
    for name, strategy in strategies:
        sim = Simulator(clients, strategy, init, clients_per_round=len(clients), seed=args.seed, evaluate_fn=evaluate)
        results[name] = sim.run(size["rounds"], eval_every=size["rounds"]).rounds[-1].eval_metrics
    print("1. From a random start (server steps swept; on the test set, for illustration only)\n" + header)
    for name, m in results.items():
        print(row(name, m))
    craft = crafts[size["etas"][-1]]
    align = np.concatenate(craft.last_alignment)
    verdict = "conflict-free" if align.min() > 0 else "some conflicts: inconsistent constraints"
    print(f"CRAFT (eta {size['etas'][-1]:g}), last round: alignments u_i . x* in [{align.min():.3f}, "
          f"{align.max():.3f}] over its layer groups ({verdict})\n")  # fmt: skip

    # 2. RISE from a pre-trained model: prepare_geometry replaces the four manual steps
    model = make_model(args.seed)
    pretrain(model, *fed["public"], epochs=size["pretrain"])
    rise = RISE.prepare_geometry(model, fed["clients"], rank=8, lr=0.05, epochs=size["local_epochs"], batch_size=32)
    print(f"2. From a model pre-trained on {len(fed['public'][1])} public examples; RISE.prepare_geometry: prototypes "
          f"{rise.geometry.prototypes.shape}, rank-{rise.geometry.basis.shape[1]} profile "
          f"{np.round(rise.geometry.profile[:4], 2).tolist()}...")  # fmt: skip
    results = {"pre-trained model": evaluate(0, rise.initial_parameters)}
    for name, strategy in (("FedAvg", FedAvg()), ("RISE (1, 1)", RISE(1.0, 1.0))):
        sim = Simulator(rise.clients, strategy, rise.initial_parameters, clients_per_round=len(rise.clients),
                        seed=args.seed, evaluate_fn=evaluate)  # fmt: skip
        results[name] = sim.run(size["rounds"], eval_every=size["rounds"]).rounds[-1].eval_metrics
    print(header)
    for name, m in results.items():
        print(row(name, m))

    plain = [TorchClient(model, x, y, lr=0.05) for x, y in fed["clients"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Simulator(plain, RISE(1.0, 1.0), rise.initial_parameters, clients_per_round=len(plain)).run(1)
    said = [str(w.message) for w in caught if "RISE" in str(w.message)]
    print("RISE with plain TorchClients warns:", said[0].split(". ")[0] + "." if said else "nothing (unexpected)")
    print(f"\ndone in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
