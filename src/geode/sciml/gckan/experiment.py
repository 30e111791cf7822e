"""The GC-KAN benchmark: Feynman equations under data scarcity, label noise and extrapolation.

For every equation, training size ``n``, seed and noise level the study trains three models on the same
points and compares their test NRMSE (RMSE over the standard deviation of the clean test targets):

- GC-KAN ``[d, 4, 1]`` with ``K`` duality-map atoms per edge;
- a B-spline KAN ``[d, 4, 1]`` whose grid size :math:`G` is chosen among ``grids`` by 2-fold
  cross-validation on the training set (then re-trained on all of it);
- a SiLU MLP ``[d, h, h, 1]`` with ``h`` chosen to match GC-KAN's parameter count.

Inputs are mapped affinely from the AI-Feynman ranges to :math:`[-1, 1]`; labels are standardised with the
training mean and standard deviation. Noise is Gaussian with standard deviation ``noise`` times the standard
deviation of the clean training labels, added to the labels only; clean and noisy fits share the same
inputs, so the degradation factor :math:`\\mathrm{NRMSE}_{noisy} / \\mathrm{NRMSE}_{clean}` isolates the noise.
The extrapolation set is drawn uniformly from the ranges widened by ``extrap_fraction`` of their width on
each side, keeping only points outside the training box. All fits of one input dimension, training size
and model are trained together as one stacked ensemble (:func:`geode.sciml.ensemble.fit_ensemble`), which
is exactly equivalent to training them one by one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from geode.core.random import as_generator
from geode.core.validation import check_int, check_positive, check_real
from geode.data import feynman
from geode.sciml.ensemble import fit_ensemble
from geode.sciml.gckan.layers import GCKAN
from geode.sciml.kan import KAN
from geode.sciml.nets import MLP

__all__ = [
    "MODELS",
    "PAPER_EDGE",
    "QUICK_EQUATIONS",
    "FeynmanStudy",
    "cv_score",
    "matched_mlp_width",
    "param_count",
    "run_feynman_study",
    "select",
    "summarize_study",
]

QUICK_EQUATIONS: tuple[str, ...] = ("I.6.20a", "I.6.20", "I.12.1", "I.10.7", "I.27.6", "III.17.37", "I.8.14", "I.13.4")
"""Eight equations with 1-4 variables: a Gaussian, a scaled Gaussian, a product, relativistic mass, a thin
lens, a cosine modulation, a Euclidean distance and a kinetic energy."""


def param_count(model: torch.nn.Module) -> int:
    """Number of trainable scalars of one member (a stacked ensemble's count divided by its size)."""
    total = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return total // (getattr(model, "ensemble", None) or 1)


def matched_mlp_width(d: int, target: int) -> int:
    """Hidden width ``h`` of the MLP ``[d, h, h, 1]`` whose parameter count is closest to ``target``.

    The count is :math:`(d+1)h + (h+1)h + h + 1`.
    """
    d = check_int("d", d, low=1)
    target = check_int("target", target, low=1)
    best, best_gap = 1, math.inf
    for h in range(1, 512):
        gap = abs((d + 1) * h + (h + 1) * h + h + 1 - target)
        if gap < best_gap:
            best, best_gap = h, gap
    return best


@dataclass
class FeynmanStudy:
    """Everything the study measured.

    Attributes
    ----------
    fits : list of dict
        One per (model, size, lr, l1, member): ``cv_mse`` (2-fold CV on the training set), ``train_mse`` and
        the full-data fit's ``nrmse_test`` / ``nrmse_extrap`` (GC-KAN also ``replicate_*``: a second
        initialisation). A member is (equation, n_train, noise, seed).
    linear : list of dict
        The least-squares control per member.
    exponents : list of dict
        Per GC-KAN full-data fit and layer: the learned ``p`` of every edge (a list).
    rows : list of dict
        Filled by the caller with :func:`select`: one per (equation, n_train, noise, seed, model) at the
        selected configuration.
    """

    fits: list[dict[str, Any]] = field(default_factory=list)
    linear: list[dict[str, Any]] = field(default_factory=list)
    exponents: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)


