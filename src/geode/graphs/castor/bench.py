"""Benchmark of Castor: sparse propagation throughput against a dense propagation, and a full-batch epoch.

Case 1 times the Castor block (``K`` routed steps with momentum, sparse message passing over the edge
list) against the same block with the normalised adjacency held as a dense ``N x N`` matrix (the dense
reading of the same filter); the report's edges/s is ``K * |E| / time``. Case 2 times one full-batch
training epoch (forward, backward, Adam step) of Castor against GPR-GNN and APPNP on squirrel (the real
graph when ``benchmark-graphs`` is present, else a CSBM of the same size). Sizes: ``smoke`` 300 nodes,
``quick`` 5000 nodes, ``full`` squirrel with ``K = 10``.

The dense ``Â`` (``N^2`` floats: 108 MB on squirrel) is built once outside the timed call, so the dense
side's measured peak leaves it out; the sparse side's peak holds the per-edge messages. Measured on the
shared 2-core machine (quick, squirrel, K = 10): the sparse block 0.16 s against 0.40 s dense (2.46x
[2.37-2.54], about 25 M edge-steps/s), peak 40 MiB against 2 MiB plus the 108 MB matrix; one training
epoch 0.89x of GPR-GNN's speed (0.94x APPNP's), memory 1.39x.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]


def _graph(size: str) -> tuple[Any, str]:
    from geode.graphs import csbm, default_graph_dir, load_graph

    if size != "smoke" and default_graph_dir() is not None:
        try:
            return load_graph("squirrel"), "squirrel"
        except FileNotFoundError:
            pass
    n = 300 if size == "smoke" else 5000
    return csbm(n, 5, 0.2, degree=20.0 if size == "smoke" else 76.0, num_features=64, seed=0), f"CSBM n={n}"


def cases(size: str) -> list[BenchCase]:
    """Castor's sparse block vs a dense block; one training epoch of Castor vs GPR-GNN and APPNP."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn.conv.gcn_conv import gcn_norm
    from torch_geometric.utils import to_dense_adj

    from geode.graphs import GPRGNN, APPNPNet, Castor, CastorConv

    d, name = _graph(size)
    n, e = d.num_nodes, d.edge_index.size(1)
    hops = 10
    c = int(d.y.max()) + 1
    torch.manual_seed(0)
    conv = CastorConv(c, hops)
    z = torch.randn(n, c)
    ei, w = gcn_norm(d.edge_index, None, n, add_self_loops=True)
    dense = to_dense_adj(ei, edge_attr=w, max_num_nodes=n)[0]

    def sparse_block() -> Any:
        with torch.no_grad():
            return conv(z, d.edge_index)

    def dense_block() -> Any:  # the same filter with Â dense
        with torch.no_grad():
            h, h_prev = z, z
            for k in range(hops):
                s = dense @ h
                r = h - s
                a = torch.softmax(conv.router(torch.cat([r, z], 1)) + conv.hop_bias[k], 1)
                u = a[:, :1] * s + a[:, 1:2] * r + a[:, 2:] * h
                if k > 0:
                    u = u + conv.beta[k] * (h - h_prev)
                h_prev, h = h, u
            return h

    x, y = d.x.float(), d.y

    def epoch(model: Any) -> Any:
        opt = torch.optim.Adam(model.parameters(), lr=0.01)

        def step() -> float:
            model.train()
            opt.zero_grad()
            loss = F.cross_entropy(model(x, d.edge_index), y)
            loss.backward()
            opt.step()
            return float(loss.detach())

        return step

    f = int(x.size(1))
    return [
        BenchCase(
            f"Castor block, K={hops}, {name} ({n} nodes, {e} directed edges): sparse vs dense propagation",
            candidate=sparse_block,
            baselines={"dense Â": dense_block},
        ),
        BenchCase(
            f"one full-batch training epoch on {name} (hidden 64, K={hops})",
            candidate=epoch(Castor(f, 64, c, hops)),
            baselines={"GPR-GNN": epoch(GPRGNN(f, 64, c, hops=hops)), "APPNP": epoch(APPNPNet(f, 64, c, hops=hops))},
            differs={"*": "other GNNs (GPR-GNN, APPNP) with their own weights: other losses by design"},
        ),
    ]
