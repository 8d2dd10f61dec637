"""The default plan: the question-cluster design the default estimator needs (issue 13).

:func:`preview_cluster_plan` sizes the design and :func:`create_cluster_plan` stores it as a
``sample_plan`` (``params``: the design of :mod:`reform_core.estimators.design` — cluster and
audit probabilities, double-adjudicated share, seed — plus the judges, the planner's
per-model table and the target) with one ``adjudication_task`` per drawn item: every
disagreement of a sampled question (``kind = 'disagreement'``) and the audited agreements of
those questions (``kind = 'audit'``), each with ``required`` = 1 or 2 distinct annotators.

Sizes (per evaluated model):

* default — ``design.default_params``: questions sampled with ``π = n/N`` from Cochran's
  size ``n`` for the model's ``N`` disagreements (``confidence``, ``p``, ``margin``); on
  average 30 % of the agreements of sampled questions audited, a target's agreed rows
  together, by Neyman allocation (agreed fails, the likelier wrong, far more often); 10 % of
  the items double-adjudicated from the start and a second opinion asked wherever a first
  decision goes against the plan's reference (both judges wrong on an audit, judge B on a
  disagreement), a third on an audit whose first two decisions both find the judges wrong; the plan's precision target is then ±``100·margin`` pp on TCPR;
* ``target_half_width`` — ``design.plan_for_half_width``: the cheapest (π, π_A) whose
  predicted measurement half-width of ``metric`` (tcpr | emcr) is within the target.

Only the main condition is planned (main results are scored from it). The queue follows the
design's order (questions in a random order, a question's tasks together), so the questions
completed at any time are a random subset and interim estimates stay valid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import adjudication as repo
from reform_core.estimators.design import Design
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.data.instances import load_instances

PLAN_ACTION = "plan_sampling"
DESIGNS = ("cluster", "stratified")  # plan --design; cluster = the default estimator's design


def design_defaults() -> dict:
    """The default design's audit share and double-adjudicated share (for the pages' inputs)."""
    from reform_core.estimators import design

    return {"audit_pi": design.DEFAULT_AUDIT, "double_fraction": design.DEFAULT_DOUBLE}


@dataclass(frozen=True)
class ClusterPlan:
    """A sized design: ``design`` (stored with the plan), ``tasks`` (``tasks.draw``) and the
    per-model ``models`` table (disagreements, agreements, sampled questions, tasks,
    decisions needed, cluster / audit probabilities, predicted half-width when sized by
    target)."""

    design: Design
    tasks: pd.DataFrame
    models: pd.DataFrame
    explanation: str = ""  # the task count against the paper's stratified sample, in one sentence

    @property
    def params(self) -> dict:
        """The design as stored with the plan."""
        return self.design.to_stored()


def _check(seed, double_fraction, audit_pi) -> None:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    for name, v in (("double-adjudicated share", double_fraction), ("audit share", audit_pi)):
        if v is not None and not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {v!r}")


def size_cluster_plan(
    instances: pd.DataFrame,
    *,
    judge_a: str,
    judge_b: str,
    seed: int = 0,
    confidence: float = 0.95,
    p: float = 0.5,
    margin: float = 0.03,
    target_half_width: Optional[float] = None,
    metric: str = "tcpr",
    audit_pi: Optional[float] = None,
    double_fraction: Optional[float] = None,
) -> ClusterPlan:
    """Size and draw the design for ``instances`` (INSTANCES with the pair's label columns
    ``judge_a`` / ``judge_b``); pure."""
    from reform_core import sampling
    from reform_core.estimators import design, planner
    from reform_core.estimators.draws import default_design, draw

    _check(seed, double_fraction, audit_pi)
    sampling.cochran_size(1, confidence=confidence, p=p, margin=margin)  # validates the three
    main = instances[instances["condition"] == "main"].reset_index(drop=True)
    g = pd.to_numeric(main[judge_a], errors="coerce")
    m = pd.to_numeric(main[judge_b], errors="coerce")
    if not (g.notna() & m.notna()).any():
        raise ValueError("no instance of the main condition has both judges' labels: nothing to sample")
    dfrac = design.DEFAULT_DOUBLE if double_fraction is None else float(double_fraction)
    table = None
    if target_half_width is not None:
        if audit_pi is not None:
            raise ValueError("--audit-share is chosen by the planner when sizing by --target-half-width; give one")
        plan, table = planner.plan_for_half_width(
            main,
            half_width=float(target_half_width),
            metric=metric,
            seed=int(seed),
            judge_a=judge_a,
            judge_b=judge_b,
            double_fraction=dfrac,
        )
        plan = plan.with_extra(target={**plan.target, "source": "plan --target-half-width"})
    else:
        plan = default_design(
            main,
            seed=int(seed),
            judge_a=judge_a,
            judge_b=judge_b,
            confidence=confidence,
            p=p,
            margin=margin,
            double_fraction=dfrac,
            audit_pi=design.DEFAULT_AUDIT if audit_pi is None else float(audit_pi),
        )
        plan = plan.with_extra(
            target={"metric": "tcpr", "half_width": round(100 * float(margin), 6), "source": "Cochran margin"},
            confidence=float(confidence),
            p=float(p),
            margin=float(margin),
        )
    tasks = draw(main, plan, judge_a=judge_a, judge_b=judge_b)
    models = model_table(main, tasks, plan, judge_a, judge_b, table)
    strat = stratified_size(instances, judge_a=judge_a, judge_b=judge_b, confidence=confidence, p=p, margin=margin)
    return ClusterPlan(design=plan, tasks=tasks, models=models, explanation=explain_size(len(tasks), models, strat))


def stratified_size(
    instances: pd.DataFrame,
    *,
    judge_a: str,
    judge_b: str,
    confidence: float = 0.95,
    p: float = 0.5,
    margin: float = 0.03,
) -> int:
    """The tasks the paper's stratified plan (``plan --design stratified``) would draw from these
    instances: Cochran/FPC sizes of every model's disagreements."""
    from reform_core import sampling

    dis = sampling.disagreements(instances, judge_a=judge_a, judge_b=judge_b)
    return 0 if dis.empty else int(sampling.plan(dis, confidence=confidence, p=p, margin=margin)["planned"].sum())