def _scale(X: np.ndarray, ranges: Sequence[tuple[float, float]]) -> np.ndarray:
    lo = np.array([r[0] for r in ranges])
    hi = np.array([r[1] for r in ranges])
    return 2.0 * (X - lo) / (hi - lo) - 1.0


def _extrapolation_set(eq: feynman.FeynmanEquation, n: int, fraction: float, rng: np.random.Generator):
    """``n`` points of the widened box outside the training box, with finite targets."""
    wide = eq.widened_ranges(fraction)
    lo = np.array([r[0] for r in eq.ranges])
    hi = np.array([r[1] for r in eq.ranges])
    xs, ys, have = [], [], 0
    for _ in range(100):
        X, y = eq.sample(max(4 * n, 256), rng, ranges=wide)
        keep = ~np.all((X >= lo) & (X <= hi), axis=1) & np.isfinite(y)
        xs.append(X[keep])
        ys.append(y[keep])
        have += int(keep.sum())
        if have >= n:
            break
    X, y = np.concatenate(xs)[:n], np.concatenate(ys)[:n]
    if len(y) < n:  # pragma: no cover - every table equation yields enough points
        raise RuntimeError(f"could not draw {n} finite extrapolation points for {eq.id}")
    return X, y


@dataclass
class _Data:
    eq: feynman.FeynmanEquation
    seed_index: int
    n_train: int
    noise: float
    x: np.ndarray  # scaled training inputs (n, d)
    y: np.ndarray  # standardised (noisy) training labels (n,)
    y_mean: float
    y_std: float
    folds: np.ndarray  # fold id 0/1 per training row
    x_test: np.ndarray
    y_test: np.ndarray
    x_ext: np.ndarray
    y_ext: np.ndarray


def _make_data(
    eq_ids: Sequence[str],
    n_trains: Sequence[int],
    noises: Sequence[float],
    n_seeds: int,
    n_test: int,
    extrap_fraction: float,
    seed: int,
) -> list[_Data]:
    out = []
    for e_idx, eq_id in enumerate(eq_ids):
        eq = feynman.get(eq_id)
        for s in range(n_seeds):
            rng = as_generator(np.random.SeedSequence([seed, e_idx, s]).generate_state(1)[0])
            X_test, y_test = eq.sample(n_test, rng)
            X_ext, y_ext = _extrapolation_set(eq, n_test, extrap_fraction, rng)
            for n in n_trains:
                X, y_clean = eq.sample(n, rng)
                eps = rng.standard_normal(n)
                folds = rng.permutation(np.arange(n) % 2)
                for noise in noises:
                    y = y_clean + noise * float(np.std(y_clean)) * eps
                    mu, sd = float(np.mean(y)), float(np.std(y)) or 1.0
                    out.append(
                        _Data(
                            eq,
                            s,
                            n,
                            float(noise),
                            _scale(X, eq.ranges),
                            (y - mu) / sd,
                            mu,
                            sd,
                            folds,
                            _scale(X_test, eq.ranges),
                            y_test,
                            _scale(X_ext, eq.ranges),
                            y_ext,
                        )
                    )
    return out


def _tensor(a: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float32)


def _nrmse(pred: np.ndarray, target: np.ndarray) -> float:
    return float(np.sqrt(np.mean((pred - target) ** 2)) / max(float(np.std(target)), 1e-12))


MODELS: tuple[str, ...] = ("GC-KAN", "spline KAN (CV)", "MLP")
"""The tuned models of the study: the paper's single-atom GC-KAN, the cross-validated spline KAN and the
parameter-matched SiLU MLP (plus the untuned least-squares line and a second GC-KAN initialisation, the
negative controls)."""

NOISE_FLOOR = 0.01
"""NRMSE added to both sides of the noise-added ratio (negative differences count as 0): differences below
1 % of the label spread are not evidence of robustness, and the ratio stays defined when the reference
barely reacts to noise."""

