"""Accounts, sign-in, sessions and the local single-user mode.

Passwords are hashed with Argon2id (``argon2-cffi``); a failed sign-in does not say whether
the user exists. Sign-in attempts are throttled per username *in the database*
(``signin_throttle``): each attempt reserves a slot with one conditional UPDATE before the
slow hash runs, so parallel attempts and several app processes share one limit.

A signed-in browser holds a session token (:func:`issue_session`): ``<id>.<secret>.<expiry>.<mac>``,
HMAC-SHA256-signed with ``REFORM_SESSION_SECRET``; the ``auth_session`` row holds the secret's
SHA-256, the role it was issued for and its revocation. :func:`session_principal` accepts a
token only while it is unexpired, unrevoked and its user is active with the same role, so
sign-out, deactivation, a role change or a password reset end every open session.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import datetime, timedelta, timezone

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy.engine import Engine

from db.repo import users as repo
from reform_core.services.accounts.auth import ROLES, Principal, require

LOCAL_USER = "local"
CLI_USER = "cli"
BUILTIN_USERS = (LOCAL_USER, CLI_USER)  # principals of the app's local mode and of the CLI, not accounts
MAX_ATTEMPTS = 5  # failed attempts allowed per username per window
WINDOW_S = 300.0
MIN_PASSWORD = 8
SESSION_HOURS = 12.0
# Letters, digits and . _ @ + - (an e-mail address is a valid username, for OIDC), 1–100 characters,
# starting with a letter or digit.
USERNAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")

_hasher = PasswordHasher()
_dummy_hash: list[str] = []


def _dummy() -> str:
    """A valid hash to verify against when the user does not exist (equal timing); made on
    first use, not at import (one Argon2 hash costs ~0.1 s of every CLI start)."""
    if not _dummy_hash:
        _dummy_hash.append(_hasher.hash("not-a-real-password"))
    return _dummy_hash[0]


def prepare_sign_in() -> None:
    """Make the dummy hash now (the sign-in form calls this before anyone submits), so no
    first attempt pays for it and a first unknown username takes no longer than a known one."""
    _dummy()


class SignInError(Exception):
    """Wrong credentials or too many attempts (message safe to show)."""


def _now() -> datetime:
    return datetime.now(timezone.utc)


def validate_username(username: str) -> str:
    """The username if it is valid for an account; ValueError naming the rule otherwise."""
    if not isinstance(username, str) or not USERNAME_RE.fullmatch(username):
        raise ValueError(
            f"username: 1–100 letters, digits or . _ @ + - starting with a letter or digit, got {username!r}"
        )
    if username.lower() in BUILTIN_USERS:
        raise ValueError(
            f"username: {username!r} is reserved for the built-in "
            f"{'local mode' if username.lower() == LOCAL_USER else 'CLI'} principal"
        )
    return username


def _ensure(engine: Engine, username: str, role: str) -> Principal:
    """A built-in principal: its role comes from the code, never from the row (the row exists
    only so that what it does can name it)."""
    with engine.begin() as conn:
        u = repo.get_user(conn, username=username)
        uid = int(u["id"]) if u else repo.insert_user(conn, username=username, role=role, password_hash="")
    return Principal(uid, username, role)


def local_principal(engine: Engine) -> Principal:
    """The single user of the local demo mode: a lead named 'local' (clearly labelled in the app)."""
    return _ensure(engine, LOCAL_USER, "lead")


def cli_principal(engine: Engine) -> Principal:
    """The CLI acts as a lead named 'cli' (whoever can run it can open the database anyway)."""
    return _ensure(engine, CLI_USER, "lead")


def _check_password(password: str) -> None:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise ValueError(f"password: must have at least {MIN_PASSWORD} characters")


def normalize_email(email: str | None, *, strict: bool = True) -> str | None:
    """``email`` lower-cased and trimmed (e-mail addresses compare case-insensitively here), or
    None when there is none; a ValueError naming the rule when it is not one address (with
    ``strict=False``: None instead)."""
    if email is None or (isinstance(email, str) and not email.strip()):
        return None
    value = email.strip().lower() if isinstance(email, str) else ""
    if not EMAIL_RE.fullmatch(value) or len(value) > 254:
        if not strict:
            return None
        raise ValueError(
            f"email: expected one address such as alice@example.com (at most 254 characters), got {email!r}"
        )
    return value


def create_user(
    engine: Engine,
    principal: Principal | None,
    *,
    username: str,
    password: str | None,
    role: str,
    display_name: str = "",
    email: str | None = None,
) -> Principal:
    """Create an account (leads only; ``principal=None`` only from the CLI bootstrap).

    ``password=None`` makes an account that signs in only by single sign-on. ``email`` (default:
    the username when it is an e-mail address) finds the account at its first SSO sign-in; it is
    stored lower-case and no two accounts share one."""
    if principal is not None:
        require(principal, "manage_users")
    if role not in ROLES:
        raise ValueError(f"role: must be one of {', '.join(ROLES)}, got {role!r}")
    validate_username(username)
    if password is not None:
        _check_password(password)
    email = normalize_email(email) if email is not None else normalize_email(username, strict=False)
    with engine.begin() as conn:
        if repo.get_user(conn, username=username) is not None:
            raise ValueError(f"username: {username!r} already exists")
        if email is not None and repo.user_by_email(conn, email=email) is not None:
            raise ValueError(f"email: another account already has the address {email!r}")
        uid = repo.insert_user(
            conn,
            username=username,
            role=role,
            display_name=display_name,
            email=email,
            password_hash=_hasher.hash(password) if password is not None else "",
        )
    return Principal(uid, username, role)


def _account(conn, username: str) -> dict:
    if username.lower() in BUILTIN_USERS:
        raise ValueError(f"username: {username!r} is a built-in principal, not an account")
    u = repo.get_user(conn, username=username)
    if u is None:
        raise ValueError(f"username: no account {username!r}")
    return u


def set_password(engine: Engine, principal: Principal, *, username: str, password: str) -> None:
    """Set a new password (leads for anyone, a user for themselves); ends the account's open
    sessions and its sign-in throttle."""
    if principal.username != username:
        require(principal, "manage_users")
    _check_password(password)
    with engine.begin() as conn:
        u = _account(conn, username)
        repo.update_user(conn, username=username, password_hash=_hasher.hash(password))
        repo.revoke_sessions(conn, user_id=int(u["id"]))
        repo.clear_attempts(conn, username=username)


def update_user(
    engine: Engine,
    principal: Principal,
    *,
    username: str,
    role: str | None = None,
    active: bool | None = None,
    unlock: bool = False,
    email: str | None = None,
) -> dict:
    """Change an account (leads only): its role, deactivate / activate it, lift its sign-in
    throttle, set its e-mail address. A role change or a deactivation ends the account's open
    sessions at once. Returns the account as :func:`list_users` shows it."""
    require(principal, "manage_users")
    if role is not None and role not in ROLES:
        raise ValueError(f"role: must be one of {', '.join(ROLES)}, got {role!r}")
    email = normalize_email(email) if email is not None else None
    with engine.begin() as conn:
        u = _account(conn, username)
        values = {}
        if email is not None and email != u["email"]:
            other = repo.user_by_email(conn, email=email)
            if other is not None:
                raise ValueError(f"email: the account {other['username']!r} already has the address {email!r}")
            values["email"] = email
        if role is not None and role != u["role"]:
            values["role"] = role
        if active is not None and bool(active) != bool(u["active"]):
            values["active"] = bool(active)
        if values:
            repo.update_user(conn, username=username, **values)
            if values.get("role") or values.get("active") is False:
                repo.revoke_sessions(conn, user_id=int(u["id"]))
        if unlock:
            repo.clear_attempts(conn, username=username)
        return _public(repo.get_user(conn, username=username), repo.attempts(conn, username=username))


def _public(u: dict, failures: int) -> dict:
    return {
        "username": u["username"],
        "display_name": u["display_name"],
        "role": u["role"],
        "active": bool(u["active"]),
        "locked": failures >= MAX_ATTEMPTS,
        "email": u["email"],
        "sso_bound": u["sso_subject"] is not None,
    }


def list_users(engine: Engine, principal: Principal) -> list[dict]:
    """The accounts (never the built-in ``local`` and ``cli`` principals), with whether each
    is locked out by the sign-in throttle and whether it is bound to a single sign-on identity."""
    require(principal, "manage_users")
    with engine.connect() as conn:
        rows = [u for u in repo.list_users(conn) if u["username"] not in BUILTIN_USERS]
        locked = repo.locked_usernames(conn, limit=MAX_ATTEMPTS, since=_now() - timedelta(seconds=WINDOW_S))
    return [
        {**u, "active": bool(u["active"]), "locked": u["username"] in locked, "sso_bound": bool(u["sso_bound"])}
        for u in rows
    ]


def sign_in(engine: Engine, username: str, password: str) -> Principal:
    """Check credentials; raise :class:`SignInError` with a message that reveals nothing.

    The attempt is counted *before* the password is checked (and forgotten after a success),
    so at most :data:`MAX_ATTEMPTS` wrong passwords per username are ever checked in a window,
    however many arrive at once and in however many processes."""
    key = str(username)[:100]
    now = _now()
    with engine.begin() as conn:
        if not repo.reserve_attempt(
            conn, username=key, now=now, window=timedelta(seconds=WINDOW_S), limit=MAX_ATTEMPTS
        ):
            raise SignInError("Too many failed attempts; wait a few minutes and try again.")
        u = repo.get_user(conn, username=key) if key == username else None
    if u is not None and u["username"] in BUILTIN_USERS:
        u = None
    ok = False
    try:
        ok = _hasher.verify(u["password_hash"] if u and u["password_hash"] else _dummy(), password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        ok = False
    if not ok or u is None or not u["active"] or not u["password_hash"]:
        raise SignInError("Wrong username or password.")
    with engine.begin() as conn:
        repo.clear_attempts(conn, username=key)
        repo.forget_old_attempts(conn, before=now - timedelta(seconds=WINDOW_S))
        if _hasher.check_needs_rehash(u["password_hash"]):
            repo.update_user(conn, username=username, password_hash=_hasher.hash(password))
    return Principal(int(u["id"]), u["username"], u["role"])


def unlock(engine: Engine, principal: Principal, *, username: str) -> None:
    """Lift the sign-in throttle of ``username`` (leads only)."""
    update_user(engine, principal, username=username, unlock=True)


# -- session tokens -----------------------------------------------------------------------------

_PROCESS_SECRET = secrets.token_bytes(32)


def _signing_key() -> bytes:
    from reform_core.config import get_settings

    s = get_settings().session_secret
    return s.get_secret_value().encode() if s is not None and s.get_secret_value() else _PROCESS_SECRET


def _mac(payload: str) -> str:
    return hmac.new(_signing_key(), payload.encode(), hashlib.sha256).hexdigest()


def issue_session(engine: Engine, principal: Principal, *, hours: float = SESSION_HOURS) -> str:
    """A new signed session token for ``principal`` (after a password sign-in)."""
    secret = secrets.token_urlsafe(32)
    expires = _now() + timedelta(hours=hours)
    with engine.begin() as conn:
        sid = repo.insert_session(
            conn,
            user_id=principal.user_id,
            role=principal.role,
            expires_at=expires,
            secret_hash=hashlib.sha256(secret.encode()).hexdigest(),
        )
    payload = f"{sid}.{secret}.{int(expires.timestamp())}"
    return f"{payload}.{_mac(payload)}"


def _parse(token: str) -> tuple[int, str, int] | None:
    parts = token.split(".") if isinstance(token, str) and len(token) < 400 else []
    if len(parts) != 4 or not parts[0].isdigit() or not parts[2].isdigit():
        return None
    payload = ".".join(parts[:3])
    if not hmac.compare_digest(_mac(payload), parts[3]):
        return None
    return int(parts[0]), parts[1], int(parts[2])


def session_principal(engine: Engine, token: str | None) -> Principal | None:
    """The principal of a session token, or None when it is malformed, wrongly signed,
    expired, revoked, or its user is inactive or no longer has the role it was issued for."""
    parsed = _parse(token) if token else None
    if parsed is None:
        return None
    sid, secret, exp = parsed
    if exp <= _now().timestamp():
        return None
    with engine.connect() as conn:
        row = repo.session_with_user(conn, session_id=sid)
    if row is None or row["revoked_at"] is not None or not row["active"] or row["role"] != row["session_role"]:
        return None
    expires_at = row["expires_at"] if row["expires_at"].tzinfo else row["expires_at"].replace(tzinfo=timezone.utc)
    if expires_at <= _now() or row["username"] in BUILTIN_USERS:
        return None
    if not hmac.compare_digest(row["secret_hash"], hashlib.sha256(secret.encode()).hexdigest()):
        return None
    return Principal(int(row["user_id"]), row["username"], row["role"])


def end_session(engine: Engine, token: str | None) -> None:
    """Revoke the session of ``token`` (sign-out); a bad token is ignored."""
    parsed = _parse(token) if token else None
    if parsed is not None:
        with engine.begin() as conn:
            repo.revoke_sessions(conn, session_id=parsed[0])
