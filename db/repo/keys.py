"""Natural-key ↔ id maps of the project tables, as DataFrames (one query each)."""

from __future__ import annotations

import pandas as pd
from sqlalchemy.engine import Connection

from db.repo.data import raw_frame

_QUERIES = {
    "question": "SELECT id, key AS question FROM question",
    "instruction": (
        "SELECT i.id, i.key AS instruction, q.key AS question, i.condition "
        "FROM instruction i JOIN question q ON q.id = i.question_id"
    ),
    "constraint": (
        "SELECT c.id, i.key AS instruction, c.position, c.feature, c.category, c.mode "
        "FROM constraint_item c JOIN instruction i ON i.id = c.instruction_id"
    ),
    "model": "SELECT id, name AS model FROM eval_model",
    "response": (
        "SELECT r.id, m.name AS model, q.key AS question, r.variant AS instruction "
        "FROM response r JOIN eval_model m ON m.id = r.model_id "
        "JOIN question q ON q.id = r.question_id"
    ),
    "judge": "SELECT id, name AS judge FROM judge",
    "user": "SELECT id, username AS annotator FROM app_user",
    "plan": "SELECT id, name AS plan, judge_a_id, judge_b_id FROM sample_plan",
    "feature": "SELECT key AS feature, category, catalog FROM catalog_feature",
}


def key_frame(conn: Connection, kind: str) -> pd.DataFrame:
    """Ids and natural keys of one table (``kind`` in the keys of ``_QUERIES``)."""
    return raw_frame(conn, _QUERIES[kind])
