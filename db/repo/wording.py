"""Wording studies and WISE generations: studies, forms, items, append-only ratings.

A rating row is never updated: an edit inserts a new row whose ``supersedes_id`` points
at the annotator's previous row for that item. The *current* rating of (item, user) is
the newest row (highest id) of that pair.
"""

from __future__ import annotations

import json

import pandas as pd
from sqlalchemy import and_, func, select
from sqlalchemy.engine import Connection

from db.models import utcnow
from db.repo.data import bulk_insert, table

RATING_FIELDS = ("requires_exact", "clarity", "naturalness", "ambiguity", "complexity")
GENERATION_KEY = ("study", "item", "model", "form", "target", "repetition")
GENERATION_COLUMNS = (*GENERATION_KEY, "provider", "output")


def get_study(conn: Connection, *, name: str | None = None, study_id: int | None = None) -> dict | None:
    """One study as a dict (``id, name, question, params, created_at``), or None."""
    t = table("wording_study")
    cond = t.c.name == name if study_id is None else t.c.id == study_id
    row = conn.execute(select(t).where(cond)).mappings().first()
    return dict(row) if row else None


def insert_study(conn: Connection, *, name: str, question: str, params: dict) -> int:
    t = table("wording_study")
    res = conn.execute(t.insert().values(name=name, question=question, params=params, created_at=utcnow()))
    return int(res.inserted_primary_key[0])


def insert_forms(conn: Connection, *, study_id: int, forms: list[dict]) -> dict[str, int]:
    """Insert ``forms`` (``key``, ``template``); returns ``{key: form id}``."""
    t = table("wording_form")
    bulk_insert(
        conn, "wording_form", [{"study_id": study_id, "key": f["key"], "template": f["template"]} for f in forms]
    )
    rows = conn.execute(select(t.c.key, t.c.id).where(t.c.study_id == study_id)).all()
    return {k: int(i) for k, i in rows}


def insert_items(conn: Connection, *, study_id: int, items: list[dict]) -> None:
    """Insert items (``form_id``, ``target``, ``text``) of one study."""
    bulk_insert(conn, "wording_item", [{"study_id": study_id, **it} for it in items])


def list_studies(conn: Connection) -> pd.DataFrame:
    """Every study with its number of forms and items (``id, name, question, params, forms, items``)."""
    s, f, i = table("wording_study"), table("wording_form"), table("wording_item")
    n_forms = select(func.count()).select_from(f).where(f.c.study_id == s.c.id).scalar_subquery()
    n_items = select(func.count()).select_from(i).where(i.c.study_id == s.c.id).scalar_subquery()
    rows = conn.execute(
        select(s.c.id, s.c.name, s.c.question, s.c.params, n_forms.label("forms"), n_items.label("items")).order_by(
            s.c.id
        )
    ).all()
    return pd.DataFrame(rows, columns=["id", "name", "question", "params", "forms", "items"])


def study_forms(conn: Connection, *, study_id: int) -> pd.DataFrame:
    """Forms of a study in creation order (``form_id, form, template``)."""
    f = table("wording_form")
    rows = conn.execute(select(f.c.id, f.c.key, f.c.template).where(f.c.study_id == study_id).order_by(f.c.id)).all()
    return pd.DataFrame(rows, columns=["form_id", "form", "template"])


def study_items(conn: Connection, *, study_id: int) -> pd.DataFrame:
    """Items of a study ordered by id (``item_id, form, target, text``)."""
    i, f = table("wording_item"), table("wording_form")
    rows = conn.execute(
        select(i.c.id, f.c.key, i.c.target, i.c.text)
        .join(f, f.c.id == i.c.form_id)
        .where(i.c.study_id == study_id)
        .order_by(i.c.id)
    ).all()
    return pd.DataFrame(rows, columns=["item_id", "form", "target", "text"])


def item_study_id(conn: Connection, *, item_id: int) -> int | None:
    i = table("wording_item")
    v = conn.execute(select(i.c.study_id).where(i.c.id == item_id)).scalar_one_or_none()
    return None if v is None else int(v)


def current_ratings(conn: Connection, *, study_id: int, user_id: int | None = None) -> pd.DataFrame:
    """The current (newest) rating per (item, rater) of a study; a rater is an account
    (``user_id``) or an outside rater (``user_id`` NULL, named by ``annotator``).

    Columns: ``rating_id, item_id, user_id, username, requires_exact, clarity,
    naturalness, ambiguity, complexity, created_at``; ``username`` is the account's name or the
    outside rater's. ``user_id`` given: that account's ratings only.
    """
    r, i, u = table("wording_rating"), table("wording_item"), table("app_user")
    newest = (
        select(func.max(r.c.id).label("rid"))
        .join(i, i.c.id == r.c.item_id)
        .where(i.c.study_id == study_id)
        .group_by(r.c.item_id, r.c.user_id, r.c.annotator)
    )
    if user_id is not None:
        newest = newest.where(r.c.user_id == user_id)
    newest = newest.subquery()
    rows = conn.execute(
        select(
            r.c.id,
            r.c.item_id,
            r.c.user_id,
            func.coalesce(u.c.username, r.c.annotator),
            *[r.c[c] for c in RATING_FIELDS],
            r.c.created_at,
        )
        .join(newest, newest.c.rid == r.c.id)
        .outerjoin(u, u.c.id == r.c.user_id)
        .order_by(r.c.item_id, r.c.user_id, r.c.annotator)
    ).all()
    return pd.DataFrame(rows, columns=["rating_id", "item_id", "user_id", "username", *RATING_FIELDS, "created_at"])


