"""Engine factory and schema upgrade.

``make_engine(url)`` gives SQLite (WAL, busy timeout, foreign keys on) or PostgreSQL via
psycopg. ``upgrade(engine)`` brings an empty or old database to the newest Alembic
revision; the app and the CLI call it on start.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import (  # sqlmodel.create_engine is this one; sqlmodel itself costs ~0.3 s to import
    create_engine,
    event,
)
from sqlalchemy.engine import Engine, make_url

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# The newest Alembic revision (db/schema_head.py; a test keeps it equal to the migration scripts'
# head). With it, opening an up-to-date database costs one SELECT instead of loading Alembic.
from db.schema_head import SCHEMA_HEAD  # noqa: E402,F401 - re-exported

SQLITE_BUSY_TIMEOUT_MS = 30_000


def normalize_url(url: str) -> str:
    """Map ``postgresql://`` and ``postgres://`` to the psycopg (v3) driver."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def is_sqlite(url_or_engine) -> bool:
    url = url_or_engine.url if isinstance(url_or_engine, Engine) else make_url(normalize_url(str(url_or_engine)))
    return url.get_backend_name() == "sqlite"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def make_engine(url: str, **kwargs) -> Engine:
    """Create the process's engine for ``url`` (SQLite file or PostgreSQL)."""
    url = normalize_url(url)
    if is_sqlite(url):
        u = make_url(url)
        if u.database and u.database != ":memory:":
            Path(u.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            **kwargs,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        # Let SQLAlchemy's pysqlite driver not open implicit transactions lazily in a way
        # that makes read-then-write deadlock: writes use BEGIN IMMEDIATE where it matters.
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def alembic_config(engine: Engine):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Upgrade the database schema to ``revision`` (idempotent; cheap when already current)."""
    if revision == "head" and _recorded_revision(engine) == SCHEMA_HEAD:
        return
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def _recorded_revision(engine: Engine) -> str | None:
    from sqlalchemy import inspect, text

    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision(engine: Engine) -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
