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
- Claim check (quick): scikit-learn digits (70/10/20 % train/validation/test split, stratified),
  MLP 64-32-10, 60 clients with Dirichlet(0.1) label skew (at least 2 examples each, NIID-Bench
  balancing), 30 clients per round, 150 rounds, client SGD lr 0.05 x 0.999^round, batch 10, one local
  epoch; 5 seeds. The research notes' setup, except the validation split.
- Per-client accuracy is the global model's per-class test accuracy reweighted by the client's label
  mix (the notes' protocol; clients' own test sets would hold a handful of images).
- Hyper-parameters: each method's one server knob is picked per seed from a 3-point grid by the
  *validation* mean client accuracy (CRAFT :math:`\eta_s \in \{0.1, 0.3, 1\}`, the log grid the notes
  call for; FedAvgM momentum in {0.3, 0.6, 0.9} at server lr 1; QFedAvg q in {0.1, 1, 5}; FedProx mu in
  {0.01, 0.1, 1}). The selection criterion is the mean, not the worst client, so it does not favour
  the claim's metric.
- Full mode: digits with 300 rounds and 10 seeds, plus Fashion-MNIST (14x14 average-pooled, MLP
  196-200-10, 100 clients, 20 per round, 300 rounds) when the Debian package is installed. The paper's
  ResNet-20/CIFAR and FEMNIST runs are out of reach offline.
"""

from __future__ import annotations

from geode.federated.craft.aggregation import CRAFT, craft_direction, module_groups
from geode.federated.craft.experiment import FLSetup, load_fl_dataset, make_mlp, run_fl_benchmark

__all__ = ["CRAFT", "FLSetup", "craft_direction", "load_fl_dataset", "make_mlp", "module_groups", "run_fl_benchmark"]
