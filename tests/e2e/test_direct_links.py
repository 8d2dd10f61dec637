"""Issue 15 item 7: direct links run page scripts only through ``app.py``.

Because ``pages/`` lies next to ``app.py``, a fresh Streamlit process ran ``/users`` (or any
page) as a script of its own until somebody visited ``/``: no sign-in, and a sidebar listing
every page, lead-only ones included, to a visitor who was not signed in.
"""

from __future__ import annotations

import pytest

from tests.e2e.harness import browser_context, streamlit_app

pytestmark = pytest.mark.e2e

LEAD_PAGES = ("Users", "Export", "Judges", "Construction", "Sampling", "Wording studies")


@pytest.mark.parametrize("mode", ["password", "local"])
def test_first_request_of_a_fresh_process_goes_through_the_app(tmp_path, mode):
    from playwright.sync_api import expect

    env = {
        "REFORM_AUTH_MODE": mode,
        "REFORM_LOAD_DEMO": "true",
        "REFORM_DATABASE_URL": f"sqlite:///{tmp_path / 'direct.db'}",
    }
    with streamlit_app(env) as base, browser_context() as context:
        page = context.new_page()
        page.goto(f"{base}/users")  # the very first request this process serves
        if mode == "password":
            expect(page.get_by_role("heading", name="Sign in to ReForm")).to_be_visible()
            expect(page.get_by_role("heading", name="Users")).to_have_count(0)
            expect(page.get_by_role("navigation")).to_have_count(0)
            for title in LEAD_PAGES + ("Overview",):
                expect(page.get_by_role("link", name=title)).to_have_count(0)
            # the raw script names of Streamlit's old multipage mode never show either
            expect(page.get_by_role("link", name="users", exact=True)).to_have_count(0)
        else:  # local mode: the app's own navigation, with its section titles and page titles
            expect(page.get_by_role("heading", name="Users")).to_be_visible()
            expect(page.get_by_role("link", name="Wording studies")).to_be_visible()
            expect(page.get_by_role("link", name="wording design", exact=True)).to_have_count(0)
