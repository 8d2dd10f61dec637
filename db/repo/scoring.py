"""Small reads the scoring service needs besides the instances (``services/instances.py``)."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Connection

from db.repo.data import raw_frame


def judge_names_in_order(conn: Connection) -> list[str]:
    return [r[0] for r in conn.execute(text("SELECT name FROM judge ORDER BY id"))]


def baseline_present(conn: Connection) -> pd.DataFrame:
    """BASELINE frame: one row per (model, question, feature) present in the baseline response."""
    return raw_frame(conn, (
        "SELECT m.name AS model, q.key AS question, b.feature FROM baseline_feature b "
        "JOIN response r ON r.id = b.response_id JOIN eval_model m ON m.id = r.model_id "
        "JOIN question q ON q.id = r.question_id WHERE b.present = :t AND r.variant = ''"
    ), {"t": True})
