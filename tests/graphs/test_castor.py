"""Castor: filter limits, momentum-zero equivalence, router shapes, input validation; graph data utilities."""

from __future__ import annotations

import socket

import numpy as np
import pytest
import torch

from geode.graphs import (
    GCN,
    GPRGNN,
    MLP,
    APPNPNet,
    Castor,
    CastorConv,
    NormProp,
    csbm,
    edge_homophily,
    fit_node_classifier,
    load_graph,
    mixed_homophily_graph,
    validate_edge_index,
)
from geode.graphs.baselines import ACMGCN, linear


def cycle(n: int) -> torch.Tensor:
    i = torch.arange(n)
    j = (i + 1) % n
    return torch.cat([torch.stack([i, j]), torch.stack([j, i])], dim=1)


def forced(conv: CastorConv, which: int) -> CastorConv:
    """Make the router emit a one-hot choice of primitive ``which`` at every node and hop."""
    with torch.no_grad():
        for p in conv.router.parameters():
            p.zero_()
        conv.hop_bias.zero_()
        conv.hop_bias[:, which] = 50.0
    return conv


def test_low_pass_keeps_a_constant_signal_and_high_pass_kills_it():
    ei = cycle(12)  # regular graph: Â 1 = 1
    z = torch.ones(12, 3) * 2.5
    low = forced(CastorConv(3, hops=4, momentum=False), 0)
    high = forced(CastorConv(3, hops=1, momentum=False), 1)
    ident = forced(CastorConv(3, hops=4, momentum=False), 2)
    assert torch.allclose(low(z, ei), z, atol=1e-5)
    assert torch.allclose(high(z, ei), torch.zeros_like(z), atol=1e-5)
    assert torch.allclose(ident(z, ei), z)


def test_pure_low_pass_is_k_steps_of_normalised_propagation():
    g = torch.Generator().manual_seed(0)
    d = csbm(60, 3, 0.5, seed=1)
    z = torch.randn(60, 3, generator=g)
    conv = forced(CastorConv(3, hops=3, momentum=False), 0)
    ref = z
    prop = NormProp()
    for _ in range(3):
        ref = prop(ref, d.edge_index)
    assert torch.allclose(conv(z, d.edge_index), ref, atol=1e-5)


