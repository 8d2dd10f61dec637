"""Real browser (Debian's Chromium): the MOSAIC results page and the WISE section of Wording
results show a study whose names, models, constraints, forms, prompts and outputs are
hostile HTML / JavaScript / Markdown — no script runs, no dialog opens, no hostile element
or link reaches the DOM, and the output is shown as text; and on a first start with the demo
both pages show the demo studies with every chart (issue 18)."""

from __future__ import annotations

import pytest

from tests.app.test_hostile_render import RESPONSES, _hostile_studies
from tests.e2e.harness import ARGS, require_chromium, streamlit_app

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    chromium = require_chromium()  # skips locally, fails in CI
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.platform.uow import dispose_engines, get_engine

    url = f"sqlite:///{tmp_path_factory.mktemp('studies-e2e') / 'e2e.db'}"
    engine = get_engine(url)
    _hostile_studies(engine, local_principal(engine))  # the only studies: each page shows them by default
    dispose_engines()
    with streamlit_app({"REFORM_DATABASE_URL": url, "REFORM_AUTH_MODE": "local", "REFORM_LOAD_DEMO": "false"}) as base:
        yield base, chromium


HOSTILE_ELEMENTS = (
    "[onerror]",
    "[onload]",
    "[onmouseover]",
    "img[src='x']",
    "iframe",
    "a[href^='javascript']",
    "img[src*='attacker.invalid']",
    "main script",
    "main style",
    "main svg[onload]",
    "main b",
    "main i",
)


def _visit(server, path: str, ready) -> None:
    """Open ``path``, wait until ``ready(page)`` holds, then look for dialogs and live hostile elements."""
    from playwright.sync_api import sync_playwright

    base, chromium = server
    dialogs: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1200})
        page.set_default_timeout(60_000)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{base}/{path}")
        ready(page)
        page.wait_for_timeout(1500)  # let every chart and frame render
        live = {sel: page.locator(sel).count() for sel in HOSTILE_ELEMENTS}
        browser.close()
    assert not dialogs, f"{path}: a hostile script opened dialogs {dialogs}"
    assert not any(live.values()), f"{path}: hostile elements in the DOM: {live}"


def test_mosaic_results_page_renders_hostile_study_inert(server):
    from playwright.sync_api import expect

    def ready(page):  # the output, verbatim as text in a code block
        expect(page.locator("code").filter(has_text=RESPONSES["resp-1"].splitlines()[1]).first).to_be_attached(
            timeout=90_000
        )

    _visit(server, "mosaic_results", ready)


def test_wording_results_wise_section_renders_hostile_study_inert(server):
    from playwright.sync_api import expect

    def ready(page):
        expect(page.get_by_text("WISE wording robustness")).to_be_visible(timeout=90_000)
        expect(page.get_by_text("C_worst", exact=True)).to_be_visible(timeout=90_000)

    _visit(server, "wording_results", ready)


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    chromium = require_chromium()
    url = f"sqlite:///{tmp_path_factory.mktemp('studies-demo') / 'demo.db'}"
    with streamlit_app({"REFORM_DATABASE_URL": url, "REFORM_AUTH_MODE": "local", "REFORM_LOAD_DEMO": "true"}) as base:
        yield base, chromium


def _charts_and_no_exception(page, minimum: int) -> None:
    from playwright.sync_api import expect

    expect(page.locator(".vega-embed").nth(minimum - 1)).to_be_attached(timeout=90_000)
    assert page.locator("[data-testid='stException']").count() == 0


def test_demo_study_pages_render_in_a_browser(demo_server):
    """First start with the demo: both pages show the demo studies (tables, every chart), no exception."""
    from playwright.sync_api import expect

    def mosaic_ready(page):
        expect(page.get_by_text("Prompt-level accuracy")).to_be_visible(timeout=120_000)
        expect(page.get_by_text("Positional compliance (PosCC)")).to_be_visible(timeout=90_000)
        _charts_and_no_exception(page, 3)  # SCC bars, PCC heatmap, PosCC lines

    def wise_ready(page):
        expect(page.get_by_text("WISE wording robustness")).to_be_visible(timeout=120_000)
        expect(page.get_by_text("C_worst", exact=True)).to_be_visible(timeout=90_000)
        _charts_and_no_exception(page, 2)  # Δ intervals, failure directions

    _visit(demo_server, "mosaic_results", mosaic_ready)
    _visit(demo_server, "wording_results", wise_ready)
