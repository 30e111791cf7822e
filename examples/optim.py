"""Zeroth-order fine-tuning with geode: HoZO as a ``torch.optim`` optimiser with a closure, on int4 scales.

What it shows, on a network and data the script makes itself:

1. A float MLP (the "pre-trained" model) is quantised to int4 with ``quantize_model``: its per-group scales are
   the only trainable parameters left (``scale_parameters``). The scales are degraded (each multiplied by a
   log-uniform factor in [0.05, 1]) and then fine-tuned to match the float model's outputs on fresh inputs.
2. ``HoZO`` is used as any ``torch.optim`` optimiser that takes a closure, with a torch LR scheduler, except that
   the closure only *returns* the loss (no ``zero_grad()``, no ``backward()``): ``step`` evaluates it twice at
   perturbed scales under ``torch.no_grad()``. The mini-batch is drawn *before* the step, so both evaluations
   see the same data. Beside it, at the same learning rates: MeZO with a clamp at 0, QZO (clipping and
   projection), and first-order Adam on the same scales (with ``backward()``, the reference). Reported: the
   final loss relative to the round-to-nearest scales, boundary violations, optimiser state bytes. (The grids
   are swept on the test loss here, for illustration; select on validation data in real use.)
3. ``state_dict`` round trip (a resumed HoZO continues bit-identically: the state is a seed and a step count),
   and what a closure that calls ``backward()`` gets: a ``RuntimeError`` saying what to write instead.

Run::

    python examples/optim.py            # about a minute on one core
    python examples/optim.py --smoke    # the smallest size, seconds

Needs geode's core install only (numpy, torch); no asset, no network.
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np
import torch


def make_models(seed: int) -> tuple[torch.nn.Module, torch.nn.Module, float]:
    """The float model, its int4 copy with degraded scales, and the int4 copy's loss with its RTN scales."""
    from geode.optim import quantize_model, scale_parameters

    torch.manual_seed(seed)
    teacher = torch.nn.Sequential(
        torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    )
    student = copy.deepcopy(teacher)
    quantize_model(student, bits=4, group_size=32)  # int4 codes frozen; the scales are the parameters
    x = torch.randn(2048, 32, generator=torch.Generator().manual_seed(seed + 1))
    rtn = distill_loss(student, teacher, x)
    g = torch.Generator().manual_seed(seed + 2)
    with torch.no_grad():
        for s in scale_parameters(student):
            s.mul_(torch.exp(torch.empty(s.shape).uniform_(np.log(0.05), 0.0, generator=g)))
    return teacher, student, rtn


