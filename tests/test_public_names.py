"""One rule for public names: a field package re-exports the public names of every paper in it.

``from geode.federated import CRAFT`` works as ``from geode.federated.craft import CRAFT`` does, and
``geode.analysis.msa`` is the paper's package, never shadowed by a function of the same name.
"""

from __future__ import annotations

import importlib

import pytest

from geode import catalog

IMPLEMENTED = catalog.papers(status="implemented")
FIELDS = sorted({p.field for p in IMPLEMENTED})


@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.slug)
def test_every_public_name_of_a_paper_is_reachable_from_its_field(paper):
    pkg = importlib.import_module(paper.module)
    field = importlib.import_module(f"geode.{paper.field}")
    assert pkg.__all__, f"{paper.module} must list its public names in __all__"
    for name in pkg.__all__:
        assert getattr(field, name) is getattr(pkg, name), f"geode.{paper.field}.{name} is not {paper.module}.{name}"
        assert name in field.__all__


@pytest.mark.parametrize("field", FIELDS)
def test_a_fields_names_resolve_and_do_not_collide(field):
    mod = importlib.import_module(f"geode.{field}")
    assert len(set(mod.__all__)) == len(mod.__all__), "two papers (or a paper and a baseline) export one name"
    for name in mod.__all__:
        assert hasattr(mod, name)


def test_no_public_name_shadows_a_papers_package():
    from geode import catalog

    for p in catalog.papers(status="implemented"):
        field = importlib.import_module(f"geode.{p.field}")
        name = p.slug.replace("-", "_")
        if hasattr(field, name):
            assert getattr(field, name) is importlib.import_module(p.module), f"geode.{p.field}.{name} is shadowed"