def _span(values, fmt: str) -> str:
    lo, hi = float(min(values)), float(max(values))
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


def explain_size(n_tasks: int, models: pd.DataFrame, stratified: int) -> str:
    """One sentence: the default design's task count against the paper's stratified sample, and why."""
    if models.empty:
        return f"{n_tasks:,} tasks, against {stratified:,} for the paper's stratified sample of disagreements only."
    q = _span(models["questions_sampled"], "{:.0f}")
    audit = _span(100 * models["audit_pi"], "{:.0f}")
    return (
        f"{n_tasks:,} tasks: every disagreement of {q} sampled question(s) per model plus an audit of {audit} % of "
        f"their agreements (agreed fails more often), against {stratified:,} for the paper's stratified sample of "
        "disagreements only — the audit and the second opinions are what make the estimate unbiased when both "
        "judges are wrong together or annotators err."
    )


def model_table(
    main: pd.DataFrame, tasks: pd.DataFrame, design: Design, ja: str, jb: str, planner: Optional[pd.DataFrame]
) -> pd.DataFrame:
    """Per model: the plan's clusters, tasks and expected decisions (with the planner's prediction if any)."""
    from reform_core.estimators.design import cluster_key

    g = pd.to_numeric(main[ja], errors="coerce").to_numpy(dtype=float)
    m = pd.to_numeric(main[jb], errors="coerce").to_numpy(dtype=float)
    both = ~np.isnan(g) & ~np.isnan(m)
    rows = []
    for name in sorted(main["model"].astype(str).unique()):
        mine = main["model"].astype(str).to_numpy() == name
        t = tasks[tasks["model"] == name]
        dis = mine & both & (g != m)
        r = {
            "model": name,
            "disagreements": int(dis.sum()),
            "agreements": int((mine & both & (g == m)).sum()),
            "questions": int(main.loc[mine, "question"].nunique()),
            "questions_sampled": int(pd.unique(cluster_key(t["model"], t["question"])).size),
            "disagreement_tasks": int((t["kind"] == "disagreement").sum()),
            "audit_tasks": int((t["kind"] == "audit").sum()),
            "decisions_needed": int(t["required"].sum()),
            "cluster_pi": float(design.cluster_pi.get(name, 0.0)),
            "audit_pi": float(design.audit_probability([name])[0]),
        }
        if planner is not None:
            pr = planner.set_index("model")
            r["predicted_half_width"] = float(pr.loc[name, "predicted_half_width"]) if name in pr.index else np.nan
            r["reachable"] = bool(pr.loc[name, "reachable"]) if name in pr.index else False
        rows.append(r)
    return pd.DataFrame(rows)


