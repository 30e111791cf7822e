from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from geode.adapters import LoRALinear, adapter_modules, inject_adapters, save_peft_lora
from geode.adapters.polar_vbll import (
    LandingAdamW,
    PoLARLinear,
    VBLLClassifier,
    expected_calibration_error,
    landing_field,
    negative_log_likelihood,
    orthogonality_error,
    polar_parameter_groups,
    predict_proba,
    retract_,
    stiefel_parameters,
    train_map,
    train_vbll_alternating,
)
from geode.adapters.polar_vbll.experiment import METHODS, classification_inputs, few_shot_split, run_method
from geode.core.random import torch_generator
from geode.models.tasks import KeywordClassification
from geode.models.tiny_lm import build_tiny_lm

VOCAB = 40
TINY = dict(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, seed=7)
TASK = KeywordClassification(n_symbols=24, n_classes=3, length=6, keywords_per_class=2)


def _stiefel(p, r, seed=0):
    return torch.linalg.qr(torch.randn(p, r, dtype=torch.float64, generator=torch_generator(seed)))[0]


# ------------------------------------------------------------------------------------------ PoLAR


def test_polar_starts_as_the_base_layer_with_orthonormal_frames():
    base = nn.Linear(10, 8)
    layer = PoLARLinear(base, r=3, generator=torch_generator(0))
    assert layer.X.shape == (8, 3) and layer.Y.shape == (10, 3) and layer.theta.shape == (3, 3)
    assert layer.orthogonality_error() < 1e-5 and layer.X.stiefel and layer.Y.stiefel
    x = torch.randn(4, 10)
    assert torch.equal(layer(x), base(x))
    with torch.no_grad():
        layer.theta.normal_()
    a, b, s = layer.lora_factors()
    assert torch.allclose(layer.delta_weight(), s * b @ a, atol=1e-6)
    assert torch.allclose(layer(x), base(x) + x @ layer.delta_weight().T, atol=1e-5)
    with pytest.raises(ValueError, match=r"r must be in \[1"):
        PoLARLinear(base, r=9)


def test_landing_field_is_tangent_on_the_manifold_and_pulls_back_off_it():
    x, g = _stiefel(9, 3), torch.randn(9, 3, dtype=torch.float64)
    lam = landing_field(x, g, landing_lambda=1.0)
    # on St(n, r): Λ = ψ X with ψ skew, so XᵀΛ is skew-symmetric (tangent) and <Λ, ∇> >= 0
    xl = x.T @ lam
    assert torch.allclose(xl, -xl.T, atol=1e-12)
    assert float((lam * g).sum()) >= 0
    psi = g @ x.T - x @ g.T
    assert torch.allclose(lam, psi @ x, atol=1e-12)
    # off the manifold the normal term is λ X (XᵀX - I), the gradient of the penalty λ/4 ||XᵀX - I||²
    y = 1.1 * x
    n_term = landing_field(y, torch.zeros_like(y), landing_lambda=2.0)
    eps = 1e-6
    pen = lambda z: 0.5 * ((z.T @ z - torch.eye(3, dtype=z.dtype)) ** 2).sum()  # noqa: E731
    e = torch.zeros_like(y)
    e[2, 1] = eps
    fd = (pen(y + e) - pen(y - e)) / (2 * eps)
    assert float(n_term[2, 1]) == pytest.approx(float(fd), rel=1e-6)
    with pytest.raises(ValueError, match="tall"):
        landing_field(torch.randn(2, 3), torch.randn(2, 3))
    with pytest.raises(ValueError, match="landing_lambda must be >= 0"):
        landing_field(x, g, landing_lambda=-1.0)


