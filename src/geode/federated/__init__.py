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
