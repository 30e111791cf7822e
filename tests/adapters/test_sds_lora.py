from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from geode.adapters import LoRALinear, adapter_modules, inject_adapters, load_peft_lora, save_peft_lora
from geode.adapters.sds_lora import (
    SDSDualLoRALinear,
    SDSLoRALinear,
    orthonormal_basis,
    sds_lora_config,
    sds_lora_delta,
    sds_lora_gradients,
)
from geode.adapters.sds_lora.experiment import (
    _factored_step,
    adapt_language_model,
    factorization_run,
    factorization_sweep,
    kappa_exponent,
    low_rank_target,
    refresh_schedule,
)
from geode.core import polar, sign_fixed_qr
from geode.core.random import torch_generator
from geode.models.tasks import Copy
from geode.models.tiny_lm import build_tiny_lm

VOCAB = 24
TINY = dict(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, seed=5)


def _pair(basis: str = "qr", seed: int = 0, out: int = 9, inp: int = 7, r: int = 3):
    """A LoRA and an SDS-LoRA layer around copies of one base layer, with the same random A and B (float64)."""
    g = torch_generator(seed)
    base = nn.Linear(inp, out).double()
    lora = LoRALinear(base, r, alpha=2 * r, generator=g)
    sds = SDSLoRALinear(nn.Linear(inp, out).double(), r, alpha=2 * r, basis=basis)
    sds.base.load_state_dict(base.state_dict())
    with torch.no_grad():
        lora.lora_B.normal_(generator=g)
        sds.lora_A.copy_(lora.lora_A)
        sds.lora_B.copy_(lora.lora_B)
    return lora, sds


def _full_gradient(layer, x, target):
    """G = dL/dW of the loss 0.5 ||y - target||^2 at the merged weight W + s B A."""
    w = (layer.base.weight + layer.delta_weight()).detach().requires_grad_(True)
    y = nn.functional.linear(x, w, layer.base.bias)
    (0.5 * (y - target).pow(2).sum()).backward()
    return w.grad


@pytest.mark.parametrize("basis", ["qr", "polar"])
def test_forward_equals_lora_exactly(basis):
    lora, sds = _pair(basis)
    x = torch.randn(2, 5, 7, dtype=torch.float64)
    assert torch.equal(sds(x), lora(x))
    assert torch.equal(sds.delta_weight(), lora.delta_weight())


@pytest.mark.parametrize("basis", ["qr", "polar"])
def test_gradients_equal_the_closed_form(basis):
    lora, sds = _pair(basis, seed=1)
    x = torch.randn(4, 6, 7, dtype=torch.float64)
    target = torch.randn(4, 6, 9, dtype=torch.float64)
    g = _full_gradient(sds, x, target)
    (0.5 * (sds(x) - target).pow(2).sum()).backward()
    q_b = sign_fixed_qr(sds.lora_B.detach())[0] if basis == "qr" else polar(sds.lora_B.detach())[0]
    q_a = sign_fixed_qr(sds.lora_A.detach().T)[0] if basis == "qr" else polar(sds.lora_A.detach().T)[0]
    s = sds.scaling
    assert torch.allclose(sds.lora_A.grad, s * q_b.T @ g, atol=1e-10)
    assert torch.allclose(sds.lora_B.grad, s * g @ q_a, atol=1e-10)
    ga, gb = sds_lora_gradients(g, sds.lora_A.detach(), sds.lora_B.detach(), s, basis)
    assert torch.allclose(sds.lora_A.grad, ga, atol=1e-10) and torch.allclose(sds.lora_B.grad, gb, atol=1e-10)
    # LoRA's gradients are the same ones rescaled by the triangular factors: ∇A_LoRA = R_Bᵀ ∇A_SDS
    (0.5 * (lora(x) - target).pow(2).sum()).backward()
    if basis == "qr":
        r_b = sign_fixed_qr(lora.lora_B.detach())[1]
        r_a = sign_fixed_qr(lora.lora_A.detach().T)[1]
        assert torch.allclose(lora.lora_A.grad, r_b.T @ sds.lora_A.grad, atol=1e-10)
        assert torch.allclose(lora.lora_B.grad, sds.lora_B.grad @ r_a, atol=1e-10)


