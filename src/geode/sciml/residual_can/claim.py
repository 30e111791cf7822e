"""Claim check of the ResidualCAN paper: far lower stationary Allen-Cahn error than a SiLU MLP."""

from __future__ import annotations

from typing import Any

from geode.claims import Outcome, Threshold, register

_MODES: dict[str, dict[str, Any]] = {
    "smoke": dict(
        eps_values=(1.0,),
        architectures=("SiLU-MLP", "CauchyAct-MLP", "ResidualCAN", "ResidualCAN-RBF"),
        factorial_losses=("Cauchy",),
        poisson=False,
        steps=15,
        n_collocation=64,
        n_test=201,
    ),
    "quick": dict(
        eps_values=(1.0, 0.1),
        architectures=None,
        factorial_losses=("Cauchy",),
        poisson=True,
        steps=2000,
        n_collocation=256,
        n_test=2001,
    ),
    "full": dict(
        eps_values=(1.0, 0.5, 0.2, 0.1, 0.05),
        architectures=None,
        factorial_losses=("L1", "Huber", "Cauchy"),
        poisson=True,
        steps=20000,
        n_collocation=512,
        n_test=2001,
    ),
}


def _tag(problem: str) -> str:
    if problem.startswith("Allen-Cahn"):
        return "ac_eps" + problem.split("=")[1].replace(".", "p")
    return "poisson"


def _arch_tag(arch: str) -> str:
    return {
        "SiLU-MLP": "silu",
        "CauchyAct-MLP": "cauchymlp",
        "ResidualCAN": "rescan",
        "ResidualCAN-RBF": "rbf",
        "SIREN": "siren",
        "Fourier-MLP": "fourier",
    }[arch]


