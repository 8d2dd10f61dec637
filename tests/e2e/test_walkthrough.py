"""Issue 15 "Done when": the password-mode walkthrough in a real browser (Debian's Chromium).

An annotator adjudicates 10 items and reloads twice on the way (still signed in, still on the
Adjudicate page: item 13); an analyst opens a shared Explore link while signed out and lands
on it, filters included, after signing in; a lead deactivates the annotator on the Users page
(item 14), and the annotator's open tab loses access at its next action: no decision is stored.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text

from tests.e2e.harness import ARGS, require_chromium, streamlit_app

pytestmark = pytest.mark.e2e

USERS = {
    "lead1": ("lead", "lead-password-1"),
    "ann1": ("annotator", "annotator-password-1"),
    "ana1": ("analyst", "analyst-password-1"),
}


def _decisions(url: str, username: str) -> int:
    from reform_core.services.platform.uow import dispose_engines, get_engine

    with get_engine(url).connect() as conn:
        n = conn.execute(
            text("SELECT COUNT(*) FROM adjudication a JOIN app_user u ON u.id = a.user_id WHERE u.username = :u"),
            {"u": username},
        ).scalar_one()
    dispose_engines()
    return int(n)


def _sign_in(page, username: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name="Sign in to ReForm")).to_be_visible()
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(USERS[username][1])
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text(f"Signed in as {username}")).to_be_visible()


def _choose(page, label: str, option: str) -> None:
    page.get_by_test_id("stSelectbox").filter(has_text=label).click()
    page.get_by_role("option", name=option, exact=True).click()


def test_password_mode_walkthrough(tmp_path):
    from playwright.sync_api import expect, sync_playwright

    chromium = require_chromium()
    from reform_core.services.accounts.users import create_user
    from reform_core.services.adjudication.adjudication import create_plan
    from reform_core.services.platform.uow import dispose_engines, get_engine
    from reform_core.services.project.setup import ensure_demo

    url = f"sqlite:///{tmp_path / 'walk.db'}"
    engine = get_engine(url)
    ensure_demo(engine)
    made = {n: create_user(engine, None, username=n, password=pw, role=r) for n, (r, pw) in USERS.items()}
    create_plan(engine, made["lead1"], judge_a="gpt-judge", judge_b="gemini-judge", seed=1, name="walk")
    dispose_engines()
    env = {
        "REFORM_DATABASE_URL": url,
        "REFORM_AUTH_MODE": "password",
        "REFORM_LOAD_DEMO": "false",
        "REFORM_SESSION_SECRET": "walkthrough-signing-secret",
    }
    expect.set_options(timeout=30_000)
    with streamlit_app(env) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            ctx = {n: browser.new_context(viewport={"width": 1400, "height": 1000}) for n in USERS}
            for c in ctx.values():
                c.set_default_timeout(30_000)

            # -- the annotator: 10 decisions, reloading after the 3rd and the 7th
            ann = ctx["ann1"].new_page()
            ann.goto(f"{base}/adjudicate")  # a typed address: kept through the sign-in
            _sign_in(ann, "ann1")
            counter = ann.get_by_role("heading", name=re.compile(r"^Item \d+ of \d+$"))
            for n in range(1, 11):
                expect(counter).to_be_visible()
                shown = counter.inner_text()
                ann.get_by_role("button", name=f"Judge {'A' if n % 2 else 'B'} is better supported").click()
                expect(ann.get_by_text("Saved: “Judge")).to_be_visible()
                expect(counter).not_to_have_text(shown)
                assert _decisions(url, "ann1") == n, n
                if n in (3, 7):
                    ann.reload()  # F5: a new Streamlit session, still signed in, same page
                    expect(ann.get_by_text("Signed in as ann1")).to_be_visible()
                    expect(ann.get_by_role("heading", name="Adjudicate")).to_be_visible()
                    expect(ann.get_by_role("heading", name="Sign in to ReForm")).to_have_count(0)
                    assert ann.url.rstrip("/").endswith(("/adjudicate", base)), ann.url  # "/": their landing page
            # a new tab of the same browser is signed in too
            tab = ctx["ann1"].new_page()
            tab.goto(f"{base}/adjudicate")
            expect(tab.get_by_text("Signed in as ann1")).to_be_visible()
            tab.close()

            # -- the analyst: a shared Explore link opened while signed out
            ana = ctx["ana1"].new_page()
            ana.goto(f"{base}/explore?f_agree=disagree")
            expect(ana.get_by_role("heading", name="Explore examples")).to_have_count(0)
            _sign_in(ana, "ana1")
            expect(ana.get_by_role("heading", name="Explore examples")).to_be_visible()
            assert "f_agree=disagree" in ana.url
            expect(ana.get_by_role("combobox", name="Judges")).to_have_value("disagree")

            # -- the lead deactivates the annotator on the Users page
            lead = ctx["lead1"].new_page()
            lead.goto(f"{base}/users")
            _sign_in(lead, "lead1")
            expect(lead.get_by_role("heading", name="Users")).to_be_visible()
            _choose(lead, "Account", "ann1")
            _choose(lead, "Access", "Deactivate")
            lead.get_by_role("button", name="Apply changes").click()
            expect(lead.get_by_text("ann1: role annotator, deactivated.")).to_be_visible()

            # -- the annotator's open tab loses access at its next action
            expect(counter).to_be_visible()
            ann.get_by_role("button", name="Judge A is better supported").click()
            expect(ann.get_by_role("heading", name="Sign in to ReForm")).to_be_visible()
            expect(ann.get_by_text("Your session has ended")).to_be_visible()
            expect(ann.get_by_text("Signed in as ann1")).to_have_count(0)
            assert _decisions(url, "ann1") == 10
            ann.reload()  # and the cookie no longer signs anybody in
            expect(ann.get_by_role("heading", name="Sign in to ReForm")).to_be_visible()
            for c in ctx.values():
                c.close()
        finally:
            browser.close()
