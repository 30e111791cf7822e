"""Inference: lossless speculative decoding on a Hugging Face causal LM, and LLM-serving scheduling on a CSV trace.

What it shows, on data the script makes itself:

1. **SpecBlock** (``geode.inference``): a small HF ``LlamaForCausalLM`` (a character-level model trained here on
   CPython's documentation, a stand-in for your own model), a :class:`SpecBlockDrafter` and the EAGLE-like
   baseline trained with the public :func:`make_drafter_data` (prompts of unequal length are padded) and
   :func:`train_drafter`, then speculative decoding checked token for token against the model's own
   ``generate(do_sample=False)``; acceptance length and modelled speed-up (:class:`SpecStats`).
2. **SPIRIT**: self-speculative decoding that drafts with the same model minus a few decoder layers, also checked
   against ``generate``, and SPIRIT's speed-driven choice of the skipped layers over a request stream.
3. **SVF**: a CSV request trace written to a temporary folder, replayed through the KV-cache serving simulator
   with FCFS, SJF, SVF and 1-bit SVF (``load_trace`` + ``simulate``), and the same through the ``serve-sim``
   command-line entry point (``geode serve-sim``), including its one-line error for an unsorted trace.

Run::

    python examples/inference.py           # about a minute on one CPU core
    python examples/inference.py --smoke   # the smallest size, a few seconds

Needs the ``llm`` extra (``pip install 'geode[llm]'``: transformers); no download, no network. Speed-ups of
speculative decoding are *modelled* (:class:`~geode.inference.SpecCostModel` at an 8B target's scale), not timed:
a tiny model on a CPU says nothing about GPU wall time.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SIZES = {
    "smoke": {"target_steps": 15, "prompts": 16, "gen": 24, "drafter_steps": 8, "test": 2, "new": 12, "trace": 200},
    "full": {"target_steps": 600, "prompts": 96, "gen": 48, "drafter_steps": 300, "test": 6, "new": 48, "trace": 2000},
}


def char_corpus() -> tuple[str, list[int], list[str]]:
    """CPython's documentation text (ships with Python), its character ids, and the id -> character table."""
    from pydoc_data.topics import topics

    text = "\n".join(topics[k] for k in sorted(topics))
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    return text, [index[c] for c in text], chars


def train_char_lm(ids: list[int], vocab: int, steps: int, seed: int) -> Any:
    """A small Llama trained on random 64-character windows: the stand-in for your own HF causal LM."""
    import numpy as np
    import torch

    from geode.models import build_tiny_lm

    model = build_tiny_lm(vocab, d_model=64, n_layers=4, n_heads=4, n_kv_heads=2, max_positions=256, seed=seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(seed)
    data = np.asarray(ids)
    model.train()
    for _ in range(steps):
        starts = rng.integers(0, len(data) - 65, size=16)
        x = torch.from_numpy(np.stack([data[s : s + 64] for s in starts]))
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def hf_greedy(model: Any, prompt: list[int], n: int) -> list[int]:
    """The model's own greedy decoding: ``generate(do_sample=False)``, new tokens only."""
    import torch

    x = torch.tensor([prompt])
    out = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=n, do_sample=False, pad_token_id=0)
    return out[0, len(prompt) :].tolist()


def speculative_part(size: dict, seed: int, verbose: bool) -> tuple[Any, list[list[int]], list[list[int]]]:
    import numpy as np
    import torch

    from geode.inference import (
        EagleDrafter,
        SpecBlockDrafter,
        SpecStats,
        make_drafter_data,
        speculative_decode,
        train_drafter,
    )

    text, ids, chars = char_corpus()
    split = int(0.9 * len(ids))
    t0 = time.process_time()
    target = train_char_lm(ids[:split], len(chars), size["target_steps"], seed)
    print(
        f"target: HF {type(target).__name__}, {sum(p.numel() for p in target.parameters()):,} parameters, "
        f"{size['target_steps']} AdamW steps ({time.process_time() - t0:.0f} CPU s)"
    )

    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, 33, size=size["prompts"])  # unequal lengths: make_drafter_data left-pads them
    starts = rng.integers(0, split - 40, size=size["prompts"])
    prompts = [ids[s : s + n] for s, n in zip(starts, lengths)]
    data = make_drafter_data(target, prompts, size["gen"], temperature=1.0, seed=seed, verbose=verbose)
    print(f"drafter data: {data}")

    drafters = {}
    for name, make, lr in (("SpecBlock", SpecBlockDrafter, 1e-3), ("EAGLE-like", EagleDrafter, 1e-3)):
        torch.manual_seed(seed)
        d = make(target)
        losses = train_drafter(d, data, steps=size["drafter_steps"], lr=lr, batch=32, seed=seed, verbose=verbose)
        print(
            f"{name} drafter: {sum(p.numel() for p in d.parameters() if p.requires_grad):,} trained parameters, "
            f"loss {np.mean(losses[:5]):.2f} -> {np.mean(losses[-5:]):.2f}"
        )
        drafters[name] = d
    print(
        "  (SpecBlock's loss adds a rank loss, and its valid-prefix mask counts more slots as drafts improve, "
        "so it need not fall)"
    )

    sentences = [i for i in range(split, len(ids) - 40) if text[i - 2 : i] == ". " and text[i].isupper()]
    tests = [ids[s : s + 16] for s in rng.choice(sentences, size["test"], replace=False)]  # held-out prose
    reference = [hf_greedy(target, p, size["new"]) for p in tests]
    for name, d in drafters.items():
        stats, identical = SpecStats(), 0
        for p, ref in zip(tests, reference):
            out, st = speculative_decode(target, d, p, size["new"], budget=16)
            identical += out == ref
            stats.merge(st)
        print(f"{name}: {identical}/{len(tests)} outputs token-identical to generate(do_sample=False); {stats}")
    p, ref = tests[0], reference[0]
    print(f"  e.g. {''.join(chars[t] for t in p)!r} -> {''.join(chars[t] for t in ref)!r}")
    return target, tests, reference


