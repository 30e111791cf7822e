"""The claim registry: ``@register`` in a paper's ``claim.py``, and lookup by slug.

Claims are loaded lazily: :func:`load_claim` imports ``geode.<field>.<paper>.claim`` only when a
claim is asked for, so listing the catalogue never imports torch or a paper's dependencies.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Sequence

from geode import catalog
from geode.claims.types import MODES, Claim, Outcome, Threshold
from geode.core.random import set_single_thread
from geode.core.validation import check_choice, check_int

__all__ = ["load_claim", "load_claims", "register", "registered"]

_REGISTRY: dict[str, Claim] = {}


def register(
    slug: str,
    *,
    claim: str,
    paper_figure: str,
    baselines: Sequence[str],
    thresholds: Sequence[Threshold],
    reproduced: str | None = None,
    partial: str | None = None,
    key_metric: str | None = None,
    timing_metrics: Sequence[str] = (),
    validity: str | None = None,
    min_seeds: int = 3,
    replication: str = "",
    revision: int = 1,
    assets: Sequence[str] = (),
) -> Callable[[Callable[[str, int], Outcome]], Callable[[str, int], Outcome]]:
    """Register the decorated ``run(mode, seed) -> Outcome`` as the claim check of paper ``slug``.

    The registered (and returned) function checks ``mode`` (one of :data:`MODES`) and ``seed`` (an int
    >= 0) and sets one BLAS/torch thread before calling ``run``, so a claim need not repeat that.

    Parameters
    ----------
    slug : str
        A slug of :mod:`geode.catalog` (slugs starting with ``_`` are reserved for the harness's
        own test claims).
    claim : str
        The paper's headline claim in one sentence.
    paper_figure : str
        The paper's own number(s) for it.
    baselines : sequence of str
        The baselines the paper names, as compared in the check.
    thresholds : sequence of Threshold
        Bounds on measured metrics, fixed before the check runs.
    reproduced, partial : str, optional
        Boolean rules over the thresholds' names (``"a and (b or c)"``). ``reproduced`` defaults to
        all thresholds holding; ``partial`` to never.
    key_metric : str, optional
        Metric shown in the report's overview; defaults to the first threshold's metric.
    timing_metrics : sequence of str, optional
        Metrics measured from wall-clock time (e.g. speed-up ratios). The contract tests exempt them,
        and only them, from "the same seed gives identical metrics".
    validity : str, optional
        Boolean rule over threshold names: the floors that must hold for the comparison to mean anything
        (each baseline learns the task, at most a stated fraction of runs collapsed, the simulator is at
        the intended load). When it fails the verdict is ``inconclusive`` and the report names the floors.
        Thresholds named here are floors and are left out of the default ``reproduced`` rule.
    min_seeds : int, optional
        Seeds the verdict needs (default 3, the protocol's minimum; ``geode reproduce`` runs 3 by default).
    replication : str, optional
        Required when ``min_seeds < 3``: how one run replicates internally ("60 repetitions x 3 draws").
    revision : int, optional
        Bump it when ``run`` changes what it measures: stored results of an older revision become stale
        and are re-run by ``geode reproduce``.
    assets : sequence of str, optional
        Offline assets (names in :data:`geode.data.ASSETS`) the claim needs in ``quick`` mode;
        ``geode assets --check`` fails only for these.

    Examples
    --------
    In ``geode/probabilistic/ga_srmc/claim.py``::

        @register("ga-srmc", claim="...", paper_figure="4.4x at κ=100", baselines=("SRMC",),
                  thresholds=(Threshold("strong", "mse_ratio_k100", ">=", 2.0),))
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
        from geode.data.assets import ASSETS

        unknown = sorted(set(assets) - {a.name for a in ASSETS})
        if unknown:
            raise ValueError(f"claim {slug!r}: unknown asset(s) {unknown}; known: {[a.name for a in ASSETS]}")
        module = fn.__module__

        @functools.wraps(fn)
        def checked_run(mode: str, seed: int) -> Outcome:
            # every claim gets the same argument checks and one thread, however it is called
            check_choice("mode", mode, MODES)
            seed = check_int("seed", seed, low=0)
            set_single_thread()
            return fn(mode, seed)

        pkg = sys.modules.get(module.rpartition(".")[0]) if "." in module else None
        c = Claim(
            slug=slug,
            title=title,
            field=field,
            claim=claim.strip(),
            paper_figure=paper_figure,
            baselines=tuple(baselines),
            thresholds=tuple(thresholds),
            reproduced=reproduced,
            partial=partial,
            key_metric=key_metric or thresholds[0].metric,
            run=checked_run,
            module=module,
            doc=inspect.cleandoc(pkg.__doc__ or "") if pkg is not None else "",
            timing_metrics=tuple(timing_metrics),
            validity=validity,
            min_seeds=min_seeds,
            replication=replication,
            revision=revision,
            assets=tuple(assets),
        )
        if slug in _REGISTRY and _REGISTRY[slug].module != module:
            raise ValueError(f"claim {slug!r} is registered twice ({_REGISTRY[slug].module} and {module})")
        _REGISTRY[slug] = c
        return checked_run

    return deco


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
        importlib.import_module(module)
        if slug not in _REGISTRY:
            raise KeyError(f"{module} did not register a claim for {slug!r}")
    return _REGISTRY[slug]


def load_claims(slugs: Sequence[str] | None = None) -> list[Claim]:
    """Claims for ``slugs``, or for every implemented paper when ``slugs`` is None."""
    if slugs is None:
        slugs = [p.slug for p in catalog.papers(status="implemented")]
    return [load_claim(s) for s in slugs]
