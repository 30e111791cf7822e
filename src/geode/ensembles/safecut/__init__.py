"""SafeCut: cut-statistic-gated mutual correction for source-free domain adaptation.

Paper: SafeCut, a NeurIPS 2026 paper on source-free domain adaptation with a vision-language partner
(catalogue title "SafeCut: cut-statistic-gated mutual correction"; its abstract is all the paper text
available to us, and its code repository was anonymous).

Claim, in one sentence: a source-pretrained target model and a vision-language model fail on different
samples, and gating their exchange of pseudo-labels per sample by the relative *cut statistic* (a label-free
reliability measure on a kNN graph) sets the direction and strength of supervision so that the correction
is net-positive, beating unidirectional and naive mutual schemes.

The components:

* :func:`cut_statistic` (and :func:`knn_graph`): :math:`Z_i = (J_i - \\mu_i)/\\sigma_i`, the standardised
  weight of kNN edges whose endpoints carry different pseudo-labels (low = reliable);
* :class:`SafeCutGate`: :math:`r_i = \\sigma((Z^T_i - Z^V_i)/\\tau)`, :math:`w^T_i = (2r_i - 1)_+` (partner ->
  target), :math:`w^V_i = (1 - 2r_i)_+` (target -> partner);
* :class:`SafeCut`: rounds of gated exchange (:class:`geode.ensembles.MutualCorrection` with that gate);
* :mod:`geode.ensembles.safecut.experiment`: the complementary-failure test bed of the claim check.

What we inferred (the abstract names the cut statistic and "direction and strength", nothing more):

* **Cut statistic.** As in Lang, Vijayaraghavan & Sontag (NeurIPS 2022): directed kNN graph, k = 20,
  :math:`w_{ij} = 1/(1 + \\|z_i - z_j\\|)`, null moments from the pseudo-label frequencies. Unlike that code,
  a sample is not its own neighbour; :math:`Z_i = 0` where :math:`\\sigma_i = 0` (a single pseudo-label).
  Each model's statistic is computed in its own representation (the target model's last hidden layer,
  recomputed every round; the partner's frozen encoder) with its own arg-max pseudo-labels.
* **Gate.** The logistic relative reliability above with :math:`\\tau = 1` (Z is already standardised) and
  the weights :math:`(2r-1)_+`, :math:`(1-2r)_+`: at most one direction per sample, strength growing with the
  reliability gap. Equal reliabilities switch the exchange off (SafeCut then is self-training); the gate
  is computed once per round.
* **Training.** Each model is trained on soft targets :math:`(1-w) e_{\\text{own}} + w\\, e_{\\text{other}}`
  (cross-entropy, Adam, 5 rounds x 5 epochs), plus SHOT's information maximisation (weight 1) on the
  target model; the partner trains its head only (its encoder is frozen, as a ViL image encoder with
  learnable prompts). The same training is used for every baseline, only the gate differs.
* **Baselines.** Self-training (w = 0), one-directional partner -> target distillation (w = 1, partner
  frozen), naive mutual exchange (w = 1 both ways), confidence-gated exchange (the higher max-probability
  supervises with weight 1).
* **Test bed (no CLIP offline).** A 10-class Gaussian mixture (d = 16): the target model (MLP, trainable
  features, label-smoothed source training as in SHOT) is trained where classes 0-4 are displaced, the
  ViL stand-in (frozen random ReLU encoder + linear head) where classes 5-9 are, and the stand-in's logits
  are multiplied by 5 (overconfident, like CLIP's logit scale) so that confidence gating is misled. The
  displacement 2.0 puts source-only near the notes' 0.90 and partner-only near 0.87.
* **Not done.** CLIP prompts, Office-Home/VisDA benchmarks and the paper's theorem; the "net-positive"
  property is measured as the weighted count of true minus false corrections in the first round.
"""

from __future__ import annotations

from geode.ensembles.safecut.cutstat import CutStatistic, cut_reliability, cut_statistic, knn_graph, mutual_mask
from geode.ensembles.safecut.safecut import SafeCut, SafeCutGate, SafeCutRounds, diversity_loss, iic_loss

__all__ = [
    "CutStatistic",
    "SafeCut",
    "SafeCutGate",
    "SafeCutRounds",
    "cut_reliability",
    "cut_statistic",
    "diversity_loss",
    "iic_loss",
    "knn_graph",
    "mutual_mask",
]
