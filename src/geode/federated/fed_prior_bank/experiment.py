"""The prior-bank experiment: federated encoder, secure moments, bank, then low-shot episodes on rare classes.

One seed of :func:`run_prior_bank_experiment`:

1. draws synthetic flows (:func:`~geode.federated.fed_prior_bank.make_flow_data`): 16 base classes
   for federated training, 6 rare classes (one per family) for episodes;
2. splits the base flows among non-IID clients (Dirichlet label skew) and trains an MLP encoder with a
   base-class head by FedAvg in the in-process simulator;
3. each client sends the class moments of its encoder features through the pairwise-masked secure
   sum; the server builds the :class:`~geode.federated.fed_prior_bank.PriorBank` keyed by the
   label-phrase embeddings of the base classes;
4. splits each rare class's flows in half: validation episodes select every method's knob with the
   same budget (:func:`geode.claims.tune`), test episodes (the same for every method) give the
   macro-F1 on the queries that is reported;
5. runs the negative control: the prior bank with the episode's label phrases shuffled among its
   classes (retrieval by the wrong phrase), at the selected knob.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from geode.claims.tuning import tune
from geode.core.random import as_generator
from geode.core.validation import check_int
from geode.federated._checks import check_float_fields
from geode.federated.clients import BatchedTorchClients
from geode.federated.fed_prior_bank.bank import PriorBank, embed_phrases, federated_class_moments
from geode.federated.fed_prior_bank.data import make_flow_data
from geode.federated.fed_prior_bank.fewshot import (
    DistributionCalibration,
    PriorBankClassifier,
    ProtoNet,
    SupportLogReg,
    sample_episode,
    tukey,
)
from geode.federated.partition import dirichlet_partition
from geode.federated.simulator import Simulator
from geode.federated.strategies import FedAvg
from geode.models.mlp import make_mlp

__all__ = ["METHODS", "BankSetup", "run_prior_bank_experiment"]

METHODS: tuple[str, ...] = ("ProtoNet", "LR-support", "DC", "DC-tukey-moments", "MAP-feature", "PriorBank")
"""Method names in reports: the FedAvg backbone with ProtoNet, logistic regression on the support,
Distribution Calibration as published (bank moments of untransformed features), DC with the moments of
Tukey-transformed features, MAP with feature retrieval, and the paper's MAP with text retrieval."""

MATCHED: tuple[str, ...] = ("LR-support", "DC", "DC-tukey-moments", "MAP-feature")
"""The backbone-matched baselines (same encoder, same bank statistics where they use any)."""


_NON_NEGATIVE = (
    "family_spread",
    "class_spread",
    "noise_scale",
    "dc_tukey_beta",
    "dc_alphas",
)  # float settings that may be 0 (the others must be > 0)


