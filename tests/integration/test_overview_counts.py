"""The overview's decision part comes from the progress counters and indexed counts (issue 16):
it must equal counting the task list and the adjudication table directly."""

from __future__ import annotations

from sqlalchemy import text

from db.repo.adjudication import ensure_user, write_tx
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.services.project.overview import overview


def test_overview_progress_equals_counting_the_tasks(sqlite_url):
    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=5, scale="small", adjudicate=2)
    with write_tx(eng) as conn:
        lead = Principal(ensure_user(conn, username="lead", role="lead"), "lead", "lead")
        ann = Principal(ensure_user(conn, username="ann", role="annotator"), "ann", "annotator")
    plan = S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=2, name="p").plan_id
    for k in range(5):
        item = S.claim_next(eng, ann, plan)
        S.decide(eng, ann, item.task_id, "AB"[k % 2], seconds=1)
    S.undo_last(eng, ann, plan)
    S.claim_next(eng, ann, plan)  # one held now
    ov = overview(eng, lead)
    with eng.connect() as conn:
        expected = conn.execute(
            text(
                "SELECT p.name, COUNT(t.id), SUM(CASE WHEN t.status = 'done' THEN 1 ELSE 0 END), "
                "SUM(CASE WHEN t.status = 'claimed' THEN 1 ELSE 0 END) FROM sample_plan p "
                "LEFT JOIN adjudication_task t ON t.plan_id = p.id GROUP BY p.name ORDER BY p.name"
            )
        ).all()
        current = conn.execute(
            text(
                "SELECT COUNT(*) FROM adjudication a WHERE a.choice <> 'retracted' AND a.id NOT IN "
                "(SELECT supersedes_id FROM adjudication WHERE supersedes_id IS NOT NULL)"
            )
        ).scalar()
    got = [tuple(r) for r in ov.progress[["plan", "tasks", "done", "claimed"]].itertuples(index=False)]
    assert got == [tuple(r) for r in expected]
    mine = [r for r in got if r[0] == "p"]
    assert [(r[2], r[3]) for r in mine] == [(4, 1)]  # 5 decided, 1 undone; 1 held
    assert ov.counts["adjudications"] == current == 6 + 4  # 3 models × 2 imported + 4 kept decisions
