"""The claim's set-up: a tiny "reasoning LM" with think traces, a prompt-dependent style preference, and probes.

Sequences (token ids of :mod:`geode.models.tasks`): prompt ``BOS x1 ADD x2 ADD x3 EQ`` (digits), a think trace
``SEP s1 s0 MUL`` (``SEP``/``MUL`` play ``<think>``/``</think>``; ``s`` is the partial sum of a random pair of
the terms) or the empty trace ``SEP MUL``, then the answer ``c1 c0 END`` with ``c`` the total and ``END`` one
of two sign-off tokens (``EOS`` or ``SUB``). The base model is trained on both trace kinds and a random
sign-off, so it reasons (answer accuracy) but has no sign-off preference. The preference to align is
prompt-dependent style (:func:`prefers_a`): the chosen answer signs off with ``EOS`` when ``c`` is even,
``SUB`` when odd; the rejected one with the other token; both carry the correct digits. (A comparison
rule, first term > third, and the parity of the first term were tried first: 40 DPO steps did not move
their preference accuracy off chance while the answers already degraded.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core.random import as_generator
from geode.models.tasks import FIRST_SYMBOL, SPECIAL_TOKENS

S = SPECIAL_TOKENS
THINK, END_THINK, SIGN_A, SIGN_B = S["SEP"], S["MUL"], S["EOS"], S["SUB"]
PROMPT_LEN = 7
VOCAB = FIRST_SYMBOL + 10


def sample_prompts(n: int, seed: int | np.random.Generator) -> tuple[Any, Any]:
    """``(prompt_ids (n, 7), totals (n,))`` as torch tensors."""
    import torch

    rng = as_generator(seed)
    x = rng.integers(0, 10, (n, 3))
    cols = [np.full(n, S["BOS"]), x[:, 0] + 16, np.full(n, S["ADD"]), x[:, 1] + 16, np.full(n, S["ADD"])]
    cols += [x[:, 2] + 16, np.full(n, S["EQ"])]
    p = np.stack(cols, 1)
    return torch.from_numpy(p.astype(np.int64)), torch.from_numpy(x.sum(1).astype(np.int64))


def _digits(c: Any) -> Any:
    import torch

    return torch.stack([c // 10 + FIRST_SYMBOL, c % 10 + FIRST_SYMBOL], 1)


def prefers_a(prompts: Any) -> Any:
    """The preference rule: sign-off ``EOS`` is preferred when the total is even, ``SUB`` when it is odd."""
    return (prompts[:, 1] + prompts[:, 3] + prompts[:, 5]) % 2 == 0


def answers(prompts: Any, totals: Any, chosen: bool) -> Any:
    """Answer tokens ``c1 c0 END``: the chosen sign-off (by :func:`prefers_a`) or the other one."""
    import torch

    a = prefers_a(prompts)
    end = torch.where(a == chosen, torch.tensor(SIGN_A), torch.tensor(SIGN_B))
    return torch.cat([_digits(totals), end[:, None]], 1)


def reference_traces(prompts: Any, rng: np.random.Generator) -> Any:
    """Ground-truth traces ``SEP s1 s0 MUL`` with ``s`` the sum of a random pair of the terms (base training)."""
    import torch

    x = (prompts[:, [1, 3, 5]] - FIRST_SYMBOL).numpy()
    n = len(x)
    pairs = np.array([[0, 1], [0, 2], [1, 2]])[rng.integers(0, 3, n)]
    s = x[np.arange(n), pairs[:, 0]] + x[np.arange(n), pairs[:, 1]]
    body = _digits(torch.from_numpy(s.astype(np.int64)))
    return torch.cat([torch.full((n, 1), THINK), body, torch.full((n, 1), END_THINK)], 1)


def empty_traces(n: int) -> Any:
    import torch

    return torch.tensor([[THINK, END_THINK]]).repeat(n, 1)


def sample_traces(model: Any, prompts: Any, generator: Any, temperature: float = 1.0) -> Any:
    """Policy-sampled traces: ``SEP`` forced, two sampled tokens, ``MUL`` appended (fixed length 4)."""
    import torch

    x = torch.cat([prompts, torch.full((len(prompts), 1), THINK)], 1)
    was = model.training
    model.eval()
    with torch.no_grad():
        for _ in range(2):
            logits = model(input_ids=x).logits[:, -1].float() / temperature
            x = torch.cat([x, torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)], 1)
    model.train(was)
    return torch.cat([x[:, prompts.shape[1] :], torch.full((len(prompts), 1), END_THINK)], 1)


def pretrain_base(
    model: Any, *, steps: int, batch_size: int = 64, lr: float = 3e-3, p_trace: float = 0.7, seed: int = 0
) -> list[float]:
    """Supervised training on trace/empty-trace sequences with a random sign-off (trace and answer scored).

    AdamW with the learning rate decayed linearly to 0 (a constant rate left the answer accuracy of the final
    step anywhere between 0.75 and 0.99).
    """
    import torch

    rng = as_generator(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: max(0.0, 1.0 - k / max(steps, 1)))
    losses = []
    model.train()
    for _ in range(steps):
        p, c = sample_prompts(batch_size, rng)
        tr = reference_traces(p, rng) if rng.random() < p_trace else empty_traces(batch_size)
        chosen = torch.from_numpy(rng.random(batch_size) < 0.5)
        ans = torch.where(chosen[:, None], answers(p, c, True), answers(p, c, False))
        ids = torch.cat([p, tr, ans], 1)
        labels = ids.clone()
        labels[:, :PROMPT_LEN] = -100
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return losses


def preference_batches(model: Any, n: int, rng: np.random.Generator, gen: Any, *, trace: bool) -> Any:
    """A preference batch: traced (independent policy traces for chosen and rejected) or empty-trace."""
    import torch

    from geode.llm.bvpo.trainer import PreferenceBatch

    p, c = sample_prompts(n, rng)
    if trace:
        rc, rr = sample_traces(model, p, gen), sample_traces(model, p, gen)
    else:
        rc = rr = empty_traces(n)
    return PreferenceBatch(
        torch.cat([p, rc, answers(p, c, True)], 1), torch.cat([p, rr, answers(p, c, False)], 1), PROMPT_LEN
    )


def flat_grad(model: Any, loss: Any) -> Any:
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return torch.cat(
        [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)]
    ).double()


def preference_accuracy(model: Any, prompts: Any, totals: Any, *, n_traces: int, gen: Any) -> float:
    r"""Share of prompts where the MC-marginal :math:`\hat p(y^+|x) > \hat p(y^-|x)` (``n_traces`` policy traces)."""
    import torch

    from geode.llm.bvpo.loss import sequence_logprobs

    rep = prompts.repeat_interleave(n_traces, 0)
    tot = totals.repeat_interleave(n_traces, 0)
    tr = sample_traces(model, rep, gen)
    with torch.no_grad():
        lc = sequence_logprobs(model, torch.cat([rep, tr, answers(rep, tot, True)], 1), PROMPT_LEN + 4)
        lr = sequence_logprobs(model, torch.cat([rep, tr, answers(rep, tot, False)], 1), PROMPT_LEN + 4)
    mc = torch.logsumexp(lc.reshape(-1, n_traces), 1)
    mr = torch.logsumexp(lr.reshape(-1, n_traces), 1)
    return float((mc > mr).double().mean())


def answer_accuracy(model: Any, prompts: Any, totals: Any, *, reasoning: bool = True) -> float:
    """Greedy accuracy of the answer digits, reasoning on (trace generated) or off (empty trace forced)."""
    import torch

    x = torch.cat([prompts, torch.full((len(prompts), 1), THINK)], 1)
    if not reasoning:
        x = torch.cat([x, torch.full((len(prompts), 1), END_THINK)], 1)
    n_new = 5 if reasoning else 2
    was = model.training
    model.eval()
    with torch.no_grad():
        for _ in range(n_new):
            x = torch.cat([x, model(input_ids=x).logits[:, -1].argmax(-1, keepdim=True)], 1)
    model.train(was)
    got = x[:, -2:]
    return float((got == _digits(totals)).all(1).double().mean())


def branch_gradient(model: Any, batch: Any, ref_model: Any, beta: float) -> Any:
    """Flat gradient (float64) of the DPO loss of one branch's batch at the current parameters."""
    import torch

    from geode.llm.bvpo.loss import dpo_loss, sequence_logprobs

    pc = sequence_logprobs(model, batch.chosen, batch.start)
    pr = sequence_logprobs(model, batch.rejected, batch.start)
    with torch.no_grad():
        rc = sequence_logprobs(ref_model, batch.chosen, batch.start)
        rr = sequence_logprobs(ref_model, batch.rejected, batch.start)
    return flat_grad(model, dpo_loss(pc, pr, rc, rr, beta=beta))


