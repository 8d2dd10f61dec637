"""Progress counters (issue 16): per plan and stratum, and per plan, annotator and stratum,
kept by task creation, decide, undo and import in the same transaction; backfilled by the
migration; checked by ``doctor``; equal to an independent recount from the raw tables."""

from __future__ import annotations

import pandas as pd
import pytest
from sqlalchemy import text

from db.repo import adjudication as repo
from db.repo.adjudication import ensure_user, write_tx
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.services.project.operations import doctor


def _recount(eng, plan_id: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stratum and per-annotator counts straight from the task and decision rows, in pandas."""
    with eng.connect() as conn:
        tasks = pd.DataFrame(
            conn.execute(
                text("SELECT id, stratum, required, status FROM adjudication_task WHERE plan_id = :p"), {"p": plan_id}
            ).all(),
            columns=["id", "stratum", "required", "status"],
        )
        adj = pd.DataFrame(
            conn.execute(
                text("SELECT id, task_id, user_id, annotator, choice, supersedes_id, seconds FROM adjudication")
            ).all(),
            columns=["id", "task_id", "user_id", "annotator", "choice", "supersedes_id", "seconds"],
        )
    cur = adj[~adj["id"].isin(adj["supersedes_id"].dropna().astype(int)) & (adj["choice"] != "retracted")]
    cur = cur[cur["task_id"].isin(tasks["id"])].copy()
    cur["who"] = [
        f"u{int(u)}" if u == u and u is not None else f"x{a}" for u, a in zip(cur["user_id"], cur["annotator"])
    ]
    decided = cur.groupby("task_id")["who"].nunique().reindex(tasks["id"]).fillna(0).astype(int).to_numpy()
    tasks = tasks.assign(decided=decided, filled=[min(d, r) for d, r in zip(decided, tasks["required"])])
    strata = tasks.groupby("stratum").agg(
        tasks=("id", "size"),
        needed=("required", "sum"),
        done=("status", lambda s: int((s == "done").sum())),
        filled=("filled", "sum"),
    )
    assert ((tasks["status"] == "done") == (tasks["decided"] >= tasks["required"])).all()
    cur = cur.merge(tasks[["id", "stratum"]], left_on="task_id", right_on="id")
    per = cur.groupby(["who", "stratum"]).agg(decided=("task_id", "size"), seconds=("seconds", "sum"))
    return strata.sort_index(), per.sort_index()


def _stored(eng, plan_id: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    with eng.connect() as conn:
        strata = pd.DataFrame(
            conn.execute(
                text("SELECT stratum, tasks, needed, done, filled FROM plan_stratum_count WHERE plan_id = :p"),
                {"p": plan_id},
            ).all(),
            columns=["stratum", "tasks", "needed", "done", "filled"],
        ).set_index("stratum")
        per = pd.DataFrame(
            conn.execute(
                text(
                    "SELECT user_id, annotator, stratum, decided, seconds FROM plan_annotator_count WHERE plan_id = :p "
                    "AND decided <> 0"
                ),
                {"p": plan_id},
            ).all(),
            columns=["user_id", "annotator", "stratum", "decided", "seconds"],
        )
    per["who"] = [f"u{u}" if u else f"x{a}" for u, a in zip(per["user_id"], per["annotator"])]
    return strata.sort_index(), per.set_index(["who", "stratum"])[["decided", "seconds"]].sort_index()


def assert_counters_match(eng, plan_id: int) -> None:
    want_s, want_a = _recount(eng, plan_id)
    got_s, got_a = _stored(eng, plan_id)
    assert got_s.astype(int).to_dict("index") == want_s.astype(int).to_dict("index")
    assert got_a["decided"].astype(int).to_dict() == want_a["decided"].astype(int).to_dict()
    assert got_a["seconds"].astype(float).to_dict() == pytest.approx(want_a["seconds"].astype(float).to_dict())
    report = doctor(eng)
    assert report["ok"], [c for c in report["checks"] if not c["ok"]]


@pytest.fixture
def project(any_db_url):
    eng = get_engine(any_db_url)
    simulate_into(eng, seed=3, scale="small")
    with write_tx(eng) as conn:
        users = {
            name: Principal(ensure_user(conn, username=name, role=role), name, role)
            for name, role in (("lead", "lead"), ("ann1", "annotator"), ("ann2", "annotator"), ("ann3", "annotator"))
        }
    return eng, users


def test_counters_follow_claim_decide_skip_undo(project):
    """Every queue action keeps the counters equal to a recount (and doctor says ok)."""
    eng, u = project
    plan = S.create_plan(
        eng, u["lead"], judge_a="judge_a", judge_b="judge_b", seed=4, audit=12, overlap_fraction=0.5
    ).plan_id
    assert_counters_match(eng, plan)
    seconds = iter(range(1, 10_000))
    for k in range(30):
        who = u[f"ann{1 + k % 3}"]
        item = S.claim_next(eng, who, plan)
        if k % 7 == 3:
            S.skip(eng, who, item.task_id)
            continue
        choice = ("A", "B", "neither")[k % 3]
        S.decide(
            eng,
            who,
            item.task_id,
            choice,
            note="both miss it" if choice == "neither" else "",
            seconds=next(seconds),
            shown=item.shown,
        )
        if k % 5 == 4:
            S.undo_last(eng, who, plan)
            if k % 10 == 9:  # decide the item again after the undo
                again = S.claim_next(eng, who, plan)
                S.decide(eng, who, again.task_id, "A", seconds=next(seconds), shown=again.shown)
    assert_counters_match(eng, plan)
    pr = S.plan_progress(eng, u["ann1"], plan)
    want_s, want_a = _recount(eng, plan)
    assert (pr.tasks, pr.done, pr.needed, pr.filled) == tuple(
        int(want_s[c].sum()) for c in ("tasks", "done", "needed", "filled")
    )
    assert pr.mine == int(want_a.loc[f"u{u['ann1'].user_id}", "decided"].sum())
    mine = S.my_progress(eng, u["ann2"], plan)
    assert mine.decided == int(want_a.loc[f"u{u['ann2'].user_id}", "decided"].sum())
    assert mine.mean_seconds == pytest.approx(want_a.loc[f"u{u['ann2'].user_id}", "seconds"].sum() / mine.decided)
    assert mine.strata["tasks"].sum() == pr.tasks and mine.strata["mine"].sum() == mine.decided
    assert S.list_plans(eng, u["ann1"]).set_index("id").loc[plan, ["tasks", "done"]].tolist() == [pr.tasks, pr.done]


def test_migration_backfills_the_counters(project):
    """Plans stored before the counters existed get them from the upgrade."""
    from alembic import command

    from db.engine import alembic_config, upgrade

    eng, u = project
    plan = S.create_plan(eng, u["lead"], judge_a="judge_a", judge_b="judge_b", seed=2, overlap_fraction=0.3).plan_id
    for k in range(12):
        who = u[f"ann{1 + k % 2}"]
        item = S.claim_next(eng, who, plan)
        S.decide(eng, who, item.task_id, "AB"[k % 2], seconds=k + 1)
    S.undo_last(eng, u["ann1"], plan)
    before = _stored(eng, plan)
    command.downgrade(alembic_config(eng), "0003_queue_decisions")  # drops the counter tables
    upgrade(eng)
    after = _stored(eng, plan)
    pd.testing.assert_frame_equal(after[0], before[0])
    pd.testing.assert_frame_equal(after[1], before[1])
    assert_counters_match(eng, plan)


def test_doctor_notices_a_counter_that_drifted(project):
    eng, u = project
    plan = S.create_plan(eng, u["lead"], judge_a="judge_a", judge_b="judge_b", seed=2).plan_id
    with eng.begin() as conn:
        conn.execute(
            text(
                "UPDATE plan_stratum_count SET done = done + 1 WHERE plan_id = :p "
                "AND id = (SELECT MIN(id) FROM plan_stratum_count)"
            ),
            {"p": plan},
        )
        assert repo.counter_mismatches(conn) == 2  # the stored row lacks a recount twin, and vice versa
    bad = [c["check"] for c in doctor(eng)["checks"] if not c["ok"]]
    assert bad == ["progress counters"]


def test_a_first_decision_against_the_reference_asks_a_second_annotator(project):
    """Default design (second opinions): an audit whose first annotator says both judges are
    wrong, and a disagreement decided for the plan's judge B, go back to the queue needing a
    second, different annotator (required 1 → 2 and the plan's "needed" +1, in the decision's
    transaction); a confirming decision closes its task at one; undoing the first opinion takes
    the request back. The counters equal a recount throughout."""
    from reform_core.services.adjudication.planning import create_cluster_plan

    eng, u = project
    plan = create_cluster_plan(
        eng, u["lead"], judge_a="judge_a", judge_b="judge_b", seed=4, double_fraction=0.0
    ).plan_id
    with eng.connect() as conn:
        tasks = repo.plan_tasks(conn, plan_id=plan).set_index("id")
    assert set(tasks["required"]) == {1}

    def required(task_id: int) -> int:
        with eng.connect() as conn:
            return int(
                conn.execute(text("SELECT required FROM adjudication_task WHERE id = :t"), {"t": task_id}).scalar()
            )

    def shown(task_id: int, plan_side: str) -> str:  # the side as shown (tasks keep a random left/right order)
        return plan_side if tasks.loc[task_id, "a_left"] == "A" else {"A": "B", "B": "A"}[plan_side]

    firsts: dict[str, int] = {}
    for _ in range(3 * len(tasks)):
        item = S.claim_next(eng, u["ann1"], plan)
        kind = tasks.loc[item.task_id, "kind"]
        want = kind if kind not in firsts else ("confirm" if "confirm" not in firsts else None)
        if want is None:
            S.skip(eng, u["ann1"], item.task_id)
            continue
        choice = {"audit": "neither", "disagreement": shown(item.task_id, "B"), "confirm": shown(item.task_id, "A")}[
            want
        ]
        note = "both judges are wrong" if choice == "neither" else ""
        done = S.decide(eng, u["ann1"], item.task_id, choice, note=note, seconds=5.0, shown=item.shown).task_done
        firsts[want] = item.task_id
        assert done is (want == "confirm") and required(item.task_id) == (1 if want == "confirm" else 2), want
        assert_counters_match(eng, plan)
        if want == "audit":  # undo takes the request back; deciding again makes it again
            assert S.undo_last(eng, u["ann1"], plan).task_id == item.task_id
            assert required(item.task_id) == 1
            assert_counters_match(eng, plan)
            again = S.claim_next(eng, u["ann1"], plan)  # the undone item comes back to its annotator
            assert again.task_id == item.task_id
            S.decide(eng, u["ann1"], again.task_id, "neither", note=note, seconds=6.0, shown=again.shown)
            assert required(item.task_id) == 2
        if len(firsts) == 3:
            break
    assert set(firsts) == {"audit", "disagreement", "confirm"}, firsts
    # the second opinions go to another annotator, who closes them
    pending = {firsts["audit"], firsts["disagreement"]}
    for _ in range(3 * len(tasks)):
        item = S.claim_next(eng, u["ann2"], plan)
        if item is None or not pending:
            break
        if item.task_id in pending:
            assert S.decide(
                eng, u["ann2"], item.task_id, shown(item.task_id, "A"), seconds=4.0, shown=item.shown
            ).task_done
            pending.discard(item.task_id)
        else:
            S.skip(eng, u["ann2"], item.task_id)
    assert not pending
    assert_counters_match(eng, plan)


def test_an_audit_whose_first_two_annotators_find_the_judges_wrong_asks_a_third(project):
    """Default design (``audit_opinions = 3``): an audit decided "neither" by its first and by
    its second annotator goes back to the queue for a third (required 2 → 3 in the second
    decision's transaction); undoing that second opinion takes the request back (3 → 2); the
    third annotator's decision closes the task. The counters equal a recount throughout."""
    from reform_core.services.adjudication.planning import create_cluster_plan

    eng, u = project
    plan = create_cluster_plan(
        eng, u["lead"], judge_a="judge_a", judge_b="judge_b", seed=4, double_fraction=0.0
    ).plan_id

    def required(task_id: int) -> int:
        with eng.connect() as conn:
            return int(
                conn.execute(text("SELECT required FROM adjudication_task WHERE id = :t"), {"t": task_id}).scalar()
            )

    with eng.connect() as conn:
        tasks = repo.plan_tasks(conn, plan_id=plan).set_index("id")
    audit = None
    for _ in range(len(tasks)):
        item = S.claim_next(eng, u["ann1"], plan)
        if tasks.loc[item.task_id, "kind"] == "audit":
            audit = item
            break
        S.skip(eng, u["ann1"], item.task_id)
    assert audit is not None
    note = "both judges are wrong"
    assert not S.decide(eng, u["ann1"], audit.task_id, "neither", note=note, seconds=5.0, shown=audit.shown).task_done
    assert required(audit.task_id) == 2

    def take(who: str):
        for _ in range(2 * len(tasks)):
            got = S.claim_next(eng, u[who], plan)
            if got.task_id == audit.task_id:
                return got
            S.skip(eng, u[who], got.task_id)
        raise AssertionError(f"{who} never received the audit")

    second = take("ann2")
    assert not S.decide(eng, u["ann2"], second.task_id, "neither", note=note, seconds=5.0, shown=second.shown).task_done
    assert required(audit.task_id) == 3
    assert_counters_match(eng, plan)
    assert S.undo_last(eng, u["ann2"], plan).task_id == audit.task_id  # the request is taken back
    assert required(audit.task_id) == 2
    assert_counters_match(eng, plan)
    again = S.claim_next(eng, u["ann2"], plan)
    assert again.task_id == audit.task_id
    assert not S.decide(eng, u["ann2"], again.task_id, "neither", note=note, seconds=6.0, shown=again.shown).task_done
    assert required(audit.task_id) == 3
    third = take("ann3")
    shown_a = "A" if tasks.loc[audit.task_id, "a_left"] == "A" else "B"
    assert S.decide(eng, u["ann3"], third.task_id, shown_a, seconds=4.0, shown=third.shown).task_done
    assert required(audit.task_id) == 3
    assert_counters_match(eng, plan)
