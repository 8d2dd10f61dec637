"""The reads of ``status`` with SQLAlchemy Core only (no pandas, no ORM models), so the CLI's
``status`` starts as fast as ``import pandas`` alone (issue 16)."""

from __future__ import annotations

import json
from typing import Optional

from sqlalchemy import text
from sqlalchemy.engine import Connection

# status key → table (fixed names: never built from input)
_COUNTED = {"questions": "question", "instructions": "instruction", "constraints": "constraint_item",
            "models": "eval_model", "responses": "response", "judgments": "judgment"}
PAIR_META = "scoring_pair"
REVISION_META = "data_revision"


def bump_revision(conn: Connection) -> None:
    """Mark the scored data as changed in place (an UPDATE keeps row counts and max ids, the
    rest of the data version): writers that overwrite scored rows call this in their
    transaction, so no cached score outlives the rows it was computed from."""
    import uuid

    conn.execute(text("INSERT INTO project_meta (key, value) VALUES (:k, :v) "
                      "ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
                 {"k": REVISION_META, "v": uuid.uuid4().hex})


def data_counts(conn: Connection) -> dict:
    """The counts of ``status`` that decisions do not change (SPEC §8), in one statement."""
    parts = [f"(SELECT COUNT(*) FROM {t}) AS {k}" for k, t in _COUNTED.items()]
    # Disagreements: pairs judged with opposite labels by two judges (any pair of judges).
    parts.append("(SELECT COUNT(*) FROM (SELECT response_id, constraint_id FROM judgment WHERE label IS NOT NULL "
                 "GROUP BY response_id, constraint_id HAVING MIN(label) <> MAX(label)) d) AS disagreements")
    row = conn.execute(text("SELECT " + ", ".join(parts))).mappings().one()
    return {k: int(v) for k, v in row.items()}


def adjudication_count(conn: Connection) -> int:
    """Current decisions: neither retracted nor superseded (the supersedes index answers it)."""
    return int(conn.execute(text(
        "SELECT COUNT(*) FROM adjudication a WHERE a.choice <> 'retracted' AND NOT EXISTS "
        "(SELECT 1 FROM adjudication b WHERE b.supersedes_id = a.id)")).scalar_one())


def status_counts(conn: Connection) -> dict:
    """The counts printed by ``status`` (SPEC §8)."""
    return {**data_counts(conn), "adjudications": adjudication_count(conn)}


def plans(conn: Connection) -> list[dict]:
    """Every plan with its judges and task counts (from the progress counters), oldest first."""
    rows = conn.execute(text(
        "SELECT p.name, ja.name AS judge_a, jb.name AS judge_b, COALESCE(c.tasks, 0) AS tasks, COALESCE(c.done, 0) AS done "
        "FROM sample_plan p JOIN judge ja ON ja.id = p.judge_a_id JOIN judge jb ON jb.id = p.judge_b_id "
        "LEFT JOIN (SELECT plan_id, SUM(tasks) AS tasks, SUM(done) AS done FROM plan_stratum_count "
        "GROUP BY plan_id) c ON c.plan_id = p.id ORDER BY p.id")).mappings().all()
    return [{"name": str(r["name"]), "judge_a": str(r["judge_a"]), "judge_b": str(r["judge_b"]),
             "tasks": int(r["tasks"]), "done": int(r["done"])} for r in rows]


def stored_pair(conn: Connection) -> Optional[list[str]]:
    """The project's scoring pair (``pair A B``) as ``[A, B]``, or None."""
    raw = conn.execute(text("SELECT value FROM project_meta WHERE key = :k"), {"k": PAIR_META}).scalar()
    try:
        pair = json.loads(raw) if raw else None
    except ValueError:
        return None
    return [str(pair[0]), str(pair[1])] if isinstance(pair, list) and len(pair) == 2 else None