def gradient_draws(model: Any, ref_model: Any, *, n: int, draws: int, beta: float, seed: int) -> dict[str, Any]:
    r"""Independent draws of the branch gradients a training step would see (prompts and traces fresh each draw).

    Returns ``trace``, ``empty`` and ``trace2`` arrays of shape (draws, p): the trace-based gradient, the
    empty-trace gradient on its separately sampled batch, and a second, independent trace-based gradient
    (the control: a mixture of two trace branches). The composite :math:`g_\alpha = \alpha g_t + (1-\alpha) g_e`
    of every :math:`\alpha` is a linear combination of the same draws (common random numbers).
    """
    import torch

    rng = as_generator(seed)
    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    out: dict[str, list[Any]] = {"trace": [], "empty": [], "trace2": []}
    for _ in range(draws):
        out["trace"].append(
            branch_gradient(model, preference_batches(model, n, rng, gen, trace=True), ref_model, beta)
        )
        out["empty"].append(
            branch_gradient(model, preference_batches(model, n, rng, gen, trace=False), ref_model, beta)
        )
        out["trace2"].append(
            branch_gradient(model, preference_batches(model, n, rng, gen, trace=True), ref_model, beta)
        )
    return {k: torch.stack(v).numpy() for k, v in out.items()}


def total_variance(a: Any, b: Any, alpha: float) -> float:
    r""":math:`\operatorname{tr}\operatorname{Cov}(\alpha a + (1-\alpha) b)` over the draws (rows), unbiased."""
    g = alpha * np.asarray(a) + (1 - alpha) * np.asarray(b)
    return float(((g - g.mean(0)) ** 2).sum() / (len(g) - 1))


def trace_noise_draws(model: Any, ref_model: Any, *, n: int, draws: int, beta: float, seed: int) -> tuple[Any, Any]:
    r"""One fixed batch of prompts and answers: ``draws`` trace-based gradients (fresh traces), the empty-trace one.

    The inputs of :func:`geode.llm.bvpo.mse_optimal_alpha` (the paper's fixed-prompt, fixed-answer view).
    """
    import torch

    from geode.llm.bvpo.trainer import PreferenceBatch

    rng = as_generator(seed)
    gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
    p, c = sample_prompts(n, rng)
    ya, yb = answers(p, c, True), answers(p, c, False)
    e = empty_traces(n)
    g_e = branch_gradient(
        model, PreferenceBatch(torch.cat([p, e, ya], 1), torch.cat([p, e, yb], 1), PROMPT_LEN), ref_model, beta
    )
    g_t = []
    for _ in range(draws):
        rc, rr = sample_traces(model, p, gen), sample_traces(model, p, gen)
        b = PreferenceBatch(torch.cat([p, rc, ya], 1), torch.cat([p, rr, yb], 1), PROMPT_LEN)
        g_t.append(branch_gradient(model, b, ref_model, beta))
    return torch.stack(g_t).numpy(), g_e.numpy()
