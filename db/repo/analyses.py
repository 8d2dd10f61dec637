"""Reads of the auxiliary analyses (issue 17): extractions, baseline annotations, catalog
features, the common question set and the construction models."""

from __future__ import annotations

import json

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Connection

from db.repo.data import get_meta, raw_frame


def extractions(conn: Connection) -> pd.DataFrame:
    """EXTRACTED frame: ``model, question, label, feature, mapping`` per stored extraction."""
    return raw_frame(
        conn,
        (
            "SELECT m.name AS model, q.key AS question, x.label, x.feature, x.mapping FROM feature_extraction x "
            "JOIN response r ON r.id = x.response_id JOIN eval_model m ON m.id = r.model_id "
            "JOIN question q ON q.id = r.question_id ORDER BY m.name, q.key, x.label"
        ),
    )


def baseline_annotations(conn: Connection) -> pd.DataFrame:
    """ANNOTATIONS frame: ``model, question, feature`` present in a baseline response."""
    return raw_frame(
        conn,
        (
            "SELECT m.name AS model, q.key AS question, b.feature FROM baseline_feature b "
            "JOIN response r ON r.id = b.response_id JOIN eval_model m ON m.id = r.model_id "
            "JOIN question q ON q.id = r.question_id WHERE b.present = :t AND r.variant = ''"
        ),
        {"t": True},
    )


def catalog_features(conn: Connection) -> list[str]:
    """Feature keys of the project's catalog(s), in catalog order."""
    rows = conn.execute(text("SELECT key FROM catalog_feature ORDER BY id")).all()
    return list(dict.fromkeys(r[0] for r in rows))


def common_questions(conn: Connection) -> tuple[list[str], list[str]]:
    """The questions every evaluated model has a baseline response to (Q_common), and the
    models with a baseline response."""
    df = raw_frame(
        conn,
        (
            "SELECT m.name AS model, q.key AS question FROM response r JOIN eval_model m ON m.id = r.model_id "
            "JOIN question q ON q.id = r.question_id WHERE r.variant = ''"
        ),
    )
    if df.empty:
        return [], []
    models = sorted(df["model"].astype(str).unique())
    per_q = df.groupby("question")["model"].nunique()
    return sorted(per_q[per_q == len(models)].index.astype(str)), models


def construction_models(conn: Connection, key: str) -> list[str]:
    """The construction models recorded in the project meta (a JSON list), or []."""
    raw = get_meta(conn).get(key, "")
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def inputs_version(conn: Connection) -> tuple:
    """Row counts and max ids of the analyses' own inputs (extractions, baseline features,
    project meta), for cache keys next to the scored data version."""
    out = []
    for table in ("feature_extraction", "baseline_feature"):
        out += list(conn.execute(text(f"SELECT COUNT(*), COALESCE(MAX(id), 0) FROM {table}")).one())
    out.append(get_meta(conn).get("construction_models", ""))
    return tuple(out)
