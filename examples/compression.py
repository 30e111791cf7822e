"""Compress two small models the script trains itself: weights to ~3-4 bits, saved activations, per-step ranks.

What it shows, on data the script makes itself:

1. **A small MoE language model** (``geode.compression.MoELM``: 2 blocks, 4 experts, top-2) trained with AdamW
   on text from a random second-order Markov source (so the best possible perplexity is known):

   - *weight-only quantisation at about 3 bits*: SPHQuant (``sphquant_model``, 3.25 bits per weight) against
     round-to-nearest and GPTQ at 3 bits (``PackedLinear``, 3.5 bits with their group scales and zeros), every
     linear layer but the router and the LM head, calibrated on the same windows;
   - *MXFP4 with load-aware compensation and routing replay* (moe-quant): plain MXFP4 experts, low-rank
     compensation with a uniform rank per expert, the same rank budget spent by expert load
     (``allocate_ranks``), then quantisation-aware fine-tuning of the adapters with the float model's routes
     replayed (``routing_replay_qat``) against plain QAT;
   - *STAC-R*: fine-tuning with the saved inputs of the linear layers compressed to a tracked rank-16 basis plus
     a 1% int8 residual (``stacr_wrap``): saved bytes, the weight-gradient cosine against the exact gradient,
     and the loss after the same steps.

2. **A diffusion denoiser** (``DigitDenoiser``) trained on 8x8 images of random bars and blobs, sampled with
   25 DDIM steps at 70% of the sampler's MACs (30% fewer): uniform truncation against SARA-DP (ranks per step
   and block by dynamic programming on the measured errors, ``lrae_table`` + ``sara_dp``; the paper's error of
   each step's output, and the error of the final sample, which includes its propagation) and SARA-Online
   (ranks from the previous output's spectrum, ``SaraOnline``). Quality: the Frechet distance of PCA features
   to held-out images, and the distance to the dense sampler's images from the same noises.

Run::

    python examples/compression.py           # about a minute on one core
    python examples/compression.py --smoke   # the smallest size, a few seconds

Needs: nothing beyond geode's core install (torch, numpy); no asset, no network.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from geode.compression import (
    DigitDenoiser,
    MoELM,
    PackedLinear,
    SaraOnline,
    allocate_ranks,
    apply_sara,
    calibration_hessians,
    ddim_sample,
    ddpm_alphas,
    expert_error_spectra,
    expert_loads,
    linear_names,
    load_weighted_error,
    lrae_table,
    mxfp4_moe,
    record_routes,
    replace_linears,
    routing_replay_qat,
    sara_dp,
    saved_bytes,
    sphquant_model,
    stacr_wrap,
    topk_agreement,
)

SIZES = {
    "smoke": dict(tokens=20_000, lm_steps=60, qat=5, stacr=5, sph_ft=5, diff_steps=100, ddim=10, n_samples=32),
    "full": dict(
        tokens=200_000, lm_steps=1000, qat=150, stacr=100, sph_ft=100, diff_steps=3000, ddim=25, n_samples=256
    ),
}
VOCAB, SEQ, BATCH = 24, 64, 16
BUDGET = 0.7  # SARA: the share of the dense sampler's MACs (30% fewer, as the claim)


# --------------------------------------------------------------------------- data the script makes itself
def markov_text(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A stream from a random order-2 Markov source (3 possible successors per context) and its per-token NLL."""
    rng = np.random.default_rng(seed)
    succ = np.stack([rng.choice(VOCAB, 3, replace=False) for _ in range(VOCAB * VOCAB)])
    prob = rng.dirichlet(np.full(3, 0.7), VOCAB * VOCAB)
    x = np.empty(n, dtype=np.int64)
    x[:2] = rng.integers(0, VOCAB, 2)
    nll = np.zeros(n)
    for t in range(2, n):
        ctx = x[t - 2] * VOCAB + x[t - 1]
        j = rng.choice(3, p=prob[ctx])
        x[t] = succ[ctx, j]
        nll[t] = -math.log(prob[ctx, j])
    return x, nll


def bars_and_blobs(n: int, seed: int) -> np.ndarray:
    """8x8 images in [-1, 1]: one to three random horizontal or vertical bars and a Gaussian blob."""
    rng = np.random.default_rng(seed)
    out = np.zeros((n, 8, 8), dtype=np.float32)
    yy, xx = np.mgrid[0:8, 0:8]
    for img in out:
        for _ in range(rng.integers(1, 4)):
            k, w = rng.integers(0, 7), rng.integers(1, 3)
            if rng.random() < 0.5:
                img[k : k + w, :] = 1.0
            else:
                img[:, k : k + w] = 1.0
        cy, cx = rng.uniform(1, 7, 2)
        img += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 2.0).astype(np.float32)
    return np.clip(out, 0, 1).reshape(n, 64) * 2 - 1


