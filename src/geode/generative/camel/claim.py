"""Claim check of camel: creator-appraiser meta-learning leaves the vanilla sampling basin yet stays recognisable.

Thresholds (fixed by the issue, before any run): ``reproduced`` if CAMEL samples' nearest-neighbour distance to a
vanilla pool of 10^4 samples stays above the pool's own NN distance, with observer probability of the prompt
class >= 0.8, and novelty-only fails the recognisability bar; ``partial`` if the distance condition holds.

Set-up (per seed; the seed draws the splits, initialisations and noises; prompt class = seed mod 10):
``sklearn.datasets.load_digits`` (8x8, MNIST is not offline) scaled to [-1, 1], 1400 train / 397 test. Creator: a
:class:`~geode.generative.camel.ConditionalDDPM` (MLP 256, class embedding 16, T = 100, 3000 Adam steps), frozen;
samples by a 10-step DDIM. Appraiser: :class:`~geode.generative.camel.Autoencoder` (64-64-8-64-64) pre-trained on
the train split; inner loop K = 3 SGD steps, eta = 0.5. Observer: ``LogisticRegression`` on the train split (its
linear softmax is also the differentiable recognisability term). CAMEL and novelty-only: 200 outer Adam steps
(lr 0.05, batch 32) on the embedding offset.

Metrics: NN distance ratio = mean NN distance of 256 method samples to a pool of 10^4 vanilla samples / mean NN
distance of 256 fresh vanilla samples to the same pool (the pool's own NN distance); also at pool sizes 10^2 and
10^3. p_class = mean observer probability of the prompt class on the 256 samples.

Tuning (:func:`geode.claims.tune`, same budget): CAMEL and novelty-only over the recognisability weight
lambda in {0.1, 1.0}; validation score = NN ratio against a separate validation pool of 1000 vanilla samples
minus 10 * max(0, 0.8 - p_class) (recognisability shortfall penalised identically for both).

Added before the first run (the issue names no floors or controls; the protocol needs them):

- *threshold forms*: every seed (``all``): ratio > 1; p_class(CAMEL) >= 0.8; p_class(novelty-only) < 0.8.
- *negative controls*: for the distance threshold, a random offset of the same norm as CAMEL's (is it the
  optimisation or merely moving the embedding?); for recognisability, CAMEL with lambda = 0 (reward only); for
  "novelty-only fails", CAMEL's own p_class.
- *validity floors*: observer test accuracy >= 0.9; vanilla samples of the prompt class are recognisable
  (p_class(vanilla) >= 0.8), i.e. the creator is a working class-conditional model.

Verdict (quick mode, 3 seeds, set-up unchanged after the first run): ``inconclusive``; the creator floor fails
on seeds 1 and 2 (vanilla p_class 0.52 for class 1, 0.73 for class 2; 0.86 for class 0). Seed 0 alone is
``partial``. Numbers in the package's docstring. The only change after the first run is a ``detach`` before a
``float`` in the history log (a warning, no effect on results).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read inconclusive on the same runs): floor failed: creator_ok; not tuned by the protocol: CAMEL,
novelty-only. No idea ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(ddpm_steps=100, ae_steps=50, outer=5, pool=500, n=64, val_pool=200),
    "quick": dict(ddpm_steps=3000, ae_steps=1500, outer=200, pool=10000, n=256, val_pool=1000),
    "full": dict(ddpm_steps=20000, ae_steps=5000, outer=1000, pool=100000, n=1024, val_pool=5000),
}
GRIDS = {"CAMEL": {"recog": [0.1, 1.0]}, "novelty-only": {"recog": [0.1, 1.0]}}


def _nn(a: np.ndarray, pool: np.ndarray) -> float:
    import torch

    d = torch.cdist(torch.as_tensor(a, dtype=torch.float32), torch.as_tensor(pool, dtype=torch.float32))
    return float(d.min(1).values.mean())


@register(
    "camel",
    claim=(
        "A frozen diffusion creator steered to maximise an adaptive appraiser's improvement after a brief inner "
        "adaptation produces outputs outside the basin of vanilla sampling at any sample count while remaining "
        "recognisable as the prompt's class to an off-the-shelf observer."
    ),
    paper_figure="MNIST autoencoder appraiser and CLIP-LoRA; no numbers public (digits stand in for MNIST)",
    baselines=("vanilla sampling (10^4 pool)", "novelty-only", "random equal-norm offset"),
    thresholds=(
        Threshold(
            "outside_basin",
            "nn_ratio_1e4",
            ">",
            1.0,
            "NN distance to a 10^4 vanilla pool / the pool's own NN distance > 1, every seed",
            agg="all",
            control="control_random_nn_ratio_1e4",
            arms=("CAMEL", "vanilla sampling"),
        ),
        Threshold(
            "recognisable",
            "p_class",
            ">=",
            0.8,
            "observer probability of the prompt class >= 0.8, every seed",
            agg="all",
            control="control_no_recog_p_class",
            arms=("CAMEL",),
        ),
        Threshold(
            "novelty_fails",
            "novelty_p_class",
            "<",
            0.8,
            "novelty-only observer probability < 0.8, every seed",
            agg="all",
            control="p_class",
            arms=("novelty-only",),
        ),
    ),
    floors=(
        Threshold("observer_ok", "observer_acc", ">=", 0.9, "floor: observer test accuracy >= 0.9", agg="all"),
        Threshold(
            "creator_ok", "vanilla_p_class", ">=", 0.8, "floor: vanilla samples recognisable (>= 0.8)", agg="all"
        ),
    ),
    reproduced="outside_basin and recognisable and novelty_fails",
    partial="outside_basin",
    method="CAMEL",
    tuned=("CAMEL", "novelty-only"),
    untuned={
        "vanilla sampling": "no parameter (the frozen creator's plain DDIM sampling)",
        "random equal-norm offset": "no parameter (a random direction at CAMEL's offset norm)",
    },
    key_metric="nn_ratio_1e4",
)
def run(mode: str, seed: int) -> Outcome:
    import torch
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    from geode.generative.camel import CAMEL, Autoencoder, ConditionalDDPM, fit_autoencoder

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    X, y = load_digits(return_X_y=True)
    X = (X / 8.0 - 1.0).astype(np.float32)
    perm = rng.permutation(len(X))
    tr, te = perm[:1400], perm[1400:]
    c = seed % 10
    obs = LogisticRegression(max_iter=3000).fit(X[tr], y[tr])
    observer = (obs.coef_, obs.intercept_)
    creator = ConditionalDDPM(64, 10, T=100).fit(X[tr], y[tr], steps=cfg["ddpm_steps"], seed=seed)
    ae = fit_autoencoder(Autoencoder(64), X[tr], steps=cfg["ae_steps"], seed=seed)
    for p in ae.parameters():
        p.requires_grad_(False)

    def gen(off: torch.Tensor | None, n: int, s: int) -> np.ndarray:
        with torch.no_grad():
            z = torch.randn(n, 64, generator=torch.Generator().manual_seed(s))
            return creator.sample(c, z, off).numpy()

    def pc(x: np.ndarray) -> float:
        return float(obs.predict_proba(x)[:, list(obs.classes_).index(c)].mean())

    pool = gen(None, cfg["pool"], 10_000 + seed)
    val_pool = gen(None, cfg["val_pool"], 20_000 + seed)
    val_ref = _nn(gen(None, cfg["n"], 30_000 + seed), val_pool)

    def fit(method: str, p: dict[str, Any]) -> tuple[float, Any]:
        obj = "camel" if method == "CAMEL" else "novelty"
        m = CAMEL(creator, ae, observer, inner_steps=3, inner_lr=0.5, recog=p["recog"], objective=obj)
        m.optimize(c, steps=cfg["outer"], batch=32, lr=0.05, seed=seed)
        xv = gen(m.delta, cfg["n"], 40_000 + seed)
        return _nn(xv, val_pool) / val_ref - 10 * max(0.0, 0.8 - pc(xv)), m.delta

    res = tune(fit, GRIDS, maximize=True)
    d_camel, d_nov = res.payload("CAMEL"), res.payload("novelty-only")
    ctrl = CAMEL(creator, ae, None, inner_steps=3, inner_lr=0.5, recog=0.0).optimize(
        c, steps=cfg["outer"], batch=32, lr=0.05, seed=seed
    )
    g = torch.Generator().manual_seed(seed + 7)
    rnd = torch.randn(d_camel.shape, generator=g)
    rnd = rnd / rnd.norm() * d_camel.norm()
    offsets = {
        "vanilla (fresh)": None,
        "CAMEL": d_camel,
        "novelty-only": d_nov,
        "control: random offset, equal norm": rnd,
        "control: CAMEL, lambda = 0": ctrl.delta,
    }
    samples = {k: gen(v, cfg["n"], 50_000 + seed) for k, v in offsets.items()}
    ref = {m: _nn(samples["vanilla (fresh)"], pool[:m]) for m in (100, 1000, cfg["pool"])}
    table, ratio, p_cls = [], {}, {}
    for k, x in samples.items():
        r = {m: _nn(x, pool[:m]) / ref[m] for m in ref}
        ratio[k], p_cls[k] = r[cfg["pool"]], pc(x)
        off = offsets[k]
        table.append(
            {
                "method": k,
                **{f"NN ratio, pool {m}": v for m, v in r.items()},
                "p(prompt class)": p_cls[k],
                "|offset|": 0.0 if off is None else float(off.norm()),
            }
        )
    metrics = {
        "nn_ratio_1e4": ratio["CAMEL"],
        "control_random_nn_ratio_1e4": ratio["control: random offset, equal norm"],
        "p_class": p_cls["CAMEL"],
        "control_no_recog_p_class": p_cls["control: CAMEL, lambda = 0"],
        "novelty_p_class": p_cls["novelty-only"],
        "novelty_nn_ratio_1e4": ratio["novelty-only"],
        "no_recog_nn_ratio_1e4": ratio["control: CAMEL, lambda = 0"],
        "random_p_class": p_cls["control: random offset, equal norm"],
        "observer_acc": float(obs.score(X[te], y[te])),
        "vanilla_p_class": p_cls["vanilla (fresh)"],
        "vanilla_self_nn": ref[cfg["pool"]],
        "camel_offset_norm": float(d_camel.norm()),
        "prompt_class": float(c),
    }
    summary = (
        f"class {c}: NN ratio to the {cfg['pool']} pool CAMEL {ratio['CAMEL']:.2f} (random equal-norm "
        f"{metrics['control_random_nn_ratio_1e4']:.2f}, novelty-only {ratio['novelty-only']:.2f}); p(class) CAMEL "
        f"{p_cls['CAMEL']:.2f}, novelty-only {p_cls['novelty-only']:.2f}, lambda=0 "
        f"{metrics['control_no_recog_p_class']:.2f}, vanilla {p_cls['vanilla (fresh)']:.2f}"
    )
    notes = [*res.notes(), f"Wall time of this seed: {time.perf_counter() - t0:.0f} s."]
    return Outcome(
        metrics={k: float(v) for k, v in metrics.items()}, table=table, summary=summary, notes=notes, tuned=res.table()
    )
