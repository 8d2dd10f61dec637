"""The project overview: counts, judge agreement, adjudication progress."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import data as data_repo
from db.repo import overview as repo
from reform_core.services.auth import Principal, require


@dataclass(frozen=True)
class Overview:
    name: str
    counts: dict
    agreement: pd.DataFrame
    progress: pd.DataFrame
    tasks: pd.DataFrame
    demo: bool


def overview(engine: Engine, principal: Principal) -> Overview:
    require(principal, "view_overview")
    with engine.connect() as conn:
        meta = data_repo.get_meta(conn)
        return Overview(
            name=meta.get("project_name", "ReForm project"),
            counts=data_repo.status_counts(conn),
            agreement=repo.judge_pair_agreement(conn),
            progress=repo.adjudication_progress(conn),
            tasks=repo.models_and_tasks(conn),
            demo=meta.get("demo_loaded") == "1",
        )
