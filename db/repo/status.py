"""The reads of ``status`` with SQLAlchemy Core only (no pandas, no ORM models), so the CLI's
``status`` starts as fast as ``import pandas`` alone (issue 16)."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

# Every read here runs on a SQLAlchemy connection or, for ``status`` on a SQLite file, on a
# stdlib ``sqlite3`` connection (no SQLAlchemy import: reform_core.services.data.status).
Conn = Union["Connection", sqlite3.Connection]


def _rows(conn: Conn, sql: str, params: Optional[dict] = None) -> list[dict]:
    """The rows of one SELECT as dicts, on either kind of connection (``:name`` parameters)."""
    if isinstance(conn, sqlite3.Connection):
        cur = conn.execute(sql, params or {})
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    from sqlalchemy import text

    return [dict(r) for r in conn.execute(text(sql), params or {}).mappings().all()]


# status key → table (fixed names: never built from input)
_COUNTED = {
    "questions": "question",
    "instructions": "instruction",
    "constraints": "constraint_item",
    "models": "eval_model",
    "responses": "response",
    "judgments": "judgment",
}
PAIR_META = "scoring_pair"
REVISION_META = "data_revision"


def bump_revision(conn: "Connection") -> None:
    """Mark the scored data as changed in place (an UPDATE keeps row counts and max ids, the
    rest of the data version): writers that overwrite scored rows call this in their
    transaction, so no cached score outlives the rows it was computed from."""
    import uuid

    from sqlalchemy import text

    conn.execute(
        text(
            "INSERT INTO project_meta (key, value) VALUES (:k, :v) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ),
        {"k": REVISION_META, "v": uuid.uuid4().hex},
    )


# Disagreements: pairs judged with opposite labels by two judges (any pair of judges); the
# covering index ix_judgment_response_constraint_label answers it without reading the rows.
DISAGREEMENTS_SQL = (
    "SELECT COUNT(*) FROM (SELECT response_id, constraint_id FROM judgment WHERE label IS NOT NULL "
    "GROUP BY response_id, constraint_id HAVING MIN(label) <> MAX(label)) d"
)


def data_counts(conn: Conn) -> dict:
    """The counts of ``status`` that decisions do not change (docs/formats.md#project-data), in one
    statement."""
    parts = [f"(SELECT COUNT(*) FROM {t}) AS {k}" for k, t in _COUNTED.items()]
    parts.append(f"({DISAGREEMENTS_SQL}) AS disagreements")
    row = _rows(conn, "SELECT " + ", ".join(parts))[0]
    return {k: int(v) for k, v in row.items()}


def adjudication_count(conn: Conn) -> int:
    """Current decisions: neither retracted nor superseded (the supersedes index answers it)."""
    return int(
        _rows(
            conn,
            "SELECT COUNT(*) AS n FROM adjudication a WHERE a.choice <> 'retracted' AND NOT EXISTS "
            "(SELECT 1 FROM adjudication b WHERE b.supersedes_id = a.id)",
        )[0]["n"]
    )


def status_counts(conn: Conn) -> dict:
    """The counts printed by ``status`` (docs/formats.md#project-data)."""
    return {**data_counts(conn), "adjudications": adjudication_count(conn)}


def plans(conn: Conn) -> list[dict]:
    """Every plan with its judges and task counts (from the progress counters), oldest first."""
    rows = _rows(
        conn,
        (
            "SELECT p.name, ja.name AS judge_a, jb.name AS judge_b, COALESCE(c.tasks, 0) AS tasks, COALESCE(c.done, 0) AS done "
            "FROM sample_plan p JOIN judge ja ON ja.id = p.judge_a_id JOIN judge jb ON jb.id = p.judge_b_id "
            "LEFT JOIN (SELECT plan_id, SUM(tasks) AS tasks, SUM(done) AS done FROM plan_stratum_count "
            "GROUP BY plan_id) c ON c.plan_id = p.id ORDER BY p.id"
        ),
    )
    return [
        {
            "name": str(r["name"]),
            "judge_a": str(r["judge_a"]),
            "judge_b": str(r["judge_b"]),
            "tasks": int(r["tasks"]),
            "done": int(r["done"]),
        }
        for r in rows
    ]


def stored_pair(conn: Conn) -> Optional[list[str]]:
    """The project's scoring pair (``pair A B``) as ``[A, B]``, or None."""
    found = _rows(conn, "SELECT value FROM project_meta WHERE key = :k", {"k": PAIR_META})
    raw = found[0]["value"] if found else None
    try:
        pair = json.loads(raw) if raw else None
    except ValueError:
        return None
    return [str(pair[0]), str(pair[1])] if isinstance(pair, list) and len(pair) == 2 else None
