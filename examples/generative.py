"""A zuko flow you trained yourself, wrapped for geode and aligned to an experiment with ADA.

What it shows, on data the script makes itself: a "simulator" gives 2-D samples of a banana-shaped
distribution; the hidden "experiment" differs from it (its first coordinate is shifted and narrower, its bend
stronger). You:

1. train a zuko neural spline flow on the simulation with your own training loop (``zuko.flows.NSF``, Adam);
2. wrap it, ``ZukoFlow.wrap(flow)``: the same density behind the interface geode's ADA uses;
3. align it with ``ADA`` to unpaired experimental samples of two observables, ``x0`` and the distance to the
   origin ``|x|``, selecting the KL weight beta on held-out experimental samples over a small log grid (see
   "Choosing beta" in ``help(geode.generative.ADA)``); beside it, the moment-matching baseline at the same beta.

It prints the Wasserstein-1 distance to fresh experimental samples of each observable (the aligned ones) and of
``x1``, which no observable measures directly, for the base flow, ADA and moment matching, and the KL to the
base; with ``--verbose``, ADA's progress (discriminator loss, reward, KL).

Run::

    python examples/generative.py             # about a minute and a half on one core
    python examples/generative.py --smoke     # the smallest size, a few seconds
    python examples/generative.py --verbose   # ADA's progress on stderr

Needs: zuko (``pip install 'geode[flows]'``); no asset, no network.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

SKIP = 77


def banana(n: int, rng: np.random.Generator, shift: float = 0.0, width: float = 1.0, bend: float = 0.5) -> np.ndarray:
    z = rng.standard_normal((n, 2))
    x0 = shift + width * z[:, 0]
    return np.stack([x0, 0.5 * z[:, 1] + bend * x0**2 - 1.0], axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (seconds; what the tests run)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every draw (default 0)")
    parser.add_argument("--verbose", action="store_true", help="print ADA's progress (stderr)")
    args = parser.parse_args()
    try:
        import zuko
    except ImportError:
        print("skipped: needs zuko (pip install 'geode[flows]')")
        sys.exit(SKIP)
    from scipy.stats import wasserstein_distance as w1

    from geode.generative import ADA, MomentMatching, ZukoFlow

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t_start = time.process_time()
    smoke = args.smoke
    n_sim, train_steps, align_steps = (1000, 30, 10) if smoke else (20000, 1500, 300)
    betas = (0.3,) if smoke else (0.03, 0.1, 0.3, 1.0)

    # 1. your flow and your training loop (zuko's idiom)
    sim = torch.as_tensor(banana(n_sim, rng), dtype=torch.float32)
    flow = zuko.flows.NSF(2, transforms=3, hidden_features=(32, 32))
    opt = torch.optim.Adam(flow.parameters(), lr=3e-3)
    for _ in range(train_steps):
        batch = sim[torch.randint(len(sim), (256,))]
        loss = -flow().log_prob(batch).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    nll = float(loss.detach())
    print(f"1. trained a zuko NSF on {n_sim} simulated points ({train_steps} Adam steps): NLL {nll:.3f}")

    # 2. wrap it
    base = ZukoFlow.wrap(flow)
    print(f"2. wrapped: {type(base).__name__}(dim={base.dim}), the same density in float64")

    # 3. align it to the experiment's observables
    observables = {"x0": lambda x: x[:, 0], "|x|": lambda x: torch.linalg.norm(x, dim=-1)}
    truth = dict(shift=0.8, width=0.7, bend=0.8)

    def observe(x: np.ndarray) -> dict[str, np.ndarray]:
        xt = torch.as_tensor(x)
        return {k: f(xt).detach().numpy() for k, f in observables.items()}

    exp_train = observe(banana(2000, rng, **truth))  # unpaired samples, one set per observable
    exp_val = observe(banana(2000, rng, **truth))
    test = banana(4000, rng, **truth)

    def scores(gen: torch.nn.Module, ref: np.ndarray, seed: int) -> dict[str, float]:
        torch.manual_seed(seed)
        x = gen.sample(4000).numpy()
        o, r = observe(x), observe(ref)
        return {**{k: w1(o[k], r[k]) for k in observables}, "x1 (unobserved)": w1(x[:, 1], ref[:, 1])}

    fits = {}
    for beta in betas:
        t0 = time.process_time()
        ada = ADA(base, observables, beta=beta, lr=2e-3, batch=512)
        gen = ada.fit(exp_train, steps=align_steps, seed=args.seed, verbose=args.verbose)
        val = sum(w1(observe(gen.sample(4000).numpy())[k], exp_val[k]) for k in observables)
        fits[beta] = (val, gen)
        cpu = time.process_time() - t0
        print(f"   ADA beta {beta:<5g}: validation W1 (sum over observables) {val:.4f}  ({cpu:.1f} CPU s)")
    beta = min(fits, key=lambda b: fits[b][0])
    gen = fits[beta][1]
    mm = MomentMatching(base, observables, beta=beta, lr=2e-3, batch=512).fit(exp_train, steps=align_steps)
    print(f"3. ADA, beta {beta} selected on held-out experimental samples; {align_steps} alignment steps")
    rows = {"base flow (simulation)": base, "ADA": gen, "moment matching": mm}
    table = {name: scores(model, test, seed=1) for name, model in rows.items()}
    cols = list(next(iter(table.values())))
    print(f"   {'W1 to the experiment':24s}" + "".join(f"{c:>18s}" for c in cols) + f"{'KL to base':>12s}")
    for name, model in rows.items():
        with torch.no_grad():
            x, logq = model.rsample_and_log_prob(4000)
            kl = float((logq - base.log_prob(x)).mean())
        print(f"   {name:24s}" + "".join(f"{table[name][c]:18.4f}" for c in cols) + f"{kl:12.3f}")
    drop = min(table["base flow (simulation)"][k] / table["ADA"][k] for k in observables)
    print(f"   worst aligned observable's W1 drop, ADA vs base: {drop:.2f}x")
    print(f"\n{time.process_time() - t_start:.1f} CPU s")


if __name__ == "__main__":
    main()