def test_momentum_zero_is_first_order_propagation():
    d = csbm(80, 3, 0.3, seed=2)
    z = torch.randn(80, 4, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    with_m = CastorConv(4, hops=5, momentum=True)
    torch.manual_seed(0)
    without = CastorConv(4, hops=5, momentum=False)
    assert torch.equal(with_m.betas(), torch.zeros(5))
    assert torch.allclose(with_m(z, d.edge_index), without(z, d.edge_index), atol=1e-6)
    with torch.no_grad():
        with_m.beta.fill_(0.3)
    assert not torch.allclose(with_m(z, d.edge_index), without(z, d.edge_index), atol=1e-4)


def test_momentum_is_heavy_ball_on_the_latest_change():
    ei = cycle(10)
    z = torch.randn(10, 2, generator=torch.Generator().manual_seed(3))
    conv = forced(CastorConv(2, hops=2, momentum=True), 0)
    with torch.no_grad():
        conv.beta.fill_(0.5)
    prop = NormProp()
    h1 = prop(z, ei)
    h2 = prop(h1, ei) + 0.5 * (h1 - z)
    assert torch.allclose(conv(z, ei), h2, atol=1e-5)


def test_router_weights_are_per_node_simplex_points_and_gradients_reach_beta():
    d = csbm(50, 3, 0.5, seed=0)
    model = Castor(50, 16, 3, hops=4)
    out, w = model(d.x, d.edge_index, return_weights=True)
    assert out.shape == (50, 3) and w.shape == (4, 50, 3)
    assert torch.allclose(w.sum(-1), torch.ones(4, 50), atol=1e-6) and bool((w >= 0).all())
    out.sum().backward()
    assert model.conv.beta.grad is not None and model.conv.router.weight.grad is not None
    assert model.conv.beta.grad[0] == 0  # no momentum at step 0


def test_default_hop_bias_is_the_smoothing_then_preserve_prior():
    b = CastorConv(4, hops=5).hop_bias.detach()
    assert torch.allclose(b[0], torch.tensor([0.5, 0.0, 0.0])) and torch.allclose(b[-1], torch.tensor([0.0, 0.0, 0.5]))


def test_castor_learns_a_heterophilous_csbm_better_than_mlp():
    d = csbm(400, 4, 0.1, seed=3, signal=0.8)
    masks = (d.train_mask, d.val_mask, d.test_mask)
    torch.manual_seed(0)
    c = fit_node_classifier(
        Castor(50, 32, 4, 4), d, masks, lr=0.01, epochs=150, patience=150, no_decay=Castor.no_decay
    )
    torch.manual_seed(0)
    m = fit_node_classifier(MLP(50, 32, 4), d, masks, lr=0.01, epochs=150, patience=150)
    assert c.finite and c.val > m.val


@pytest.mark.parametrize(
    "make",
    [
        lambda: MLP(50, 8, 4),
        lambda: GCN(50, 8, 4),
        lambda: GCN(50, 8, 4, layers=3),
        lambda: APPNPNet(50, 8, 4, hops=3),
        lambda: GPRGNN(50, 8, 4, hops=3),
        lambda: ACMGCN(50, 8, 4),
        lambda: Castor(50, 8, 4, 3),
    ],
)
def test_every_model_gives_logits_and_accepts_sparse_features(make):
    d = csbm(40, 4, 0.5, seed=0)
    torch.manual_seed(0)
    m = make().eval()
    dense = m(d.x, d.edge_index)
    sparse = m(d.x.to_sparse(), d.edge_index)
    assert dense.shape == (40, 4) and torch.allclose(dense, sparse, atol=1e-5)


def test_sparse_linear_matches_dense():
    lin = torch.nn.Linear(6, 3)
    x = torch.randn(5, 6) * (torch.rand(5, 6) > 0.6)
    assert torch.allclose(linear(lin, x.to_sparse()), lin(x), atol=1e-6)


def test_gpr_initialisation_is_ppr_and_sums_to_one():
    g = GPRGNN(4, 4, 2, hops=10, alpha=0.1).prop.gamma.detach()
    assert abs(float(g.sum()) - 1.0) < 1e-6 and abs(float(g[0]) - 0.1) < 1e-7


def test_csbm_has_the_requested_homophily_and_is_symmetric():
    for h in (0.1, 0.5, 0.9):
        d = csbm(1000, 4, h, seed=0)
        assert abs(edge_homophily(d.edge_index, d.y) - h) < 0.03
        validate_edge_index(d.edge_index, 1000, symmetric=True)
        assert int(d.train_mask.sum() + d.val_mask.sum() + d.test_mask.sum()) == 1000
        assert not bool((d.train_mask & d.test_mask).any())
    a, b = csbm(100, 4, 0.5, seed=5), csbm(100, 4, 0.5, seed=5)
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)


def test_mixed_graph_has_two_local_homophilies():
    d = mixed_homophily_graph(2000, 4, (0.85, 0.15), seed=0)
    s, t = d.edge_index
    same = (d.y[s] == d.y[t]).float()
    for r, h in ((0, 0.85), (1, 0.15)):
        sel = d.region[s] == r
        assert bool((d.region[t][sel] == r).all())  # edges stay inside a half
        assert abs(float(same[sel].mean()) - h) < 0.04


