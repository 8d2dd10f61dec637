"""User accounts."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection

from db.models import utcnow


def get_user(conn: Connection, *, username: str) -> dict | None:
    row = conn.execute(text("SELECT id, username, display_name, role, password_hash, active FROM app_user WHERE username = :u"),
                       {"u": username}).mappings().first()
    return dict(row) if row else None


def insert_user(conn: Connection, *, username: str, role: str, password_hash: str, display_name: str = "") -> int:
    conn.execute(text("INSERT INTO app_user (username, display_name, role, password_hash, active, created_at) "
                      "VALUES (:u, :d, :r, :h, :a, :c)"),
                 {"u": username, "d": display_name or username, "r": role, "h": password_hash, "a": True, "c": utcnow()})
    return int(conn.execute(text("SELECT id FROM app_user WHERE username = :u"), {"u": username}).scalar_one())


def update_user(conn: Connection, *, username: str, **values) -> None:
    sets = ", ".join(f"{k} = :{k}" for k in values)
    conn.execute(text(f"UPDATE app_user SET {sets} WHERE username = :username"), {"username": username, **values})


def list_users(conn: Connection) -> list[dict]:
    res = conn.execute(text("SELECT id, username, display_name, role, active, created_at FROM app_user ORDER BY username"))
    return [dict(r) for r in res.mappings()]
