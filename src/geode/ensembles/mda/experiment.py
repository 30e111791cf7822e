"""The test bed of the ``mda`` claim: K heterogeneous tasks fine-tuned from one small pre-trained backbone.

Data: scikit-learn's ``load_digits`` (8x8, bundled, offline), split once per seed into train / unlabeled
adaptation / labelled validation / test. The backbone (MLP 64-128-64, ReLU) is pre-trained on the plain
10-class task; task ``k`` applies an image transform and a label map, and its model is the backbone plus a
new linear head, fine-tuned end to end. Tasks (the first ``K`` are used):

====  ============  ==============================
k     transform     labels
====  ============  ==============================
0     identity      digit (10 classes)
1     rotate 90     digit mod 3
2     invert        parity
3     flip left-right  digit >= 5
4     rotate 180    digit mod 4
5     transpose     digit (10 classes)
6     rotate 270    digit mod 5
7     flip up-down  digit in {0, 6, 8, 9}
====  ============  ==============================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TASKS", "Bed", "make_bed", "normalised_accuracy"]

TASKS: tuple[tuple[str, str], ...] = (
    ("identity", "digit"),
    ("rot90", "mod3"),
    ("invert", "parity"),
    ("fliplr", "ge5"),
    ("rot180", "mod4"),
    ("transpose", "digit"),
    ("rot270", "mod5"),
    ("flipud", "loops"),
)


def _transform(x: np.ndarray, name: str) -> np.ndarray:
    img = x.reshape(-1, 8, 8)
    out = {
        "identity": img,
        "rot90": np.rot90(img, 1, axes=(1, 2)),
        "rot180": np.rot90(img, 2, axes=(1, 2)),
        "rot270": np.rot90(img, 3, axes=(1, 2)),
        "invert": 16.0 - img,
        "fliplr": img[:, :, ::-1],
        "flipud": img[:, ::-1, :],
        "transpose": np.transpose(img, (0, 2, 1)),
    }[name]
    return np.ascontiguousarray(out.reshape(-1, 64)) / 16.0


def _labels(y: np.ndarray, name: str) -> tuple[np.ndarray, int]:
    if name == "digit":
        return y, 10
    if name.startswith("mod"):
        m = int(name[3:])
        return y % m, m
    if name == "parity":
        return y % 2, 2
    if name == "ge5":
        return (y >= 5).astype(int), 2
    if name == "loops":
        return np.isin(y, (0, 6, 8, 9)).astype(int), 2
    raise ValueError(name)


@dataclass
class Bed:
    """The pre-trained backbone, the fine-tuned backbones and heads, and each task's data splits."""

    base: Any
    finetuned: list[Any]
    heads: list[Any]
    unlabeled: list[Any]  # per task, inputs of the adaptation split (labels never used)
    val: list[tuple[Any, Any]]
    test: list[tuple[Any, Any]]
    individual_val: list[float] = field(default_factory=list)
    individual_test: list[float] = field(default_factory=list)
    pretrain_test: float = 0.0


def backbone(hidden: int = 128, feat: int = 64) -> Any:
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, feat), torch.nn.ReLU()
    )


def accuracy(model: Any, head: Any, x: Any, y: Any, rotation: Any = None) -> float:
    import torch

    with torch.no_grad():
        f = model(x)
        if rotation is not None:
            f = f @ rotation.T
        return float((head(f).argmax(-1) == y).float().mean())


def _train(model: Any, head: Any, x: Any, y: Any, steps: int, lr: float, seed: int, batch: int = 128) -> None:
    import torch

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam([*model.parameters(), *head.parameters()], lr=lr)
    for _ in range(steps):
        idx = torch.randint(0, len(x), (batch,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(head(model(x[idx])), y[idx]).backward()
        opt.step()


def make_bed(
    k: int, *, seed: int, pretrain_steps: int = 400, finetune_steps: int = 300, lr: float = 1e-3, n_train: int = 900
) -> Bed:
    """Pre-train the backbone, fine-tune ``k`` task models; everything from ``seed``."""
    import copy

    import torch
    from sklearn.datasets import load_digits

    if not 1 <= k <= len(TASKS):
        raise ValueError(f"k must be in 1..{len(TASKS)}, got {k}")
    xall, yall = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(yall))
    rest = len(yall) - n_train
    n_unl, n_val = rest // 3, rest // 3
    parts = np.split(perm, [n_train, n_train + n_unl, n_train + n_unl + n_val])
    torch.manual_seed(seed)
    base = backbone()
    head0 = torch.nn.Linear(64, 10)
    xt = torch.tensor(_transform(xall[parts[0]], "identity"), dtype=torch.float32)
    yt = torch.tensor(yall[parts[0]])
    _train(base, head0, xt, yt, pretrain_steps, 3e-3, seed)
    xte = torch.tensor(_transform(xall[parts[3]], "identity"), dtype=torch.float32)
    pre = accuracy(base, head0, xte, torch.tensor(yall[parts[3]]))
    bed = Bed(base=base, finetuned=[], heads=[], unlabeled=[], val=[], test=[], pretrain_test=pre)
    for t in range(k):
        tr, lab = TASKS[t]
        ys, c = _labels(yall, lab)
        xs = [torch.tensor(_transform(xall[p], tr), dtype=torch.float32) for p in parts]
        ysp = [torch.tensor(ys[p]) for p in parts]
        m = copy.deepcopy(base)
        torch.manual_seed(seed * 100 + t + 1)
        h = torch.nn.Linear(64, c)
        _train(m, h, xs[0], ysp[0], finetune_steps, lr, seed * 100 + t)
        bed.finetuned.append(m)
        bed.heads.append(h)
        bed.unlabeled.append(xs[1])
        bed.val.append((xs[2], ysp[2]))
        bed.test.append((xs[3], ysp[3]))
        bed.individual_val.append(accuracy(m, h, xs[2], ysp[2]))
        bed.individual_test.append(accuracy(m, h, xs[3], ysp[3]))
    return bed


def normalised_accuracy(bed: Bed, merged: Any, split: str = "test", rotations: Any = None) -> float:
    """Mean over tasks of merged accuracy / the task's own fine-tuned accuracy (arithmetic, as the paper)."""
    data = bed.test if split == "test" else bed.val
    ind = bed.individual_test if split == "test" else bed.individual_val
    accs = [
        accuracy(merged, bed.heads[t], x, y, None if rotations is None else rotations[t])
        for t, (x, y) in enumerate(data)
    ]
    return float(np.mean([a / max(i, 1e-9) for a, i in zip(accs, ind, strict=True)]))
