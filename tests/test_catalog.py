from __future__ import annotations

import re
from pathlib import Path

import pytest

from geode import catalog

INDEX = Path(__file__).resolve().parents[2] / "shared" / "papers" / "INDEX.md"


def test_exactly_57_unique_slugs():
    slugs = [p.slug for p in catalog.papers()]
    assert len(slugs) == 57
    assert len(set(slugs)) == 57


def test_every_paper_has_title_and_known_field():
    for p in catalog.papers():
        assert p.title and p.field in catalog.FIELDS
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", p.slug)
        assert p.module == f"geode.{p.field}.{p.slug.replace('-', '_')}"


@pytest.mark.skipif(not INDEX.is_file(), reason="the paper collection's INDEX.md is not beside the repository")
def test_catalogue_matches_the_collection_index():
    rows = re.findall(r"\| \[`([a-z0-9-]+)`\]\([^)]*\) \| (.*?) \| (\w+) \| (\w+) \|", INDEX.read_text())
    assert {(s, t, f) for s, t, f, _ in rows} == {(p.slug, p.title, p.field) for p in catalog.papers()}


def test_status_is_derived_from_a_claim_file(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "_PACKAGE_DIR", tmp_path)
    p = catalog.get("svf")
    assert p.status == "planned"
    p.folder.mkdir(parents=True)
    assert p.status == "planned"  # a folder alone is not enough
    (p.folder / "claim.py").write_text("# registers the claim\n")
    assert p.status == "implemented"
    assert [q.slug for q in catalog.papers(status="implemented")] == ["svf"]


def test_implemented_status_matches_the_installed_tree():
    for p in catalog.papers():
        assert (p.status == "implemented") == (p.folder / "claim.py").is_file()


def test_select_with_wildcards_and_fields():
    assert [p.slug for p in catalog.select(["sds-lora"])] == ["sds-lora"]
    assert {p.slug for p in catalog.select(["sd*"])} == {"sd-lora", "sds-lora"}
    assert all(p.field == "llm" for p in catalog.select(["*"], field="llm"))
    with pytest.raises(KeyError, match="no paper slug matches"):
        catalog.select(["zz*"])
    with pytest.raises(KeyError, match="did you mean"):
        catalog.select(["sds-lor"])


def test_filters_validate_their_arguments():
    with pytest.raises(ValueError, match="field must be one of"):
        catalog.papers(field="nope")
    with pytest.raises(ValueError, match="status must be"):
        catalog.papers(status="done")  # type: ignore[arg-type]


def test_markdown_table_has_a_row_per_paper():
    table = catalog.markdown_table().splitlines()
    assert len(table) == 2 + 57
