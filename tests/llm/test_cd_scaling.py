from __future__ import annotations

import numpy as np
import pytest

from geode.llm import (
    CDScalingLaw,
    ChinchillaLaw,
    MuennighoffLaw,
    effective_data,
    estimate_token_effectiveness,
    muennighoff_loss,
    token_effectiveness,
)
from geode.llm.cd_scaling.experiment import TeacherTask, make_stream, train_student

CORE = dict(e=np.log(0.01), a=np.log(2.0), alpha=0.5, b=np.log(20.0), beta=0.6)


def _cd(log_r0=2.0794415416798357, a_n=0.3, b_rho=0.2, ref=None):
    return CDScalingLaw().set_params(
        ref=ref, **CORE, **{"log_r0[repeat]": log_r0, "a_N[repeat]": a_n, "b_rho[repeat]": b_rho}
    )


def _grid():
    rows = []
    for n in (41.0, 81.0, 161.0, 321.0, 641.0):
        rows += [(n, 256 * f, 256 * f) for f in (0.25, 0.5, 1, 2, 4, 8, 16, 32)]
        rows += [(n, 256.0 * r, 256.0) for r in (2, 4, 8, 16, 32)]
    return map(np.array, zip(*rows))


def test_muennighoff_readme_values():
    # datablations README, Figure 1 (right)
    assert muennighoff_loss(6.34e9, 242e9, 25e9) == pytest.approx(2.2256440889984477, abs=1e-9)
    assert muennighoff_loss(8.67e9, 178e9, 25e9) == pytest.approx(2.2269634075087867, abs=1e-9)


def test_effectiveness_limits_and_saturation():
    U = 100.0
    assert token_effectiveness(U, U, 5.0) == 1.0
    assert token_effectiveness(U * 1.000001, U, 5.0) == pytest.approx(1.0, abs=1e-6)
    assert token_effectiveness(U * 50, U, np.inf) == pytest.approx(1.0)
    eta = token_effectiveness(U * np.array([2, 4, 8, 16, 32]), U, 5.0)
    assert np.all(np.diff(eta) < 0)
    assert effective_data(U * 1e6, U, 5.0) == pytest.approx(U * 6.0, rel=1e-6)  # U (1 + R*)
    assert effective_data(U * 3, U * 3, 5.0) == pytest.approx(U * 3)  # fresh


def test_cd_law_is_chinchilla_at_fresh_data_and_without_saturation():
    N, D, _ = _grid()
    chin = ChinchillaLaw().set_params(**CORE)
    assert np.allclose(_cd().predict(N, D), chin.predict(N, D), rtol=1e-12)
    # R* -> infinity: derived tokens are fresh tokens, whatever U
    assert np.allclose(_cd(log_r0=30.0, a_n=0, b_rho=0).predict(N, D, D / 8), chin.predict(N, D), rtol=1e-6)
    # direct formula
    n, d = 161.0, 1024.0
    assert chin.predict(n, d) == pytest.approx(0.01 + 2.0 / n**0.5 + 20.0 / d**0.6, rel=1e-12)


def test_cd_law_nests_muennighoff():
    N, D, U = _grid()
    m = MuennighoffLaw().set_params(**CORE, **{"log_rstar[repeat]": np.log(6.0)})
    cd = _cd(log_r0=np.log(6.0), a_n=0.0, b_rho=0.0, ref={"N": 150.0, "rho": 7.0})
    assert np.allclose(cd.predict(N, D, U), m.predict(N, D, U), rtol=1e-12)
    # and the formula: B / (U + U R* (1 - exp(-R/R*)))^beta
    n, d, u = 161.0, 256.0 * 9, 256.0
    want = 0.01 + 2.0 / n**0.5 + 20.0 / (u + u * 6.0 * (1 - np.exp(-8.0 / 6.0))) ** 0.6
    assert m.predict(n, d, u) == pytest.approx(want, rel=1e-12)


def test_eta_falls_with_model_size_when_a_positive():
    cd = _cd(ref={"N": 160.0, "rho": 10.0})
    e = cd.eta(np.array([41.0, 161.0, 641.0]), 256.0 * 32, 256.0)
    assert np.all(np.diff(e) < 0)
    e0 = _cd(a_n=-0.3, b_rho=0.0, ref={"N": 160.0, "rho": 10.0}).eta(np.array([41.0, 641.0]), 256.0 * 32, 256.0)
    assert e0[1] > e0[0]


def test_fit_recovers_known_parameters():
    N, D, U = _grid()
    ref = {"N": float(np.exp(np.mean(np.log(N)))), "rho": float(np.exp(np.mean(np.log(D / N))))}
    true = _cd(ref=ref)
    L = true.predict(N, D, U) * np.exp(np.random.default_rng(0).normal(0, 0.005, N.size))
    fit = CDScalingLaw(n_starts=6).fit(N, D, U, L)
    for k in ("alpha", "beta", "a_N[repeat]", "b_rho[repeat]"):
        assert fit.params_[k] == pytest.approx(true.params_[k], abs=0.05), k
    assert fit.params_["log_r0[repeat]"] == pytest.approx(true.params_["log_r0[repeat]"], abs=0.15)
    assert np.allclose(fit.eta(N, D, U), true.eta(N, D, U), atol=0.03)


