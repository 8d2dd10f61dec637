"""Issue 37: which account a single sign-on identity gets, on SQLite and PostgreSQL.

An account is bound to the provider's ``(iss, sub)`` at its first sign-in, found by its
e-mail (case-insensitively) only when the provider verified that address; refusals say why;
a sign-in is a 12-hour session that deactivation, a role change, a lead's rebinding and
sign-out end. Also: accounts without a password (``user-add --sso``), ``user-bind``, the
migration that adds the columns, and the provider's metadata and userinfo over loopback HTTP.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy import text

from db.repo.users import get_user
from reform_core.services.accounts import oidc_provider as op
from reform_core.services.accounts.auth import AccessDenied
from reform_core.services.accounts.sso import SignInRefused, bind_identity, end_sso_session, sso_principal
from reform_core.services.accounts.users import SignInError, cli_principal, create_user, sign_in, update_user
from reform_core.services.platform.uow import get_engine

ROOT = Path(__file__).resolve().parents[2]
ISS = "https://idp.example.org"
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=timezone.utc)
_nonce = iter(range(10**6))


def claims(sub: str, *, email: str | None = None, verified=None, signed_in: datetime = NOW, iss: str = ISS) -> dict:
    """An ID token's claims as ``st.user`` holds them (a fresh nonce: a new sign-in)."""
    out = {"iss": iss, "sub": sub, "iat": int(signed_in.timestamp()), "nonce": f"n{next(_nonce)}", "aud": "reform"}
    if email is not None:
        out["email"] = email
    if verified is not None:
        out["email_verified"] = verified
    return out


@pytest.fixture
def eng(any_db_url):
    eng = get_engine(any_db_url)
    create_user(eng, None, username="alice", password=None, role="lead", email="alice@example.com")
    create_user(eng, None, username="bob", password=None, role="annotator", email="Bob@Example.com")
    return eng


def _row(eng, username: str) -> dict:
    with eng.connect() as conn:
        return get_user(conn, username=username)


def _refused(eng, c: dict, reason: str, *, now: datetime = NOW, userinfo=None) -> str:
    with pytest.raises(SignInRefused) as exc:
        sso_principal(eng, c, now=now, userinfo=userinfo)
    assert exc.value.reason == reason, str(exc.value)
    return str(exc.value)


def _sessions(eng) -> int:
    with eng.connect() as conn:
        return conn.execute(text("SELECT COUNT(*) FROM auth_session")).scalar_one()


def test_a_verified_email_binds_the_account_and_then_the_subject_alone_finds_it(eng):
    p = sso_principal(eng, claims("u-a", email="ALICE@Example.COM", verified=True), now=NOW)
    assert (p.username, p.role) == ("alice", "lead")
    assert (_row(eng, "alice")["sso_issuer"], _row(eng, "alice")["sso_subject"]) == (ISS, "u-a")
    assert sso_principal(eng, claims("u-a"), now=NOW).username == "alice"  # no e-mail needed any more
    assert sso_principal(eng, claims("u-a", email="new@example.com", verified=True), now=NOW).username == "alice"
    msg = _refused(eng, claims("u-other", email="alice@example.com", verified=True), "bound_elsewhere")
    assert "bound to another sign-in identity" in msg
    _refused(
        eng,
        claims("u-a", iss="https://other-idp.example.org", email="alice@example.com", verified=True),
        "bound_elsewhere",
    )  # the same subject at another issuer is another identity


