"""Queue semantics: leases, refusals, undo, append-only history, overlap, blinding, roles."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from db.repo.adjudication import ensure_user, write_tx
from reform_core.services.accounts.auth import AccessDenied, Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.instances import load_adjudications
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine


@pytest.fixture
def project(sqlite_url):
    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=11, scale="small")
    with write_tx(eng) as conn:
        users = {
            name: Principal(ensure_user(conn, username=name, role=role), name, role)
            for name, role in (("lead", "lead"), ("ann1", "annotator"), ("ann2", "annotator"), ("ana", "analyst"))
        }
    return eng, users


def _plan(eng, users, **kw):
    return S.create_plan(eng, users["lead"], judge_a="judge_a", judge_b="judge_b", seed=1, **kw).plan_id


def _rows(eng, sql, **params):
    with eng.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params).all()]


def test_claim_is_refresh_safe_and_exclusive(project):
    eng, u = project
    plan = _plan(eng, u)
    first = S.claim_next(eng, u["ann1"], plan)
    assert S.claim_next(eng, u["ann1"], plan).task_id == first.task_id  # a refresh gets the same item
    other = S.claim_next(eng, u["ann2"], plan)
    assert other.task_id != first.task_id
    ((status, by),) = _rows(eng, "SELECT status, claimed_by FROM adjudication_task WHERE id = :t", t=first.task_id)
    assert (status, by) == ("claimed", u["ann1"].user_id)


def test_expired_lease_goes_to_someone_else_and_late_decision_is_refused(project, monkeypatch):
    eng, u = project
    plan = _plan(eng, u)
    item = S.claim_next(eng, u["ann1"], plan, lease_seconds=60)
    later = S._now() + timedelta(seconds=61)
    monkeypatch.setattr(S, "_now", lambda: later)
    again = S.claim_next(eng, u["ann2"], plan)
    assert again.task_id == item.task_id  # the expired lease returned the item to the queue
    with pytest.raises(S.AdjudicationRefused, match="lease expired"):
        S.decide(eng, u["ann1"], item.task_id, "A")
    S.decide(eng, u["ann2"], item.task_id, "B", seconds=3)
    assert _rows(eng, "SELECT user_id FROM adjudication WHERE task_id = :t", t=item.task_id) == [(u["ann2"].user_id,)]
    with pytest.raises(S.AdjudicationRefused, match="already"):
        S.decide(eng, u["ann2"], item.task_id, "A")  # never counted twice


def test_decision_label_follows_the_shown_side(project):
    eng, u = project
    plan = _plan(eng, u)
    item = S.claim_next(eng, u["ann1"], plan)
    d = S.decide(eng, u["ann1"], item.task_id, "A", seconds=4.5)
    assert d.label == item.judge_a.label and d.task_done
    ((a_left, choice, label, seconds, user),) = _rows(
        eng,
        "SELECT t.a_left, d.choice, d.label, d.seconds, d.user_id FROM adjudication d "
        "JOIN adjudication_task t ON t.id = d.task_id WHERE d.id = :i",
        i=d.adjudication_id,
    )
    assert choice == a_left and label == item.judge_a.label and seconds == 4.5 and user == u["ann1"].user_id
    item2 = S.claim_next(eng, u["ann1"], plan)
    with pytest.raises(ValueError, match="note is required"):
        S.decide(eng, u["ann1"], item2.task_id, "neither")
    d2 = S.decide(eng, u["ann1"], item2.task_id, "neither", note="both rationales miss the table")
    assert d2.label is None
    with pytest.raises(ValueError, match="choice must be one of"):
        S.decide(eng, u["ann1"], item2.task_id, "left")


def test_items_are_blinded_and_both_sides_occur(project):
    eng, u = project
    plan = _plan(eng, u)
    with eng.connect() as conn:
        secret = [r[0] for r in conn.execute(text("SELECT name FROM judge UNION SELECT name FROM eval_model"))]
    lefts = _rows(eng, "SELECT DISTINCT a_left FROM adjudication_task WHERE plan_id = :p", p=plan)
    assert sorted(lefts) == [("A",), ("B",)]
    for _ in range(5):
        item = S.claim_next(eng, u["ann1"], plan)
        assert set(vars(item)) == {
            "task_id",
            "instruction",
            "constraint",
            "other_constraints",
            "response",
            "judge_a",
            "judge_b",
            "lease_until",
            "kind",
        }
        # every value but the response text itself (the simulator writes "Synthetic response of <model>")
        shown = repr([item.instruction, item.constraint, item.other_constraints, item.judge_a, item.judge_b])
        assert not any(s in shown for s in secret), shown
        assert item.constraint["text"] and item.constraint["acceptance"] and len(item.other_constraints) == 2
        # the judgment shown as Judge A is the plan's judge A exactly when a_left == 'A'
        ((a_left, resp, con),) = _rows(
            eng, "SELECT a_left, response_id, constraint_id FROM adjudication_task WHERE id = :t", t=item.task_id
        )
        labels = dict(
            _rows(
                eng,
                "SELECT j.name, g.label FROM judgment g JOIN judge j ON j.id = g.judge_id "
                "WHERE g.response_id = :r AND g.constraint_id = :c",
                r=resp,
                c=con,
            )
        )
        left_judge = "judge_a" if a_left == "A" else "judge_b"
        assert item.judge_a.label == labels[left_judge]
        S.decide(eng, u["ann1"], item.task_id, "B", seconds=1)


def test_undo_is_append_only_and_hands_the_item_back(project):
    eng, u = project
    plan = _plan(eng, u)
    item = S.claim_next(eng, u["ann1"], plan)
    d = S.decide(eng, u["ann1"], item.task_id, "A", seconds=2)
    before = _rows(eng, "SELECT * FROM adjudication WHERE id = :i", i=d.adjudication_id)
    undone = S.undo_last(eng, u["ann1"], plan)
    assert (undone.task_id, undone.choice) == (item.task_id, "A")  # what was undone, as it was shown
    assert _rows(eng, "SELECT * FROM adjudication WHERE id = :i", i=d.adjudication_id) == before  # untouched
    hist = _rows(eng, "SELECT choice, supersedes_id FROM adjudication WHERE task_id = :t ORDER BY id", t=item.task_id)
    assert hist == [(before[0][3], None), ("retracted", d.adjudication_id)]
    ((status, decided, by),) = _rows(
        eng, "SELECT status, decided, claimed_by FROM adjudication_task WHERE id = :t", t=item.task_id
    )
    assert (status, decided, by) == ("claimed", 0, u["ann1"].user_id)
    assert d.iid not in set(load_adjudications(eng, "judge_a", "judge_b")["iid"])
    assert S.claim_next(eng, u["ann1"], plan).task_id == item.task_id
    d2 = S.decide(eng, u["ann1"], item.task_id, "B", seconds=2)
    adj = load_adjudications(eng, "judge_a", "judge_b").set_index("iid")
    assert adj.loc[d.iid, "a"] == d2.label and adj.loc[d.iid, "adjudication_id"] == d2.adjudication_id
    assert len(_rows(eng, "SELECT id FROM adjudication WHERE task_id = :t", t=item.task_id)) == 3
    assert S.undo_last(eng, u["ann2"], plan) is None  # nothing of ann2's to undo


def test_overlap_needs_two_distinct_annotators(project):
    eng, u = project
    plan = _plan(eng, u, overlap_fraction=1.0)
    item = S.claim_next(eng, u["ann1"], plan)
    assert not S.decide(eng, u["ann1"], item.task_id, "A").task_done
    assert S.claim_next(eng, u["ann1"], plan).task_id != item.task_id  # never the same item twice
    with pytest.raises(S.AdjudicationRefused, match="already decided"):
        S.decide(eng, u["ann1"], item.task_id, "B")
    second = S.claim_next(eng, u["ann2"], plan)
    assert second.task_id == item.task_id  # first in queue order and free again
    assert S.decide(eng, u["ann2"], item.task_id, "B").task_done
    assert _rows(eng, "SELECT status, decided, required FROM adjudication_task WHERE id = :t", t=item.task_id) == [
        ("done", 2, 2)
    ]


def test_skip_moves_the_item_to_the_end_and_release_keeps_its_place(project):
    eng, u = project
    plan = _plan(eng, u)
    item = S.claim_next(eng, u["ann1"], plan)
    S.skip(eng, u["ann1"], item.task_id)
    ((key,),) = _rows(eng, "SELECT order_key FROM adjudication_task WHERE id = :t", t=item.task_id)
    ((top,),) = _rows(eng, "SELECT MAX(order_key) FROM adjudication_task WHERE plan_id = :p", p=plan)
    assert key == top
    nxt = S.claim_next(eng, u["ann1"], plan)
    assert nxt.task_id != item.task_id
    S.release(eng, u["ann1"], nxt.task_id)
    assert S.claim_next(eng, u["ann2"], plan).task_id == nxt.task_id
    with pytest.raises(S.AdjudicationRefused, match="not held by you"):
        S.skip(eng, u["ann1"], nxt.task_id)


def test_roles_are_enforced_server_side(project):
    eng, u = project
    plan = _plan(eng, u)
    with pytest.raises(AccessDenied):
        S.create_plan(eng, u["ann1"], judge_a="judge_a", judge_b="judge_b")
    with pytest.raises(AccessDenied):
        S.preview_plan(eng, u["ann1"], judge_a="judge_a", judge_b="judge_b")
    with pytest.raises(AccessDenied):
        S.plan_summary(eng, u["ann1"], plan)
    with pytest.raises(AccessDenied):
        S.claim_next(eng, u["ana"], plan)  # analysts do not adjudicate
    with pytest.raises(AccessDenied):
        S.claim_next(eng, None, plan)
    assert "judge_a" not in S.list_plans(eng, u["ann1"]).columns  # annotators don't see judge names
    progress = S.my_progress(eng, u["ann1"], plan)
    with eng.connect() as conn:
        models = [r[0] for r in conn.execute(text("SELECT name FROM eval_model"))]
    assert not any(m in s for s in progress.strata["stratum"] for m in models)
