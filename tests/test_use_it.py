"""From a paper to its API: every paper's "Use it" block names its imports and carries an example that runs.

The example is the ``Examples`` section of the paper package's docstring; it runs here as a doctest, so what
``geode show <slug>`` prints cannot rot.
"""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

from geode import catalog
from geode.cli import main
from geode.usage import dynamic_usage, examples_section, static_usage, usage

IMPLEMENTED = [p.slug for p in catalog.papers(status="implemented")]


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_the_use_it_block_names_importable_objects(slug):
    u = usage(slug)
    assert u.names, f"{u.module} exports nothing (__all__)"
    field_pkg = importlib.import_module(f"geode.{u.field}")
    pkg = importlib.import_module(u.module)
    for name, _summary in u.names:
        obj = getattr(pkg, name)
        assert getattr(field_pkg, name) is obj, f"geode.{u.field}.{name} is not {u.module}.{name}"
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"{u.module}.{name} needs a docstring (its first line is shown)"


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_the_example_runs_as_a_doctest(slug):
    u = usage(slug)
    assert ">>>" in u.example, f"add a numpydoc Examples section with doctest lines to {u.module}'s docstring"
    test = doctest.DocTestParser().get_doctest(u.example, {}, f"{u.module} (Examples)", u.module, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0, f"the example of {u.module} fails (output above)"


@pytest.mark.parametrize("field", sorted({p.field for p in catalog.papers(status="implemented")}))
def test_each_field_docstring_maps_its_papers_to_their_names(field):
    doc = importlib.import_module(f"geode.{field}").__doc__ or ""
    for p in catalog.papers(field, status="implemented"):
        assert p.slug in doc, f"geode.{field}'s docstring does not name the paper {p.slug}"
        for name, _ in usage(p.slug).names:
            assert name in doc, f"geode.{field}'s docstring does not name {name} ({p.slug})"


def test_show_prints_the_import_line_and_the_example(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["show", "castor", "--out", str(tmp_path)])
        raise SystemExit(0)
    out = capsys.readouterr().out
    assert "from geode.graphs import Castor, CastorConv" in out and "Use it." in out
    assert ">>>" in out


def test_examples_section_parses_numpydoc():
    doc = """Title.

    Parameters
    ----------
    x : int

    Examples
    --------
    >>> 1 + 1
    2

    Notes
    -----
    none
    """
    assert examples_section(doc) == ">>> 1 + 1\n2"
    assert examples_section("no sections") == ""


@pytest.mark.parametrize("slug", IMPLEMENTED)
def test_the_block_read_from_the_sources_is_the_imported_one(slug):
    # `geode show` reads the block from the sources (no torch); it must say what the imported package says
    static = static_usage(slug)
    assert static is not None, f"the sources of {slug} do not settle its Use-it block: `geode show` imports torch"
    assert static == dynamic_usage(slug)
