"""The complementary-failure test bed of SafeCut's claim check: a Gaussian-mixture target domain, a target
model pretrained on a source domain where classes 0-4 are displaced, and an overconfident "ViL" stand-in
trained where classes 5-9 are displaced.

* :func:`complementary_failure_data`: the three domains (target, the target model's source, the partner's);
* :class:`MLPClassifier`: the target model, an MLP with trainable features (``embed`` = its last hidden layer);
* :class:`FrozenEncoderClassifier`: the partner, a frozen random ReLU encoder (its own representation, like a
  ViL image encoder) with a trainable linear head and a fixed logit scale (CLIP's ``logit_scale``);
* :func:`train_supervised`: source (pre)training with label smoothing, as SFDA source models are trained;
* :func:`run_schemes`: one seed of the comparison (source-only, partner-only, self-training, teacher ->
  student, naive exchange, confidence gating, SafeCut).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from geode.core.random import as_generator, torch_generator
from geode.core.validation import check_int, check_positive, check_real
from geode.ensembles.mutual import MutualCorrection
from geode.ensembles.safecut.cutstat import cut_statistic
from geode.ensembles.safecut.safecut import SafeCut, SafeCutRounds

__all__ = [
    "Bed",
    "Domains",
    "FrozenEncoderClassifier",
    "MLPClassifier",
    "complementary_failure_data",
    "make_bed",
    "make_method",
    "run_schemes",
    "train_supervised",
]


@dataclass
class Domains:
    """Samples ``(x, y)`` of the target domain and of the two models' training domains."""

    x_target: np.ndarray
    y_target: np.ndarray
    x_source: np.ndarray
    y_source: np.ndarray
    x_partner: np.ndarray
    y_partner: np.ndarray


def complementary_failure_data(
    n_target: int,
    n_source: int,
    *,
    dim: int = 16,
    n_classes: int = 10,
    shift: float = 2.0,
    swap: tuple[int, int] | None = None,
    seed: Any = 0,
) -> Domains:
    """Gaussian mixtures with complementary displaced classes.

    Class means :math:`\\mu_c \\sim N(0, I_d)`, samples :math:`x = \\mu_y + \\varepsilon`, :math:`\\varepsilon \\sim
    N(0, I_d)`, labels uniform. The target model's source domain displaces the first half of the classes,
    :math:`\\mu_c + s\\, u_c` for :math:`c < C/2`, the partner's domain the second half, with random unit
    directions :math:`u_c` and shift :math:`s`. A model trained on either domain therefore fails on a
    different half of the target's classes.

    ``swap=(a, b)`` exchanges the labels of classes ``a`` and ``b`` in the target model's source domain only
    (the same draws otherwise): a model trained there makes *whole-class* errors on the target, each
    cluster internally coherent, the case the cut statistic cannot see.
    """
    n_target = check_int("n_target", n_target, low=2)
    n_source = check_int("n_source", n_source, low=2)
    dim = check_int("dim", dim, low=1)
    n_classes = check_int("n_classes", n_classes, low=2)
    shift = check_real("shift", shift, low=0.0)
    rng = as_generator(seed)
    mu = rng.normal(size=(n_classes, dim))
    u = rng.normal(size=(n_classes, dim))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    half = n_classes // 2
    mu_s, mu_p = mu.copy(), mu.copy()
    mu_s[:half] += shift * u[:half]
    mu_p[half:] += shift * u[half:]

    def sample(n: int, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, n_classes, n)
        return (means[y] + rng.normal(size=(n, dim))).astype(np.float32), y

    xt, yt = sample(n_target, mu)
    xs, ys = sample(n_source, mu_s)
    xp, yp = sample(n_source, mu_p)
    if swap is not None:
        a, b = (check_int("swap", v, low=0, high=n_classes - 1) for v in swap)
        ys = np.where(ys == a, b, np.where(ys == b, a, ys))
    return Domains(xt, yt, xs, ys, xp, yp)


class MLPClassifier(torch.nn.Module):
    """Two-hidden-layer ReLU MLP; :meth:`embed` returns the last hidden layer (trainable features)."""

    def __init__(self, dim: int, n_classes: int, hidden: int = 64) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(dim, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden), torch.nn.ReLU()
        )
        self.head = torch.nn.Linear(hidden, n_classes)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class FrozenEncoderClassifier(torch.nn.Module):
    """Frozen random ReLU encoder :math:`\\phi(x) = \\max(Wx + b, 0)` and a linear head, logits scaled by ``scale``.

    The encoder (``W``, ``b`` drawn from ``generator``) is never trained; ``scale`` is a fixed logit
    multiplier: values above one make the model overconfident, as a ViL model's large logit scale does.
    """

    def __init__(self, dim: int, n_classes: int, hidden: int = 64, *, scale: float = 1.0, generator: Any = None):
        super().__init__()
        w = torch.randn(dim, hidden, generator=generator) / dim**0.5
        b = torch.randn(hidden, generator=generator)
        self.register_buffer("weight", w)
        self.register_buffer("bias", b)
        self.head = torch.nn.Linear(hidden, n_classes)
        self.scale = check_positive("scale", scale)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.weight + self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * self.head(self.embed(x))