def test_input_gradient_is_exact_and_passes_gradcheck():
    lora, sds = _pair(seed=2)
    x = torch.randn(3, 7, dtype=torch.float64, requires_grad=True)
    sds(x).pow(2).sum().backward()
    gx_sds = x.grad.clone()
    x.grad = None
    lora(x).pow(2).sum().backward()
    assert torch.allclose(gx_sds, x.grad, atol=1e-12)
    a, b = sds.lora_A.detach(), sds.lora_B.detach()
    assert torch.autograd.gradcheck(lambda z: sds_lora_delta(z, a, b, 1.7), (x.detach().requires_grad_(True),))


def test_induced_weight_step_is_a_descent_direction():
    _, sds = _pair(seed=3, out=12, inp=10, r=4)
    x, target = torch.randn(20, 10, dtype=torch.float64), torch.randn(20, 12, dtype=torch.float64)
    g = _full_gradient(sds, x, target)
    (0.5 * (sds(x) - target).pow(2).sum()).backward()
    step = sds.lora_B.detach() @ sds.lora_A.grad + sds.lora_B.grad @ sds.lora_A.detach()
    assert float((step * g).sum()) > 0  # first-order change of the loss along -step is negative


def test_zero_b_initialisation_gives_finite_orthonormal_bases():
    sds = SDSLoRALinear(nn.Linear(6, 5), 2, generator=torch_generator(0))
    q = orthonormal_basis(sds.lora_B.detach())
    assert torch.allclose(q.T @ q, torch.eye(2), atol=1e-6)
    sds(torch.randn(4, 6)).sum().backward()
    assert torch.isfinite(sds.lora_A.grad).all() and sds.lora_A.grad.abs().sum() > 0


def test_bad_inputs():
    with pytest.raises(ValueError, match="basis must be one of"):
        SDSLoRALinear(nn.Linear(6, 5), 2, basis="svd")
    with pytest.raises(ValueError, match=r"r must be in \[1"):
        SDSLoRALinear(nn.Linear(6, 5), 6)
    a, b = torch.randn(2, 6), torch.randn(5, 3)
    with pytest.raises(ValueError, match="lora_A must be"):
        sds_lora_delta(torch.randn(4, 6), a, b, 1.0)
    with pytest.raises(ValueError, match="x must end in n = 6"):
        sds_lora_delta(torch.randn(4, 5), a, torch.randn(5, 2), 1.0)


# ------------------------------------------------------------------------------ the experiment


def test_factored_step_matches_the_full_gradient():
    u, sigma, v = low_rank_target(12, 3, 20.0, 2, 0)
    t = (u * sigma) @ v.mT
    a = torch.randn(2, 3, 12, dtype=torch.float64)
    b = torch.randn(2, 12, 3, dtype=torch.float64)
    g = b @ a - t
    for method in ("lora", "sds"):
        err2, ga, gb = _factored_step(a, b, u, sigma, v, method, "qr")
        assert torch.allclose(err2, g.pow(2).sum((-2, -1)), rtol=1e-10)
        if method == "lora":
            assert torch.allclose(ga, b.mT @ g, atol=1e-10) and torch.allclose(gb, g @ a.mT, atol=1e-10)
        else:
            want = sds_lora_gradients(g, a, b, 1.0, "qr")
            assert torch.allclose(ga, want[0], atol=1e-10) and torch.allclose(gb, want[1], atol=1e-10)
    s = torch.linalg.svdvals(t[0])
    assert float(s[0] / s[2]) == pytest.approx(20.0)


