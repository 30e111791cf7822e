"""The report's page in a real browser: it loads without a console error, every figure loads, the filters work.

Needs Playwright (the ``browser`` extra) and Debian's ``chromium-headless-shell``; skipped where either is absent.
"""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from geode.claims.report import write_report
from geode.claims.runner import Task, execute
from geode.claims.store import ResultStore

BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium")
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="needs the browser extra"),
    pytest.mark.skipif(BROWSER is None, reason="needs Debian's chromium-headless-shell"),
]
_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def test_the_report_page_loads_its_figures_and_filters_its_table(tmp_path):
    from playwright.sync_api import sync_playwright

    store = ResultStore(tmp_path)
    for seed in range(3):
        store.write(*execute(Task("virtualrect", "smoke", seed)))
    _, page_path, _ = write_report(store)
    assert (tmp_path / "figures" / "overview.png").is_file() and (tmp_path / "figures" / "virtualrect.png").is_file()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, args=_FLAGS)
        try:
            page = browser.new_page()
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: problems.append(str(exc)))
            page.on("request", lambda r: problems.append(f"network: {r.url}") if r.url.startswith("http") else None)
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            images = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.src, i.complete, i.naturalWidth])")
            assert len(images) >= 2 and all(done and width > 0 for _, done, width in images), images
            visible = (
                "() => [...document.querySelectorAll('#papers tbody tr')].filter(r => r.style.display !== 'none')"
            )
            assert page.evaluate(f"({visible})().length") == 57
            page.select_option("#filter-field", "vision3d")
            assert page.evaluate(f"({visible})().map(r => r.dataset.field)") == ["vision3d"] * 4
            page.select_option("#filter-verdict", "not run")
            assert page.evaluate(f"({visible})().length") == 3  # the three vision3d papers without results
            assert "3 of 57 papers" in page.inner_text("#filter-count")
            assert problems == []
        finally:
            browser.close()
