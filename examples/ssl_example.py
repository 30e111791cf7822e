"""Self-supervised and multimodal objectives from geode.ssl, as plain torch losses on data made here.

What it shows:

1. **SpecAlign**: aligning two frozen "encoders" (fixed random feature maps of a shared latent, standing for an image
   and a text encoder) with only 50 pairs. Linear projectors to a shared sphere are trained with InfoNCE on the
   pairs alone, plus RBF-MMD on unpaired pools, or plus ``SpecAlignLoss`` (characteristic functions at learnable,
   adversarial spectral queries) on the same pools; it prints test retrieval R@1 among held-out pairs (chance
   1 / n_test). Swap ``x`` and ``y`` for your own frozen features (any widths).
2. **HamJEPA**: a ``PhaseSpaceCNN`` trained on two augmented views of procedural glyph images with ``HamJEPALoss``
   (cross-view Hamiltonian predictor, spectral floors) against the isotropic ``SIGRegLoss`` baseline and the
   untrained encoder; it prints the cosine kNN accuracy of the embeddings of held-out images and their
   participation ratio (how many directions they use; collapse gives ~1).

The numbers are one seed at a small size: a demonstration of the API, not the claim check (``geode reproduce
specalign hamjepa`` is that).

Run::

    python examples/ssl_example.py            # about a minute on one core
    python examples/ssl_example.py --smoke    # a few seconds

The file is not called ``ssl.py``: run from ``examples/``, that name would shadow Python's ``ssl`` module (which
torch imports) for every script in the folder.

Needs only geode's core dependencies (torch, numpy). No network, no assets.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from geode.ssl import HamiltonianPredictor, HamJEPALoss, PhaseSpaceCNN, SIGRegLoss, SpecAlignLoss, info_nce, rbf_mmd2


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="smallest size (the test suite's run)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


# ------------------------------------------------------------------------------------------------ SpecAlign


def two_frozen_encoders(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Features of n items seen by two fixed random "encoders" of a 10-class latent: x (n, 64), y (n, 48), labels."""
    g = torch.Generator().manual_seed(seed)
    centres = 2.0 * torch.randn(10, 16, generator=g)
    labels = torch.randint(0, 10, (n,), generator=g)
    z = centres[labels] + torch.randn(n, 16, generator=g)
    a, b = torch.randn(16, 64, generator=g) / 4, torch.randn(16, 48, generator=g) / 4
    x = torch.tanh(z @ a) + 0.1 * torch.randn(n, 64, generator=g)
    y = torch.relu(z @ b + 0.5) + 0.1 * torch.randn(n, 48, generator=g)
    return x, y, labels


def recall_at_1(px: torch.Tensor, py: torch.Tensor) -> float:
    """Mean of x->y and y->x top-1 retrieval among paired rows."""
    sim = F.normalize(px, dim=1) @ F.normalize(py, dim=1).T
    target = torch.arange(len(px))
    return 0.5 * float((sim.argmax(1) == target).float().mean() + (sim.argmax(0) == target).float().mean())


def align(term: str, data: dict, steps: int, seed: int) -> float:
    """Train two linear projectors with InfoNCE on the pairs (+ a distribution term on the pools); test R@1."""
    torch.manual_seed(seed)
    proj_x, proj_y = nn.Linear(64, 32), nn.Linear(48, 32)
    groups: list[dict] = [{"params": [*proj_x.parameters(), *proj_y.parameters()], "lr": 1e-2}]
    spec = None
    if term == "specalign":
        spec = SpecAlignLoss(32, n_queries=64, scales=(1.0, 3.0, 10.0), seed=seed)
        groups.append({"params": list(spec.parameters()), "lr": 1e-3})  # the queries maximise the discrepancy
    opt = torch.optim.Adam(groups)
    gen = torch.Generator().manual_seed(seed)

    def embed(proj: nn.Module, feats: torch.Tensor) -> torch.Tensor:
        return F.normalize(proj(feats), dim=1)

    for _ in range(steps):
        loss = info_nce(embed(proj_x, data["x_pairs"]), embed(proj_y, data["y_pairs"]), temperature=0.1)
        if term != "infonce":
            ix = torch.randint(0, len(data["x_pool"]), (256,), generator=gen)
            iy = torch.randint(0, len(data["y_pool"]), (256,), generator=gen)
            a, b = embed(proj_x, data["x_pool"][ix]), embed(proj_y, data["y_pool"][iy])
            loss = loss + (spec(a, b, generator=gen) if spec is not None else rbf_mmd2(a, b, bandwidth=0.5))
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return recall_at_1(proj_x(data["x_test"]), proj_y(data["y_test"]))


def specalign_demo(smoke: bool, seed: int) -> dict[str, float]:
    n_pairs, n_pool, n_test, steps = (50, 300, 200, 30) if smoke else (50, 2000, 500, 250)
    x, y, _ = two_frozen_encoders(n_pairs + 2 * n_pool + n_test, seed)
    cut = np.cumsum([n_pairs, n_pool, n_pool])
    data = {
        "x_pairs": x[: cut[0]],
        "y_pairs": y[: cut[0]],
        "x_pool": x[cut[0] : cut[1]],  # unpaired: the two pools hold different items
        "y_pool": y[cut[1] : cut[2]],
        "x_test": x[cut[2] :],
        "y_test": y[cut[2] :],
    }
    print(f"SpecAlign: {n_pairs} pairs, unpaired pools of {n_pool}, R@1 among {n_test} test pairs ({steps} steps)")
    out = {}
    for term, name in (("infonce", "InfoNCE"), ("mmd", "InfoNCE + RBF-MMD"), ("specalign", "InfoNCE + SpecAlign")):
        out[term] = align(term, data, steps, seed)
        print(f"  {name:20s} R@1 {out[term]:.3f}   (chance {1 / n_test:.3f})")
    return out


