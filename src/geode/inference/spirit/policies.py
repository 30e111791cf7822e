r"""Skip-configuration policies over a request stream: SPIRIT (speed-driven) and SWIFT-like (agreement).

A stream is cut into windows of ``window`` requests. Before each window a policy chooses a skip set; the
window is decoded with :func:`~geode.inference.spirit.decoding.self_speculative_decode`, and the policy
observes the window's realised speed (tokens per unit modeled cost) and its sequences.

* :class:`SwiftPolicy` (SWIFT-like, Xia et al. 2025): skip sets of fixed size ``round(ratio * |C|)`` over
  the skippable layers :math:`C`; during its optimisation phase it scores ``n_cand`` random candidates per
  window by *matchness*, the fraction of the window's generated tokens that the skipped model predicts in
  one parallel forward over the finished sequence, keeps the best, and stops optimising once matchness
  exceeds 0.95 or after ``max_iters`` candidates. Each candidate costs one skipped forward per request
  (charged to the window).
* :class:`SpiritPolicy` (inferred from the abstract): stage 1 chooses the number of skipped layers from the
  ratio grid by realised speed (one window per ratio, a random pattern each), stage 2 refines the pattern at
  the chosen ratio with ``refine`` random patterns scored by speed, then exploits. Shift-aware adaptation:
  when a window's speed falls below ``(1 - drop)`` times the speed of the profile's best configuration, the
  policy looks up the profile of the window's prompt signature (the first prompt token, our inferred
  "prompt statistics"); a known profile restores its best configuration, an unknown one restarts stage 1.

Length-aware normalisation is the identity here: the modeled cost per forward does not depend on context
length (no KV cache, tiny contexts), so windows are comparable as they are (a deliberate simplification).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from geode.core.validation import check_int, check_real
from geode.inference.spirit.decoding import _argmax_all, self_speculative_decode, skip_layers, step_cost

__all__ = ["SpiritPolicy", "StaticPolicy", "SwiftPolicy", "matchness", "run_stream"]


def matchness(model: Any, seq: Sequence[int], n_prompt: int, skip: Sequence[int]) -> float:
    """Fraction of generated positions of ``seq`` whose token the skipped model predicts (one forward).

    ``seq`` is the prompt (its first ``n_prompt`` tokens, at least one) followed by the generated tokens; with no
    generated token the matchness is 1. An empty ``skip`` is the full model (matchness 1 on its own greedy output).
    """
    import torch

    if len(seq) == 0:
        raise ValueError("seq must hold at least one token (the prompt)")
    n_prompt = check_int("n_prompt", n_prompt, low=1, high=len(seq))
    with skip_layers(model, skip):
        pred = _argmax_all(model, torch.tensor([list(seq)]))
    tgt = torch.tensor(list(seq[n_prompt:]))
    if len(tgt) == 0:
        return 1.0
    return float((pred[n_prompt - 1 : len(seq) - 1] == tgt).float().mean())


class StaticPolicy:
    """Always the same skip set (the oracle and the tuned static baseline); an empty ``skip`` never skips."""

    def __init__(self, skip: Sequence[int]) -> None:
        self.skip = tuple(int(i) for i in skip)

    def choose(self, signature: int) -> tuple[int, ...]:
        return self.skip

    def observe(self, skip: tuple[int, ...], speed: float, seqs: list[tuple[list[int], int]]) -> float:
        return 0.0


class SwiftPolicy:
    """SWIFT-like agreement-driven selection at a fixed skip ratio (see the module docstring)."""

    def __init__(
        self, model: Any, *, ratio: float = 0.45, n_cand: int = 2, max_iters: int = 40, seed: int = 0
    ) -> None:
        check_real("ratio", ratio, low=0.0, high=1.0)
        self.n_cand = check_int("n_cand", n_cand, low=1)
        self.max_iters = check_int("max_iters", max_iters, low=0)
        self.model = model
        self.cands = list(range(1, len(model.model.layers) - 1))
        self.size = int(round(ratio * len(self.cands)))
        self.rng = np.random.default_rng(seed)
        self.best = tuple(sorted(self.rng.choice(self.cands, self.size, replace=False).tolist()))
        self.best_score = -1.0
        self.iters = 0

    def choose(self, signature: int) -> tuple[int, ...]:
        return self.best

    def _score(self, skip: tuple[int, ...], seqs: list[tuple[list[int], int]]) -> float:
        return float(np.mean([matchness(self.model, s, p, skip) for s, p in seqs]))

    def observe(self, skip: tuple[int, ...], speed: float, seqs: list[tuple[list[int], int]]) -> float:
        if self.best_score > 0.95 or self.iters >= self.max_iters:
            return 0.0
        n_layers = len(self.model.model.layers)
        extra = 0.0
        self.best_score = self._score(self.best, seqs)  # re-scored on the fresh window (one forward each)
        extra += len(seqs) * step_cost(n_layers, len(self.best))
        for _ in range(self.n_cand):
            c = tuple(sorted(self.rng.choice(self.cands, self.size, replace=False).tolist()))
            sc = self._score(c, seqs)
            extra += len(seqs) * step_cost(n_layers, len(c))
            self.iters += 1
            if sc > self.best_score:
                self.best, self.best_score = c, sc
        return extra


class SpiritPolicy:
    """SPIRIT-like speed-driven selection: ratio first, then pattern, with shift-aware profiles."""

    def __init__(
        self,
        model: Any,
        *,
        ratios: Sequence[float] = (0.2, 0.3, 0.4, 0.5, 0.6),
        refine: int = 2,
        drop: float = 0.2,
        shift_aware: bool = True,
        blind: bool = False,
        seed: int = 0,
    ) -> None:
        self.refine = check_int("refine", refine, low=0)
        self.drop = check_real("drop", drop, low=0.0, high=1.0)
        self.cands = list(range(1, len(model.model.layers) - 1))
        if isinstance(ratios, (str, bytes)) or not hasattr(ratios, "__iter__"):
            raise TypeError(f"ratios must be a sequence of skip ratios in [0, 1]; got {type(ratios).__name__}")
        for i, r in enumerate(ratios):
            check_real(f"ratios[{i}]", r, low=0.0, high=1.0)
        sizes = sorted({max(1, int(round(r * len(self.cands)))) for r in ratios})
        if not sizes:
            raise ValueError("ratios: must not be empty")
        self.sizes = sizes
        self.shift_aware = shift_aware
        self.blind = blind
        self.rng = np.random.default_rng(seed)
        self.profiles: dict[int, tuple[tuple[int, ...], float]] = {}
        self._restart(None)

    def _pattern(self, size: int) -> tuple[int, ...]:
        return tuple(sorted(self.rng.choice(self.cands, size, replace=False).tolist()))

    def _restart(self, signature: int | None) -> None:
        self.sig = signature
        self.queue = [self._pattern(s) for s in self.sizes]
        self.stage = 1
        self.scores: dict[tuple[int, ...], float] = {}
        self.best: tuple[int, ...] | None = None
        self.best_speed = 0.0
        self.ref = None  # reference speed for shift detection (None while exploring)

    def choose(self, signature: int) -> tuple[int, ...]:
        if self.sig is None:
            self.sig = signature
        self.cur_sig = signature
        if self.queue:
            return self.queue[0]
        assert self.best is not None
        return self.best

    def observe(self, skip: tuple[int, ...], speed: float, seqs: list[tuple[list[int], int]]) -> float:
        if self.blind:
            speed = float(self.rng.uniform(0.0, 2.0))
        if self.queue:
            self.queue.pop(0)
            self.scores[skip] = speed
            if speed > self.best_speed:
                self.best, self.best_speed = skip, speed
            if not self.queue and self.stage == 1:
                self.stage = 2
                self.queue = [self._pattern(len(self.best)) for _ in range(self.refine)]
            if not self.queue:
                self.ref = self.best_speed
                self.profiles[self.sig] = (self.best, self.best_speed)
            return 0.0
        # exploitation: running reference and shift detection
        if self.shift_aware and self.ref is not None and speed < (1.0 - self.drop) * self.ref:
            sig = self.cur_sig
            if sig in self.profiles and sig != self.sig:
                self.sig = sig
                self.best, self.ref = self.profiles[sig]
                self.best_speed = self.ref
            else:
                self._restart(sig)
            return 0.0
        self.ref = 0.8 * self.ref + 0.2 * speed if self.ref is not None else speed
        return 0.0


def run_stream(
    model: Any,
    requests: Sequence[tuple[list[int], int]],
    policy: Any,
    *,
    window: int = 2,
    k: int = 4,
    max_new: int = 16,
    eos: int | None = None,
    overhead: float = 0.1,
) -> dict[str, Any]:
    """Decode ``requests`` (``(prompt, task)`` pairs) window by window with ``policy``.

    Returns per-window speeds, configurations and tasks, the outputs, and the stream's tokens per cost.
    """
    window = check_int("window", window, low=1)
    if len(requests) == 0:
        raise ValueError("requests must hold at least one (prompt, task) pair")
    speeds, skips, tasks, outputs = [], [], [], []
    tot_tokens, tot_cost = 0, 0.0
    for w0 in range(0, len(requests), window):
        chunk = requests[w0 : w0 + window]
        skip = tuple(policy.choose(int(chunk[0][0][0])))
        tokens, cost, seqs = 0, 0.0, []
        for prompt, _ in chunk:
            out, st = self_speculative_decode(model, prompt, max_new, skip, k=k, eos=eos, overhead=overhead)
            outputs.append(out)
            tokens += st.tokens
            cost += st.cost
            seqs.append((list(prompt) + out, len(prompt)))
        speed = tokens / cost
        cost += policy.observe(skip, speed, seqs)
        speeds.append(tokens / cost)
        skips.append(skip)
        tasks.append(chunk[0][1])
        tot_tokens += tokens
        tot_cost += cost
    return {
        "speeds": np.asarray(speeds),
        "skips": skips,
        "tasks": tasks,
        "outputs": outputs,
        "speed": tot_tokens / tot_cost,
    }
