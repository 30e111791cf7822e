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
    "QUICK_EQUATIONS",
    "FeynmanStudy",
    "matched_mlp_width",
    "param_count",
    "run_feynman_study",
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
    """Hidden width ``h`` of an MLP ``[d, h, h, 1]`` whose parameter count
    :math:`(d+1)h + (h+1)h + h + 1` is closest to ``target``."""
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
    rows : list of dict
        One per (equation, n_train, noise, seed, model): ``nrmse_test``, ``nrmse_extrap``, ``params`` and,
        for the spline KAN, the chosen ``grid``.
    exponents : list of dict
        One per GC-KAN edge: equation, n_train, noise, seed, layer and its learned ``p``.
    cv : list of dict
        The 2-fold cross-validation MSE of every grid size per setting.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    exponents: list[dict[str, Any]] = field(default_factory=list)
    cv: list[dict[str, Any]] = field(default_factory=list)


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


def _predict(model: torch.nn.Module, data: list[_Data], which: str) -> list[np.ndarray]:
    xs = _tensor(np.stack([getattr(d, f"x_{which}") for d in data]))
    with torch.no_grad():
        out = model(xs)[..., 0].numpy().astype(float)
    return [o * d.y_std + d.y_mean for o, d in zip(out, data)]


def run_feynman_study(
    equations: Sequence[str] = QUICK_EQUATIONS,
    *,
    n_trains: Sequence[int] = (32, 128),
    noises: Sequence[float] = (0.0, 0.1),
    n_seeds: int = 3,
    steps: int = 300,
    lr: float = 1e-2,
    lr_final: float = 1e-4,
    hidden: int = 4,
    atoms: int = 4,
    grids: Sequence[int] = (3, 5, 10),
    n_test: int = 2000,
    extrap_fraction: float = 0.1,
    seed: int = 0,
) -> FeynmanStudy:
    """Train GC-KAN, the CV spline KAN and the matched MLP on every setting and measure NRMSE.

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
    steps, lr, lr_final : int, float, float
        Adam steps, full batch, learning rate cosine-annealed from ``lr`` to ``lr_final``; the same for every
        model (and for the CV fits).
    hidden, atoms : int
        Hidden width of both KANs and atoms per GC-KAN edge.
    grids : sequence of int
        Candidate grid sizes of the spline KAN (cubic, pykan-style grid updates during the first 50 steps).
    n_test : int
        Size of the clean test set and of the extrapolation set.
    extrap_fraction : float
        Widening of the ranges for the extrapolation set.
    seed : int
        Master seed.
    """
    eq_ids = [feynman.get(e).id for e in equations]
    n_trains = [check_int("n_trains", n, low=4) for n in n_trains]
    noises = [check_real("noises", v, low=0.0) for v in noises]
    n_seeds = check_int("n_seeds", n_seeds, low=1)
    steps = check_int("steps", steps, low=1)
    lr, lr_final = check_positive("lr", lr), check_positive("lr_final", lr_final)
    hidden, atoms = check_int("hidden", hidden, low=1), check_int("atoms", atoms, low=1)
    grids = [check_int("grids", g, low=1) for g in grids]
    n_test = check_int("n_test", n_test, low=10)
    extrap_fraction = check_positive("extrap_fraction", extrap_fraction)
    updates = range(0, min(50, steps), 5)
    study = FeynmanStudy()
    data = _make_data(eq_ids, n_trains, noises, n_seeds, n_test, extrap_fraction, seed)
    torch_seed = int(np.random.SeedSequence([seed, 99]).generate_state(1)[0] % 2**31)

    buckets: dict[tuple[int, int], list[_Data]] = {}
    for d in data:
        buckets.setdefault((d.eq.n_vars, d.n_train), []).append(d)
    for b_idx, ((dim, n), members) in enumerate(sorted(buckets.items())):
        E = len(members)
        x = _tensor(np.stack([m.x for m in members]))
        y = _tensor(np.stack([m.y for m in members]))[..., None]
        base_seed = torch_seed + 1000 * b_idx

        # GC-KAN
        gc = GCKAN([dim, hidden, 1], atoms, ensemble=E, seed=base_seed)
        fit_ensemble(gc, x, y, steps=steps, lr=lr, lr_final=lr_final)
        _append_rows(study, "GC-KAN", members, _predict(gc, members, "test"), _predict(gc, members, "ext"), gc)
        for layer_idx, p in enumerate(gc.learned_exponents()):
            for i, m in enumerate(members):
                for value in p[i].flatten().tolist():
                    study.exponents.append(
                        {
                            "equation": m.eq.id,
                            "n_vars": dim,
                            "n_train": n,
                            "noise": m.noise,
                            "seed": m.seed_index,
                            "layer": layer_idx,
                            "p": value,
                        }
                    )
        target = param_count(gc)

        # MLP at matched parameter count
        mlp = MLP([dim, *[matched_mlp_width(dim, target)] * 2, 1], "silu", ensemble=E, seed=base_seed + 1)
        fit_ensemble(mlp, x, y, steps=steps, lr=lr, lr_final=lr_final)
        _append_rows(study, "MLP", members, _predict(mlp, members, "test"), _predict(mlp, members, "ext"), mlp)

        # spline KAN: 2-fold CV over the grid sizes (fold members and full-data members in one ensemble)
        folds = torch.as_tensor(np.stack([m.folds for m in members]))
        w_fold = [(folds != f).float() for f in (0, 1)]  # train on the other fold, validate on fold f
        weight = torch.cat([w_fold[0], w_fold[1], torch.ones(E, n)])
        cv_mse = np.zeros((len(grids), E))
        full_models = []
        for g_idx, G in enumerate(grids):
            spl = KAN([dim, hidden, 1], G, 3, ensemble=3 * E, seed=base_seed + 10 + g_idx)
            fit_ensemble(
                spl,
                x.repeat(3, 1, 1),
                y.repeat(3, 1, 1),
                weight=weight,
                steps=steps,
                lr=lr,
                lr_final=lr_final,
                grid_update_steps=updates,
            )
            with torch.no_grad():
                pred = spl(x.repeat(3, 1, 1))[..., 0]
            err = (pred - y.repeat(3, 1, 1)[..., 0]) ** 2
            for f in (0, 1):
                held = (folds == f).float()
                cv_mse[g_idx] += 0.5 * ((err[f * E : (f + 1) * E] * held).sum(1) / held.sum(1)).numpy()
            full_models.append(spl)
        best = cv_mse.argmin(0)
        for i, m in enumerate(members):
            study.cv.append(
                {
                    "equation": m.eq.id,
                    "n_train": n,
                    "noise": m.noise,
                    "seed": m.seed_index,
                    **{f"cv_mse_G{G}": float(cv_mse[g, i]) for g, G in enumerate(grids)},
                    "chosen": grids[best[i]],
                }
            )
        # evaluate the full-data member of the chosen grid
        tests_all = [_predict_member_range(fm, members, 2 * E, "test") for fm in full_models]
        exts_all = [_predict_member_range(fm, members, 2 * E, "ext") for fm in full_models]
        _append_rows(
            study,
            "spline KAN (CV)",
            members,
            [tests_all[int(g)][i] for i, g in enumerate(best)],
            [exts_all[int(g)][i] for i, g in enumerate(best)],
            full_models[0],
            grids=[grids[int(g)] for g in best],
            params=[param_count(full_models[int(g)]) for g in best],
        )
    return study


