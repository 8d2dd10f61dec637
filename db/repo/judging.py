"""Queries of the judging area: judges, pending (response, constraint) pairs, judgment
upserts, replay labels, baseline-feature annotation. Keyword-only functions taking a
``Session``; they return DataFrames or plain records, never live ORM objects."""

from __future__ import annotations

from typing import Any, Iterable, Optional

import pandas as pd
from sqlalchemy import and_, bindparam, func, or_, select
from sqlalchemy import text as sa_text
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from db.models import (
    BaselineFeature,
    CatalogFeature,
    Constraint,
    Instruction,
    Judge,
    Judgment,
    ProjectMeta,
    Question,
    Response,
)

PENDING_COLUMNS = [
    "response_id",
    "response_text",
    "instruction_text",
    "constraint_id",
    "position",
    "feature",
    "mode",
    "text",
    "acceptance",
    "params",
]


def _insert(session: Session, table):
    name = session.get_bind().dialect.name
    if name == "sqlite":
        return sqlite.insert(table)
    if name == "postgresql":
        return postgresql.insert(table)
    raise ValueError(f"database dialect {name!r} is not supported (sqlite or postgresql)")


def get_judge(session: Session, *, name: str) -> Optional[dict]:
    """The judge row named ``name`` as a dict, or None."""
    j = session.execute(select(Judge).where(Judge.name == name)).scalars().first()
    return None if j is None else j.model_dump()


def ensure_judge(
    session: Session, *, name: str, provider: str, model: str, prompt_version: str, config: Optional[dict] = None
) -> int:
    """Id of judge ``name``, created if missing. An existing judge must have the same
    provider and model (a ValueError names the mismatch); its prompt version is updated."""
    j = session.execute(select(Judge).where(Judge.name == name)).scalars().first()
    if j is None:
        j = Judge(name=name, provider=provider, model=model, prompt_version=prompt_version, config=config or {})
        session.add(j)
        session.flush()
        return j.id
    if (j.provider, j.model) != (provider, model):
        raise ValueError(
            f"judge {name!r} exists with provider={j.provider!r}, model={j.model!r}; "
            f"got provider={provider!r}, model={model!r} (choose another --name)"
        )
    if j.prompt_version != prompt_version:
        j.prompt_version = prompt_version
    if config:
        j.config = {**(j.config or {}), **config}
    return j.id


def set_judge_config(session: Session, *, judge_id: int, config: dict) -> None:
    j = session.get(Judge, judge_id)
    if j is None:
        raise ValueError(f"judge id {judge_id} does not exist")
    j.config = dict(config)


def pending_pairs(
    session: Session,
    *,
    judge_id: Optional[int],
    prompt_version: str,
    response_ids: Optional[Iterable[int]] = None,
    include_done: bool = False,
) -> pd.DataFrame:
    """Every (constrained response, constraint of its instruction) pair without an ``ok``
    or ``abstain`` judgment by ``judge_id`` under ``prompt_version`` (errors are pending
    again), in one query, ordered by response and position. ``include_done`` returns all
    pairs; ``response_ids`` restricts to those responses."""
    jt = Judgment.__table__
    q = (
        select(
            Response.id.label("response_id"),
            Response.text.label("response_text"),
            Instruction.text.label("instruction_text"),
            Constraint.id.label("constraint_id"),
            Constraint.position,
            Constraint.feature,
            Constraint.mode,
            Constraint.text,
            Constraint.acceptance,
            Constraint.params,
        )
        .join(Instruction, Instruction.id == Response.instruction_id)
        .join(Constraint, Constraint.instruction_id == Instruction.id)
    )
    if not include_done:
        q = q.outerjoin(
            jt,
            and_(
                jt.c.judge_id == (judge_id if judge_id is not None else -1),
                jt.c.response_id == Response.id,
                jt.c.constraint_id == Constraint.id,
                jt.c.prompt_version == prompt_version,
            ),
        ).where(or_(jt.c.id.is_(None), jt.c.status == "error"))
    if response_ids is not None:
        q = q.where(Response.id.in_(list(response_ids)))
    q = q.order_by(Response.id, Constraint.position)
    rows = session.execute(q).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=PENDING_COLUMNS)


def upsert_judgments(session: Session, *, rows: list[dict]) -> int:
    """Insert judgments; a pair that already has an ``error`` row is overwritten, an
    ``ok``/``abstain`` row never is (so a resumed or repeated run cannot change finished
    work). Each row: judge_id, response_id, constraint_id, prompt_version, label,
    rationale, status, error, raw, input_tokens, output_tokens, cost_usd."""
    if not rows:
        return 0
    stmt = _insert(session, Judgment.__table__)
    update = {
        c: stmt.excluded[c]
        for c in (
            "label",
            "rationale",
            "status",
            "error",
            "raw",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "created_at",
        )
    }
    stmt = stmt.on_conflict_do_update(
        index_elements=["judge_id", "response_id", "constraint_id", "prompt_version"],
        set_=update,
        where=Judgment.__table__.c.status == "error",
    )
    from db.models import utcnow

    now = utcnow()
    session.execute(stmt, [{**r, "created_at": now} for r in rows])
    from db.repo.status import bump_revision

    bump_revision(session.connection())  # an error row overwritten in place: cached scores must see it
    return len(rows)