@pytest.mark.parametrize("retraction, tol", [(None, 0.05), ("qr", 1e-5), ("polar", 1e-5)])
def test_frames_stay_orthonormal_during_training(retraction, tol):
    torch.manual_seed(0)
    base = nn.Linear(12, 10)
    layer = PoLARLinear(base, r=3, generator=torch_generator(0))
    target = nn.Linear(12, 10)
    x = torch.randn(256, 12)
    y = target(x).detach()
    groups = polar_parameter_groups(layer, lr=1e-2)
    groups[0]["retraction"] = retraction
    opt = LandingAdamW(groups)
    losses, worst = [], 0.0
    for _ in range(300):
        loss = (layer(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        worst = max(worst, layer.orthogonality_error())
    assert worst < tol
    assert losses[-1] < 0.7 * losses[0]
    assert len(stiefel_parameters(layer)) == 2


def test_retract_puts_frames_back_exactly():
    x = nn.Parameter(_stiefel(7, 2) + 0.1 * torch.randn(7, 2, dtype=torch.float64))
    assert orthogonality_error(x) > 1e-2
    retract_([x], "qr")
    assert orthogonality_error(x) < 1e-12


def test_polar_exports_to_peft_lora(tmp_path):
    peft = pytest.importorskip("peft")
    model = build_tiny_lm(VOCAB, **TINY)
    inject_adapters(model, ["q_proj", "down_proj"], lambda lin: PoLARLinear(lin, 3, 6, generator=torch_generator(1)))
    with torch.no_grad():
        for m in adapter_modules(model).values():
            m.theta.normal_(generator=torch_generator(2))
    ids = torch.randint(0, VOCAB, (2, 5), generator=torch_generator(3))
    save_peft_lora(model, tmp_path)
    loaded = peft.PeftModel.from_pretrained(build_tiny_lm(VOCAB, **TINY), str(tmp_path))
    with torch.no_grad():
        assert torch.allclose(loaded(input_ids=ids).logits, model(input_ids=ids).logits, atol=1e-5)


# ------------------------------------------------------------------------------------------ VBLL


@pytest.mark.parametrize("parameterization", ["diagonal", "lowrank"])
def test_logit_moments_match_monte_carlo_over_weights(parameterization):
    head = VBLLClassifier(
        5, 3, parameterization=parameterization, cov_rank=2, init_log_std=-0.5, generator=torch_generator(0)
    ).double()
    with torch.no_grad():
        if head.cov_factor is not None:
            head.cov_factor.normal_(0, 0.5, generator=torch_generator(1))
        head.bias.normal_(generator=torch_generator(2))
    phi = torch.randn(4, 5, dtype=torch.float64, generator=torch_generator(3))
    mean, var = (t.detach() for t in head.logit_moments(phi))
    g = torch_generator(4)
    n = 200_000
    w = head.mean + torch.exp(head.log_std) * torch.randn(n, 3, 5, generator=g, dtype=torch.float64)
    if head.cov_factor is not None:
        w = w + torch.einsum("kdr,nkr->nkd", head.cov_factor, torch.randn(n, 3, 2, generator=g, dtype=torch.float64))
    z = torch.einsum("nkd,bd->nbk", w, phi) + head.bias
    z = z + torch.exp(head.log_noise) * torch.randn(n, 1, 3, generator=g, dtype=torch.float64)
    assert torch.allclose(z.mean(0), mean, atol=0.03 * float(var.sqrt().max()))
    assert torch.allclose(z.var(0), var, rtol=0.03)
    # Jensen: the bound is below the Monte Carlo expected log-softmax
    y = torch.tensor([0, 1, 2, 1])
    mc = torch.log_softmax(z[:20000], -1)[:, torch.arange(4), y].mean(0)
    assert (head.expected_log_likelihood_bound(phi, y) <= mc + 1e-3).all()


@pytest.mark.parametrize("parameterization", ["diagonal", "lowrank"])
def test_kl_matches_torch_distributions(parameterization):
    from torch.distributions import LowRankMultivariateNormal, MultivariateNormal, kl_divergence

    head = VBLLClassifier(
        4, 3, parameterization=parameterization, cov_rank=2, prior_scale=0.7, generator=torch_generator(0)
    ).double()
    with torch.no_grad():
        head.log_std.uniform_(-1, 0.5, generator=torch_generator(1))
        if head.cov_factor is not None:
            head.cov_factor.normal_(generator=torch_generator(2))
    prior = MultivariateNormal(torch.zeros(4, dtype=torch.float64), 0.7 * torch.eye(4, dtype=torch.float64))
    total = 0.0
    with torch.no_grad():
        want = float(head.kl_divergence())
    for k in range(3):
        diag = torch.exp(2 * head.log_std[k])
        u = head.cov_factor[k] if head.cov_factor is not None else torch.zeros(4, 1, dtype=torch.float64)
        q = LowRankMultivariateNormal(head.mean[k].detach(), u.detach(), diag.detach())
        total += float(kl_divergence(q, prior))
    assert want == pytest.approx(total, rel=1e-9)


def test_predictive_sums_to_one_and_probit_is_close_to_monte_carlo():
    head = VBLLClassifier(6, 4, init_log_std=-1.0, generator=torch_generator(0))
    phi = torch.randn(50, 6, generator=torch_generator(1))
    p_mc = head.predictive(phi, n_samples=4000, generator=torch_generator(2))
    p_pr = head.predictive(phi, method="probit")
    for p in (p_mc, p_pr):
        assert p.shape == (50, 4) and torch.allclose(p.sum(1), torch.ones(50), atol=1e-5) and (p >= 0).all()
    assert float((p_mc - p_pr).abs().max()) < 0.08
    again = head.predictive(phi, n_samples=4000, generator=torch_generator(2))
    assert torch.equal(p_mc, again)


def test_monte_carlo_predictive_uses_the_logit_standard_deviation():
    # two classes: p_1 = E[sigmoid(z_1 - z_2)], z_1 - z_2 ~ N(m_1 - m_2, v_1 + v_2) exactly (Gauss-Hermite).
    # A predictive that scaled its noise by the variance instead of the standard deviation (here v = 4 per
    # logit, so std 2 vs "std" 4) would be off by ~0.07; the Monte Carlo error at 40k draws is ~0.002.
    head = VBLLClassifier(1, 2, generator=torch_generator(0))
    with torch.no_grad():
        head.mean.copy_(torch.tensor([[0.6], [-0.6]]))
        head.bias.zero_()
        head.log_std.fill_(0.5 * math.log(3.0))
        head.log_noise.fill_(0.0)
    phi = torch.tensor([[1.0], [2.0]])
    mean, var = head.logit_moments(phi)
    assert torch.allclose(var, torch.tensor([[4.0, 4.0], [13.0, 13.0]]))
    x, w = np.polynomial.hermite_e.hermegauss(80)
    for i in range(2):
        m, s = float(mean[i, 0] - mean[i, 1]), math.sqrt(float(var[i].sum()))
        exact = float(np.sum(w / (1 + np.exp(-(m + s * x)))) / math.sqrt(2 * math.pi))
        p = head.predictive(phi[i : i + 1], n_samples=40000, generator=torch_generator(3))
        assert float(p[0, 0]) == pytest.approx(exact, abs=0.01)


def test_vbll_validation():
    head = VBLLClassifier(6, 4)
    with pytest.raises(ValueError, match=r"features must have shape \(n, 6\)"):
        head.logit_moments(torch.randn(3, 5))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 4\)"):
        head.loss(torch.randn(3, 6), torch.tensor([0, 1, 4]), 10)
    with pytest.raises(ValueError, match="parameterization must be one of"):
        VBLLClassifier(6, 4, parameterization="dense")
    with pytest.raises(ValueError, match="n_classes must be >= 2"):
        VBLLClassifier(6, 1)


def test_vbll_head_learns_a_separable_problem():
    g = torch_generator(0)
    phi = torch.randn(300, 4, generator=g)
    w_true = torch.randn(3, 4, generator=g)
    y = (3.0 * phi @ w_true.T).argmax(1)  # linearly separable
    head = VBLLClassifier(4, 3, generator=torch_generator(1))
    opt = torch.optim.Adam(head.parameters(), lr=5e-2)
    first = float(head.loss(phi, y, 300))
    for _ in range(200):
        loss = head.loss(phi, y, 300)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss) < 0.6 * first
    acc = float((head.predictive(phi, method="probit").argmax(1) == y).float().mean())
    assert acc > 0.85


