"""Queries behind the project overview."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Connection


def judge_pair_agreement(conn: Connection) -> pd.DataFrame:
    """Per evaluated model and judge pair: pairs judged by both, agreements, disagreements."""
    sql = text(
        "SELECT m.name AS model, ja.name AS judge_a, jb.name AS judge_b, COUNT(*) AS judged_by_both, "
        "SUM(CASE WHEN a.label = b.label THEN 1 ELSE 0 END) AS agree "
        "FROM judgment a JOIN judgment b ON a.response_id = b.response_id "
        "AND a.constraint_id = b.constraint_id AND a.judge_id < b.judge_id "
        "JOIN judge ja ON ja.id = a.judge_id JOIN judge jb ON jb.id = b.judge_id "
        "JOIN response r ON r.id = a.response_id JOIN eval_model m ON m.id = r.model_id "
        "WHERE a.label IS NOT NULL AND b.label IS NOT NULL "
        "GROUP BY m.name, ja.name, jb.name ORDER BY m.name, ja.name, jb.name"
    )
    df = pd.DataFrame(conn.execute(sql).all(), columns=["model", "judge_a", "judge_b", "judged_by_both", "agree"])
    df["disagree"] = df["judged_by_both"] - df["agree"]
    df["agreement"] = df["agree"] / df["judged_by_both"].where(df["judged_by_both"] > 0)
    return df


def adjudication_progress(conn: Connection) -> pd.DataFrame:
    """Per sample plan (id, name): tasks, tasks done (the plan's progress counters, kept by
    decide), tasks claimed now (the queue index) — never a scan of the plan's task list."""
    sql = text(
        "SELECT p.id AS id, p.name AS plan, COALESCE(c.tasks, 0) AS tasks, COALESCE(c.done, 0) AS done, "
        "(SELECT COUNT(*) FROM adjudication_task t WHERE t.plan_id = p.id AND t.status = 'claimed') AS claimed "
        "FROM sample_plan p LEFT JOIN (SELECT plan_id, SUM(tasks) AS tasks, SUM(done) AS done "
        "FROM plan_stratum_count GROUP BY plan_id) c ON c.plan_id = p.id ORDER BY p.name"
    )
    return pd.DataFrame(conn.execute(sql).all(), columns=["id", "plan", "tasks", "done", "claimed"])


def models_and_tasks(conn: Connection) -> pd.DataFrame:
    """Questions and instructions per task type."""
    sql = text(
        "SELECT q.task_type, COUNT(DISTINCT q.id) AS questions, COUNT(i.id) AS instructions "
        "FROM question q LEFT JOIN instruction i ON i.question_id = q.id "
        "GROUP BY q.task_type ORDER BY q.task_type"
    )
    return pd.DataFrame(conn.execute(sql).all(), columns=["task_type", "questions", "instructions"])
