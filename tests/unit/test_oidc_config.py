"""Issue 37: single sign-on's start check (``[auth]`` and the provider's metadata), the
identity read from the ID token's claims, and the deep link kept across the provider.

The provider snippets of docs/operations.md are checked against discovery documents shaped
like Google's, Entra ID's and Keycloak's (no test reaches the internet); the generic snippet
is also what the browser tests sign in with against a real provider.
"""

from __future__ import annotations

import tomllib

import pytest

from reform_core.services.accounts import oidc_provider as op
from reform_core.services.accounts.sso import SignInRefused, email_claims, identity_from_claims
from tests.sso_docs import PROVIDERS, filled

SECRET = "a-client-secret-that-must-never-show"
COOKIE = "cookie-secret-that-must-never-show-0123456789"
TENANT = "8f0c2b4e-1111-2222-3333-444455556666"
AUTHLIB_CHECK = op._authlib_installed


def _metadata(issuer: str, base: str | None = None, **extra) -> dict:
    base = base or issuer
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "jwks_uri": f"{base}/jwks",
        "userinfo_endpoint": f"{base}/userinfo",
        **extra,
    }


METADATA = {  # as each provider publishes it (the parts ReForm reads)
    "generic": _metadata("https://idp.example.org"),
    "google": {
        "issuer": "https://accounts.google.com",
        "authorization_endpoint": "https://accounts.google.com/o/oauth2/v2/auth",
        "token_endpoint": "https://oauth2.googleapis.com/token",
        "userinfo_endpoint": "https://openidconnect.googleapis.com/v1/userinfo",
        "jwks_uri": "https://www.googleapis.com/oauth2/v3/certs",
    },
    "entra": _metadata(
        f"https://login.microsoftonline.com/{TENANT}/v2.0",
        f"https://login.microsoftonline.com/{TENANT}/oauth2/v2.0",
        userinfo_endpoint="https://graph.microsoft.com/oidc/userinfo",
    ),
    "keycloak": _metadata(
        "https://kc.example.org/realms/lab",
        "https://kc.example.org/realms/lab/protocol/openid-connect",
        prompt_values_supported=["none", "login", "consent"],
    ),
}
PLACES = {
    "https://REFORM_HOST": "https://reform.example.org",
    "https://IDP_HOST": "https://idp.example.org",
    "TENANT_ID": TENANT,
    "https://KEYCLOAK_HOST": "https://kc.example.org",
    "REALM": "lab",
    "AT-LEAST-32-RANDOM-CHARACTERS-SAME-ON-EVERY-PROCESS": COOKIE,
    "APPLICATION_CLIENT_ID": "app-id",
    "CLIENT_ID": "client-id",
    "CLIENT_SECRET": SECRET,
}


def _auth(name: str) -> dict:
    return tomllib.loads(filled(name, **PLACES))["auth"]


def _served(name: str):
    def fetch(url: str) -> dict:
        assert url == _auth(name)["server_metadata_url"]
        return METADATA[name]

    return fetch


@pytest.fixture(autouse=True)
def _authlib(monkeypatch):
    monkeypatch.setattr(op, "_authlib_installed", lambda: True)


@pytest.mark.parametrize("name", PROVIDERS)
def test_each_documented_snippet_passes_against_its_providers_metadata(name):
    info = op.check_auth_config(_auth(name), fetch=_served(name))
    assert info.issuer == METADATA[name]["issuer"]
    assert info.userinfo_endpoint == METADATA[name]["userinfo_endpoint"]


def _refusal(auth: dict, fetch=None) -> str:
    with pytest.raises(op.OidcConfigError) as exc:
        op.check_auth_config(auth, fetch=fetch or _served("generic"))
    message = str(exc.value)
    assert "\n" not in message and SECRET not in message and COOKIE not in message  # one line, no secret
    return message


