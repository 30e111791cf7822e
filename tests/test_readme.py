from __future__ import annotations

from pathlib import Path

from geode import catalog

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = catalog.README_START, catalog.README_END


def test_readme_paper_table_is_generated_from_the_catalogue():
    text = README.read_text(encoding="utf-8")
    assert START in text and END in text, "README.md lost its paper-table markers"
    embedded = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert embedded == catalog.markdown_table(), "README's paper table is stale: run `make readme`"


def test_readme_names_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert "make reproduce" in text and "make test" in text
