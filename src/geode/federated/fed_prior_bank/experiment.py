"""The prior-bank experiment: federated encoder, secure moments, bank, then low-shot episodes on rare classes.

One seed of :func:`run_prior_bank_experiment`:

1. draws synthetic flows (:func:`~geode.federated.fed_prior_bank.make_flow_data`): 16 base classes
   for federated training, 6 rare classes (one per family) for episodes;
2. splits the base flows among non-IID clients (Dirichlet label skew) and trains an MLP encoder with a
   base-class head by FedAvg in the in-process simulator;
3. each client sends the class moments of its encoder features through the pairwise-masked secure
   sum; the server builds the :class:`~geode.federated.fed_prior_bank.PriorBank` keyed by the
   label-phrase embeddings of the base classes;
4. runs N-way K-shot episodes on the rare classes with every method on the same episodes and
   reports macro-F1 on the queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.core.validation import check_int
from geode.federated.clients import BatchedTorchClients
from geode.federated.fed_prior_bank.bank import PriorBank, embed_phrases, federated_class_moments
from geode.federated.fed_prior_bank.data import make_flow_data
from geode.federated.fed_prior_bank.fewshot import (
    DistributionCalibration,
    PriorBankClassifier,
    ProtoNet,
    SupportLogReg,
    sample_episode,
)
from geode.federated.partition import dirichlet_partition
from geode.federated.simulator import Simulator
from geode.federated.strategies import FedAvg
from geode.models.mlp import make_mlp

__all__ = ["METHODS", "BankSetup", "run_prior_bank_experiment"]

METHODS: tuple[str, ...] = ("ProtoNet", "LR-support", "DC", "MAP-feature", "PriorBank")
"""Method names in reports: the FedAvg backbone with ProtoNet, logistic regression on the support,
Distribution Calibration, MAP with feature retrieval, and the paper's MAP with text retrieval."""


@dataclass(frozen=True)
class BankSetup:
    """One configuration of the prior-bank experiment (defaults: the quick claim check).

    Attributes
    ----------
    n_clients, rounds : int
        Federated clients (all train every round) and FedAvg rounds.
    alpha : float
        Dirichlet label skew of the base classes over clients.
    hidden : tuple of int
        Encoder widths; the last one is the feature dimension :math:`d`.
    lr, batch_size, local_epochs : float, int, int
        Client SGD.
    n_per_base, n_per_rare : int
        Flows per base and rare class.
    family_spread, class_spread, noise_scale : float
        The generator's spread of family means, of class offsets within a family, and of flows within a
        class (:func:`~geode.federated.fed_prior_bank.make_flow_data`).
    episodes, n_way, n_query : int
        Episodes per shot setting, classes per episode, queries per class.
    shots : tuple of int
        The K-shot settings.
    k, temperature, kappa0, nu0, n_samples : int, float, float, float or None, int
        Prior-bank hyper-parameters (retrieved priors, softmax temperature, MAP strengths, sampled
        features per class); ``nu0=None`` means :math:`4d`.
    dc_k, dc_alpha : int, float
        Distribution Calibration's retrieved classes and covariance inflation (its paper's defaults).
    embed_backend : {"auto", "minilm", "hashing"}
        Text embeddings of the label phrases.
    """

    n_clients: int = 8
    rounds: int = 30
    alpha: float = 0.3
    hidden: tuple[int, ...] = (64, 32)
    lr: float = 0.05
    batch_size: int = 32
    local_epochs: int = 1
    n_per_base: int = 300
    n_per_rare: int = 200
    family_spread: float = 3.0
    class_spread: float = 1.2
    noise_scale: float = 1.75
    episodes: int = 100
    n_way: int = 5
    n_query: int = 15
    shots: tuple[int, ...] = (1, 5)
    k: int = 3
    temperature: float = 0.1
    kappa0: float = 1.0
    nu0: float | None = None
    n_samples: int = 300
    dc_k: int = 2
    dc_alpha: float = 0.21
    embed_backend: str = "auto"


def _macro_f1(y: np.ndarray, pred: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(y, pred, average="macro", labels=np.unique(y), zero_division=0))