def test_keycloak_refuses_streamlits_default_prompt_at_start():
    auth = {k: v for k, v in _auth("keycloak").items() if k != "client_kwargs"}  # st.login's default: select_account
    msg = _refusal(auth, _served("keycloak"))
    assert "client_kwargs.prompt" in msg and "'select_account'" in msg and "none, login, consent" in msg


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda a: a.clear(), "needs an [auth] section"),
        (lambda a: a.pop("client_secret"), "lacks client_secret"),
        (lambda a: (a.pop("redirect_uri"), a.pop("cookie_secret")), "lacks redirect_uri, cookie_secret"),
        (lambda a: a.update(cookie_secret="short"), "cookie_secret: use a random string of at least 32"),
        (
            lambda a: a.update(redirect_uri="https://reform.example.org/callback"),
            "redirect_uri: must end with /oauth2callback",
        ),
        (lambda a: a.update(redirect_uri="reform.example.org/oauth2callback"), "redirect_uri: expected an absolute"),
        (
            lambda a: a.update(server_metadata_url="http://idp.example.org/.well-known/openid-configuration"),
            "server_metadata_url: use https://",
        ),
        (lambda a: a.pop("expose_tokens"), 'expose_tokens: must include "access"'),
        (lambda a: a.update(expose_tokens="id"), 'expose_tokens: must include "access"'),
        (
            lambda a: a.update(client_kwargs={"scope": "openid profile"}),
            "client_kwargs.scope: must include openid and email",
        ),
        (lambda a: a.update(client_kwargs="prompt=login"), "client_kwargs: expected a table"),
    ],
)
def test_incomplete_auth_sections_are_refused_with_one_line_naming_the_key(change, expected):
    auth = _auth("generic")
    change(auth)
    assert expected in _refusal(auth)


def test_loopback_http_is_allowed_for_a_provider_on_this_machine():
    auth = {
        **_auth("generic"),
        "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
        "redirect_uri": "http://localhost:{port}/oauth2callback",
    }
    info = op.check_auth_config(auth, fetch=lambda url: _metadata("http://127.0.0.1:9"))
    assert info.issuer == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    "metadata, expected",
    [
        (
            OSError("connection refused"),
            "cannot read the provider's metadata at https://idp.example.org/.well-known/"
            "openid-configuration (connection refused)",
        ),
        (ValueError("the answer is not a JSON object"), "(the answer is not a JSON object)"),
        ({k: v for k, v in METADATA["generic"].items() if k != "userinfo_endpoint"}, "lacks userinfo_endpoint"),
        (
            {**METADATA["generic"], "issuer": "https://other.example.org"},
            "names the issuer 'https://other.example.org'",
        ),
        ({**METADATA["generic"], "issuer": "https://login.microsoftonline.com/{tenantid}/v2.0"}, "is a template"),
        ({**METADATA["generic"], "token_endpoint": "http://idp.example.org/token"}, "token_endpoint: use https://"),
    ],
)
def test_unusable_provider_metadata_is_refused_with_one_line(metadata, expected):
    def fetch(url):
        if isinstance(metadata, Exception):
            raise metadata
        return metadata

    assert expected in _refusal(_auth("generic"), fetch)


def test_missing_authlib_is_refused_before_anything_else(monkeypatch):
    monkeypatch.setattr(op, "_authlib_installed", lambda: False)
    assert "needs Authlib >= 1.3.2" in _refusal({})


def test_authlib_is_installed_from_the_lock():
    assert AUTHLIB_CHECK() is True  # the real check (saved before the fixture replaces it): streamlit[auth]


# -- the identity in the ID token's claims ------------------------------------------------------

CLAIMS = {"iss": "https://idp.example.org", "sub": "u-1", "iat": 1_800_000_000, "nonce": "n1", "aud": "client-id"}


def test_identity_needs_issuer_subject_and_issue_time():
    ident = identity_from_claims(CLAIMS)
    assert (ident.issuer, ident.subject, int(ident.issued_at.timestamp())) == (
        "https://idp.example.org",
        "u-1",
        1_800_000_000,
    )
    assert identity_from_claims({**CLAIMS, "nonce": "n2"}).sign_in_hash != ident.sign_in_hash  # one per sign-in
    for bad in ({"sub": None}, {"iss": ""}, {"iat": "yesterday"}, {"iat": True}, {"sub": "x" * 256}):
        with pytest.raises(SignInRefused) as exc:
            identity_from_claims({**CLAIMS, **bad})
        assert exc.value.reason == "invalid"


