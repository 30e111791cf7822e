"""Claim check of STAC-R: >= 7% lower peak memory, mean weight-gradient cosine >= 0.98, loss within 1.5%.

Thresholds (fixed by the issue, before any run): ``reproduced`` if peak memory drops >= 7% with mean
gradient cosine >= 0.98 and final loss within 1.5% of the baseline on a small GPT; ``partial`` if the
memory and cosine conditions hold.

Measured on CPU (``torch.cuda`` peaks do not exist here): the peak of a training step is modelled as
parameters + gradients + Adam's two moments (4 x the parameter bytes) + the bytes autograd saves for the
backward pass over one forward (unique storages, counted with ``saved_tensors_hooks``; they are all live at
the end of the forward, the step's peak). Deterministic; the ``full`` mode is meant for a GPU where
``torch.cuda.max_memory_allocated`` would replace the model.

Added before the first run (the protocol needs them; the issue names none):

- *aggregation*: memory reduction is deterministic given the shapes (``all``); the gradient cosine (mean
  over wrapped layers and over checkpoints every ``check_every`` steps of the STAC-R run) must hold in every
  seed (``all``); the loss ratio (test loss of STAC-R over the baseline's, each at its own tuned learning
  rate) in every seed (``all``);
- *validity floor*: the baseline learned (test loss <= 0.8 x the loss at initialisation, every seed);
- *negative controls*: memory: STAC-R at full rank with no residual (``rank = d``: the memory-increasing
  regime); cosine: the untracked-subspace control (a fresh random basis each step, same rank and residual);
  loss: the untrained model's test loss over the baseline's.

Equal tuning: the baseline and STAC-R each get the learning-rate grid {1e-3, 3e-3, 1e-2} (AdamW, selected
on validation loss), with one extension past an edge (``extend=1``).

Reported beside (not judged): the iso-byte per-step SVD control's cosine (the strongest reasonable
alternative: the exact top singular subspace of every batch at the same stored bytes, no residual), the
Saved-Surface Predictor SSP (an upper bound the realised reduction must respect), and the step time.

Quick-mode verdict (3 seeds, first run): **not reproduced**, unstable (seeds 0 and 1 not reproduced, seed 2
reproduced). Peak memory -10.1% in every seed (SSP bound 15.8%; saved activations -14.2%; the full-rank
control -0.6%, so the memory threshold discriminates); loss ratio 1.0045, 1.0029, 1.0081 (within 1.5%);
the mean weight-gradient cosine 0.9739, 0.9786, 0.9801 misses 0.98 in two seeds (untracked control
0.556-0.572 fails it). Unlike the paper (SVD 0.924 < STAC-R 0.981) the iso-byte per-step SVD control keeps
a higher cosine here (0.987-0.992) than the tracked basis: one subspace iteration per step lags the exact
per-batch subspace at this scale. Both methods selected lr = 1e-3 in every seed; a first run without
extension had it on the grid's lower edge, the final run (``extend=1``) tried 3.3e-4 and kept 1e-3 (an
interior choice now), with the same numbers.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **not
reproduced** (the v2 harness read not reproduced on the same runs). No idea ablation or learned-arm reference is
declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from geode.claims import Outcome, Threshold, register, tune

if TYPE_CHECKING:
    import torch

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        model=dict(d_model=64, n_layers=1, n_heads=2),
        seq=32,
        batch=4,
        steps=10,
        check_every=5,
        rank=16,
        grid=dict(lr=[3e-3]),
        extend=0,
        n_eval=8,
    ),
    "quick": dict(
        model=dict(d_model=128, n_layers=2, n_heads=4),
        seq=64,
        batch=8,
        steps=120,
        check_every=30,
        rank=32,
        grid=dict(lr=[1e-3, 3e-3, 1e-2]),
        extend=1,
        n_eval=64,
    ),
    "full": dict(
        model=dict(d_model=512, n_layers=8, n_heads=8),
        seq=256,
        batch=32,
        steps=3000,
        check_every=250,
        rank=64,
        grid=dict(lr=[3e-4, 1e-3, 3e-3]),
        extend=1,
        n_eval=256,
    ),
}
RESIDUAL_FRAC = 0.01
UPDATE_EVERY = 1  # one warm-started subspace iteration per step


def _data(seq: int, n_eval: int) -> tuple[np.ndarray, torch.Tensor, torch.Tensor, int]:
    from geode.compression.charlm import eval_windows, text_splits
    from geode.data import pydoc_char_ids

    ids, vocab = pydoc_char_ids()
    train, val, test = text_splits(ids)
    return train, eval_windows(val, seq, n_eval), eval_windows(test, seq, n_eval), vocab


def _loss(model: Any, windows: torch.Tensor) -> float:
    import torch

    with torch.no_grad():
        model.eval()
        out = float(
            np.mean(
                [
                    float(model(input_ids=windows[i : i + 16], labels=windows[i : i + 16]).loss)
                    for i in range(0, len(windows), 16)
                ]
            )
        )
        model.train()
        return out


def _grad_cos(model: Any, x: torch.Tensor, modes: dict[str, Any]) -> dict[str, float]:
    """Mean over wrapped layers of cos(exact dW, compressed dW) on batch ``x`` for each compressor mode."""
    import torch

    from geode.compression.stac_r.stacr import StacrLinear

    wrapped = [m for m in model.modules() if isinstance(m, StacrLinear)]

    def grads(enabled: bool) -> list[torch.Tensor]:
        for m in wrapped:
            m.enabled = enabled
        model.zero_grad(set_to_none=True)
        model(input_ids=x, labels=x).loss.backward()
        return [m.layer.weight.grad.detach().clone().flatten() for m in wrapped]

    exact = grads(False)
    out = {}
    for name, make in modes.items():
        saved = [m.compressor for m in wrapped]
        for m in wrapped:
            m.compressor = make(m.compressor)
        g = grads(True)
        for m, c in zip(wrapped, saved):
            m.compressor = c
        out[name] = float(
            np.mean([float(torch.nn.functional.cosine_similarity(a, b, dim=0)) for a, b in zip(exact, g)])
        )
    for m in wrapped:
        m.enabled = True
    model.zero_grad(set_to_none=True)
    return out


def _peak_bytes(model: Any, x: torch.Tensor) -> tuple[int, int]:
    """(4 x parameter bytes + saved-activation bytes of one forward, saved bytes)."""
    from geode.compression.stac_r.stacr import saved_bytes

    params = list(model.parameters())
    pbytes = sum(p.numel() * p.element_size() for p in params)
    with saved_bytes(params) as sb:
        loss = model(input_ids=x, labels=x).loss
    del loss
    return 4 * pbytes + sb["bytes"], sb["bytes"]


def _replaceable_bytes(model: Any, x: torch.Tensor, names: list[str]) -> int:
    """Bytes of the wrapped layers' inputs in the baseline (A_C^+: what compression can replace)."""
    seen: dict[int, int] = {}
    hooks = []
    for n in names:

        def pre(_m: Any, inp: tuple[torch.Tensor, ...]) -> None:
            st = inp[0].untyped_storage()
            seen[st.data_ptr()] = st.nbytes()

        hooks.append(model.get_submodule(n).register_forward_pre_hook(pre))
    try:
        model(input_ids=x, labels=x)
    finally:
        for h in hooks:
            h.remove()
    return sum(seen.values())


