"""Engine per process and one session per use case (unit of work)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Optional

from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from sqlmodel import Session

from db.engine import make_engine, normalize_url, upgrade

_ENGINES: dict[str, Engine] = {}


def get_engine(url: Optional[str] = None, *, migrate: bool = True) -> Engine:
    """The process-wide engine for ``url`` (default: the settings' URL), upgraded once."""
    if url is None:
        from reform_core.config import get_settings

        url = get_settings().database_url
    url = normalize_url(url)
    engine = _ENGINES.get(url)
    if engine is None:
        engine = make_engine(url)
        if migrate:
            upgrade(engine)
        _ENGINES[url] = engine
    return engine


def dispose_engines() -> None:
    """Close every pooled connection (tests, backup/restore)."""
    for e in _ENGINES.values():
        e.dispose()
    _ENGINES.clear()


@contextmanager
def unit_of_work(engine: Engine) -> Iterator[Session]:
    """One session, committed once at the end, rolled back on any error."""
    from sqlmodel import Session  # here, not at module level: `status` opens an engine without the ORM

    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
