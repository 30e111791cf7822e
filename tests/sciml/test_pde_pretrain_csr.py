"""MeshGNN aggregates with cached CSR copies of the COO operator: same values and gradients as the COO product."""

from __future__ import annotations

import torch

from geode.sciml.pde_pretrain import MeshGNN, collate, node_features, random_geometry
from geode.sciml.pde_pretrain.model import GraphBatch


def _batch(dtype: torch.dtype = torch.float32, n: int = 2) -> GraphBatch:
    meshes = [random_geometry(i, resolution=1) for i in range(n)]
    return collate(meshes, [node_features(m) for m in meshes], dtype=dtype)


def test_aggregate_matches_coo_product_and_its_gradient():
    g = _batch()
    h = torch.randn(g.x.shape[0], 8, generator=torch.Generator().manual_seed(0))
    gy = torch.randn(g.operator.shape[0], 8, generator=torch.Generator().manual_seed(1))
    h_ref, h_new = h.clone().requires_grad_(), h.clone().requires_grad_()
    ref = torch.sparse.mm(g.operator, h_ref)
    new = g.aggregate(h_new)
    torch.testing.assert_close(new, ref, rtol=1e-6, atol=1e-7)
    ref.backward(gy)
    new.backward(gy)
    torch.testing.assert_close(h_new.grad, h_ref.grad, rtol=1e-6, atol=1e-7)


def test_aggregate_gradcheck_float64():
    g = _batch(torch.float64, n=1)
    h = torch.randn(g.x.shape[0], 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    assert torch.autograd.gradcheck(g.aggregate, (h.requires_grad_(),))


def test_meshgnn_loss_and_gradients_match_coo_reference(monkeypatch):
    g = _batch(n=3)
    y = torch.randn(g.x.shape[0], 1, generator=torch.Generator().manual_seed(0))
    net = MeshGNN(g.x.shape[1], 1, hidden=8, layers=2)

    def loss_and_grads():
        net.zero_grad()
        loss = torch.mean((net(g) - y) ** 2)
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in net.parameters()]

    new_loss, new_grads = loss_and_grads()
    monkeypatch.setattr(GraphBatch, "aggregate", lambda self, h: torch.sparse.mm(self.operator, h))
    ref_loss, ref_grads = loss_and_grads()
    torch.testing.assert_close(new_loss, ref_loss, rtol=1e-6, atol=1e-7)
    for a, b in zip(new_grads, ref_grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_csr_cache_is_shared_by_with_features_and_follows_the_operator():
    g = _batch()
    h = torch.ones(g.x.shape[0], 2)
    g.aggregate(h)
    g2 = g.with_features(g.x * 2)
    assert g2.__dict__["_csr"] is g.__dict__["_csr"]
    g3 = g.to("cpu")  # a new batch (new operator object on another device): its own copies, same product
    torch.testing.assert_close(g3.aggregate(h), torch.sparse.mm(g.operator, h))
    op = g.operator.coalesce() * 2.0  # a replaced operator is not served from a stale cache
    g.operator = op
    torch.testing.assert_close(g.aggregate(h), torch.sparse.mm(op, h))