PAPER_EDGE: dict[str, Any] = dict(atoms=1, exponent="exp", p_init=2.5, delta=1e-8, tanh=True, bias=True)
"""The paper's edge :math:`a J_p(w x + b) + g \\tanh(x) + d` with :math:`p = 1 + e^{\\theta}` from 2.5."""


def _gc_width_params(d: int, hidden: int) -> int:
    return param_count(GCKAN([d, hidden, 1], **PAPER_EDGE))


def run_feynman_study(
    equations: Sequence[str] = QUICK_EQUATIONS,
    *,
    n_trains: Sequence[int] = (32, 128),
    noises: Sequence[float] = (0.0, 0.1),
    n_seeds: int = 1,
    steps: int = 300,
    lrs: Sequence[float] = (3e-3, 1e-2, 3e-2),
    l1s: Sequence[float] = (0.0, 1e-3),
    lr_final_factor: float = 1e-2,
    clip: float | None = 10.0,
    hidden: int = 4,
    grids: Sequence[int] = (1, 2, 3, 5, 10),
    n_test: int = 2000,
    extrap_fraction: float = 0.1,
    seed: int = 0,
) -> FeynmanStudy:
    """Train GC-KAN, the spline KAN and the matched MLP over one tuning grid each, scored by 2-fold CV.

    Every model is trained for every learning rate in ``lrs`` and L1 weight in ``l1s`` (the same grid for
    all), on fold 0, on fold 1 and on all training points; the spline KAN additionally for every grid
    size in ``grids``, chosen per setting by the same 2-fold CV (the paper's cross-validated baseline).
    Every fit of one (input dimension, training size, model, grid size) is one stacked ensemble with one
    learning rate and L1 weight per member (:func:`geode.sciml.ensemble.fit_ensemble`). The selection
    itself (:func:`select`) happens afterwards, on the stored CV errors, never on the test sets.

    Parameters
    ----------
    equations : sequence of str
        Feynman ids (see :mod:`geode.data.feynman`).
    n_trains : sequence of int
        Training-set sizes (each >= 4, so that both CV folds have >= 2 points).
    noises : sequence of float
        Label-noise levels as fractions of the clean label standard deviation (include 0).
    n_seeds : int
        Independent draws of data and initialisations per setting.
    steps : int
        Adam steps, full batch (the paper: 5000).
    lrs, l1s : sequence of float
        The tuning grid of every model: initial learning rates (cosine-annealed to ``lr * lr_final_factor``)
        and L1 weights (pykan's mean-absolute-activation term for KANs, absolute weights for the MLP).
    lr_final_factor : float
        Final over initial learning rate of the cosine schedule.
    clip : float or None
        Per-member gradient-norm clipping (the paper: 10), the same for every model.
    hidden : int
        Hidden width of both KANs (GC-KAN ``[d, hidden, 1]`` with the paper's single-atom edge); the MLP
        ``[d, h, h, 1]`` matches GC-KAN's parameter count.
    grids : sequence of int
        Candidate grid sizes of the cubic spline KAN (pykan-style grid updates during the first 50 steps).
    n_test : int
        Size of the clean test set and of the extrapolation set.
    extrap_fraction : float
        Widening of the ranges for the extrapolation set.
    seed : int
        Master seed.

    Returns
    -------
    FeynmanStudy
        ``fits`` holds, per (model, size, lr, l1) and member, the CV MSE and the full-data test and
        extrapolation NRMSE; :func:`select` turns it into ``rows``.
    """
    eq_ids = [feynman.get(e).id for e in equations]
    n_trains = [check_int("n_trains", n, low=4) for n in n_trains]
    noises = [check_real("noises", v, low=0.0) for v in noises]
    n_seeds = check_int("n_seeds", n_seeds, low=1)
    steps = check_int("steps", steps, low=1)
    lrs = [check_positive("lrs", v) for v in lrs]
    l1s = [check_real("l1s", v, low=0.0) for v in l1s]
    if not lrs or not l1s:
        raise ValueError("lrs and l1s must be non-empty")
    lr_final_factor = check_positive("lr_final_factor", lr_final_factor)
    clip = None if clip is None else check_positive("clip", clip)
    hidden = check_int("hidden", hidden, low=1)
    grids = [check_int("grids", g, low=1) for g in grids]
    n_test = check_int("n_test", n_test, low=10)
    extrap_fraction = check_positive("extrap_fraction", extrap_fraction)
    updates = range(0, min(50, steps), 5)
    study = FeynmanStudy()
    data = _make_data(eq_ids, n_trains, noises, n_seeds, n_test, extrap_fraction, seed)
    torch_seed = int(np.random.SeedSequence([seed, 99]).generate_state(1)[0] % 2**31)
    configs = [(lr, l1) for lr in lrs for l1 in l1s]
    C = len(configs)

    buckets: dict[tuple[int, int], list[_Data]] = {}
    for d in data:
        buckets.setdefault((d.eq.n_vars, d.n_train), []).append(d)
    for b_idx, ((dim, n), members) in enumerate(sorted(buckets.items())):
        M = len(members)
        base_seed = torch_seed + 1000 * b_idx
        x1 = _tensor(np.stack([m.x for m in members]))
        y1 = _tensor(np.stack([m.y for m in members]))[..., None]
        folds = torch.as_tensor(np.stack([m.folds for m in members]))
        x_test = _tensor(np.stack([m.x_test for m in members]))
        x_ext = _tensor(np.stack([m.x_ext for m in members]))
        for m in members:
            study.linear.append(_linear_row(m))

        bucket = dict(
            M=M,
            n=n,
            dim=dim,
            members=members,
            folds=folds,
            x1=x1,
            y1=y1,
            x_test=x_test,
            x_ext=x_ext,
            configs=configs,
            steps=steps,
            updates=updates,
            lr_final_factor=lr_final_factor,
            clip=clip,
        )

        def train(name: str, size: int, model: torch.nn.Module, copies: int, bucket: dict = bucket) -> None:
            _fit_family(study, name, size, model, copies, bucket)

        gc = GCKAN([dim, hidden, 1], ensemble=4 * C * M, seed=base_seed, **PAPER_EDGE)
        train("GC-KAN", hidden, gc, 4)
        h = matched_mlp_width(dim, _gc_width_params(dim, hidden))
        train("MLP", h, MLP([dim, h, h, 1], "silu", ensemble=3 * C * M, seed=base_seed + 1), 3)
        for g_idx, G in enumerate(grids):
            train(
                "spline KAN (CV)", G, KAN([dim, hidden, 1], G, 3, ensemble=3 * C * M, seed=base_seed + 10 + g_idx), 3
            )
    return study