def test_bad_inputs_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="outside the node range"):
        validate_edge_index(torch.tensor([[0, 5], [1, 0]]), 3)
    with pytest.raises(ValueError, match="symmetric"):
        validate_edge_index(torch.tensor([[0], [1]]), 3, symmetric=True)
    with pytest.raises(ValueError, match="shape"):
        validate_edge_index(torch.tensor([0, 1]), 3)
    with pytest.raises(ValueError, match="homophily"):
        csbm(100, 4, 1.5)
    with pytest.raises(ValueError, match="hops"):
        CastorConv(4, hops=0)
    with pytest.raises(ValueError, match="router_input"):
        CastorConv(4, router_input="neighbours")
    with pytest.raises(ValueError, match="z0"):
        CastorConv(4)(torch.zeros(3, 5), cycle(3))
    with pytest.raises(ValueError, match="dropout"):
        Castor(4, 4, 2, dropout=1.0)
    with pytest.raises(ValueError, match="name must be one of"):
        load_graph("pubmed", tmp_path)
    with pytest.raises(FileNotFoundError, match="nothing is downloaded"):
        load_graph("cora", tmp_path, cache=tmp_path / "cache")
    with pytest.raises(FileNotFoundError, match="not found"):
        load_graph("texas", tmp_path / "absent")


