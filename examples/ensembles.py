"""Ensembles with geode: comparability recovery before fusion, MDA model merging, SafeCut mutual correction.

What it shows, on data and models the script makes itself:

1. **Comparability recovery** (``ComparabilityRecovery``, an sklearn estimator) on four scikit-learn classifiers
   whose soft outputs live in different geometries (naive Bayes is over-confident, a random forest and kNN are
   soft): fitted label-free on unlabelled calibration outputs, its rectified outputs are pooled and one global
   temperature is fitted on labels, against the plain linear pool with the same global temperature and the
   label-supervised per-oracle temperatures (an upper reference). Test NLL and accuracy.
2. **MDA** (``MDA.merge``): three torch models fine-tuned from one pre-trained backbone on three different tasks
   (each with its own head) merged into one backbone: averaging and task arithmetic (``average_merge``,
   ``task_arithmetic``) against MDA's data-free stage and MDA with a few unlabelled inputs per task. The
   accuracy of each task's head on the merged backbone, relative to its own fine-tuned model.
3. **SafeCut** (``SafeCut.fit``): a target model and a frozen-feature partner trained on domains where each
   fails on a different half of the classes, adapted on unlabelled target data; SafeCut's cut-reliability
   gates against naive exchange and confidence gating (the same training, other gates).

Run::

    python examples/ensembles.py            # about a minute on one core
    python examples/ensembles.py --smoke    # the smallest size, seconds

Needs geode's core install only (numpy, torch, scikit-learn); no asset, no network.
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np
import torch


def comparability(n: int, seed: int) -> None:
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier

    from geode.ensembles import (
        ComparabilityRecovery,
        PerOracleTemperatureScaling,
        TemperatureScaling,
        accuracy,
        mean_fusion,
        nll,
    )

    x, y = make_classification(n_samples=n, n_features=20, n_informative=8, n_redundant=6, n_classes=5,
                               n_clusters_per_class=2, flip_y=0.05, random_state=seed)  # fmt: skip
    x_tr, x_rest, y_tr, y_rest = train_test_split(x, y, test_size=0.5, stratify=y, random_state=seed)
    x_cal, x_te, y_cal, y_te = train_test_split(x_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=seed)
    oracles = {
        "logistic regression": LogisticRegression(max_iter=500),
        "naive Bayes": GaussianNB(),
        "random forest": RandomForestClassifier(n_estimators=50, min_samples_leaf=3, random_state=seed),
        "kNN (k=25)": KNeighborsClassifier(n_neighbors=25),
    }
    for m in oracles.values():
        m.fit(x_tr, y_tr)
    p_cal = np.stack([m.predict_proba(x_cal) for m in oracles.values()])  # (oracles, N, C)
    p_te = np.stack([m.predict_proba(x_te) for m in oracles.values()])

    cr = ComparabilityRecovery().fit(p_cal)  # label-free: the calibration outputs only
    rows = {}
    ts = TemperatureScaling().fit(mean_fusion(p_cal), y_cal)
    rows["mean pool + global temperature"] = ts.transform(mean_fusion(p_te))
    ts = TemperatureScaling().fit(cr.fuse(p_cal), y_cal)
    rows["recovery + mean pool + global temp."] = ts.transform(cr.fuse(p_te))
    rows["per-oracle temperatures (labels)"] = PerOracleTemperatureScaling().fit(p_cal, y_cal).fuse(p_te)
    print("1. Comparability recovery on four scikit-learn classifiers "
          f"({len(y_cal)} calibration and {len(y_te)} test examples)")  # fmt: skip
    for name, s in zip(oracles, cr.scales_):
        print(f"   {name:<22} test NLL {nll(p_te[list(oracles).index(name)], y_te):.3f}, learned scale a = {s:.2f}")
    print(f"   {'fusion':<38} {'test NLL':>9} {'accuracy':>9}")
    for name, p in rows.items():
        print(f"   {name:<38} {nll(p, y_te):>9.3f} {accuracy(p, y_te):>9.3f}")


def merging(steps: int, lams: tuple[float, ...], seed: int) -> None:
    from geode.ensembles import MDA, average_merge, task_arithmetic

    torch.manual_seed(seed)
    d, n_tasks = 16, 3
    teachers = [torch.nn.Sequential(torch.nn.Linear(d, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
                for _ in range(n_tasks + 1)]  # fmt: skip
    x_train, x_unl, x_test = (torch.randn(n, d) for n in (2000, 128, 1000))

    def labels(t: int, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return teachers[t](x).argmax(1)

    def train(body: torch.nn.Module, head: torch.nn.Module, t: int, n_steps: int) -> None:
        opt = torch.optim.Adam([*body.parameters(), *head.parameters()], lr=3e-3)
        y = labels(t, x_train)
        for i in range(n_steps):
            idx = torch.arange(i * 64, i * 64 + 64) % len(x_train)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(head(body(x_train[idx])), y[idx]).backward()
            opt.step()

    def acc(body: torch.nn.Module, head: torch.nn.Module, t: int, rotation: torch.Tensor | None = None) -> float:
        with torch.no_grad():
            f = body(x_test)
            f = f if rotation is None else f @ rotation.T
            return float((head(f).argmax(1) == labels(t, x_test)).float().mean())

    base = torch.nn.Sequential(torch.nn.Linear(d, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32), torch.nn.ReLU())
    train(base, torch.nn.Linear(32, 4), 0, steps)  # pre-training on task 0
    tuned, heads = [], []
    for t in range(1, n_tasks + 1):
        body, head = copy.deepcopy(base), torch.nn.Linear(32, 4)
        train(body, head, t, steps)
        tuned.append(body)
        heads.append(head)
    own = [acc(b, h, t + 1) for t, (b, h) in enumerate(zip(tuned, heads))]

    def as_model(sd: dict) -> torch.nn.Module:
        m = copy.deepcopy(base)
        m.load_state_dict(sd)
        return m

    merged = {"averaging": (as_model(average_merge(base, tuned)), None)}
    for lam in lams:  # the merge scale: in real use select it on labelled validation data
        merged[f"task arithmetic (lam {lam:g})"] = (as_model(task_arithmetic(base, tuned, lam=lam)), None)
        merged[f"MDA, data-free (lam {lam:g})"] = (MDA(lam=lam).merge(base, tuned), None)
    lam0 = lams[len(lams) // 2]
    mda = MDA(lam=lam0, steps=steps // 4)
    with_data = mda.merge(base, tuned, data=[x_unl] * n_tasks, heads=heads)  # coefficients and rotations
    merged[f"MDA, unlabelled data (from {lam0:g})"] = (with_data, mda.rotations_)
    print(f"\n2. Merging {n_tasks} fine-tuned backbones (own accuracies {np.round(own, 3).tolist()})")
    print(f"   {'merge':<32} {'accuracy / own, per task':<28} {'mean':>6}")
    for name, (m, rot) in merged.items():
        rel = [acc(m, h, t + 1, None if rot is None else rot[t]) / own[t] for t, h in enumerate(heads)]
        print(f"   {name:<32} {str(np.round(rel, 3).tolist()):<28} {np.mean(rel):>6.3f}")


class TargetModel(torch.nn.Module):
    """An MLP whose ``embed`` (the last hidden layer) SafeCut reads as the target model's features."""

    def __init__(self, d: int, c: int) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(d, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU()
        )
        self.head = torch.nn.Linear(64, c)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class Partner(torch.nn.Module):
    """A frozen random ReLU encoder (a stand-in for a vision-language model) and a head; over-confident logits."""

    def __init__(self, d: int, c: int, scale: float = 5.0) -> None:
        super().__init__()
        self.encoder = torch.nn.Linear(d, 64).requires_grad_(False)
        self.head = torch.nn.Linear(64, c)
        self.scale = scale

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.encoder(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * self.head(self.embed(x))


def safecut(n_target: int, epochs: int, seed: int) -> None:
    from geode.ensembles import SafeCut

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    d, c = 16, 10
    mu = rng.normal(size=(c, d)) * 1.2
    shift = rng.normal(size=(c, d))
    shift *= 3.0 / np.linalg.norm(shift, axis=1, keepdims=True)
    mu_target_src, mu_partner_src = mu.copy(), mu.copy()
    mu_target_src[: c // 2] += shift[: c // 2]  # the target model's source displaces classes 0-4,
    mu_partner_src[c // 2 :] += shift[c // 2 :]  # the partner's displaces classes 5-9

    def sample(means: np.ndarray, n: int) -> tuple[torch.Tensor, np.ndarray]:
        y = rng.integers(0, c, n)
        return torch.as_tensor((means[y] + rng.normal(size=(n, d))).astype(np.float32)), y

    def fit(model: torch.nn.Module, x: torch.Tensor, y: np.ndarray) -> torch.nn.Module:
        opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
        yt = torch.as_tensor(y)
        for _ in range(30):
            for s in range(0, len(y), 128):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(x[s : s + 128]), yt[s : s + 128]).backward()
                opt.step()
        return model

    target = fit(TargetModel(d, c), *sample(mu_target_src, 2000))
    partner = fit(Partner(d, c), *sample(mu_partner_src, 2000))
    x, y = sample(mu, n_target)  # the unlabelled target domain (y only to score)
    print(f"\n3. SafeCut: adapting on {n_target} unlabelled target samples, {epochs} epochs")
    print(f"   {'gates':<26} {'target acc before':>18} {'after':>7} {'partner after':>14}")
    for name, reliability in (("SafeCut (cut reliability)", "cut"), ("confidence", "confidence"),
                              ("naive (both gates 1)", "naive")):  # fmt: skip
        method = SafeCut(epochs=epochs, k=min(50, n_target // 10), reliability=reliability, seed=seed)
        _, _, history = method.fit(target, partner, x, y=y)
        print(f"   {name:<26} {history[0]['acc_t']:>18.3f} {history[-1]['acc_t']:>7.3f} {history[-1]['acc_v']:>14.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the smallest size (seconds)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.time()
    size = dict(n=1500, steps=60, lams=(0.3,), n_target=400, epochs=2) if args.smoke else dict(
        n=6000, steps=600, lams=(0.3, 0.6, 1.0), n_target=3000, epochs=8)  # fmt: skip
    comparability(size["n"], args.seed)
    merging(size["steps"], size["lams"], args.seed)
    safecut(size["n_target"], size["epochs"], args.seed)
    print(f"\ndone in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