def test_factorisation_sweep_lora_slows_with_kappa_more_than_sds():
    rows = factorization_sweep((1.0, 30.0), d=12, r=3, lrs=(0.25, 0.5), n_seeds=2, max_steps=1500, seed=0)
    steps = {(r["method"], r["kappa"]): r["median_steps"] for r in rows}
    lora_growth = steps[("lora", 30.0)] / steps[("lora", 1.0)]
    sds_growth = steps[("sds", 30.0)] / steps[("sds", 1.0)]
    assert lora_growth > 3 * sds_growth
    again = factorization_sweep((1.0, 30.0), d=12, r=3, lrs=(0.25, 0.5), n_seeds=2, max_steps=1500, seed=0)
    assert [r["steps"] for r in rows] == [r["steps"] for r in again]
    with pytest.raises(ValueError, match="methods must be one of"):
        factorization_sweep((1.0,), methods=("dora",))


@pytest.mark.parametrize("method", ["lora", "sds", "sds-dual", "dora", "full"])
def test_adapt_language_model_runs(method):
    model = build_tiny_lm(VOCAB, **TINY)
    task = Copy(n_symbols=8, length=3)
    out = adapt_language_model(
        model,
        task,
        method,
        r=2,
        steps=3,
        batch_size=4,
        eval_batch=task.sample(8, 1),
        val_batch=task.sample(8, 2),
        diag_every=2,
        warmup=1,
        refresh_every=1,
        seed=0,
    )
    assert out["losses"].shape == (3,) and np.isfinite(out["eval_loss"]) and np.isfinite(out["val_loss"])
    if method == "sds-dual":
        assert all(m.dual for m in adapter_modules(model).values())
    if method == "full":
        assert out["n_trainable"] == sum(p.numel() for p in model.parameters())
    elif method == "dora":
        assert out["grad_erank"] == []
    else:
        assert len(out["grad_erank"]) == 2 and all(1.0 <= e <= 2.0 + 1e-6 for e in out["grad_erank"])
        assert all(-1.0 <= c <= 1.0 for c in out["step_cosine"])


# ------------------------------------------------------------------------------ PEFT