def spirit_part(target: Any, tests: list[list[int]], reference: list[list[int]], size: dict, seed: int) -> None:
    from geode.inference import SpiritPolicy, run_stream, self_speculative_decode, skippable_layers

    print(f"SPIRIT: skippable layers {skippable_layers(target)}")
    for skip in ([1], [2], [1, 2]):
        identical, tokens, cost, acc = 0, 0, 0.0, []
        for p, ref in zip(tests, reference):
            out, st = self_speculative_decode(target, p, size["new"], skip, k=4)
            identical += out == ref
            tokens, cost = tokens + st.tokens, cost + st.cost
            acc.append(st.acceptance)
        print(
            f"  skip {skip}: {identical}/{len(tests)} identical to generate; accepted {sum(acc) / len(acc):.2f} "
            f"of drafted tokens, modelled speed {tokens / cost:.2f}x greedy"
        )
    print(
        "  (layers of a model trained without layer dropout draft poorly when skipped: the claim's target is "
        "trained with LayerSkip-style dropout of its middle layers)"
    )
    stream = [(p, 0) for p in tests] * 2
    res = run_stream(target, stream, SpiritPolicy(target, seed=seed), window=1, max_new=size["new"])
    print(f"  SpiritPolicy over {len(stream)} requests: skip sets {res['skips']}, speed {res['speed']:.2f}x greedy")


def svf_part(size: dict, seed: int) -> None:
    import contextlib
    import io
    import json

    from geode.inference import FCFS, SJF, SVF, OneBitSVF, load_trace, simulate, synthetic_workload
    from geode.inference.svf.serve_sim import main as serve_sim

    kv = 30_000
    w = synthetic_workload("azure-conv", size["trace"], load=0.9, kv_slots=kv, seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.csv"  # your own trace: one request a line
        rows = [f"{a:.3f},{s},{o}" for a, s, o in zip(w.arrival, w.prompt, w.output)]
        trace.write_text("arrival,prompt_tokens,output_tokens\n" + "\n".join(rows) + "\n")
        work = load_trace(trace)
        print(f"SVF: {len(work)} requests from {trace.name}, KV cache {kv} tokens, 90% of measured capacity")
        for policy in (FCFS(), SJF(), SVF(), OneBitSVF()):
            m = simulate(work, policy, kv).metrics()
            print(
                f"  {policy.name:<9} mean latency {m['mean_latency']:8.1f}  p99 {m['p99_latency']:8.1f}  "
                f"preemptions {m['preemptions']:.0f}"
            )
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = serve_sim(["--trace", str(trace), "--policy", "svf", "--kv-slots", str(kv), "--json"])
        print(
            f"  geode serve-sim --trace trace.csv --policy svf --kv-slots {kv} --json -> exit {code}, "
            f"mean latency {json.loads(out.getvalue())['mean_latency']:.1f}"
        )
        unsorted = Path(tmp) / "unsorted.csv"
        unsorted.write_text("arrival,prompt_tokens,output_tokens\n0,10,5\n2,10,5\n1,10,5\n")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = serve_sim(["--trace", str(unsorted), "--kv-slots", "100"])
        message = err.getvalue().strip()
        print(f"  an unsorted trace: exit {code}, 'serve-sim: error: ...{message[message.index(', line') :]}'")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (seconds)")
    parser.add_argument("--seed", type=int, default=0, help="seed of everything (default: 0)")
    args = parser.parse_args()
    if importlib.util.find_spec("transformers") is None:
        print("skipped: needs the llm extra (pip install 'geode[llm]': transformers)")
        return 77
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    size = SIZES["smoke" if args.smoke else "full"]
    t0 = time.process_time()
    target, tests, reference = speculative_part(size, args.seed, verbose=not args.smoke)
    spirit_part(target, tests, reference, size, args.seed)
    svf_part(size, args.seed)
    print(f"done in {time.process_time() - t0:.0f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