# ------------------------------------------------------------------------------------------------ HamJEPA

GLYPHS = 5


def glyph_images(n: int, seed: int) -> tuple[torch.Tensor, np.ndarray]:
    """n grey 28x28 images of 5 glyphs (disk, square, cross, ring, bar) at random places, sizes and brightness."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:28, 0:28].astype(np.float32)
    labels = rng.integers(0, GLYPHS, n)
    out = np.zeros((n, 1, 28, 28), np.float32)
    for i, lab in enumerate(labels):
        cy, cx, r = rng.uniform(9, 19), rng.uniform(9, 19), rng.uniform(4, 7)
        dy, dx = yy - cy, xx - cx
        d = np.sqrt(dy**2 + dx**2)
        shape = [
            d < r,
            (abs(dy) < r) & (abs(dx) < r),
            ((abs(dy) < r) & (abs(dx) < 1.5)) | ((abs(dx) < r) & (abs(dy) < 1.5)),
            (d < r) & (d > r - 2),
            (abs(dy) < 1.5) & (abs(dx) < r + 2),
        ][lab]
        out[i, 0] = rng.uniform(0.6, 1.0) * shape + 0.05 * rng.normal(size=(28, 28))
    return torch.from_numpy(out), labels


def augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A view: random rotation, scale and shift, brightness, noise."""
    b = x.shape[0]
    ang = (torch.rand(b, generator=gen) * 2 - 1) * math.radians(25)
    scale = 0.8 + 0.4 * torch.rand(b, generator=gen)
    shift = (torch.rand(b, 2, generator=gen) * 2 - 1) * 0.2
    cos, sin = torch.cos(ang) / scale, torch.sin(ang) / scale
    theta = torch.stack([torch.stack([cos, -sin, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)], 1)
    v = F.grid_sample(x, F.affine_grid(theta, list(x.shape), align_corners=False), align_corners=False)
    return v * (0.7 + 0.3 * torch.rand(b, 1, 1, 1, generator=gen)) + 0.1 * torch.randn(v.shape, generator=gen)


def knn_accuracy(
    bank: torch.Tensor, bank_y: np.ndarray, query: torch.Tensor, query_y: np.ndarray, k: int = 10
) -> float:
    sim = F.normalize(query, dim=1) @ F.normalize(bank, dim=1).T
    nearest = bank_y[sim.topk(k, dim=1).indices.numpy()]
    votes = np.stack([(nearest == c).sum(1) for c in range(GLYPHS)], 1)
    return float((votes.argmax(1) == query_y).mean())


def participation_ratio(z: torch.Tensor) -> float:
    c = torch.cov(z.T.double())
    return float(torch.trace(c) ** 2 / (c * c).sum())


def pretrain(method: str, x: torch.Tensor, steps: int, batch: int, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    enc = PhaseSpaceCNN(width=32, token_channels=16, grid=4)
    params = list(enc.parameters())
    if method == "hamjepa":
        predictor = HamiltonianPredictor(enc.state_dim, hidden=128)
        objective: nn.Module = HamJEPALoss(predictor, enc.state_dim, seed=seed)
        params += list(predictor.parameters())
    else:
        objective = SIGRegLoss(enc.state_dim, weight=0.02, seed=seed)
    opt = torch.optim.AdamW(params, lr=2e-3, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps, pct_start=0.3)
    gen = torch.Generator().manual_seed(seed + 1)
    enc.train()
    for _ in range(steps):
        xb = x[torch.randint(0, len(x), (batch,), generator=gen)]
        loss = objective(enc(augment(xb, gen)), enc(augment(xb, gen)))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
    return enc


def hamjepa_demo(smoke: bool, seed: int) -> dict[str, float]:
    n_train, n_test, steps, batch = (256, 200, 4, 32) if smoke else (2000, 1000, 300, 128)
    x_train, y_train = glyph_images(n_train, seed)
    x_test, y_test = glyph_images(n_test, seed + 1)
    print(f"HamJEPA: {n_train} unlabelled glyph images, {steps} steps of batch {batch}; kNN on {n_test} held out")
    out = {}
    for method, name in (("untrained", "untrained encoder"), ("sigreg", "SIGReg (isotropic)"), ("hamjepa", "HamJEPA")):
        if method == "untrained":
            torch.manual_seed(seed)
            enc = PhaseSpaceCNN(width=32, token_channels=16, grid=4)
        else:
            enc = pretrain(method, x_train, steps, batch, seed)
        enc.eval()
        with torch.no_grad():
            z_train, z_test = enc(x_train), enc(x_test)
        out[method] = knn_accuracy(z_train, y_train, z_test, y_test)
        print(
            f"  {name:20s} kNN accuracy {out[method]:.3f} (chance {1 / GLYPHS:.2f}), "
            f"participation ratio {participation_ratio(z_test):.1f} of {z_test.shape[1]}"
        )
    return out


def main() -> int:
    args = parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    t0 = time.process_time()
    spec = specalign_demo(args.smoke, args.seed)
    ham = hamjepa_demo(args.smoke, args.seed)
    finite = all(math.isfinite(v) for v in (*spec.values(), *ham.values()))
    print(f"CPU {time.process_time() - t0:.1f} s")
    return 0 if finite else 1


if __name__ == "__main__":
    sys.exit(main())
