"""8 annotator processes drain one queue on SQLite and on PostgreSQL: every task is decided
by exactly its required number of distinct annotators, no decision is lost or doubled, and
no "database is locked" (or any other) error reaches a worker."""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
import types
from unittest import mock

from sqlalchemy import text

from db.repo.adjudication import ensure_user, write_tx
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine

N_WORKERS = 8
DEADLINE_S = 60


def _worker(url: str, plan_id: int, user_id: int, username: str, out) -> None:
    from reform_core.services.platform.uow import get_engine

    eng = get_engine(url, migrate=False)
    me = Principal(user_id, username, "annotator")
    decided, refused, errors = [], [], []
    stop = time.monotonic() + DEADLINE_S
    try:
        while time.monotonic() < stop:
            item = S.claim_next(eng, me, plan_id, lease_seconds=120)
            if item is None:
                plans = S.list_plans(eng, me)
                row = plans[plans["id"] == plan_id].iloc[0]
                if int(row["done"]) == int(row["tasks"]):
                    break
                time.sleep(0.05)  # the rest is held by others or needs another annotator
                continue
            choice = "A" if item.task_id % 3 else "B"
            try:
                d = S.decide(eng, me, item.task_id, choice, seconds=1.0)
                decided.append((item.task_id, d.adjudication_id))
            except S.AdjudicationRefused as exc:
                refused.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        errors.append(f"{type(exc).__name__}: {exc}")
    out.put((username, decided, refused, errors))


def _drain(url: str, overlap: float = 0.3) -> None:
    eng = get_engine(url)
    simulate_into(eng, seed=3, scale="small")
    with write_tx(eng) as conn:
        lead = Principal(ensure_user(conn, username="lead", role="lead"), "lead", "lead")
        users = [(ensure_user(conn, username=f"ann{k}", role="annotator"), f"ann{k}") for k in range(N_WORKERS)]
    plan = S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=5, overlap_fraction=overlap)
    eng.dispose()

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, plan.plan_id, uid, name, out)) for uid, name in users]
    # Spawned children re-run the parent's __main__; after an AppTest in this process that is a
    # Streamlit page script. Hand them an empty __main__ instead (the worker is importable).
    with mock.patch.dict(sys.modules, {"__main__": types.ModuleType("__main__")}):
        for p in procs:
            p.start()
    # generous: a worker stops claiming at DEADLINE_S but a statement may still wait out the busy timeout
    results = [out.get(timeout=DEADLINE_S + 240) for _ in procs]
    for p in procs:
        p.join(timeout=30)

    errors = [e for r in results for e in r[3]]
    assert errors == [], errors
    assert [r for res in results for r in res[2]] == []  # no lease expired, nothing refused
    claimed_ids = sorted(a for r in results for _, a in r[1])
    with eng.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT t.id, t.required, t.decided, t.status, COUNT(d.id), COUNT(DISTINCT d.user_id) "
                "FROM adjudication_task t LEFT JOIN adjudication d ON d.task_id = t.id "
                "WHERE t.plan_id = :p GROUP BY t.id, t.required, t.decided, t.status"
            ),
            {"p": plan.plan_id},
        ).all()
        stored_ids = sorted(r[0] for r in conn.execute(text("SELECT id FROM adjudication")).all())
    assert len(rows) == plan.tasks
    assert {r[1] for r in rows} == {1, 2}  # single and double adjudication both exercised
    for tid, required, decided, status, n_rows, n_users in rows:
        assert (status, decided, n_rows, n_users) == ("done", required, required, required), tid
    assert claimed_ids == stored_ids  # every recorded decision was reported, none lost
    assert len(set(claimed_ids)) == len(claimed_ids)
    assert sum(len(r[1]) > 0 for r in results) >= 2  # the work really was shared


def test_eight_annotators_sqlite(sqlite_url):
    _drain(sqlite_url)


def test_eight_annotators_postgres(postgres_url):
    _drain(postgres_url)
