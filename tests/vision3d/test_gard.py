import numpy as np
import pytest
import torch

from geode.vision3d.gard import (
    DEGRADATIONS,
    FeatureDecoder,
    GARDDenoiser,
    GARDRestorer,
    MultiViewReconstructor,
    PixelRestorer,
    attention_alignment_loss,
    correspondence_targets,
    degrade_views,
    euler_flow,
    flow_interpolant,
    patch_points,
    render_multiview_scenes,
    sample_flow_times,
)
from geode.vision3d.gard.model import ViewAttention, check_views

HW = (8, 12)


def _small(seed=0, cross_view=True, align=1.0, noise_lvl=0.3):
    torch.manual_seed(seed)
    rec = MultiViewReconstructor(HW, patch=4, dim=16, heads=2, early=2, late=2)
    den = GARDDenoiser(16, rec.n_tokens, hidden=16, depth=2, heads=2, cross_view=cross_view)
    dec = FeatureDecoder(16, 4, HW, hidden=16)
    return GARDRestorer(rec, den, dec, align_weight=align, noise_lvl=noise_lvl, steps=3)


def _scenes(n=3, views=3, seed=0):
    sc = render_multiview_scenes(n, n_views=views, height=HW[0], width=HW[1], seed=seed)
    lq, _ = degrade_views(sc["images"], seed=seed + 1)
    return sc, torch.tensor(sc["images"]), torch.tensor(lq)


def test_reconstructor_is_frozen_during_restoration_training():
    gr = _small()
    sc, clean, lq = _scenes()
    before = {k: v.clone() for k, v in gr.reconstructor.state_dict().items()}
    opt = torch.optim.Adam(gr.parameters(), lr=1e-2)  # every parameter handed over: only the denoiser may move
    g = torch.Generator().manual_seed(0)
    den_before = [p.clone() for p in gr.denoiser.parameters()]
    for _ in range(3):
        out = gr.loss(clean, lq, cam_x=torch.tensor(sc["cam_x"]), focal=float(sc["focal"]), generator=g)
        opt.zero_grad()
        out["loss"].backward()
        assert all(p.grad is None for p in gr.reconstructor.parameters())
        assert all(p.grad is None for p in gr.decoder.parameters())
        opt.step()
    after = gr.reconstructor.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert any(not torch.equal(a, b) for a, b in zip(den_before, gr.denoiser.parameters()))
    assert float(out["align"].detach()) > 0
    gr.train()
    assert not gr.reconstructor.training and gr.denoiser.training


def test_linear_path_and_velocity_identities():
    g = torch.Generator().manual_seed(0)
    x0, x1 = torch.randn(4, 2, 5, 3, generator=g), torch.randn(4, 2, 5, 3, generator=g)
    xt, u = flow_interpolant(x0, x1, torch.zeros(4))
    assert torch.equal(xt, x0) and torch.allclose(u, x1 - x0)
    assert torch.allclose(flow_interpolant(x0, x1, torch.ones(4))[0], x1)
    t = torch.rand(4, generator=g) * 0.8
    h = 1e-3
    fd = (
        flow_interpolant(x0.double(), x1.double(), t.double() + h)[0]
        - flow_interpolant(x0.double(), x1.double(), t.double())[0]
    ) / h
    assert torch.allclose(fd, (x1 - x0).double(), atol=1e-6)
    # the exact velocity of a linear path carries x0 to x1 with any number of Euler steps
    for steps in (1, 4, 17):
        assert torch.allclose(euler_flow(lambda x, s: x1 - x0, x0, steps), x1, atol=1e-5)
    # a time-dependent field: dx/dt = 2t integrates to x0 + 1 (Euler's bias shrinks as 1/steps)
    errs = [
        float((euler_flow(lambda x, s: 2 * s.reshape(-1, 1, 1, 1) * torch.ones_like(x), x0, k) - (x0 + 1)).abs().max())
        for k in (5, 50)
    ]
    assert errs[1] < errs[0] / 5


