r"""RISE: geometry-regularised federated learning that keeps pre-trained geometric priors during local training.

Paper: "RISE: geometry-regularized cross-silo consensus enhancement" (NeurIPS 2026 collection, seed file
000, abstract 1; no public text or code found, so every formula is the research notes' reconstruction).

Claim, in one sentence: two client-side geometry regularisers, biased low-dimensional subspace correction
(BLSC, keeps the pre-trained spectral energy profile within the principal subspace, penalising energy
concentration) and manifold relation-graph alignment (MRGA, aligns local inter-class topology with the
pre-trained global prototypes' relation graph), improve global accuracy and collapse resistance under
heterogeneity.

The method: :class:`BLSCLoss`, :class:`MRGALoss` (``nn.Module`` losses), the server-side statistics
:func:`client_feature_stats` / :func:`aggregate_geometry` giving a :class:`PretrainedGeometry`, the
strategy :class:`RISE` (FedAvg aggregation, regulariser weights sent through ``configure_fit``) and the
client trainer :class:`GeometryClient`. Baselines: :class:`~geode.federated.FedProx`,
:class:`ProtoKD` (prototype KD), :class:`FedDecorr`; :func:`feddecorr_loss`, :func:`proto_kd_loss`.

Details we inferred or chose (the abstract fixes none of them):

- BLSC is the one-sided hinge :math:`\sum_j \max(0, e_j - e^0_j)` on the normalised energy profile over
  the pre-trained top-``r`` directions (the notes' first option; the spectral-entropy hinge was not built);
  the covariance is global, from server-aggregated moments of the frozen pre-trained encoder.
- MRGA is a row-wise KL between softmaxed cosine relation graphs (temperature ``tau``) over the classes
  present in the mini-batch; a batch with fewer than two classes contributes 0.
- The features regularised are the penultimate layer's (``model[:-1]``); no KD term beyond what the
  baselines have (the notes' :math:`\lambda_{kd}` term is the ProtoKD baseline, not part of RISE here).
- The geometry is broadcast once before round 1 and kept fixed ("pre-trained consensus prior").
- Claim set-up (:mod:`geode.federated.rise.experiment`): digits, MLP 64-64-32-10 pre-trained on a balanced
  public 5 % of the training split, 10 clients at Dirichlet(0.05), 15 rounds, 3 local epochs; BLSC rank 8,
  tau 0.1; Dir(0.5) and 50 rounds in ``full`` mode only.

Quick verdict (3 seeds): **not reproduced** (not partial either). RISE is 4.0 points below tuned FedAvg on
average (-3.1, -3.9, -5.0; one-sided 95 % bound -5.6), with a slightly lower feature effective rank (-0.11)
and with BLSC's ablation *gaining* 1.9 points; the resampled-run controls fail every threshold, so the
thresholds discriminate. Details in :mod:`geode.federated.rise.claim`. Benchmark (quick): a RISE client
round takes 1.45x a plain FedAvg client's time (ratio 0.69) and the same as a FedDecorr client's (1.01);
the two regularisers' forward+backward cost what FedDecorr's loss costs (1.07).

Examples
--------
Pre-train a small network, then fine-tune it federatedly with RISE: :meth:`RISE.prepare_geometry` turns the
pre-trained model and the clients' data into the geometry and the clients (which report the weights they
applied; a plain client would trigger a warning, as it would train plain FedAvg):

>>> import numpy as np, torch
>>> from geode.federated import RISE, Simulator, dirichlet_partition
>>> _ = torch.manual_seed(0)
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=(300, 6)).astype(np.float32)
>>> y = (x[:, 0] > 0).astype(np.int64) + 2 * (x[:, 1] > 0)              # 4 classes
>>> model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
>>> opt = torch.optim.Adam(model.parameters(), lr=0.01)
>>> for _ in range(100):                                                 # pre-training on 60 public examples
...     opt.zero_grad()
...     torch.nn.functional.cross_entropy(model(torch.as_tensor(x[:60])), torch.as_tensor(y[:60])).backward()
...     opt.step()
>>> parts = dirichlet_partition(y[60:], 4, 0.5, seed=0)                  # 4 label-skewed clients
>>> fed = RISE.prepare_geometry(model, [(x[60:][p], y[60:][p]) for p in parts], rank=4, lr=0.05, epochs=2)
>>> fed.geometry.prototypes.shape, fed.geometry.basis.shape, len(fed.clients)
((4, 16), (16, 4), 4)
>>> sim = Simulator(fed.clients, RISE(1.0, 1.0), fed.initial_parameters, clients_per_round=4, seed=0)
>>> history = sim.run(3)
>>> {k: history.rounds[-1].fit_metrics[k] for k in ("rise-blsc", "rise-mrga")}   # the clients applied them
{'rise-blsc': 1.0, 'rise-mrga': 1.0}
>>> _ = model.load_state_dict({k: torch.as_tensor(a) for k, a in zip(model.state_dict(), history.parameters)})
>>> float((model(torch.as_tensor(x)).argmax(1).numpy() == y).mean()) > 0.85
True
"""

from __future__ import annotations

from geode.federated.rise.regularizers import (
    BLSCLoss,
    MRGALoss,
    PretrainedGeometry,
    aggregate_geometry,
    client_feature_stats,
    feddecorr_loss,
    proto_kd_loss,
)
from geode.federated.rise.strategy import RISE, FedDecorr, GeometryClient, ProtoKD, RISEFederation

__all__ = [
    "RISE",
    "BLSCLoss",
    "FedDecorr",
    "GeometryClient",
    "MRGALoss",
    "PretrainedGeometry",
    "ProtoKD",
    "RISEFederation",
    "aggregate_geometry",
    "client_feature_stats",
    "feddecorr_loss",
    "proto_kd_loss",
]
