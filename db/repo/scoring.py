"""Frames the scoring engine reads: instances, judge labels, baseline features, adjudications."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Connection

# iid = response_id * IID_STRIDE + position: stable across runs, unique per (response, constraint).
IID_STRIDE = 64


def _frame(conn: Connection, sql: str, params: dict | None = None) -> pd.DataFrame:
    res = conn.execute(text(sql), params or {})
    return pd.DataFrame(res.all(), columns=list(res.keys()))


def instance_rows(conn: Connection) -> pd.DataFrame:
    """One row per (constrained response, constraint) with the question's metadata."""
    return _frame(conn, (
        f"SELECT r.id * {IID_STRIDE} + c.position AS iid, r.id AS response_id, c.id AS constraint_id, "
        "m.name AS model, q.key AS question, i.key AS instruction, i.condition, i.pair_group, "
        "q.task_type, q.domain, c.position, c.feature, c.category, c.mode "
        "FROM response r JOIN instruction i ON i.id = r.instruction_id "
        "JOIN constraint_item c ON c.instruction_id = i.id "
        "JOIN question q ON q.id = r.question_id JOIN eval_model m ON m.id = r.model_id "
        "ORDER BY r.id, c.position"
    ))


def judge_ids(conn: Connection) -> pd.DataFrame:
    return _frame(conn, "SELECT id, name, provider, model, prompt_version FROM judge ORDER BY id")


def judge_labels(conn: Connection, *, judge_id: int) -> pd.DataFrame:
    """Latest usable label per (response, constraint) of one judge (any prompt version)."""
    return _frame(conn, (
        f"SELECT g.response_id * {IID_STRIDE} + c.position AS iid, g.label FROM judgment g "
        "JOIN constraint_item c ON c.id = g.constraint_id "
        "WHERE g.judge_id = :j AND g.status = 'ok' AND g.label IS NOT NULL ORDER BY g.id"
    ), {"j": judge_id}).drop_duplicates("iid", keep="last")


def baseline_present(conn: Connection) -> pd.DataFrame:
    return _frame(conn, (
        "SELECT m.name AS model, q.key AS question, b.feature FROM baseline_feature b "
        "JOIN response r ON r.id = b.response_id JOIN eval_model m ON m.id = r.model_id "
        "JOIN question q ON q.id = r.question_id WHERE b.present = :t"
    ), {"t": True})


def current_adjudications(conn: Connection, *, judge_a_id: int, judge_b_id: int) -> pd.DataFrame:
    """Current (not superseded) decisions under plans of this judge pair (either order).

    ``choice`` is expressed relative to ``judge_a_id`` (A = sided with judge_a_id).
    """
    df = _frame(conn, (
        f"SELECT t.response_id * {IID_STRIDE} + c.position AS iid, a.label, a.choice, a.created_at, "
        "p.judge_a_id, u.username AS annotator FROM adjudication a "
        "JOIN adjudication_task t ON t.id = a.task_id JOIN sample_plan p ON p.id = t.plan_id "
        "JOIN constraint_item c ON c.id = t.constraint_id LEFT JOIN app_user u ON u.id = a.user_id "
        "WHERE ((p.judge_a_id = :a AND p.judge_b_id = :b) OR (p.judge_a_id = :b AND p.judge_b_id = :a)) "
        "AND NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.supersedes_id = a.id) "
        "ORDER BY a.created_at, a.id"
    ), {"a": judge_a_id, "b": judge_b_id})
    flip = df["judge_a_id"] != judge_a_id
    df.loc[flip & (df["choice"] == "A"), "choice"] = "_B"
    df.loc[flip & (df["choice"] == "B"), "choice"] = "A"
    df.loc[df["choice"] == "_B", "choice"] = "B"
    return df.drop(columns=["judge_a_id"])
