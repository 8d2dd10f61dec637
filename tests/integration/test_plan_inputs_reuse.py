"""The default estimator's plan inputs after a new decision (issue 16, rescoring): the plan's task
keys are reused from the previous read while the plan's tasks are the same, the decisions are
always read again, and a task added to the plan makes the tasks be read again. What comes back
equals a fresh read every time."""

from __future__ import annotations

import pandas as pd

from db.repo.adjudication import ensure_user, insert_tasks, write_tx
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.adjudication.planning import create_cluster_plan
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.services.scoring import estimates, scoring


def _same(a: estimates.PlanInputs, b: estimates.PlanInputs) -> None:
    pd.testing.assert_frame_equal(a.tasks.reset_index(drop=True), b.tasks.reset_index(drop=True))
    pd.testing.assert_frame_equal(a.decisions, b.decisions)
    assert (a.unsure, a.task_stamp) == (b.unsure, b.task_stamp)


def test_task_keys_are_reused_until_the_plans_tasks_change(sqlite_url):
    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=4, scale="small", adjudicate=3)
    with write_tx(eng) as conn:
        lead = Principal(ensure_user(conn, username="lead", role="lead"), "lead", "lead")
        ann = Principal(ensure_user(conn, username="ann", role="annotator"), "ann", "annotator")
    plan_id = create_cluster_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=5, name="cluster plan").plan_id
    plan = estimates.design_plan(eng, "judge_a", "judge_b")
    assert int(plan["id"]) == plan_id
    inst = scoring.load_project(eng).instances

    first = estimates.plan_inputs(eng, plan, inst)
    assert first.decisions.empty and len(first.tasks) > 0
    for k in range(3):
        item = S.claim_next(eng, ann, plan_id)
        S.decide(eng, ann, item.task_id, "AB"[k % 2], seconds=1)
    second = estimates.plan_inputs(eng, plan, inst, known=first)
    assert second.tasks is first.tasks, "the unchanged task keys are not read again"
    assert len(second.decisions) == 3, "the decisions are"
    _same(second, estimates.plan_inputs(eng, plan, inst))

    # a task added to the plan: its tasks are read again
    task = first.tasks.iloc[0]
    with write_tx(eng) as conn:
        resp, cons = (
            int(v)
            for v in conn.exec_driver_sql(
                "SELECT g.response_id, g.constraint_id FROM judgment g WHERE NOT EXISTS (SELECT 1 FROM adjudication_task t "
                "WHERE t.plan_id = ? AND t.response_id = g.response_id AND t.constraint_id = g.constraint_id) "
                "ORDER BY g.id LIMIT 1",
                (plan_id,),
            ).one()
        )
        insert_tasks(
            conn,
            rows=[
                {
                    "plan_id": plan_id,
                    "response_id": resp,
                    "constraint_id": cons,
                    "stratum": "extra",
                    "kind": str(task["kind"]),
                    "required": 1,
                    "decided": 0,
                    "status": "open",
                    "claimed_by": None,
                    "lease_until": None,
                    "order_key": 0.5,
                    "a_left": "A",
                }
            ],
        )
    third = estimates.plan_inputs(eng, plan, inst, known=second)
    assert third.tasks is not second.tasks and len(third.tasks) == len(second.tasks) + 1
    _same(third, estimates.plan_inputs(eng, plan, inst))

    # another plan's inputs are never taken for this one's (the plan is part of the stamp)
    other = dict(plan, name="another name")
    assert estimates.plan_inputs(eng, other, inst, known=third).tasks is not third.tasks