def relative_mse(out: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """The distillation loss: squared error relative to the float model's output energy (1 = predicting 0)."""
    return (out - ref).pow(2).mean() / ref.pow(2).mean()


def distill_loss(student: torch.nn.Module, teacher: torch.nn.Module, x: torch.Tensor) -> float:
    with torch.no_grad():
        return float(relative_mse(student(x), teacher(x)))


def finetune(name: str, lr: float, teacher, student, steps: int, seed: int) -> dict:
    """Fine-tune a copy of the student's scales with one optimiser; returns its final numbers."""
    from geode.optim import QZO, HoZO, MeZO, optimizer_state_bytes, scale_parameters

    model = copy.deepcopy(student)
    params = scale_parameters(model)
    opt = {
        "HoZO": lambda: HoZO(params, lr=lr, eps=1e-3, seed=seed),
        "MeZO + clamp": lambda: MeZO(params, lr=lr, eps=1e-3, clamp_min=1e-8, seed=seed),
        "QZO": lambda: QZO(params, lr=lr, eps=1e-3, clip=100.0, seed=seed),
        "Adam (first order)": lambda: torch.optim.Adam(params, lr=lr),
    }[name]()
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    gen = torch.Generator().manual_seed(seed)
    first_order = name.startswith("Adam")
    x_test = torch.randn(2048, 32, generator=torch.Generator().manual_seed(seed + 1))
    for _ in range(steps):
        xb = torch.randn(128, 32, generator=gen)  # drawn once per step: both ZO evaluations see the same batch
        with torch.no_grad():
            target = teacher(xb)

        if first_order:

            def closure(xb=xb, target=target):
                opt.zero_grad()
                loss = relative_mse(model(xb), target)
                loss.backward()
                return loss
        else:

            def closure(xb=xb, target=target):  # zeroth-order: return the loss, nothing else
                return relative_mse(model(xb), target)

        try:
            opt.step(closure)
        except ValueError:  # a zeroth-order step met a non-finite loss (it restored the scales): diverged
            return {"loss": float("inf"), "violations": sum(opt.violations.values()), "state": 32, "positive": False}
        sched.step()
        if not all(bool(torch.isfinite(p).all()) for p in params):
            break
    loss = distill_loss(model, teacher, x_test)
    return {
        "loss": loss if np.isfinite(loss) else float("inf"),
        "violations": sum(getattr(opt, "violations", {}).values()),
        "state": optimizer_state_bytes(opt) if not first_order else sum(
            t.numel() * t.element_size() for s in opt.state.values() for t in s.values() if torch.is_tensor(t)),
        "positive": all(bool((p > 0).all()) for p in params),
    }  # fmt: skip


def resume_and_backward_demo(student, teacher) -> None:
    from geode.optim import HoZO, scale_parameters

    x = torch.randn(64, 32, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        y = teacher(x)
    a, b = copy.deepcopy(student), copy.deepcopy(student)
    opt_a = HoZO(scale_parameters(a), lr=1e-2, seed=3)
    for _ in range(5):
        opt_a.step(lambda: relative_mse(a(x), y))
    opt_b = HoZO(scale_parameters(b), lr=1e-2, seed=0)
    opt_b.load_state_dict(opt_a.state_dict())  # resume: the state is a seed and a step count
    with torch.no_grad():
        for pa, pb in zip(scale_parameters(a), scale_parameters(b)):
            pb.copy_(pa)
    for _ in range(5):
        opt_a.step(lambda: relative_mse(a(x), y))
        opt_b.step(lambda: relative_mse(b(x), y))
    same = all(torch.equal(pa, pb) for pa, pb in zip(scale_parameters(a), scale_parameters(b)))
    print(f"\nstate_dict round trip: the resumed optimiser continues bit-identically: {same}")

    def torch_habit():
        opt_a.zero_grad()
        loss = relative_mse(a(x), y)
        loss.backward()
        return loss

    try:
        opt_a.step(torch_habit)
    except RuntimeError as exc:
        print("a closure that calls backward() gets:", str(exc).split(" (torch said")[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the smallest size (seconds)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.time()
    steps, grid = (60, {"HoZO": (0.1,), "MeZO + clamp": (1e-3,), "QZO": (1e-3,), "Adam (first order)": (1e-3,)}) \
        if args.smoke else (1500, {
            "HoZO": (0.1, 0.3, 1.0, 3.0), "MeZO + clamp": (1e-5, 3e-5, 1e-4, 3e-4),
            "QZO": (1e-5, 3e-5, 1e-4, 3e-4), "Adam (first order)": (1e-4, 3e-4, 1e-3, 3e-3)})  # fmt: skip
    teacher, student, rtn = make_models(args.seed)
    from geode.optim import scale_parameters

    n_scales = sum(p.numel() for p in scale_parameters(student))
    x_test = torch.randn(2048, 32, generator=torch.Generator().manual_seed(args.seed + 1))
    start = distill_loss(student, teacher, x_test)
    print(f"int4 MLP 32-128-128-10, {n_scales} trainable scales; relative distillation MSE: round-to-nearest scales "
          f"{rtn:.4f}, degraded scales {start:.4f}; {steps} steps, batch 128, cosine LR schedule")  # fmt: skip
    head = ("optimiser", "lr", "test loss / RTN", "violations", "state bytes", "scales > 0")
    print(f"{head[0]:<20} {head[1]:>7} {head[2]:>15} {head[3]:>11} {head[4]:>12} {head[5]:>11}")
    for name, lrs in grid.items():
        for lr in lrs:
            r = finetune(name, lr, teacher, student, steps, args.seed)
            print(f"{name:<20} {lr:>7g} {r['loss'] / rtn:>15.3g} {r['violations']:>11d} {r['state']:>12d} "
                  f"{str(r['positive']):>11}")  # fmt: skip
    resume_and_backward_demo(student, teacher)
    print(f"\ndone in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
