from __future__ import annotations

import pytest
import torch
from torch import nn

from geode.adapters import (
    DoRALinear,
    LoRALinear,
    adapter_modules,
    inject_adapters,
    load_peft_lora,
    merge_adapters,
    remove_adapters,
    save_peft_lora,
    trainable_parameters,
    unmerge_adapters,
)
from geode.core.random import torch_generator
from geode.models.tiny_lm import build_tiny_lm

TINY = dict(d_model=32, n_layers=1, n_heads=2, n_kv_heads=1, seed=3)
VOCAB = 24


def _randomize(model: nn.Module, seed: int = 0) -> None:
    """Give every adapter a non-zero update (B = 0 at initialisation)."""
    g = torch_generator(seed)
    with torch.no_grad():
        for m in adapter_modules(model).values():
            m.lora_B.copy_(torch.randn(m.lora_B.shape, generator=g, dtype=m.lora_B.dtype) * 0.3)
            if isinstance(m, DoRALinear):
                m.lora_magnitude_vector.mul_(1 + 0.1 * torch.randn(m.out_features, generator=g))


def _ids(n: int = 3, t: int = 7) -> torch.Tensor:
    return torch.randint(0, VOCAB, (n, t), generator=torch_generator(11))


# --------------------------------------------------------------------------------- the layer


def test_lora_linear_attributes_and_forward():
    base = nn.Linear(8, 6).double()
    layer = LoRALinear(base, r=2, alpha=4, generator=torch_generator(0))
    assert layer.lora_A.shape == (2, 8) and layer.lora_B.shape == (6, 2) and layer.scaling == 2.0
    assert not base.weight.requires_grad and layer.lora_A.requires_grad
    x = torch.randn(5, 8, dtype=torch.float64)
    assert torch.equal(layer(x), base(x))  # B = 0: the base layer's output, exactly
    with torch.no_grad():
        layer.lora_B.normal_()
    want = x @ (base.weight + 2.0 * layer.lora_B @ layer.lora_A).T + base.bias
    assert torch.allclose(layer(x), want, atol=1e-12)
    assert LoRALinear(nn.Linear(8, 6), r=2, alpha=4, use_rslora=True).scaling == pytest.approx(4 / 2**0.5)


def test_lora_with_zero_b_leaves_a_language_model_unchanged():
    model = build_tiny_lm(VOCAB, **TINY)
    ids = _ids()
    with torch.no_grad():
        before = model(input_ids=ids).logits
    names = inject_adapters(model, ["q_proj", "v_proj", "down_proj"], lambda lin: LoRALinear(lin, 4, 8))
    assert len(names) == 3
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, before)


@pytest.mark.parametrize("cls", [LoRALinear, DoRALinear])
def test_merge_unmerge_round_trip(cls):
    torch.manual_seed(0)
    base = nn.Linear(12, 9).double()
    w0 = base.weight.detach().clone()
    layer = cls(base, r=3, alpha=6)
    with torch.no_grad():
        layer.lora_B.normal_()
        if cls is DoRALinear:
            layer.lora_magnitude_vector.mul_(1.5)
    x = torch.randn(4, 12, dtype=torch.float64)
    y = layer(x)
    layer.merge()
    assert layer.merged and torch.allclose(layer(x), y, atol=1e-12)
    assert not torch.allclose(base.weight, w0)
    with pytest.raises(RuntimeError, match="already merged"):
        layer.merge()
    layer.unmerge()
    assert torch.allclose(base.weight, w0, rtol=0, atol=1e-13) and torch.allclose(layer(x), y, atol=1e-12)
    with pytest.raises(RuntimeError, match="not merged"):
        layer.unmerge()


def test_dora_starts_as_the_base_layer_and_follows_its_formula():
    torch.manual_seed(1)
    base = nn.Linear(10, 7)
    layer = DoRALinear(base, r=2, alpha=4)
    x = torch.randn(3, 10)
    assert torch.allclose(layer(x), base(x), atol=1e-6)
    with torch.no_grad():
        layer.lora_B.normal_()
        layer.lora_magnitude_vector.uniform_(0.5, 2.0)
    v = base.weight + layer.scaling * layer.lora_B @ layer.lora_A
    w_eff = (layer.lora_magnitude_vector / v.norm(dim=1)).unsqueeze(1) * v
    assert torch.allclose(layer(x), x @ w_eff.T + base.bias, atol=1e-5)
    assert torch.allclose(layer.delta_weight(), w_eff - base.weight, atol=1e-6)