def _fit_family(
    study: FeynmanStudy, name: str, size: int, model: torch.nn.Module, copies: int, b: dict[str, Any]
) -> None:
    """Train one stacked family (every config x copy x member of one bucket) and store its fits."""
    M, n, dim, members, folds = b["M"], b["n"], b["dim"], b["members"], b["folds"]
    x1, y1, x_test, x_ext = b["x1"], b["y1"], b["x_test"], b["x_ext"]
    configs, steps, updates = b["configs"], b["steps"], b["updates"]
    lr_final_factor, clip = b["lr_final_factor"], b["clip"]
    C = len(configs)
    # member layout: (copy, config, member); copies 0/1 train without fold 0/1, copy 2 on all data,
    # copy 3 (GC-KAN only) on all data from another initialisation (the noise-floor control)
    x = x1.repeat(copies * C, 1, 1)
    y = y1.repeat(copies * C, 1, 1)
    w_copy = [(folds != 0).float(), (folds != 1).float()] + [torch.ones(M, n)] * (copies - 2)
    weight = torch.cat([w.repeat(C, 1) for w in w_copy])
    lr = torch.tensor([c[0] for c in configs], dtype=torch.float64).repeat_interleave(M).repeat(copies)
    l1 = torch.tensor([c[1] for c in configs], dtype=x.dtype).repeat_interleave(M).repeat(copies)
    kw: dict[str, Any] = {"grid_update_steps": updates} if isinstance(model, KAN) else {}
    history = fit_ensemble(
        model,
        x,
        y,
        weight=weight,
        steps=steps,
        lr=lr,
        lr_final=lr * lr_final_factor,
        clip=clip,
        l1=l1 if any(c[1] > 0 for c in configs) else None,
        **kw,
    )
    with torch.no_grad():
        err = ((model(x) - y)[..., 0] ** 2).reshape(copies, C, M, n)
        pt = model(x_test.repeat(copies * C, 1, 1))[..., 0].reshape(copies, C, M, -1).numpy()
        pe = model(x_ext.repeat(copies * C, 1, 1))[..., 0].reshape(copies, C, M, -1).numpy()
    final = history[-1].reshape(copies, C, M)
    for c_idx, (lr_c, l1_c) in enumerate(configs):
        for i, m in enumerate(members):
            cv = 0.0
            for f in (0, 1):
                held = (folds[i] == f).float()
                cv += 0.5 * float((err[f, c_idx, i] * held).sum() / held.sum())
            row = {
                "model": name,
                "size": size,
                "lr": lr_c,
                "l1": l1_c,
                "member": (m.eq.id, m.n_train, m.noise, m.seed_index),
                "cv_mse": cv if np.isfinite(cv) else math.inf,
                "train_mse": float(final[2, c_idx, i]),
                "nrmse_test": _nrmse(pt[2, c_idx, i].astype(float) * m.y_std + m.y_mean, m.y_test),
                "nrmse_extrap": _nrmse(pe[2, c_idx, i].astype(float) * m.y_std + m.y_mean, m.y_ext),
                "params": param_count(model),
            }
            if copies == 4:
                row["replicate_test"] = _nrmse(pt[3, c_idx, i].astype(float) * m.y_std + m.y_mean, m.y_test)
                row["replicate_extrap"] = _nrmse(pe[3, c_idx, i].astype(float) * m.y_std + m.y_mean, m.y_ext)
            study.fits.append(row)
    if name == "GC-KAN":
        for layer_idx, p in enumerate(model.learned_exponents()):
            p = p.reshape(copies, C, M, *p.shape[1:])
            for c_idx, (lr_c, l1_c) in enumerate(configs):
                for i, m in enumerate(members):
                    study.exponents.append(
                        {
                            "equation": m.eq.id,
                            "n_vars": dim,
                            "n_train": n,
                            "noise": m.noise,
                            "seed": m.seed_index,
                            "lr": lr_c,
                            "l1": l1_c,
                            "layer": layer_idx,
                            "p": p[2, c_idx, i].flatten().tolist(),
                        }
                    )