@dataclass(frozen=True)
class BankSetup:
    r"""One configuration of the prior-bank experiment (defaults: the quick claim check).

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
    k, temperature, nu0, n_samples : int, float, float or None, int
        Prior-bank hyper-parameters (retrieved priors, softmax temperature, MAP strength of the prior
        covariance, sampled features per class); ``nu0=None`` means :math:`4d`. :math:`\kappa_0` is tuned.
    dc_k, dc_n_samples, dc_tukey_beta : int, int, float
        Distribution Calibration's retrieved classes, sampled features per class and Tukey exponent (its
        authors' defaults; its :math:`\alpha` is tuned).
    val_episodes : int
        Validation episodes per shot setting for the selection of every method's knob.
    logreg_cs, dc_alphas, kappa0s : tuple of float
        The validation grids: LR-support's ``C``, both DC readings' :math:`\alpha`, MAP-feature's and
        PriorBank's :math:`\kappa_0`. ProtoNet has no knob.
    extend : int
        Extra trials past a grid's edge (:func:`geode.claims.tune`).
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
    nu0: float | None = None
    n_samples: int = 300
    dc_k: int = 2
    dc_n_samples: int = 750
    dc_tukey_beta: float = 0.5
    val_episodes: int = 25
    logreg_cs: tuple[float, ...] = (0.1, 1.0, 10.0)
    dc_alphas: tuple[float, ...] = (0.021, 0.21, 2.1)
    kappa0s: tuple[float, ...] = (0.3, 1.0, 3.0)
    extend: int = 1
    embed_backend: str = "auto"

    def __post_init__(self) -> None:
        """Reject a NaN, infinite, non-positive or non-numeric float setting, naming the field."""
        check_float_fields(self, _NON_NEGATIVE)


def _macro_f1(y: np.ndarray, pred: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(y, pred, average="macro", labels=np.unique(y), zero_division=0))


def grids(setup: BankSetup) -> dict[str, Any]:
    """Every method's validation grid (ProtoNet has none: one configuration)."""
    return {
        "ProtoNet": [{}],
        "LR-support": {"C": list(setup.logreg_cs)},
        "DC": {"alpha": list(setup.dc_alphas)},
        "DC-tukey-moments": {"alpha": list(setup.dc_alphas)},
        "MAP-feature": {"kappa0": list(setup.kappa0s)},
        "PriorBank": {"kappa0": list(setup.kappa0s)},
    }


