"""Paged reads of questions, instructions, constraints and responses."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Connection


def questions_page(
    conn: Connection, *, search: str = "", task_type: str = "", limit: int = 50, offset: int = 0
) -> tuple[pd.DataFrame, int]:
    where, params = ["1=1"], {}
    if search:
        where.append("(LOWER(q.key) LIKE :s OR LOWER(q.text) LIKE :s)")
        params["s"] = f"%{search.lower()}%"
    if task_type:
        where.append("q.task_type = :t")
        params["t"] = task_type
    w = " AND ".join(where)
    total = conn.execute(text(f"SELECT COUNT(*) FROM question q WHERE {w}"), params).scalar_one()
    sql = text(
        f"SELECT q.key, q.task_type, q.domain, q.language, "
        f"(SELECT COUNT(*) FROM instruction i WHERE i.question_id = q.id) AS instructions, q.text "
        f"FROM question q WHERE {w} ORDER BY q.key LIMIT :lim OFFSET :off"
    )
    res = conn.execute(sql, {**params, "lim": limit, "off": offset})
    return pd.DataFrame(res.all(), columns=list(res.keys())), int(total)


def task_types(conn: Connection) -> list[str]:
    return [r[0] for r in conn.execute(text("SELECT DISTINCT task_type FROM question ORDER BY task_type"))]


def question_detail(conn: Connection, *, key: str) -> dict | None:
    q = (
        conn.execute(
            text("SELECT id, key, text, task_type, domain, language, source FROM question WHERE key = :k"), {"k": key}
        )
        .mappings()
        .first()
    )
    if q is None:
        return None
    ins = conn.execute(
        text(
            "SELECT i.key AS instruction, i.condition, i.pair_group, i.text, c.position, c.feature, c.category, c.mode, "
            "c.text AS constraint_text, c.acceptance FROM instruction i JOIN constraint_item c ON c.instruction_id = i.id "
            "WHERE i.question_id = :q ORDER BY i.key, c.position"
        ),
        {"q": q["id"]},
    )
    instructions = pd.DataFrame(ins.all(), columns=list(ins.keys()))
    res = conn.execute(
        text(
            "SELECT m.name AS model, r.variant AS instruction, r.kind, r.text FROM response r "
            "JOIN eval_model m ON m.id = r.model_id WHERE r.question_id = :q ORDER BY m.name, r.variant"
        ),
        {"q": q["id"]},
    )
    responses = pd.DataFrame(res.all(), columns=list(res.keys()))
    return {"question": dict(q), "instructions": instructions, "responses": responses}
