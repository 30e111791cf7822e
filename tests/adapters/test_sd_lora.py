"""Tests of SD-LoRA: limit case = CLIP-LoRA, merge/unmerge, teacher unused at inference, gradients."""

from __future__ import annotations

import copy

import pytest
import torch

from geode.adapters import LoRALinear, adapter_modules, inject_adapters
from geode.adapters.sd_lora import GraphTeacher, RelationWorld, SDLoRA, TinyCLIP, cache_logits, fit, pretrain_clip


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    world = RelationWorld()
    clip = TinyCLIP(vocab_size=world.vocab_size, d=16, layers=1, heads=2, embed_dim=8)
    for p in clip.parameters():
        p.requires_grad_(False)
    x, y = world.sample(world.novel, 2, 0)
    return world, clip, x, y, world.captions(world.novel)


def _trained(clip, x, y, cap, lam, seed=0, steps=3):
    m = SDLoRA(clip, lambda_distill=lam, lambda_ppa=lam, generator=torch.Generator().manual_seed(seed))
    fit(m, x, y, cap, steps=steps, lr=1e-2, batch_size=8, seed=seed)
    return m


def test_zero_lambdas_is_clip_lora(setup):
    world, clip, x, y, cap = setup
    sd = _trained(clip, x, y, cap, 0.0)
    # plain CLIP-LoRA by hand: the same injection, initialisation and training loop
    ref = copy.deepcopy(clip)
    gen = torch.Generator().manual_seed(0)
    inject_adapters(ref, ["q_proj", "k_proj", "v_proj"], lambda lin: LoRALinear(lin, 2, None, generator=gen))
    params = [p for n, p in ref.named_parameters() if "lora_" in n]
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 3)
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        idx = torch.randperm(len(x), generator=g)[:8]
        loss = torch.nn.functional.cross_entropy(ref(x[idx], cap), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    with torch.no_grad():
        assert torch.allclose(sd.predict(x, cap), ref(x, cap), atol=1e-5)
    assert len(sd.trainable()) == len(params)  # no teacher parameters train when both lambdas are 0


def test_teacher_changes_training_but_not_inference_path(setup):
    world, clip, x, y, cap = setup
    a, b = _trained(clip, x, y, cap, 0.0), _trained(clip, x, y, cap, 1.0)
    with torch.no_grad():
        assert not torch.allclose(a.predict(x, cap), b.predict(x, cap))  # the teacher's losses reach LoRA
    b.build_cache(x, y, 8)
    before = b.predict(x, cap, alpha=1.0, beta=3.0)
    calls = []
    h = b.teacher.register_forward_hook(lambda *_: calls.append(1))
    b.predict(x, cap, alpha=1.0, beta=3.0)
    h.remove()
    assert not calls
    b.drop_teacher()
    assert torch.equal(before, b.predict(x, cap, alpha=1.0, beta=3.0))
    with pytest.raises(RuntimeError, match="teacher"):
        b.loss(x, y, cap, None)


def test_merge_unmerge_identity_and_peft_shape(setup, tmp_path):
    world, clip, x, y, cap = setup
    m = _trained(clip, x, y, cap, 1.0)
    with torch.no_grad():
        before = m.predict(x, cap)
        m.merge()
        assert torch.allclose(m.predict(x, cap), before, atol=1e-5)
        m.unmerge()
        assert torch.allclose(m.predict(x, cap), before, atol=1e-6)
    from geode.adapters import load_peft_lora, save_peft_lora

    save_peft_lora(m.student, tmp_path)
    other = copy.deepcopy(clip)
    load_peft_lora(other, tmp_path)
    with torch.no_grad():
        assert torch.allclose(other(x, cap), before, atol=1e-5)
    assert len(adapter_modules(m.student)) == 6  # q/k/v of both encoders, one layer each


def test_teacher_gradient_matches_finite_differences(setup):
    torch.manual_seed(1)
    t = GraphTeacher(6, 4, 2, hidden=5, knn=1, top_k=1.0).double()
    tok = torch.randn(2, 5, 6, dtype=torch.double, requires_grad=True)
    txt = torch.nn.functional.normalize(torch.randn(3, 4, dtype=torch.double), dim=-1).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: t(a, b)["image"], (tok, txt))


def test_relations_and_cache(setup):
    t = GraphTeacher(4, 4, 2, knn=0)
    rel = t.relations(torch.randn(1, 4, 4), 2)[0]
    assert rel[0, 0] == 3 and (rel[0, 1:5] == 1).all() and (rel[1:5, 5:] == 2).all()
    assert rel[1, 2] == 0 and rel[1, 4] == -1  # grid neighbours only (patches 0 and 3 are diagonal)
    assert (rel[5, 6] == -1) and (rel[5, 5] == 3)
    f = torch.nn.functional.normalize(torch.randn(3, 4), dim=-1)
    vals = torch.eye(3)
    out = cache_logits(f, f, vals, alpha=2.0, beta=5.0)
    assert torch.allclose(out.diagonal(), torch.full((3,), 2.0))  # exp(0) on a query's own key


def test_bad_input(setup):
    world, clip, x, y, cap = setup
    with pytest.raises(ValueError, match="lambda_ppa"):
        SDLoRA(clip, lambda_ppa=-1.0)
    with pytest.raises(TypeError, match="clip"):
        SDLoRA(torch.nn.Linear(2, 2))
    m = SDLoRA(clip)
    with pytest.raises(ValueError, match="support set is empty"):
        m.build_cache(x[:0], y[:0], 8)
    with pytest.raises(ValueError, match="at least one support image"):
        m.prototypes(x[:1], y[:1], 8)
    with pytest.raises(ValueError, match="prototypes"):
        m.loss(x, y, cap, None)
    with pytest.raises(ValueError, match="patch"):
        TinyCLIP(image_size=10, patch=4)
    with pytest.raises(ValueError, match="top_k"):
        GraphTeacher(4, 4, 2, top_k=0.0)


def test_pretrain_runs_and_novel_classes_are_twins():
    w = RelationWorld()
    assert len(w.novel) == 8 and not set(w.novel) & set(w.base)
    for a, r, b in w.novel:
        assert (b, r, a) in w.novel
    m = pretrain_clip(w, steps=2, batch_size=8, d=16, layers=1, heads=2, embed_dim=8)
    assert not any(p.requires_grad for p in m.parameters())
