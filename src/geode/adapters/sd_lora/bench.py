"""Benchmark of SD-LoRA: inference (the claim's "identical cost") and one training step, against CLIP-LoRA.

Inference: SD-LoRA's :meth:`~geode.adapters.sd_lora.SDLoRA.predict` (student forward + Tip cache, teacher
dropped) against CLIP-LoRA's (the same class with both lambdas 0, same cache): the ratio should be ~1.
Training: one AdamW step of SD-LoRA (student + graph teacher + PPA) against one of CLIP-LoRA (the step's
overhead is the teacher's). The tiny CLIP of the claim; sizes: ``smoke`` d = 16, batch 8; ``quick`` the
claim's quick model (d = 48, 2 layers), batch 64 (inference 256 images); ``full`` d = 96, 4 layers,
batch 128 (inference 512 images). The baseline is CLIP-LoRA, the paper's named and strongest baseline.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase

__all__ = ["cases"]

_SIZES = {
    "smoke": (dict(d=16, layers=1, heads=2, embed_dim=8), 8, 16),
    "quick": (dict(d=48, layers=2, heads=4, embed_dim=32), 64, 256),
    "full": (dict(d=96, layers=4, heads=4, embed_dim=64), 128, 512),
}


def _model(clip: Any, lam: float, xs: Any, ys: Any) -> Any:
    import torch

    from geode.adapters.sd_lora import SDLoRA

    m = SDLoRA(clip, lambda_distill=lam, lambda_ppa=lam, generator=torch.Generator().manual_seed(0))
    m.build_cache(xs, ys, 8)
    return m


def _train_step(m: Any, x: Any, y: Any, cap: Any) -> Any:
    import torch

    opt = torch.optim.AdamW(m.trainable(), lr=1e-3)
    protos = m.prototypes(x, y, 8) if m.lambda_ppa > 0 else None

    def step() -> Any:
        loss = m.loss(x, y, cap, protos)["total"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def cases(size: str) -> list[BenchCase]:
    """SD-LoRA against CLIP-LoRA: inference (teacher dropped) and one training step."""
    import torch

    from geode.adapters.sd_lora import RelationWorld, TinyCLIP

    arch, batch, n_inf = _SIZES[size]
    world = RelationWorld()
    torch.manual_seed(0)
    clip = TinyCLIP(vocab_size=world.vocab_size, **arch)
    for p in clip.parameters():
        p.requires_grad_(False)
    cap = world.captions(world.novel)
    xs, ys = world.sample(world.novel, max(1, batch // 8), 1)
    xi, _ = world.sample(world.novel, max(1, n_inf // 8), 2)
    sd, cl = _model(clip, 1.0, xs, ys), _model(clip, 0.0, xs, ys)
    sd_inf = _model(clip, 1.0, xs, ys)
    sd_inf.drop_teacher()
    return [
        BenchCase(
            f"inference (student + cache), {len(xi)} images",
            candidate=lambda: sd_inf.predict(xi, cap, alpha=1.0, beta=3.0),
            baselines={"CLIP-LoRA": lambda: cl.predict(xi, cap, alpha=1.0, beta=3.0)},
        ),
        BenchCase(
            f"training step, batch {len(xs)}",
            candidate=_train_step(sd, xs, ys, cap),
            baselines={"CLIP-LoRA": _train_step(cl, xs, ys, cap)},
            differs={"*": "SD-LoRA's training loss adds the self-distillation term (weight 1) to CLIP-LoRA's"},
        ),
    ]
