"""Frames the scoring engine reads: instances, judge labels, baseline features, adjudications."""

from __future__ import annotations

import pandas as pd
from sqlalchemy.engine import Connection

from db.repo.data import raw_frame

# iid = response_id * IID_STRIDE + position: stable across runs, unique per (response, constraint).
IID_STRIDE = 64


_frame = raw_frame


def instance_rows(conn: Connection) -> pd.DataFrame:
    """One row per (constrained response, constraint) with the question's metadata.

    Reads four small dimension tables and the (response, instruction) ids, then joins in
    numpy: ~10× faster than one wide SQL join materialised row by row.
    """
    resp = _frame(conn, "SELECT id AS response_id, model_id, instruction_id FROM response WHERE instruction_id IS NOT NULL")
    cons = _frame(conn, "SELECT id AS constraint_id, instruction_id, position, feature, category, mode FROM constraint_item")
    ins = _frame(conn, "SELECT id AS instruction_id, key AS instruction, question_id, condition, pair_group FROM instruction")
    qs = _frame(conn, "SELECT id AS question_id, key AS question, task_type, domain FROM question")
    models = _frame(conn, "SELECT id AS model_id, name AS model FROM eval_model")
    df = resp.merge(cons, on="instruction_id", how="inner")
    df = df.merge(ins, on="instruction_id", how="left").merge(qs, on="question_id", how="left")
    df = df.merge(models, on="model_id", how="left")
    df.insert(0, "iid", df["response_id"].to_numpy() * IID_STRIDE + df["position"].to_numpy())
    df = df.sort_values("iid", kind="stable").reset_index(drop=True)
    return df[["iid", "response_id", "constraint_id", "model", "question", "instruction", "condition", "pair_group",
               "task_type", "domain", "position", "feature", "category", "mode"]]


def judge_ids(conn: Connection) -> pd.DataFrame:
    return _frame(conn, "SELECT id, name, provider, model, prompt_version FROM judge ORDER BY id")


def judge_labels(conn: Connection, *, judge_id: int) -> pd.DataFrame:
    """Latest usable label per (response, constraint) of one judge (any prompt version)."""
    df = _frame(conn, (
        "SELECT response_id, constraint_id, label FROM judgment "
        "WHERE judge_id = :j AND status = 'ok' AND label IS NOT NULL ORDER BY id"
    ), {"j": judge_id})
    return df.drop_duplicates(["response_id", "constraint_id"], keep="last")


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