# ------------------------------------------------------------------------------------------ metrics


def test_ece_and_nll_on_hand_made_cases():
    probs = np.array([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.3, 0.7]])
    labels = np.array([0, 1, 0, 1])
    # bins: conf 0.9 (2 examples, acc 0.5), 0.6 (acc 1), 0.7 (acc 1)
    want = (2 * abs(0.5 - 0.9) + abs(1 - 0.6) + abs(1 - 0.7)) / 4
    assert expected_calibration_error(probs, labels, n_bins=15) == pytest.approx(want)
    assert negative_log_likelihood(probs, labels) == pytest.approx(-np.mean(np.log([0.9, 0.1, 0.6, 0.7])))
    # a calibrated forecaster has a small ECE
    rng = np.random.default_rng(0)
    c = rng.uniform(0.5, 1.0, 20000)
    y = (rng.uniform(size=c.size) > c).astype(int)  # class 0 with probability c
    assert expected_calibration_error(np.stack([c, 1 - c], 1), y) < 0.02
    with pytest.raises(ValueError, match="sum to one"):
        expected_calibration_error(np.array([[0.5, 0.6]]), np.array([0]))
    with pytest.raises(ValueError, match="labels must be integers"):
        negative_log_likelihood(probs, labels[:3])


# ------------------------------------------------------------------------------------------ training


