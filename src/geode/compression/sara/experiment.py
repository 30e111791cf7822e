"""The SARA claim's problem: a residual-MLP DDPM denoiser trained on scikit-learn's 8x8 digits.

Data: ``sklearn.datasets.load_digits`` (1,797 images, bundled with scikit-learn, no download), pixels
``0..16`` mapped to ``[-1, 1]``, split 80 / 20 by a seeded permutation. The denoiser
(:class:`DigitDenoiser`) is trained with the epsilon-prediction loss of DDPM (linear betas, 1000 steps)
and AdamW. Sample quality is the Frechet distance (FD) between Gaussian fits of PCA features (components
fitted on the train images) of generated samples and of the test images: an FID proxy for 8x8 digits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from geode.compression.sara.sara import DigitDenoiser, ddpm_alphas

__all__ = ["DigitsProblem", "frechet_distance", "make_problem"]


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    r"""Frechet distance of Gaussian fits of two feature sets (rows are samples).

    :math:`\|\mu_a - \mu_b\|^2 + \operatorname{tr}(\Sigma_a + \Sigma_b -
    2(\Sigma_a^{1/2}\Sigma_b\Sigma_a^{1/2})^{1/2})`.
    """
    from scipy.linalg import sqrtm

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    mu = a.mean(0) - b.mean(0)
    ca, cb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    sa = np.real(sqrtm(ca))
    cross = np.real(sqrtm(sa @ cb @ sa))
    return float(mu @ mu + np.trace(ca) + np.trace(cb) - 2.0 * np.trace(cross))


@dataclass
class DigitsProblem:
    model: DigitDenoiser
    train: np.ndarray
    test: np.ndarray
    components: np.ndarray  # (k, 64) PCA directions of the train images
    mean: np.ndarray
    train_seconds: float

    def features(self, x: np.ndarray | torch.Tensor) -> np.ndarray:
        x = x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
        return (np.clip(x, -1, 1) - self.mean) @ self.components.T

    def fd(self, samples: np.ndarray | torch.Tensor) -> float:
        """FD of ``samples`` to the test images in PCA features."""
        return frechet_distance(self.features(samples), self.features(self.test))


def make_problem(
    *,
    seed: int,
    width: int = 256,
    hidden: int = 512,
    n_blocks: int = 4,
    steps: int = 3000,
    batch: int = 128,
    lr: float = 2e-3,
    n_components: int = 16,
) -> DigitsProblem:
    """Train the denoiser (init, split and batches from ``seed``)."""
    from sklearn.datasets import load_digits

    x = load_digits().data.astype(np.float32) / 8.0 - 1.0
    perm = np.random.default_rng(seed).permutation(len(x))
    n_train = int(0.8 * len(x))
    train, test = x[perm[:n_train]], x[perm[n_train:]]
    model = DigitDenoiser(dim=64, width=width, hidden=hidden, n_blocks=n_blocks, seed=seed)
    ab = ddpm_alphas().float()
    g = torch.Generator().manual_seed(seed + 1)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda t: min(1.0, (t + 1) / 100) * max(0.02, 1 - t / max(steps, 1))
    )
    data = torch.from_numpy(train)
    t0 = time.perf_counter()
    model.train()
    for _ in range(steps):
        x0 = data[torch.randint(0, len(data), (batch,), generator=g)]
        t = torch.randint(0, len(ab), (batch,), generator=g)
        eps = torch.randn(x0.shape, generator=g)
        a = ab[t].unsqueeze(-1)
        loss = (model(a.sqrt() * x0 + (1 - a).sqrt() * eps, t) - eps).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    mean = train.mean(0)
    _, _, vt = np.linalg.svd(train - mean, full_matrices=False)
    return DigitsProblem(
        model=model,
        train=train,
        test=test,
        components=vt[:n_components],
        mean=mean,
        train_seconds=time.perf_counter() - t0,
    )