@pytest.mark.parametrize("r", [0, -1, 7])
def test_bad_rank_is_rejected(r):
    with pytest.raises(ValueError, match=r"r must be in \[1, min\(in_features, out_features\)\] = \[1, 6\]"):
        LoRALinear(nn.Linear(8, 6), r=r)


def test_other_bad_arguments():
    with pytest.raises(TypeError, match="r must be an integer"):
        LoRALinear(nn.Linear(8, 6), r=2.0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        LoRALinear(nn.Linear(8, 6), r=2, alpha=0)
    with pytest.raises(ValueError, match="dropout must be <= 1"):
        LoRALinear(nn.Linear(8, 6), r=2, dropout=1.5)
    with pytest.raises(ValueError, match="init must be one of"):
        LoRALinear(nn.Linear(8, 6), r=2, init="pissa")
    with pytest.raises(TypeError, match="base must be an nn.Linear"):
        LoRALinear(nn.Conv1d(3, 3, 1), r=1)


# --------------------------------------------------------------------------------- injection


def test_target_modules_that_match_nothing_list_the_names():
    model = build_tiny_lm(VOCAB, **TINY)
    with pytest.raises(ValueError, match=r"match no nn.Linear.*'q_proj'.*model.layers.0.self_attn.q_proj"):
        inject_adapters(model, ["query"], lambda lin: LoRALinear(lin, 2))


def test_injection_by_list_and_regex_freezes_the_base():
    model = build_tiny_lm(VOCAB, **TINY)
    names = inject_adapters(model, r".*\.(q|k)_proj", lambda lin: LoRALinear(lin, 2))
    assert names == ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj"]
    params = trainable_parameters(model)
    assert len(params) == 4 and all(p.shape[0] == 2 or p.shape[1] == 2 for p in params)
    # a second injection never wraps the base layers inside existing adapters
    more = inject_adapters(model, ["q_proj", "o_proj"], lambda lin: LoRALinear(lin, 2))
    assert more == ["model.layers.0.self_attn.o_proj"]
    assert len(trainable_parameters(model)) == 6  # the first adapters stay trainable
    assert set(adapter_modules(model)) == set(names + more)


def test_model_level_merge_unmerge_and_remove():
    model = build_tiny_lm(VOCAB, **TINY)
    ids = _ids()
    inject_adapters(model, ["q_proj", "up_proj"], lambda lin: LoRALinear(lin, 3, 6, generator=torch_generator(0)))
    _randomize(model)
    with torch.no_grad():
        y = model(input_ids=ids).logits
        merge_adapters(model)
        assert torch.allclose(model(input_ids=ids).logits, y, atol=1e-5)
        with pytest.raises(RuntimeError, match="already merged"):
            merge_adapters(model)
        unmerge_adapters(model)
        with pytest.raises(RuntimeError, match="not merged"):
            unmerge_adapters(model)
        remove_adapters(model)
        assert not adapter_modules(model)
        assert type(model.model.layers[0].self_attn.q_proj) is nn.Linear
        assert torch.allclose(model(input_ids=ids).logits, y, atol=1e-5)
    with pytest.raises(ValueError, match="no adapters"):
        merge_adapters(model)


# --------------------------------------------------------------------------------- PEFT format


def _peft_logits(path, ids):
    from peft import PeftModel

    base = build_tiny_lm(VOCAB, **TINY)
    peft_model = PeftModel.from_pretrained(base, str(path))
    peft_model.eval()
    with torch.no_grad():
        return peft_model(input_ids=ids).logits


@pytest.mark.parametrize("cls", [LoRALinear, DoRALinear])
def test_peft_round_trip(cls, tmp_path):
    pytest.importorskip("peft")
    model = build_tiny_lm(VOCAB, **TINY)
    inject_adapters(model, ["q_proj", "v_proj", "gate_proj"], lambda lin: cls(lin, 4, 8, generator=torch_generator(1)))
    _randomize(model)
    ids = _ids()
    with torch.no_grad():
        ours = model(input_ids=ids).logits
    save_peft_lora(model, tmp_path)
    assert torch.allclose(_peft_logits(tmp_path, ids), ours, atol=1e-5)
    # and back into our layers
    fresh = build_tiny_lm(VOCAB, **TINY)
    loaded = load_peft_lora(fresh, tmp_path)
    assert sorted(loaded) == sorted(adapter_modules(model))
    assert all(isinstance(m, cls) for m in adapter_modules(fresh).values())
    with torch.no_grad():
        assert torch.allclose(fresh(input_ids=ids).logits, ours, atol=1e-6)


@pytest.mark.parametrize("cls", [LoRALinear, DoRALinear])
def test_gradients_match_peft_after_a_round_trip(cls, tmp_path):
    # outputs alone do not pin DoRA's convention: PEFT detaches the row norm ||W + sBA|| in the backward
    # (DoRA Sec. 4.3); a non-detached norm gives the same forward but other gradients for A, B and m
    peft = pytest.importorskip("peft")
    model = build_tiny_lm(VOCAB, **TINY)
    inject_adapters(model, ["q_proj", "v_proj"], lambda lin: cls(lin, 4, 8, generator=torch_generator(1)))
    _randomize(model)
    save_peft_lora(model, tmp_path)
    pm = peft.PeftModel.from_pretrained(build_tiny_lm(VOCAB, **TINY), str(tmp_path), is_trainable=True)
    ids = _ids()
    model(input_ids=ids).logits.pow(2).mean().backward()
    pm(input_ids=ids).logits.pow(2).mean().backward()
    theirs = {n: p.grad for n, p in pm.named_parameters() if p.grad is not None}
    checked = 0
    for name, mod in adapter_modules(model).items():
        pairs = [("lora_A", mod.lora_A), ("lora_B", mod.lora_B)]
        if cls is DoRALinear:
            pairs.append(("lora_magnitude_vector", mod.lora_magnitude_vector))
        for key, ours in pairs:
            (peft_name,) = [
                n for n in theirs if n.endswith(f"{name}.{key}.default.weight") or n.endswith(f"{name}.{key}.default")
            ]
            torch.testing.assert_close(ours.grad, theirs[peft_name].reshape(ours.grad.shape), atol=1e-6, rtol=1e-4)
            checked += 1
    assert checked == (3 if cls is DoRALinear else 2) * len(adapter_modules(model))


def test_heterogeneous_ranks_round_trip_through_rank_pattern(tmp_path):
    pytest.importorskip("peft")
    model = build_tiny_lm(VOCAB, **TINY)
    inject_adapters(model, ["q_proj"], lambda lin: LoRALinear(lin, 2, 4, generator=torch_generator(0)))
    inject_adapters(model, ["down_proj"], lambda lin: LoRALinear(lin, 5, 3, generator=torch_generator(1)))
    _randomize(model)
    ids = _ids()
    with torch.no_grad():
        ours = model(input_ids=ids).logits
    save_peft_lora(model, tmp_path)
    assert torch.allclose(_peft_logits(tmp_path, ids), ours, atol=1e-5)


def test_load_a_checkpoint_written_by_peft(tmp_path):
    peft = pytest.importorskip("peft")
    base = build_tiny_lm(VOCAB, **TINY)
    cfg = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["k_proj", "o_proj"], init_lora_weights="gaussian")
    pm = peft.get_peft_model(base, cfg)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.2, generator=torch_generator(2))
    pm.eval()
    ids = _ids()
    with torch.no_grad():
        want = pm(input_ids=ids).logits
    pm.save_pretrained(str(tmp_path))
    fresh = build_tiny_lm(VOCAB, **TINY)
    load_peft_lora(fresh, tmp_path)
    with torch.no_grad():
        assert torch.allclose(fresh(input_ids=ids).logits, want, atol=1e-5)


def test_loading_a_checkpoint_of_another_shape_fails_clearly(tmp_path):
    model = build_tiny_lm(VOCAB, **TINY)
    inject_adapters(model, ["q_proj"], lambda lin: LoRALinear(lin, 2))
    save_peft_lora(model, tmp_path)
    other = build_tiny_lm(VOCAB, d_model=48, n_layers=1, n_heads=2, n_kv_heads=1)
    with pytest.raises(ValueError, match=r"shape mismatch for base_model\.model\.model\.layers\.0\.self_attn\.q_proj"):
        load_peft_lora(other, tmp_path)
    with pytest.raises(FileNotFoundError):
        load_peft_lora(other, tmp_path / "nowhere")


def test_saving_merged_adapters_is_refused(tmp_path):
    model = build_tiny_lm(VOCAB, **TINY)
    inject_adapters(model, ["q_proj"], lambda lin: LoRALinear(lin, 2))
    merge_adapters(model)
    with pytest.raises(RuntimeError, match="unmerge"):
        save_peft_lora(model, tmp_path)