def _append_rows(
    study: FeynmanStudy,
    name: str,
    members: list[_Data],
    tests: list[np.ndarray],
    exts: list[np.ndarray],
    model: torch.nn.Module,
    *,
    grids: list[int] | None = None,
    params: list[int] | None = None,
) -> None:
    for i, m in enumerate(members):
        study.rows.append(
            {
                "equation": m.eq.id,
                "n_vars": m.eq.n_vars,
                "n_train": m.n_train,
                "noise": m.noise,
                "seed": m.seed_index,
                "model": name,
                "params": params[i] if params is not None else param_count(model),
                "grid": grids[i] if grids is not None else 0,
                "nrmse_test": _nrmse(tests[i], m.y_test),
                "nrmse_extrap": _nrmse(exts[i], m.y_ext),
            }
        )


def _predict_member_range(model: torch.nn.Module, data: list[_Data], start: int, which: str) -> list[np.ndarray]:
    """Predictions of members ``start .. start + len(data) - 1`` of a stacked ensemble on their own sets."""
    xs = _tensor(np.stack([getattr(d, f"x_{which}") for d in data]))
    full = torch.zeros(model.ensemble, *xs.shape[1:])
    full[start : start + len(data)] = xs
    with torch.no_grad():
        out = model(full)[start : start + len(data), :, 0].numpy().astype(float)
    return [o * d.y_std + d.y_mean for o, d in zip(out, data)]


