"""``status`` (docs/formats.md#project-data): counts, the scoring pair and the sample plans.

No pandas or ORM models. On an up-to-date SQLite file it reads with the standard library's
``sqlite3`` alone (:func:`sqlite_status`: SQLAlchemy's import costs about as much as pandas',
issue 16); any other database, or a SQLite file whose schema needs an upgrade, goes through
the engine (which upgrades it first).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Optional
from urllib.parse import unquote

from db.repo import status as repo
from db.schema_head import SCHEMA_HEAD

BUSY_TIMEOUT_S = 30.0  # as the engine's (db.engine.SQLITE_BUSY_TIMEOUT_MS)


def status(engine) -> dict:
    """The counts, the scoring ``pair`` (or None) and every sample plan with its judges and
    progress (``plans``: ``name, judge_a, judge_b, tasks, done``)."""
    with engine.connect() as conn:
        return _read(conn)


def _read(conn) -> dict:
    out = repo.status_counts(conn)
    out["pair"] = repo.stored_pair(conn)
    out["plans"] = repo.plans(conn)
    return out


def sqlite_file(url: str) -> Optional[Path]:
    """The file of a plain ``sqlite:///PATH`` URL (no driver, no query), else None."""
    for prefix in ("sqlite:///", "sqlite+pysqlite:///"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            if not rest or rest == ":memory:" or "?" in rest:
                return None
            return Path(unquote(rest)).expanduser()
    return None


def sqlite_status(url: str) -> Optional[dict]:
    """:func:`status` of an existing SQLite file at the current schema, read with ``sqlite3``
    only (a read transaction: one consistent snapshot); None when the URL is not a plain
    SQLite file, the file does not exist or its schema is not :data:`SCHEMA_HEAD` (the caller
    then opens the engine, which upgrades it)."""
    path = sqlite_file(url)
    if path is None or not path.is_file():
        return None
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S)
    try:
        conn.execute("BEGIN")  # every count from one snapshot
        try:
            head = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.OperationalError:  # no such table: a new or foreign file
            return None
        if head is None or head[0] != SCHEMA_HEAD:
            return None
        return _read(conn)
    finally:
        conn.close()