def preview_cluster_plan(engine: Engine, principal: Principal, *, judge_a: str, judge_b: str, **options) -> ClusterPlan:
    """The plan :func:`create_cluster_plan` would store with these options; writes nothing."""
    require(principal, PLAN_ACTION)
    inst = load_instances(engine, judge_a, judge_b)
    return size_cluster_plan(inst, judge_a=inst.attrs["judge_a"], judge_b=inst.attrs["judge_b"], **options)


@dataclass(frozen=True)
class ClusterPlanCreated:
    plan_id: int
    name: str
    params: dict
    models: pd.DataFrame
    tasks: int
    explanation: str = ""


def create_cluster_plan(
    engine: Engine, principal: Principal, *, judge_a: str, judge_b: str, name: Optional[str] = None, **options
) -> ClusterPlanCreated:
    """Draw and store the default (question-cluster) plan of a judge pair (module docstring).

    ``options``: ``seed``, ``confidence``, ``p``, ``margin``, ``target_half_width``,
    ``metric``, ``audit_pi``, ``double_fraction`` (:func:`size_cluster_plan`). The seed also
    fixes which judge each task shows on the left.
    """
    actor = require(principal, PLAN_ACTION)
    inst = load_instances(engine, judge_a, judge_b)
    plan = size_cluster_plan(inst, judge_a=inst.attrs["judge_a"], judge_b=inst.attrs["judge_b"], **options)
    params = {**plan.params, "judge_a": judge_a, "judge_b": judge_b, "models": models_json(plan.models)}
    from reform_core.services.adjudication.adjudication import insert_named_plan

    with repo.write_tx(engine) as conn:
        plan_id, name = insert_named_plan(conn, judge_a, judge_b, name, jsonable(params), actor.user_id)
        repo.insert_tasks(conn, rows=task_rows(plan_id, inst, plan.tasks, plan.design))
    return ClusterPlanCreated(
        plan_id=plan_id,
        name=name,
        params=params,
        models=plan.models,
        tasks=len(plan.tasks),
        explanation=plan.explanation,
    )


def models_json(models: pd.DataFrame) -> dict:
    """The per-model table as stored with a plan (``params["models"]``)."""
    return {r["model"]: {k: v for k, v in r.items() if k != "model"} for r in models.to_dict("records")}


def task_rows(
    plan_id: int, inst: pd.DataFrame, tasks: pd.DataFrame, design: Design, *, order_start: Optional[float] = None
) -> list[dict]:
    """``adjudication_task`` rows of drawn tasks (``tasks``: :func:`reform_core.estimators.draws.draw`'s
    columns, in queue order): queue keys their ``queue_order``, or ``order_start`` + their position
    (tasks added to a plan behind its others); the judge shown on the left from the plan's seed."""
    from reform_core.estimators.design import Stream

    row = pd.Index(inst["iid"]).get_indexer(tasks["iid"])
    a_left = np.where(design.uniform(Stream.SIDES, tasks["iid"].to_numpy()) < 0.5, "A", "B")
    order = (
        tasks["queue_order"].to_numpy(dtype=float)
        if order_start is None
        else order_start + np.arange(len(tasks), dtype=float)
    )
    return [
        {
            "plan_id": plan_id,
            "response_id": int(inst["response_id"].iat[r]),
            "constraint_id": int(inst["constraint_id"].iat[r]),
            "stratum": str(st),
            "kind": str(kind),
            "required": int(req),
            "decided": 0,
            "status": "open",
            "claimed_by": None,
            "lease_until": None,
            "order_key": float(o),
            "a_left": str(left),
        }
        for r, st, kind, req, o, left in zip(row, tasks["stratum"], tasks["kind"], tasks["required"], order, a_left)
    ]


def jsonable(value):
    """``value`` with every key a string and numpy scalars as Python numbers (a plan's stored params)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    return value
