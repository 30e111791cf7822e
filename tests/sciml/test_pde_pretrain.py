"""pde-pretrain: mesh validation (watertight, degenerate), the cotangent Laplacian, HKS invariances, curvature,
the FE solvers (manufactured solution, conservation, logistic limit), the mesh GNN's batching and the data sets."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geode.sciml.pde_pretrain import (
    HKS_TIMES,
    HeatStream,
    Mesh,
    MeshGNN,
    PointMLP,
    check_mesh,
    collate,
    cotan_laplacian,
    curvature,
    descriptor_targets,
    fisher_kpp_rollout,
    heat_kernel_signature,
    icosphere,
    kpp_dataset,
    node_features,
    poisson_dataset,
    random_geometry,
    random_rotation,
    relative_errors,
    rollout,
    screened_poisson,
    torus,
)


@pytest.fixture(scope="module")
def shapes():
    return [
        random_geometry(s, kind=k, resolution=1 if k != "torus" else 2)
        for s, k in enumerate(["deformed_sphere", "superquadric", "torus"])
    ]


# --------------------------------------------------------------------------------------------------
# The cotangent Laplacian
# --------------------------------------------------------------------------------------------------


def test_cotan_laplacian_annihilates_constants_and_is_symmetric_psd(shapes):
    for m in shapes:
        L, mass = cotan_laplacian(m.vertices, m.faces)
        dense = L.toarray()
        np.testing.assert_allclose(dense, dense.T, atol=1e-12)
        assert np.abs(L @ np.ones(m.n_vertices)).max() < 1e-10
        lam = np.linalg.eigvalsh(dense)
        assert lam.min() > -1e-10 * lam.max()
        assert np.sum(lam < 1e-9 * lam.max()) == 1  # connected surface: the kernel is the constants only
        assert mass.min() > 0


def test_cotan_laplacian_closed_form_on_a_right_triangle_pair():
    # unit square split along its diagonal: off-diagonal weights -(cot a + cot b)/2; the diagonal edge has two
    # right angles opposite it (weight 0), each side one 45-degree angle (weight -1/2)
    v = np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
    f = np.array([[0, 1, 2], [0, 2, 3]])
    L, mass = cotan_laplacian(v, f)
    d = L.toarray()
    assert d[0, 2] == pytest.approx(0.0, abs=1e-12)
    assert d[0, 1] == pytest.approx(-0.5) and d[1, 2] == pytest.approx(-0.5) and d[0, 3] == pytest.approx(-0.5)
    assert d[1, 3] == 0.0
    np.testing.assert_allclose(mass, [1 / 3, 1 / 6, 1 / 3, 1 / 6])


def test_dirichlet_energy_of_a_linear_function_is_its_gradient_times_area():
    # P1 is exact on linear functions: u^T L u = |grad u|^2 * area on a flat mesh
    rng = np.random.default_rng(0)
    flat = np.c_[rng.uniform(size=(30, 2)), np.zeros(30)]
    from scipy.spatial import Delaunay

    tri = Delaunay(flat[:, :2]).simplices
    L, mass = cotan_laplacian(flat, tri)
    u = 2.0 * flat[:, 0] - 3.0 * flat[:, 1]
    assert u @ (L @ u) == pytest.approx(13.0 * mass.sum(), rel=1e-9)


def test_torus_is_closed_and_of_genus_one():
    m = Mesh(*torus(n_major=12, n_minor=6, radii=(1.0, 0.3)))
    assert m.watertight and m.n_vertices == 72
    assert m.n_vertices - len(m.edges()) + len(m.faces) == 0  # Euler characteristic of a torus
    assert m.area == pytest.approx(4 * math.pi**2 * 0.3, rel=0.1)


# --------------------------------------------------------------------------------------------------
# Heat kernel signature and curvature
# --------------------------------------------------------------------------------------------------


def test_hks_invariant_to_rigid_motions(shapes):
    for m in shapes:
        q = random_rotation(7)
        moved = Mesh(m.vertices @ q.T + np.array([0.3, -2.0, 5.0]), m.faces)
        np.testing.assert_allclose(
            heat_kernel_signature(moved, HKS_TIMES), heat_kernel_signature(m, HKS_TIMES), rtol=1e-7, atol=1e-10
        )


def test_hks_equivariant_to_vertex_reordering(shapes):
    m = shapes[0]
    perm = np.random.default_rng(3).permutation(m.n_vertices)  # new vertex k is old vertex perm[k]
    inv = np.argsort(perm)
    shuffled = Mesh(m.vertices[perm], inv[m.faces])
    np.testing.assert_allclose(
        heat_kernel_signature(shuffled, HKS_TIMES), heat_kernel_signature(m, HKS_TIMES)[perm], rtol=1e-7, atol=1e-10
    )


def test_hks_trace_identity_and_small_time_limit(shapes):
    # sum_v m_v HKS(v, t) = sum_k exp(-lambda_k t) (M-orthonormal eigenvectors); HKS -> 1/m_v as t -> 0
    m = shapes[1]
    lam, _ = m.eigenpairs()
    t = np.array([0.05, 0.5, 2.0])
    h = heat_kernel_signature(m, t)
    np.testing.assert_allclose(m.mass @ h, np.exp(-np.outer(lam, t)).sum(0), rtol=1e-9)
    np.testing.assert_allclose(heat_kernel_signature(m, [1e-12])[:, 0], 1 / m.mass, rtol=1e-6)
    assert np.all(np.diff(h, axis=1) < 0)  # decreasing in t


def test_curvature_on_the_sphere_and_gauss_bonnet(shapes):
    h, k = curvature(Mesh(*icosphere(3)))
    assert abs(h.mean() - 1) < 2e-3 and abs(k.mean() - 1) < 1e-2
    for m, chi in zip(shapes, [2, 2, 0]):  # discrete Gauss-Bonnet holds exactly for the angle defect
        _, k = curvature(m)
        assert (k * m.mass).sum() == pytest.approx(2 * math.pi * chi, abs=1e-9)
    assert descriptor_targets(shapes[0]).shape == (shapes[0].n_vertices, len(HKS_TIMES) + 2)


# --------------------------------------------------------------------------------------------------
# Solvers
# --------------------------------------------------------------------------------------------------


def test_screened_poisson_recovers_a_manufactured_solution_under_refinement():
    # u = z on the unit sphere: -Lap z = 2 z, so f = (2 + alpha) z
    alpha, errs = 1.5, []
    for s in (1, 2, 3, 4):
        m = Mesh(*icosphere(s))
        z = m.vertices[:, 2]
        u = screened_poisson(m, (2 + alpha) * z, alpha)
        errs.append(np.sqrt(m.mass @ (u - z) ** 2 / (m.mass @ z**2)))
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(rates > 1.0) and rates[-1] > 1.5 and errs[-1] < 1e-3, (errs, rates)


def test_heat_conserves_mass_and_fisher_kpp_follows_the_logistic_map(shapes):
    m = shapes[2]
    u0 = np.random.default_rng(0).uniform(size=m.n_vertices)
    s = fisher_kpp_rollout(m, u0, kappa=0.05, r=0.0, dt=0.3, n_steps=5)
    np.testing.assert_allclose(s @ m.mass, m.mass @ u0, rtol=1e-10)
    assert s[-1].std() < s[0].std()  # diffusion smooths
    c = np.full(m.n_vertices, 0.1)
    s = fisher_kpp_rollout(m, c, kappa=0.05, r=1.2, dt=0.2, n_steps=4)
    x = 0.1
    for row in s[1:]:
        x = x + 0.2 * 1.2 * x * (1 - x)
        np.testing.assert_allclose(row, x, rtol=1e-10)


# --------------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------------


def test_open_mesh_is_rejected_where_it_matters():
    v, f = icosphere(1)
    open_f = f[1:]  # remove one face: three boundary edges
    with pytest.raises(ValueError, match="not watertight"):
        check_mesh(v, open_f)
    with pytest.raises(ValueError, match="not watertight"):
        Mesh(v, open_f)
    m = Mesh(v, open_f, require_watertight=False)  # the Neumann Laplacian is still defined
    assert not m.watertight and abs(m.L @ np.ones(m.n_vertices)).max() < 1e-10
    with pytest.raises(ValueError, match="watertight"):
        curvature(m)
    square = (np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]), np.array([[0, 1, 2], [0, 2, 3]]))
    with pytest.raises(ValueError, match="not watertight"):
        check_mesh(*square)


def test_degenerate_and_inconsistent_meshes_raise_clear_errors():
    v, f = icosphere(1)
    bad = v.copy()
    a, b, c = f[0]
    bad[c] = 0.5 * (bad[a] + bad[b])  # collinear: zero area
    with pytest.raises(ValueError, match=r"faces\[0\].*degenerate"):
        check_mesh(bad, f)
    rep = f.copy()
    rep[3, 2] = rep[3, 0]
    with pytest.raises(ValueError, match="repeats a vertex"):
        check_mesh(v, rep)
    flip = f.copy()
    flip[5] = flip[5][::-1]
    with pytest.raises(ValueError, match="consistently"):
        check_mesh(v, flip)
    with pytest.raises(ValueError, match="not used"):
        check_mesh(np.vstack([v, [[3.0, 3, 3]]]), f)
    with pytest.raises(ValueError, match="outside"):
        check_mesh(v, f + 1)
    with pytest.raises(TypeError, match="integer"):
        check_mesh(v, f.astype(float))
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        check_mesh(v[:, :2], f)
    with pytest.raises(ValueError, match="finite"):
        check_mesh(np.where(np.arange(len(v))[:, None] == 0, np.nan, v), f)
    with pytest.raises(ValueError, match="alpha"):
        screened_poisson(Mesh(v, f), v[:, 0], 0.0)
    with pytest.raises(ValueError, match="one value per vertex"):
        screened_poisson(Mesh(v, f), v[:5, 0], 1.0)
    with pytest.raises(TypeError, match="Mesh"):
        heat_kernel_signature((v, f), [1.0])
    with pytest.raises(ValueError, match="times"):
        heat_kernel_signature(Mesh(v, f), [0.0, 1.0])


def test_empty_data_sets_raise(shapes):
    with pytest.raises(ValueError, match="empty"):
        collate([], [])
    with pytest.raises(ValueError, match="empty"):
        HeatStream([])
    with pytest.raises(ValueError, match="empty"):
        rollout(MeshGNN(10, 1, hidden=4, layers=1), [], 3)
    with pytest.raises(ValueError, match="one array per mesh"):
        collate(shapes[:2], [node_features(shapes[0])])


# --------------------------------------------------------------------------------------------------
# Network and batching
# --------------------------------------------------------------------------------------------------


def test_aggregation_operators_on_constants(shapes):
    g = collate(shapes, [np.ones((m.n_vertices, 1)) for m in shapes])
    n = g.x.shape[0]
    out = torch.sparse.mm(g.operator, torch.ones(n, 1)).reshape(4, n)
    torch.testing.assert_close(out[0], torch.ones(n))  # the mean of a constant
    assert out[1:].abs().max() < 1e-5  # directional differences of a constant vanish


def test_batching_is_disjoint_and_the_gnn_is_permutation_equivariant(shapes):
    net = MeshGNN(10, 3, hidden=8, layers=3, seed=1)
    feats = [node_features(m, np.random.default_rng(i).normal(size=4)) for i, m in enumerate(shapes)]
    with torch.no_grad():
        together = net(collate(shapes, feats))
        alone = torch.cat([net(collate([m], [x])) for m, x in zip(shapes, feats)])
        torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)
        m, x = shapes[0], feats[0]
        perm = np.random.default_rng(5).permutation(m.n_vertices)
        pm = Mesh(m.vertices[perm], np.argsort(perm)[m.faces])
        torch.testing.assert_close(net(collate([pm], [x[perm]])), net(collate([m], [x]))[perm], atol=1e-5, rtol=1e-5)


def test_gnn_couples_neighbours_and_the_point_mlp_does_not(shapes):
    m = shapes[0]
    x = node_features(m)
    x2 = x.copy()
    x2[0, 6] = 5.0  # perturb one vertex's condition channel
    for net, coupled in ((MeshGNN(10, 1, hidden=8, layers=2), True), (PointMLP(10, 1, hidden=8, layers=2), False)):
        with torch.no_grad():
            d = (net(collate([m], [x2])) - net(collate([m], [x]))).abs().reshape(-1)
        others = torch.cat([d[1:]])
        assert d[0] > 0
        assert (others.max() > 0) == coupled


def test_new_head_keeps_the_encoder(shapes):
    net = MeshGNN(10, 10, hidden=8, layers=2, seed=0)
    new = net.with_new_head(1, seed=3)
    g = collate(shapes[:1], [node_features(shapes[0])])
    with torch.no_grad():
        torch.testing.assert_close(new.encode(g), net.encode(g))
    assert new(g).shape == (shapes[0].n_vertices, 1) and net(g).shape[1] == 10
    with pytest.raises(ValueError, match="in_dim"):
        MeshGNN(5, 1)(g)


def test_data_sets_and_errors(shapes):
    data = poisson_dataset(shapes, 0, alpha=2.0)
    for (x, u), m in zip(data, shapes):
        w = x[0, 6:9]
        assert abs(np.linalg.norm(w) - 1) < 1e-12
        np.testing.assert_allclose(m.L @ u + 2.0 * m.mass * u, m.mass * (m.normals @ w), atol=1e-10)
    g = collate(shapes, [x for x, _ in data])
    y = torch.as_tensor(np.concatenate([u for _, u in data]))
    np.testing.assert_allclose(relative_errors(y, y, g), 0.0)
    np.testing.assert_allclose(relative_errors(2 * y, y, g), 1.0)
    trajs = kpp_dataset(shapes, 0, n_steps=3)

    class Exact(torch.nn.Module):  # a "surrogate" that is told nothing: persistence
        def forward(self, g):
            return torch.zeros(g.x.shape[0], 1)

    err = rollout(Exact(), trajs, 3)
    want = [
        np.sqrt(t["mesh"].mass @ (t["states"][3] - t["states"][0]) ** 2 / (t["mesh"].mass @ t["states"][3] ** 2))
        for t in trajs
    ]
    np.testing.assert_allclose(err, want, rtol=1e-6)
    gb, yb = HeatStream(shapes).sample(np.random.default_rng(0), 2)
    assert gb.n_graphs == 2 and yb.shape == (gb.x.shape[0], 1)