def test_email_and_its_verification_come_from_one_source():
    asked = []

    def userinfo(info):
        return lambda: asked.append(1) or info

    both = {**CLAIMS, "email": "A@x.org", "email_verified": True}
    assert email_claims(both, userinfo({"sub": "u-1", "email": "b@x.org", "email_verified": True})) == ("A@x.org", True)
    assert asked == []  # the ID token had both: userinfo not asked
    assert email_claims(CLAIMS, userinfo({"sub": "u-1", "email": "b@x.org", "email_verified": "true"})) == (
        "b@x.org",
        True,
    )
    assert email_claims(CLAIMS, userinfo({"sub": "u-1", "email": "b@x.org", "email_verified": False})) == (
        "b@x.org",
        False,
    )
    assert email_claims(CLAIMS, userinfo({"sub": "u-1", "email": "b@x.org"})) == ("b@x.org", False)  # no verification
    # the ID token's unverified address is never paired with the userinfo's verification of another
    assert email_claims(
        {**CLAIMS, "email": "a@x.org"}, userinfo({"sub": "u-1", "email": "b@x.org", "email_verified": True})
    ) == ("b@x.org", True)
    assert email_claims({**CLAIMS, "email": "a@x.org"}, userinfo({"sub": "u-1"})) == ("a@x.org", False)
    assert email_claims(CLAIMS, userinfo({"sub": "u-1"})) == (None, False)
    assert email_claims(CLAIMS, None) == (None, False)
    for value in ("false", "yes", 1, None):
        assert email_claims({**CLAIMS, "email": "a@x.org", "email_verified": value})[1] is False
    with pytest.raises(SignInRefused) as exc:  # another subject's userinfo is never used
        email_claims(CLAIMS, userinfo({"sub": "u-2", "email": "b@x.org", "email_verified": True}))
    assert exc.value.reason == "userinfo"


# -- the deep link kept across the provider ------------------------------------------------------


def test_the_kept_address_is_inert_and_only_a_registered_page():
    from pages.components.return_to import decode, encode

    pages = {"": "home", "explore": "page"}
    value = encode("explore", [("f_model", "gpt-4o"), ("f_agree", "disagree"), ("q", "a b&c='<x>'")])
    assert value is not None and all(c.isalnum() or c in "._~%-" for c in value)  # safe inside a JS string
    assert decode(value, pages) == ("explore", [("f_model", "gpt-4o"), ("f_agree", "disagree"), ("q", "a b&c='<x>'")])
    assert encode("", []) is None  # the bare home page: nothing to keep
    assert decode(encode("", [("x", "1")]), pages) == ("", [("x", "1")])
    assert decode(encode("users", []), pages) is None  # not a registered page
    for forged in ("https%3A%2F%2Fevil.example", "explore';alert(1)//", "", None, "x" * 2001):
        assert decode(forged, pages) is None


# -- CI: the single sign-on browser tests fail, never skip, without their provider -------------


def test_sso_browser_tests_fail_in_ci_and_skip_locally_without_the_provider(monkeypatch, tmp_path):
    import os
    import subprocess
    from pathlib import Path

    from tests.e2e import sso_harness

    monkeypatch.setenv("REFORM_TEST_OIDC_DIR", str(tmp_path / "not-installed"))
    monkeypatch.setattr(sso_harness.shutil, "which", lambda name: None)  # neither node nor npm
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="single sign-on browser tests cannot run in CI"):
        sso_harness.require_oidc_provider()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        sso_harness.require_oidc_provider()
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run(
        ["bash", ".ci/run", "--check"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "REFORM_TEST_OIDC_DIR": str(tmp_path / "not-installed")},
    )
    assert r.returncode != 0 and "error: the OIDC test provider is not installed" in r.stderr, r.stderr


def test_a_provider_that_does_not_start_fails_the_tests(monkeypatch, tmp_path):
    import shutil

    from tests.e2e import sso_harness

    if shutil.which("node") is None:
        pytest.skip("node is not installed")  # .ci/run --check requires it in CI
    (tmp_path / "provider.mjs").write_text("process.exit(3);\n")
    monkeypatch.setattr(sso_harness, "require_oidc_provider", lambda: tmp_path)
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.fail.Exception, match="the OIDC test provider did not start"):
        with sso_harness.oidc_provider(tmp_path, "http://127.0.0.1:1/oauth2callback"):
            pass