def judgment_labels(session: Session, *, judge_name: str) -> dict[tuple[int, int], tuple[Any, str, str]]:
    """``(response_id, constraint_id) -> (label, rationale, status)`` of judge
    ``judge_name`` (newest row when it has several prompt versions)."""
    j = session.execute(select(Judge).where(Judge.name == judge_name)).scalars().first()
    if j is None:
        raise ValueError(f"judge {judge_name!r} does not exist")
    t = Judgment.__table__
    rows = session.execute(
        select(t.c.response_id, t.c.constraint_id, t.c.label, t.c.rationale, t.c.status)
        .where(t.c.judge_id == j.id)
        .order_by(t.c.created_at, t.c.id)
    ).all()
    return {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}


def project_catalog(session: Session) -> Optional[str]:
    m = session.get(ProjectMeta, "catalog")
    return m.value if m is not None and m.value else None


def catalog_features(session: Session, *, catalog: Optional[str] = None) -> pd.DataFrame:
    """Catalog features (key, name, category, definition, rule_detectable)."""
    q = select(
        CatalogFeature.key,
        CatalogFeature.name,
        CatalogFeature.category,
        CatalogFeature.definition,
        CatalogFeature.rule_detectable,
    )
    if catalog:
        q = q.where(CatalogFeature.catalog == catalog)
    rows = session.execute(q.order_by(CatalogFeature.id)).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=["key", "name", "category", "definition", "rule_detectable"])


def baseline_responses(session: Session) -> pd.DataFrame:
    """Baseline responses with their question text and the features already annotated."""
    rows = session.execute(
        select(Response.id, Response.text, Question.text)
        .join(Question, Question.id == Response.question_id)
        .where(Response.kind == "baseline")
        .order_by(Response.id)
    ).all()
    done = session.execute(select(BaselineFeature.response_id, BaselineFeature.feature)).all()
    annotated: dict[int, set] = {}
    for rid, feat in done:
        annotated.setdefault(rid, set()).add(feat)
    return pd.DataFrame(
        [(r[0], r[1], r[2], annotated.get(r[0], set())) for r in rows],
        columns=["response_id", "response_text", "question_text", "annotated"],
    )


def insert_baseline_features(session: Session, *, rows: list[dict]) -> int:
    """Insert baseline-feature rows (response_id, feature, present, source, evidence);
    an existing (response, feature) row is kept (imported annotations win)."""
    if not rows:
        return 0
    stmt = _insert(session, BaselineFeature.__table__).on_conflict_do_nothing(index_elements=["response_id", "feature"])
    session.execute(stmt, rows)
    return len(rows)


def judges_summary(session: Session) -> pd.DataFrame:
    """Every judge (in creation order) with its verdict counts and spending.

    ``labels`` / ``abstentions`` / ``errors`` count the *current* judgment of each
    (response, constraint) pair — the newest row (highest id), the one scoring uses —
    by status ``ok`` / ``abstain`` / ``error``; ``rows``, ``tokens`` and ``cost_usd`` sum
    every row the judge ever wrote (all prompt versions).
    """
    conn = session.connection()
    counts = (
        "COALESCE(SUM(CASE WHEN g.status = 'ok' THEN 1 ELSE 0 END), 0) AS labels, "
        "COALESCE(SUM(CASE WHEN g.status = 'abstain' THEN 1 ELSE 0 END), 0) AS abstentions, "
        "COALESCE(SUM(CASE WHEN g.status = 'error' THEN 1 ELSE 0 END), 0) AS errors"
    )
    res = conn.execute(
        sa_text(
            "SELECT j.id, j.name, j.provider, j.model, j.prompt_version, COUNT(g.id) AS rows, "
            + counts
            + ", COALESCE(SUM(g.input_tokens + g.output_tokens), 0) AS tokens, "
            "COALESCE(SUM(g.cost_usd), 0) AS cost_usd, COUNT(DISTINCT g.prompt_version) AS versions "
            "FROM judge j LEFT JOIN judgment g ON g.judge_id = j.id "
            "GROUP BY j.id, j.name, j.provider, j.model, j.prompt_version ORDER BY j.id"
        )
    )
    df = pd.DataFrame(res.all(), columns=list(res.keys()))
    several = [int(i) for i in df.loc[df["versions"] > 1, "id"]]
    if several:  # a pair judged under several prompt versions counts with its newest row only
        cur = conn.execute(
            sa_text(
                "SELECT g.judge_id, " + counts + " FROM judgment g WHERE g.judge_id IN :ids "
                "AND NOT EXISTS (SELECT 1 FROM judgment n WHERE n.judge_id = g.judge_id "
                "AND n.response_id = g.response_id AND n.constraint_id = g.constraint_id AND n.id > g.id) "
                "GROUP BY g.judge_id"
            ).bindparams(bindparam("ids", expanding=True)),
            {"ids": several},
        )
        newest = pd.DataFrame(cur.all(), columns=list(cur.keys())).set_index("judge_id")
        for c in ("labels", "abstentions", "errors"):
            df[c] = [newest.at[i, c] if i in newest.index else v for i, v in zip(df["id"], df[c])]
    df = df.drop(columns="versions")
    for c in ("rows", "labels", "abstentions", "errors", "tokens"):
        df[c] = df[c].astype("int64")
    df["cost_usd"] = df["cost_usd"].astype(float)
    return df


def judgment_version(session: Session) -> tuple[int, int, int]:
    """``(judgment rows, max judgment id, judges)``: a cheap stamp of what was written."""
    row = session.execute(select(func.count(Judgment.id), func.max(Judgment.id))).one()
    return int(row[0]), int(row[1] or 0), int(session.execute(select(func.count(Judge.id))).scalar())