def test_ode_at_zero_noise_returns_the_input_and_untrained_target_is_the_path_velocity():
    gr = _small(noise_lvl=0.0)
    _, clean, lq = _scenes()
    z_lq = gr.encode(lq)
    assert torch.equal(gr.restore_features(lq), z_lq)  # zero-initialised velocity, zero noise: identity
    # with the LQ conditioning kept and no noise, the zero-velocity loss is |z_HQ - z_LQ|^2: the target is x1 - x0
    gr.cond_drop, gr.align_weight = 0.0, 0.0
    out = gr.loss_from_features(gr.encode(clean), z_lq, generator=torch.Generator().manual_seed(0))
    assert float(out["flow"]) == pytest.approx(float((gr.encode(clean) - z_lq).pow(2).mean()), rel=1e-6)
    # restoration with noise starts from noise_lvl * eps + z_LQ: untrained, it returns exactly that point
    gr.noise_lvl = 0.3
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    eps = torch.randn(z_lq.shape, generator=g1)
    assert torch.allclose(gr.restore_features(lq, generator=g2), z_lq + 0.3 * eps)


def test_flow_times():
    t = sample_flow_times(2000, torch.Generator().manual_seed(0))
    assert float(t.min()) > 0 and float(t.max()) < 1 and abs(float(t.median()) - 0.5) < 0.05
    ts = sample_flow_times(2000, torch.Generator().manual_seed(0), shift=3.0)
    assert torch.all(ts >= t) and float(ts.median()) > 0.7
    with pytest.raises(ValueError, match="shift"):
        sample_flow_times(3, shift=0.5)


def _perm_equivariant(f, x, perm):
    return torch.allclose(f(x[:, perm]), f(x)[:, perm], atol=1e-5)


def test_cross_view_attention_is_equivariant_to_view_permutation_and_mixes_views():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 6, 8)
    perm = torch.tensor([2, 0, 3, 1])
    glob, loc = ViewAttention(8, 2, "global"), ViewAttention(8, 2, "local")
    assert _perm_equivariant(glob, x, perm) and _perm_equivariant(loc, x, perm)
    y = x.clone()
    y[:, 1] += 1.0
    assert not torch.allclose(glob(y)[:, 0], glob(x)[:, 0])  # global attention reads the other views
    assert torch.allclose(loc(y)[:, 0], loc(x)[:, 0])  # local attention does not
    den = GARDDenoiser(8, 6, hidden=8, depth=2, heads=2)
    for p in den.parameters():  # leave the zero init so that the blocks are not the identity
        torch.nn.init.normal_(p, std=0.3)
    t = torch.full((2,), 0.4)
    assert _perm_equivariant(lambda z: den(z, t), x, perm)
    rec = MultiViewReconstructor(HW, 4, dim=8, heads=2)
    imgs = torch.rand(2, 4, 3, *HW)
    assert _perm_equivariant(rec, imgs, perm)


def test_correspondences_and_alignment_loss():
    b, v, n, grid = 1, 2, 6, (2, 3)
    pts = torch.randn(b, 1, n, 3).expand(b, v, n, 3).clone()
    pts[..., 2] = pts[..., 2].abs() + 3
    tgt, mask = correspondence_targets(pts, grid, tau=0.01)
    assert torch.equal(tgt[0, 0, 1].argmax(-1), torch.arange(n))  # identical clouds: match p to p
    assert mask[0, 0, 1].all() and not mask[0, 0, 0].any()
    perfect = torch.zeros(b, v * n, v * n)
    perfect[0, :n, n:] = tgt[0, 0, 1]
    perfect[0, n:, :n] = tgt[0, 1, 0]
    uniform = torch.full((b, v * n, v * n), 1.0 / (v * n))
    assert float(attention_alignment_loss(perfect, tgt, mask, v)) < float(
        attention_alignment_loss(uniform, tgt, mask, v)
    )
    assert float(attention_alignment_loss(uniform, tgt, mask, v)) == pytest.approx(np.log(n), rel=1e-4)


