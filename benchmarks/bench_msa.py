"""Benchmark: linear CKA and MSA throughput at n = 10,000 points, d = 512 features, against naive forms.

- ``linear_cka`` uses the feature-space form ||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F), O(n d^2); the
  naive baseline is the Gram-matrix form of the reference notebooks (n x n Gram matrices, double
  centring, Frobenius inner product), O(n^2 d) time and O(n^2) memory. ``torch-cka``/``rsatoolbox`` are
  timed too when installed.
- ``msa`` from samples (kNN local regression of both maps over 2-D coordinates, batched generalised
  eigenvalues) against a per-point loop (``numpy.linalg.lstsq`` and ``scipy.linalg.eigh`` per point).
- ``pullback_metric`` (batched forward-mode Jacobians) against a per-point loop of
  ``torch.autograd.functional.jacobian`` (forward mode, vectorised), on a 2 -> 512 tanh MLP at 500 points.

Run with ``OMP_NUM_THREADS=1 python benchmarks/bench_msa.py``.
"""

from __future__ import annotations

import importlib.util
import math
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import torch  # noqa: E402
from scipy.spatial import cKDTree  # noqa: E402

from geode.analysis import linear_cka, pullback_metric  # noqa: E402
from geode.analysis.msa import msa  # noqa: E402
from geode.core import speed_ratio  # noqa: E402

torch.set_num_threads(1)


def naive_gram_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA through n x n Gram matrices (the textbook HSIC form)."""

    def centred_gram(a: np.ndarray) -> np.ndarray:
        k = a @ a.T
        col = k.mean(axis=0)
        k -= col[None, :]
        k -= (col - col.mean())[:, None]
        return k

    kx = centred_gram(x)
    ky = centred_gram(y)
    hsic = float(np.vdot(kx, ky))
    nx = float(np.linalg.norm(kx))
    del kx
    return hsic / (nx * float(np.linalg.norm(ky)))


def naive_msa(x: np.ndarray, y: np.ndarray, z: np.ndarray, k: int, eps: float = 1e-6) -> float:
    """MSA from samples with a Python loop over points (the same estimator, one point at a time)."""
    idx = cKDTree(z).query(z, k=k + 1)[1][:, 1:]
    n, d = z.shape
    gx, gy = np.empty((n, d, d)), np.empty((n, d, d))
    for i in range(n):
        dz = z[idx[i]] - z[i]
        jx = np.linalg.lstsq(dz, x[idx[i]] - x[i], rcond=None)[0]
        jy = np.linalg.lstsq(dz, y[idx[i]] - y[i], rcond=None)[0]
        gx[i] = jx @ jx.T
        gy[i] = jy @ jy.T
    gx += eps * np.trace(gx, axis1=1, axis2=2).mean() / d * np.eye(d)
    gy += eps * np.trace(gy, axis1=1, axis2=2).mean() / d * np.eye(d)
    logs = np.array([np.log(scipy.linalg.eigh(gy[i], gx[i], eigvals_only=True)) for i in range(n)])
    return float(np.sqrt(np.mean(np.sum((logs - logs.mean()) ** 2, axis=1))))


def main() -> None:
    rng = np.random.default_rng(0)
    n, d = 10_000, 512
    x = rng.normal(size=(n, d))
    y = np.tanh(x @ rng.normal(size=(d, d)) / math.sqrt(d)) + 0.1 * rng.normal(size=(n, d))

    print(f"linear CKA, n = {n}, d = {d} (speedup > 1: geode is faster)")
    a, b = linear_cka(x, y), naive_gram_cka(x, y)
    r = speed_ratio(lambda: linear_cka(x, y), lambda: naive_gram_cka(x, y), repeats=3, warmup=0)
    print(
        f"  vs naive n x n Gram form: speedup {r['speedup']:6.1f}x  (geode {r['candidate_s']:.2f} s, "
        f"naive {r['baseline_s']:.2f} s; |difference| {abs(a - b):.1e})"
    )
    for pkg in ("torch_cka", "rsatoolbox", "ckatorch"):
        state = "installed, not timed (model-based API)" if importlib.util.find_spec(pkg) else "not installed"
        print(f"  vs {pkg}: {state}")

    # MSA from samples on a 2-D manifold mapped into R^512 by two random tanh maps
    z = rng.uniform(-1, 1, size=(n, 2))
    w1, w2 = rng.normal(size=(2, d)), rng.normal(size=(2, d))
    b1, b2 = rng.normal(size=d), rng.normal(size=d)
    xa = np.tanh(z @ w1 + b1)
    xb = np.tanh((z + 0.3 * np.sin(3 * z)) @ w2 + b2)
    k = 8
    m1, m2 = msa(xa, xb, z, n_neighbors=k), naive_msa(xa, xb, z, k)
    r = speed_ratio(lambda: msa(xa, xb, z, n_neighbors=k), lambda: naive_msa(xa, xb, z, k), repeats=3, warmup=0)
    print(
        f"MSA from samples, n = {n}, d = {d}, k = {k}: vs per-point loop speedup {r['speedup']:6.1f}x  "
        f"(geode {r['candidate_s']:.2f} s, loop {r['baseline_s']:.2f} s; |difference| {abs(m1 - m2):.1e})"
    )

    # exact pullback metrics of a 2 -> 512 tanh MLP at n points
    net = torch.nn.Sequential(torch.nn.Linear(2, 256), torch.nn.Tanh(), torch.nn.Linear(256, d), torch.nn.Tanh())
    zt = torch.as_tensor(z[:500], dtype=torch.float32)

    def loop_metric() -> np.ndarray:
        out = np.empty((zt.shape[0], 2, 2))
        for i in range(zt.shape[0]):
            j = torch.autograd.functional.jacobian(
                lambda v: net(v[None])[0], zt[i], strategy="forward-mode", vectorize=True
            )
            j = j.detach().double().numpy()
            out[i] = j.T @ j
        return out

    np.testing.assert_allclose(pullback_metric(net, zt), loop_metric(), rtol=1e-4, atol=1e-6)
    r = speed_ratio(lambda: pullback_metric(net, zt), loop_metric, repeats=3, warmup=0)
    print(
        f"pullback_metric, 2 -> 512 MLP, {zt.shape[0]} points: vs per-point autograd jacobian speedup "
        f"{r['speedup']:6.1f}x  (geode {r['candidate_s'] * 1e3:.1f} ms, loop {r['baseline_s'] * 1e3:.1f} ms)"
    )


if __name__ == "__main__":
    main()
