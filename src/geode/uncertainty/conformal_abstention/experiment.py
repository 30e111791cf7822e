"""The synthetic knowledge QA of the claim: a small residual network memorises entity-relation facts.

``n_entities x n_relations`` facts, each with a random attribute among ``n_attributes``. Entities are
split into exposure tiers (seen ``50x``, ``2x`` or never during training, the notes' Zipfian exposure);
the model answers every query by argmax, so unseen facts are guesses. Its hidden states (the residual
stream after each block) feed the geometry features; its maximum softmax probability is the base
confidence. Everything is drawn from ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["KnowledgeQA", "make_knowledge_qa", "make_lm_qa"]


@dataclass
class KnowledgeQA:
    """Every fact's model outputs: ``msp`` (n,), ``logits`` (n, K), ``hidden`` (n, L+1, d), ``correct``,
    ``tier`` (exposure count) and the training loss at the end."""

    msp: np.ndarray
    logits: np.ndarray
    hidden: np.ndarray
    correct: np.ndarray
    tier: np.ndarray
    final_loss: float


def make_knowledge_qa(
    seed: int,
    *,
    n_entities: int = 600,
    n_relations: int = 8,
    n_attributes: int = 32,
    exposures: tuple[int, ...] = (50, 2, 0),
    width: int = 64,
    depth: int = 4,
    batch_size: int = 256,
    lr: float = 3e-3,
    per: str = "fact",
    untrained: bool = False,
) -> KnowledgeQA:
    """Train the knowledge model (unless ``untrained``) and return its outputs on every fact."""
    import torch
    from torch import nn

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    attr = rng.integers(0, n_attributes, size=(n_entities, n_relations))
    ent = np.repeat(np.arange(n_entities), n_relations)
    rel = np.tile(np.arange(n_relations), n_entities)
    y = attr[ent, rel]
    if per == "entity":  # an entity is seen in all its facts or in none
        tier = np.array(exposures)[rng.permutation(np.arange(n_entities) % len(exposures))][ent]
    elif per == "fact":  # every entity is known through some facts; single facts are missing
        tier = np.array(exposures)[rng.permutation(np.arange(len(y)) % len(exposures))]
    else:
        raise ValueError(f"per must be 'fact' or 'entity'; got {per!r}")

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.e = nn.Embedding(n_entities, width)
            self.r = nn.Embedding(n_relations, width)
            self.blocks = nn.ModuleList(
                nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
                for _ in range(depth)
            )
            self.out = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, n_attributes))

        def forward(self, e: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = self.e(e) + self.r(r)
            hs = [h]
            for b in self.blocks:
                h = h + b(h)
                hs.append(h)
            return self.out(h), torch.stack(hs, 1)

    net = Net()
    # every fact of a tier appears `exposure` times in one shuffled pass
    rep = np.repeat(np.arange(len(y)), tier)
    order = rep[rng.permutation(len(rep))]
    e_t, r_t, y_t = (torch.as_tensor(a) for a in (ent, rel, y))
    final = float("nan")
    if not untrained and len(order):
        opt = torch.optim.Adam(net.parameters(), lr=lr)
        steps = int(np.ceil(len(order) / batch_size))
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        for s in range(steps):
            b = torch.as_tensor(order[s * batch_size : (s + 1) * batch_size])
            logits, _ = net(e_t[b], r_t[b])
            loss = nn.functional.cross_entropy(logits, y_t[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            final = float(loss.detach())
    with torch.no_grad():
        logits, hidden = net(e_t, r_t)
        p = torch.softmax(logits, -1)
    pred = p.argmax(-1).numpy()
    return KnowledgeQA(
        msp=p.max(-1).values.numpy().astype(np.float64),
        logits=logits.numpy().astype(np.float64),
        hidden=hidden.numpy().astype(np.float64),
        correct=pred == y,
        tier=tier,
        final_loss=final,
    )


_CAPITALS = {
    "France": "Paris",
    "Germany": "Berlin",
    "Italy": "Rome",
    "Spain": "Madrid",
    "Japan": "Tokyo",
    "China": "Beijing",
    "Egypt": "Cairo",
    "Canada": "Ottawa",
    "Russia": "Moscow",
    "Greece": "Athens",
    "Portugal": "Lisbon",
    "Norway": "Oslo",
    "Sweden": "Stockholm",
    "Finland": "Helsinki",
    "Poland": "Warsaw",
    "Austria": "Vienna",
    "Hungary": "Budapest",
    "Ireland": "Dublin",
    "Kenya": "Nairobi",
    "Peru": "Lima",
    "Chile": "Santiago",
    "Argentina": "Buenos Aires",
    "Australia": "Canberra",
    "India": "New Delhi",
    "Thailand": "Bangkok",
    "Vietnam": "Hanoi",
    "Turkey": "Ankara",
    "Iran": "Tehran",
    "Iraq": "Baghdad",
    "Cuba": "Havana",
    "Mongolia": "Ulaanbaatar",
    "Nepal": "Kathmandu",
    "Ghana": "Accra",
    "Senegal": "Dakar",
    "Mali": "Bamako",
    "Bolivia": "Sucre",
    "Uruguay": "Montevideo",
    "Latvia": "Riga",
    "Estonia": "Tallinn",
    "Lithuania": "Vilnius",
}


def make_lm_qa(seed: int, *, n: int = 3000, max_new_tokens: int = 8) -> KnowledgeQA:
    """Full mode: SmolLM2-135M answers generated factual questions (arithmetic of growing size, capitals).

    ``msp`` is the mean token probability of the greedy answer, ``hidden`` its states layer by layer,
    ``logits`` the log-probabilities of the first answer token's 32 most likely tokens plus the rest's
    mass (for the output calibrator and temperature scaling), ``tier`` the question's difficulty (0: capital,
    1-4: digits of the operands). Needs the ``llm`` extra and the ``smollm2-gguf`` asset.
    """
    import torch

    from geode.models import load_smollm2
    from geode.uncertainty.conformal_abstention.features import lm_answer_states

    model, tok = load_smollm2()
    rng = np.random.default_rng(seed)
    prompts, truths, tiers = [], [], []
    countries = list(_CAPITALS)
    for _ in range(n):
        if rng.uniform() < 0.25:
            c = countries[rng.integers(len(countries))]
            prompts.append(f"Question: What is the capital of {c}?\nAnswer:")
            truths.append(_CAPITALS[c])
            tiers.append(0)
        else:
            d = int(rng.integers(1, 5))
            a, b = (int(rng.integers(10 ** (d - 1), 10**d)) for _ in range(2))
            op = "+" if rng.uniform() < 0.5 else "*"
            prompts.append(f"Question: What is {a} {op} {b}?\nAnswer:")
            truths.append(str(a + b if op == "+" else a * b))
            tiers.append(d)
    answers, firsts = [], []
    with torch.no_grad():
        for p in prompts:
            ids = tok(p, return_tensors="pt").input_ids
            out = model.generate(
                ids, max_new_tokens=max_new_tokens, do_sample=False, output_scores=True, return_dict_in_generate=True
            )
            text = tok.decode(out.sequences[0, ids.shape[1] :], skip_special_tokens=True).split("\n")[0]
            answers.append(text if text.strip() else " ")
            lp = torch.log_softmax(out.scores[0][0].float(), -1)
            top = torch.topk(lp, 32).values
            rest = torch.log1p(-top.exp().sum().clamp(max=1 - 1e-6))
            firsts.append(torch.cat([top, rest[None]]).numpy())
    conf, hidden = lm_answer_states(model, tok, prompts, answers)
    correct = np.array([t.lower() in a.lower() for t, a in zip(truths, answers)])
    return KnowledgeQA(
        msp=conf,
        logits=np.stack(firsts).astype(np.float64),
        hidden=hidden,
        correct=correct,
        tier=np.array(tiers),
        final_loss=float("nan"),
    )