@pytest.fixture(scope="module")
def data():
    train = few_shot_split(TASK, 4, 0)
    test = classification_inputs(TASK.sample(30, 1))
    return train, test


def test_few_shot_split_is_balanced_and_seeded(data):
    (x, y), _ = data
    assert np.bincount(y.numpy()).tolist() == [4, 4, 4] and x.shape == (12, TASK.seq_len - 1)
    x2, y2 = few_shot_split(TASK, 4, 0)
    assert torch.equal(x, x2) and torch.equal(y, y2)


def test_class_features_of_right_padded_batches_equal_the_unpadded_ones(data):
    from geode.adapters.polar_vbll import class_features

    (x, _), _ = data
    model = build_tiny_lm(VOCAB, **TINY).eval()
    lengths = [x.shape[1], x.shape[1] - 2, 3, x.shape[1] - 1]
    pad_id = 0
    rows, masks = [], []
    for i, n in enumerate(lengths):
        row = torch.full((x.shape[1],), pad_id, dtype=x.dtype)
        row[:n] = x[i, :n]
        rows.append(row)
        masks.append(torch.arange(x.shape[1]) < n)
    ids, mask = torch.stack(rows), torch.stack(masks).long()
    with torch.no_grad():
        padded = class_features(model, ids, attention_mask=mask, chunk=3)  # chunks split the batch too
        for i, n in enumerate(lengths):
            alone = class_features(model, x[i : i + 1, :n])
            torch.testing.assert_close(padded[i : i + 1], alone, atol=1e-5, rtol=1e-5)
        # without the mask the last position is a pad token: a different (wrong) feature
        assert not torch.allclose(class_features(model, ids)[2], padded[2], atol=1e-3)
    with pytest.raises(ValueError, match="right-padded"):
        class_features(model, ids, attention_mask=mask.flip(1))
    with pytest.raises(ValueError, match="without any real token"):
        class_features(model, ids, attention_mask=torch.zeros_like(mask))
    with pytest.raises(ValueError, match="shape of input_ids"):
        class_features(model, ids, attention_mask=mask[:, 1:])


