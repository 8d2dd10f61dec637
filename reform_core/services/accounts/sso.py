"""Single sign-on accounts: which ReForm account an identity proven by the provider may use.

An account is bound to the provider's identity ``(iss, sub)``, never to a name or an e-mail
alone: at its first sign-in the account is found by its e-mail address, and only when the
provider vouches for that address (``email_verified`` true, from the ID token or, where the
ID token lacks it, from the userinfo endpoint); from then on ``(iss, sub)`` alone finds it.
A lead may bind an account explicitly (:func:`bind_identity`, ``user-bind``), e.g. for a
provider that does not assert ``email_verified`` (Microsoft Entra ID).

Every refusal is a :class:`SignInRefused` whose message says what the person can do.
A sign-in is a session like a password sign-in: it lasts at most
:data:`~reform_core.services.accounts.users.SESSION_HOURS` from the ID token's issue, is checked
against the account at every action (deactivation, role change) and ends on sign-out; the
``auth_session`` row is keyed by a hash of the sign-in (issuer, subject, nonce, issue time),
which Streamlit keeps in its signed login cookie.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy.engine import Engine

from db.repo import users as repo
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.accounts.users import BUILTIN_USERS, SESSION_HOURS, normalize_email

MAX_CLAIM = 255
INVITE = "python -m reform_core user-add NAME --role ROLE --sso --email {email}"


class SignInRefused(Exception):
    """This identity may not use ReForm now. ``reason`` is one of ``invalid``, ``no_email``,
    ``not_verified``, ``userinfo``, ``not_invited``, ``bound_elsewhere``, ``deactivated``,
    ``ended``; the message says what to do (plain text: show it inertly)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Identity:
    """One sign-in at the provider, from the ID token's claims."""

    issuer: str
    subject: str
    issued_at: datetime
    sign_in_hash: str


def _claim(claims: Mapping, name: str) -> str:
    value = claims.get(name)
    if not isinstance(value, str) or not value or len(value) > MAX_CLAIM:
        raise SignInRefused(
            "invalid",
            f"The identity provider sent no usable {name!r} claim; sign in again, and if "
            "this repeats ask a lead to check the provider's configuration.",
        )
    return value


def identity_from_claims(claims: Mapping) -> Identity:
    """The identity of the ID token's claims (``st.user``): issuer, subject, issue time."""
    issuer, subject = _claim(claims, "iss"), _claim(claims, "sub")
    iat = claims.get("iat")
    if isinstance(iat, bool) or not isinstance(iat, (int, float)):
        raise SignInRefused("invalid", "The identity provider's ID token has no issue time (iat); sign in again.")
    nonce = claims.get("nonce") if isinstance(claims.get("nonce"), str) else ""
    digest = hashlib.sha256("\n".join(("sso", issuer, subject, nonce, str(int(iat)))).encode()).hexdigest()
    return Identity(issuer, subject, datetime.fromtimestamp(int(iat), timezone.utc), digest)


def _verified(value) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def email_claims(id_claims: Mapping, userinfo: Callable[[], Mapping] | None = None) -> tuple[str | None, bool]:
    """The e-mail address and whether the provider verified it, both from one source: the ID
    token when it holds both, else the userinfo answer (asked only then; its ``sub`` must be
    the ID token's), else whichever of the two holds an address (then unverified unless it
    says so)."""
    sources = [id_claims]
    if not ("email" in id_claims and "email_verified" in id_claims) and userinfo is not None:
        info = userinfo()
        if info.get("sub") != id_claims.get("sub"):
            raise SignInRefused(
                "userinfo",
                "The identity provider's userinfo answer is for another identity; "
                "sign in again, and if this repeats ask a lead to check the provider.",
            )
        sources.append(info)
    both = [s for s in sources if "email" in s and "email_verified" in s]
    some = both or [s for s in sources if isinstance(s.get("email"), str) and s.get("email")]
    if not some:
        return None, False
    email = some[0].get("email")
    return (email if isinstance(email, str) and email else None), _verified(some[0].get("email_verified"))


def _deactivated(username: str) -> SignInRefused:
    return SignInRefused(
        "deactivated",
        f"Your ReForm account {username} is deactivated: ask a lead to reactivate it (user-set {username} --activate).",
    )


def _bind_by_email(engine: Engine, ident: Identity, email: str | None, verified: bool) -> None:
    """Bind the account with this (verified) e-mail to ``ident``, or refuse saying why."""
    unbound = (
        f"or ask a lead to bind your ReForm account to this identity: python -m reform_core user-bind NAME "
        f"--issuer {ident.issuer} --subject {ident.subject}"
    )
    if email is None:
        raise SignInRefused(
            "no_email", f"Your identity provider sent no e-mail address for you; ask it to (scope email), {unbound}."
        )
    if not verified:
        raise SignInRefused(
            "not_verified",
            f"Your identity provider has not verified your e-mail address {email}: "
            f"verify it there and sign in again, {unbound}.",
        )
    key = normalize_email(email, strict=False)
    with engine.begin() as conn:
        u = repo.user_by_email(conn, email=key) if key else None
        if u is None or u["username"] in BUILTIN_USERS:
            raise SignInRefused(
                "not_invited",
                f"No ReForm account has the e-mail address {email}: ask a lead to "
                f"invite you ({INVITE.format(email=key or email)}).",
            )
        if not u["active"]:
            raise _deactivated(u["username"])
        if u["sso_subject"] is None and repo.bind_sso(
            conn, user_id=int(u["id"]), issuer=ident.issuer, subject=ident.subject
        ):
            return
        now_bound = repo.user_by_sso(conn, issuer=ident.issuer, subject=ident.subject)
        if now_bound is None or now_bound["id"] != u["id"]:  # (bound to this identity by a parallel sign-in: fine)
            raise SignInRefused(
                "bound_elsewhere",
                f"The ReForm account with the e-mail address {email} is bound to "
                "another sign-in identity: ask a lead to check it (user-bind).",
            )


