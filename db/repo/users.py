"""User accounts."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import case, delete, or_, select, text, update
from sqlalchemy import insert as insert_
from sqlalchemy.engine import Connection

from db.models import utcnow

_USER_COLUMNS = "id, username, display_name, role, password_hash, active, email, sso_issuer, sso_subject"


def get_user(conn: Connection, *, username: str) -> dict | None:
    row = (
        conn.execute(text(f"SELECT {_USER_COLUMNS} FROM app_user WHERE username = :u"), {"u": username})
        .mappings()
        .first()
    )
    return dict(row) if row else None


def user_by_email(conn: Connection, *, email: str) -> dict | None:
    """The account whose (lower-case) e-mail is ``email`` (give it lower-case)."""
    row = conn.execute(text(f"SELECT {_USER_COLUMNS} FROM app_user WHERE email = :e"), {"e": email}).mappings().first()
    return dict(row) if row else None


def user_by_sso(conn: Connection, *, issuer: str, subject: str) -> dict | None:
    """The account bound to the single sign-on identity ``(issuer, subject)``."""
    row = (
        conn.execute(
            text(f"SELECT {_USER_COLUMNS} FROM app_user WHERE sso_issuer = :i AND sso_subject = :s"),
            {"i": issuer, "s": subject},
        )
        .mappings()
        .first()
    )
    return dict(row) if row else None


def bind_sso(conn: Connection, *, user_id: int, issuer: str, subject: str) -> bool:
    """Bind an account that is not bound yet to ``(issuer, subject)``; False when it is bound
    already (one conditional UPDATE: two first sign-ins at once cannot both bind it)."""
    res = conn.execute(
        text(
            "UPDATE app_user SET sso_issuer = :i, sso_subject = :s "
            "WHERE id = :id AND sso_subject IS NULL AND sso_issuer IS NULL"
        ),
        {"i": issuer, "s": subject, "id": user_id},
    )
    return res.rowcount == 1


def insert_user(
    conn: Connection, *, username: str, role: str, password_hash: str, display_name: str = "", email: str | None = None
) -> int:
    conn.execute(
        text(
            "INSERT INTO app_user (username, display_name, role, password_hash, active, created_at, email) "
            "VALUES (:u, :d, :r, :h, :a, :c, :e)"
        ),
        {
            "u": username,
            "d": display_name or username,
            "r": role,
            "h": password_hash,
            "a": True,
            "c": utcnow(),
            "e": email,
        },
    )
    return int(conn.execute(text("SELECT id FROM app_user WHERE username = :u"), {"u": username}).scalar_one())


def update_user(conn: Connection, *, username: str, **values) -> None:
    sets = ", ".join(f"{k} = :{k}" for k in values)
    conn.execute(text(f"UPDATE app_user SET {sets} WHERE username = :username"), {"username": username, **values})


def list_users(conn: Connection) -> list[dict]:
    res = conn.execute(
        text(
            "SELECT id, username, display_name, role, active, created_at, email, "
            "sso_subject IS NOT NULL AS sso_bound FROM app_user ORDER BY username"
        )
    )
    return [dict(r) for r in res.mappings()]


# -- sign-in throttle (one row per username, shared by every process) ---------------------------


def _insert_ignore(conn: Connection, table, values: dict):
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return conn.execute(insert(table).values(**values).on_conflict_do_nothing())


def reserve_attempt(conn: Connection, *, username: str, now: datetime, window: timedelta, limit: int) -> bool:
    """Count one more attempt for ``username`` unless ``limit`` attempts already fall in the
    current window; True when the attempt may go ahead. One conditional UPDATE, so parallel
    attempts (threads or processes) can never all pass: the database serialises them."""
    from db.models import SigninThrottle as T

    _insert_ignore(conn, T.__table__, {"username": username, "failures": 0, "window_start": now})
    expired = T.window_start < now - window
    res = conn.execute(
        update(T)
        .where(T.username == username, or_(expired, T.failures < limit))
        .values(
            failures=case((expired, 1), else_=T.failures + 1), window_start=case((expired, now), else_=T.window_start)
        )
    )
    return res.rowcount == 1


def clear_attempts(conn: Connection, *, username: str) -> None:
    from db.models import SigninThrottle as T

    conn.execute(delete(T).where(T.username == username))


def forget_old_attempts(conn: Connection, *, before: datetime) -> None:
    from db.models import SigninThrottle as T

    conn.execute(delete(T).where(T.window_start < before))


def attempts(conn: Connection, *, username: str) -> int:
    from db.models import SigninThrottle as T

    return int(conn.execute(select(T.failures).where(T.username == username)).scalar() or 0)


# -- sessions behind the signed session token ---------------------------------------------------


def insert_session(conn: Connection, *, user_id: int, secret_hash: str, role: str, expires_at: datetime) -> int:
    from db.models import AuthSession as S

    res = conn.execute(
        insert_(S.__table__)
        .values(user_id=user_id, secret_hash=secret_hash, role=role, created_at=utcnow(), expires_at=expires_at)
        .returning(S.id)
    )
    return int(res.scalar_one())


def session_by_hash(conn: Connection, *, user_id: int, secret_hash: str) -> dict | None:
    """The newest session of ``user_id`` whose secret (or SSO sign-in) hashes to ``secret_hash``."""
    from db.models import AuthSession as S

    row = (
        conn.execute(
            select(S.id, S.role, S.expires_at, S.revoked_at)
            .where(S.user_id == user_id, S.secret_hash == secret_hash)
            .order_by(S.id.desc())
            .limit(1)
        )
        .mappings()
        .first()
    )
    return dict(row) if row else None


def revoke_sessions_by_hash(conn: Connection, *, secret_hash: str) -> int:
    from db.models import AuthSession as S

    return conn.execute(
        update(S).where(S.secret_hash == secret_hash, S.revoked_at.is_(None)).values(revoked_at=utcnow())
    ).rowcount


def session_with_user(conn: Connection, *, session_id: int) -> dict | None:
    """The session row with its user's current username, role and active flag."""
    from db.models import AuthSession as S
    from db.models import User as U

    row = (
        conn.execute(
            select(
                S.id,
                S.user_id,
                S.secret_hash,
                S.role.label("session_role"),
                S.expires_at,
                S.revoked_at,
                U.username,
                U.role,
                U.active,
            )
            .join(U, U.id == S.user_id)
            .where(S.id == session_id)
        )
        .mappings()
        .first()
    )
    return dict(row) if row else None


def revoke_sessions(conn: Connection, *, user_id: int | None = None, session_id: int | None = None) -> int:
    from db.models import AuthSession as S

    q = update(S).where(S.revoked_at.is_(None))
    q = q.where(S.user_id == user_id) if session_id is None else q.where(S.id == session_id)
    return conn.execute(q.values(revoked_at=utcnow())).rowcount


def locked_usernames(conn: Connection, *, limit: int, since: datetime) -> set[str]:
    from db.models import SigninThrottle as T

    q = select(T.username).where(T.failures >= limit, T.window_start >= since)
    return {r[0] for r in conn.execute(q)}