def _split_rare(y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Half of each rare class's flows for validation episodes, the other half for test episodes."""
    val, test = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        val.append(idx[: idx.size // 2])
        test.append(idx[idx.size // 2 :])
    return np.sort(np.concatenate(val)), np.sort(np.concatenate(test))


def run_prior_bank_experiment(
    setup: BankSetup, seed: int, *, params: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Run one seed; see the module docstring.

    Parameters
    ----------
    setup : BankSetup
    seed : int
    params : dict, optional
        Every method's knob (as :func:`grids` names it); ``None``: select them on the validation episodes.

    Returns
    -------
    dict with ``f1`` ({shot: {method: per-episode test macro-F1 array}}, the control
    ``"PriorBank-shuffled"`` included), ``params`` (the knobs used), ``tuned`` (the
    :class:`~geode.claims.tuning.TuneResult`, or None when ``params`` was given), ``base_accuracy`` (the
    encoder's accuracy on held-out base flows), ``same_family_weight`` ({"text", "feature"}: mean
    retrieval weight on bank classes of the rare class's own family, 1-shot), ``embed_backend`` and
    ``server_view_shape``.
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
    params_fl = sim.run(setup.rounds).parameters
    model.load_state_dict({k: torch.as_tensor(a) for k, a in zip(model.state_dict().keys(), params_fl)})
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
    # the other DC reading: the bank's moments of Tukey-transformed features (same secure sum)
    moments_t, _ = federated_class_moments(
        [(tukey(z, setup.dc_tukey_beta), y) for z, y in client_feats], n_base, seed=seed + 1
    )
    bank_t = PriorBank.from_moments(moments_t, data.base_names, base_emb)
    bank_family = np.array([data.base_family[data.base_names.index(n)] for n in bank.names])

    z_rare = features(data.x_rare)
    val_idx, test_idx = _split_rare(data.y_rare, as_generator(np.random.SeedSequence([seed, 5]).generate_state(1)[0]))
    common = dict(k=setup.k, temperature=setup.temperature, nu0=setup.nu0, n_samples=setup.n_samples)

    def classifier(method: str, knob: dict[str, Any], ep_seed: int) -> Any:
        if method == "ProtoNet":
            return ProtoNet()
        if method == "LR-support":
            return SupportLogReg(C=knob["C"])
        if method in ("DC", "DC-tukey-moments"):
            return DistributionCalibration(
                bank if method == "DC" else bank_t,
                k=setup.dc_k,
                alpha=knob["alpha"],
                n_samples=setup.dc_n_samples,
                tukey_beta=setup.dc_tukey_beta,
                seed=ep_seed,
            )
        retrieval = "feature" if method == "MAP-feature" else "text"
        return PriorBankClassifier(bank, retrieval=retrieval, seed=ep_seed, kappa0=knob["kappa0"], **common)

    def episodes(split: str, shot: int, n: int):  # the same episodes for every method and configuration
        idx = val_idx if split == "val" else test_idx
        y_pool = data.y_rare[idx]
        ep_rng = as_generator(np.random.SeedSequence([seed, 77, shot, split == "val"]).generate_state(1)[0])
        for e in range(n):
            classes, sup, qry = sample_episode(y_pool, setup.n_way, shot, setup.n_query, ep_rng)
            ep_seed = int(np.random.SeedSequence([seed, shot, e, split == "val"]).generate_state(1)[0])
            yield (
                classes,
                z_rare[idx[sup.ravel()]],
                np.repeat(np.arange(setup.n_way), shot),
                z_rare[idx[qry.ravel()]],
                np.repeat(np.arange(setup.n_way), setup.n_query),
                ep_seed,
            )

    def fit_predict(method: str, knob: dict[str, Any], ep: tuple, emb: np.ndarray) -> tuple[np.ndarray, Any]:
        _, xs, ys, xq, _, ep_seed = ep
        clf = classifier(method, knob, ep_seed)
        clf = clf.fit(xs, ys, emb) if method == "PriorBank" else clf.fit(xs, ys)
        return clf.predict(xq), clf

    def val_score(method: str, knob: dict[str, Any]) -> float:
        scores = []
        for shot in setup.shots:
            for ep in episodes("val", shot, setup.val_episodes):
                scores.append(_macro_f1(ep[4], fit_predict(method, knob, ep, rare_emb[ep[0]])[0]))
        return float(np.mean(scores))

    tuned = None
    if params is None:
        tuned = tune(val_score, grids(setup), extend=setup.extend, seed=seed)
        params = {m: tuned.params(m) for m in METHODS}
    params = {m: dict(params.get(m, {})) for m in METHODS}

    f1: dict[int, dict[str, np.ndarray]] = {}
    fam_weight: dict[str, list[float]] = {"text": [], "feature": []}
    shuffle_rng = as_generator(np.random.SeedSequence([seed, 99]).generate_state(1)[0])
    for shot in setup.shots:
        scores: dict[str, list[float]] = {m: [] for m in (*METHODS, "PriorBank-shuffled")}
        for ep in episodes("test", shot, setup.episodes):
            classes, yq = ep[0], ep[4]
            emb = rare_emb[classes]
            for m in METHODS:
                pred, clf = fit_predict(m, params[m], ep, emb)
                scores[m].append(_macro_f1(yq, pred))
                if shot == min(setup.shots) and m in ("PriorBank", "MAP-feature"):
                    name = "text" if m == "PriorBank" else "feature"
                    for c, (idx, w) in clf.retrieved_.items():
                        fam_weight[name].append(float(w[bank_family[idx] == data.rare_family[classes[c]]].sum()))
            # control: each class retrieves with another class's phrase (a cyclic shift of a random order)
            perm = shuffle_rng.permutation(setup.n_way)
            wrong = np.empty_like(perm)
            wrong[perm] = np.roll(perm, 1)
            scores["PriorBank-shuffled"].append(
                _macro_f1(yq, fit_predict("PriorBank", params["PriorBank"], ep, emb[wrong])[0])
            )
        f1[shot] = {m: np.asarray(v) for m, v in scores.items()}
    return {
        "f1": f1,
        "params": params,
        "tuned": tuned,
        "base_accuracy": base_acc,
        "same_family_weight": {k: float(np.mean(v)) for k, v in fam_weight.items()},
        "embed_backend": backend,
        "server_view_shape": transcript.server_view.shape,
        "client_sizes": np.array([len(p) for p in parts]),
    }