def current_rating(conn: Connection, *, item_id: int, user_id: int | None, annotator: str = "") -> dict | None:
    """The newest rating row of one (item, rater), or None: an account's (``user_id``) or an
    outside rater's (``user_id`` None, ``annotator`` their name)."""
    r = table("wording_rating")
    who = r.c.user_id == user_id if user_id is not None else and_(r.c.user_id.is_(None), r.c.annotator == annotator)
    row = (
        conn.execute(select(r).where(and_(r.c.item_id == item_id, who)).order_by(r.c.id.desc()).limit(1))
        .mappings()
        .first()
    )
    return dict(row) if row else None


def insert_rating(
    conn: Connection, *, item_id: int, user_id: int | None, values: dict, supersedes_id: int | None, annotator: str = ""
) -> int:
    t = table("wording_rating")
    res = conn.execute(
        t.insert().values(
            item_id=item_id,
            user_id=user_id,
            annotator=annotator,
            supersedes_id=supersedes_id,
            created_at=utcnow(),
            **{c: values.get(c) for c in RATING_FIELDS},
        )
    )
    return int(res.inserted_primary_key[0])


def accounts(conn: Connection, *, names: list[str]) -> dict[str, tuple[int, str]]:
    """``{username: (id, role)}`` of the accounts among ``names`` (read only)."""
    u = table("app_user")
    if not names:
        return {}
    rows = conn.execute(select(u.c.username, u.c.id, u.c.role).where(u.c.username.in_(names))).all()
    return {r[0]: (int(r[1]), r[2]) for r in rows}


def rating_history(conn: Connection, *, item_id: int, user_id: int) -> pd.DataFrame:
    """Every row (old and current) of one (item, user), oldest first."""
    r = table("wording_rating")
    cols = ["id", *RATING_FIELDS, "supersedes_id", "created_at"]
    rows = conn.execute(
        select(*[r.c[c] for c in cols]).where(and_(r.c.item_id == item_id, r.c.user_id == user_id)).order_by(r.c.id)
    ).all()
    return pd.DataFrame(rows, columns=cols)


def generations(
    conn: Connection, *, forms: list[str] | None = None, study: str | None = None, with_meta: bool = False
) -> pd.DataFrame:
    """Stored WISE generations (``id`` + :data:`GENERATION_COLUMNS` [+ ``meta``]), optionally of
    some forms and of one study only (``study=""``: those imported without a study)."""
    g = table("wise_generation")
    cols = [*GENERATION_COLUMNS, *(["meta"] if with_meta else [])]
    q = select(g.c.id, *[g.c[c] for c in cols]).order_by(g.c.id)
    if forms is not None:
        q = q.where(g.c.form.in_(list(forms)))
    if study is not None:
        q = q.where(g.c.study == study)
    df = pd.DataFrame(conn.execute(q).all(), columns=["id", *cols])
    if with_meta:
        df["meta"] = [json.loads(v) if isinstance(v, str) else v for v in df["meta"]]
    return df


def generation_outputs(conn: Connection, *, items: list[str], study: str = "") -> dict[tuple, tuple[str, str]]:
    """``{(study, item, model, form, target, repetition): (provider, output)}`` of the stored rows
    of ``study`` for ``items``."""
    g = table("wise_generation")
    out: dict[tuple, str] = {}
    items = sorted(set(items))
    for k in range(0, len(items), 500):
        rows = conn.execute(
            select(*[g.c[c] for c in GENERATION_KEY], g.c.provider, g.c.output).where(
                g.c.study == study, g.c.item.in_(items[k : k + 500])
            )
        )
        for *key, provider, output in rows:
            out[tuple(key)] = (provider, output)
    return out


def generation_keys(conn: Connection, *, study: str, model: str) -> set[tuple]:
    """``(item, form, target, repetition)`` of the stored generations of ``model`` in ``study``."""
    g = table("wise_generation")
    rows = conn.execute(
        select(g.c.item, g.c.form, g.c.target, g.c.repetition).where(g.c.study == study, g.c.model == model)
    )
    return {tuple(r) for r in rows}


def insert_generations(conn: Connection, *, rows: list[dict]) -> None:
    bulk_insert(conn, "wise_generation", rows)


def get_wise_study(conn: Connection, *, name: str) -> dict | None:
    """One WISE study (``id, name, params, created_at``), or None."""
    t = table("wise_study")
    row = conn.execute(select(t).where(t.c.name == name)).mappings().first()
    if row is None:
        return None
    out = dict(row)
    if isinstance(out["params"], str):
        out["params"] = json.loads(out["params"])
    return out


def insert_wise_study(conn: Connection, *, name: str, params: dict) -> int:
    t = table("wise_study")
    return int(conn.execute(t.insert().values(name=name, params=params, created_at=utcnow())).inserted_primary_key[0])


def update_wise_study(conn: Connection, *, name: str, params: dict) -> None:
    t = table("wise_study")
    conn.execute(t.update().where(t.c.name == name).values(params=params))


def list_wise_studies(conn: Connection) -> pd.DataFrame:
    """Every WISE study with counts: ``id, name, params, models, outputs``."""
    s, g = table("wise_study"), table("wise_generation")
    n_out = select(func.count()).select_from(g).where(g.c.study == s.c.name).scalar_subquery()
    n_models = select(func.count(func.distinct(g.c.model))).where(g.c.study == s.c.name).scalar_subquery()
    rows = conn.execute(select(s.c.id, s.c.name, s.c.params, n_models, n_out).order_by(s.c.id)).all()
    df = pd.DataFrame(rows, columns=["id", "name", "params", "models", "outputs"])
    df["params"] = [json.loads(v) if isinstance(v, str) else v for v in df["params"]]
    return df