def windows(ids: np.ndarray) -> torch.Tensor:
    m = len(ids) // SEQ
    return torch.from_numpy(ids[: m * SEQ].reshape(m, SEQ).copy())


def batches(ids: np.ndarray, seed: int) -> Any:
    rng = np.random.default_rng(seed)

    def draw(_: int) -> torch.Tensor:
        starts = rng.integers(0, len(ids) - SEQ, BATCH)
        return torch.from_numpy(np.stack([ids[s : s + SEQ] for s in starts]))

    return draw


@torch.no_grad()
def perplexity(model: Any, test: torch.Tensor) -> float:
    model.eval()
    nll = sum(
        float(F.cross_entropy(model(x)[:, :-1].flatten(0, 1), x[:, 1:].flatten(), reduction="sum"))
        for x in test.split(32)
    )
    return math.exp(nll / (test.shape[0] * (SEQ - 1)))


# --------------------------------------------------------------------------- 1. the MoE language model
def train_moe(train: np.ndarray, steps: int, seed: int) -> MoELM:
    model = MoELM(
        VOCAB, d_model=64, n_layers=2, n_heads=4, d_ff=128, n_experts=4, top_k=2, max_positions=SEQ, seed=seed
    )
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: min(1.0, (t + 1) / 20) * max(0.05, 1 - t / steps))
    draw = batches(train, seed + 1)
    model.train()
    for t in range(steps):
        loss = model.loss(draw(t), aux_coef=0.01)  # + a small load-balancing loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    return model.eval()


def weight_only(model: MoELM, calib: torch.Tensor, test: torch.Tensor, size: dict) -> None:
    print("\n[1a] weight-only quantisation of every linear layer but the router and the LM head")
    names = linear_names(model, exclude=("router", "head"))
    hessians = calibration_hessians(model, calib.split(16), names)
    rows = []
    for label, bits in (("RTN 3-bit, groups of 64", None), ("GPTQ 3-bit, groups of 64", "gptq")):
        q = copy.deepcopy(model)
        replace_linears(
            q,
            lambda n, lin, g=bits: PackedLinear.from_linear(
                lin, bits=3, group_size=64, hessian=hessians[n] if g else None
            ),
            names,
        )
        rows.append((label, q.get_submodule(names[0]).bits_per_weight(), perplexity(q, test)))
    sph = copy.deepcopy(model)
    t0 = time.process_time()
    info = sphquant_model(
        sph, hessians, names, direction_bits=8, radius_bits=8, group_size=64, finetune_steps=size["sph_ft"]
    )
    rows.append(("SPHQuant k=8, b=8, groups of 64", info["bits_per_weight"], perplexity(sph, test)))
    for label, bpw, ppl in rows:
        print(f"  {label:38s} {bpw:5.2f} bits/weight   test perplexity {ppl:7.3f}")
    print(
        f"  (SPHQuant codebook fitted and fine-tuned in {time.process_time() - t0:.1f} CPU-s; summed relative "
        f"output error {info['error_before']:.4f} -> {info['error_after']:.4f}; the shared codebook adds "
        f"{info['codebook_bits'] / 8 / 1024:.1f} KiB)"
    )