def test_sds_in_peft_matches_the_closed_form_and_saves_as_lora(tmp_path):
    peft = pytest.importorskip("peft")
    ids = torch.randint(0, VOCAB, (2, 6), generator=torch_generator(0))
    base = build_tiny_lm(VOCAB, **TINY)
    pm = peft.get_peft_model(base, sds_lora_config(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    layer = pm.base_model.model.model.layers[0].self_attn.q_proj
    assert type(layer).__name__ == "SDSPeftLinearPolar" and layer.sds_basis == "polar"  # the default basis
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.3, generator=torch_generator(1))
    # forward: the same as plain PEFT LoRA with the same weights
    plain = peft.get_peft_model(
        build_tiny_lm(VOCAB, **TINY), peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    )
    plain.load_state_dict(pm.state_dict())
    with torch.no_grad():
        assert torch.equal(pm(input_ids=ids).logits, plain(input_ids=ids).logits)
    # backward: A's gradient is s Q_Bᵀ G
    w = layer.base_layer.weight
    w.requires_grad_(True)
    pm(input_ids=ids).logits.pow(2).mean().backward()
    a, b = layer.lora_A["default"].weight, layer.lora_B["default"].weight
    ga, gb = sds_lora_gradients(w.grad, a.detach(), b.detach(), layer.scaling["default"])
    assert torch.allclose(a.grad, ga, atol=1e-5) and torch.allclose(b.grad, gb, atol=1e-5)
    # checkpoint: plain LoRA format, read by plain peft and by our loader
    pm.save_pretrained(str(tmp_path))
    with torch.no_grad():
        want = pm(input_ids=ids).logits
    loaded = peft.PeftModel.from_pretrained(build_tiny_lm(VOCAB, **TINY), str(tmp_path))
    fresh = build_tiny_lm(VOCAB, **TINY)
    load_peft_lora(fresh, tmp_path, factory=SDSLoRALinear)
    assert all(isinstance(m, SDSLoRALinear) for m in adapter_modules(fresh).values())
    with torch.no_grad():
        assert torch.allclose(loaded(input_ids=ids).logits, want, atol=1e-5)
        assert torch.allclose(fresh(input_ids=ids).logits, want, atol=1e-5)


def test_our_sds_layers_export_to_peft(tmp_path):
    peft = pytest.importorskip("peft")
    model = build_tiny_lm(VOCAB, **TINY)
    inject_adapters(model, ["k_proj", "up_proj"], lambda lin: SDSLoRALinear(lin, 3, 6, generator=torch_generator(0)))
    with torch.no_grad():
        for m in adapter_modules(model).values():
            m.lora_B.normal_(0, 0.3, generator=torch_generator(4))
    ids = torch.randint(0, VOCAB, (2, 6), generator=torch_generator(0))
    save_peft_lora(model, tmp_path)
    loaded = peft.PeftModel.from_pretrained(build_tiny_lm(VOCAB, **TINY), str(tmp_path))
    with torch.no_grad():
        assert torch.allclose(loaded(input_ids=ids).logits, model(input_ids=ids).logits, atol=1e-5)
    with pytest.raises(ValueError, match="use_dora"):
        sds_lora_config(r=2, use_dora=True)


@pytest.mark.needs_lm
def test_sds_lora_on_smollm2_trains_and_round_trips_through_peft(tmp_path):
    peft = pytest.importorskip("peft")
    from geode.models import load_smollm2

    model, tok = load_smollm2()
    ids = tok("The capital of France is", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        before = model(input_ids=ids).logits
    g = torch_generator(0)
    names = inject_adapters(model, ["q_proj", "v_proj"], lambda lin: SDSLoRALinear(lin, 8, 16, generator=g))
    assert len(names) == 2 * model.config.num_hidden_layers
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, before)  # B = 0
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    with torch.no_grad():
        after = model(input_ids=ids).logits
    assert not torch.equal(after, before)
    save_peft_lora(model, tmp_path, base_model_name_or_path="SmolLM2-135M-Instruct")
    fresh, _ = load_smollm2()
    loaded = peft.PeftModel.from_pretrained(fresh, str(tmp_path))
    with torch.no_grad():
        assert torch.allclose(loaded(input_ids=ids).logits, after, atol=1e-4)


def test_polar_basis_gives_a_descent_step_where_qr_does_not():
    # B = Q R with Q = I and R = [[1, 10], [0, 1]], A = I: the induced step on W is B Q_B^T G + G Q_A A.
    # QR: Q_B = I, B Q_B^T = R (not symmetric): <G, R G> + |G|^2 < 0 for G = u e_1^T, u = (1, -0.5).
    # Polar: B Q_B^T = U S U^T >= 0, Q_A A = I: the inner product is >= |G|^2 > 0.
    b = torch.tensor([[1.0, 10.0], [0.0, 1.0]], dtype=torch.float64)
    a = torch.eye(2, dtype=torch.float64)
    g = torch.tensor([[1.0, 0.0], [-0.5, 0.0]], dtype=torch.float64)
    inner = {}
    for basis in ("qr", "polar"):
        ga, gb = sds_lora_gradients(g, a, b, 1.0, basis)
        step = b @ ga + gb @ a
        inner[basis] = float((g * step).sum())
    assert inner["qr"] == pytest.approx(-3.75 + 1.25)  # uᵀRu + |G|² = (1 - 5 + 0.25) + 1.25
    assert inner["polar"] >= float((g * g).sum()) - 1e-12
    # a small step along -step raises the linear loss <G, W> with QR and lowers it with polar
    w = b @ a
    for basis, sign in (("qr", 1.0), ("polar", -1.0)):
        ga, gb = sds_lora_gradients(g, a, b, 1.0, basis)
        w_new = (b - 1e-3 * gb) @ (a - 1e-3 * ga)
        assert sign * float((g * (w_new - w)).sum()) > 0


def test_polar_is_the_default_basis():
    import inspect

    from geode.adapters.sds_lora import sds_lora_config, sds_lora_delta

    for fn in (orthonormal_basis, sds_lora_gradients, sds_lora_delta, sds_lora_config, SDSLoRALinear.__init__):
        params = inspect.signature(fn).parameters
        assert (params.get("basis") or params.get("method")).default == "polar", fn
    assert SDSLoRALinear(nn.Linear(4, 3), 2).basis == "polar"


def test_sds_lora_config_refuses_gpt2_conv1d_targets():
    peft = pytest.importorskip("peft")
    from geode.adapters.sds_lora import sds_lora_config
    from geode.models import build_tiny_lm

    model = build_tiny_lm(32, arch="gpt2", d_model=16, n_layers=1, n_heads=2, seed=0)
    with pytest.raises(TypeError, match="nn.Linear targets only.*Conv1D"):
        peft.get_peft_model(model, sds_lora_config(r=2, lora_alpha=4, target_modules=["c_attn"]))


# ------------------------------------------------------------------------------ the dual-branch reading


def _dual_pair(seed: int = 0, out: int = 9, inp: int = 7, r: int = 3):
    """A LoRA layer and a dual-branch layer with the same random A and B (float64), still in warm-up."""
    lora, _ = _pair(seed=seed, out=out, inp=inp, r=r)
    dual = SDSDualLoRALinear(nn.Linear(inp, out).double(), r, alpha=2 * r)
    dual.base.load_state_dict(lora.base.state_dict())
    with torch.no_grad():
        dual.lora_A.copy_(lora.lora_A)
        dual.lora_B.copy_(lora.lora_B)
    return lora, dual


def test_dual_branch_warm_up_is_plain_lora():
    lora, dual = _dual_pair()
    x, target = torch.randn(6, 7, dtype=torch.float64), torch.randn(6, 9, dtype=torch.float64)
    assert not dual.dual and torch.equal(dual(x), lora(x))
    for layer in (lora, dual):
        (0.5 * (layer(x) - target).pow(2).sum()).backward()
    assert torch.allclose(dual.lora_A.grad, lora.lora_A.grad) and torch.allclose(dual.lora_B.grad, lora.lora_B.grad)


def test_dual_branch_reparameterisation_keeps_the_function_and_has_the_closed_form():
    _, dual = _dual_pair(seed=1)
    x = torch.randn(6, 7, dtype=torch.float64)
    before, w_before = dual(x).detach(), (dual.base.weight + dual.delta_weight()).detach()
    dual.reparameterize()
    s2 = dual.scaling * 3**0.5  # (alpha / r) sqrt(r)
    assert dual.dual and dual.dual_scaling == pytest.approx(s2)
    assert torch.allclose(dual(x), before, atol=1e-12)
    assert torch.allclose(dual.base.weight + dual.delta_weight(), w_before, atol=1e-12)
    eye = torch.eye(3, dtype=torch.float64)
    assert torch.allclose(dual.q_b.T @ dual.q_b, eye, atol=1e-12) and torch.allclose(dual.q_a.T @ dual.q_a, eye)
    # each branch carries half of the rank-r update: s' Q_B A = s' B Q_A^T = U S V^T / 2
    half = s2 * dual.q_b @ dual.lora_A.detach()
    assert torch.allclose(half, s2 * dual.lora_B.detach() @ dual.q_a.T, atol=1e-12)
    assert torch.allclose(2 * half, w_before - dual.base.weight, atol=1e-12)


def test_dual_branch_gradients_go_through_the_frozen_bases_only():
    _, dual = _dual_pair(seed=2)
    dual.reparameterize()
    x, target = torch.randn(8, 7, dtype=torch.float64), torch.randn(8, 9, dtype=torch.float64)
    g = _full_gradient(dual, x, target)
    (0.5 * (dual(x) - target).pow(2).sum()).backward()
    s2 = dual.dual_scaling
    assert torch.allclose(dual.lora_A.grad, s2 * dual.q_b.T @ g, atol=1e-10)
    assert torch.allclose(dual.lora_B.grad, s2 * g @ dual.q_a, atol=1e-10)
    assert dual.q_a.grad is None and not dual.q_a.requires_grad


def test_dual_branch_refresh_of_a_rank_2r_update_merges_the_residual():
    _, dual = _dual_pair(seed=3)
    dual.reparameterize()
    with torch.no_grad():  # move both branches: the update now has rank up to 2r
        dual.lora_A.add_(torch.randn(3, 7, dtype=torch.float64, generator=torch_generator(4)))
        dual.lora_B.add_(torch.randn(9, 3, dtype=torch.float64, generator=torch_generator(5)))
    x = torch.randn(5, 7, dtype=torch.float64)
    before, base_before = dual(x).detach(), dual.base.weight.detach().clone()
    assert int(torch.linalg.matrix_rank(dual.delta_weight().detach())) == 6
    dual.reparameterize()
    assert torch.allclose(dual(x), before, atol=1e-10)
    assert int(torch.linalg.matrix_rank(dual.delta_weight().detach())) <= 3
    assert not torch.allclose(dual.base.weight, base_before)  # the truncation residual went into the base
    with pytest.raises(ValueError, match="use_rslora"):
        SDSDualLoRALinear(nn.Linear(7, 9), 3, use_rslora=True)


def test_refresh_schedule_is_phased():
    assert refresh_schedule(10, 10, 4, 200) == [10, 20, 30, 40, 50, 70, 90, 110, 130, 170]
    assert refresh_schedule(0, 1, 1, 7) == [0, 1, 3, 7]
    with pytest.raises(ValueError, match="every"):
        refresh_schedule(10, 0, 4, 100)


def test_factorization_run_agrees_with_the_sweep():
    for method in ("lora", "sds"):
        row = factorization_sweep((10.0,), d=12, r=3, lrs=(0.5,), n_seeds=2, max_steps=800, methods=(method,), seed=1)
        out = factorization_run(method, 10.0, (0.5,), d=12, r=3, n_seeds=2, max_steps=800, seed=1)
        assert [int(x) for x in out["hit"][0]] == row[0]["steps"]
        # a censored run scores max_steps * (1 + log10(err / tol)) >= the sweep's max_steps
        assert out["score"][0] >= row[0]["median_steps"]
        if row[0]["censored"] == 0:
            assert out["score"][0] == pytest.approx(row[0]["median_steps"])


def test_dual_branch_factorisation_is_insensitive_to_kappa_and_lora_is_not():
    steps = {}
    for method in ("lora", "sds-dual"):
        for kappa in (1.0, 30.0):
            out = factorization_run(method, kappa, (0.125, 0.25, 0.5), d=12, r=3, n_seeds=2, max_steps=1500, seed=0)
            steps[(method, kappa)] = float(out["score"].min())
    assert steps[("sds-dual", 30.0)] <= 1.5 * steps[("sds-dual", 1.0)]
    assert steps[("lora", 30.0)] >= 3 * steps[("lora", 1.0)]


def test_adam_factorisation_reaches_the_tolerance_and_scores_censored_runs():
    out = factorization_run(
        "lora",
        1.0,
        (0.03, 1e-6),
        d=12,
        r=3,
        n_seeds=2,
        max_steps=300,
        optimizer="adam",
        seed=0,
        stop_when_decided=False,
    )
    assert (out["hit"][0] < 300).all() and (out["hit"][1] == 300).all()
    assert out["score"][1] > 300 and out["score"][0] < 300  # never reached: max_steps * (1 + log10(err / tol))
    with pytest.raises(ValueError, match="optimizer must be one of"):
        factorization_run("lora", 1.0, (0.1,), optimizer="sgd")


def test_kappa_exponent_recovers_a_power_law():
    kappas = np.array([1.0, 10.0, 100.0, 1000.0])
    assert kappa_exponent(kappas, 7 * kappas**0.5) == pytest.approx(0.5)
    assert kappa_exponent(kappas, np.full(4, 12.0)) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="two distinct"):
        kappa_exponent([10.0, 10.0], [3, 4])
