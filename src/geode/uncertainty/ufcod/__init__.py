r"""UFCOD: few-shot cross-domain OOD detection from the energies of diffusion trajectories.

Paper: "Geometry over Density: Few-Shot Cross-Domain OOD Detection" (Li, Qin, Li, Peris, Bauer,
Zimmermann, Zhao; arXiv 2605.03410; slug ``ufcod``; code ``lili0415/UFCOD``, MIT, read for its
definitions, not copied). A diffusion model trained once on one data set is a feature extractor for any
ID/OOD pair: its noise predictions along the DDIM reversal of an image are scores, and two energies of
that path, :math:`E_{\text{path}} = \sum \hat\epsilon^2` and :math:`E_{\text{dyn}} = \sum (N\Delta\hat\epsilon)^2`,
place in-distribution images apart from others. At deployment ~100 unlabeled ID images are the only
task-specific input: a kNN soft-min distance to them is the score.

**Claim (checked by** ``geode reproduce ufcod`` **).** A high mean AUROC over unrelated pairs (the paper:
93.7% over 12 pairs) with 100 references, keeping the full-reference AUROC.

**Components.** :class:`TinyUNet`, :func:`train_ddpm` (a tiny :math:`\epsilon`-prediction DDPM, cosine
schedule), :func:`trajectory_features` (DDIM reversal on ``N`` = 10 respaced steps; the 2 energies or
DiffPath's 6 statistics), :class:`EnergyOODDetector` and :func:`facility_location` (the authors' detector:
greedy k-median references, standardisation on them, soft-min over ``k`` neighbours at temperature ``T``,
z-scored against the references' scores).

**Differences from the authors' code (deliberate) and inferred details.**

- Their feature model is a pretrained CelebA-32 DDPM (4000 steps, learned sigma); ours is a 74k-parameter
  U-Net trained for minutes on 16x16 MNIST with 1000 cosine steps (``full`` mode: width 64, 20k
  iterations). The reversal uses the respaced timesteps ``0, T/N, ...`` and ends at
  :math:`\bar\alpha = 0`, as improved-diffusion's reverse loop does (inferred from their use of it).
- Their facility location loops over candidates in Python; ours is the same greedy rule, vectorised.
- Their detector's scale is the reference std + 1e-8, as ours; the k-NN soft-min is computed with a
  log-sum-exp shift (the same numbers, no underflow for large distances).
- We tune ``T`` and ``k`` on a validation pair (digits vs random blobs), never on a test pair, and report
  their defaults (T = 0.5, k = 10) beside.

**Quick-mode finding (3 seeds): reproduced, every seed, but carried in part by a threshold that does not
discriminate.** Mean AUROC over the six far-OOD pairs 0.977 / 0.990 / 0.999 (95% bound 0.970 >= 0.9; the
untrained-DDPM control 0.646 / 0.932 / 0.767, bound 0.54, fails); authors' defaults 0.968 / 0.986 / 0.999.
100 facility-location references keep 102% / 100.5% / 100% of the full-reference (1000 images) AUROC,
but 5 references keep 100.8% / 100.6% / 99.9% too: on these pairs the retention threshold cannot fail, so
the harness flags the verdict. The baselines are as strong or stronger: DiffPath's 6-D features 1.000,
pixel kNN 0.998-1.000, GMM on the same 2-D features 0.979-0.999 (the pairs are easy at 16x16). Reported,
not judged: MNIST -> Fashion-MNIST 0.994-0.999, Fashion -> MNIST 0.986-0.994, near-OOD MNIST -> flipped
0.61-0.68. The paper's figure is 93.7% over 12 harder (CIFAR/SVHN/CelebA) pairs.

Examples
--------
A tiny DDPM trained once on your in-distribution images, the two path energies as features, and the detector
fitted on unlabeled in-distribution features:

>>> import numpy as np
>>> from geode.uncertainty import EnergyOODDetector, TinyUNet, train_ddpm, trajectory_features
>>> rng = np.random.default_rng(0)
>>> yy, xx = np.mgrid[:8, :8]
>>> c = rng.uniform(2, 6, size=(150, 2))
>>> disc = (yy - c[:, 0, None, None]) ** 2 + (xx - c[:, 1, None, None]) ** 2 < 4
>>> id_images = np.where(disc, 1.0, -1.0)[:, None].astype(np.float32)  # (n, C, H, W) in [-1, 1]
>>> ood_images = rng.choice([-1.0, 1.0], size=(50, 1, 8, 8)).astype(np.float32)  # noise
>>> unet = TinyUNet(width=8, seed=0)
>>> losses = train_ddpm(unet, id_images, n_steps=100, iters=30, batch_size=32, lr=3e-3)
>>> f_id = trajectory_features(unet, id_images, n_steps=100, n_ddim=5)  # [E_path, E_dyn] per image
>>> f_ood = trajectory_features(unet, ood_images, n_steps=100, n_ddim=5)
>>> det = EnergyOODDetector(n_references=20).fit(f_id[:100])  # 20 facility-location references
>>> s_in, s_out = det.score_samples(f_id[100:]), det.score_samples(f_ood)  # higher: more in-distribution
>>> f_id.shape, bool(s_in.mean() > s_out.mean()), bool(det.predict(f_ood).mean() < 0.1)
((150, 2), True, True)
"""

from __future__ import annotations

from geode.uncertainty.ufcod.detector import EnergyOODDetector, facility_location
from geode.uncertainty.ufcod.diffusion import TinyUNet, cosine_alpha_bar, train_ddpm, trajectory_features

__all__ = [
    "EnergyOODDetector",
    "TinyUNet",
    "cosine_alpha_bar",
    "facility_location",
    "train_ddpm",
    "trajectory_features",
]
