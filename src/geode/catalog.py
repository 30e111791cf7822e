"""The catalogue of the 57 papers geode covers.

Each :class:`Paper` has a slug, a title, a field (the subpackage ``geode.<field>`` that holds it) and
a status. The status is never a hand-edited flag: a paper is ``implemented`` exactly when its folder
``geode/<field>/<slug with - as _>/`` exists and holds a ``claim.py`` (which registers its claim;
``tests/test_contract.py`` checks that it does). Everything here reads the file system only, so
``geode list`` stays fast and imports neither torch nor any paper module.
"""

from __future__ import annotations

import fnmatch
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

__all__ = ["FIELDS", "Paper", "get", "markdown_table", "papers", "select", "sync_readme"]

_PACKAGE_DIR = Path(__file__).resolve().parent

Status = Literal["planned", "implemented"]

# slug, title, field, feasibility on CPU: from the paper collection's INDEX.md (a test keeps them in sync).
_PAPERS: tuple[tuple[str, str, str, str], ...] = (
    ("polar-vbll", "PoLAR-VBLL: Bayesian last layer on polar-decomposed adapters", "adapters", "high"),
    ("sama", "SaMA: scalable morpho (generalised Kronecker) adaptation", "adapters", "medium"),
    ("sd-lora", "SD-LoRA: structural distillation into CLIP-LoRA", "adapters", "low"),
    ("sds-lora", "SDS-LoRA: decoupled singular values in low-rank adaptation", "adapters", "high"),
    ("agop-engagement", "Optimization engagement: AGOP vs probe concept subspace", "analysis", "high"),
    ("gae", "GAE: geometry-adaptive explainer for SAEs under OOD shift", "analysis", "high"),
    ("msa", "MSA: metric similarity analysis of neural manifolds", "analysis", "high"),
    ("weight-drift", "Negative weight drift and activation sparsity", "analysis", "high"),
    ("moe-quant", "MoE quantisation with routing replay and load-aware low-rank compensation", "compression", "high"),
    ("sara", "SARA: step-adaptive rank for diffusion inference", "compression", "high"),
    ("sphquant", "SPHQuant: spherical weight-only quantisation", "compression", "high"),
    ("stac-r", "STAC-R: subspace-tracked activation compression", "compression", "high"),
    ("comparability-fusion", "Comparability recovery for soft-output fusion", "ensembles", "high"),
    ("mda", "MDA: model merging with directional alignment", "ensembles", "medium"),
    ("safecut", "SafeCut: cut-statistic-gated mutual correction", "ensembles", "medium"),
    ("craft", "CRAFT: conflict-resolved federated aggregation", "federated", "high"),
    ("fed-prior-bank", "Federated low-shot intrusion detection with a prior bank", "federated", "high"),
    ("rise", "RISE: geometry-regularized federated knowledge distillation", "federated", "medium"),
    ("ada", "ADA: adversarial distribution alignment to experimental observables", "generative", "medium"),
    ("camel", "CAMEL: creator-appraiser meta-learning for creativity", "generative", "medium"),
    ("fm-tube-lipschitz", "Flow matching near manifolds: tube-local Lipschitz diagnostics", "generative", "high"),
    ("castor", "Castor: self-tuning graph filter", "graphs", "high"),
    ("connectome-eiv", "GNNs on connectomes as an errors-in-variables problem", "graphs", "high"),
    ("chord", "CHoRD: chiplet-GPU kernel scheduling and data placement", "inference", "medium"),
    ("specblock", "SpecBlock: block-iterative speculative drafting", "inference", "medium"),
    ("spirit", "SPIRIT: speed-driven self-speculative decoding", "inference", "medium"),
    ("svf", "SVF: Smallest Volume First LLM serving scheduling", "inference", "high"),
    ("pack3d", "Pack3D: geometry-aware local-global attention on packed 3D tokens", "layers", "high"),
    ("rubiconv", "RubiConv: boundary-respecting FFT convolution on packed sequences", "layers", "high"),
    ("specdrop", "SpecDrop: fixed parameter-free category routing", "layers", "high"),
    ("bvpo", "BVPO: bias-variance optimised preference optimisation", "llm", "high"),
    ("bytedistill", "ByteDistill: byte-level cross-tokenizer distillation", "llm", "medium"),
    ("captrack", "CapTrack: capability-centric forgetting analysis", "llm", "high"),
    ("cd-scaling", "Compute-Data scaling laws with token effectiveness", "llm", "high"),
    ("compose", "COMPOSE: dual-graph future mathematical claim generation", "llm", "low"),
    ("cpa", "CPA: cross-precision alignment for low-precision RL rollouts", "llm", "medium"),
    ("sr-grpo", "Stable rank and SR-GRPO", "llm", "high"),
    ("causal-pieces", "Causal pieces of spiking neural networks", "neuro", "high"),
    ("lfp-geossl", "Geometry-aware SSL for LFP electrode localisation", "neuro", "medium"),
    ("hozo", "HoZO: zeroth-order optimisation on the positive orthant", "optim", "high"),
    ("ga-srmc", "GA-SRMC: geometry-aware score-repellent Monte Carlo", "probabilistic", "high"),
    ("neural-qst", "Neural quantum state tomography with max-sliced W1", "probabilistic", "medium"),
    ("ot-sampling-error", "Semi-dual OT sampling-error and intrinsic-dimension estimators", "probabilistic", "high"),
    ("fb-abstraction", "Forward-backward representations with temporal abstraction", "rl", "medium"),
    ("gckan", "Geometry-constrained KANs (learned duality-map exponent p)", "sciml", "high"),
    ("inr-error", "Ground-truth-free error prediction for compressive signal parameterisations", "sciml", "high"),
    ("pde-pretrain", "Pre-training PDE surrogates on 3D geometries", "sciml", "medium"),
    ("residual-can", "Cauchy activations and ResidualCAN for scientific learning", "sciml", "high"),
    ("hamjepa", "HamJEPA: Hamiltonian cross-view coupling for JEPAs", "ssl", "medium"),
    ("specalign", "SpecAlign: spectral characteristic-function alignment", "ssl", "medium"),
    ("conformal-abstention", "Conformal Abstention for LLMs", "uncertainty", "high"),
    ("reef-gp", "REEF-GP: residual GP on neural-operator features", "uncertainty", "medium"),
    ("ufcod", "UFCOD: few-shot cross-domain OOD detection from diffusion paths", "uncertainty", "high"),
    ("bridge-ad", "Bridge-AD: sim-to-real alignment for end-to-end driving", "vision3d", "low"),
    ("gard", "GARD: geometry-aware representation denoising for 3D reconstruction", "vision3d", "medium"),
    ("lievlm", "LieVLM: Lie routing of semantics by 3D geometry", "vision3d", "medium"),
    ("virtualrect", "VirtualRect: online stereo rectification", "vision3d", "high"),
)

