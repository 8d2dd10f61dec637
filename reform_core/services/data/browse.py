"""Read-only browsing of the project's data (the Data page)."""

from __future__ import annotations

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import browse as repo
from reform_core.services.accounts.auth import Principal, require


def questions(
    engine: Engine, principal: Principal, *, search: str = "", task_type: str = "", page: int = 0, page_size: int = 50
) -> tuple[pd.DataFrame, int]:
    """One page of questions matching the filters, and the total count."""
    require(principal, "view_data")
    with engine.connect() as conn:
        return repo.questions_page(conn, search=search, task_type=task_type, limit=page_size, offset=page * page_size)


def task_types(engine: Engine, principal: Principal) -> list[str]:
    require(principal, "view_data")
    with engine.connect() as conn:
        return repo.task_types(conn)


def question(engine: Engine, principal: Principal, key: str) -> dict | None:
    """A question with its instructions, constraints and all responses (None if unknown)."""
    require(principal, "view_data")
    with engine.connect() as conn:
        return repo.question_detail(conn, key=key)