def _linear_row(m: _Data) -> dict[str, Any]:
    """Least squares on the scaled inputs with an intercept: the untuned negative control."""
    A = np.column_stack([m.x, np.ones(len(m.x))])
    coef, *_ = np.linalg.lstsq(A, m.y, rcond=None)

    def pred(x: np.ndarray) -> np.ndarray:
        return (np.column_stack([x, np.ones(len(x))]) @ coef) * m.y_std + m.y_mean

    return {
        "model": "linear (control)",
        "member": (m.eq.id, m.n_train, m.noise, m.seed_index),
        "nrmse_test": _nrmse(pred(m.x_test), m.y_test),
        "nrmse_extrap": _nrmse(pred(m.x_ext), m.y_ext),
    }


def select(study: FeynmanStudy, lr: dict[str, float], l1: dict[str, float]) -> list[dict[str, Any]]:
    """Per model and member, the fit at the model's (``lr``, ``l1``) and the size with the lowest CV MSE."""
    rows = []
    for name in MODELS:
        cand: dict[tuple, dict[str, Any]] = {}
        for f in study.fits:
            if f["model"] == name and f["lr"] == lr[name] and f["l1"] == l1[name]:
                k = f["member"]
                if k not in cand or f["cv_mse"] < cand[k]["cv_mse"]:
                    cand[k] = f
        for k, f in cand.items():
            eq, n, noise, s = k
            rows.append(
                {
                    "equation": eq,
                    "n_vars": feynman.get(eq).n_vars,
                    "n_train": n,
                    "noise": noise,
                    "seed": s,
                    "model": name,
                    "params": f["params"],
                    "grid": f["size"] if name == "spline KAN (CV)" else 0,
                    "nrmse_test": f["nrmse_test"],
                    "nrmse_extrap": f["nrmse_extrap"],
                }
            )
            if "replicate_test" in f:
                rows.append(
                    dict(
                        rows[-1],
                        model="GC-KAN (other init, control)",
                        nrmse_test=f["replicate_test"],
                        nrmse_extrap=f["replicate_extrap"],
                    )
                )
    for r in study.linear:
        eq, n, noise, s = r["member"]
        rows.append(
            {
                "equation": eq,
                "n_vars": feynman.get(eq).n_vars,
                "n_train": n,
                "noise": noise,
                "seed": s,
                "model": r["model"],
                "params": feynman.get(eq).n_vars + 1,
                "grid": 0,
                "nrmse_test": r["nrmse_test"],
                "nrmse_extrap": r["nrmse_extrap"],
            }
        )
    return rows


