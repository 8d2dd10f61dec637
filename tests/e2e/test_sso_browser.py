"""Issue 37: single sign-on against a real, certified OpenID Connect provider on loopback.

Chromium drives ``streamlit run app.py`` (``REFORM_AUTH_MODE=oidc``, the generic ``[auth]``
snippet of docs/operations.md) through the ``oidc-provider`` package's own sign-in and consent
screens. The first app runs the provider's certified default, where the ID token carries only
``sub`` and the e-mail comes from the userinfo endpoint; the second puts the claims in the ID
token, the setting in which an unverified e-mail used to get the lead's account.
"""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest

from tests.e2e.harness import ARGS, require_chromium
from tests.e2e.sso_harness import COOKIE_SECRET, sign_in_at_provider, sso_app

pytestmark = pytest.mark.e2e

HOSTILE = "[dave](http://evil.example)<img/src=x/onerror=alert(1)>**x**@example.com"  # a verified, odd address
IDENTITIES = {
    "u-alice": {"email": "Alice@Example.com", "email_verified": True, "name": "Alice"},
    "u-carol": {"email": "carol@example.com", "email_verified": True, "name": "Carol"},
    "u-bob": {"email": "bob@example.com", "email_verified": True, "name": "Bob"},
    # claims bob's address without the provider having verified it
    "u-eve": {"email": "bob@example.com", "email_verified": False, "name": "Eve"},
    "u-dave": {"email": HOSTILE, "email_verified": True, "name": "Dave"},  # not invited
    "u-mallory": {"email": "alice@example.com", "email_verified": False, "name": "Mallory"},
}
ACCOUNTS = {
    "alice": ("lead", "alice@example.com"),
    "carol": ("annotator", "carol@example.com"),
    "bob": ("analyst", "bob@example.com"),
}


def _database(tmp) -> str:
    from reform_core.services.accounts.users import create_user
    from reform_core.services.platform.uow import dispose_engines, get_engine

    url = f"sqlite:///{tmp / 'sso.db'}"
    engine = get_engine(url)
    for name, (role, email) in ACCOUNTS.items():
        create_user(engine, None, username=name, password=None, role=role, email=email)  # user-add NAME --sso
    dispose_engines()
    return url


def _account(url: str, username: str) -> dict:
    from db.repo.users import get_user
    from reform_core.services.platform.uow import get_engine

    with get_engine(url).connect() as conn:
        return get_user(conn, username=username)


@pytest.fixture(scope="module")
def userinfo_app(tmp_path_factory):
    require_chromium()
    tmp = tmp_path_factory.mktemp("sso")
    url = _database(tmp)
    with sso_app(tmp, url) as (base, provider):
        provider.set_accounts(IDENTITIES)
        yield base, provider, url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import expect, sync_playwright

    chromium = require_chromium()
    expect.set_options(timeout=30_000)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, args=ARGS)
        yield b
        b.close()


@contextmanager
def _tab(browser):
    """A new tab in a fresh context (its own cookie jar: a different person's browser)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    try:
        yield context, context.new_page()
    finally:
        context.close()


def _href(page) -> str:
    return page.evaluate("location.href")  # st.switch_page updates the address with history.replaceState


def _id_token_claims(context) -> dict:
    """The ID token's claims as Streamlit keeps them (its signed ``_streamlit_user`` cookie)."""
    from itsdangerous import URLSafeTimedSerializer

    value = next(c["value"] for c in context.cookies() if c["name"] == "_streamlit_user")
    return json.loads(URLSafeTimedSerializer(COOKIE_SECRET, salt="_streamlit_user").loads(value))


def _shows(page, text: str) -> None:
    """Wait until the page shows ``text`` (the word joiners that keep untrusted addresses from
    being autolinked, ``md()``, ignored)."""
    page.wait_for_function("t => document.body.innerText.replaceAll('\\u2060', '').includes(t)", arg=text)


def _signed_in_as(page, text: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_text(f"Signed in as {text}")).to_be_visible()


def test_invited_account_signs_in_with_claims_only_from_userinfo_and_keeps_its_deep_link(userinfo_app, browser):
    from playwright.sync_api import expect

    base, provider, url = userinfo_app
    link = f"{base}/explore?f_agree=disagree&f_model=gpt-4o"
    with _tab(browser) as (context, page):
        page.goto(link)
        expect(page.get_by_role("heading", name="Sign in to ReForm")).to_be_visible()
        sign_in_at_provider(page, "u-alice", base=base)
        _signed_in_as(page, "alice (lead)")
        expect(page.get_by_role("heading", name="Explore examples")).to_be_visible()
        page.wait_for_function("expected => location.href === expected", arg=link)
        claims = _id_token_claims(context)
        assert claims["sub"] == "u-alice" and claims["iss"] == provider.issuer
        assert "email" not in claims and "email_verified" not in claims  # the e-mail came from userinfo
    alice = _account(url, "alice")  # bound to the provider's identity, found by its e-mail in another case
    assert (alice["sso_issuer"], alice["sso_subject"]) == (provider.issuer, "u-alice")


