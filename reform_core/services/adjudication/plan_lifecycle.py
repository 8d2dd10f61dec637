"""Stopping and extending a plan: decisions the app supports (``plan-close``, ``plan-extend`` and
the Sampling page, leads only).

* :func:`close_plan` — "stop here": every task still short of decisions is withdrawn (status
  ``withdrawn``: no queue, ``tasks`` export or decision takes it again; its decisions so far
  stay), the plan is made inactive and its closure is stored with it (``params["closed"]``:
  ``at``, ``by``, ``reason``, ``withdrawn``; for a question-cluster plan this is
  ``Design.extra["closed"]``). The estimate is then final for the sample reached: the export's
  manifest and the verdict say that the plan was closed, when, by whom and why. A closed plan's
  decisions are final: a decision, an undo or an import on it is refused.
* :func:`extend_plan` — more questions drawn with the same design, earlier decisions kept: the
  plan's cluster probabilities are raised so that ``questions`` more questions per model are
  expected, with the hashed draws nested (a question sampled before stays sampled;
  :mod:`reform_core.estimators.extension` gives the rule), and the new questions' tasks are
  added behind the plan's others in the queue. Each extension is recorded in
  ``params["extensions"]``.

Both change the scored data in place, so they bump the data revision (cached scores see them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import adjudication as repo
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.adjudication.planning import PLAN_ACTION

MAX_REASON = 500


@dataclass(frozen=True)
class Closed:
    plan: str
    withdrawn: int
    closed: dict  # at, by, reason, withdrawn


@dataclass(frozen=True)
class Extended:
    plan: str
    tasks: int  # tasks added
    models: pd.DataFrame  # per model: questions, sampled before / now, cluster probability before / now, new tasks


def _stamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _plan_id(conn, plan: str) -> int:
    pid = repo.plan_id_by_name(conn, name=plan)
    if pid is None:
        known = ", ".join(repr(n) for n in sorted(repo.plan_names(conn))) or "none"
        raise ValueError(f"no sample plan named {plan!r} (plans: {known})")
    return pid


def _reason(reason: Optional[str]) -> str:
    text = " ".join(str(reason or "").split())
    if len(text) > MAX_REASON:
        raise ValueError(f"--reason: at most {MAX_REASON} characters, got {len(text)}")
    return text


def close_plan(engine: Engine, principal: Principal, plan: str, *, reason: Optional[str] = None) -> Closed:
    """Close ``plan`` where it stands (module docstring); ValueError for an unknown or an already
    closed plan. Returns how many tasks were withdrawn and the closure stored."""
    from db.repo.status import bump_revision

    actor = require(principal, PLAN_ACTION)
    why = _reason(reason)
    with repo.write_tx(engine) as conn:
        pid = _plan_id(conn, plan)
        repo.lock_plan(conn, plan_id=pid)
        params = dict(repo.plan_params(conn, plan_id=pid))
        if isinstance(params.get("closed"), dict):
            raise ValueError(f"plan {plan!r} is already closed (on {str(params['closed'].get('at', ''))[:10]})")
        withdrawn = repo.withdraw_open_tasks(conn, plan_id=pid)
        closed = {"at": _stamp(), "by": actor.username, "reason": why, "withdrawn": withdrawn}
        repo.set_plan(conn, plan_id=pid, params={**params, "closed": closed}, active=False)
        bump_revision(conn)
    return Closed(plan=plan, withdrawn=withdrawn, closed=closed)


def _open_cluster_plan(conn, plan: str) -> tuple[int, dict]:
    """The id and stored parameters of an open question-cluster plan, its row locked."""
    from reform_core.estimators.design import is_stored_design

    pid = _plan_id(conn, plan)
    repo.lock_plan(conn, plan_id=pid)
    params = dict(repo.plan_params(conn, plan_id=pid))
    if not is_stored_design(params):
        raise ValueError(f"plan {plan!r} is not a question-cluster plan: only those can be extended")
    if isinstance(params.get("closed"), dict):
        raise ValueError(
            f"plan {plan!r} was closed on {str(params['closed'].get('at', ''))[:10]}: its estimate is "
            "final; create another plan for more decisions"
        )
    return pid, params


@dataclass(frozen=True)
class _Drawn:
    """An extension prepared outside the write transaction."""

    params: dict  # the stored parameters it was prepared from
    inst: pd.DataFrame  # the pair's instances
    main: pd.DataFrame  # their main condition
    design: object  # the extended Design
    table: pd.DataFrame  # extended_design's per-model table
    tasks: pd.DataFrame  # every task of the extended design


def _prepare(engine: Engine, plan: str, questions: int) -> _Drawn:
    from reform_core.estimators.design import Design
    from reform_core.estimators.draws import draw
    from reform_core.estimators.extension import extended_design
    from reform_core.services.data.instances import load_instances

    with engine.connect() as conn:
        pid, params = _open_cluster_plan(conn, plan)
        row = repo.plan_row(conn, plan_id=pid)
    inst = load_instances(engine, row["judge_a"], row["judge_b"])
    ja, jb = inst.attrs["judge_a"], inst.attrs["judge_b"]
    main = inst[inst["condition"] == "main"].reset_index(drop=True)
    grown, table = extended_design(Design.from_stored(params), main, questions, judge_a=ja, judge_b=jb)
    if not (table["not_sampled"] > 0).any():
        raise ValueError(f"plan {plan!r} already holds every question of the benchmark: nothing to extend")
    return _Drawn(
        params=params, inst=inst, main=main, design=grown, table=table, tasks=draw(main, grown, judge_a=ja, judge_b=jb)
    )


def _stored_after(d: _Drawn, record: dict) -> dict:
    """The plan's parameters after the extension: the raised cluster probabilities, the refreshed
    per-model sizes and the extension's record (every other key as it was)."""
    from reform_core.services.adjudication.planning import jsonable, model_table, models_json

    stored = d.design.to_stored()
    ja, jb = d.inst.attrs["judge_a"], d.inst.attrs["judge_b"]
    models = dict(d.params.get("models", {}))
    for m, r in models_json(model_table(d.main, d.tasks, d.design, ja, jb, None)).items():
        models[m] = {**models.get(m, {}), **r}
    return jsonable(
        {
            **d.params,
            "cluster_pi": stored["cluster_pi"],
            "cluster_pi0": stored["cluster_pi0"],
            "models": models,
            "extensions": [*d.params.get("extensions", []), record],
        }
    )


