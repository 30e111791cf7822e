"""geode.compression's public names: bad inputs fail with an error naming the argument (issue 51, F10)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import geode.compression as comp  # noqa: E402


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _lin(n_in=16, n_out=4, seed=0):
    torch.manual_seed(seed)
    return nn.Linear(n_in, n_out)


def _hess(n=16, seed=0):
    x = _t(32, n, seed=seed)
    return x.T @ x / 32


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))


def _packed():
    return comp.PackedLinear.from_linear(_lin(), bits=4, group_size=8)


def _moe(seed=0):
    return comp.MoELM(11, d_model=8, n_layers=1, n_heads=2, d_ff=8, n_experts=2, top_k=1, max_positions=8, seed=seed)


def _ids(b=2, t=4, seed=0):
    return torch.randint(0, 11, (b, t), generator=torch.Generator().manual_seed(seed))


def _moe_layer():
    torch.manual_seed(0)
    return comp.MoELayer(8, 8, 2, 1)


def _qa():
    return comp.QuantAdapterLinear(_t(4, 16), None, 2)


def _denoiser():
    return comp.DigitDenoiser(dim=64, width=8, hidden=8, n_blocks=1, seed=0)


def _sara():
    return comp.apply_sara(_denoiser())


def _units(k=4, seed=0):
    v = _t(k, 8, seed=seed).abs() + 0.1
    return v / v.norm(dim=1, keepdim=True)


def _codes():
    return comp.sph_encode(_t(4, 16), _units(), radius_bits=4, group_size=16)


def _sph_linear():
    return comp.SPHLinear(_codes(), _units(), direction_bits=2, radius_bits=4)


def _sph_linear_ctor(codes, codebook, *, direction_bits, radius_bits):
    # SPHCodes is a named tuple: the contract passes it as a plain tuple (its corruptions rebuild the tuple's type)
    return comp.SPHLinear(_as_codes(codes), codebook, direction_bits=direction_bits, radius_bits=radius_bits)


def _sph_decode(codes, codebook):
    return comp.sph_decode(_as_codes(codes), codebook)


def _as_codes(codes):
    return comp.SPHCodes(*codes) if isinstance(codes, tuple) and len(codes) == 4 else codes


def _compressor():
    return comp.ActivationCompressor(2, 0.1, mode="tracked")


# main methods of the modules, as wrappers whose parameters carry the method's own argument names
def _packed_forward(x):
    return _packed()(x)


def _moelm_forward(ids):
    return _moe()(ids)


def _moelm_loss(ids, aux_coef=0.0):
    return _moe().loss(ids, aux_coef)


def _moe_layer_forward(x):
    return _moe_layer()(x)


def _qa_forward(x):
    return _qa()(x)


def _qa_init_from_error(error):
    return _qa().init_from_error(error)


def _denoiser_forward(x, t):
    return _denoiser()(x, t)


def _svd_forward(x):
    s = comp.SVDLinear.from_linear(_lin())
    s.set_rank(2)
    return s(x)


def _sph_forward(x):
    return _sph_linear()(x)


def _stacr_forward(x):
    return comp.StacrLinear(_lin(), _compressor())(x)


def _compress(x):
    return _compressor().compress(x)


def _fraction(eps):
    return comp.SaraOnline(0.1, [8]).fraction(eps)


def _saved_bytes(exclude=()):
    with comp.saved_bytes(exclude) as out:
        (_t(3, 4).requires_grad_() * 2).sum().backward()
    return out


def _replay_qat(model, reference, batch_fn, *, steps, lr):
    return comp.routing_replay_qat(model, reference, batch_fn, steps=steps, lr=lr)


METHODS = {
    "PackedLinear.forward": _packed_forward,
    "MoELM.forward": _moelm_forward,
    "MoELM.loss": _moelm_loss,
    "MoELayer.forward": _moe_layer_forward,
    "QuantAdapterLinear.forward": _qa_forward,
    "QuantAdapterLinear.init_from_error": _qa_init_from_error,
    "DigitDenoiser.forward": _denoiser_forward,
    "SVDLinear.forward": _svd_forward,
    "SPHLinear.forward": _sph_forward,
    "StacrLinear.forward": _stacr_forward,
    "ActivationCompressor.compress": _compress,
    "SaraOnline.fraction": _fraction,
    "saved_bytes": _saved_bytes,
    "SPHLinear": _sph_linear_ctor,
    "sph_decode": _sph_decode,
}

CALLS = {  # -> (args, kwargs), built fresh each time
    "mxfp4_quantize": lambda: ((_t(3, 16),), {"block_size": 8}),
    # quant
    "PackedLinear": lambda: (
        (torch.randint(0, 16, (4, 16), dtype=torch.uint8), torch.rand(4, 2) + 0.1, torch.full((4, 2), 7.0)),
        {"bits": 4},
    ),
    "PackedLinear.forward": lambda: ((_t(3, 16),), {}),
    "calibration_hessians": lambda: ((_mlp(), [_t(5, 8), _t(5, 8, seed=1)], ["0", "2"]), {}),
    "gptq_quantize": lambda: ((_t(4, 16), _hess()), {"bits": 3, "group_size": 8, "damp": 0.01, "clip": 1.0}),
    "linear_names": lambda: ((_mlp(),), {"exclude": ()}),
    "output_error": lambda: ((_t(4, 16), _t(4, 16, seed=1), _hess()), {}),
    "pad_columns": lambda: ((_t(4, 10), 8), {}),
    "replace_linears": lambda: (
        (_mlp(), lambda n, lin: comp.PackedLinear.from_linear(lin, bits=8, group_size=8), ["0"]),
        {},
    ),
    "rtn_quantize": lambda: ((_t(4, 16),), {"bits": 3, "group_size": 8, "clip": 1.0}),
    # moe_quant
    "MoELM": lambda: ((11,), {"d_model": 8, "n_layers": 1, "n_heads": 2, "d_ff": 8, "n_experts": 2, "top_k": 1}),
    "MoELM.forward": lambda: ((_ids(),), {}),
    "MoELM.loss": lambda: ((_ids(),), {"aux_coef": 0.01}),
    "MoELayer": lambda: ((8, 8, 2, 1), {}),
    "MoELayer.forward": lambda: ((_t(2, 3, 8),), {}),
    "QuantAdapterLinear": lambda: ((_t(4, 16), torch.zeros(4), 2), {}),
    "QuantAdapterLinear.forward": lambda: ((_t(3, 16),), {}),
    "QuantAdapterLinear.init_from_error": lambda: ((_t(4, 16, seed=1),), {}),
    "allocate_ranks": lambda: (([torch.tensor([3.0, 2.0, 1.0]), torch.tensor([2.0, 1.0, 0.5])], [0.6, 0.4], 3), {}),
    "expert_error_spectra": lambda: ((_moe(),), {"block_size": 8}),
    "expert_loads": lambda: ((_moe(), [_ids()]), {}),
    "load_weighted_error": lambda: ((comp.mxfp4_moe(_moe(), block_size=8), _moe(), torch.tensor([[0.5, 0.5]])), {}),
    "mxfp4_moe": lambda: ((_moe(),), {"block_size": 8}),
    "record_routes": lambda: ((_moe(), _ids()), {}),
    "routing_replay_qat": lambda: (
        (comp.mxfp4_moe(_moe(), [[1, 1]], block_size=8), _moe(), lambda t: _ids(seed=t)),
        {"steps": 1, "lr": 1e-3},
    ),
    "set_replay": lambda: ((_moe(), comp.record_routes(_moe(), _ids())), {}),
    "topk_agreement": lambda: ((comp.record_routes(_moe(), _ids()), comp.record_routes(_moe(1), _ids())), {}),
    # sara
    "DigitDenoiser": lambda: ((), {"dim": 64, "width": 8, "hidden": 8, "n_blocks": 1}),
    "DigitDenoiser.forward": lambda: ((_t(2, 64), torch.tensor([3.0, 10.0])), {}),
    "SVDLinear": lambda: ((_t(4, 16), torch.zeros(4)), {}),
    "SVDLinear.forward": lambda: ((_t(3, 16),), {}),
    "SaraOnline": lambda: ((0.1, [8, 8]), {"image_shape": (8, 8)}),
    "SaraOnline.fraction": lambda: ((_t(3, 64),), {}),
    "apply_sara": lambda: ((_denoiser(),), {}),
    "ddim_sample": lambda: ((_sara(), _t(2, 64)), {"steps": 2}),
    "ddpm_alphas": lambda: ((100, 1e-4, 0.02), {}),
    "lrae_table": lambda: ((_sara(), _t(2, 64), (2, None)), {"steps": 2}),
    "sara_dp": lambda: ((np.array([[0.3, 0.0], [0.2, 0.0]]), np.array([1.0, 2.0]), 3.0), {"resolution": 6}),
    "set_block_ranks": lambda: ((_sara(), [2]), {}),
    # sphquant
    "SPHCodebook": lambda: ((_units(),), {}),
    "SPHCodes": lambda: (tuple(_codes()), {}),
    "SPHLinear": lambda: ((tuple(_codes()), _units()), {"direction_bits": 2, "radius_bits": 4}),
    "SPHLinear.forward": lambda: ((_t(3, 16),), {}),
    "angles_to_vectors": lambda: ((torch.rand(3, 7),), {}),
    "sph_bits_per_weight": lambda: ((8, 8, 128), {}),
    "sph_decode": lambda: ((tuple(_codes()), _units()), {}),
    "sph_encode": lambda: ((_t(4, 16), _units()), {"radius_bits": 4, "group_size": 16}),
    "spherical_kmeans": lambda: ((_units(8), 2), {"iters": 2}),
    "sphquant_model": lambda: (
        (_mlp(), {"0": _hess(8)}, ["0"]),
        {"direction_bits": 2, "radius_bits": 4, "group_size": 8, "finetune_steps": 1, "kmeans_iters": 1},
    ),
    "vectors_to_angles": lambda: ((_units(),), {}),
    # stac_r
    "ActivationCompressor": lambda: ((2, 0.1), {"mode": "tracked"}),
    "ActivationCompressor.compress": lambda: ((_t(10, 16),), {}),
    "StacrLinear": lambda: ((_lin(), _compressor()), {}),
    "StacrLinear.forward": lambda: ((_t(2, 5, 16),), {}),
    "bridge_cosine_bound": lambda: ((_t(6, 4), _t(6, 16), _t(6, 16, seed=1)), {}),
    "saved_bytes": lambda: ((), {"exclude": [_t(2)]}),
    "stacr_unwrap": lambda: ((_mlp(),), {}),
    "stacr_wrap": lambda: ((_mlp(),), {"rank": 2, "residual_frac": 0.1}),
}

NOT_CALLED = {
    "E2M1_VALUES": "a tuple of the FP4 grid's values, not callable",
}

_HOT = "checked for type and shape only: it runs at every step; NaN propagates like torch's own layers (documented)"
_EMPTY_BATCH = "an empty batch gives an empty output (documented)"


def _hot(*names, empty=True):
    out = {(n, k): _HOT for n in names for k in ("nan", "inf")}
    if empty:
        out.update({(n, "empty"): _EMPTY_BATCH for n in names})
    return out


_RECORD = "a plain named tuple (no checks possible); sph_decode and SPHLinear check it (documented)"

OK = {
    "PackedLinear.forward": _hot("x"),
    "QuantAdapterLinear.forward": _hot("x"),
    "MoELayer.forward": _hot("x"),
    "SVDLinear.forward": _hot("x"),
    "SPHLinear.forward": _hot("x"),
    "StacrLinear.forward": {("x", "inf"): _HOT, ("x", "empty"): _EMPTY_BATCH},
    "ActivationCompressor.compress": {("x", "inf"): _HOT, ("x", "empty"): _EMPTY_BATCH},
    "DigitDenoiser.forward": _hot("x", "t"),
    "angles_to_vectors": _hot("phi"),
    "vectors_to_angles": _hot("c"),
    "sph_decode": _hot("codebook", empty=False),
    "SPHCodes": {("scales", k): _RECORD for k in ("nan", "inf", "empty", "wrong shape", "wrong type")},
    "replace_linears": {("names", "empty"): "an empty names replaces nothing (documented)"},
    "saved_bytes": {
        **{
            ("exclude", k): "exclude is matched by storage: values and shapes do not matter (documented)"
            for k in ("nan", "inf", "wrong shape")
        },
        ("exclude", "empty"): "excludes nothing (the default)",
    },
}


PACKAGE = comp


def test_every_public_name_is_covered(api_coverage):
    assert api_coverage == []


def test_bad_inputs_fail_cleanly(public_name, api_problems):
    assert api_problems(public_name) == []


def test_audit_mxfp4_quantize_refuses_nan_and_empty_weights():
    w = _t(2, 32)
    w[1, 5] = float("nan")
    with pytest.raises(ValueError, match="weight must contain only finite"):
        comp.mxfp4_quantize(w)
    with pytest.raises(ValueError, match="weight must not be empty"):
        comp.mxfp4_quantize(torch.zeros(0, 32))