def test_loaders_read_planetoid_and_npz_files_without_network(tmp_path, monkeypatch):
    """Tiny files in the real formats, read with sockets blocked (no download is ever attempted)."""
    import pickle

    import scipy.sparse as sp

    def no_network(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", no_network)
    rng = np.random.default_rng(0)
    n, f, c = 30, 5, 3
    src = tmp_path / "graphs"
    src.mkdir()
    np.savez(
        src / "texas.npz",
        node_features=rng.random((n, f)).astype(np.float32),
        node_labels=rng.integers(0, c, n),
        edges=np.array([[0, 1], [1, 2], [2, 3]]),
        train_masks=np.ones((10, n), bool),
        val_masks=np.zeros((10, n), bool),
        test_masks=np.zeros((10, n), bool),
    )
    d = load_graph("texas", src, cache=tmp_path / "cache")
    assert d.x.shape == (n, f) and d.train_mask.shape == (n, 10) and d.edge_index.size(1) == 6
    validate_edge_index(d.edge_index, n, symmetric=True)
    # Planetoid: 6 train (x rows), 500 val after them, 4 test nodes (test.index) after allx's 510 rows
    m = 514
    y = np.eye(c)[rng.integers(0, c, m)]
    objs = {
        "x": sp.csr_matrix(rng.random((6, f))),
        "allx": sp.csr_matrix(rng.random((510, f))),
        "tx": sp.csr_matrix(rng.random((4, f))),
        "y": y[:6],
        "ally": y[:510],
        "ty": y[510:],
        "graph": {i: [(i + 1) % m] for i in range(m)},
    }
    for k, v in objs.items():
        with open(src / f"ind.cora.{k}", "wb") as fh:
            pickle.dump(v, fh)
    (src / "ind.cora.test.index").write_text("\n".join(str(i) for i in range(510, m)))
    d = load_graph("cora", src, cache=tmp_path / "cache")
    assert d.num_nodes == m and d.x.shape == (m, f) and int(d.train_mask.sum()) == 6
    assert not any(p.is_file() and not p.is_symlink() for p in (tmp_path / "cache" / "Cora" / "raw").iterdir())


def test_sparse_input_dropout_drops_stored_entries_only():
    from geode.graphs.baselines import input_dropout

    x = torch.zeros(50, 40)
    x[torch.rand(50, 40, generator=torch.Generator().manual_seed(0)) > 0.8] = 1.0
    torch.manual_seed(0)
    out = input_dropout(x.to_sparse(), 0.5, training=True).to_dense()
    assert bool((out[x == 0] == 0).all())
    kept = out[x == 1]
    assert set(kept.unique().tolist()) <= {0.0, 2.0} and 0.35 < float((kept > 0).float().mean()) < 0.65
    assert torch.equal(input_dropout(x.to_sparse(), 0.5, training=False).to_dense(), x)


def test_training_rejects_a_directed_or_out_of_range_graph():
    d = csbm(40, 4, 0.5, seed=0)
    masks = (d.train_mask, d.val_mask, d.test_mask)
    directed = d.clone()
    directed.edge_index = d.edge_index[:, d.edge_index[0] < d.edge_index[1]]
    with pytest.raises(ValueError, match="data.edge_index must be symmetric"):
        fit_node_classifier(MLP(50, 8, 4), directed, masks, epochs=1)
    bad = d.clone()
    bad.edge_index = torch.tensor([[0, 40], [40, 0]])
    with pytest.raises(ValueError, match="outside the node range"):
        fit_node_classifier(MLP(50, 8, 4), bad, masks, epochs=1)


# -- issue 43: CastorConv takes edge_weight (and a sparse adjacency) like every PyG conv, warns on directed graphs --


def test_castor_conv_takes_edge_weight_like_pyg_convs():
    from torch_geometric.nn import APPNP

    d = csbm(60, 3, 0.5, seed=1)
    g = torch.Generator().manual_seed(0)
    s, t = d.edge_index
    w = torch.rand(s.numel(), generator=g) + 0.1
    w = 0.5 * (w + w[_reverse_positions(d.edge_index)])  # symmetric weights
    z = torch.randn(60, 3, generator=g)
    conv = forced(CastorConv(3, hops=3, momentum=False), 0)  # the low-pass limit
    ref = APPNP(K=3, alpha=0.0)(z, d.edge_index, w)
    assert torch.allclose(conv(z, d.edge_index, w), ref, atol=1e-5)
    assert torch.allclose(conv(z, d.edge_index, edge_weight=w), ref, atol=1e-5)
    assert not torch.allclose(conv(z, d.edge_index), ref, atol=1e-3)  # the weights matter
    assert torch.allclose(conv(z, d.edge_index, torch.ones_like(w)), conv(z, d.edge_index), atol=1e-6)
    out, trace = conv(z, d.edge_index, w, return_weights=True)
    assert torch.allclose(out, ref, atol=1e-5) and trace.shape == (3, 60, 3)
    model = Castor(50, 8, 3, hops=2).eval()
    assert model(d.x, d.edge_index, w).shape == (60, 3)
    w.requires_grad_(True)  # learnable edge weights get a gradient (no stale cache)
    conv(z, d.edge_index, w).sum().backward()
    assert w.grad is not None and bool(torch.isfinite(w.grad).all())


def test_castor_conv_accepts_a_sparse_adjacency_like_pyg_convs():
    from torch_geometric.utils import to_torch_coo_tensor

    d = csbm(50, 3, 0.4, seed=2)
    w = torch.rand(d.edge_index.size(1), generator=torch.Generator().manual_seed(1))
    w = 0.5 * (w + w[_reverse_positions(d.edge_index)])
    adj_t = to_torch_coo_tensor(d.edge_index.flip(0), w, size=50)  # PyG's adj_t: row = target
    z = torch.randn(50, 4, generator=torch.Generator().manual_seed(2))
    torch.manual_seed(0)
    conv = CastorConv(4, hops=3)
    assert torch.allclose(conv(z, adj_t), conv(z, d.edge_index, w), atol=1e-5)


def test_castor_conv_warns_on_a_directed_edge_index():
    import warnings

    z = torch.randn(4, 2)
    conv = CastorConv(2, hops=2)
    with pytest.warns(UserWarning, match="directed"):
        conv(z, torch.tensor([[0, 1, 2], [1, 2, 3]]))  # a path, one direction only
    sym = cycle(4)
    w = torch.arange(1.0, 9.0)  # w(i, j) != w(j, i)
    with pytest.warns(UserWarning, match="directed|symmetric"):
        conv(z, sym, w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        conv(z, sym)
        conv(z, sym, torch.ones(8))


def test_castor_conv_documents_every_argument():
    import inspect

    doc = inspect.getdoc(CastorConv) or ""
    for name in inspect.signature(CastorConv.__init__).parameters:
        if name != "self":
            assert f"{name} :" in doc, f"CastorConv's docstring does not document {name}"
    fwd = inspect.getdoc(CastorConv.forward) or ""
    for name in ("edge_index", "edge_weight", "return_weights"):
        assert name in fwd


def _reverse_positions(edge_index: torch.Tensor) -> torch.Tensor:
    """For a symmetric edge_index, the position of each edge's reverse."""
    n = int(edge_index.max()) + 1
    code = edge_index[0] * n + edge_index[1]
    rev = edge_index[1] * n + edge_index[0]
    order = torch.argsort(code)
    return order[torch.searchsorted(code[order], rev)]