def test_fit_is_not_fooled_by_fresh_relabelled_as_derived():
    # derived tokens that are really fresh: the fitted eta must stay near 1
    N, D, _ = _grid()
    chin = ChinchillaLaw().set_params(**CORE)
    L = chin.predict(N, D)
    fit = CDScalingLaw(n_starts=6).fit(N, D, np.minimum(D, 256.0), L)
    assert np.all(fit.eta(N, D, np.minimum(D, 256.0)) > 0.95)


def test_estimator_recovers_known_effectiveness():
    Df = 2.0 ** np.arange(6, 16, 0.125)  # log-log interpolation: exact on a fine grid
    law = ChinchillaLaw().set_params(**CORE)
    Lf = law.predict(161.0, Df)
    U, D = 256.0, 256.0 * np.array([2, 4, 8, 16])
    eta = np.array([0.9, 0.7, 0.5, 0.3])
    L = law.predict(161.0, U + eta * (D - U))
    assert np.allclose(estimate_token_effectiveness(Df, Lf, D, U, L), eta, atol=2e-3)


def test_optimal_allocation_matches_chinchilla_closed_form():
    law = ChinchillaLaw().set_params(e=np.log(1.69), a=np.log(406.4), alpha=0.34, b=np.log(410.7), beta=0.28)
    C = 1e21
    A, B, al, be = 406.4, 410.7, 0.34, 0.28
    G = (al * A / (be * B)) ** (1 / (al + be))
    n_opt = G * (C / 6) ** (be / (al + be))
    n, d = law.optimal_allocation(C)
    assert n == pytest.approx(n_opt, rel=1e-3)
    assert n * d * 6 == pytest.approx(C)
    # with little unique data and saturating repetition, the CD optimum moves to a larger model
    cd = CDScalingLaw().set_params(
        e=np.log(1.69),
        a=np.log(406.4),
        alpha=0.34,
        b=np.log(410.7),
        beta=0.28,
        **{"log_r0[repeat]": np.log(5.0), "a_N[repeat]": 0.0, "b_rho[repeat]": 0.0},
    )
    n_cd, _ = cd.optimal_allocation(C, U=1e9)
    assert n_cd > 1.5 * n_opt


def test_regimes():
    law = _cd(a_n=0.0, b_rho=0.0, log_r0=np.log(4.0))
    D = 256.0 * np.array([0.5, 1.0, 2.0, 200.0])
    r = law.regime(161.0, D, np.minimum(D, 256.0))
    assert r.tolist() == ["compute-bound", "compute-bound", "data-bound", "model-bound"]


def test_bad_input_errors():
    law = CDScalingLaw()
    with pytest.raises(ValueError, match="at least 8 runs"):
        law.fit([1.0] * 5, [2.0] * 5, [1.0] * 5, [1.0] * 5)
    with pytest.raises(ValueError, match="U"):
        _cd().predict(100.0, 10.0, 20.0)
    with pytest.raises(ValueError, match="strategy"):
        _cd().predict(100.0, 20.0, 10.0, strategy="paraphrase")
    with pytest.raises(ValueError, match="N must be"):
        _cd().predict(-1.0, 20.0)
    with pytest.raises(RuntimeError, match="not fitted"):
        CDScalingLaw().predict(1.0, 2.0)
    with pytest.raises(ValueError, match="strategies"):
        CDScalingLaw(strategies=("fresh",))
    with pytest.raises(ValueError, match="loss"):
        CDScalingLaw().fit(np.ones(9), np.ones(9), np.ones(9), -np.ones(9))


def test_streams_and_student():
    task = TeacherTask(seed=0)
    rng = np.random.default_rng(0)
    x, y = make_stream(task, "repeat", 64, 16, rng)
    assert len(x) == 64 and len({tuple(r) for r in x.round(6)}) == 16
    xp, yp = make_stream(task, "paraphrase", 64, 16, np.random.default_rng(0))
    # same meaning coordinates and labels in every epoch; surface coordinates redrawn after the first
    base = {tuple(r) for r in np.c_[xp[:16, : task.k], yp[:16]].round(6)}
    assert {tuple(r) for r in np.c_[xp[:, : task.k], yp].round(6)} == base
    assert len({tuple(r) for r in xp.round(6)}) == 64
    with pytest.raises(ValueError, match="multiple"):
        make_stream(task, "repeat", 50, 16, rng)
    xt, yt = task.sample(512, rng)
    xf, yf = make_stream(task, "fresh", 4096, 4096, rng)
    trained = train_student(16, xf, yf, {"test": (xt, yt)}, lr=0.03)["test"]
    assert trained < 0.5 * float(np.var(yt))