def test_renderer_geometry_is_consistent_across_views():
    sc = render_multiview_scenes(2, n_views=2, height=24, width=32, seed=3)
    d, cam, f = sc["depth"], sc["cam_x"], float(sc["focal"])
    errs = []
    for s in range(2):
        v_, u_ = np.mgrid[0:24, 0:32]
        z = d[s, 0]
        x = cam[s, 0] + (u_ + 0.5 - 16) / f * z
        u1 = np.round((x - cam[s, 1]) * f / z + 16 - 0.5).astype(int)
        ok = (u1 >= 0) & (u1 < 32)
        errs.append(np.abs(d[s, 1][v_[ok], u1[ok]] - z[ok]) / z[ok])
    assert np.median(np.concatenate(errs)) < 0.02
    pts = patch_points(torch.full((1, 2, 8, 12), 4.0), torch.tensor([[0.0, 1.0]]), 12.0, 4)
    assert torch.allclose(pts[0, 1, :, 0] - pts[0, 0, :, 0], torch.ones(6)) and torch.allclose(
        pts[..., 2], torch.tensor(4.0)
    )


def test_degradations():
    sc = render_multiview_scenes(2, n_views=2, height=16, width=16, seed=0)
    for kind in DEGRADATIONS:
        y, k = degrade_views(sc["images"], kind, seed=1)
        assert y.shape == sc["images"].shape and y.min() >= 0 and y.max() <= 1
        assert np.abs(y - sc["images"]).mean() > 0.01 and (k == DEGRADATIONS.index(kind)).all()
        assert np.array_equal(y, degrade_views(sc["images"], kind, seed=1)[0])
    with pytest.raises(ValueError, match="kind"):
        degrade_views(sc["images"], "fog")
    with pytest.raises(ValueError, match="images"):
        degrade_views(sc["images"][0])


def test_bad_input_gives_clear_errors():
    gr = _small()
    _, clean, lq = _scenes()
    with pytest.raises(ValueError, match="same size"):
        check_views([torch.rand(3, 8, 12), torch.rand(3, 8, 16)])
    with pytest.raises(ValueError, match="at least 2 views"):
        gr.restore(lq[:, :1])
    with pytest.raises(ValueError, match="at least 2 views"):
        check_views([torch.rand(3, 8, 12)])
    with pytest.raises(ValueError, match="same shape"):
        gr.loss(clean[:, :2], lq, cam_x=torch.zeros(3, 3), focal=12.0)
    with pytest.raises(ValueError, match="multiples of the patch"):
        gr.restore(torch.rand(1, 2, 3, 9, 12))
    with pytest.raises(ValueError, match="must be 8x12"):
        gr.restore(torch.rand(1, 2, 3, 12, 12))
    with pytest.raises(ValueError, match="cam_x and focal"):
        gr.loss(clean, lq)
    with pytest.raises(ValueError, match="global"):
        GARDDenoiser(16, 6, depth=2, align_layer=0)
    with pytest.raises(ValueError, match="cross-view"):
        GARDRestorer(gr.reconstructor, GARDDenoiser(16, 6, depth=2, cross_view=False), align_weight=1.0)
    with pytest.raises(ValueError, match="denoiser.dim"):
        GARDRestorer(gr.reconstructor, GARDDenoiser(8, 6, depth=2))
    with pytest.raises(TypeError, match="reconstructor"):
        GARDRestorer(torch.nn.Linear(2, 2), gr.denoiser)


def test_pixel_restorer_starts_near_identity_and_restore_outputs():
    _, _, lq = _scenes()
    pr = PixelRestorer(4, HW, hidden=16, depth=2, heads=2)
    torch.nn.init.zeros_(pr.refine[-1].weight)
    torch.nn.init.zeros_(pr.refine[-1].bias)
    assert torch.allclose(pr(lq), lq)
    out = _small().restore(lq, generator=torch.Generator().manual_seed(0))
    assert out["depth"].shape == (3, 3, *HW) and out["rgb"].shape == lq.shape and (out["depth"] > 0).all()
