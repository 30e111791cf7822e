r"""Experiment driver: small students trained on fresh, repeated and paraphrased data of a teacher task.

A stand-in for LM pretraining that a CPU can run in seconds. The *task* is teacher-student regression:
:math:`x \sim \mathcal N(0, I_d)`, :math:`y = f(x_{1..k}) + \varepsilon` with a random tanh teacher :math:`f`
that reads only the first ``k`` coordinates (the "meaning"; the other ``d - k`` are surface form) and label noise
:math:`\varepsilon \sim \mathcal N(0, \sigma^2)`
fixed per sample (so the irreducible test loss is :math:`\sigma^2`). Students are tanh MLPs
``d -> width -> 1`` (:math:`N = (d + 2)\,\mathrm{width} + 1` parameters) trained by Adam (numpy) with a cosine
schedule on *one pass* over a stream of :math:`D` samples (:math:`D/\mathrm{batch}` steps), so :math:`D`
plays the role of training tokens. Data strategies with :math:`U` unique samples:

- ``fresh``: :math:`D` new samples (:math:`U = D`);
- ``repeat``: the :math:`U` samples for :math:`D/U` epochs, reshuffled every epoch (multi-epoch repetition);
- ``paraphrase``: the first epoch as is, every later epoch with the surface coordinates
  :math:`x_{k+1..d}` redrawn and the same meaning and label (a label-exact rewrite: the teacher ignores
  them, the student is not told so and can memorise them under repetition);
- ``replicate``: repetition again with another shuffling seed (the noise floor of a strategy comparison).

Inferred: the whole stand-in (the paper trains 14M-600M-parameter LMs on Dolma-3 with LLM paraphrases).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["TeacherTask", "make_stream", "train_student"]

STRATEGIES = ("fresh", "repeat", "paraphrase", "replicate")


@dataclass
class TeacherTask:
    """A teacher :math:`y = w_2^\\top \\tanh(W_1 x_{1..k} + b_1) + \\varepsilon`, unit variance, blind to ``x[k:]``."""

    d: int = 8
    k: int = 4
    width: int = 32
    noise: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.k < self.d or self.width < 1 or not self.noise >= 0:
            raise ValueError(
                f"need 1 <= k < d, width >= 1, noise >= 0; got {self.k}, {self.d}, {self.width}, {self.noise}"
            )
        g = np.random.default_rng(self.seed)
        self.W1 = g.normal(0, 1.5 / math.sqrt(self.k), (self.k, self.width))
        self.b1 = g.normal(0, 0.5, self.width)
        self.w2 = g.normal(0, 1 / math.sqrt(self.width), self.width)
        z = self._f(g.normal(size=(4096, self.d)))
        self.shift, self.scale = float(z.mean()), float(z.std())

    def _f(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(x[:, : self.k] @ self.W1 + self.b1) @ self.w2

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` samples ``(x, y)`` with noisy labels."""
        x = rng.normal(size=(n, self.d))
        y = (self._f(x) - self.shift) / self.scale + self.noise * rng.normal(size=n)
        return x.astype(np.float32), y.astype(np.float32)


def make_stream(
    task: TeacherTask,
    strategy: str,
    D: int,
    U: int,
    rng: np.random.Generator,
    base: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The training stream of ``D`` samples for one strategy (``U`` unique samples; ignored for ``fresh``).

    ``base`` gives the ``U`` unique samples (else they are drawn from ``rng``), so that every strategy and
    every ``D`` of one experiment can expand the same corpus.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}; got {strategy!r}")
    if D < 1 or U < 1:
        raise ValueError(f"D and U must be >= 1; got {D}, {U}")
    if strategy == "fresh":
        return task.sample(D, rng)
    if D % U:
        raise ValueError(f"D must be a multiple of U for {strategy!r}; got D={D}, U={U}")
    x, y = task.sample(U, rng) if base is None else base
    if len(x) != U:
        raise ValueError(f"base must hold U={U} samples; got {len(x)}")
    xs, ys = [], []
    for epoch in range(D // U):
        order = rng.permutation(U)
        xe = x[order]
        if strategy == "paraphrase" and epoch > 0:
            xe = xe.copy()
            xe[:, task.k :] = rng.normal(size=(U, task.d - task.k))
        xs.append(xe)
        ys.append(y[order])
    return np.concatenate(xs), np.concatenate(ys)


def train_student(
    width: int,
    x: np.ndarray,
    y: np.ndarray,
    evals: dict[str, tuple[np.ndarray, np.ndarray]],
    *,
    lr: float,
    batch: int = 4,
    seed: int = 0,
) -> dict[str, float]:
    """Train a tanh MLP ``d -> width -> 1`` on one pass over ``(x, y)``; return the MSE on each eval set.

    Plain numpy (a tiny network's step is dominated by framework overhead otherwise): Glorot-normal
    weights, zero biases, squared error, Adam (betas 0.9, 0.999, eps 1e-8) with a cosine decay to 0 over
    ``len(x) // batch`` steps (at least one). A non-finite loss is reported as ``inf``.
    """
    if width < 1 or batch < 1 or not lr > 0:
        raise ValueError(f"width, batch must be >= 1 and lr > 0; got {width}, {batch}, {lr}")
    g = np.random.default_rng(seed)
    d = x.shape[1]
    params = [
        g.normal(0, math.sqrt(2 / (d + width)), (d, width)),
        np.zeros(width),
        g.normal(0, math.sqrt(2 / (width + 1)), width),
        np.zeros(()),
    ]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    steps = max(len(x) // batch, 1)
    b1, b2, eps = 0.9, 0.999, 1e-8
    with np.errstate(all="ignore"):
        for t in range(steps):
            xb = x[t * batch : (t + 1) * batch].astype(float)
            yb = y[t * batch : (t + 1) * batch].astype(float)
            W1, c1, w2, c2 = params
            h = np.tanh(xb @ W1 + c1)
            r = h @ w2 + c2 - yb  # d(mean r^2)/d pred = 2 r / n
            gp = 2 * r / len(yb)
            gh = np.outer(gp, w2) * (1 - h * h)
            grads = [xb.T @ gh, gh.sum(0), h.T @ gp, gp.sum()]
            a = lr * 0.5 * (1 + math.cos(math.pi * t / steps))
            c_1, c_2 = 1 - b1 ** (t + 1), 1 - b2 ** (t + 1)
            for i, gr in enumerate(grads):
                m[i] = b1 * m[i] + (1 - b1) * gr
                v[i] = b2 * v[i] + (1 - b2) * gr * gr
                params[i] = params[i] - a * (m[i] / c_1) / (np.sqrt(v[i] / c_2) + eps)
        W1, c1, w2, c2 = params
        out = {}
        for name, (xe, ye) in evals.items():
            mse = float(np.mean((np.tanh(xe @ W1 + c1) @ w2 + c2 - ye) ** 2))
            out[name] = mse if math.isfinite(mse) else math.inf
    return out


def n_params(width: int, d: int = 8) -> int:
    """Parameters of the student ``d -> width -> 1``."""
    return (d + 2) * width + 1
