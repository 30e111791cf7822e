"""The claim registry: ``@register`` in a paper's ``claim.py``, and lookup by slug.

Claims are loaded lazily: :func:`load_claim` imports ``geode.<field>.<paper>.claim`` only when a
claim is asked for, so listing the catalogue never imports torch or a paper's dependencies. It loads the
``claim.py`` file alone, without running its field's and paper's package ``__init__`` (which import the
methods, and so torch): a claim defines its thresholds and rules at import and imports what its ``run``
needs inside ``run``, so ``geode show`` reads a claim without importing torch.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import geode
from geode import catalog
from geode.claims.claim import Claim
from geode.claims.types import MODES, Learned, Outcome, Threshold
from geode.claims.verdict import Rules
from geode.core.random import set_single_thread
from geode.core.validation import check_choice, check_int

__all__ = ["load_claim", "load_claims", "register", "registered"]

_REGISTRY: dict[str, Claim] = {}
_ALONE: set[str] = set()  # claim modules loaded without their packages (see _import_claim_module)


def register(
    slug: str,
    *,
    claim: str,
    paper_figure: str,
    baselines: Sequence[str],
    thresholds: Sequence[Threshold],
    floors: Sequence[Threshold] = (),
    reproduced: str | None = None,
    partial: str | None = None,
    method: str | Sequence[str] = (),
    tuned: Sequence[str] = (),
    untuned: Mapping[str, str] | None = None,
    learned: Sequence[Learned] = (),
    no_ablation: str = "",
    no_learned: str = "",
    key_metric: str | None = None,
    timing_metrics: Sequence[str] = (),
    min_seeds: int = 3,
    agreement: float = 2 / 3,
    replication: str = "",
    revision: int = 1,
    assets: Sequence[str] = (),
) -> Callable[[Callable[[str, int], Outcome]], Callable[[str, int], Outcome]]:
    """Register the decorated ``run(mode, seed) -> Outcome`` as the claim check of paper ``slug``.

    The registered (and returned) function checks ``mode`` (one of :data:`MODES`) and ``seed`` (an int
    >= 0) and sets one BLAS/torch thread before calling ``run``, so a claim need not repeat that. What the
    protocol asks of a claim (``shared/notes/claim-protocol.md``, v3) is declared here, as data; the harness
    enforces it when it judges the runs (:func:`geode.claims.verdict.evaluate`).

    Parameters
    ----------
    slug : str
        A slug of :mod:`geode.catalog` (slugs starting with ``_`` are reserved for the harness's own tests).
    claim : str
        The paper's headline claim in one sentence.
    paper_figure : str
        The paper's own number(s) for it.
    baselines : sequence of str
        The baselines the paper names, as compared in the check.
    thresholds : sequence of Threshold
        The verdict's bounds on measured metrics, fixed before the check runs. A headline threshold names
        its idea ablation (``ablation=``), the arms it compares (``arms=``) or the floors it needs
        (``requires=``).
    floors : sequence of Threshold
        Validity floors: what each arm (``arms=``) or the bed (no arms) must reach for a comparison to mean
        anything. A failed floor makes only the comparisons that need it unknown. A floor on ``method`` is
        refused: that is the claim, not its validity.
    reproduced, partial : str, optional
        Boolean rules over the thresholds' names (``"a and (b or c)"``). ``reproduced`` defaults to all
        thresholds holding; ``partial`` to never.
    method : str or sequence of str
        The paper's own method (its arm name), and its law if the claim has one.
    tuned : sequence of str
        The methods (``method`` keys of ``Outcome.tuned``) that must be tuned with the same budget, at least 3
        values per numeric knob, and no selection left on an edge; a comparison with one that fails is unknown.
        A name may be a pattern (``"*: GPR-GNN"``) matching the keys of several studies.
    untuned : mapping of str to str, optional
        Methods with nothing to tune, each with the reason (``{"FCFS": "no parameter"}``).
    learned : sequence of Learned
        Learned arms with the metric of their untrained version and of the trivial reference; the floors
        follow from them.
    no_ablation, no_learned : str
        Why no idea ablation / no learned arm applies, where one does not.
    key_metric : str, optional
        Metric shown in the report's overview; defaults to the first threshold's metric.
    timing_metrics : sequence of str, optional
        Metrics measured from wall-clock time (e.g. speed-up ratios); the contract tests exempt them, and only
        them, from "the same seed gives identical metrics".
    min_seeds : int, optional
        Seeds the verdict needs (default 3, the protocol's minimum).
    agreement : float, optional
        Share of seeds that must read a verdict on their own for the claim to read it (default 2/3).
    replication : str, optional
        Required when ``min_seeds < 3``: how one run replicates internally ("60 repetitions x 3 draws").
    revision : int, optional
        Bump it when ``run`` changes what it measures: stored results of an older revision become stale and
        are re-run by ``geode reproduce``.
    assets : sequence of str, optional
        Names of the offline assets the claim needs in ``quick`` mode (``geode assets --check`` knows them).

    Examples
    --------
    In ``geode/probabilistic/ga_srmc/claim.py``::

        @register("ga-srmc", claim="...", paper_figure="4.4x at κ=100", baselines=("SRMC",),
                  thresholds=(Threshold("strong", "mse_ratio_k100", ">=", 2.0, agg="geobound95",
                                        ablation="identity_metric_ratio_k100"),),
                  floors=(Threshold("mixes", "diverged_fraction", "<=", 0.05, agg="all", arms="MALA"),),
                  method="GA-SRMC", tuned=("MALA", "GA-SRMC"))
        def run(mode: str, seed: int) -> Outcome:
            ...
    """

    def deco(fn: Callable[[str, int], Outcome]) -> Callable[[str, int], Outcome]:
        if slug.startswith("_"):
            title, field = f"harness test claim {slug}", "_test"
        else:
            paper = catalog.get(slug)
            title, field = paper.title, paper.field
        params = list(inspect.signature(fn).parameters)
        if params[:2] != ["mode", "seed"]:
            raise TypeError(f"claim {slug!r}: run must have the signature run(mode, seed); got {params}")
        if not thresholds:
            raise ValueError(f"claim {slug!r}: at least one threshold is required")
        if isinstance(assets, str) or not all(isinstance(a, str) and a for a in assets):
            raise ValueError(f"claim {slug!r}: assets must be a sequence of asset names; got {assets!r}")
        module = fn.__module__

        @functools.wraps(fn)
        def checked_run(mode: str, seed: int) -> Outcome:
            # every claim gets the same argument checks and one thread, however it is called
            check_choice("mode", mode, MODES)
            seed = check_int("seed", seed, low=0)
            set_single_thread()
            return fn(mode, seed)

        try:
            rules = Rules(
                thresholds=tuple(thresholds),
                floors=tuple(floors),
                reproduced=reproduced,
                partial=partial,
                min_seeds=min_seeds,
                agreement=agreement,
                method=(method,) if isinstance(method, str) else tuple(method),
                tuned=tuple(tuned),
                untuned=dict(untuned or {}),
                learned=tuple(learned),
            )
        except ValueError as exc:
            raise ValueError(f"claim {slug!r}: {exc}") from None
        c = Claim(
            slug=slug,
            title=title,
            field=field,
            claim=claim.strip(),
            paper_figure=paper_figure,
            baselines=tuple(baselines),
            rules=rules,
            key_metric=key_metric or thresholds[0].metric,
            run=checked_run,
            module=module,
            doc=_package_doc(module),
            timing_metrics=tuple(timing_metrics),
            replication=replication,
            revision=revision,
            assets=tuple(assets),
            no_ablation=no_ablation.strip(),
            no_learned=no_learned.strip(),
        )
        if slug in _REGISTRY and _REGISTRY[slug].module != module:
            raise ValueError(f"claim {slug!r} is registered twice ({_REGISTRY[slug].module} and {module})")
        _REGISTRY[slug] = c
        return checked_run

    return deco


def _package_doc(module: str) -> str:
    """The cleaned docstring of the package of claim module ``module`` ("" when there is none)."""
    pkg = sys.modules.get(module.rpartition(".")[0]) if "." in module else None
    if pkg is not None:
        return inspect.cleandoc(pkg.__doc__ or "")
    if module not in _ALONE:
        return ""
    init = Path(sys.modules[module].__file__ or "").with_name("__init__.py")
    return inspect.cleandoc(ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")), clean=False) or "")


def _import_claim_module(module: str) -> None:
    """Import claim module ``module``; a ``geode.*`` one alone, without its packages' ``__init__``.

    The packages' ``__init__`` import the methods (and torch); they are imported, as usual, when ``run``
    imports what it needs. Once a package is imported its claim module is imported the usual way.
    """
    parent = module.rpartition(".")[0]
    path = Path(geode.__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    if module in sys.modules or parent in sys.modules or not module.startswith("geode.") or not path.is_file():
        importlib.import_module(module)
        return
    spec = importlib.util.spec_from_file_location(module, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    _ALONE.add(module)
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(module, None)
        _ALONE.discard(module)
        raise


def registered() -> dict[str, Claim]:
    """The claims registered so far in this process (by slug)."""
    return dict(_REGISTRY)


def load_claim(slug: str, module: str | None = None) -> Claim:
    """The claim of paper ``slug``, importing its ``claim.py`` if needed.

    Raises ``KeyError`` for an unknown slug or a paper that has no claim yet (planned).
    """
    if slug not in _REGISTRY:
        if module is None:
            paper = catalog.get(slug)
            if paper.status != "implemented":
                raise KeyError(f"paper {slug!r} is planned: it has no claim check yet")
            module = f"{paper.module}.claim"
        _import_claim_module(module)
        if slug not in _REGISTRY:
            raise KeyError(f"{module} did not register a claim for {slug!r}")
    return _REGISTRY[slug]


def load_claims(slugs: Sequence[str] | None = None) -> list[Claim]:
    """Claims for ``slugs``, or for every implemented paper when ``slugs`` is None."""
    if slugs is None:
        slugs = [p.slug for p in catalog.papers(status="implemented")]
    return [load_claim(s) for s in slugs]
