"""CKA and MSA between two networks you train: a warp that MSA sees and 1 - CKA does not.

What it shows: two tanh MLPs are trained with ``torch.optim.Adam`` on the same regression task, whose inputs lie
on a 2-D manifold embedded in R^20 (data the script makes itself). Their hidden representations are compared
with the extrinsic measures the field uses (linear CKA, RSA, the Procrustes angle: ``geode.analysis``) and with
metric similarity analysis (MSA, ``geode.analysis.msa``): the distance between the networks' pullback metrics on
the manifold, exact from Jacobians (``pullback_metric`` + ``msa_from_metrics``) or from samples alone
(``msa_distance``). Three comparisons:

- network A against a rotated, rescaled and shifted copy of itself: every measure should say "the same";
- network A against network B (another initialisation): the noise floor of each measure;
- network A against A composed with a one-sided warp of the manifold, ``z + 0.3 sin 3z``: the same network read
  through a reparametrisation of its input. The point of the MSA paper is that this changes the intrinsic
  geometry a lot while the extrinsic geometry (what CKA sees) barely moves.

Run::

    python examples/analysis.py           # width 128, 1500 Adam steps, 400 points: about 20 s on one core
    python examples/analysis.py --smoke   # the smallest size, a few seconds

Needs: nothing beyond geode's core install (torch, numpy, scikit-learn); no asset, no network.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn

from geode.analysis import linear_cka, msa_distance, msa_from_metrics, procrustes_distance, pullback_metric, rsa


def make_manifold(seed: int, ambient: int = 20):
    """A smooth embedding of [-1, 1]^2 into R^ambient: six nonlinear features, rotated by a random orthogonal map."""
    q = np.linalg.qr(np.random.default_rng(seed).normal(size=(ambient, ambient)))[0][:6]
    q_t = torch.as_tensor(q, dtype=torch.float64)

    def embed(z: torch.Tensor) -> torch.Tensor:
        z1, z2 = z[:, 0], z[:, 1]
        feats = [z1, z2, torch.sin(2 * z1), torch.cos(2 * z2), z1 * z2, torch.sin(z1 + z2)]
        return torch.stack(feats, dim=1) @ q_t

    return embed


def target(z: torch.Tensor) -> torch.Tensor:
    return (torch.sin(3 * z[:, 0]) * torch.cos(2 * z[:, 1]))[:, None]


def warp(z: torch.Tensor) -> torch.Tensor:
    """A one-sided reparametrisation of the manifold's coordinates (smooth, invertible on [-1, 1])."""
    return z + 0.3 * torch.sin(3 * z)


def train_net(seed: int, embed, width: int, steps: int, n_train: int) -> tuple[nn.Sequential, float]:
    """A two-hidden-layer tanh MLP trained with Adam on the task; returns the net and its test MSE."""
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(20, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(), nn.Linear(width, 1))
    net = net.double()
    gen = torch.Generator().manual_seed(1000 + seed)
    z_train = torch.rand(n_train, 2, generator=gen, dtype=torch.float64) * 2 - 1
    z_test = torch.rand(1000, 2, generator=gen, dtype=torch.float64) * 2 - 1
    x_train, y_train = embed(z_train), target(z_train)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(x_train), y_train)
        loss.backward()
        opt.step()
    with torch.no_grad():
        test_mse = float(nn.functional.mse_loss(net(embed(z_test)), target(z_test)))
    return net, test_mse


def compare(rep_a, rep_b, z: torch.Tensor) -> dict[str, float]:
    """Every measure as a distance (0 = the same) between two maps from manifold coordinates to representations."""
    with torch.no_grad():
        xa, xb = rep_a(z).numpy(), rep_b(z).numpy()
    return {
        "1 - CKA": 1.0 - linear_cka(xa, xb),
        "1 - RSA": 1.0 - rsa(xa, xb),
        "Procrustes": procrustes_distance(xa, xb),
        "MSA (exact)": msa_from_metrics(pullback_metric(rep_a, z), pullback_metric(rep_b, z)),
        "MSA (samples)": msa_distance(xa, xb, z.numpy()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (seconds; what the tests run)")
    parser.add_argument("--width", type=int, default=None, help="hidden width (default 128; 32 with --smoke)")
    parser.add_argument("--steps", type=int, default=None, help="Adam steps per network (default 1500; 150 smoke)")
    parser.add_argument("--points", type=int, default=None, help="points compared (default 400; 150 with --smoke)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the manifold and of the first network")
    args = parser.parse_args()
    width = args.width or (32 if args.smoke else 128)
    steps = args.steps or (150 if args.smoke else 1500)
    n_points = args.points or (150 if args.smoke else 400)
    torch.set_num_threads(1)
    t0 = time.perf_counter()

    embed = make_manifold(args.seed)
    net_a, mse_a = train_net(args.seed, embed, width, steps, n_train=500)
    net_b, mse_b = train_net(args.seed + 1, embed, width, steps, n_train=500)
    print(f"trained two tanh MLPs (width {width}, {steps} Adam steps): test MSE A {mse_a:.4f}, B {mse_b:.4f}")

    hidden_a, hidden_b = net_a[:4], net_b[:4]  # the second hidden layer's activations

    def rep_a(z: torch.Tensor) -> torch.Tensor:
        return hidden_a(embed(z))

    def rep_b(z: torch.Tensor) -> torch.Tensor:
        return hidden_b(embed(z))

    rng = np.random.default_rng(args.seed + 7)
    q = torch.as_tensor(np.linalg.qr(rng.normal(size=(width, width)))[0])
    shift = torch.as_tensor(rng.normal(size=width))

    def rep_a_moved(z: torch.Tensor) -> torch.Tensor:  # rotated, scaled by 3, shifted: the same geometry
        return 3.0 * rep_a(z) @ q + shift

    def rep_a_warped(z: torch.Tensor) -> torch.Tensor:  # the same network read through a warp of its input
        return rep_a(warp(z))

    z = torch.as_tensor(rng.uniform(-1, 1, size=(n_points, 2)))
    rows = {
        "A vs rotated/scaled A": compare(rep_a, rep_a_moved, z),
        "A vs B (another init)": compare(rep_a, rep_b, z),
        "A vs warped A": compare(rep_a, rep_a_warped, z),
    }
    measures = list(next(iter(rows.values())))
    print(f"\ndistances between representations at {n_points} points of the manifold (0 = the same):")
    print(f"{'':24s}" + "".join(f"{m:>15s}" for m in measures))
    for name, d in rows.items():
        print(f"{name:24s}" + "".join(f"{d[m]:15.4f}" for m in measures))

    floor, warped = rows["A vs B (another init)"], rows["A vs warped A"]
    print("\nthe warp, in units of each measure's A-vs-B distance (how far it moves relative to its noise floor):")
    print(f"{'':24s}" + "".join(f"{warped[m] / floor[m]:15.2f}" for m in measures))
    cka, msa = warped["1 - CKA"], warped["MSA (exact)"]
    print(
        f"\nfound: the warp moves MSA to {msa:.2f} ({msa / floor['MSA (exact)']:.1f}x its A-vs-B distance) while"
        f" 1 - CKA is {cka:.3f} ({cka / floor['1 - CKA']:.1f}x); a rotation plus rescaling leaves both at ~0."
        f" ({time.perf_counter() - t0:.0f} s)"
    )


if __name__ == "__main__":
    main()
