"""Graph learning with geode: Castor inside a PyG model, next to PyG's own convolutions; connectome GNNs as EIV.

What it shows, on graphs the script makes itself (a contextual stochastic block model built with PyG's
``Data`` and ``to_undirected``, at several edge homophilies, with symmetric edge weights):

1. ``CastorConv`` is a PyG ``MessagePassing`` layer with the usual ``(x, edge_index, edge_weight)`` call, so it
   drops into any PyG model: here ``GCNConv -> CastorConv``, trained with a plain full-batch PyTorch loop
   against an MLP, PyG's ``GCNConv`` stack and PyG's ``APPNP``, and geode's ``Castor`` node classifier. Test
   accuracy per homophily, then what Castor's per-node router learned (mean weight of low-pass, high-pass and
   identity), which moves away from low-pass on heterophilous graphs.
2. The connectome errors-in-variables model (``LatentCommunityModel``): ridge on raw correlation matrices
   against one graph convolution (``gcn_features``) whose kNN graph comes from an independent scan, as the
   scan length T grows, and the three mechanisms (``eiv_decomposition``) at one T.

Run::

    python examples/graphs.py            # about a minute on one core
    python examples/graphs.py --smoke    # the smallest size, seconds

Needs the ``graphs`` extra (PyTorch Geometric): ``pip install "geode[graphs]"``; without it the script prints
"skipped: needs ..." and exits with code 77. No asset, no network.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time

import numpy as np
import torch

SKIP = 77


def make_graph(n: int, c: int, homophily: float, seed: int):
    """A contextual SBM as a PyG ``Data``: class-mean features plus noise, edges at the given homophily."""
    assert n % c == 0, "balanced classes: n must be a multiple of c"
    from torch_geometric.data import Data
    from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % c
    y = y[torch.randperm(n, generator=g)]
    means = torch.randn(c, 32, generator=g) * 0.3  # weak features: the graph matters
    x = means[y] + torch.randn(n, 32, generator=g)
    src = torch.randint(0, n, (n * 5,), generator=g)
    same = torch.rand(n * 5, generator=g) < homophily
    members = torch.stack([torch.nonzero(y == k).flatten() for k in range(c)])  # (c, n / c): balanced classes
    other = (y[src] + 1 + torch.randint(0, c - 1, src.shape, generator=g)) % c
    k = torch.where(same, y[src], other)  # the class each edge's other end is drawn from
    dst = members[k, torch.randint(0, n // c, src.shape, generator=g)]
    edge_index, _ = remove_self_loops(torch.stack([src, dst]))
    edge_index = coalesce(to_undirected(edge_index, num_nodes=n), num_nodes=n)  # Castor expects undirected
    xs = torch.nn.functional.normalize(x, dim=1)
    edge_weight = 0.5 + 0.5 * torch.sigmoid((xs[edge_index[0]] * xs[edge_index[1]]).sum(1) * 4)  # w_ij = w_ji
    perm = torch.randperm(n, generator=g)
    masks = [torch.zeros(n, dtype=torch.bool) for _ in range(3)]
    for m, part in zip(masks, (perm[: n // 2], perm[n // 2 : 3 * n // 4], perm[3 * n // 4 :])):
        m[part] = True
    return Data(x=x, y=y, edge_index=edge_index, edge_weight=edge_weight, train_mask=masks[0], val_mask=masks[1],
                test_mask=masks[2])  # fmt: skip


def models(c: int, hops: int) -> dict[str, torch.nn.Module]:
    """PyG models, each a ``torch_geometric.nn.Sequential`` over ``(x, edge_index, edge_weight)``.

    The same encoder (``Z0``: a two-layer MLP to class logits), then a propagation layer: none (the MLP), PyG's
    ``APPNP``, PyG's ``SGConv``-style fixed low-pass (``APPNP`` with ``alpha=0``), or geode's ``CastorConv``;
    beside them a two-layer ``GCNConv`` network and geode's own ``Castor`` classifier.
    """
    from torch_geometric.nn import APPNP, GCNConv, Sequential

    from geode.graphs import Castor, CastorConv

    def encoder() -> list:
        return [
            (torch.nn.Dropout(0.5), "x -> x"),
            (torch.nn.Linear(32, 64), "x -> x"),
            torch.nn.ReLU(),
            (torch.nn.Dropout(0.5), "x -> x"),
            (torch.nn.Linear(64, c), "x -> x"),
        ]

    def with_prop(layer: torch.nn.Module | None) -> torch.nn.Module:
        prop = [] if layer is None else [(layer, "x, edge_index, edge_weight -> x")]
        return Sequential("x, edge_index, edge_weight", encoder() + prop)

    gcn = Sequential("x, edge_index, edge_weight", [
        (torch.nn.Dropout(0.5), "x -> x"),
        (GCNConv(32, 64), "x, edge_index, edge_weight -> x"),
        torch.nn.ReLU(),
        (torch.nn.Dropout(0.5), "x -> x"),
        (GCNConv(64, c), "x, edge_index, edge_weight -> x"),
    ])  # fmt: skip
    return {
        "MLP": with_prop(None),
        "GCNConv x2 (PyG)": gcn,
        f"APPNP K={hops} (PyG)": with_prop(APPNP(K=hops, alpha=0.1)),
        f"low-pass K={hops} (PyG)": with_prop(APPNP(K=hops, alpha=0.0)),
        f"CastorConv K={hops}": with_prop(CastorConv(c, hops=hops)),
        "Castor (geode)": Castor(32, 64, c, hops),
    }


def train(model: torch.nn.Module, data, epochs: int) -> float:
    """Full-batch Adam, the epoch with the best validation accuracy kept; returns its test accuracy."""
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    best_val, best_test = -1.0, 0.0
    for _ in range(epochs):
        model.train()
        opt.zero_grad()
        out = model(data.x, data.edge_index, data.edge_weight)
        torch.nn.functional.cross_entropy(out[data.train_mask], data.y[data.train_mask]).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(data.x, data.edge_index, data.edge_weight).argmax(1)
        val = float((pred[data.val_mask] == data.y[data.val_mask]).float().mean())
        if val > best_val:
            best_val, best_test = val, float((pred[data.test_mask] == data.y[data.test_mask]).float().mean())
    return best_test


def castor_part(n: int, homophilies: tuple[float, ...], epochs: int, hops: int, seed: int) -> None:
    from geode.graphs import CastorConv

    c = 4
    print(f"1. Node classification, {n} nodes, {c} classes, symmetric edge weights; test accuracy (best val epoch)")
    names = list(models(c, hops))
    print(f"   {'homophily':>9}  " + "  ".join(f"{m:>{max(len(m), 6)}}" for m in names))
    routers = {}
    for h in homophilies:
        data = make_graph(n, c, h, seed)
        accs = []
        for name in names:
            torch.manual_seed(seed)
            model = models(c, hops)[name]
            accs.append(train(model, data, epochs))
            conv = next((m for m in model.modules() if isinstance(m, CastorConv)), None)
            if name.startswith("CastorConv") and conv is not None:
                model.eval()
                seen: dict[str, torch.Tensor] = {}

                def keep_input(module: torch.nn.Module, args: tuple, seen: dict = seen) -> None:
                    seen["z0"] = args[0]

                hook = conv.register_forward_pre_hook(keep_input)
                with torch.no_grad():  # the encoder's output Z0 reaches CastorConv; ask it for the router weights
                    model(data.x, data.edge_index, data.edge_weight)
                    _, w = conv(seen["z0"], data.edge_index, data.edge_weight, return_weights=True)
                hook.remove()
                routers[h] = w.mean(dim=(0, 1)).double().numpy()  # mean over hops and nodes
        print(f"   {h:>9.1f}  " + "  ".join(f"{a:>{max(len(m), 6)}.3f}" for a, m in zip(accs, names)))
    print("   CastorConv's router after training (mean weight over hops and nodes: low-pass, high-pass, identity):")
    for h, w in routers.items():
        print(f"   homophily {h:.1f}: {np.round(w, 3).tolist()}")


def connectome_part(ts: tuple[int, ...], n: int, seed: int) -> None:
    from geode.graphs import LatentCommunityModel, cv_r2, eiv_decomposition, gcn_features, raw_features

    model = LatentCommunityModel(p=30, K=5)
    print(f"\n2. Connectomes as errors-in-variables: {n} subjects, 30 regions in 5 communities; cross-validated R2 of")
    print("   a community-smooth target (mean community loading): ridge on raw correlations vs one graph convolution")
    print(f"   {'T':>5} {'raw':>7} {'GCN (indep. graph)':>19} {'gain':>7}")
    for T in ts:
        s = model.sample(n=n, T=T, rng=seed)
        y = s.a.mean(axis=1)
        raw, gcn = cv_r2(raw_features(s.corr), y), cv_r2(gcn_features(s.corr, s.corr_indep, k=5), y)
        print(f"   {T:>5} {raw:>7.3f} {gcn:>19.3f} {gcn - raw:>+7.3f}")
    s = model.sample(n=n, T=ts[len(ts) // 2], rng=seed)
    y = s.a.mean(axis=1)
    r2 = [cv_r2(raw_features(s.corr), y)] + [
        cv_r2(gcn_features(s.corr, g, k=5), y) for g in (s.true_corr, s.corr_indep, s.corr)
    ]
    parts = eiv_decomposition(*r2)
    print(f"   at T = {ts[len(ts) // 2]}: " + ", ".join(f"{k} {v:+.3f}" for k, v in parts.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the smallest size (seconds)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if importlib.util.find_spec("torch_geometric") is None:
        print('skipped: needs the graphs extra (PyTorch Geometric): pip install "geode[graphs]"')
        return SKIP
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    t0 = time.time()
    if args.smoke:
        castor_part(200, (0.2, 0.8), epochs=30, hops=4, seed=args.seed)
        connectome_part((20, 200), n=60, seed=args.seed)
    else:
        castor_part(1000, (0.1, 0.3, 0.5, 0.7, 0.9), epochs=150, hops=8, seed=args.seed)
        connectome_part((10, 20, 50, 100, 400, 1600), n=150, seed=args.seed)
    print(f"\ndone in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
