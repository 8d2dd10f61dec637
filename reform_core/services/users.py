"""Accounts, sign-in and the local single-user mode.

Passwords are hashed with Argon2id (``argon2-cffi``); sign-in attempts are rate limited
per username and per process; a failed sign-in does not say whether the user exists.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy.engine import Engine

from db.repo import users as repo
from reform_core.services.auth import ROLES, Principal, require

LOCAL_USER = "local"
CLI_USER = "cli"
MAX_ATTEMPTS = 5  # failed attempts allowed per username per window
WINDOW_S = 300.0
MIN_PASSWORD = 8

_hasher = PasswordHasher()
_failures: dict[str, deque] = defaultdict(deque)
_lock = threading.Lock()
# A valid hash to verify against when the user does not exist (equal timing).
_DUMMY_HASH = _hasher.hash("not-a-real-password")


class SignInError(Exception):
    """Wrong credentials or too many attempts (message safe to show)."""


def _ensure(engine: Engine, username: str, role: str) -> Principal:
    with engine.begin() as conn:
        u = repo.get_user(conn, username=username)
        if u is None:
            uid = repo.insert_user(conn, username=username, role=role, password_hash="")
            return Principal(uid, username, role)
        return Principal(int(u["id"]), u["username"], u["role"])


def local_principal(engine: Engine) -> Principal:
    """The single user of the local demo mode: a lead named 'local' (clearly labelled in the app)."""
    return _ensure(engine, LOCAL_USER, "lead")


def cli_principal(engine: Engine) -> Principal:
    """The CLI acts as a lead named 'cli' (whoever can run it can open the database anyway)."""
    return _ensure(engine, CLI_USER, "lead")


def create_user(engine: Engine, principal: Principal | None, *, username: str, password: str, role: str,
                display_name: str = "") -> Principal:
    """Create an account (leads only; ``principal=None`` only from the CLI bootstrap)."""
    if principal is not None:
        require(principal, "manage_users")
    if role not in ROLES:
        raise ValueError(f"role: must be one of {', '.join(ROLES)}, got {role!r}")
    if not username or not username.strip() or len(username) > 100:
        raise ValueError("username: must be 1–100 characters")
    if len(password) < MIN_PASSWORD:
        raise ValueError(f"password: must have at least {MIN_PASSWORD} characters")
    with engine.begin() as conn:
        if repo.get_user(conn, username=username) is not None:
            raise ValueError(f"username: {username!r} already exists")
        uid = repo.insert_user(conn, username=username, role=role, password_hash=_hasher.hash(password),
                               display_name=display_name)
    return Principal(uid, username, role)


def set_password(engine: Engine, principal: Principal, *, username: str, password: str) -> None:
    if principal.username != username:
        require(principal, "manage_users")
    if len(password) < MIN_PASSWORD:
        raise ValueError(f"password: must have at least {MIN_PASSWORD} characters")
    with engine.begin() as conn:
        repo.update_user(conn, username=username, password_hash=_hasher.hash(password))


def list_users(engine: Engine, principal: Principal) -> list[dict]:
    require(principal, "manage_users")
    with engine.connect() as conn:
        return repo.list_users(conn)


def _throttled(username: str, now: float) -> bool:
    q = _failures[username]
    while q and now - q[0] > WINDOW_S:
        q.popleft()
    return len(q) >= MAX_ATTEMPTS


def sign_in(engine: Engine, username: str, password: str) -> Principal:
    """Check credentials; raise :class:`SignInError` with a message that reveals nothing."""
    now = time.monotonic()
    with _lock:
        if _throttled(username, now):
            raise SignInError("Too many failed attempts; wait a few minutes and try again.")
    with engine.connect() as conn:
        u = repo.get_user(conn, username=username)
    ok = False
    try:
        ok = _hasher.verify(u["password_hash"] if u and u["password_hash"] else _DUMMY_HASH, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        ok = False
    if not ok or u is None or not u["active"] or not u["password_hash"]:
        with _lock:
            _failures[username].append(now)
        raise SignInError("Wrong username or password.")
    with _lock:
        _failures.pop(username, None)
    if _hasher.check_needs_rehash(u["password_hash"]):
        with engine.begin() as conn:
            repo.update_user(conn, username=username, password_hash=_hasher.hash(password))
    return Principal(int(u["id"]), u["username"], u["role"])


def reset_throttle() -> None:
    """Forget failed attempts (tests)."""
    with _lock:
        _failures.clear()


def principal_for_identity(engine: Engine, username: str) -> Principal | None:
    """The principal of an identity proven elsewhere (OIDC via ``st.login``): the account must
    exist and be active — a lead creates it (``user-add``) and so decides its role."""
    with engine.connect() as conn:
        u = repo.get_user(conn, username=username)
    if u is None or not u["active"]:
        return None
    return Principal(int(u["id"]), u["username"], u["role"])
