"""The project overview: counts, judge agreement, adjudication progress."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import data as data_repo
from db.repo import overview as repo
from db.repo import status as status_repo
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.adjudication.adjudication import blind_plan_names


@dataclass(frozen=True)
class Overview:
    name: str
    counts: dict
    agreement: Optional[pd.DataFrame]  # None: blinded (annotators)
    progress: pd.DataFrame
    tasks: pd.DataFrame
    demo: bool


def overview(engine: Engine, principal: Principal) -> Overview:
    """Counts, judge agreement, progress; blinded for a role that may not see scores (see
    :func:`combine`)."""
    require(principal, "view_overview")
    return combine(
        data_part(engine, principal), decisions_part(engine, principal), blind=not principal.can("view_scores")
    )


def data_part(engine: Engine, principal: Principal) -> dict:
    """What decisions do not change: the counts, judge agreement, questions per task type. At
    10× these reads take seconds, so the app keeps them per version of the judged data."""
    require(principal, "view_overview")
    with engine.connect() as conn:
        meta = data_repo.get_meta(conn)
        return {
            "name": meta.get("project_name", "ReForm project"),
            "counts": status_repo.data_counts(conn),
            "agreement": repo.judge_pair_agreement(conn),
            "tasks": repo.models_and_tasks(conn),
            "demo": meta.get("demo_loaded") == "1",
        }


def decisions_part(engine: Engine, principal: Principal) -> dict:
    """What a decision changes: the adjudication count and each plan's progress (counters and
    indexed counts: milliseconds at any size)."""
    require(principal, "view_overview")
    with engine.connect() as conn:
        return {"adjudications": status_repo.adjudication_count(conn), "progress": repo.adjudication_progress(conn)}


def combine(data: dict, decisions: dict, *, blind: bool = True) -> Overview:
    """The overview from its two parts. ``blind`` (annotators): no judge agreement (judge and
    model names with agreement rates) and plans named ``Plan <id>`` — plan names default to
    ``"<A> vs <B> #k"`` and would name the judges of the items they decide (issue 15 item 7)."""
    progress = decisions["progress"]
    if blind:
        progress = progress.assign(plan=blind_plan_names(progress["id"]))
    return Overview(
        name=data["name"],
        counts={**data["counts"], "adjudications": decisions["adjudications"]},
        agreement=None if blind else data["agreement"],
        progress=progress.drop(columns=["id"]),
        tasks=data["tasks"],
        demo=data["demo"],
    )