FIELDS: tuple[str, ...] = tuple(sorted({row[2] for row in _PAPERS}))


@dataclass(frozen=True)
class Paper:
    """One paper of the collection.

    Attributes
    ----------
    slug : str
        Short identifier, e.g. ``"ga-srmc"``; used on the command line.
    title : str
        The paper's short title.
    field : str
        Research field; the paper lives in ``geode.<field>.<module>``.
    feasibility : str
        How feasible a faithful CPU-scale check is (``high``, ``medium``, ``low``).
    """

    slug: str
    title: str
    field: str
    feasibility: str

    @property
    def module(self) -> str:
        """Dotted module path of the paper's folder, e.g. ``geode.probabilistic.ga_srmc``."""
        return f"geode.{self.field}.{self.slug.replace('-', '_')}"

    @property
    def folder(self) -> Path:
        """The paper's folder inside the installed package (it may not exist yet)."""
        return _PACKAGE_DIR / self.field / self.slug.replace("-", "_")

    @property
    def status(self) -> Status:
        """``implemented`` when the paper's folder holds a ``claim.py``, else ``planned``."""
        return "implemented" if (self.folder / "claim.py").is_file() else "planned"

    def to_dict(self) -> dict[str, str]:
        """Plain dictionary with ``slug``, ``title``, ``field``, ``feasibility`` and ``status``."""
        return {**asdict(self), "status": self.status}


_BY_SLUG: dict[str, Paper] = {s: Paper(s, t, f, fe) for s, t, f, fe in _PAPERS}


def papers(field: str | None = None, status: Status | None = None) -> list[Paper]:
    """All papers, sorted by field then slug, optionally filtered by ``field`` and ``status``."""
    if field is not None and field not in FIELDS:
        raise ValueError(f"field must be one of {', '.join(FIELDS)}; got {field!r}")
    if status is not None and status not in ("planned", "implemented"):
        raise ValueError(f"status must be 'planned' or 'implemented'; got {status!r}")
    out = sorted(_BY_SLUG.values(), key=lambda p: (p.field, p.slug))
    return [p for p in out if (field is None or p.field == field) and (status is None or p.status == status)]


def get(slug: str) -> Paper:
    """The paper with this slug; ``KeyError`` with the closest known slugs when there is none."""
    try:
        return _BY_SLUG[slug]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(slug, list(_BY_SLUG), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise KeyError(f"unknown paper slug {slug!r}{hint}") from None


def select(patterns: list[str] | tuple[str, ...], field: str | None = None) -> list[Paper]:
    """Papers whose slug matches any of ``patterns`` (exact slugs or shell-style wildcards).

    Raises ``KeyError`` naming the first pattern that matches nothing.
    """
    pool = papers(field)
    chosen: dict[str, Paper] = {}
    for pattern in patterns:
        hits = [p for p in pool if fnmatch.fnmatchcase(p.slug, pattern)]
        if not hits:
            if any(ch in pattern for ch in "*?["):
                raise KeyError(f"no paper slug matches {pattern!r}")
            get(pattern)  # raises with a suggestion
            raise KeyError(f"paper {pattern!r} is not in field {field!r}")
        chosen.update((p.slug, p) for p in hits)
    return sorted(chosen.values(), key=lambda p: (p.field, p.slug))


def markdown_table() -> str:
    """The catalogue as a Markdown table (README.md embeds it; a test keeps the two in sync)."""
    lines = ["| slug | paper | field | status |", "|---|---|---|---|"]
    for p in papers():
        lines.append(f"| `{p.slug}` | {p.title} | {p.field} | {p.status} |")
    return "\n".join(lines)


README_START, README_END = "<!-- papers:start -->", "<!-- papers:end -->"


def sync_readme(path: str | Path) -> bool:
    """Rewrite the paper table between the README's markers; return True when the file changed."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if README_START not in text or README_END not in text:
        raise ValueError(f"{path} has no {README_START} ... {README_END} markers")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    new = f"{head}{README_START}\n{markdown_table()}\n{README_END}{tail}"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":  # python -m geode.catalog [README.md]: print the table, or sync a README
    import sys

    if len(sys.argv) > 1:
        print("updated" if sync_readme(sys.argv[1]) else "already in sync")
    else:
        print(markdown_table())