def test_unverified_missing_or_unknown_emails_never_get_an_account(eng):
    before = _sessions(eng)
    msg = _refused(eng, claims("u-m", email="alice@example.com", verified=False), "not_verified")
    assert "has not verified your e-mail address alice@example.com" in msg and f"--issuer {ISS} --subject u-m" in msg
    _refused(eng, claims("u-m", email="alice@example.com", verified="false"), "not_verified")
    _refused(eng, claims("u-m", email="alice@example.com"), "not_verified")  # email_verified absent
    assert "sent no e-mail address" in _refused(eng, claims("u-m"), "no_email")
    msg = _refused(eng, claims("u-d", email="Dave@Example.com", verified=True), "not_invited")
    assert "No ReForm account has the e-mail address Dave@Example.com" in msg
    assert "user-add NAME --role ROLE --sso --email dave@example.com" in msg
    _refused(eng, claims("u-x", email="not an address", verified=True), "not_invited")
    assert _row(eng, "alice")["sso_subject"] is None and _row(eng, "bob")["sso_subject"] is None
    assert _sessions(eng) == before  # nothing bound, no session opened


def test_a_deactivated_account_is_told_so_bound_or_not(eng):
    update_user(eng, cli_principal(eng), username="bob", active=False)
    msg = _refused(eng, claims("u-b", email="bob@example.com", verified=True), "deactivated")
    assert "Your ReForm account bob is deactivated: ask a lead to reactivate it (user-set bob --activate)" in msg
    assert _row(eng, "bob")["sso_subject"] is None  # not bound while deactivated
    update_user(eng, cli_principal(eng), username="bob", active=True)
    assert sso_principal(eng, claims("u-b", email="bob@example.com", verified=True), now=NOW).username == "bob"
    update_user(eng, cli_principal(eng), username="bob", active=False)
    _refused(eng, claims("u-b"), "deactivated")


def test_a_sign_in_lasts_12_hours_and_ends_on_role_change_rebinding_and_sign_out(eng):
    first = claims("u-b", email="bob@example.com", verified=True, signed_in=NOW)
    assert sso_principal(eng, first, now=NOW).role == "annotator"
    assert sso_principal(eng, first, now=NOW + timedelta(hours=11, minutes=59)).role == "annotator"
    assert "Your session has ended" in _refused(eng, first, "ended", now=NOW + timedelta(hours=12))
    _refused(eng, claims("u-b", signed_in=NOW - timedelta(hours=13)), "ended")  # an old login cookie
    ahead = claims("u-b", signed_in=NOW + timedelta(hours=5))  # a provider whose clock runs ahead
    assert sso_principal(eng, ahead, now=NOW).username == "bob"
    _refused(eng, ahead, "ended", now=NOW + timedelta(hours=12))  # still 12 hours from its first use
    again = claims("u-b", signed_in=NOW + timedelta(hours=12))  # signed in again at the provider
    assert sso_principal(eng, again, now=NOW + timedelta(hours=12)).username == "bob"

    later = NOW + timedelta(hours=13)
    update_user(eng, cli_principal(eng), username="bob", role="analyst")
    _refused(eng, again, "ended", now=later)  # the role it was opened with is gone
    third = claims("u-b", signed_in=later)
    assert sso_principal(eng, third, now=later).role == "analyst"
    end_sso_session(eng, third)  # sign-out: every tab sharing this sign-in
    _refused(eng, third, "ended", now=later)
    fourth = claims("u-b", signed_in=later)
    assert sso_principal(eng, fourth, now=later).username == "bob"
    bind_identity(eng, cli_principal(eng), username="bob", issuer=ISS, subject="u-b2")  # a lead rebinds
    _refused(eng, fourth, "no_email", now=later)  # the old identity is nobody's now
    _refused(eng, claims("u-b", email="bob@example.com", verified=True), "bound_elsewhere", now=later)
    assert sso_principal(eng, claims("u-b2", signed_in=later), now=later).username == "bob"


