"""Every statement that looks up one instance's judgments on the annotator's and the
importer's paths (claim, decide, undo, import of adjudications) uses an index on the
instance, never a walk over all of one judge's judgments (issue 16: on a 150,000-instance
SQLite file without statistics, ``ORDER BY id DESC LIMIT 1`` made the planner pick
``ix_judgment_judge_id`` to skip a sort, scanning 150,000 index entries per lookup).

The statements are captured as the services run them and explained by SQLite itself."""

from __future__ import annotations

from sqlalchemy import event

from reform_core.services.accounts.users import create_user
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine


def test_judgment_lookups_search_by_instance(sqlite_url):
    engine = get_engine(sqlite_url)
    seen: list[tuple[str, object]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        if (
            "FROM judgment" in statement
            and not executemany
            and statement.lstrip().upper().startswith(("SELECT", "WITH"))
        ):
            seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        simulate_into(engine, seed=1, scale="small", adjudicate=5)  # the importer's decisions
        lead = create_user(engine, None, username="lead", password="lead-password", role="lead")
        plan = S.create_plan(engine, lead, judge_a="judge_a", judge_b="judge_b", seed=1, name="p")
        item = S.claim_next(engine, lead, plan.plan_id)
        S.decide(engine, lead, item.task_id, "A", seconds=1)
        S.undo_last(engine, lead, plan.plan_id)
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    lookups = [(s, p) for s, p in seen if "response_id" in s and "LIMIT 1" in s]
    assert lookups, "no per-instance judgment lookup was captured"
    bad = []
    with engine.connect() as conn:
        for statement, params in lookups:
            plan_rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
            text = " | ".join(str(r[-1]) for r in plan_rows)
            if "ix_judgment_judge_id" in text or "SCAN judgment" in text:
                bad.append(f"{statement[:200]} → {text}")
    assert not bad, "\n".join(bad)
