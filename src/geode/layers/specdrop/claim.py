"""Claim check of SpecDrop: fixed category routing specialises branches and wins when tags align with units.

Thresholds (fixed by the issue, before any run): ``reproduced`` if with one coarse tag per unit SpecDrop beats
dense, No-Routing and the learned router at matched parameters, with clear specialisation, AND with
multi-category units it matches No-Routing within 1 point; ``partial`` if the first part holds.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: "beats" is SpecDrop's test accuracy minus the best of the three named baselines, each at its
  own tuned configuration, with a one-sided 95% t bound over seeds above 0 (``bound95``, arithmetic mean of
  differences). "Clear specialisation" is SpecDrop's pruning specialisation index minus No-Routing's (the
  noise floor: the same analysis on interchangeable branches), bound95 >= 0.05 (5 points of accuracy lost on
  a category's own branch beyond the others). "Matches within 1 point" is ``|SpecDrop - No-Routing|`` on
  multi-category units <= 0.01 in 2 of 3 seeds (``"2 of 3"``; a noisy per-seed statistic).
- *validity floors*: every named method and the two multi-category methods reach >= 0.30 test accuracy in
  every seed (chance is 0.05), so the comparisons are between trained models.
- *negative controls*: SpecDrop trained and evaluated with randomly permuted tags (the ablation without the
  alignment) for "beats" and for "specialises"; for "matches" the single-tag gap between SpecDrop and
  No-Routing (a difference the threshold must be able to see).

The task (inferred; the paper's CPU-sized analogue does not exist). 4 superclasses x 5 fine classes in 20-D:
``x = mu_c + z`` with ``mu_c ~ N(0, sep^2 I)`` (the superclass is mostly readable from ``x``, as in images), and
the fine class is the argmax of superclass ``c``'s own random tanh teacher on ``z``. Single-tag regime: each
sample carries its superclass. Multi-category regime (our reading of "units spanning multiple categories"):
samples come in units of 4 of independent superclasses and every member carries the tag of the unit's first
member, in training and at test. Models: K = 4 branches of width 16 (two layers each) against a dense MLP of
width 64 (same parameters up to the output biases; the router adds ``20 x 4 + 4``). The strongest reasonable
baseline reported beside them is a dense MLP of width 64 that reads the tag as a one-hot input (the same
information SpecDrop gets). Every method is tuned with the same budget (:func:`geode.claims.tune`, 9
configurations and edge extension) on a validation split: learning rate x weight decay (dense, tagged
dense, No-Routing), learning rate x balancing coefficient (router), learning rate x ``p_i`` with ``p_a = 0.7``
(SpecDrop; the authors' CIFAR value), Adam, batch 128, the same number of steps; SpecDrop uses the authors'
cosine warm-up over the first 10% of steps.

Full mode (written for a GPU machine, not run here; it uses CUDA when present): Fashion-MNIST from the Debian
package, grouped into 4 superclasses (tops: T-shirt, pullover, coat, shirt; trousers and dresses; footwear:
sandal, sneaker, ankle boot; bags), 10-way fine labels from flat pixels, K = 4 branches of width 128 against a
dense MLP of width 512, 6000 Adam steps, 10k validation images held out of the training split. Added after
the revision-3 quick run; the quick and smoke metrics are bit-identical to that run's code (checked). A
30-step CPU try-out of it (width 16, one learning rate; not a result) gave SpecDrop 0.71 vs dense 0.64 and
a specialisation index of 0.77.

Revision 2 (before its run, thresholds unchanged): the second tuning axis of every method has three values
instead of two (weight decay 0 / 1e-4 / 1e-3; balancing 0.01 / 0.03 / 0.1; ``p_i`` 0.1 / 0.3 / 0.5 with
``p_a = 0.7``), so that a selection on an edge is extended (protocol section 1): in revision 1 SpecDrop's
``p_i`` sat on the top of its two-value grid in 5 of 6 selections. Every method gets 9 configurations.

Quick-mode finding of revision 3 (the current one; 3 seeds, 30-32 CPU s per seed, measured once):
**not reproduced**, per seed partial / reproduced / partial (unstable).

- *Single tag* (same selections as revision 2, the cap does not bind there): SpecDrop 0.811 / 0.786 / 0.769
  against dense 0.780 / 0.771 / 0.740, No-Routing 0.787 / 0.758 / 0.743 and the learned router
  0.779 / 0.785 / 0.749. Margin over the best named baseline +0.024 / +0.001 / +0.020 (mean +0.015): positive
  in every seed, but its one-sided 95% bound is -0.006, so ``beats_named`` fails; the router ties SpecDrop in
  seed 1. Specialisation gain over No-Routing 0.78 / 0.49 / 0.50 (bound95 0.31 >= 0.05): clear.
- *Multi-category units*: SpecDrop 0.772 / 0.752 / 0.721 against No-Routing 0.787 / 0.758 / 0.743, gaps
  1.5 / 0.6 / 2.2 points: within 1 point in 1 of 3 seeds, ``multi_matches`` fails; the tuner chose the cap
  p_i = 0.5 in every seed (as close to No-Routing as allowed).
- *Controls*: random tags lose 15.6 / 6.9 / 5.1 points to the best named baseline and show no specialisation
  (gain +0.03 / -0.04 / -0.04): ``beats_named`` and ``specialises`` discriminate; the single-tag gap to
  No-Routing (2.4 / 2.8 / 2.6 points) fails ``multi_matches`` as a control must.
- *Floors* met (every method >= 0.72). *Strongest baseline*, the dense MLP reading the one-hot tag
  (0.796 / 0.783 / 0.762): SpecDrop +0.015 / +0.003 / +0.007, i.e. most of SpecDrop's edge over dense comes
  from being given the tag, not from the routing.
- *Tuning*: lr 3e-3 for nearly every method; edges left after the one extension: the router's balance 0.33
  (seed 0), SpecDrop's p_i 0.033 (seed 0), No-Routing's wd 1e-3 (seed 2).

Quick-mode finding of revision 2 (3 seeds, 29-31 CPU s per seed): **not reproduced**, per seed
reproduced / reproduced / partial (unstable). "beats" failed its bound again (margins +0.024 / +0.001 / +0.020,
bound95 -0.006); specialisation gain 0.78 / 0.49 / 0.50; multi-category units "matched" (gaps 0.0005 / 0 /
0.011) **only because the tuner's edge extension walked p_i to its limit 0.7 = p_a in all three seeds, which
is No-Routing itself**, not SpecDrop. That set-up was malformed (the method under test could become the
baseline it is compared with); revision 3 caps ``p_i`` at 0.5 (``P_I_MAX``, below ``p_a``), thresholds and
grids otherwise unchanged. In the single-tag regime revision 2 selected p_i = 0.033 (extended past the lower
edge, still on it), 0.3, 0.3.

Quick-mode finding of revision 1 (3 seeds, measured once with these thresholds; 25-27 CPU s per seed):
**not reproduced** overall, ``partial`` in each seed. With one tag per unit SpecDrop reaches 0.812 / 0.786 /
0.769 test accuracy against the best named baseline 0.787 (No-Routing) / 0.785 (router) / 0.748 (router):
margins +0.025, +0.001, +0.022 (mean +0.016), whose one-sided 95% bound is -0.007, so "beats" fails the
bound95 rule although it holds in every seed (dense 0.780 / 0.764 / 0.740 is beaten by +2.9 points on
average, No-Routing by +3.0, the router by +1.5). Specialisation is clear: pruning index 0.68 / 0.52 / 0.53
against No-Routing's -0.01 / 0.03 / 0.04 (gain bound95 0.36 >= 0.05). On multi-category units SpecDrop does
*not* match No-Routing: 0.745 / 0.725 / 0.706 against 0.787 / 0.758 / 0.732, a loss of 2.7-4.2 points in every
seed (the tag agrees with the sample's superclass for 44% of samples). Controls: random tags lose 14 points to
the best named baseline and show no specialisation (gain -0.09), so "beats" and "specialises" discriminate;
"matches" is checked against the single-tag gap (0.025 / 0.028 / 0.037, fails as it must). Floors met
(every method >= 0.73). Strongest baseline, dense reading the one-hot tag: SpecDrop +0.015 / +0.003 / +0.007.
Tuning: lr 3e-3 selected for nearly every method (the middle of the grid); the second axes have two values
and sit on an edge by construction. SpecDrop picked ``p_i = 0.3`` (the grid's top, the authors' CIFAR value)
in 5 of 6 selections, including all three multi-unit ones: a wider ``p_i`` grid would move SpecDrop towards
No-Routing (``p_i = p_a`` *is* No-Routing), which this revision did not try.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read not reproduced on the same runs): unresolved: beats_named; not tuned by the protocol:
specdrop, none, learned, (multi) none. No idea ablation or learned-arm reference is declared yet (protocol v3; the
rework issues 45-50).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune

M, FINE, K, D, HID = 4, 5, 4, 20, 16
P_ACTIVE = 0.7
UNIT = 4  # samples per multi-category unit
# second tuning axis of each method, three values each (revision 2; revision 1 had two, always on an edge)
WD = [0.0, 1e-4, 1e-3]
BALANCE = [0.01, 0.03, 0.1]
P_INACTIVE = [0.1, 0.3, 0.5]
P_I_MAX = 0.5  # revision 3: p_i = p_a (0.7) is No-Routing itself, so the tuner may not reach it

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(n_train=400, n_val=200, n_test=400, steps=60, sep=1.0, lr=[3e-3, 1e-2], extend=0),
    "quick": dict(n_train=2000, n_val=1000, n_test=4000, steps=700, sep=1.0, lr=[1e-3, 3e-3, 1e-2], extend=1),
    # full: Fashion-MNIST grouped into 4 superclasses (tops, trousers+dresses, footwear, bags), K = 4 branches
    # of width 128 vs a dense MLP of width 512; written for a GPU machine, not run on CPU
    "full": dict(fashion=True, n_val=10000, hid=128, steps=6000, lr=[3e-4, 1e-3, 3e-3], extend=2),
}

_NAMES = {
    "dense": "Dense (width 64)",
    "none": "No-Routing (K=4)",
    "learned": "learned softmax router + load balancing",
    "specdrop": "SpecDrop",
    "tagged": "dense + one-hot tag (strongest)",
}


def make_task(n: int, seed: int, sep: float, teacher_seed: int) -> dict[str, Any]:
    """Superclass-structured data: ``x``, fine label ``y``, true superclass ``c`` and the multi-unit tag ``u``."""
    import torch

    g = np.random.default_rng(teacher_seed)
    mu = g.normal(0.0, sep, (M, D))
    w1 = g.normal(0.0, 1.0 / np.sqrt(D), (M, D, 16))
    w2 = g.normal(0.0, 1.0 / 4.0, (M, 16, FINE))
    r = np.random.default_rng(seed)
    c = r.integers(0, M, n)
    z = r.normal(0.0, 1.0, (n, D))
    logits = np.einsum("nh,nhf->nf", np.tanh(np.einsum("nd,ndh->nh", z, w1[c])), w2[c])
    y = c * FINE + logits.argmax(1)
    u = np.repeat(c[::UNIT], UNIT)[:n]  # every member carries its unit's first member's tag
    f32 = torch.float32
    return dict(
        x=torch.tensor(mu[c] + z, dtype=f32),
        y=torch.tensor(y),
        c=torch.tensor(c),
        u=torch.tensor(u),
    )


# Fashion-MNIST superclasses (full mode): tops, trousers and dresses, footwear, bags
FASHION_SUPER = np.array([0, 1, 0, 1, 0, 2, 0, 2, 3, 2])


def make_fashion(seed: int, n_val: int) -> dict[str, Any]:
    """Fashion-MNIST (Debian package) as flat [0, 1] pixels, superclass tags and 4-sample unit tags."""
    import torch

    from geode.data import load_fashion_mnist

    out: dict[str, Any] = {}
    r = np.random.default_rng(seed)
    for split in ("train", "test"):
        x, y = load_fashion_mnist(split)
        x = x.reshape(len(x), -1).astype(np.float32) / 255.0
        order = r.permutation(len(x))
        x, y = x[order], y[order]
        c = FASHION_SUPER[y]
        u = np.repeat(c[::UNIT], UNIT)[: len(c)]
        d = dict(x=torch.tensor(x), y=torch.tensor(y), c=torch.tensor(c), u=torch.tensor(u))
        if split == "train":
            out["val"] = {k: v[:n_val] for k, v in d.items()}
            out["train"] = {k: v[n_val:] for k, v in d.items()}
        else:
            out["test"] = d
    return out


def _build(
    method: str, params: dict[str, Any], seed: int, n_in: int = D, n_out: int = M * FINE, hid: int = HID
) -> Any:
    import torch

    from geode.layers.specdrop.module import SpecDropNet
    from geode.models import make_mlp

    torch.manual_seed(seed)
    if method == "dense":
        return make_mlp(n_in, [K * hid], n_out, seed=seed)
    if method == "tagged":
        return make_mlp(n_in + M, [K * hid], n_out, seed=seed)
    if method == "specdrop":
        return SpecDropNet(
            n_in, hid, n_out, K, M, "specdrop", P_ACTIVE, params["p_inactive"], warmup_steps=params["warmup"]
        )
    return SpecDropNet(n_in, hid, n_out, K, M, method)


def _forward(method: str, model: Any, x: Any, tag: Any) -> Any:
    import torch

    if method == "dense":
        return model(x)
    if method == "tagged":
        return model(torch.cat([x, torch.nn.functional.one_hot(tag, M).float()], 1))
    return model(x, tag)


def train_eval(method: str, params: dict[str, Any], data: dict[str, Any], tag_key: str, steps: int, seed: int) -> Any:
    """Train one method with Adam; return the model and its validation/test accuracy."""
    import torch

    p = dict(params)
    if method == "specdrop":
        p["warmup"] = steps // 10
    tr = data["train"]
    model = _build(method, p, seed, tr["x"].shape[1], data["n_out"], data["hid"]).to(data.get("device", "cpu"))
    opt = torch.optim.Adam(model.parameters(), lr=p["lr"], weight_decay=p.get("wd", 0.0))
    gen = torch.Generator().manual_seed(seed + 7)
    n = tr["x"].shape[0]
    for _ in range(steps):
        idx = torch.randint(0, n, (128,), generator=gen).to(tr["x"].device)
        out = _forward(method, model, tr["x"][idx], tr[tag_key][idx])
        loss = torch.nn.functional.cross_entropy(out, tr["y"][idx])
        if method == "learned":
            loss = loss + p["balance"] * model.aux_loss()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if method == "specdrop":
            model.merge.step()
    model.eval()
    with torch.no_grad():
        acc = {}
        for s in ("val", "test"):
            pred = _forward(method, model, data[s]["x"], data[s][tag_key]).argmax(1)
            acc[s] = float((pred == data[s]["y"]).float().mean())
    return model, acc


@register(
    "specdrop",
    claim=(
        "With one coarse category tag per unit, fixed parameter-free routing (weight p_a on the tag's branch, "
        "leakage p_i elsewhere, fixed denominator S = p_a + (K-1) p_i) specialises branches and beats dense, "
        "No-Routing and a learned router at matched parameters; with multi-category units it matches No-Routing."
    ),
    paper_figure=(
        "CIFAR-100 ResNet-110 79.23% (+4.75 over dense); ImageNet-1K ViT-S/16 79.89% (+6.53 over No-Routing with "
        "a shared expert); SlimPajama and SuperNI: ties No-Routing and HydraLoRA"
    ),
    baselines=("dense MLP", "No-Routing", "learned softmax router + load balancing", "dense + one-hot tag"),
    thresholds=(
        Threshold(
            "beats_named",
            "specdrop_minus_best_named",
            ">",
            0.0,
            "single tag: SpecDrop's test accuracy above the best of dense, No-Routing, learned router (bound95)",
            agg="bound95",
            control="random_tags_minus_best_named",
            arms=("specdrop", "dense", "none", "learned"),
        ),
        Threshold(
            "specialises",
            "specialization_gain",
            ">=",
            0.05,
            "pruning specialisation of SpecDrop minus No-Routing's (noise floor) >= 0.05 (bound95)",
            agg="bound95",
            control="random_tags_specialization_gain",
            arms=("specdrop", "none"),
        ),
        Threshold(
            "multi_matches",
            "multi_abs_gap",
            "<=",
            0.01,
            "multi-category units: |SpecDrop - No-Routing| test accuracy <= 1 point (2 of 3 seeds)",
            agg="2 of 3",
            control="single_abs_gap",
            arms=("(multi) specdrop", "(multi) none"),
        ),
    ),
    floors=(
        Threshold(
            "named_learn",
            "min_named_acc",
            ">=",
            0.30,
            "floor: every single-tag method reaches >= 0.30 test accuracy (chance 0.05), every seed",
            agg="all",
        ),
        Threshold(
            "multi_learn",
            "multi_min_acc",
            ">=",
            0.30,
            "floor: SpecDrop and No-Routing on multi-category units reach >= 0.30, every seed",
            agg="all",
        ),
    ),
    reproduced="beats_named and specialises and multi_matches",
    partial="beats_named and specialises",
    method=("specdrop", "(multi) specdrop"),
    tuned=("dense", "none", "learned", "specdrop", "(multi) none", "(multi) specdrop"),
    key_metric="specdrop_minus_best_named",
    revision=3,
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.layers.specdrop.module import branch_pruning_drops, specialization_index

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    teacher = 1000 + seed
    if cfg.get("fashion"):
        data: dict[str, Any] = make_fashion(seed, cfg["n_val"])
        data.update(n_out=10, hid=cfg["hid"])
    else:
        data = {
            s: make_task(cfg[f"n_{s}"], seed * 3 + i, cfg["sep"], teacher)
            for i, s in enumerate(("train", "val", "test"))
        }
        data.update(n_out=M * FINE, hid=HID)
    # full mode uses a GPU where there is one; quick and smoke stay on the CPU (bit-reproducible)
    dev = torch.device(device_for(mode))
    for s in ("train", "val", "test"):
        data[s] = {k: v.to(dev) for k, v in data[s].items()}
    data["device"] = dev
    steps, lr = cfg["steps"], cfg["lr"]
    grids = {
        "dense": dict(lr=lr, wd=WD),
        "tagged": dict(lr=lr, wd=WD),
        "none": dict(lr=lr, wd=WD),
        "learned": dict(lr=lr, balance=BALANCE),
        "specdrop": dict(lr=lr, p_inactive=P_INACTIVE),
    }
    # wd = 0 and balance = 0 are the ends of their ranges (limits, not edges); p_i stays at most P_I_MAX < p_a
    limits = {"p_inactive": (0.0, P_I_MAX), "wd": (0.0, 1.0), "balance": (0.0, 10.0)}

    def fit_with(tag_key: str) -> Any:
        def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
            model, acc = train_eval(method, params, data, tag_key, steps, seed)
            return acc["val"], (model, acc)

        return fit

    res = tune(fit_with("c"), grids, extend=cfg["extend"], limits=limits)
    acc = {m: res.payload(m)[1]["test"] for m in grids}
    # control: SpecDrop with tags unrelated to the category (a fixed random relabelling per sample)
    perm = torch.Generator().manual_seed(seed + 99)
    shuffled = dict(data)
    for s in ("train", "val", "test"):
        d = data[s]
        shuffled[s] = dict(d, r=d["c"][torch.randperm(len(d["c"]), generator=perm)])
    rnd_model, rnd_acc = train_eval("specdrop", res.params("specdrop"), shuffled, "r", steps, seed)
    # pruning analysis on the test split, grouped by true superclass
    pi = [c % K for c in range(M)]
    te = data["test"]
    spec = {}
    for m in ("specdrop", "none"):
        d = branch_pruning_drops(res.payload(m)[0], te["x"], te["y"], te["c"], M)
        spec[m] = specialization_index(d, pi)
    d_rnd = branch_pruning_drops(rnd_model, te["x"], te["y"], te["c"], M, tags=shuffled["test"]["r"])
    spec["random"] = specialization_index(d_rnd, pi)
    d_spec = branch_pruning_drops(res.payload("specdrop")[0], te["x"], te["y"], te["c"], M)
    # multi-category units: the same budget for SpecDrop and No-Routing
    res_u = tune(fit_with("u"), {m: grids[m] for m in ("none", "specdrop")}, extend=cfg["extend"], limits=limits)
    acc_u = {m: res_u.payload(m)[1]["test"] for m in ("none", "specdrop")}
    best_named = max(acc["dense"], acc["none"], acc["learned"])
    metrics = {
        **{f"{m}_acc": acc[m] for m in grids},
        "random_tags_acc": rnd_acc["test"],
        "best_named_acc": best_named,
        "specdrop_minus_best_named": acc["specdrop"] - best_named,
        "random_tags_minus_best_named": rnd_acc["test"] - best_named,
        "specdrop_minus_dense": acc["specdrop"] - acc["dense"],
        "specdrop_minus_none": acc["specdrop"] - acc["none"],
        "specdrop_minus_learned": acc["specdrop"] - acc["learned"],
        "specdrop_minus_tagged_dense": acc["specdrop"] - acc["tagged"],
        "specdrop_specialization": spec["specdrop"],
        "none_specialization": spec["none"],
        "random_tags_specialization": spec["random"],
        "specialization_gain": spec["specdrop"] - spec["none"],
        "random_tags_specialization_gain": spec["random"] - spec["none"],
        "multi_specdrop_acc": acc_u["specdrop"],
        "multi_none_acc": acc_u["none"],
        "multi_gap": acc_u["specdrop"] - acc_u["none"],
        "multi_abs_gap": abs(acc_u["specdrop"] - acc_u["none"]),
        "single_abs_gap": abs(acc["specdrop"] - acc["none"]),
        "min_named_acc": min(acc["dense"], acc["none"], acc["learned"], acc["specdrop"]),
        "multi_min_acc": min(acc_u.values()),
        "tag_agreement_multi": float((te["u"] == te["c"]).float().mean()),
    }
    params = {m: sum(p.numel() for p in res.payload(m)[0].parameters()) for m in grids}
    table = [{"regime": "single tag", "method": _NAMES[m], "test acc": acc[m], "params": params[m]} for m in grids]
    table.append({"regime": "single tag", "method": "SpecDrop, random tags (control)", "test acc": rnd_acc["test"]})
    table += [
        {"regime": "multi-category units", "method": _NAMES[m], "test acc": acc_u[m], "params": params[m]}
        for m in ("none", "specdrop")
    ]
    tuned = res.table() + [dict(r, method=f"(multi) {r['method']}") for r in res_u.table()]
    drops = "; ".join(f"branch {k}: " + ", ".join(f"{float(d_spec[k, c]):+.2f}" for c in range(M)) for k in range(K))
    summary = (
        f"SpecDrop {acc['specdrop']:.3f} vs dense {acc['dense']:.3f}, No-Routing {acc['none']:.3f}, router "
        f"{acc['learned']:.3f} (tagged dense {acc['tagged']:.3f}); specialisation {spec['specdrop']:.2f} vs "
        f"No-Routing {spec['none']:.2f}; multi units: SpecDrop {acc_u['specdrop']:.3f} vs No-Routing "
        f"{acc_u['none']:.3f}"
    )
    notes = [
        *res.notes(),
        *[f"(multi) {n}" for n in res_u.notes()],
        f"Parameters: {', '.join(f'{_NAMES[m]} {params[m]}' for m in grids)}.",
        f"SpecDrop pruning drops (rows branch, columns superclass; own branch = superclass mod 4): {drops}.",
        f"Random-tag control: accuracy {rnd_acc['test']:.3f}, specialisation {spec['random']:.2f}.",
        f"Multi-category units: the tag equals the sample's superclass for {metrics['tag_agreement_multi']:.2f} "
        f"of test samples (units of {UNIT}).",
        "Strongest baseline (dense + one-hot tag): SpecDrop minus it = "
        f"{metrics['specdrop_minus_tagged_dense']:+.3f}.",
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=tuned)