def moe_quant(model: MoELM, train: np.ndarray, calib: torch.Tensor, test: torch.Tensor, size: dict) -> None:
    print("\n[1b] MXFP4 experts and attention (4.25 bits/weight), low-rank compensation, routing replay")
    loads = expert_loads(model, list(calib.split(16)))  # (layers, experts)
    spectra = expert_error_spectra(model)
    budget = 8 * model.moe_layers[0].n_experts  # rank 8 per expert on average, per layer
    uniform = [[budget // len(s)] * len(s) for s in spectra]
    aware = [allocate_ranks(s, p, budget) for s, p in zip(spectra, loads)]
    ref_routes = record_routes(model, test[:32])

    def report(label: str, q: MoELM, extra: str = "") -> None:
        agree = topk_agreement(record_routes(q, test[:32]), ref_routes)
        print(f"  {label:38s} test perplexity {perplexity(q, test):7.3f}   routes kept {agree:.3f}{extra}")

    print(f"  expert loads per layer: {np.round(loads.numpy(), 2).tolist()}; load-aware ranks: {aware}")
    report("float", model)
    plain = mxfp4_moe(model)
    report("MXFP4", plain, f"   load-weighted error {load_weighted_error(plain, model, loads):.3f}")
    for label, ranks in (("MXFP4 + uniform ranks", uniform), ("MXFP4 + load-aware ranks", aware)):
        q = mxfp4_moe(model, ranks)
        report(label, q, f"   load-weighted error {load_weighted_error(q, model, loads):.3f}")
    for label, replay in (("  + QAT, routing replay", True), ("  + QAT, own routes (plain QAT)", False)):
        q = mxfp4_moe(model, aware)
        losses = routing_replay_qat(q, model, batches(train, 7), steps=size["qat"], lr=1e-3, replay=replay)
        report(label, q, f"   distillation KL {losses[0]:.4f} -> {losses[-1]:.4f}")


def stac_r(model: MoELM, train: np.ndarray, size: dict) -> None:
    print("\n[1c] STAC-R: fine-tuning with the linear layers' saved inputs at rank 16 (of 64/128) + 1% residual")
    exact, compressed = copy.deepcopy(model).train(), copy.deepcopy(model).train()

    # every linear layer but the routers and the LM head (named "head" here, so the default "lm_head" rule misses it)
    def target(name: str, _: Any) -> bool:
        return name != "head" and "router" not in name

    wrapped = stacr_wrap(compressed, rank=16, residual_frac=0.01, targets=target)
    x = batches(train, 11)(0)

    def step_stats(m: MoELM) -> tuple[int, torch.Tensor]:
        m.zero_grad()
        with saved_bytes(exclude=list(m.parameters())) as saved:
            loss = m.loss(x)
        loss.backward()
        return saved["bytes"], torch.cat([p.grad.flatten() for p in m.parameters() if p.grad is not None])

    b_exact, g_exact = step_stats(exact)
    b_comp, g_comp = step_stats(compressed)
    cos = float(F.cosine_similarity(g_exact, g_comp, dim=0))
    finals = []
    for m in (exact, compressed):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.0)
        draw = batches(train, 12)
        for t in range(size["stacr"]):
            loss = m.loss(draw(t))
            opt.zero_grad()
            loss.backward()
            opt.step()
        finals.append(float(m.eval().loss(draw(10_000)).detach()))
    print(
        f"  {len(wrapped)} layers wrapped; bytes saved for backward per step: exact {b_exact / 2**20:.2f} MiB, "
        f"STAC-R {b_comp / 2**20:.2f} MiB ({b_comp / b_exact:.2f}x; what attention, the norms and the LM head "
        "save is unchanged)"
    )
    print(
        f"  gradient cosine against the exact gradient {cos:.4f}; loss after {size['stacr']} fine-tuning steps: "
        f"exact {finals[0]:.4f}, STAC-R {finals[1]:.4f}"
    )


# --------------------------------------------------------------------------- 2. the diffusion denoiser
def sara(size: dict, seed: int) -> None:
    print(f"\n[2] SARA: a denoiser's block linears at per-step ranks, {BUDGET:.0%} of the sampler's MACs")
    data = torch.from_numpy(bars_and_blobs(4096, seed))
    held_out = bars_and_blobs(2048, seed + 1)
    mean = held_out.mean(0)
    components = np.linalg.svd(held_out - mean, full_matrices=False)[2][:16]  # PCA features of the images

    def frechet(x: torch.Tensor) -> float:
        """Frechet distance of Gaussian fits of PCA features: the samples against held-out images."""
        from scipy.linalg import sqrtm

        a, b = (np.clip(x, -1, 1) - mean) @ components.T, (held_out - mean) @ components.T
        ca, cb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
        root = np.real(sqrtm(ca))
        cross = np.real(sqrtm(root @ cb @ root))
        d = a.mean(0) - b.mean(0)
        return float(d @ d + np.trace(ca + cb) - 2 * np.trace(cross))

    model = DigitDenoiser(dim=64, width=128, hidden=256, n_blocks=4, seed=seed)
    ab = ddpm_alphas().float()
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.0)
    for _ in range(size["diff_steps"]):
        x0 = data[torch.randint(0, len(data), (128,), generator=g)]
        t = torch.randint(0, len(ab), (128,), generator=g)
        eps = torch.randn(x0.shape, generator=g)
        a = ab[t].unsqueeze(-1)
        loss = (model(a.sqrt() * x0 + (1 - a).sqrt() * eps, t) - eps).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    apply_sara(model)
    steps = size["ddim"]
    warm = torch.randn(32, 64, generator=g)  # warm-up noises: the LRAE table and SARA-Online's tolerance
    noise = torch.randn(size["n_samples"], 64, generator=g)
    dense, dense_macs = ddim_sample(model, noise, steps=steps)
    blocks = model.targets()
    menu = [8, 16, 24, 32, 48, 64, 80, 96, 112, None]
    costs = np.array([sum(m.macs(r) for m in blocks[0]) for r in menu], dtype=float)
    fixed = model.macs() - len(blocks) * costs[-1]  # the layers SARA leaves dense, per evaluation
    budget = BUDGET * dense_macs - steps * fixed  # what the blocks may spend: BUDGET of the sampler's MACs

    def fidelity(x: torch.Tensor) -> float:  # relative distance to the dense sampler's images, same noise
        return float((x - dense).norm() / dense.norm())

    rows = []
    per_rank = sum(m.in_features + m.out_features for m in blocks[0])
    r_uniform = int(budget / (steps * len(blocks)) // per_rank)  # the largest uniform rank within the budget
    x, macs = ddim_sample(model, noise, steps=steps, schedule=[[r_uniform] * len(blocks)] * steps)
    rows.append((f"uniform rank {r_uniform}", x, macs))
    t0 = time.process_time()
    for measure, label in (
        ("output", "SARA-DP (LRAE of each step's output)"),
        ("sample", "SARA-DP (LRAE of the sample)"),
    ):
        errors = lrae_table(model, warm, menu, steps=steps, measure=measure)
        choice = sara_dp(errors.numpy(), costs, budget)
        x, macs = ddim_sample(model, noise, steps=steps, schedule=[[menu[c] for c in row] for row in choice])
        rows.append((label, x, macs))
        if measure == "output":
            schedule = [[menu[c] for c in row] for row in choice]
    dp_cpu = time.process_time() - t0
    full = [b[0].full_rank for b in blocks]
    lo, hi = 0.0, 0.5  # SARA-Online: the least tolerance whose MACs on the warm-up noises fit the budget
    for _ in range(12):
        tau = (lo + hi) / 2
        _, m = ddim_sample(model, warm, steps=steps, controller=SaraOnline(tau, full))
        lo, hi = (lo, tau) if m - steps * fixed <= budget else (tau, hi)
    online = SaraOnline(hi, full)
    x, macs = ddim_sample(model, noise, steps=steps, controller=online)
    rows.append((f"SARA-Online (tau {hi:.3f})", x, macs))
    print(f"  {'dense':38s} MACs 100.0% of dense   FD to held-out images {frechet(dense.numpy()):.3f}")
    for label, x, macs in rows:
        print(
            f"  {label:38s} MACs {macs / dense_macs:5.1%} of dense   FD to held-out images {frechet(x.numpy()):.3f}   "
            f"distance to the dense samples {fidelity(x):.3f}"
        )
    first, last = schedule[0], schedule[-1]
    print(
        f"  SARA-DP ranks (blocks) at the first step {first}, at the last {last}; table and DP in {dp_cpu:.1f} "
        f"CPU-s. SARA-Online rank fractions: first steps {np.round(online.fractions[:3], 2).tolist()}, "
        f"last {np.round(online.fractions[-3:], 2).tolist()}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (a few seconds)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    size = SIZES["smoke" if args.smoke else "full"]

    ids, nll = markov_text(size["tokens"], args.seed)
    cut = int(0.9 * len(ids))
    train, test = ids[:cut], windows(ids[cut:])
    calib = windows(train[: 64 * SEQ])
    t0 = time.process_time()
    model = train_moe(train, size["lm_steps"], args.seed)
    for p in model.parameters():
        p.requires_grad_(False)
    print(
        f"MoE LM ({sum(p.numel() for p in model.parameters()) / 1e3:.0f}k parameters) trained for "
        f"{size['lm_steps']} steps in {time.process_time() - t0:.1f} CPU-s: test perplexity "
        f"{perplexity(model, test):.3f} (the source's own: {math.exp(nll[cut + 2 :].mean()):.3f}, uniform {VOCAB})"
    )

    weight_only(model, calib, test, size)
    moe_quant(model, train, calib, test, size)
    for p in model.parameters():
        p.requires_grad_(True)
    stac_r(model, train, size)
    sara(size, args.seed)
    print(f"\ndone in {time.process_time():.1f} CPU-s (imports included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
