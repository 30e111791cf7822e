"""Tests of causal paths, the causal-piece count, the initialisation study and the claim registration."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geode.neuro import NLIFLayer, NLIFNetwork, latency_encode
from geode.neuro.causal_pieces import (
    INIT_GRID,
    InitConfig,
    causal_path_masks,
    count_causal_pieces,
    rank_correlation,
    run_init_study,
    yinyang_spike_data,
)

torch.set_num_threads(1)


def _layer(weights, dtype=torch.float64) -> NLIFLayer:
    w = torch.as_tensor(weights, dtype=dtype)
    layer = NLIFLayer(w.shape[0], w.shape[1]).to(dtype)
    with torch.no_grad():
        layer.weight.copy_(w)
    return layer


def _grid(lo: float = 0.0, hi: float = 3.0, n: int = 31) -> torch.Tensor:
    g = torch.linspace(lo, hi, n, dtype=torch.float64)
    return torch.cartesian_prod(g, g)


# ---------------------------------------------------------------- hand-built cases


def test_two_input_neuron_has_three_pieces():
    # w = (1.5, 1.5), theta = 1: {x0} if x1 comes > ln 3 later, {x1} symmetrically, else {x0, x1}
    n, info = count_causal_pieces(_layer([[1.5], [1.5]]), _grid(), log=True)
    assert n == 3 and info["per_layer"] == [3] and info["silent_fraction"] == 0.0
    X = _grid()
    ids = info["piece_ids"]
    both = (X[:, 0] - X[:, 1]).abs() < math.log(3.0)
    assert len(set(ids[both.numpy()].tolist())) == 1
    assert len(set(ids[(X[:, 1] - X[:, 0] > math.log(3.0)).numpy()].tolist())) == 1


def test_inhibitory_input_gives_a_silent_piece():
    # w = (1.5, -1): input 1 before the spike (t1 < t0 + ln 3) silences the neuron; the empty path is a piece
    n, info = count_causal_pieces(_layer([[1.5], [-1.0]]), _grid(), log=True)
    X = _grid().numpy()
    silent = X[:, 1] < X[:, 0] + math.log(3.0)
    assert n == 2 and info["silent_fraction"] == pytest.approx(silent.mean())


def test_two_neuron_network_counts_only_the_causal_path():
    # hidden h0 <- x0 only, h1 <- x0 and x1; the output listens to h0 only, so h1's causal set (which
    # varies with the inputs) is not part of the causal path
    net = NLIFNetwork([_layer([[1.5, 1.5], [0.0, 1.5]]), _layer([[1.5], [0.0]])])
    X = _grid()
    assert count_causal_pieces(net, X) == 1
    assert count_causal_pieces(net, X, restrict_to_output=False) == 3
    # a silent output: no causal path at all, whatever the hidden neurons do
    silent = NLIFNetwork([_layer([[1.5, 1.5], [0.0, 1.5]]), _layer([[0.4], [0.4]])])
    assert count_causal_pieces(silent, X) == 1
    assert count_causal_pieces(silent, X, restrict_to_output=False) == 3
    # the output listens to both hidden neurons: pieces of h1 become visible through the output
    net2 = NLIFNetwork([_layer([[1.5, 1.5], [0.0, 1.5]]), _layer([[1.5], [1.5]])])
    n2, info = count_causal_pieces(net2, X, log=True)
    assert n2 > 1 and len(info["per_layer"]) == 2


def test_silent_network_is_one_piece():
    net = NLIFNetwork.from_sizes([5, 20, 3], weight_mean=0.5, weight_std=0.05, seed=0)
    X = latency_encode(np.random.default_rng(0).uniform(size=(50, 4)))
    n, info = count_causal_pieces(net, X, log=True)
    assert n == 1 and info["silent_fraction"] == 1.0


def test_restricted_masks_form_a_path():
    net = NLIFNetwork.from_sizes([5, 30, 3], weight_mean=2.0, weight_std=1.0, seed=1)
    X = latency_encode(np.random.default_rng(1).uniform(size=(40, 4)))
    t_out, masks = causal_path_masks(net, X)
    full_t, full = causal_path_masks(net, X, restrict_to_output=False)
    assert torch.equal(t_out, full_t)
    for m, f in zip(masks, full):
        assert not (m & ~f).any()  # the path is part of the full causal state
    # a hidden neuron has a causal set on the path iff it is in the causal set of a spiking output
    used = masks[1].any(dim=2)
    assert torch.equal(masks[0].any(dim=1), used)
    assert torch.equal(masks[1].any(dim=1), torch.isfinite(t_out))


def test_piece_ids_group_equal_paths():
    net = NLIFNetwork.from_sizes([5, 8, 3], weight_mean=2.0, weight_std=1.0, seed=2)
    X = latency_encode(np.random.default_rng(2).uniform(size=(200, 4)))
    n, info = count_causal_pieces(net, X, log=True)
    _, masks = causal_path_masks(net, X)
    flat = torch.cat([m.reshape(len(X), -1) for m in masks], 1)
    ids = info["piece_ids"]
    assert len(np.unique(ids)) == n
    for k in np.unique(ids)[:10]:
        rows = flat[torch.from_numpy(ids == k)]
        assert (rows == rows[0]).all()


def test_sequence_of_layers_and_single_layer_accepted():
    layers = [NLIFLayer(5, 6, seed=0), NLIFLayer(6, 3, seed=1)]
    X = latency_encode(np.random.default_rng(3).uniform(size=(30, 4)))
    a = count_causal_pieces(NLIFNetwork(layers), X)
    assert a == count_causal_pieces(torch.nn.Sequential(*layers), X) == count_causal_pieces(layers, X)
    assert count_causal_pieces(layers[0], X, batch_size=7) == count_causal_pieces(layers[0], X)


# ---------------------------------------------------------------- Lipschitz inside a piece, jumps across


def test_spike_times_are_lipschitz_inside_a_piece():
    torch.manual_seed(0)
    net = NLIFNetwork.from_sizes([5, 20, 3], weight_mean=2.0, weight_std=1.0, seed=5).double()
    X = latency_encode(np.random.default_rng(5).uniform(size=(20, 4)), dtype=torch.float64)
    with torch.no_grad():
        t0, masks0 = causal_path_masks(net, X)
    gen = torch.Generator().manual_seed(1)
    checked = 0
    for b in range(len(X)):
        fin = torch.isfinite(t0[b])
        if not fin.any():
            continue
        x = X[b : b + 1].clone().requires_grad_(True)
        t, _ = net(x)
        (grad,) = torch.autograd.grad(t[0, fin].sum(), x)
        grad = grad.detach()
        for _ in range(5):
            d = torch.randn(1, 5, generator=gen, dtype=torch.float64)
            d[0, 4] = 0.0  # keep the bias spike fixed
            d = d / d.norm()
            for h in (1e-3, 1e-4, 1e-5):
                with torch.no_grad():
                    t_h, masks_h = causal_path_masks(net, X[b : b + 1] + h * d)
                if all(torch.equal(m0[b : b + 1], mh) for m0, mh in zip(masks0, masks_h)):
                    dt = t_h[0, fin] - t0[b, fin]
                    # Lipschitz with a local constant bounded by the gradient (plus curvature slack) ...
                    assert dt.abs().max() <= 10.0 * h * (1.0 + grad.abs().sum())
                    # ... and the finite difference converges to the directional derivative
                    if h == 1e-5:
                        assert float(dt.sum() / h) == pytest.approx(float((grad * d).sum()), abs=1e-3)
                        checked += 1
    assert checked >= 20


def test_spike_time_jumps_only_when_the_causal_set_changes():
    # sweep the inhibitory input's time through the excitatory spike at ln 3: t_out jumps to inf exactly
    # where the causal set changes
    layer = _layer([[1.5], [-1.0]])
    ts = torch.linspace(0.5, 2.0, 301, dtype=torch.float64)
    X = torch.stack([torch.zeros_like(ts), ts], 1)
    t_out, mask = layer(X)
    fin = torch.isfinite(t_out[:, 0])
    assert torch.equal(fin, ts > math.log(3.0))
    assert torch.equal(mask[:, 0, 0], fin)
    assert torch.allclose(t_out[fin, 0], torch.full_like(t_out[fin, 0], math.log(3.0)))


# ---------------------------------------------------------------- parameter neighbourhood


def test_parameter_neighbourhood_adds_pieces_and_is_seeded():
    net = NLIFNetwork.from_sizes([5, 10, 3], weight_mean=2.0, weight_std=1.0, seed=6)
    X = latency_encode(np.random.default_rng(6).uniform(size=(100, 4)))
    w_before = [layer.weight.detach().clone() for layer in net.layers]
    base = count_causal_pieces(net, X)
    more = count_causal_pieces(net, X, param_samples=5, param_scale=0.3, seed=1)
    assert more > base  # the draws reach pieces the weights themselves do not (fails if the draws are ignored)
    assert more == count_causal_pieces(net, X, param_samples=5, param_scale=0.3, seed=1)
    # a vanishing neighbourhood adds nothing (fails if the union double counts or ignores the base weights)
    assert count_causal_pieces(net, X, param_samples=3, param_scale=1e-12, seed=1) == base
    assert all(torch.equal(w, layer.weight) for w, layer in zip(w_before, net.layers))  # weights untouched


# ---------------------------------------------------------------- validation


def test_count_validation_errors():
    layer = NLIFLayer(2, 1)
    with pytest.raises(ValueError, match=r"X must have shape \(n, 2\)"):
        count_causal_pieces(layer, torch.zeros(3, 4))
    with pytest.raises(ValueError, match="NaN"):
        count_causal_pieces(layer, torch.tensor([[0.0, math.nan]]))
    with pytest.raises(TypeError, match="X must be a torch.Tensor"):
        count_causal_pieces(layer, np.zeros((3, 2)))
    with pytest.raises(TypeError, match="model must be"):
        count_causal_pieces(torch.nn.Linear(2, 1), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="layer shape mismatch"):
        count_causal_pieces([NLIFLayer(2, 3), NLIFLayer(2, 1)], torch.zeros(3, 2))
    with pytest.raises(ValueError, match="param_scale must be > 0"):
        count_causal_pieces(layer, torch.zeros(3, 2), param_samples=2)
    with pytest.raises(ValueError, match="param_samples"):
        count_causal_pieces(layer, torch.zeros(3, 2), param_samples=-1)
    with pytest.raises(ValueError, match="at least one input"):
        count_causal_pieces(layer, torch.zeros(0, 2))


# ---------------------------------------------------------------- the experiment's pieces


def test_rank_correlation_matches_scipy_and_handles_ties():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y = rng.integers(0, 4, 16).astype(float), rng.normal(size=16)
        rho, ok = rank_correlation(x, y)
        assert ok and rho == pytest.approx(spearmanr(x, y).statistic, abs=1e-10)
    assert rank_correlation([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == (0.0, False)
    assert rank_correlation([1.0, 2.0], [1.0, 2.0]) == (0.0, False)
    with pytest.raises(ValueError, match="same length"):
        rank_correlation([1.0, 2.0, 3.0], [1.0, 2.0])


def test_init_grid_spans_mean_std_and_positive_only():
    assert len(INIT_GRID) == 16
    assert sum(c.positive for c in INIT_GRID) == 4
    assert len({c.mean for c in INIT_GRID}) >= 4 and len({c.std for c in INIT_GRID}) >= 3


def test_yinyang_spike_data_coding():
    t, y = yinyang_spike_data(50, seed=0)
    assert t.shape == (50, 5) and y.shape == (50,)
    assert torch.all(t[:, 4] == 0) and torch.all((t[:, :4] >= 0.15 - 1e-6) & (t[:, :4] <= 2.0 + 1e-6))
    assert torch.allclose(t[:, 0] + t[:, 2], torch.full((50,), 2.15))  # x and 1 - x mirror in time


def test_run_init_study_is_deterministic_and_collapsed_init_is_stuck():
    cfgs = (InitConfig(0.5, 0.05), InitConfig(2.0, 1.0, positive=True))
    kw = dict(sizes=(5, 8, 3), n_train=60, n_test=60, epochs=1, seed=3)
    rows, curves = run_init_study(cfgs, **kw)
    rows2, curves2 = run_init_study(cfgs, **kw)
    assert rows == rows2 and np.array_equal(curves, curves2)
    assert curves.shape == (2, 2)
    assert rows[0]["pieces"] == 1 and rows[0]["final_test_acc"] == pytest.approx(1 / 3)
    assert rows[1]["pieces"] > 1
    with pytest.raises(ValueError, match="sizes"):
        run_init_study(cfgs, sizes=(4, 8, 3))
    with pytest.raises(ValueError, match="silence_penalty"):
        run_init_study(cfgs, silence_penalty=-1.0)
    # with Mostafa's penalty the collapsed net still has 1 piece at init (pieces are counted before training)
    pen_rows, _ = run_init_study(cfgs[:1], silence_penalty=1.0, **kw)
    assert pen_rows[0]["pieces"] == 1


def test_claim_thresholds_are_the_issue_s():
    from geode.claims import load_claim

    claim = load_claim("causal-pieces")
    got = {t.name: (t.metric, t.op, t.value) for t in (*claim.thresholds, *claim.floors)}
    assert got == {
        "few_collapsed": ("collapsed_fraction", "<=", 0.10),
        "euler_converges": ("euler_error_falls", ">=", 1.0),
        "rho_strong": ("spearman_rho", ">=", 0.6),
        "best_90": ("best_test_accuracy", ">=", 0.90),
        "rho_some": ("spearman_rho", ">=", 0.3),
    }
    assert claim.reproduced == "rho_strong and best_90" and claim.partial == "rho_some"
    assert {f.name for f in claim.floors} == {"few_collapsed", "euler_converges"}
    ok = {"collapsed_fraction": 0.0, "euler_error_falls": 1.0}
    assert claim.verdict({**ok, "spearman_rho": 0.7, "best_test_accuracy": 0.92})[0] == "reproduced"
    assert claim.verdict({**ok, "spearman_rho": 0.7, "best_test_accuracy": 0.85})[0] == "partial"
    assert claim.verdict({**ok, "spearman_rho": 0.2, "best_test_accuracy": 0.95})[0] == "not reproduced"
    bad = {**ok, "collapsed_fraction": 0.25, "spearman_rho": 0.7, "best_test_accuracy": 0.95}
    assert claim.verdict(bad)[0] == "inconclusive"


# ---------------------------------------------------------------- the released protocol (issue 19)


def test_a_known_good_initialisation_reaches_90_percent_on_yinyang():
    """Issue 19's gate: the recipe must be able to train. [4, 30, 3], mu = 0.8, sigma = 0.79, about 10 s of CPU.

    Revision 1's recipe plateaued at 74-76% and silenced the outputs of many runs; this fails with it.
    """
    from geode.neuro.causal_pieces.release import ReleaseInit, ReleaseNet, train_release, yinyang_raw

    torch.manual_seed(0)
    data = {"train": yinyang_raw(5000, 42), "val": yinyang_raw(1000, 43), "test": yinyang_raw(1000, 41)}
    net = ReleaseNet(30, ReleaseInit(0.8, 0.79, 4))
    r = train_release(net, data, lr=3e-2, gamma=0.0, epochs=60, batch_size=200, cosine=True, seed=0)
    assert r["test_acc"] >= 0.90, r["test_acc"]
    assert not r["collapsed"] and r["spiking_final"] > 0.99
    assert r["pieces_init"] > 100


def test_release_network_shapes_decoder_cut_and_collapse_flag():
    from geode.neuro.causal_pieces.release import DECODE_T, ReleaseInit, ReleaseNet, release_inits, train_release

    inits = release_inits(5, 3)
    assert inits == release_inits(5, 3) and len({i.seed for i in inits}) == 5
    assert all(-0.2 <= i.mean < 0.8 and 0 <= i.std < 1 for i in inits)
    net = ReleaseNet(6, ReleaseInit(0.8, 0.1, 0))
    x = torch.rand(7, 4)
    logits, t = net(x)
    assert logits.shape == (7, 3) and t.shape == (7, 6)
    used = torch.where(torch.isfinite(t) & (t <= DECODE_T), t, torch.zeros_like(t))
    torch.testing.assert_close(logits, net.decoder(used))
    # a network whose weights cannot reach the threshold never spikes: dead at init, not "collapsed"
    dead = ReleaseNet(6, ReleaseInit(-1.0, 0.01, 0))
    data = {"train": (x, torch.zeros(7, dtype=torch.long))} | {
        k: (x, torch.zeros(7, dtype=torch.long)) for k in ("val", "test")
    }
    r = train_release(dead, data, lr=1e-2, epochs=1, batch_size=7)
    assert r["spiking_init"] == 0 and not r["collapsed"] and r["pieces_init"] == 1