def run_prior_bank_experiment(setup: BankSetup, seed: int) -> dict[str, Any]:
    """Run one seed; see the module docstring.

    Returns
    -------
    dict with ``f1`` ({shot: {method: per-episode macro-F1 array}}), ``base_accuracy`` (the encoder's
    accuracy on held-out base flows), ``same_family_weight`` ({"text", "feature"}: mean retrieval weight
    on bank classes of the rare class's own family, 1-shot), ``embed_backend`` and ``server_view_shape``.
    """
    import torch

    seed = check_int("seed", seed, low=0)
    torch.set_num_threads(1)
    data = make_flow_data(
        seed,
        n_per_base=setup.n_per_base,
        n_per_rare=setup.n_per_rare,
        family_spread=setup.family_spread,
        class_spread=setup.class_spread,
        noise_scale=setup.noise_scale,
    )
    rng = as_generator(seed)
    n_base = len(data.base_names)
    # hold out 20 % of the base flows to check the encoder; the rest is spread over the clients
    order = rng.permutation(len(data.y_base))
    n_hold = len(order) // 5
    hold, train = order[:n_hold], order[n_hold:]
    x_tr, y_tr = data.x_base[train], data.y_base[train]
    parts = dirichlet_partition(y_tr, setup.n_clients, setup.alpha, min_size=setup.batch_size, seed=seed)

    model = make_mlp(x_tr.shape[1], setup.hidden, n_base, seed)
    pool = BatchedTorchClients(
        model,
        [(x_tr[p], y_tr[p]) for p in parts],
        lr=setup.lr,
        epochs=setup.local_epochs,
        batch_size=setup.batch_size,
    )
    init = [v.detach().numpy().copy() for v in model.state_dict().values()]
    sim = Simulator(pool, FedAvg(), init, clients_per_round=setup.n_clients, seed=seed)
    params = sim.run(setup.rounds).parameters
    model.load_state_dict({k: torch.as_tensor(a) for k, a in zip(model.state_dict().keys(), params)})
    model.eval()
    encoder = model[:-1]  # features: the last hidden layer (after its ReLU)

    def features(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return encoder(torch.from_numpy(x)).double().numpy()

    with torch.no_grad():
        base_acc = float((model(torch.from_numpy(data.x_base[hold])).argmax(1).numpy() == data.y_base[hold]).mean())

    client_feats = [(features(x_tr[p]), y_tr[p]) for p in parts]
    moments, transcript = federated_class_moments(client_feats, n_base, seed=seed)
    base_emb, backend = embed_phrases(data.base_names, setup.embed_backend)
    rare_emb, _ = embed_phrases(data.rare_names, backend)
    bank = PriorBank.from_moments(moments, data.base_names, base_emb)
    bank_family = np.array([data.base_family[data.base_names.index(n)] for n in bank.names])

    z_rare = features(data.x_rare)
    f1: dict[int, dict[str, list[float]]] = {}
    fam_weight: dict[str, list[float]] = {"text": [], "feature": []}
    ep_rng = as_generator(np.random.SeedSequence([seed, 77]).generate_state(1)[0])
    for shot in setup.shots:
        scores: dict[str, list[float]] = {m: [] for m in METHODS}
        for e in range(setup.episodes):
            classes, sup, qry = sample_episode(data.y_rare, setup.n_way, shot, setup.n_query, ep_rng)
            xs = z_rare[sup.ravel()]
            ys = np.repeat(np.arange(setup.n_way), shot)
            xq = z_rare[qry.ravel()]
            yq = np.repeat(np.arange(setup.n_way), setup.n_query)
            emb = rare_emb[classes]
            ep_seed = int(np.random.SeedSequence([seed, shot, e]).generate_state(1)[0])
            common = dict(k=setup.k, temperature=setup.temperature, kappa0=setup.kappa0, nu0=setup.nu0)
            text = PriorBankClassifier(bank, retrieval="text", n_samples=setup.n_samples, seed=ep_seed, **common)
            feat = PriorBankClassifier(bank, retrieval="feature", n_samples=setup.n_samples, seed=ep_seed, **common)
            dc = DistributionCalibration(
                bank, k=setup.dc_k, alpha=setup.dc_alpha, n_samples=setup.n_samples, seed=ep_seed
            )
            preds = {
                "ProtoNet": ProtoNet().fit(xs, ys).predict(xq),
                "LR-support": SupportLogReg().fit(xs, ys).predict(xq),
                "DC": dc.fit(xs, ys).predict(xq),
                "MAP-feature": feat.fit(xs, ys).predict(xq),
                "PriorBank": text.fit(xs, ys, emb).predict(xq),
            }
            for m, p in preds.items():
                scores[m].append(_macro_f1(yq, p))
            if shot == min(setup.shots):
                for name, clf in (("text", text), ("feature", feat)):
                    for c, (idx, w) in clf.retrieved_.items():
                        fam_weight[name].append(float(w[bank_family[idx] == data.rare_family[classes[c]]].sum()))
        f1[shot] = {m: np.asarray(v) for m, v in scores.items()}
    return {
        "f1": f1,
        "base_accuracy": base_acc,
        "same_family_weight": {k: float(np.mean(v)) for k, v in fam_weight.items()},
        "embed_backend": backend,
        "server_view_shape": transcript.server_view.shape,
        "client_sizes": np.array([len(p) for p in parts]),
    }
