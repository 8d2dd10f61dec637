"""Catalogs stored with a project: the files of a team's own catalogs and every catalog's features."""

from __future__ import annotations

from typing import Optional

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from db.repo.data import bulk_insert, table

DOCUMENT_COLUMNS = ("name", "version", "filename", "sha256", "content")


def catalog_documents(conn: Connection) -> dict[str, dict]:
    """``{name: {name, version, filename, sha256, content}}`` of every stored catalog file."""
    t = table("catalog_document")
    rows = conn.execute(select(*(t.c[c] for c in DOCUMENT_COLUMNS)).order_by(t.c.id)).all()
    return {r[0]: dict(zip(DOCUMENT_COLUMNS, r)) for r in rows}


def catalog_document(conn: Connection, name: str) -> Optional[dict]:
    """The stored catalog file named ``name``, or None."""
    t = table("catalog_document")
    r = conn.execute(select(*(t.c[c] for c in DOCUMENT_COLUMNS)).where(t.c.name == name)).first()
    return dict(zip(DOCUMENT_COLUMNS, r)) if r is not None else None


def save_catalog_document(conn: Connection, doc: dict) -> None:
    """Insert the catalog file ``doc`` (keys :data:`DOCUMENT_COLUMNS`) or replace the one of its name."""
    t = table("catalog_document")
    values = {c: doc[c] for c in DOCUMENT_COLUMNS}
    if conn.execute(select(t.c.id).where(t.c.name == doc["name"])).first() is None:
        conn.execute(t.insert().values(values))
    else:
        conn.execute(t.update().where(t.c.name == doc["name"]).values(values))


def loaded_catalogs(conn: Connection) -> list[tuple[str, str, int]]:
    """``(catalog, version, features)`` of every catalog loaded into ``catalog_feature``."""
    t = table("catalog_feature")
    rows = conn.execute(
        select(t.c.catalog, func.max(t.c.catalog_version), func.count()).group_by(t.c.catalog).order_by(t.c.catalog)
    ).all()
    return [(r[0], r[1], int(r[2])) for r in rows]


def catalog_feature_keys(conn: Connection, catalog: str) -> set[str]:
    """The feature keys of ``catalog`` loaded into ``catalog_feature``."""
    t = table("catalog_feature")
    return {r[0] for r in conn.execute(select(t.c.key).where(t.c.catalog == catalog))}


def save_catalog_features(conn: Connection, catalog: str, rows: list[dict]) -> int:
    """Insert the features of ``catalog`` not loaded yet and update the loaded ones (``rows``:
    ``catalog_feature`` columns, ``key`` included); return the number inserted."""
    t = table("catalog_feature")
    have = catalog_feature_keys(conn, catalog)
    new = [r for r in rows if r["key"] not in have]
    for r in rows:
        if r["key"] in have:
            conn.execute(t.update().where((t.c.catalog == catalog) & (t.c.key == r["key"])).values(r))
    bulk_insert(conn, "catalog_feature", new)
    return len(new)
