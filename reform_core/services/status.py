"""SPEC §8 ``status``: counts, the scoring pair and the sample plans, with SQLAlchemy Core only
(no pandas or ORM models: the CLI's ``status`` starts in about the time of ``import pandas``)."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from db.repo import status as repo


def status(engine: Engine) -> dict:
    """The counts, the scoring ``pair`` (or None) and every sample plan with its judges and
    progress (``plans``: ``name, judge_a, judge_b, tasks, done``)."""
    with engine.connect() as conn:
        out = repo.status_counts(conn)
        out["pair"] = repo.stored_pair(conn)
        out["plans"] = repo.plans(conn)
    return out
