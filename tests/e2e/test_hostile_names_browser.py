"""Issue 15 item 2: hostile *names* stay text in a real browser, on every page.

Model, judge, question and instruction keys, task types, domains, annotators, plan names
and the project name of an imported bundle, and query parameters that pages echo in their
errors, all carry a remote image and a link (``tests/hostile_names.py``). Chromium opens
every page, the explorer's example view and the error paths; the test fails if any request
leaves the loopback interface (the image would be fetched) or if the page holds a live
link or image to the attacker's host (a "session expired — click here" link in an error
box), and checks that the names were shown — as their literal text.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode, urlsplit

import pytest

from pages.components.nav import PAGES
from tests.e2e.harness import browser_context, streamlit_app
from tests.hostile_names import HOST, PROJECT, URL_VALUE, load_project

pytestmark = pytest.mark.e2e

LIVE = f"[href*='{HOST}'], [src*='{HOST}'], [srcset*='{HOST}'], [action*='{HOST}'], [data*='{HOST}']"
# Of the elements LIVE matches, those whose URL leads to the attacker's host. A same-origin link
# whose *query* carries a hostile name (the Scores page's link to a model's examples in Explore)
# is text in a parameter, not a link to that host: it is checked to stay same-origin instead.
TO_HOST = """(es, host) => es.flatMap(e => ['href', 'src', 'action', 'data', 'srcset']
    .filter(a => e.hasAttribute(a))
    .flatMap(a => a === 'srcset' ? e.getAttribute(a).split(',').map(x => x.trim().split(/\\s+/)[0]) : [e.getAttribute(a)])
    .filter(v => { try { const u = new URL(v, document.baseURI);
                         return u.origin !== location.origin || u.hostname.endsWith(host); }
                   catch (err) { return true; } })
    .map(v => e.outerHTML.slice(0, 160)))"""


@pytest.fixture(scope="module")
def hostile_app(tmp_path_factory):
    from reform_core.services.platform.uow import dispose_engines

    root = tmp_path_factory.mktemp("hostile-names")
    url = f"sqlite:///{root / 'app.db'}"
    names = load_project(url, root)
    dispose_engines()
    env = {"REFORM_AUTH_MODE": "local", "REFORM_LOAD_DEMO": "false", "REFORM_DATABASE_URL": url}
    with streamlit_app(env) as base:
        yield base, names


def _shown(text: str) -> str:
    """Text as read, without the invisible word joiners that keep URLs from autolinking."""
    return text.replace("\u2060", "")


def _url_path(spec) -> str:
    return "" if spec is PAGES[0] else spec.path.removeprefix("pages/").removesuffix(".py")


def _visits(names) -> list[tuple[str, str, dict]]:
    """(label, page path, query parameters): every page with hostile parameters, the error
    paths that echo them, and the explorer's example of a hostile model and question."""
    bad = {"q": URL_VALUE, "f_model": URL_VALUE, "f_p_min": URL_VALUE, "plan": URL_VALUE, "study": URL_VALUE}
    out = [(spec.title, _url_path(spec), bad) for spec in PAGES]
    out.append(("Explore, unknown example", "explore", {"model": URL_VALUE, "question": URL_VALUE}))
    out.append(
        (
            "Explore, example",
            "explore",
            {
                "model": names[("model", "helix-pro")],
                "question": names[("qkey", "q01")],
                "instruction": names[("ikey", "q01-v1")],
            },
        )
    )
    out.append(("Data, question", "data", {"q": names[("qkey", "q05")]}))
    return out


def test_no_hostile_name_or_url_parameter_sends_a_request_or_makes_a_link(hostile_app):
    base, names = hostile_app
    from playwright.sync_api import expect

    remote: list[str] = []

    def route(r):
        host = urlsplit(r.request.url).hostname or ""
        if host in ("127.0.0.1", "localhost", "::1") or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            remote.append(r.request.url)
            r.abort()

    problems: list[str] = []
    shown: dict[str, int] = {}
    with browser_context() as context:
        context.route("**/*", route)
        page = context.new_page()
        for label, path, params in _visits(names):
            remote.clear()
            page.goto(f"{base}/{path}?{urlencode(params, quote_via=quote)}")
            expect(page.locator("h1, h3").first).to_be_visible()  # Adjudicate's title is an h3
            page.wait_for_timeout(1500)  # images, fonts and late fragments
            page.wait_for_load_state("networkidle")
            if remote:
                problems.append(f"{label}: requests left the page: {sorted(set(remote))}")
            live = page.locator(LIVE).evaluate_all(TO_HOST, HOST)
            if live:
                problems.append(f"{label}: live elements to {HOST}: {live}")
            shown[label] = page.locator("body").inner_text().count(f".{HOST}/")
        assert not problems, "\n".join(problems)
        # not vacuous: the names were on screen, as their literal text
        page.goto(base)
        title = page.locator("h1").first
        expect(title).to_contain_text("project.evil.test")
        assert _shown(title.inner_text()) == PROJECT
    for label in ("Overview", "Data", "Explore, example", "Sampling", "Judges", "Scores", "Data, question"):
        assert shown[label] > 0, f"{label}: no hostile name was shown at all"
    assert shown["Data"] and shown["Explore, unknown example"], shown


def test_url_parameter_in_an_error_is_text(hostile_app):
    """``/data?q=[Your session expired - click here](http://…)`` shows the brackets, no link."""
    base, _ = hostile_app
    from playwright.sync_api import expect

    with browser_context() as context:
        page = context.new_page()
        page.goto(f"{base}/data?{urlencode({'q': URL_VALUE}, quote_via=quote)}")
        alert = page.get_by_test_id("stAlertContainer").filter(has_text="Unknown question")
        expect(alert).to_be_visible()
        assert URL_VALUE in _shown(alert.inner_text())
        assert alert.locator("a, img").count() == 0