def test_unverified_and_uninvited_identities_are_refused_saying_why(userinfo_app, browser):
    from playwright.sync_api import expect

    base, provider, url = userinfo_app
    with _tab(browser) as (context, page):
        page.goto(base)
        sign_in_at_provider(page, "u-eve", base=base)  # bob's address, not verified by the provider
        _shows(page, "has not verified your e-mail address bob@example.com")
        expect(page.get_by_text("Signed in as")).to_have_count(0)
        expect(page.get_by_role("link", name="Scores")).to_have_count(0)
        expect(page.get_by_text("--issuer " + provider.issuer + " --subject u-eve")).to_be_visible()
    assert _account(url, "bob")["sso_subject"] is None
    with _tab(browser) as (context, page):
        page.goto(base)
        sign_in_at_provider(page, "u-dave", base=base)
        _shows(page, f"No ReForm account has the e-mail address {HOSTILE}")  # shown as plain text
        _shows(page, f"user-add NAME --role ROLE --sso --email {HOSTILE.lower()}")
        expect(page.locator("img[src=x]")).to_have_count(0)
        expect(page.locator("a[href*='evil.example']")).to_have_count(0)
        expect(page.get_by_text("Signed in as")).to_have_count(0)


def test_role_change_and_deactivation_take_effect_at_the_next_action(userinfo_app, browser):
    from playwright.sync_api import expect

    from reform_core.services.accounts.users import cli_principal, update_user
    from reform_core.services.platform.uow import get_engine

    base, provider, url = userinfo_app
    engine = get_engine(url)
    with _tab(browser) as (context, page):
        page.goto(base)
        sign_in_at_provider(page, "u-carol", base=base)
        _signed_in_as(page, "carol (annotator)")
        expect(page.get_by_role("link", name="Scores")).to_have_count(0)

        update_user(engine, cli_principal(engine), username="carol", role="analyst")  # user-set carol --role analyst
        page.get_by_role("link", name="Adjudicate").click()
        _shows(page, "Your session has ended")
        expect(page.get_by_text("Signed in as")).to_have_count(0)
        sign_in_at_provider(page, "u-carol", base=base)
        _signed_in_as(page, "carol (analyst)")
        expect(page.get_by_role("link", name="Scores")).to_be_visible()

        update_user(engine, cli_principal(engine), username="carol", active=False)  # user-set carol --deactivate
        page.get_by_role("link", name="Scores").click()
        _shows(page, "Your ReForm account carol is deactivated")
        expect(page.get_by_text("Signed in as")).to_have_count(0)


def test_sign_out_ends_every_tab_and_the_provider_session(userinfo_app, browser):
    from playwright.sync_api import expect

    base, provider, url = userinfo_app
    with _tab(browser) as (context, page):
        page.goto(base)
        sign_in_at_provider(page, "u-bob", base=base)
        _signed_in_as(page, "bob (analyst)")
        other = context.new_page()  # a second tab of the same browser shares the sign-in
        other.goto(f"{base}/scores")
        _signed_in_as(other, "bob (analyst)")

        page.get_by_role("button", name="Sign out").click()
        page.get_by_role("button", name="Yes, sign me out").click()  # the provider's own sign-out
        page.wait_for_url(f"{base}/**")
        expect(page.get_by_role("button", name="Sign in with your identity provider")).to_be_visible()
        assert not any(c["name"] == "_streamlit_user" for c in context.cookies())

        other.get_by_role("link", name="Explore").click()  # the other tab's next action
        _shows(other, "Your session has ended")
        expect(other.get_by_text("Signed in as")).to_have_count(0)

        page.get_by_role("button", name="Sign in with your identity provider").click()
        expect(page.locator("input[name=login]")).to_be_visible()  # the provider asks again: its session ended


def test_id_token_with_an_unverified_email_never_gets_the_account(tmp_path, browser):
    """The issue's finding: ``sub=u-mallory, email=alice@example.com, email_verified=false`` in the
    ID token signed in as alice (lead)."""
    from playwright.sync_api import expect

    url = _database(tmp_path)
    with sso_app(tmp_path, url, claims_in_id_token=True) as (base, provider):
        provider.set_accounts(IDENTITIES)
        with _tab(browser) as (context, page):
            page.goto(base)
            sign_in_at_provider(page, "u-mallory", base=base)
            assert _id_token_claims(context)["email_verified"] is False  # the claims are in the ID token here
            _shows(page, "has not verified your e-mail address alice@example.com")
            expect(page.get_by_text("Signed in as")).to_have_count(0)
        assert _account(url, "alice")["sso_subject"] is None
        with _tab(browser) as (context, page):
            page.goto(base)
            sign_in_at_provider(page, "u-alice", base=base)  # Alice@Example.com, verified
            assert _id_token_claims(context)["email"] == "Alice@Example.com"
            _signed_in_as(page, "alice (lead)")
        assert _account(url, "alice")["sso_subject"] == "u-alice"