def extend_plan(engine: Engine, principal: Principal, plan: str, *, questions: int) -> Extended:
    """Draw about ``questions`` more questions per model into ``plan`` (module docstring) and add
    their tasks; ValueError for an unknown, closed or non-cluster plan, a bad count, a plan whose
    every question is already sampled, or one changed meanwhile (try again)."""
    from db.repo.status import bump_revision
    from reform_core.estimators.extension import new_tasks
    from reform_core.services.adjudication.planning import task_rows
    from reform_core.services.data.instances import instance_id

    actor = require(principal, PLAN_ACTION)
    d = _prepare(engine, plan, questions)
    with repo.write_tx(engine) as conn:
        pid, params = _open_cluster_plan(conn, plan)  # again, its row locked: nothing changed meanwhile?
        if params != d.params:
            raise ValueError(f"plan {plan!r} changed while the extension was drawn; try again")
        keys = repo.plan_task_keys(conn, plan_id=pid)
        added = new_tasks(d.tasks, instance_id(keys["response_id"], keys["constraint_id"]))
        repo.insert_tasks(
            conn, rows=task_rows(pid, d.inst, added, d.design, order_start=repo.max_order_key(conn, plan_id=pid) + 1.0)
        )
        record = {
            "at": _stamp(),
            "by": actor.username,
            "questions": int(questions),
            "tasks": len(added),
            "cluster_pi_before": dict(zip(d.table["model"], d.table["cluster_pi_before"])),
        }
        repo.set_plan(conn, plan_id=pid, params=_stored_after(d, record))
        bump_revision(conn)
    return Extended(plan=plan, tasks=len(added), models=_extension_table(d, added))


def _extension_table(d: _Drawn, added: pd.DataFrame) -> pd.DataFrame:
    """Per model: the extension's sizes with the questions now sampled and the tasks added."""
    from reform_core.estimators.extension import cluster_table

    ja, jb = d.inst.attrs["judge_a"], d.inst.attrs["judge_b"]
    now = cluster_table(d.main, d.design, judge_a=ja, judge_b=jb).groupby("model")["sampled"].sum()
    out = d.table.copy()
    out["sampled_now"] = out["model"].map(now).fillna(0).astype(int)
    out["tasks_added"] = out["model"].map(added["model"].value_counts()).fillna(0).astype(int)
    return out
