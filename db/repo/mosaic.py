"""MOSAIC studies: prompts with their constraint lists, model outputs and check scores."""

from __future__ import annotations

import json

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from db.models import utcnow
from db.repo.data import bulk_insert, table


def _frame(conn: Connection, query, columns: list[str], json_cols: tuple[str, ...] = ()) -> pd.DataFrame:
    df = pd.DataFrame(conn.execute(query).all(), columns=columns)
    for c in json_cols:  # SQLite returns JSON as text; PostgreSQL already decodes it
        df[c] = [json.loads(v) if isinstance(v, str) else v for v in df[c]]
    return df


def get_study(conn: Connection, *, name: str) -> dict | None:
    t = table("mosaic_study")
    row = conn.execute(select(t).where(t.c.name == name)).mappings().first()
    if row is None:
        return None
    out = dict(row)
    if isinstance(out["params"], str):
        out["params"] = json.loads(out["params"])
    return out


def insert_study(conn: Connection, *, name: str, params: dict) -> int:
    t = table("mosaic_study")
    return int(conn.execute(t.insert().values(name=name, params=params, created_at=utcnow())).inserted_primary_key[0])


def list_studies(conn: Connection) -> pd.DataFrame:
    """Every study with counts: ``id, name, prompts, models, outputs, checks``."""
    s, p, o, c = table("mosaic_study"), table("mosaic_prompt"), table("mosaic_output"), table("mosaic_check")
    n_prompts = select(func.count()).select_from(p).where(p.c.study_id == s.c.id).scalar_subquery()
    n_outputs = (
        select(func.count())
        .select_from(o.join(p, p.c.id == o.c.prompt_id))
        .where(p.c.study_id == s.c.id)
        .scalar_subquery()
    )
    n_models = (
        select(func.count(func.distinct(o.c.model)))
        .select_from(o.join(p, p.c.id == o.c.prompt_id))
        .where(p.c.study_id == s.c.id)
        .scalar_subquery()
    )
    n_checks = (
        select(func.count())
        .select_from(c.join(o, o.c.id == c.c.output_id).join(p, p.c.id == o.c.prompt_id))
        .where(p.c.study_id == s.c.id)
        .scalar_subquery()
    )
    q = select(s.c.id, s.c.name, n_prompts, n_models, n_outputs, n_checks).order_by(s.c.id)
    return _frame(conn, q, ["id", "name", "prompts", "models", "outputs", "checks"])


def prompts(conn: Connection, *, study_id: int) -> pd.DataFrame:
    """``id, key, task, product, system_prompt, user_prompt`` of a study, by key."""
    p = table("mosaic_prompt")
    cols = ["id", "key", "task", "product", "system_prompt", "user_prompt"]
    return _frame(conn, select(*[p.c[c] for c in cols]).where(p.c.study_id == study_id).order_by(p.c.key), cols)


def constraints(conn: Connection, *, study_id: int) -> pd.DataFrame:
    """Every constraint of a study: ``id, prompt_id, prompt, position, constraint, category,
    text, verifier, params, rubric``."""
    p, c = table("mosaic_prompt"), table("mosaic_constraint")
    q = (
        select(
            c.c.id,
            c.c.prompt_id,
            p.c.key,
            c.c.position,
            c.c.key,
            c.c.category,
            c.c.text,
            c.c.verifier,
            c.c.params,
            c.c.rubric,
        )
        .join(p, p.c.id == c.c.prompt_id)
        .where(p.c.study_id == study_id)
        .order_by(p.c.key, c.c.position)
    )
    return _frame(
        conn,
        q,
        ["id", "prompt_id", "prompt", "position", "constraint", "category", "text", "verifier", "params", "rubric"],
        ("params",),
    )


def insert_prompts(conn: Connection, *, study_id: int, rows: list[dict]) -> dict[str, int]:
    """Insert prompts (``key, task, product, system_prompt, user_prompt``); ``{key: id}`` of the study."""
    bulk_insert(conn, "mosaic_prompt", [{"study_id": study_id, **r} for r in rows])
    p = table("mosaic_prompt")
    return {k: int(i) for k, i in conn.execute(select(p.c.key, p.c.id).where(p.c.study_id == study_id)).all()}


def insert_constraints(conn: Connection, *, rows: list[dict]) -> None:
    bulk_insert(conn, "mosaic_constraint", rows)


def outputs(conn: Connection, *, study_id: int, model: str | None = None, with_text: bool = True) -> pd.DataFrame:
    """Outputs of a study: ``id, prompt_id, prompt, model`` (+ ``output, meta``), by prompt and model."""
    p, o = table("mosaic_prompt"), table("mosaic_output")
    cols = [o.c.id, o.c.prompt_id, p.c.key, o.c.model] + ([o.c.output, o.c.meta] if with_text else [])
    q = select(*cols).join(p, p.c.id == o.c.prompt_id).where(p.c.study_id == study_id)
    if model is not None:
        q = q.where(o.c.model == model)
    names = ["id", "prompt_id", "prompt", "model"] + (["output", "meta"] if with_text else [])
    return _frame(conn, q.order_by(p.c.key, o.c.model), names, ("meta",) if with_text else ())


def insert_outputs(conn: Connection, *, rows: list[dict]) -> None:
    """Insert outputs (``prompt_id, model, output, meta``)."""
    now = utcnow()
    bulk_insert(conn, "mosaic_output", [{**r, "created_at": now} for r in rows])


def checks(conn: Connection, *, study_id: int) -> pd.DataFrame:
    """Every stored check of a study joined to its output and constraint: ``output_id,
    constraint_id, model, prompt, position, constraint, category, verifier, checker, score,
    followed, evidence``, by model, prompt and position."""
    p, c, o, k = table("mosaic_prompt"), table("mosaic_constraint"), table("mosaic_output"), table("mosaic_check")
    q = (
        select(
            k.c.output_id,
            k.c.constraint_id,
            o.c.model,
            p.c.key,
            c.c.position,
            c.c.key,
            c.c.category,
            c.c.verifier,
            k.c.checker,
            k.c.score,
            k.c.followed,
            k.c.evidence,
        )
        .join(o, o.c.id == k.c.output_id)
        .join(c, c.c.id == k.c.constraint_id)
        .join(p, p.c.id == o.c.prompt_id)
        .where(p.c.study_id == study_id)
        .order_by(o.c.model, p.c.key, c.c.position)
    )
    df = _frame(
        conn,
        q,
        [
            "output_id",
            "constraint_id",
            "model",
            "prompt",
            "position",
            "constraint",
            "category",
            "verifier",
            "checker",
            "score",
            "followed",
            "evidence",
        ],
    )
    df["followed"] = df["followed"].astype(bool)
    return df


def insert_checks(conn: Connection, *, rows: list[dict]) -> None:
    """Insert checks (``output_id, constraint_id, checker, score, followed, evidence``)."""
    now = utcnow()
    bulk_insert(conn, "mosaic_check", [{**r, "created_at": now} for r in rows])