def test_training_and_prediction_take_the_attention_mask(data):
    (x, y), (xt, _) = data
    model = build_tiny_lm(VOCAB, **TINY)
    inject_adapters(model, ["q_proj", "v_proj"], lambda lin: LoRALinear(lin, 2, generator=torch_generator(0)))
    head = VBLLClassifier(32, 3, generator=torch_generator(1))
    # prediction: an all-ones mask changes nothing; a right-padded copy gives the unpadded predictive
    p0 = predict_proba(model, head, xt, n_samples=8, generator=torch_generator(0))
    p1 = predict_proba(model, head, xt, n_samples=8, generator=torch_generator(0), attention_mask=torch.ones_like(xt))
    padded = torch.cat([xt, torch.zeros_like(xt[:, :3])], 1)
    mask = torch.cat([torch.ones_like(xt), torch.zeros_like(xt[:, :3])], 1)
    p2 = predict_proba(model, head, padded, n_samples=8, generator=torch_generator(0), attention_mask=mask)
    torch.testing.assert_close(p0, p1, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(p0, p2, atol=1e-5, rtol=1e-4)
    # training on a right-padded batch runs with its mask
    xp = torch.cat([x, torch.zeros_like(x[:, :2])], 1)
    mp = torch.cat([torch.ones_like(x), torch.zeros_like(x[:, :2])], 1)
    hist = train_vbll_alternating(
        model, head, xp, y, rounds=1, backbone_steps=2, head_steps=2, batch_size=8, attention_mask=mp
    )
    assert np.isfinite(hist["backbone_loss"]).all()
    losses = train_map(model, nn.Linear(32, 3), xp, y, steps=2, batch_size=8, attention_mask=mp)
    assert np.isfinite(losses).all()
    with pytest.raises(ValueError, match="attention_mask"):
        train_map(model, nn.Linear(32, 3), x, y, steps=1, attention_mask=mp)


def test_map_and_alternating_vbll_training(data):
    (x, y), (xt, yt) = data
    model = build_tiny_lm(VOCAB, **TINY)
    inject_adapters(model, ["q_proj", "v_proj"], lambda lin: PoLARLinear(lin, 2, generator=torch_generator(0)))
    head = VBLLClassifier(32, 3, generator=torch_generator(1))
    hist = train_vbll_alternating(model, head, x, y, rounds=2, backbone_steps=3, head_steps=4, batch_size=8)
    assert hist["backbone_loss"].shape == (6,) and hist["head_loss"].shape == (3,)
    assert all(p.requires_grad for p in head.parameters())
    probs = predict_proba(model, head, xt, n_samples=16, generator=torch_generator(0))
    assert torch.allclose(probs.sum(1), torch.ones(len(yt)), atol=1e-5)
    lin = nn.Linear(32, 3)
    losses = train_map(model, lin, x, y, steps=4, batch_size=8)
    assert losses.shape == (4,) and np.isfinite(losses).all()
    bare = build_tiny_lm(VOCAB, **TINY)
    for p in bare.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        train_map(bare, lin, x, y, steps=1)


@pytest.mark.parametrize("method", METHODS)
def test_run_method_reports_finite_metrics(method, data):
    train, test = data
    out = run_method(
        method,
        build_tiny_lm(VOCAB, **TINY),
        train,
        {"id": test},
        n_classes=3,
        r=2,
        alpha=4,
        steps=4,
        rounds=2,
        head_steps=3,
        batch_size=8,
        n_samples=16,
        seed=0,
    )
    assert all(math.isfinite(v) for v in out.values())
    assert 0 <= out["id_ece"] <= 1 and out["srank"] >= 1.0 - 1e-6
    assert (out["orth_error"] > 0) == method.startswith("polar")


@pytest.mark.needs_lm
def test_polar_vbll_on_smollm2_one_backbone_pass():
    from geode.adapters.polar_vbll import class_features
    from geode.models import load_smollm2
    from geode.models.tasks import TokenMappedTask, tokenizer_token_map

    model, tok = load_smollm2()
    task = TokenMappedTask(TASK, tokenizer_token_map(tok, TASK.vocab_size))
    x, y = few_shot_split(task, 2, 0)
    inject_adapters(model, ["q_proj", "v_proj"], lambda lin: PoLARLinear(lin, 4, generator=torch_generator(0)))
    head = VBLLClassifier(model.config.hidden_size, 3, generator=torch_generator(1))
    hist = train_vbll_alternating(model, head, x, y, rounds=1, backbone_steps=2, head_steps=3, batch_size=6)
    assert np.isfinite(hist["backbone_loss"]).all()
    assert class_features(model, x).shape == (6, 576)
    probs = predict_proba(model, head, x, n_samples=8, generator=torch_generator(2))
    assert torch.allclose(probs.sum(1), torch.ones(6), atol=1e-5)


def test_run_method_reports_delta_norm_train_accuracy_and_keeps_map_logits(data):
    train, test = data
    out = run_method(
        "lora-map",
        build_tiny_lm(VOCAB, **TINY),
        train,
        {"val": test, "id": test},
        n_classes=3,
        r=2,
        alpha=4,
        steps=3,
        batch_size=8,
        weight_decay=0.0,
        seed=0,
        keep_probs=True,
    )
    assert out["delta_fro"] > 0 and 0 <= out["train_acc"] <= 1
    probs = torch.softmax(out["logits"]["id"], -1)
    torch.testing.assert_close(probs, out["probs"]["id"].to(probs.dtype))
    assert out["val_nll"] == pytest.approx(out["id_nll"])


def test_fitted_temperature_minimises_the_validation_nll():
    from geode.adapters.polar_vbll.claim import _fit_temperature

    g = torch_generator(0)
    logits = torch.randn(400, 5, generator=g, dtype=torch.float64) * 2
    labels = torch.distributions.Categorical(logits=logits / 2.5).sample()  # the true temperature is 2.5
    t = _fit_temperature(logits, labels)

    def nll(tt):
        return float(torch.nn.functional.cross_entropy(logits / tt, labels))

    assert nll(t) <= min(nll(t * 1.05), nll(t / 1.05)) + 1e-12
    assert 1.5 < t < 4.0


def test_claim_keeps_its_thresholds_with_bounds_floors_and_controls():
    from geode.claims import load_claim

    c = load_claim("polar-vbll")
    th = {t.name: t for t in (*c.thresholds, *c.floors)}
    for name, metric, op, value in (
        ("ece_id", "id_ece_margin", ">", 0.0),
        ("nll_id", "id_nll_margin", ">", 0.0),
        ("ece_ood", "ood_ece_margin", ">", 0.0),
        ("nll_ood", "ood_nll_margin", ">", 0.0),
        ("acc", "acc_vs_lora_map_points", ">=", -1.0),
        ("srank", "srank_polar_minus_lora", ">", 0.0),
    ):
        t = th[name]
        assert (t.metric, t.op, t.value, t.agg) == (metric, op, value, "bound95") and t.controls
    assert c.reproduced == "ece_id and nll_id and ece_ood and nll_ood and acc and srank"
    assert c.partial == "ece_id and nll_id" and {f.name for f in c.floors} == {"methods_learn", "frames_orthonormal"}
    assert c.revision == 2


# ------------------------------------------------------------------------------------------ PoLAR in PEFT


def test_landing_on_a_row_frame_is_the_transposed_column_landing():
    """PEFT stores Y as lora_A = Yᵀ (orthonormal rows): the optimiser lands it as the transpose of a column frame."""
    y = nn.Parameter(_stiefel(9, 3, seed=1).T.float().contiguous() * 1.05)
    y.stiefel = "rows"
    col = nn.Parameter(y.detach().T.clone())
    col.stiefel = True
    g = torch.randn(9, 3, generator=torch_generator(2))
    y.grad, col.grad = g.T.clone(), g.clone()
    opt_rows = LandingAdamW([{"params": [y], "lr": 1e-2, "stiefel": "rows", "weight_decay": 0.0}])
    opt_cols = LandingAdamW([{"params": [col], "lr": 1e-2, "stiefel": True, "weight_decay": 0.0}])
    opt_rows.step()
    opt_cols.step()
    assert torch.allclose(y.detach(), col.detach().T, atol=1e-7)
    assert orthogonality_error(y) == pytest.approx(orthogonality_error(col), abs=1e-6)
    retract_([y], "qr")
    assert orthogonality_error(y) < 1e-5 and y.shape == (3, 9)


def test_polar_config_builds_polar_layers_inside_peft(tmp_path):
    peft = pytest.importorskip("peft")
    from geode.adapters import polar_config

    ids = torch.randint(0, VOCAB, (2, 6), generator=torch_generator(0))
    base_logits = build_tiny_lm(VOCAB, **TINY)(input_ids=ids).logits.detach()
    torch.manual_seed(0)
    pm = peft.get_peft_model(build_tiny_lm(VOCAB, **TINY), polar_config(r=3, lora_alpha=6, target_modules=["q_proj"]))
    layer = pm.base_model.model.model.layers[0].self_attn.q_proj
    assert type(layer).__name__ == "PoLARPeftLinear"
    a, b, s = layer.lora_A["default"].weight, layer.lora_B["default"].weight, layer.lora_S["default"].weight
    # lora_A = Yᵀ (orthonormal rows), lora_B = X (orthonormal columns), lora_S = Θ = 0: it starts as the base model
    assert orthogonality_error(a.T) < 1e-5 and orthogonality_error(b) < 1e-5 and torch.equal(s, torch.zeros(3, 3))
    with torch.no_grad():
        assert torch.equal(pm(input_ids=ids).logits, base_logits)
        s.normal_(generator=torch_generator(1))
    # the same function as geode's PoLARLinear with X = lora_B, Θ = lora_S, Y = lora_Aᵀ
    bias = layer.base_layer.bias is not None
    ours = PoLARLinear(nn.Linear(layer.in_features, layer.out_features, bias=bias), r=3, alpha=6)
    ours.base.load_state_dict(layer.base_layer.state_dict())
    with torch.no_grad():
        ours.X.copy_(b), ours.theta.copy_(s), ours.Y.copy_(a.T)
    x = torch.randn(4, layer.in_features, generator=torch_generator(2))
    with torch.no_grad():
        assert torch.allclose(layer(x), ours(x), atol=1e-6)
        assert torch.allclose(layer.get_delta_weight("default"), ours.delta_weight(), atol=1e-6)
    # LandingAdamW trains it through PEFT: the frames are flagged, Θ is in the other group
    groups = polar_parameter_groups(pm, lr=1e-2)
    assert len(stiefel_parameters(pm)) == 2 and {g.get("stiefel") for g in groups} == {True, "rows", None}
    opt = LandingAdamW(groups)
    losses = []
    for _ in range(15):
        loss = pm(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0] and max(orthogonality_error(a.T), orthogonality_error(b)) < 0.05
    with torch.no_grad():
        want = pm(input_ids=ids).logits
    # save / load through PEFT (the config is read back from the checkpoint), merge_and_unload
    pm.save_pretrained(str(tmp_path))
    loaded = peft.PeftModel.from_pretrained(
        build_tiny_lm(VOCAB, **TINY), str(tmp_path), config=polar_config(from_checkpoint=tmp_path)
    )
    merged = loaded.merge_and_unload()
    with torch.no_grad():
        assert torch.allclose(merged(input_ids=ids).logits, want, atol=1e-5)
    # a plain LoraConfig would silently read X Yᵀ as the update: PEFT refuses the checkpoint instead
    with pytest.raises(ValueError, match="polar"):
        peft.PeftModel.from_pretrained(build_tiny_lm(VOCAB, **TINY), str(tmp_path))
    with pytest.raises(ValueError, match="use_dora"):
        polar_config(r=2, use_dora=True)
    with pytest.raises(ValueError, match="init_lora_weights"):
        polar_config(r=2, init_lora_weights="gaussian")
    with pytest.raises(ValueError, match="not a PoLAR checkpoint"):
        plain = peft.get_peft_model(build_tiny_lm(VOCAB, **TINY), peft.LoraConfig(r=2, target_modules=["q_proj"]))
        plain.save_pretrained(str(tmp_path / "plain"))
        polar_config(from_checkpoint=tmp_path / "plain")


def test_polar_config_refuses_gpt2_conv1d_targets():
    peft = pytest.importorskip("peft")
    from geode.adapters import polar_config

    model = build_tiny_lm(32, arch="gpt2", d_model=16, n_layers=1, n_heads=2, seed=0)
    with pytest.raises(TypeError, match="PoLAR supports nn.Linear targets only.*Conv1D"):
        peft.get_peft_model(model, polar_config(r=2, lora_alpha=4, target_modules=["c_attn"]))