def test_userinfo_is_asked_only_for_an_identity_not_bound_yet_whose_token_lacks_the_email(eng):
    asked = []

    def userinfo(answer):
        return lambda: asked.append(answer) or answer

    assert (
        sso_principal(
            eng,
            claims("u-a"),
            now=NOW,
            userinfo=userinfo({"sub": "u-a", "email": "Alice@Example.com", "email_verified": True}),
        ).username
        == "alice"
    )
    assert len(asked) == 1
    assert sso_principal(eng, claims("u-a"), now=NOW, userinfo=userinfo({})).username == "alice"
    assert len(asked) == 1  # bound: not asked again
    _refused(
        eng,
        claims("u-b"),
        "userinfo",
        userinfo=userinfo({"sub": "u-zz", "email": "bob@example.com", "email_verified": True}),
    )
    _refused(
        eng,
        claims("u-b"),
        "not_verified",
        userinfo=userinfo({"sub": "u-b", "email": "bob@example.com", "email_verified": False}),
    )
    assert _row(eng, "bob")["sso_subject"] is None


def test_parallel_first_sign_ins_of_one_identity_bind_once(eng):
    results, errors = [], []

    def go():
        try:
            results.append(sso_principal(eng, claims("u-b", email="bob@example.com", verified=True), now=NOW).username)
        except Exception as exc:  # noqa: BLE001 - collected and reported below
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == ["bob"] * 4
    assert _row(eng, "bob")["sso_subject"] == "u-b"


def test_a_lead_binds_and_unbinds_identities(eng):
    lead = cli_principal(eng)
    bob = sso_principal(eng, claims("u-b", email="bob@example.com", verified=True), now=NOW)
    with pytest.raises(AccessDenied):
        bind_identity(eng, bob, username="alice", issuer=ISS, subject="u-b")
    with pytest.raises(ValueError, match="already bound to the account 'bob'"):
        bind_identity(eng, lead, username="alice", issuer=ISS, subject="u-b")
    for issuer, subject, msg in (
        (ISS, None, "give both"),
        (" x", "s", "without surrounding spaces"),
        (ISS, "s" * 256, "1–255"),
    ):
        with pytest.raises(ValueError, match=msg):
            bind_identity(eng, lead, username="alice", issuer=issuer, subject=subject)
    with pytest.raises(ValueError, match="built-in"):
        bind_identity(eng, lead, username="cli", issuer=ISS, subject="s")
    # an identity whose provider never verifies e-mails (Entra ID): bound by a lead, then it signs in
    _refused(eng, claims("entra-1", email="alice@example.com"), "not_verified")
    assert bind_identity(eng, lead, username="alice", issuer=ISS, subject="entra-1")["sso_subject"] == "entra-1"
    assert sso_principal(eng, claims("entra-1"), now=NOW).username == "alice"
    bind_identity(eng, lead, username="alice", issuer=None, subject=None)
    _refused(eng, claims("entra-1"), "no_email")