def _session(conn, u: dict, ident: Identity, now: datetime) -> Principal:
    """The account's principal while this sign-in's session is open; opens it on first use, to
    end :data:`SESSION_HOURS` after the ID token's issue (never later than that from now, should
    the provider's clock run ahead)."""
    row = repo.session_by_hash(conn, user_id=int(u["id"]), secret_hash=ident.sign_in_hash)
    if row is None:
        expires = min(ident.issued_at, now) + timedelta(hours=SESSION_HOURS)
        if expires > now:
            repo.insert_session(
                conn, user_id=int(u["id"]), secret_hash=ident.sign_in_hash, role=u["role"], expires_at=expires
            )
    else:
        expires = row["expires_at"] if row["expires_at"].tzinfo else row["expires_at"].replace(tzinfo=timezone.utc)
    if expires <= now or (row is not None and (row["revoked_at"] is not None or row["role"] != u["role"])):
        raise SignInRefused(
            "ended",
            "Your session has ended (signed out, 12 hours after you signed in, or your "
            "account was changed by a lead). Sign in again.",
        )
    return Principal(int(u["id"]), u["username"], u["role"])


def _bound_principal(engine: Engine, ident: Identity, now: datetime) -> Principal | None:
    """The principal of the account bound to ``ident``, checked now (None: no account is)."""
    with engine.begin() as conn:
        u = repo.user_by_sso(conn, issuer=ident.issuer, subject=ident.subject)
        if u is None or u["username"] in BUILTIN_USERS:
            return None
        if not u["active"]:
            raise _deactivated(u["username"])
        return _session(conn, u, ident, now)


def sso_principal(
    engine: Engine, claims: Mapping, *, userinfo: Callable[[], Mapping] | None = None, now: datetime | None = None
) -> Principal:
    """The principal of the signed-in identity ``claims`` (the ID token's, ``st.user``), checked
    against its account now; :class:`SignInRefused` saying why not. ``userinfo`` returns the
    provider's userinfo claims; it is called only for an identity not bound yet whose ID
    token lacks the e-mail address or its verification (and outside any transaction)."""
    now = now or datetime.now(timezone.utc)
    ident = identity_from_claims(claims)
    principal = _bound_principal(engine, ident, now)
    if principal is None:
        _bind_by_email(engine, ident, *email_claims(claims, userinfo))
        principal = _bound_principal(engine, ident, now)
    if principal is None:  # unbound by a lead in between
        raise SignInRefused("ended", "Your account's sign-in identity was changed by a lead. Sign in again.")
    return principal


def end_sso_session(engine: Engine, claims: Mapping) -> None:
    """Sign-out: end this sign-in's session (every tab that shares it loses access)."""
    try:
        ident = identity_from_claims(claims)
    except SignInRefused:
        return
    with engine.begin() as conn:
        repo.revoke_sessions_by_hash(conn, secret_hash=ident.sign_in_hash)


def bind_identity(
    engine: Engine, principal: Principal, *, username: str, issuer: str | None, subject: str | None
) -> dict:
    """Bind ``username`` to the provider identity ``(issuer, subject)``, or unbind it when both
    are None (leads only). Ends the account's open sessions. Returns the new binding."""
    require(principal, "manage_users")
    if (issuer is None) != (subject is None):
        raise ValueError("issuer and subject: give both (to bind) or neither (to unbind)")
    for name, value in (("issuer", issuer), ("subject", subject)):
        if value is not None and (not value or len(value) > MAX_CLAIM or value != value.strip()):
            raise ValueError(f"{name}: 1–{MAX_CLAIM} characters without surrounding spaces, got {value!r}")
    if username.lower() in BUILTIN_USERS:
        raise ValueError(f"username: {username!r} is a built-in principal, not an account")
    with engine.begin() as conn:
        u = repo.get_user(conn, username=username)
        if u is None:
            raise ValueError(f"username: no account {username!r}")
        other = repo.user_by_sso(conn, issuer=issuer, subject=subject) if issuer is not None else None
        if other is not None and other["id"] != u["id"]:
            raise ValueError(f"issuer and subject: already bound to the account {other['username']!r}")
        repo.update_user(conn, username=username, sso_issuer=issuer, sso_subject=subject)
        repo.revoke_sessions(conn, user_id=int(u["id"]))
    return {"username": username, "sso_issuer": issuer, "sso_subject": subject}