def summarize_study(study: FeynmanStudy, *, win_n: int | None = None) -> tuple[dict[str, float], list[dict]]:
    """Headline numbers and a per-setting table of a :class:`FeynmanStudy`.

    A *setting* is (equation, n_train, noise); its NRMSE per model is the median over seeds. GC-KAN *wins* a
    setting when its median test NRMSE is strictly below the CV spline KAN's. The *degradation factor* of a
    model is :math:`\\mathrm{NRMSE}(\\text{largest noise}) / \\mathrm{NRMSE}(\\text{noise} = 0)` per (equation,
    n_train, seed), summarised by its median.

    Parameters
    ----------
    study : FeynmanStudy
    win_n : int, optional
        The scarce training size whose settings are counted (default: the smallest one).

    Returns
    -------
    metrics : dict of str to float
    table : list of dict
    """
    import numpy as np

    rows = study.rows
    models = ("GC-KAN", "spline KAN (CV)", "MLP")
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
        chosen = [c["chosen"] for c in study.cv if (c["equation"], c["n_train"], c["noise"]) == (eq, n, noise)]
        table.append(
            {
                "equation": eq,
                "n_train": n,
                "noise": noise,
                **{f"nrmse {m}": round(med[(m, eq, n, noise)], 5) for m in models},
                **{f"extrap {m}": round(med_ext[(m, eq, n, noise)], 5) for m in models},
                "spline G (CV)": int(np.bincount(chosen).argmax()) if chosen else 0,
                "GC wins": bool(med[("GC-KAN", eq, n, noise)] < med[("spline KAN (CV)", eq, n, noise)]),
            }
        )

    def wins(n_sel: int | None, store: dict) -> tuple[int, int]:
        keys = [s for s in settings if n_sel is None or s[1] == n_sel]
        return sum(store[("GC-KAN", *s)] < store[("spline KAN (CV)", *s)] for s in keys), len(keys)

    w32, n32 = wins(win_n, med)
    w_all, n_all = wins(None, med)
    w_ext, n_ext = wins(None, med_ext)
    metrics: dict[str, float] = {
        "win_fraction_n32": w32 / n32,
        "wins_n32": float(w32),
        "settings_n32": float(n32),
        "win_fraction_all": w_all / n_all,
        "win_fraction_extrapolation": w_ext / n_ext,
    }
    hi_noise = noises[-1]
    if hi_noise > 0 and 0.0 in noises:
        seeds = sorted({r["seed"] for r in rows})
        idx = {(r["model"], r["equation"], r["n_train"], r["noise"], r["seed"]): r["nrmse_test"] for r in rows}
        for m, tag in zip(models, ("gc", "spline", "mlp")):
            factors = [
                idx[(m, eq, n, hi_noise, s)] / max(idx[(m, eq, n, 0.0, s)], 1e-12)
                for eq, n, noise in settings
                if noise == 0.0
                for s in seeds
                if (m, eq, n, hi_noise, s) in idx
            ]
            metrics[f"degradation_{tag}"] = float(np.median(factors))
        metrics["degradation_ratio"] = metrics["degradation_gc"] / metrics["degradation_spline"]
    clean_big = [(eq, n) for eq, n, noise in settings if noise == 0.0 and n == n_values[-1]]
    metrics["clean_parity_largest_n"] = float(
        np.median([med[("GC-KAN", eq, n, 0.0)] / med[("spline KAN (CV)", eq, n, 0.0)] for eq, n in clean_big])
    )
    for m, tag in zip(models, ("gc", "spline", "mlp")):
        metrics[f"median_nrmse_{tag}"] = float(np.median([v for k, v in med.items() if k[0] == m]))
        metrics[f"median_nrmse_extrap_{tag}"] = float(np.median([v for k, v in med_ext.items() if k[0] == m]))
    p = np.array([e["p"] for e in study.exponents])
    p_noisy = np.array([e["p"] for e in study.exponents if e["noise"] == hi_noise and hi_noise > 0])
    p_clean = np.array([e["p"] for e in study.exponents if e["noise"] == 0.0])
    metrics.update(
        {
            "exponent_median": float(np.median(p)),
            "exponent_q10": float(np.quantile(p, 0.1)),
            "exponent_q90": float(np.quantile(p, 0.9)),
            "exponent_frac_below_2": float(np.mean(p < 2.0)),
            "exponent_frac_below_2_clean": float(np.mean(p_clean < 2.0)) if p_clean.size else 0.0,
            "exponent_frac_below_2_noisy": float(np.mean(p_noisy < 2.0)) if p_noisy.size else 0.0,
            "spline_mean_grid": float(np.mean([c["chosen"] for c in study.cv])),
        }
    )
    for layer in sorted({e["layer"] for e in study.exponents}):
        metrics[f"exponent_median_layer{layer}"] = float(
            np.median([e["p"] for e in study.exponents if e["layer"] == layer])
        )
    for dim in sorted({e["n_vars"] for e in study.exponents}):
        metrics[f"exponent_median_d{dim}"] = float(np.median([e["p"] for e in study.exponents if e["n_vars"] == dim]))
    params = {m: sorted({r["params"] for r in rows if r["model"] == m}) for m in models}
    for m, tag in zip(models, ("gc", "spline", "mlp")):
        metrics[f"params_median_{tag}"] = float(np.median(params[m]))
    return metrics, table
