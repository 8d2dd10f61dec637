"""Reads of the example explorer: a cheap data version and one (model, question) example.

The filtered list of instances is served from the cached scoring frame (it needs the
calibrated p of every candidate row); the database is read here only for the version key
and for the one example on screen (indexed lookups by model and question).
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from reform_core.frames import IID_SHIFT

# Tables whose rows feed the scores; (COUNT, MAX(id)) of each is an O(1)-ish version stamp.
VERSIONED_TABLES = (
    "question",
    "instruction",
    "constraint_item",
    "response",
    "baseline_feature",
    "judge",
    "judgment",
    "adjudication",
)


def data_version(conn: Connection) -> tuple:
    """``(count, max id)`` of every table the scores read, then the in-place revision stamp
    (``db.repo.status.bump_revision``): changes whenever rows are added, removed or overwritten."""
    parts = ", ".join(f"(SELECT COUNT(*) FROM {t}), (SELECT COALESCE(MAX(id), 0) FROM {t})" for t in VERSIONED_TABLES)
    row = conn.execute(text(f"SELECT {parts}, (SELECT value FROM project_meta WHERE key = 'data_revision')")).one()
    return (*(int(v) for v in row[:-1]), row[-1] or "")


def _frame(conn: Connection, sql, params: dict) -> pd.DataFrame:
    res = conn.execute(sql if not isinstance(sql, str) else text(sql), params)
    return pd.DataFrame(res.all(), columns=list(res.keys()))


def example(conn: Connection, *, model: str, question: str) -> dict | None:
    """One model's answers to one question: baseline, every variant, constraints, judgments, decisions.

    Returns None when the model or the question is unknown. ``responses`` has one row per
    response (``kind`` baseline | constrained); ``constraints`` one row per (instruction,
    position) with the instance id ``iid``; ``judgments`` the latest row per (judge, iid);
    ``adjudications`` the current (not superseded) decisions per iid.
    """
    q = (
        conn.execute(text("SELECT id, key, text, task_type, domain FROM question WHERE key = :k"), {"k": question})
        .mappings()
        .first()
    )
    m = conn.execute(text("SELECT id FROM eval_model WHERE name = :n"), {"n": model}).scalar()
    if q is None or m is None:
        return None
    ids = {"q": q["id"], "m": m}
    responses = _frame(
        conn,
        (
            "SELECT r.id AS response_id, r.kind, r.variant AS instruction, i.condition, i.text AS instruction_text, r.text "
            "FROM response r LEFT JOIN instruction i ON i.id = r.instruction_id "
            "WHERE r.question_id = :q AND r.model_id = :m ORDER BY r.kind, r.variant"
        ),
        ids,
    )
    constraints = _frame(
        conn,
        (
            f"SELECT r.id * {IID_SHIFT} + c.id AS iid, r.id AS response_id, i.key AS instruction, c.position, "
            "c.feature, c.category, c.mode, c.text AS constraint_text, c.acceptance "
            "FROM response r JOIN instruction i ON i.id = r.instruction_id JOIN constraint_item c ON c.instruction_id = i.id "
            "WHERE r.question_id = :q AND r.model_id = :m ORDER BY i.key, c.position"
        ),
        ids,
    )
    rids = [int(r) for r in responses["response_id"]] or [-1]
    judgments = _frame(
        conn,
        text(
            f"SELECT g.response_id * {IID_SHIFT} + g.constraint_id AS iid, j.name AS judge, g.label, g.status, g.rationale "
            "FROM judgment g JOIN judge j ON j.id = g.judge_id JOIN constraint_item c ON c.id = g.constraint_id "
            "WHERE g.response_id IN :r ORDER BY g.id"
        ).bindparams(bindparam("r", expanding=True)),
        {"r": rids},
    )
    judgments = judgments.drop_duplicates(["iid", "judge"], keep="last").reset_index(drop=True)
    adjudications = _frame(
        conn,
        text(
            f"SELECT t.response_id * {IID_SHIFT} + t.constraint_id AS iid, a.choice, a.label, COALESCE(u.username, a.annotator) AS annotator, "
            "a.note, a.created_at FROM adjudication a JOIN adjudication_task t ON t.id = a.task_id "
            "JOIN constraint_item c ON c.id = t.constraint_id LEFT JOIN app_user u ON u.id = a.user_id "
            "WHERE t.response_id IN :r AND a.choice <> 'retracted' AND NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.supersedes_id = a.id) "
            "ORDER BY a.id"
        ).bindparams(bindparam("r", expanding=True)),
        {"r": rids},
    )
    return {
        "question": dict(q),
        "responses": responses,
        "constraints": constraints,
        "judgments": judgments,
        "adjudications": adjudications,
    }
