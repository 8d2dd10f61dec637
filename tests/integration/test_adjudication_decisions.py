"""Decisions keep what the annotator was shown, and concurrent undos withdraw once
(issue 15, items 8 and 10), on SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from db.repo.adjudication import ensure_user, write_tx
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.instances import load_adjudications
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine


@pytest.fixture
def project(any_db_url):
    eng = get_engine(any_db_url)
    simulate_into(eng, seed=11, scale="small")
    with write_tx(eng) as conn:
        users = {
            name: Principal(ensure_user(conn, username=name, role=role), name, role)
            for name, role in (("lead", "lead"), ("ann1", "annotator"), ("ann2", "annotator"))
        }
    plan = S.create_plan(eng, users["lead"], judge_a="judge_a", judge_b="judge_b", seed=1).plan_id
    return eng, users, plan


def _rerun_judges(eng, task_id: int) -> None:
    """A judge re-run while the item is on screen: both judges get a newer judgment (new prompt
    version) of the item with the opposite label."""
    with write_tx(eng) as conn:
        r, c = conn.execute(
            text("SELECT response_id, constraint_id FROM adjudication_task WHERE id = :t"), {"t": task_id}
        ).one()
        old = conn.execute(
            text("SELECT judge_id, label FROM judgment WHERE response_id = :r AND constraint_id = :c"), {"r": r, "c": c}
        ).all()
        for judge_id, label in old:
            conn.execute(
                text(
                    "INSERT INTO judgment (judge_id, response_id, constraint_id, label, rationale, status, "
                    "error, prompt_version, input_tokens, output_tokens, cost_usd, created_at) VALUES "
                    "(:j, :r, :c, :l, 'v2', 'ok', '', 'v2', 0, 0, 0, CURRENT_TIMESTAMP)"
                ),
                {"j": judge_id, "r": r, "c": c, "l": 1 - int(label)},
            )


def test_decision_keeps_the_judgments_that_were_shown(project):
    """Issue 15 item 8: decide() used the judges' *newest* judgment; after a re-run during the
    item's display, "Judge A" stored the opposite label. Now the shown ids are stored and the
    label comes from them."""
    eng, u, plan = project
    item = S.claim_next(eng, u["ann1"], plan)
    _rerun_judges(eng, item.task_id)
    d = S.decide(eng, u["ann1"], item.task_id, "A", seconds=2, shown=item.shown)
    assert d.label == item.judge_a.label
    with eng.connect() as conn:
        a_left, label, ja, jb = conn.execute(
            text(
                "SELECT t.a_left, d.label, d.judgment_a_id, d.judgment_b_id FROM adjudication d "
                "JOIN adjudication_task t ON t.id = d.task_id WHERE d.id = :i"
            ),
            {"i": d.adjudication_id},
        ).one()
    left_right = (ja, jb) if a_left == "A" else (jb, ja)
    assert left_right == item.shown and label == item.judge_a.label
    assert load_adjudications(eng, "judge_a", "judge_b").set_index("iid").loc[d.iid, "a"] == item.judge_a.label
    # ids that do not belong to the item are refused
    other = S.claim_next(eng, u["ann1"], plan)
    with pytest.raises(ValueError, match="not one of this item's judgments"):
        S.decide(eng, u["ann1"], other.task_id, "B", shown=item.shown)


def test_two_simultaneous_undos_withdraw_once(project):
    """Issue 15 item 10: two undos at once (double click, two tabs) on PostgreSQL both
    retracted the same decision. Now the task row is locked and the decision re-read."""
    eng, u, plan = project
    for _ in range(10):  # each round: ann1's only current decision, then two undos at once
        item = S.claim_next(eng, u["ann1"], plan)
        d = S.decide(eng, u["ann1"], item.task_id, "B", seconds=1)
        barrier = threading.Barrier(2)
        results = []

        def undo():
            barrier.wait()
            results.append(S.undo_last(eng, u["ann1"], plan))

        threads = [threading.Thread(target=undo) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with eng.connect() as conn:
            n = conn.execute(
                text("SELECT COUNT(*) FROM adjudication WHERE supersedes_id = :i"), {"i": d.adjudication_id}
            ).scalar_one()
            status, decided = conn.execute(
                text("SELECT status, decided FROM adjudication_task WHERE id = :t"), {"t": item.task_id}
            ).one()
        assert n == 1, f"decision {d.adjudication_id} withdrawn {n} times"
        assert sorted(r is None for r in results) == [False, True]
        assert (status, decided) == ("claimed", 0)  # back with ann1, who now has no decision at all


def test_other_plans_decision_count_is_the_current_decisions_of_the_other_plans(project):
    """``current_decision_count`` (issue 16: counted in SQL after every decision) agrees with the
    literal rule — the current decisions (not superseded, not retracted) of the pair's plans other
    than this one — with decisions, an undo and a plan of the pair in the other order."""
    from db.repo.adjudication import adjudication_rows, current_decision_count
    from reform_core.services.data.instances import current_decisions

    eng, u, plan = project
    second = S.create_plan(eng, u["lead"], judge_a="judge_a", judge_b="judge_b", seed=2, name="second").plan_id
    flipped = S.create_plan(eng, u["lead"], judge_a="judge_b", judge_b="judge_a", seed=3, name="flipped").plan_id
    for p, n in ((plan, 3), (second, 4), (flipped, 2)):
        for _ in range(n):
            item = S.claim_next(eng, u["ann1"], p)
            S.decide(eng, u["ann1"], item.task_id, "A")
    S.undo_last(eng, u["ann1"], second)  # a retraction supersedes one of the second plan's decisions
    with eng.connect() as conn:
        ids = dict(conn.execute(text("SELECT name, id FROM judge")).all())
        rows = adjudication_rows(conn, judge_a_id=ids["judge_a"], judge_b_id=ids["judge_b"])
        for mine in (plan, second, flipped):
            cur = current_decisions(rows)
            want = int((cur["plan_id"] != mine).sum())
            got = current_decision_count(conn, judge_a_id=ids["judge_a"], judge_b_id=ids["judge_b"], except_plan=mine)
            assert got == want
    assert want == 3 + 3  # except the flipped plan: the first plan's 3 and the second's 4 less the undone one