@register(
    "residual-can",
    claim=(
        "ResidualCAN (a Cauchy-activation MLP plus a softmax-weighted dense Cauchy-node residual) reaches far lower "
        "stationary Allen-Cahn PINN error than a SiLU MLP, mostly thanks to the dense local-basis residual, without "
        "dominating on Poisson/Burgers."
    ),
    paper_figure=(
        "1520x lower stationary Allen-Cahn error than a SiLU MLP at eps = 1; strongest or second strongest across "
        "the eps-suite; most of the gain kept by a dense local-basis residual without Cauchy activation"
    ),
    baselines=(
        "SiLU MLP",
        "CauchyAct MLP (no residual)",
        "Gaussian-RBF-node ResidualCAN",
        "SIREN",
        "Fourier-feature MLP",
    ),
    thresholds=(
        Threshold(
            "strong",
            "silu_over_rescan_eps1",
            ">=",
            100.0,
            "ResidualCAN's rel. L2 error at eps=1 >= 100x below SiLU-MLP's",
        ),
        Threshold(
            "rbf_keeps",
            "silu_over_rbf_eps1",
            ">=",
            10.0,
            "the Gaussian-RBF-node ablation still beats SiLU-MLP >= 10x at eps=1",
        ),
        Threshold("some", "silu_over_rescan_eps1", ">=", 10.0, "ResidualCAN beats SiLU-MLP >= 10x at eps=1"),
    ),
    reproduced="strong and rbf_keeps",
    partial="some",
    key_metric="silu_over_rescan_eps1",
)
def run(mode: str, seed: int) -> Outcome:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import torch

    from geode.sciml.residual_can.experiment import ARCHITECTURES, run_pinn_suite

    cfg = dict(_MODES[mode])
    if cfg["architectures"] is None:
        cfg["architectures"] = ARCHITECTURES
    suite = run_pinn_suite(**cfg, factorial=("SiLU-MLP", "ResidualCAN"), lr=1e-3, cauchy_c=1.0, seed=seed)
    rows = suite.rows
    err = {(r["architecture"], _tag(r["problem"]), r["loss"]): r["rel_l2"] for r in rows}
    metrics: dict[str, float] = {f"err_{p}_{_arch_tag(a)}_{loss.lower()}": v for (a, p, loss), v in err.items()}

    def ratio(a: str, b: str, problem: str, loss_a: str = "MSE", loss_b: str = "MSE") -> float:
        return err[(a, problem, loss_a)] / max(err[(b, problem, loss_b)], 1e-300)

    metrics["silu_over_rescan_eps1"] = ratio("SiLU-MLP", "ResidualCAN", "ac_eps1")
    metrics["silu_over_rbf_eps1"] = ratio("SiLU-MLP", "ResidualCAN-RBF", "ac_eps1")
    metrics["silu_over_cauchymlp_eps1"] = ratio("SiLU-MLP", "CauchyAct-MLP", "ac_eps1")
    ac_tags = [_tag(f"Allen-Cahn eps={e:g}") for e in cfg["eps_values"]]
    top2 = []
    for tag in ac_tags:
        ranked = sorted(cfg["architectures"], key=lambda a: err[(a, tag, "MSE")])
        rank = ranked.index("ResidualCAN") + 1
        metrics[f"rescan_rank_{tag}"] = float(rank)
        top2.append(rank <= 2)
        for loss in cfg["factorial_losses"]:
            metrics[f"{loss.lower()}_loss_gain_silu_{tag}"] = ratio("SiLU-MLP", "SiLU-MLP", tag, "MSE", loss)
            metrics[f"{loss.lower()}_loss_gain_rescan_{tag}"] = ratio("ResidualCAN", "ResidualCAN", tag, "MSE", loss)
    metrics["rescan_top2_fraction"] = float(np.mean(top2))
    if cfg["poisson"]:
        spectral = min(err[(a, "poisson", "MSE")] for a in ("SIREN", "Fourier-MLP") if a in cfg["architectures"])
        metrics["poisson_rescan_over_best_spectral"] = err[("ResidualCAN", "poisson", "MSE")] / spectral
        metrics["poisson_silu_over_rescan"] = ratio("SiLU-MLP", "ResidualCAN", "poisson")

    # figure 1: relative L2 errors
    problems = sorted({_tag(r["problem"]) for r in rows}, key=lambda t: (t == "poisson", t))
    fig1, ax = plt.subplots(figsize=(6.4, 3.6))
    archs = list(cfg["architectures"])
    width = 0.8 / len(archs)
    for i, a in enumerate(archs):
        vals = [err.get((a, p, "MSE"), np.nan) for p in problems]
        ax.bar(np.arange(len(problems)) + i * width, vals, width, label=a)
    ax.set_xticks(np.arange(len(problems)) + 0.4 - width / 2, problems, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("relative L2 error (MSE loss)")
    ax.legend(fontsize=7, ncol=2)
    fig1.tight_layout()

    # figure 2: solutions at the smallest eps, loss factorial
    eps_min = min(cfg["eps_values"])
    fig2, ax = plt.subplots(figsize=(5.6, 3.6))
    x = torch.linspace(-1.0, 1.0, 401, dtype=torch.float64).unsqueeze(-1)
    ax.plot(x[:, 0], torch.tanh(x[:, 0] / (2**0.5 * eps_min)), "k-", lw=2, label="exact")
    for arch in ("SiLU-MLP", "ResidualCAN"):
        model, members = suite.models[arch]
        with torch.no_grad():
            out = model(x)
        for e, (problem, loss) in enumerate(members):
            if problem.name == f"Allen-Cahn eps={eps_min:g}":
                ax.plot(x[:, 0], out[e, :, 0], lw=1, ls="-" if loss == "MSE" else "--", label=f"{arch}, {loss}")
    ax.set_title(f"stationary Allen-Cahn, eps = {eps_min:g}", fontsize=9)
    ax.set_xlabel("x")
    ax.legend(fontsize=7)
    fig2.tight_layout()

    # figure 3: training loss
    fig3, ax = plt.subplots(figsize=(5.6, 3.6))
    for a in archs:
        model, members = suite.models[a]
        e = [i for i, (p, loss) in enumerate(members) if _tag(p.name) == "ac_eps1" and loss == "MSE"][0]
        ax.plot(suite.histories[a][:, e].numpy(), lw=1, label=a)
    ax.set_yscale("log")
    ax.set_xlabel("Adam step")
    ax.set_ylabel("PINN loss, Allen-Cahn eps = 1")
    ax.legend(fontsize=7)
    fig3.tight_layout()

    table = [{k: (round(v, 8) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]
    summary = (
        f"{mode}: at eps=1 ResidualCAN's rel. L2 error {err[('ResidualCAN', 'ac_eps1', 'MSE')]:.2e} vs SiLU-MLP "
        f"{err[('SiLU-MLP', 'ac_eps1', 'MSE')]:.2e} ({metrics['silu_over_rescan_eps1']:.1f}x); RBF-node ablation "
        f"{metrics['silu_over_rbf_eps1']:.1f}x, Cauchy MLP without residual {metrics['silu_over_cauchymlp_eps1']:.1f}x"
    )
    notes = [
        f"1-D PINNs on [-1, 1]: {cfg['n_collocation']} equispaced collocation points plus the 2 boundary points, "
        f"boundary weight 1, Adam lr 1e-3, {cfg['steps']} steps, float64, no L-BFGS stage; rel. L2 error on "
        f"{cfg['n_test']} points. Allen-Cahn eps in {list(cfg['eps_values'])}"
        + ("; Poisson -u'' = f with u = sin(pi x) + 0.2 sin(5 pi x)." if cfg["poisson"] else "."),
        "architectures (parameters): SiLU-MLP [1,32,32,1] (1153); CauchyAct-MLP [1,64,1] (385); ResidualCAN "
        "Cauchy [1,32,1] + 64 Cauchy nodes (577); RBF ablation with Gaussian nodes (449); SIREN [1,32,32,1] with "
        "omega0 = 10 (1153, not tuned); Fourier-feature MLP, 16 features with sigma = 1 into [32,32,32,1] (2145, "
        "not tuned).",
        f"loss factorial on the Allen-Cahn suite: {{SiLU-MLP, ResidualCAN}} x {{MSE, "
        f"{', '.join(cfg['factorial_losses'])}}}; Cauchy loss scale c = 1, applied to residual and boundary terms.",
        "one training seed per run; the harness averages metrics over --seeds.",
    ]
    return Outcome(
        metrics={k: float(v) for k, v in metrics.items()},
        table=table,
        figures={"errors": fig1, "allen_cahn_profiles": fig2, "training_loss": fig3},
        summary=summary,
        notes=notes,
    )
