"""Issue 15 items 4, 13 and 14: the sign-in throttle in the database, session tokens, and
account management (service, CLI) on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from reform_core.services.accounts import users
from reform_core.services.accounts.auth import AccessDenied
from reform_core.services.accounts.users import (
    MAX_ATTEMPTS,
    SignInError,
    cli_principal,
    create_user,
    end_session,
    issue_session,
    list_users,
    local_principal,
    session_principal,
    set_password,
    sign_in,
    update_user,
)
from reform_core.services.platform.uow import get_engine

ROOT = Path(__file__).resolve().parents[2]
PW = "annotator-pw"


@pytest.fixture
def accounts(any_db_url):
    eng = get_engine(any_db_url)
    lead = create_user(eng, None, username="lead1", password="lead-password", role="lead")
    ann = create_user(eng, lead, username="ann", password=PW, role="annotator")
    return eng, lead, ann


def _counting_verify(monkeypatch) -> list:
    """Count the password hashes actually checked (the slow step an attacker wants to run)."""
    calls = []
    real = users._hasher

    class Counting:
        def verify(self, h, pw):
            calls.append(pw)
            return real.verify(h, pw)

        def __getattr__(self, name):
            return getattr(real, name)

    monkeypatch.setattr(users, "_hasher", Counting())
    return calls


def test_parallel_wrong_passwords_check_at_most_the_limit(accounts, monkeypatch):
    """Item 4: 12 parallel sign-ins with a wrong password: at most 5 reach the hash check
    (the old code counted, released the lock, then hashed: all 12 were checked)."""
    eng, _, _ = accounts
    calls = _counting_verify(monkeypatch)
    barrier = threading.Barrier(12)
    messages: list[str] = []

    def attempt():
        barrier.wait()
        try:
            sign_in(eng, "ann", "wrong-password")
        except SignInError as exc:
            messages.append(str(exc))

    threads = [threading.Thread(target=attempt) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(messages) == 12
    assert len(calls) == MAX_ATTEMPTS
    assert sum(m.startswith("Wrong") for m in messages) == MAX_ATTEMPTS
    assert sum(m.startswith("Too many") for m in messages) == 12 - MAX_ATTEMPTS
    with pytest.raises(SignInError, match="Too many"):
        sign_in(eng, "ann", PW)  # the right password too, while throttled
    assert [u["locked"] for u in list_users(eng, cli_principal(eng)) if u["username"] == "ann"] == [True]


def test_throttle_holds_across_processes(accounts):
    """Item 4: the failures counted in other processes (another app process, a restart) count here:
    the old throttle lived in one process's memory."""
    eng, _, _ = accounts
    url = eng.url.render_as_string(hide_password=False)
    code = (
        "import sys; from reform_core.services.platform.uow import get_engine; "
        "from reform_core.services.accounts.users import SignInError, sign_in\n"
        "try:\n    sign_in(get_engine(sys.argv[1]), 'ann', 'wrong-password')\n"
        "except SignInError as exc:\n    print(exc)\n"
    )
    for _ in range(MAX_ATTEMPTS):
        out = subprocess.run([sys.executable, "-c", code, url], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.stdout.startswith("Wrong username or password"), out.stderr
    with pytest.raises(SignInError, match="Too many failed attempts"):
        sign_in(eng, "ann", PW)


def test_throttle_window_expires_and_success_clears(accounts):
    eng, lead, ann = accounts
    for _ in range(MAX_ATTEMPTS - 1):
        with pytest.raises(SignInError, match="Wrong"):
            sign_in(eng, "ann", "wrong-password")
    assert sign_in(eng, "ann", PW) == ann  # a success forgets the failures
    for _ in range(MAX_ATTEMPTS):
        with pytest.raises(SignInError, match="Wrong"):
            sign_in(eng, "ann", "wrong-password")
    with eng.begin() as conn:  # the window began 6 minutes ago
        conn.execute(
            text("UPDATE signin_throttle SET window_start = :t"),
            {"t": users._now() - __import__("datetime").timedelta(minutes=6)},
        )
    assert sign_in(eng, "ann", PW) == ann


def test_unlock_and_password_reset(accounts):
    eng, lead, ann = accounts
    for _ in range(MAX_ATTEMPTS):
        with pytest.raises(SignInError):
            sign_in(eng, "ann", "wrong-password")
    with pytest.raises(SignInError, match="Too many"):
        sign_in(eng, "ann", PW)
    with pytest.raises(AccessDenied):
        update_user(eng, ann, username="ann", unlock=True)
    assert update_user(eng, lead, username="ann", unlock=True)["locked"] is False
    assert sign_in(eng, "ann", PW) == ann
    token = issue_session(eng, ann)
    set_password(eng, lead, username="ann", password="a-new-password")
    assert session_principal(eng, token) is None  # a reset ends open sessions
    with pytest.raises(SignInError):
        sign_in(eng, "ann", PW)
    assert sign_in(eng, "ann", "a-new-password") == ann


def test_session_token_survives_until_revoked(accounts, monkeypatch):
    """Item 13: a signed, expiring token; revoked by sign-out, deactivation and role change."""
    eng, lead, ann = accounts
    token = issue_session(eng, ann)
    assert session_principal(eng, token) == ann
    sid, secret, exp, mac = token.split(".")
    for bad in (
        None,
        "",
        "garbage",
        f"{sid}.{secret}.{exp}.{'0' * 64}",  # wrong signature
        f"{sid}.{secret[:-2]}xx.{exp}.{users._mac(f'{sid}.{secret[:-2]}xx.{exp}')}",  # signed, wrong secret
        f"{sid}.{secret}.{int(exp) + 9999}.{mac}",
    ):  # a longer expiry breaks the signature
        assert session_principal(eng, bad) is None
    end_session(eng, token)
    assert session_principal(eng, token) is None  # sign-out
    token = issue_session(eng, ann)
    update_user(eng, lead, username="ann", role="analyst")
    assert session_principal(eng, token) is None  # role change
    ana = sign_in(eng, "ann", PW)
    token = issue_session(eng, ana)
    assert session_principal(eng, token).role == "analyst"
    update_user(eng, lead, username="ann", active=False)
    assert session_principal(eng, token) is None  # deactivation
    with pytest.raises(SignInError, match="Wrong"):
        sign_in(eng, "ann", PW)
    update_user(eng, lead, username="ann", active=True)
    assert session_principal(eng, token) is None  # reactivation does not revive old sessions
    expired = issue_session(eng, lead, hours=-1)
    assert session_principal(eng, expired) is None
    monkeypatch.setattr(users, "_signing_key", lambda: b"another process's key")
    assert session_principal(eng, issue_session(eng, lead)) is not None
    good = issue_session(eng, lead)
    monkeypatch.setattr(users, "_signing_key", lambda: b"yet another key")
    assert session_principal(eng, good) is None


def test_usernames_validated_and_builtins_are_not_accounts(accounts):
    """Item 14: ``new user!`` and the built-in names are refused; ``local``/``cli`` never listed."""
    eng, lead, _ = accounts
    local_principal(eng)
    cli_principal(eng)
    for bad in ("new user!", "", " ann", "a" * 101, "cli", "Local", "x\ny", "<b>"):
        with pytest.raises(ValueError, match="username"):
            create_user(eng, lead, username=bad, password="12345678", role="annotator")
    create_user(eng, lead, username="mallory@example.com", password="12345678", role="analyst")
    names = [u["username"] for u in list_users(eng, lead)]
    assert names == ["ann", "lead1", "mallory@example.com"]
    for name in ("cli", "local"):
        with pytest.raises(ValueError, match="built-in"):
            update_user(eng, lead, username=name, role="annotator")
        with pytest.raises(SignInError):
            sign_in(eng, name, "")
    with pytest.raises(ValueError, match="no account"):
        update_user(eng, lead, username="nobody", active=False)
    with pytest.raises(ValueError, match="role"):
        update_user(eng, lead, username="ann", role="admin")


def _cli(url: str, *args: str, env: dict | None = None, input: str | None = None):
    full = {k: v for k, v in os.environ.items() if k != "REFORM_NEW_PASSWORD"}
    full.update({"REFORM_DATABASE_URL": url, **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "reform_core", *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        input=input,
    )


def test_cli_user_set_and_reset_password(sqlite_url):
    """Item 14: ``user-set`` (role, deactivate/activate, unlock) and ``user-reset-password``."""
    import json

    eng = get_engine(sqlite_url)
    create_user(eng, None, username="ann", password=PW, role="annotator")
    r = _cli(sqlite_url, "user-set", "ann", "--role", "analyst")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "username": "ann",
        "display_name": "ann",
        "role": "analyst",
        "active": True,
        "locked": False,
        "email": None,
        "sso_bound": False,
    }
    r = _cli(sqlite_url, "user-set", "ann", "--deactivate")
    assert r.returncode == 0 and json.loads(r.stdout)["active"] is False
    with pytest.raises(SignInError):
        sign_in(eng, "ann", PW)
    assert _cli(sqlite_url, "user-set", "ann", "--activate").returncode == 0
    for _ in range(MAX_ATTEMPTS):
        with pytest.raises(SignInError):
            sign_in(eng, "ann", "wrong")
    r = _cli(sqlite_url, "user-list")
    assert [u["locked"] for u in json.loads(r.stdout)] == [True]
    assert [u["username"] for u in json.loads(r.stdout)] == ["ann"]  # never cli or local
    assert _cli(sqlite_url, "user-set", "ann", "--unlock").returncode == 0
    assert sign_in(eng, "ann", PW).role == "analyst"
    r = _cli(sqlite_url, "user-reset-password", "ann", env={"REFORM_NEW_PASSWORD": "brand-new-pw"})
    assert r.returncode == 0, r.stderr
    assert sign_in(eng, "ann", "brand-new-pw").username == "ann"
    for args, msg in (
        (("user-set", "ann", "--role", "admin"), "role"),
        (("user-set", "cli", "--role", "annotator"), "built-in"),
        (("user-set", "ghost", "--deactivate"), "no account"),
        (("user-set", "ann"), "nothing to change"),
        (("user-set", "ann", "--activate", "--deactivate"), "choose one"),
        (("user-add", "new user!", "--role", "annotator"), "username"),
    ):
        r = _cli(sqlite_url, *args, env={"REFORM_NEW_PASSWORD": "12345678"})
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and msg in r.stderr, (
            args,
            r.stderr,
        )
    r = _cli(sqlite_url, "user-reset-password", "ann", env={"REFORM_NEW_PASSWORD": "short"})
    assert r.returncode == 1 and "at least 8" in r.stderr
