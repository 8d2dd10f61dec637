"""Small reads the scoring service needs besides the instances (``services/data/instances.py``)."""

from __future__ import annotations

import json

import pandas as pd
from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from db.repo.data import raw_frame


def judge_names_in_order(conn: Connection) -> list[str]:
    return [r[0] for r in conn.execute(text("SELECT name FROM judge ORDER BY id"))]


def baseline_present(conn: Connection) -> pd.DataFrame:
    """BASELINE frame: one row per (model, question, feature) present in the baseline response."""
    return raw_frame(
        conn,
        (
            "SELECT m.name AS model, q.key AS question, b.feature FROM baseline_feature b "
            "JOIN response r ON r.id = b.response_id JOIN eval_model m ON m.id = r.model_id "
            "JOIN question q ON q.id = r.question_id WHERE b.present = :t AND r.variant = ''"
        ),
        {"t": True},
    )


def judge_label_state(conn: Connection) -> pd.DataFrame:
    """Every judge in creation order with ``provider``, ``config`` and ``has_labels``: some
    current judgment (the newest of its pair, the one scoring reads) has a label — the
    ``scoreable`` of ``services.judging.judge_health``, answered by the first such row instead
    of counting them all (this runs on every Scores page rerun). A judge holding only error /
    abstain rows has none."""
    res = conn.execute(
        text(
            "SELECT j.name, j.provider, j.config, EXISTS (SELECT 1 FROM judgment g WHERE g.judge_id = j.id "
            "AND g.label IS NOT NULL AND NOT EXISTS (SELECT 1 FROM judgment n WHERE n.judge_id = g.judge_id "
            "AND n.response_id = g.response_id AND n.constraint_id = g.constraint_id AND n.id > g.id)) AS has_labels "
            "FROM judge j ORDER BY j.id"
        )
    )
    df = pd.DataFrame(res.all(), columns=["name", "provider", "config", "has_labels"])
    df["config"] = [json.loads(c) if isinstance(c, str) else (c or {}) for c in df["config"]]
    df["has_labels"] = df["has_labels"].astype(bool)
    return df


def decisions_by_pair(conn: Connection) -> pd.DataFrame:
    """Current decisions (not superseded, not retracted) per plan judge pair:
    ``judge_a, judge_b, decisions``."""
    res = conn.execute(
        text(
            "SELECT ja.name, jb.name, COUNT(*) FROM adjudication a "
            "JOIN adjudication_task t ON t.id = a.task_id JOIN sample_plan p ON p.id = t.plan_id "
            "JOIN judge ja ON ja.id = p.judge_a_id JOIN judge jb ON jb.id = p.judge_b_id "
            "WHERE a.choice <> 'retracted' AND NOT EXISTS (SELECT 1 FROM adjudication b WHERE b.supersedes_id = a.id) "
            "GROUP BY ja.name, jb.name"
        )
    )
    return pd.DataFrame(res.all(), columns=["judge_a", "judge_b", "decisions"])


def answered_instructions(conn: Connection, *, condition: str = "main") -> pd.DataFrame:
    """Per model, the instructions of ``condition`` it answered that carry at least one
    constraint (the denominator the scored instructions are compared with)."""
    return raw_frame(
        conn,
        (
            "SELECT m.name AS model, COUNT(*) AS instructions FROM response r "
            "JOIN instruction i ON i.id = r.instruction_id JOIN eval_model m ON m.id = r.model_id "
            "WHERE i.condition = :c AND EXISTS (SELECT 1 FROM constraint_item c WHERE c.instruction_id = i.id) "
            "GROUP BY m.name ORDER BY m.name"
        ),
        {"c": condition},
    )


def baseline_coverage(conn: Connection) -> dict:
    """``{"pairs", "annotated"}``: (model, question) pairs with a constrained response, and how
    many of them have a baseline annotation (any baseline_feature row of the baseline response)."""
    row = conn.execute(
        text(
            "SELECT COUNT(*), SUM(CASE WHEN EXISTS (SELECT 1 FROM response b JOIN baseline_feature f ON f.response_id = b.id "
            "WHERE b.model_id = k.model_id AND b.question_id = k.question_id AND b.variant = '') THEN 1 ELSE 0 END) "
            "FROM (SELECT DISTINCT model_id, question_id FROM response WHERE variant <> '') k"
        )
    ).one()
    return {"pairs": int(row[0] or 0), "annotated": int(row[1] or 0)}


def unlabelled_instances(conn: Connection, *, judges: list[str] | None = None) -> dict:
    """``{"instances", "responses"}``: constrained (response, constraint) pairs that no judge
    (of ``judges``, when given) has labelled, and the responses they belong to."""
    extra, params = "", {}
    if judges:
        extra = " AND g.judge_id IN (SELECT id FROM judge WHERE name IN :names)"
        params["names"] = list(judges)
    stmt = text(
        "SELECT COUNT(*), COUNT(DISTINCT r.id) FROM response r JOIN constraint_item c ON c.instruction_id = r.instruction_id "
        "WHERE r.variant <> '' AND NOT EXISTS (SELECT 1 FROM judgment g WHERE g.response_id = r.id "
        "AND g.constraint_id = c.id AND g.label IS NOT NULL" + extra + ")"
    )
    if judges:
        stmt = stmt.bindparams(bindparam("names", expanding=True))
    row = conn.execute(stmt, params).one()
    return {"instances": int(row[0] or 0), "responses": int(row[1] or 0)}
