"""Computational neuroscience with geode.neuro: causal pieces of spiking networks, and geometry-aware SSL on LFP.

What it shows, each part on data the script makes itself:

1. ``causal-pieces``: single-spike nLIF networks (exact, event-based) on Yin-Yang data, initialised from a grid of
   weight distributions. The script counts each network's causal pieces at initialisation
   (``count_causal_pieces``), trains every network the same way with ``torch.optim.Adam`` on the first-spike
   loss, and correlates the log piece count with the test accuracy (``rank_correlation``): the paper's claim is
   that networks with more pieces at initialisation train better.
2. ``lfp-geossl``: simulated multichannel LFP recordings along a probe (``simulate_session``). A small encoder of
   single-channel windows is pre-trained with the geometry-contrastive objective (positives: nearby channels of
   the same window) and, for comparison, with wav2vec2-style masked prediction; linear probes on the frozen
   embeddings then predict each channel's brain region and depth in a held-out session, beside the spectral
   baseline (log Welch PSD).

Run::

    python examples/neuro.py           # the demo size: about a minute on one core
    python examples/neuro.py --smoke   # the smallest size, a few seconds

Needs: nothing beyond geode's core install (torch, numpy, scipy, scikit-learn); no asset, no network.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch
from torch import nn

from geode.neuro import (
    LFPEncoder,
    NLIFNetwork,
    ProbeLayout,
    count_causal_pieces,
    first_spike_accuracy,
    first_spike_loss,
    geometry_contrastive_loss,
    masked_prediction_loss,
    rank_correlation,
    simulate_session,
    welch_features,
    yinyang_spike_data,
)

SIZES = {
    "smoke": dict(inits=((0.5, 0.1), (1.5, 0.5), (2.0, 1.5), (4.0, 1.5)), hidden=20, n_train=300, epochs=3,
                  channels=16, windows=4, pre_sessions=2, test_sessions=1, ssl_steps=3, groups=2, pairs=4),
    "demo": dict(inits=((0.5, 0.1), *((m, s) for m in (1.5, 2.0, 3.0, 4.0) for s in (0.1, 0.5, 1.5))),
                 hidden=40, n_train=1000, epochs=20, channels=48, windows=8, pre_sessions=4, test_sessions=2,
                 ssl_steps=200, groups=6, pairs=8),
}  # fmt: skip
T_MAX = 4.0  # simulated window (tau_s = 1): later spikes count as "no spike"


def part_causal_pieces(cfg: dict, seed: int) -> None:
    print("\n1. causal-pieces: pieces at initialisation against accuracy after the same training")
    x_train, y_train = yinyang_spike_data(cfg["n_train"], seed=seed)
    x_test, y_test = yinyang_spike_data(1000, seed=seed + 1)
    print(f"   Yin-Yang as 5 input spike times, {len(y_train)} training points; networks [5, {cfg['hidden']}, 3]")
    print(f"   {'weights N(m, s)':>16s} {'pieces':>7s} {'silent':>7s} {'test acc':>9s}")
    pieces, accs = [], []
    for m, s in cfg["inits"]:
        net = NLIFNetwork.from_sizes([5, cfg["hidden"], 3], weight_mean=m, weight_std=s, t_max=T_MAX, seed=seed)
        n_pieces, log = count_causal_pieces(net, x_train, log=True)
        opt = torch.optim.Adam(net.parameters(), lr=5e-3)
        gen = torch.Generator().manual_seed(seed)
        for _ in range(cfg["epochs"]):
            for idx in torch.randperm(len(y_train), generator=gen).split(50):
                opt.zero_grad()
                first_spike_loss(net(x_train[idx])[0], y_train[idx], t_max=T_MAX).backward()
                opt.step()
        with torch.no_grad():
            acc = first_spike_accuracy(net(x_test)[0], y_test)
        pieces.append(n_pieces)
        accs.append(acc)
        print(f"   {f'm={m:g}, s={s:g}':>16s} {n_pieces:7d} {log['silent_fraction']:7.0%} {acc:9.1%}")
    rho, defined = rank_correlation(np.log(pieces), np.asarray(accs))
    found = f"Spearman rho(log #pieces at init, test accuracy) = {rho:.2f}" if defined else "rho undefined"
    print(f"   found: {found} over {len(accs)} initialisations (best accuracy {max(accs):.1%}, chance 33%)")


def part_lfp_geossl(cfg: dict, seed: int) -> None:
    print("\n2. lfp-geossl: pre-train on unlabelled recordings, probe region and depth in held-out sessions")
    layout = ProbeLayout.linear(cfg["channels"], pitch=20.0)
    n_pre, n_test = cfg["pre_sessions"], cfg["test_sessions"]
    sessions = [simulate_session(seed * 100 + i, layout=layout, n_windows=cfg["windows"]) for i in range(n_pre + 2)]
    sessions += [simulate_session(seed * 100 + 50 + i, layout=layout, n_windows=cfg["windows"]) for i in range(n_test)]
    probe_train, probe_test = sessions[:n_pre + 2], sessions[n_pre + 2:]  # fmt: skip
    print(f"   {n_pre} pre-training sessions ({cfg['channels']} channels x {cfg['windows']} windows of 2 s),"
          f" probes fitted on {len(probe_train)} sessions, tested on {n_test} held-out ones")  # fmt: skip

    def pretrain(kind: str) -> LFPEncoder:
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        gen = torch.Generator().manual_seed(seed)
        enc = LFPEncoder(dim=32)
        d = enc.dim
        if kind == "masked":
            head: nn.Module = nn.ModuleDict({"pred": nn.Linear(d, d), "target": nn.Linear(d, d)})
        else:
            head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        opt = torch.optim.AdamW([*enc.parameters(), *head.parameters()], lr=3e-3, weight_decay=1e-4)
        lfp = [torch.as_tensor(s.lfp) for s in sessions[:n_pre]]
        n_ch, n_win = lfp[0].shape[:2]
        for _ in range(cfg["ssl_steps"]):
            xs, depth, group = [], [], []
            for g in range(cfg["groups"]):  # a group: one session and window, pairs of nearby channels
                s, w = int(rng.integers(n_pre)), int(rng.integers(n_win))
                anchor = rng.integers(0, n_ch - 2, cfg["pairs"])
                ch = np.concatenate([anchor, anchor + rng.integers(1, 3, cfg["pairs"])])
                xs.append(lfp[s][ch, w])
                depth.append(layout.positions[ch])
                group.append(np.full(ch.size, g))
            x = torch.cat(xs)
            if kind == "masked":
                loss = masked_prediction_loss(enc, head, x, gen)
            else:
                depth_t = torch.as_tensor(np.concatenate(depth), dtype=torch.float32)
                loss = geometry_contrastive_loss(head(enc(x)), depth_t, torch.as_tensor(np.concatenate(group)))
            opt.zero_grad()
            loss.backward()
            opt.step()
        return enc.eval()

    def embed(enc: LFPEncoder, s) -> np.ndarray:  # each channel's mean embedding over its windows
        with torch.no_grad():
            z = enc(torch.as_tensor(s.lfp).reshape(-1, s.lfp.shape[-1]))
        return z.double().numpy().reshape(s.lfp.shape[0], s.lfp.shape[1], -1).mean(1)

    def probe(features: list[np.ndarray]) -> tuple[float, float]:
        from sklearn.linear_model import LogisticRegression, Ridge
        from sklearn.metrics import balanced_accuracy_score

        n = len(probe_train)
        xtr, xte = np.concatenate(features[:n]), np.concatenate(features[n:])
        mu, sd = xtr.mean(0), xtr.std(0) + 1e-6
        xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
        region_tr = np.concatenate([s.region for s in probe_train])
        region_te = np.concatenate([s.region for s in probe_test])
        depth_tr = np.concatenate([s.depth for s in probe_train])
        depth_te = np.concatenate([s.depth for s in probe_test])
        clf = LogisticRegression(C=1.0, max_iter=500, class_weight="balanced").fit(xtr, region_tr)
        with warnings.catch_warnings():  # a held-out session may miss a region the probe predicts
            warnings.simplefilter("ignore", UserWarning)
            ba = balanced_accuracy_score(region_te, clf.predict(xte))
        mae = np.abs(Ridge(alpha=1.0).fit(xtr, depth_tr).predict(xte) - depth_te).mean()
        return float(ba), float(mae)

    results = {}
    for kind, name in (("geometry", "geometry-contrastive"), ("masked", "masked prediction")):
        t0 = time.process_time()
        enc = pretrain(kind)
        results[name] = probe([embed(enc, s) for s in probe_train + probe_test])
        print(f"   pre-trained {name} ({cfg['ssl_steps']} steps, {time.process_time() - t0:.0f} s)")
    results["Welch PSD (no SSL)"] = probe([welch_features(s.lfp, s.fs).mean(1) for s in probe_train + probe_test])
    depth_chance = np.abs(np.concatenate([s.depth for s in probe_test]) - np.mean(
        np.concatenate([s.depth for s in probe_train]))).mean()  # fmt: skip
    print(f"   {'features':>22s} {'region bal. acc':>16s} {'depth MAE (um)':>15s}")
    for name, (ba, mae) in results.items():
        print(f"   {name:>22s} {ba:16.3f} {mae:15.0f}")
    print(f"   {'chance':>22s} {1 / 6:16.3f} {depth_chance:15.0f}")
    geo, mask, psd = results["geometry-contrastive"], results["masked prediction"], results["Welch PSD (no SSL)"]
    print(f"   found: geometry-contrastive vs masked prediction: balanced accuracy {geo[0] - mask[0]:+.3f},"
          f" depth error {geo[1] - mask[1]:+.0f} um; vs the Welch baseline: {geo[0] - psd[0]:+.3f},"
          f" {geo[1] - psd[1]:+.0f} um")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the smallest size (seconds; what the tests run)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the initialisations")
    parser.add_argument("--parts", default="12", help="which parts to run, e.g. 2 (default both)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = SIZES["smoke" if args.smoke else "demo"]
    t0 = time.perf_counter()
    for key in args.parts:
        if key == "1":
            part_causal_pieces(cfg, args.seed)
        elif key == "2":
            part_lfp_geossl(cfg, args.seed)
        else:
            parser.error(f"--parts takes the digits 1 and 2; got {key!r}")
    print(f"\ndone in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