@register(
    "stac-r",
    claim=(
        "Storing the saved inputs of linear layers as tracked low-rank coefficients plus a sparse int8 residual, "
        "with weight gradients contracted from the factors, lowers peak training memory by 7-12% while keeping "
        "the mean weight-gradient cosine >= 0.98 and the loss within 1.5% of the baseline."
    ),
    paper_figure=(
        "peak memory -7.2 to -12.4% (GPT-2 M/L, Pythia-1.4B), perplexity within 1.5%, mean grad cosine 0.9813 "
        "vs iso-byte SVD 0.9236 vs untracked subspace 0.6949"
    ),
    baselines=("uncompressed training", "untracked subspace (control)", "iso-byte per-step SVD"),
    thresholds=(
        Threshold(
            "memory",
            "peak_reduction",
            ">=",
            0.07,
            "peak memory drops >= 7% (every seed)",
            agg="all",
            control="fullrank_peak_reduction",
        ),
        Threshold(
            "cosine",
            "mean_grad_cos",
            ">=",
            0.98,
            "mean weight-gradient cosine >= 0.98 (every seed)",
            agg="all",
            control="untracked_grad_cos",
            arms=("stacr",),
        ),
        Threshold(
            "loss",
            "loss_ratio",
            "<=",
            1.015,
            "final test loss within 1.5% of the baseline's (every seed)",
            agg="all",
            control="untrained_loss_ratio",
        ),
    ),
    floors=(
        Threshold(
            "baseline_learns",
            "baseline_learned_ratio",
            "<=",
            0.8,
            "floor: the baseline's test loss is <= 0.8 x the loss at initialisation (every seed)",
            agg="all",
            arms=("baseline",),
        ),
    ),
    reproduced="memory and cosine and loss",
    partial="memory and cosine",
    method="stacr",
    tuned=("stacr", "baseline"),
    key_metric="mean_grad_cos",
    timing_metrics=("step_time_ratio",),
)
def run(mode: str, seed: int) -> Outcome:
    import torch

    from geode.compression.stac_r.stacr import ActivationCompressor, stacr_unwrap, stacr_wrap
    from geode.models import build_tiny_lm

    cfg = _MODES[mode]
    t0 = time.perf_counter()
    train, val, test, vocab = _data(cfg["seq"], cfg["n_eval"])
    seq, batch, steps = cfg["seq"], cfg["batch"], cfg["steps"]

    def fresh() -> Any:
        return build_tiny_lm(vocab, arch="gpt2", max_positions=seq, seed=seed, **cfg["model"])

    def batch_at(rng: np.random.Generator) -> torch.Tensor:
        s = rng.integers(0, len(train) - seq, size=batch)
        return torch.from_numpy(np.stack([train[i : i + seq] for i in s]))

    init_test = _loss(fresh(), test)

    def fit(method: str, params: dict[str, Any]) -> tuple[float, Any]:
        model = fresh()
        if method == "stacr":
            stacr_wrap(model, rank=cfg["rank"], residual_frac=RESIDUAL_FRAC, update_every=UPDATE_EVERY, seed=seed)
        opt = torch.optim.AdamW(model.parameters(), lr=params["lr"], weight_decay=0.0)
        rng = np.random.default_rng(seed + 5)
        cos: list[dict[str, float]] = []
        tt = 0.0
        for step in range(steps):
            x = batch_at(rng)
            if method == "stacr" and step % cfg["check_every"] == cfg["check_every"] - 1:
                cos.append(_check(model, x, cfg["rank"]))
            ts = time.perf_counter()
            loss = model(input_ids=x, labels=x).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            tt += time.perf_counter() - ts
            if not math.isfinite(float(loss.detach())):
                return math.inf, (model, cos, tt / (step + 1))
        v = _loss(model, val)
        return (v if math.isfinite(v) else math.inf), (model, cos, tt / steps)

    def _check(model: Any, x: torch.Tensor, rank: int) -> dict[str, float]:
        n_tok = x.numel()

        def untracked(c: ActivationCompressor) -> ActivationCompressor:
            return ActivationCompressor(c.rank, c.residual_frac, mode="untracked", seed=seed + c.calls)

        def iso_svd(c: ActivationCompressor) -> ActivationCompressor:
            d = c.basis.shape[0]
            nnz = math.ceil(c.residual_frac * n_tok * d)
            byts = 4 * (n_tok + d) * c.rank + 5 * nnz + 4
            return ActivationCompressor(max(1, min(d, byts // (4 * (n_tok + d)))), 0.0, mode="svd")

        def tracked(c: ActivationCompressor) -> ActivationCompressor:
            c.track = False  # measure with the current basis, without advancing the tracker
            return c

        out = _grad_cos(model, x, {"stacr": tracked, "untracked": untracked, "svd": iso_svd})
        for m in model.modules():
            if hasattr(m, "compressor"):
                m.compressor.track = True
        return out

    res = tune(
        fit,
        {"baseline": cfg["grid"], "stacr": cfg["grid"]},
        maximize=False,
        extend=cfg["extend"],
        limits={"lr": (0.0, 1.0)},
    )
    base_model, _, base_t = res.payload("baseline")
    st_model, cos, st_t = res.payload("stacr")
    base_test, st_test = _loss(base_model, test), _loss(st_model, test)
    # memory: one forward of a training batch through each trained model (shapes decide the bytes)
    xb = batch_at(np.random.default_rng(seed + 99))
    p_base, a_base = _peak_bytes(base_model, xb)
    p_st, a_st = _peak_bytes(st_model, xb)
    wrapped = [n[: -len(".layer")] for n, _ in st_model.named_modules() if n.endswith(".layer")]
    replaceable = _replaceable_bytes(base_model, xb, wrapped)
    full = fresh()
    stacr_wrap(full, rank=cfg["model"]["d_model"], residual_frac=0.0, seed=seed)
    p_full, _ = _peak_bytes(full, xb)
    stacr_unwrap(full)
    mean = {k: float(np.mean([c[k] for c in cos])) if cos else float("nan") for k in ("stacr", "untracked", "svd")}
    metrics = {
        "peak_reduction": 1.0 - p_st / p_base,
        "fullrank_peak_reduction": 1.0 - p_full / p_base,
        "ssp": replaceable / p_base,
        "saved_activation_reduction": 1.0 - a_st / a_base,
        "baseline_peak_mib": p_base / 2**20,
        "stacr_peak_mib": p_st / 2**20,
        "mean_grad_cos": mean["stacr"],
        "min_grad_cos_checkpoint": float(min(c["stacr"] for c in cos)) if cos else float("nan"),
        "untracked_grad_cos": mean["untracked"],
        "iso_svd_grad_cos": mean["svd"],
        "baseline_test_loss": base_test,
        "stacr_test_loss": st_test,
        "init_test_loss": init_test,
        "loss_ratio": st_test / base_test,
        "untrained_loss_ratio": init_test / base_test,
        "baseline_learned_ratio": base_test / init_test,
        "step_time_ratio": st_t / base_t,
    }
    table = [
        {
            "method": "baseline (uncompressed)",
            "lr": res.params("baseline")["lr"],
            "test loss": base_test,
            "peak MiB": p_base / 2**20,
            "grad cos": 1.0,
        },
        {
            "method": f"STAC-R (rank {cfg['rank']}, residual {RESIDUAL_FRAC:.0%} int8)",
            "lr": res.params("stacr")["lr"],
            "test loss": st_test,
            "peak MiB": p_st / 2**20,
            "grad cos": mean["stacr"],
        },
        {
            "method": "untracked subspace (control)",
            "lr": "",
            "test loss": "",
            "peak MiB": p_st / 2**20,
            "grad cos": mean["untracked"],
        },
        {"method": "iso-byte per-step SVD", "lr": "", "test loss": "", "peak MiB": "", "grad cos": mean["svd"]},
        {
            "method": "full-rank wrap, no residual (control)",
            "lr": "",
            "test loss": "",
            "peak MiB": p_full / 2**20,
            "grad cos": "",
        },
    ]
    summary = (
        f"peak -{metrics['peak_reduction']:.1%} (SSP bound {metrics['ssp']:.1%}), mean grad cos "
        f"{mean['stacr']:.4f} (untracked {mean['untracked']:.4f}, iso-byte SVD {mean['svd']:.4f}), loss ratio "
        f"{metrics['loss_ratio']:.4f}"
    )
    notes = [
        *res.notes(),
        f"Model: char-level GPT-2 ({cfg['model']}), batch {batch} x {seq} tokens, {steps} AdamW steps; rank "
        f"{cfg['rank']}, residual {RESIDUAL_FRAC:.0%}, basis update every {UPDATE_EVERY} steps; every linear "
        "layer but the LM head wrapped.",
        f"Peak model: 4 x parameter bytes + saved activations; saved activations {a_base / 2**20:.1f} MiB -> "
        f"{a_st / 2**20:.1f} MiB; SSP {metrics['ssp']:.3f} >= realised {metrics['peak_reduction']:.3f}.",
        f"Step time STAC-R / baseline: {metrics['step_time_ratio']:.2f} (CPU, not judged).",
        f"Gradient cosines at {len(cos)} checkpoints: " + ", ".join(f"{c['stacr']:.3f}" for c in cos) + ".",
        f"Wall time of this seed: {time.perf_counter() - t0:.0f} s.",
    ]
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=res.table())
