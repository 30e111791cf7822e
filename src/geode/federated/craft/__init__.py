r"""CRAFT: conflict-resolved federated aggregation, as a Flower-shaped server strategy.

Paper: Wang, Liu and Thuerey, "CRAFT: Conflict-Resolved Aggregation for Federated Training"
(arXiv 2605.21317; code ``tum-pbs/CRAFT``, building on ConFIG from the same group).

Claim, in one sentence: aggregating client updates as the update closest to a reference direction
that conflicts with no participating client (closed form, layer-wise) significantly reduces the
performance disparity across clients while keeping competitive global accuracy on non-IID data.

The method (:class:`CRAFT`, :func:`craft_direction`): per layer group, with unit client updates
:math:`U`, normalised data-size weights :math:`w` and the unit previous aggregate :math:`\hat g`,

.. math::

    x^\star = \hat g + U^{+}(w - U\hat g), \qquad \theta \leftarrow \theta - \eta_s x^\star ,

so that :math:`u_i^\top x^\star = w_i > 0` for every client when :math:`U` has full row rank.
:func:`module_groups` builds the paper's layer groups from a torch model. The strategy runs in our
simulator (:class:`geode.federated.Simulator`) and, wrapped by :func:`geode.federated.to_flower`, on
real Flower.

Details we inferred or chose (the paper or its notes do not fix them):

- The closed form, the dropping of zero-norm clients, the unit reference (0 in the first round) and
  storing the unscaled :math:`x^\star` follow the research notes' reading of ``fed/craft.py``. With one
  client the same formula is used (:math:`x^\star = u_1` in the first round).
- The pseudo-inverse is :math:`U^\top (UU^\top)^{+}` via an eigendecomposition of the :math:`K \times K`
  Gram matrix with a relative singular-value cutoff ``rcond = 1e-6`` (the Gram matrix squares the
  condition number, so a tighter cutoff would invert rounding noise); everything is computed in
  float64 and cast back to the parameters' dtype. When the constraints are inconsistent (a group with
  fewer coordinates than clients, or collinear clients) the result is the least-squares solution and
  some alignments may be negative; a group whose every client update is zero takes no step and keeps
  its reference.
- ``groups=None`` means the whole model is one group; the claim check uses :func:`module_groups`
  (a module's weight and bias together) and reports both other groupings as ablations.
- Step length (documented and tested): the step does not depend on the scale of the client updates,
  but it does on their geometry: clients that agree give :math:`\eta_s / K`; two equally weighted
  clients at angle :math:`\theta` give :math:`\eta_s / (2\cos(\theta/2))`, unbounded near opposition
  (573 :math:`\eta_s` at 179.9 degrees). ``CRAFT(max_step_norm=...)`` caps it (off by default, as in the
  authors' code); the claim runs without a cap and reports the direction norms it saw.
- Claim check (quick): scikit-learn digits (70/10/20 % train/validation/test split, stratified),
  MLP 64-32-10, 60 clients with Dirichlet(0.1) label skew (at least 2 examples each, NIID-Bench
  balancing), 30 clients per round, 150 rounds, client SGD lr 0.05 x 0.999^round, batch 10, one local
  epoch; one data seed per harness seed. The research notes' setup, except the validation split.
- Per-client accuracy is the global model's per-class test accuracy reweighted by the client's label
  mix (the notes' protocol; clients' own test sets would hold a handful of images).
- Hyper-parameters (claim revision 2): equal tuning with :func:`geode.claims.tune`, 5 grid points and
  one step past an edge per method, selected by the *validation* mean client accuracy (the mean, not
  the worst client, so the selection does not favour the claim's metric): FedAvg's server lr
  {1, 2, 4, 8, 16}, CRAFT :math:`\eta_s` {0.03, 0.1, 0.3, 1, 3}, FedAvgM momentum {0.8, 0.9, 0.95,
  0.97, 0.99} at server lr 1, q-FFL q {0.01, 0.1, 0.5, 1, 5}, FedProx mu {0.001, 0.01, 0.1, 0.3, 1}.
- Full mode: digits with 300 rounds, plus Fashion-MNIST (14x14 average-pooled, MLP 196-200-10, 100
  clients, 20 per round, 300 rounds) when the Debian package is installed. The paper's ResNet-20/CIFAR
  and FEMNIST runs (demo log: CIFAR-10 accuracy 0.806, std 0.164 at round 500) are out of reach offline.

Deliberate differences from the authors' ``tum-pbs/CRAFT`` (none matters in the claim's setting, where
every group has d_q >> K and a reference exists from round 2):

- a lone usable client goes through the formula (its unit update :math:`u_1` in round 1), where the
  repository passes the raw update :math:`g_1` through;
- pseudo-inverse cutoff ``rcond = 1e-6`` relative in float64, where the repository uses torch's float32
  default (about 1e-3 relative on large layers);
- a group whose every client update is zero keeps its old reference (the repository resets it to 0);
- :func:`module_groups` attaches every normalisation layer (BatchNorm too) to the preceding module's
  group; the repository attaches only GroupNorm/LayerNorm that follow a conv;
- per-client accuracy is the label-mix-reweighted global test accuracy; the repository measures each
  client on its own held-out 20 %.

Examples
--------
A Flower-shaped ``aggregate`` on hand-made client models: the heavier client moves the one weight vector
along the first axis, the lighter one mostly against it. FedAvg's step conflicts with the lighter client
(a negative inner product with its own move); CRAFT's step agrees with both, with alignments equal to the
data weights 30/40 and 10/40:

>>> import numpy as np
>>> from geode.federated import CRAFT, FedAvg
>>> theta = [np.zeros(2)]                                   # the global model theta_t (one array)
>>> clients = [[np.array([1.0, 0.0])], [np.array([-0.8, 0.3])]]  # the trained client models
>>> n = [30, 10]                                            # their example counts
>>> moves = np.array([c[0] - theta[0] for c in clients])
>>> fedavg_step = FedAvg().aggregate(theta, clients, n)[0] - theta[0]
>>> (moves @ fedavg_step).round(3)                          # client 2 is pushed backwards
array([ 0.55 , -0.418])
>>> craft = CRAFT(server_lr=1.0)
>>> craft_step = craft.aggregate(theta, clients, n)[0] - theta[0]
>>> (moves @ craft_step).round(3)                           # conflict-free: both positive
array([0.75 , 0.214])
>>> craft.last_alignment[0].round(3)                        # u_i . x* = w_i
array([0.75, 0.25])

In a simulation, ``Simulator(clients, CRAFT(0.3, groups=module_groups(model)), ...)``; on Flower,
``geode.federated.to_flower(CRAFT(0.3))`` (``examples/federated_flower.py``).
"""

from __future__ import annotations

from geode.federated.craft.aggregation import CRAFT, craft_direction, module_groups
from geode.federated.craft.experiment import FLSetup, load_fl_dataset, make_mlp, run_fl_benchmark

__all__ = ["CRAFT", "FLSetup", "craft_direction", "load_fl_dataset", "make_mlp", "module_groups", "run_fl_benchmark"]
