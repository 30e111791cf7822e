"""Federated learning: an in-process simulator, non-IID partitions, server strategies and secure summation.

The paper folders live below (``geode.federated.craft``, ``geode.federated.fed_prior_bank``,
``geode.federated.rise``); what
several of them reuse sits here, in Flower's vocabulary:

- :class:`Simulator` runs rounds in-process (deterministic given its seed) over clients shaped like
  Flower's ``NumPyClient``; :class:`TorchClient` trains any ``torch.nn.Module`` with SGD (FedProx's
  proximal term included) and :class:`BatchedTorchClients` trains a round's MLP clients together;
  :func:`label_mix_accuracy` and :func:`disparity` give per-client accuracy and its spread.
- :func:`dirichlet_partition` and :func:`label_distribution`: Dirichlet label-skew partitions.
- Strategies with the pure rule ``aggregate(global_params, client_params, num_examples, metrics)``:
  :class:`FedAvg`, :class:`FedAvgM`, :class:`QFedAvg` (q-FFL fairness), :class:`FedProx`; paper
  strategies (CRAFT) subclass :class:`Strategy`. :func:`to_flower` wraps any of them as a real Flower
  strategy (the ``flower`` extra).
- :func:`secure_sum`: Bonawitz-style pairwise-masked summation whose masks cancel exactly.

Importing this package needs numpy only (torch is imported by :class:`TorchClient`, flwr by
:func:`to_flower`).

Papers and their names
----------------------
Every name below is importable from the field package and from its paper's package.

``craft`` (``geode.federated.craft``)::

    from geode.federated import (
        CRAFT, FLSetup, craft_direction, load_fl_dataset, make_mlp, module_groups, run_fl_benchmark,
    )

- ``CRAFT``: the conflict-resolved aggregation as a server strategy (``aggregate``, layer groups, ``max_step_norm``);
- ``craft_direction``: the closed-form conflict-free direction of one layer group (numpy, with diagnostics);
- ``module_groups``: the paper's layer groups (a module's weight and bias together) from a torch model;
- ``FLSetup``: one configuration of the claim's federated benchmark (experiment helper);
- ``load_fl_dataset``: the benchmark's stratified train/validation/test splits (experiment helper);
- ``make_mlp``: the benchmark's ReLU MLP, seeded (experiment helper);
- ``run_fl_benchmark``: one seed of the claim's benchmark, every method tuned (experiment helper).

``fed-prior-bank`` (``geode.federated.fed_prior_bank``)::

    from geode.federated import (
        BankSetup, ClassMoments, DistributionCalibration, FlowData, PriorBank, PriorBankClassifier, ProtoNet,
        SupportLogReg, class_moments, embed_phrases, federated_class_moments, make_flow_data, map_shrinkage,
        pack_moments, run_prior_bank_experiment, sample_episode, unpack_moments,
    )

- ``federated_class_moments``: per-class counts, sums and second moments of all clients through the secure sum;
- ``PriorBank``: the server's bank: label-phrase embeddings, class means, covariances; ``retrieve`` and ``prior``;
- ``PriorBankClassifier``: the episode classifier (retrieved priors, MAP shrinkage, sampled features, logreg);
- ``map_shrinkage``: the normal-inverse-Wishart posterior mode of one class's mean and covariance;
- ``embed_phrases``: unit-norm label-phrase embeddings (MiniLM when installed, else hashed character n-grams);
- ``ClassMoments``: per-class sufficient statistics (counts, sums, second moments), with ``mean_cov``;
- ``class_moments``: one client's ``ClassMoments``;
- ``pack_moments``: moments flattened to one vector (what a client uploads to the secure sum);
- ``unpack_moments``: the inverse of ``pack_moments``;
- ``ProtoNet``: baseline: nearest support prototype;
- ``SupportLogReg``: baseline: logistic regression on the support only;
- ``DistributionCalibration``: baseline: Distribution Calibration (Yang et al., 2021) on the bank's statistics;
- ``sample_episode``: an N-way K-shot episode (support and query indices) from a labelled pool;
- ``FlowData``: the synthetic CICIDS-like flow data set (base and rare classes, label phrases);
- ``make_flow_data``: draw a ``FlowData``;
- ``BankSetup``: one configuration of the claim's experiment (experiment helper);
- ``run_prior_bank_experiment``: one seed of the claim's experiment (experiment helper).

``rise`` (``geode.federated.rise``)::

    from geode.federated import (
        BLSCLoss, FedDecorr, GeometryClient, MRGALoss, PretrainedGeometry, ProtoKD, RISE, RISEFederation,
        aggregate_geometry, client_feature_stats, feddecorr_loss, proto_kd_loss,
    )

- ``RISE``: the strategy: FedAvg aggregation, sends the BLSC/MRGA weights; ``RISE.prepare_geometry`` sets a run up;
- ``RISEFederation``: what ``prepare_geometry`` returns: ``(geometry, clients, initial_parameters)``;
- ``GeometryClient``: the client trainer that adds the regularisers (and reports the weights it applied);
- ``PretrainedGeometry``: the broadcast geometry: class prototypes, principal basis, energy profile;
- ``client_feature_stats``: one client's statistics of pre-trained features (class counts and sums, second moment);
- ``aggregate_geometry``: the server's ``PretrainedGeometry`` from every client's statistics;
- ``BLSCLoss``: the subspace-correction loss (an ``nn.Module``);
- ``MRGALoss``: the relation-graph alignment loss (an ``nn.Module``);
- ``FedDecorr``: baseline strategy: FedDecorr's decorrelation weight;
- ``ProtoKD``: baseline strategy: prototype distillation weight;
- ``feddecorr_loss``: FedDecorr's loss of a feature batch;
- ``proto_kd_loss``: prototype distillation loss of a feature batch.
"""

from __future__ import annotations

from geode.federated import craft as _craft
from geode.federated import fed_prior_bank as _fed_prior_bank
from geode.federated import rise as _rise
from geode.federated.clients import BatchedTorchClients, TorchClient
from geode.federated.craft import *  # noqa: F403
from geode.federated.fed_prior_bank import *  # noqa: F403
from geode.federated.flower import to_flower
from geode.federated.partition import dirichlet_partition, label_distribution
from geode.federated.rise import *  # noqa: F403
from geode.federated.secure_sum import (
    SecureSumResult,
    client_mask,
    decode_fixed_point,
    encode_fixed_point,
    pairwise_masks,
    secure_sum,
)
from geode.federated.simulator import (
    Client,
    History,
    RoundRecord,
    Simulator,
    disparity,
    label_mix_accuracy,
)
from geode.federated.strategies import (
    FedAvg,
    FedAvgM,
    FedProx,
    NDArrays,
    QFedAvg,
    Strategy,
    check_client_updates,
    client_update_problem,
    weighted_average,
)

__all__ = [
    "BatchedTorchClients",
    "Client",
    "FedAvg",
    "FedAvgM",
    "FedProx",
    "History",
    "NDArrays",
    "QFedAvg",
    "RoundRecord",
    "SecureSumResult",
    "Simulator",
    "Strategy",
    "TorchClient",
    "check_client_updates",
    "client_mask",
    "client_update_problem",
    "decode_fixed_point",
    "dirichlet_partition",
    "disparity",
    "encode_fixed_point",
    "label_distribution",
    "label_mix_accuracy",
    "pairwise_masks",
    "secure_sum",
    "to_flower",
    "weighted_average",
]
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_craft.__all__, *_fed_prior_bank.__all__, *_rise.__all__]