def train_supervised(
    model: torch.nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    *,
    epochs: int,
    seed: int,
    lr: float = 3e-3,
    batch_size: int = 128,
    label_smoothing: float = 0.1,
) -> torch.nn.Module:
    """Supervised training with Adam and label-smoothed cross-entropy (in place; returns the model)."""
    gen = torch_generator(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(yt), generator=gen)
        for start in range(0, len(yt), batch_size):
            b = perm[start : start + batch_size]
            loss = torch.nn.functional.cross_entropy(model(xt[b]), yt[b], label_smoothing=label_smoothing)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def _auc(score: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of ``score`` for ``positive`` (Mann-Whitney, ties counted half); 0.5 if degenerate."""
    pos, neg = score[positive], score[~positive]
    if pos.size == 0 or neg.size == 0:
        return 0.5
    allv = np.concatenate([pos, neg])
    order = np.argsort(allv, kind="stable")
    ranks = np.empty(allv.size)
    sv = allv[order]
    # average ranks over ties
    _, first, counts = np.unique(sv, return_index=True, return_counts=True)
    avg = first + (counts - 1) / 2.0 + 1.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2.0) / (pos.size * neg.size))


SCHEME_NAMES = ("self-training", "teacher->student", "naive exchange", "confidence gating", "SafeCut")


def run_schemes(
    seed: int,
    *,
    n_target: int,
    n_source: int,
    source_epochs: int,
    rounds: int,
    epochs: int,
    shift: float = 2.0,
    partner_scale: float = 5.0,
    k: int = 20,
    tau: float = 1.0,
    im_weight: float = 1.0,
    lr: float = 1e-3,
) -> dict[str, Any]:
    """Revision 1's comparison (rounds of :class:`MutualCorrection`; SafeCut = :class:`SafeCutRounds`), one seed."""
    seed = check_int("seed", seed, low=0)
    ss = np.random.SeedSequence(seed).generate_state(4)
    data = complementary_failure_data(n_target, n_source, shift=shift, seed=int(ss[0]))
    dim, c = data.x_target.shape[1], int(data.y_target.max()) + 1
    torch.manual_seed(int(ss[1]))  # default initialisation of the networks
    model_t = train_supervised(
        MLPClassifier(dim, c), data.x_source, data.y_source, epochs=source_epochs, seed=int(ss[2])
    )
    partner = FrozenEncoderClassifier(dim, c, generator=torch_generator(int(ss[3])))
    train_supervised(partner, data.x_partner, data.y_partner, epochs=source_epochs, seed=int(ss[2]) + 1)
    partner.scale = float(partner_scale)  # deployed overconfident (logits x scale)

    x, y = torch.as_tensor(data.x_target), data.y_target
    with torch.no_grad():
        pt = torch.softmax(model_t(x), 1).numpy()
        pv = torch.softmax(partner(x), 1).numpy()
        ft, fv = model_t.embed(x).numpy(), partner.embed(x).numpy()
    lt, lv = pt.argmax(1), pv.argmax(1)
    zt = cut_statistic(ft, lt, k, n_classes=c)
    zv = cut_statistic(fv, lv, k, n_classes=c)
    disagree = lt != lv
    right_t, right_v = (lt == y) & disagree, (lv == y) & disagree
    n_dis = max(int(disagree.sum()), 1)
    out: dict[str, Any] = {
        "acc": {"source-only": float(np.mean(lt == y)), "partner-only": float(np.mean(lv == y))},
        "acc_partner": {},
        "diag": {
            "auc_z_t": _auc(zt, lt != y),
            "auc_z_v": _auc(zv, lv != y),
            "auc_conf_t": _auc(-pt.max(1), lt != y),
            "auc_conf_v": _auc(-pv.max(1), lv != y),
            "mean_conf_t": float(pt.max(1).mean()),
            "mean_conf_v": float(pv.max(1).mean()),
            "disagreement": float(disagree.mean()),
            "z_picks_right": float(np.sum(((zv < zt) & right_v) | ((zt < zv) & right_t)) / n_dis),
            "conf_picks_right": float(
                np.sum(((pv.max(1) > pt.max(1)) & right_v) | ((pt.max(1) > pv.max(1)) & right_t)) / n_dis
            ),
        },
        "history": {},
    }
    kw = {"rounds": rounds, "epochs": epochs, "lr": lr, "im_weight": im_weight, "seed": int(ss[2]) + 2}
    methods: dict[str, MutualCorrection] = {
        "self-training": MutualCorrection("self", **kw),
        "teacher->student": MutualCorrection("teacher_student", **kw),
        "naive exchange": MutualCorrection("naive", **kw),
        "confidence gating": MutualCorrection("confidence", **kw),
        "SafeCut": SafeCutRounds(k=k, tau=tau, **kw),
    }
    for name, method in methods.items():
        _mt, _mv, hist = method.fit(model_t, partner, x, y=y)
        out["acc"][name] = hist[-1]["acc_t"]
        out["acc_partner"][name] = hist[-1]["acc_v"]
        out["history"][name] = hist
    return out


@dataclass
class Bed:
    """One draw of the test bed: the two pretrained models, the target splits and the supervised ceiling.

    ``x_pool`` is the unlabelled target data the methods adapt on; ``(x_val, y_val)`` a small labelled target
    split used only to select hyper-parameters; ``(x_test, y_test)`` the split every accuracy is reported on.
    ``ceiling`` is the accuracy on the test split of the same MLP trained on the pool *with its labels*.
    """

    model_t: Any
    partner: Any
    x_pool: Any
    y_pool: np.ndarray
    x_val: Any
    y_val: np.ndarray
    x_test: Any
    y_test: np.ndarray
    ceiling: float
    n_classes: int


def make_bed(
    seed: int,
    *,
    n_pool: int,
    n_val: int,
    n_test: int,
    n_source: int,
    source_epochs: int,
    shift: float,
    partner_scale: float = 5.0,
    swap: tuple[int, int] | None = None,
    ceiling: bool = True,
) -> Bed:
    """Draw the data, pretrain the target model (source) and the partner (its own domain), train the ceiling.

    The same ``seed`` gives the same data and initialisations with and without ``swap``.
    """
    seed = check_int("seed", seed, low=0)
    ss = np.random.SeedSequence(seed).generate_state(4)
    n_t = n_pool + n_val + n_test
    data = complementary_failure_data(n_t, n_source, shift=shift, swap=swap, seed=int(ss[0]))
    dim, c = data.x_target.shape[1], int(data.y_target.max()) + 1
    torch.manual_seed(int(ss[1]))
    model_t = train_supervised(
        MLPClassifier(dim, c), data.x_source, data.y_source, epochs=source_epochs, seed=int(ss[2])
    )
    partner = FrozenEncoderClassifier(dim, c, generator=torch_generator(int(ss[3])))
    train_supervised(partner, data.x_partner, data.y_partner, epochs=source_epochs, seed=int(ss[2]) + 1)
    partner.scale = float(partner_scale)
    xt, yt = torch.as_tensor(data.x_target), data.y_target
    split = (slice(0, n_pool), slice(n_pool, n_pool + n_val), slice(n_pool + n_val, n_t))
    (xp, yp), (xv, yv), (xs, ys) = ((xt[sl], yt[sl]) for sl in split)
    ceil = float("nan")
    if ceiling:
        torch.manual_seed(int(ss[1]))
        sup = train_supervised(MLPClassifier(dim, c), xp.numpy(), yp, epochs=source_epochs, seed=int(ss[2]))
        ceil = accuracy(sup, xs, ys)
    return Bed(model_t, partner, xp, yp, xv, yv, xs, ys, ceil, c)


def accuracy(model: Any, x: Any, y: np.ndarray) -> float:
    """Accuracy of ``model``'s arg-max on ``(x, y)``."""
    model.eval()
    with torch.no_grad():
        return float(np.mean(model(x).argmax(1).numpy() == y))


def make_method(name: str, *, lr: float, epochs: int, rounds: int, seed: int) -> Any:
    """The adaptation methods of the claim, all with ``epochs`` passes over the pool in total.

    ``"SafeCut"``, ``"naive exchange"``, ``"confidence gating"`` and ``"shuffled gate"`` share the release's
    training (:class:`SafeCut`, only the reliability differs); ``"self-training"`` (SHOT's information
    maximisation on the target model's own pseudo-labels), ``"teacher->student"`` and ``"SafeCut rounds"``
    (revision 1) are :class:`MutualCorrection` rounds (``rounds`` x ``epochs // rounds``).
    """
    rel = {"SafeCut": "cut", "naive exchange": "naive", "confidence gating": "confidence", "shuffled gate": "shuffled"}
    if name in rel:
        return SafeCut(reliability=rel[name], epochs=epochs, lr=lr, seed=seed)
    kw = {"rounds": rounds, "epochs": max(epochs // rounds, 1), "lr": lr, "im_weight": 1.0, "seed": seed}
    if name == "self-training":
        return MutualCorrection("self", **kw)
    if name == "teacher->student":
        return MutualCorrection("teacher_student", **kw)
    if name == "SafeCut rounds":
        return SafeCutRounds(k=20, **kw)
    raise ValueError(f"unknown method {name!r}")