def _cli(url: str, *args: str):
    env = {k: v for k, v in os.environ.items() if k != "REFORM_NEW_PASSWORD"}
    return subprocess.run(
        [sys.executable, "-m", "reform_core", *args, "--db", url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_sso_accounts_have_no_password_and_emails_compare_without_case(sqlite_url):
    r = _cli(sqlite_url, "user-add", "Carol@Example.com", "--role", "analyst", "--sso")  # no password, no prompt
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "username": "Carol@Example.com",
        "role": "analyst",
        "id": 2,
        "email": "carol@example.com",
        "password": False,
    }
    r = _cli(sqlite_url, "user-add", "carol2", "--sso", "--email", "CAROL@example.com")
    assert r.returncode == 1 and "another account already has the address 'carol@example.com'" in r.stderr
    r = _cli(sqlite_url, "user-add", "dan", "--sso", "--email", "dan at example")
    assert r.returncode == 1 and "email: expected one address" in r.stderr
    eng = get_engine(sqlite_url)
    with pytest.raises(SignInError):
        sign_in(eng, "Carol@Example.com", "")  # no password can ever match
    assert sso_principal(eng, claims("u-c", email="carol@EXAMPLE.com", verified=True), now=NOW).role == "analyst"
    r = _cli(sqlite_url, "user-bind", "Carol@Example.com", "--clear")
    assert r.returncode == 0 and json.loads(r.stdout)["sso_subject"] is None
    r = _cli(sqlite_url, "user-bind", "Carol@Example.com", "--issuer", ISS)
    assert r.returncode == 1 and "give --issuer and --subject" in r.stderr
    r = _cli(sqlite_url, "user-set", "Carol@Example.com", "--email", "C@Example.org")
    assert r.returncode == 0 and json.loads(r.stdout)["email"] == "c@example.org"
    r = _cli(sqlite_url, "user-list")
    assert [(u["email"], u["sso_bound"]) for u in json.loads(r.stdout)] == [("c@example.org", False)]


def test_migration_0009_adds_the_columns_and_takes_emails_from_usernames(any_db_url):
    from alembic import command

    from db.engine import alembic_config, make_engine, upgrade

    eng = make_engine(any_db_url)
    upgrade(eng, "0008_judgment_label_index")
    with eng.begin() as conn:
        for name in ("Ann@Example.com", "bea", "Dup@x.org", "dup@X.org"):
            conn.execute(
                text(
                    "INSERT INTO app_user (username, display_name, role, password_hash, active, created_at) "
                    "VALUES (:u, :u, 'annotator', '', :a, :c)"
                ),
                {"u": name, "a": True, "c": NOW},
            )
    upgrade(eng)
    with eng.connect() as conn:
        got = dict(conn.execute(text("SELECT username, email FROM app_user")).all())
    assert got == {"Ann@Example.com": "ann@example.com", "bea": None, "Dup@x.org": None, "dup@X.org": None}
    command.downgrade(alembic_config(eng), "0008_judgment_label_index")
    with eng.connect() as conn:
        assert "email" not in conn.execute(text("SELECT * FROM app_user")).keys()
    eng.dispose()


# -- the provider over loopback HTTP ---------------------------------------------------------------


class _Provider(BaseHTTPRequestHandler):
    token = "the-access-token-0123"

    def do_GET(self):  # noqa: N802 - http.server's name
        base = f"http://127.0.0.1:{self.server.server_port}"
        if self.path == "/.well-known/openid-configuration":
            body, kind = (
                {
                    "issuer": base,
                    **{
                        k: f"{base}/{k}"
                        for k in ("authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint")
                    },
                },
                "json",
            )
        elif self.path == "/userinfo_endpoint" and self.headers.get("Authorization") == f"Bearer {self.token}":
            body, kind = {"sub": "u-1", "email": "a@example.org", "email_verified": True}, "json"
        elif self.path == "/userinfo_endpoint" and self.headers.get("Authorization") == "Bearer jwt":
            body, kind = "eyJhbGciOiJub25lIn0.e30.", "jwt"
        else:
            self.send_response(401)
            self.end_headers()
            return
        data = (json.dumps(body) if kind == "json" else body).encode()
        self.send_response(200)
        self.send_header("Content-Type", f"application/{kind}")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_metadata_and_userinfo_are_read_over_http(monkeypatch):
    monkeypatch.setattr(op, "_authlib_installed", lambda: True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    auth = {
        "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
        "cookie_secret": "c" * 32,
        "client_id": "x",
        "client_secret": "y",
        "server_metadata_url": f"{base}/.well-known/openid-configuration",
        "expose_tokens": ["access"],
        "client_kwargs": {"prompt": "login"},
    }
    try:
        info = op.check_auth_config(auth)
        assert info.userinfo_endpoint == f"{base}/userinfo_endpoint"
        assert op.fetch_userinfo(info.userinfo_endpoint, _Provider.token)["email"] == "a@example.org"
        for token, msg in (
            ("wrong-secret-token", "answered HTTP 401"),
            ("jwt", "no usable answer"),
            (None, 'expose_tokens must include "access"'),
        ):
            with pytest.raises(op.UserinfoError, match=msg) as exc:
                op.fetch_userinfo(info.userinfo_endpoint, token)
            assert "wrong-secret-token" not in str(exc.value)
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(op.OidcConfigError, match="cannot read the provider's metadata"):
        op.check_auth_config(auth)  # the provider is gone