def cv_score(study: FeynmanStudy, name: str, lr: float, l1: float) -> float:
    """Validation score of one configuration: the geometric mean over members of the CV MSE at the size CV
    picks per member (infinite if any fit diverged)."""
    best: dict[tuple, float] = {}
    for f in study.fits:
        if f["model"] == name and f["lr"] == lr and f["l1"] == l1:
            best[f["member"]] = min(best.get(f["member"], math.inf), f["cv_mse"])
    vals = np.array(list(best.values()))
    if not vals.size or not np.all(np.isfinite(vals)):
        return math.inf
    return float(np.exp(np.mean(np.log(np.maximum(vals, 1e-12)))))


def summarize_study(
    rows: list[dict[str, Any]], exponents: Sequence[dict[str, Any]] = (), *, win_n: int | None = None
) -> tuple[dict[str, float], list[dict]]:
    """Headline numbers and a per-setting table of the selected fits (:func:`select`).

    A *setting* is (equation, n_train, noise); its NRMSE per model is the median over seeds. Model A *wins*
    a setting against B when its median test NRMSE is strictly below B's. Per (equation, n_train, seed), the
    *degradation factor* is :math:`\\mathrm{NRMSE}_{noisy} / \\mathrm{NRMSE}_{clean}` (the abstract's
    statistic; it falls as the clean error rises, so it favours under-fitted models) and the *noise-added
    error* is :math:`\\mathrm{NRMSE}_{noisy} - \\mathrm{NRMSE}_{clean}` (absolute); both are summarised by their
    median; the noise-added ratio is :math:`(0.01 + \\max(\\Delta_A, 0)) / (0.01 + \\max(\\Delta_B, 0))`.
    *Clean parity* is the median over equations of GC-KAN's clean NRMSE over the spline's at the
    largest training size.

    Parameters
    ----------
    rows : list of dict
    exponents : sequence of dict
        The selected GC-KAN fits' exponents (``p`` lists), for the exponent statistics.
    win_n : int, optional
        The scarce training size whose settings are counted (default: the smallest one).

    Returns
    -------
    metrics : dict of str to float
    table : list of dict

    Raises
    ------
    ValueError
        If ``rows`` is empty (no fits to summarise).
    """
    if len(rows) == 0:
        raise ValueError("rows is empty: no selected fits to summarise")
    models = sorted({r["model"] for r in rows})
    tags = {
        "GC-KAN": "gc",
        "spline KAN (CV)": "spline",
        "MLP": "mlp",
        "linear (control)": "linear",
        "GC-KAN (other init, control)": "gc_replicate",
    }
    n_values = sorted({r["n_train"] for r in rows})
    noises = sorted({r["noise"] for r in rows})
    win_n = n_values[0] if win_n is None else win_n
    by: dict[tuple, list[float]] = {}
    ext: dict[tuple, list[float]] = {}
    for r in rows:
        key = (r["model"], r["equation"], r["n_train"], r["noise"])
        by.setdefault(key, []).append(r["nrmse_test"])
        ext.setdefault(key, []).append(r["nrmse_extrap"])
    settings = sorted({k[1:] for k in by})
    med = {k: float(np.median(v)) for k, v in by.items()}
    med_ext = {k: float(np.median(v)) for k, v in ext.items()}
    table = []
    for eq, n, noise in settings:
        grids = [
            r["grid"]
            for r in rows
            if r["model"] == "spline KAN (CV)" and (r["equation"], r["n_train"], r["noise"]) == (eq, n, noise)
        ]
        table.append(
            {
                "equation": eq,
                "n_train": n,
                "noise": noise,
                **{f"nrmse {m}": round(med[(m, eq, n, noise)], 5) for m in models if (m, eq, n, noise) in med},
                **{f"extrap {m}": round(med_ext[(m, eq, n, noise)], 5) for m in models if (m, eq, n, noise) in med},
                "spline G (CV)": int(np.bincount(grids).argmax()) if grids else 0,
                "GC wins": bool(med[("GC-KAN", eq, n, noise)] < med[("spline KAN (CV)", eq, n, noise)]),
            }
        )

    def wins(a: str, b: str, n_sel: int | None, store: dict) -> tuple[int, int]:
        keys = [s for s in settings if (n_sel is None or s[1] == n_sel) and (a, *s) in store and (b, *s) in store]
        return sum(store[(a, *s)] < store[(b, *s)] for s in keys), len(keys)

    w32, n32 = wins("GC-KAN", "spline KAN (CV)", win_n, med)
    w_all, n_all = wins("GC-KAN", "spline KAN (CV)", None, med)
    w_ext, n_ext = wins("GC-KAN", "spline KAN (CV)", None, med_ext)
    metrics: dict[str, float] = {
        "win_fraction_n32": w32 / max(n32, 1),
        "wins_n32": float(w32),
        "settings_n32": float(n32),
        "win_fraction_all": w_all / max(n_all, 1),
        "win_fraction_extrapolation": w_ext / max(n_ext, 1),
    }
    for a, b, tag in (
        ("linear (control)", "spline KAN (CV)", "linear"),
        ("GC-KAN (other init, control)", "GC-KAN", "gc_replicate"),
        ("MLP", "GC-KAN", "mlp_vs_gc"),
        ("MLP", "spline KAN (CV)", "mlp_vs_spline"),
    ):
        w, k = wins(a, b, win_n, med)
        if k:
            metrics[f"{tag}_win_fraction_n32"] = w / k
    # per-model noise statistics, with each model's reference for the ratio controls
    hi_noise = noises[-1]
    idx = {(r["model"], r["equation"], r["n_train"], r["noise"], r["seed"]): r["nrmse_test"] for r in rows}
    if hi_noise > 0 and 0.0 in noises:
        for m in models:
            pairs = [
                (idx[k], idx[(m, k[1], k[2], 0.0, k[4])])
                for k in idx
                if k[0] == m and k[3] == hi_noise and (m, k[1], k[2], 0.0, k[4]) in idx
            ]
            if pairs:
                noisy, clean = np.array(pairs).T
                metrics[f"degradation_{tags[m]}"] = float(np.median(noisy / np.maximum(clean, 1e-12)))
                metrics[f"noise_added_{tags[m]}"] = float(np.median(noisy - clean))
        for m, ref, tag in (
            ("GC-KAN", "spline KAN (CV)", ""),
            ("MLP", "spline KAN (CV)", "mlp_"),
            ("linear (control)", "spline KAN (CV)", "linear_"),
            ("GC-KAN (other init, control)", "GC-KAN", "gc_replicate_"),
        ):
            if f"degradation_{tags[m]}" in metrics and f"degradation_{tags[ref]}" in metrics:
                metrics[f"{tag}degradation_ratio"] = (
                    metrics[f"degradation_{tags[m]}"] / metrics[f"degradation_{tags[ref]}"]
                )
                metrics[f"{tag}noise_added_ratio"] = (NOISE_FLOOR + max(metrics[f"noise_added_{tags[m]}"], 0.0)) / (
                    NOISE_FLOOR + max(metrics[f"noise_added_{tags[ref]}"], 0.0)
                )
    big = n_values[-1]
    for m, ref, tag in (
        ("GC-KAN", "spline KAN (CV)", ""),
        ("linear (control)", "spline KAN (CV)", "linear_"),
        ("GC-KAN (other init, control)", "GC-KAN", "gc_replicate_"),
        ("MLP", "spline KAN (CV)", "mlp_"),
    ):
        r_ = [
            med[(m, eq, n, 0.0)] / max(med[(ref, eq, n, 0.0)], 1e-12)
            for eq, n, noise in settings
            if noise == 0.0 and n == big and (m, eq, n, 0.0) in med and (ref, eq, n, 0.0) in med
        ]
        if r_:
            metrics[f"{tag}clean_parity_largest_n"] = float(np.median(r_))
    for m in models:
        vals = [v for k, v in med.items() if k[0] == m]
        metrics[f"median_nrmse_{tags[m]}"] = float(np.median(vals))
        metrics[f"median_nrmse_extrap_{tags[m]}"] = float(np.median([v for k, v in med_ext.items() if k[0] == m]))
        clean_big = [v for k, v in med.items() if k[0] == m and k[2] == big and k[3] == 0.0]
        metrics[f"clean_nrmse_largest_n_{tags[m]}"] = float(np.median(clean_big))
    metrics["worst_clean_nrmse_largest_n"] = max(
        metrics[f"clean_nrmse_largest_n_{t}"] for t in ("gc", "spline", "mlp")
    )
    tuned_rows = [r for r in rows if r["model"] in MODELS]
    metrics["nonfinite_fraction"] = float(np.mean([not np.isfinite(r["nrmse_test"]) for r in tuned_rows]))
    spline_g = [r["grid"] for r in rows if r["model"] == "spline KAN (CV)"]
    metrics["spline_mean_grid"] = float(np.mean(spline_g))
    p_all = [(e, v) for e in exponents for v in e["p"]]
    if p_all:
        p = np.array([v for _, v in p_all])
        p_noisy = np.array([v for e, v in p_all if e["noise"] == hi_noise and hi_noise > 0])
        p_clean = np.array([v for e, v in p_all if e["noise"] == 0.0])
        metrics.update(
            {
                "exponent_median": float(np.median(p)),
                "exponent_q10": float(np.quantile(p, 0.1)),
                "exponent_q90": float(np.quantile(p, 0.9)),
                "exponent_frac_below_2": float(np.mean(p < 2.0)),
                "exponent_frac_below_2_clean": float(np.mean(p_clean < 2.0)) if p_clean.size else 0.0,
                "exponent_frac_below_2_noisy": float(np.mean(p_noisy < 2.0)) if p_noisy.size else 0.0,
                "exponent_median_clean": float(np.median(p_clean)) if p_clean.size else 0.0,
                "exponent_median_noisy": float(np.median(p_noisy)) if p_noisy.size else 0.0,
            }
        )
        for dim in sorted({e["n_vars"] for e, _ in p_all}):
            metrics[f"exponent_median_d{dim}"] = float(np.median([v for e, v in p_all if e["n_vars"] == dim]))
    for m in models:
        metrics[f"params_median_{tags[m]}"] = float(np.median([r["params"] for r in rows if r["model"] == m]))
    return metrics, table
