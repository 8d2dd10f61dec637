"""The scored state behind the Scores page (issue 16): new decisions are applied to the kept
state (``scoring.rescore``) and give exactly what scoring from scratch gives; any other data
change rebuilds it; intervals are recomputed in the background and shown as not fresh
meanwhile; the cache keeps one state per labelling and a bounded number of labellings."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from db.repo.adjudication import ensure_user, write_tx
from reform_core.metrics import reform
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.services.project import explore
from reform_core.services.scoring import scoring
from reform_core.services.scoring.score_state import ScoreCache, split_version


@pytest.fixture
def project(sqlite_url):
    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=4, scale="small", adjudicate=3)
    with write_tx(eng) as conn:
        lead = Principal(ensure_user(conn, username="lead", role="lead"), "lead", "lead")
        ann = Principal(ensure_user(conn, username="ann", role="annotator"), "ann", "annotator")
    plan = S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=2).plan_id
    return eng, lead, ann, plan


def _decide(eng, ann, plan, n: int, start: int = 0) -> None:
    for k in range(n):
        item = S.claim_next(eng, ann, plan)
        S.decide(eng, ann, item.task_id, "AB"[(start + k) % 2], seconds=1)


def _same(a: scoring.ScoreResult, b: scoring.ScoreResult) -> None:
    assert set(a.tables) == set(b.tables)
    for name in a.tables:
        pd.testing.assert_frame_equal(
            a.tables[name].reset_index(drop=True),
            b.tables[name].reset_index(drop=True),
            check_dtype=False,
            rtol=1e-12,
            atol=1e-12,
            obj=name,
        )
    pd.testing.assert_frame_equal(a.models.reset_index(drop=True), b.models.reset_index(drop=True), check_dtype=False)
    cols = [c for c in ("iid", "p", "source", "provisional", "stratum") if c in b.instances]
    assert [c for c in ("iid", "p", "source", "provisional", "stratum") if c in a.instances] == cols
    x = a.instances[cols].sort_values("iid").reset_index(drop=True)
    y = b.instances[cols].sort_values("iid").reset_index(drop=True)
    strs = {c: str for c in ("source", "stratum") if c in cols}
    pd.testing.assert_frame_equal(x.astype(strs), y.astype(strs), check_dtype=False)
    assert (a.provisional, a.notes, a.messages, a.other_pair_decisions) == (
        b.provisional,
        b.notes,
        b.messages,
        b.other_pair_decisions,
    )
    if a.rates is not None:
        ra = a.rates.sort_values("stratum").reset_index(drop=True)
        rb = b.rates.sort_values("stratum").reset_index(drop=True)
        pd.testing.assert_frame_equal(ra, rb, check_dtype=False)


@pytest.mark.parametrize("calibration", ["stratified", "pooled"])
def test_rescore_equals_scoring_from_scratch(project, calibration):
    eng, lead, ann, plan = project
    before = scoring.score(eng, lead, calibration=calibration)
    _decide(eng, ann, plan, 6)
    S.undo_last(eng, ann, plan)  # a withdrawn decision is applied too
    _decide(eng, ann, plan, 3, start=1)
    adj = scoring.load_project(eng).adjudications
    fresh = scoring.score(eng, lead, calibration=calibration)
    again = scoring.rescore(eng, lead, before, adj)
    _same(again, fresh)
    assert not np.allclose(before.tables["table2"]["tcpr"], fresh.tables["table2"]["tcpr"]), "decisions changed scores"


@pytest.mark.parametrize("conditions", [("main",), ("main", "single")])
def test_rescore_of_the_default_estimator_equals_scoring_from_scratch(sqlite_url, conditions):
    """The default estimator after new decisions (kept stratified calibration, rows, unit
    index and the estimator's design arrays reused) gives what scoring from scratch gives,
    including with two annotators (the adjudicator-error model), a withdrawn decision and a
    second condition (scored by the stratified rule, whose decisions come from the imported ones)."""
    from reform_core.services.adjudication.planning import create_cluster_plan

    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=4, scale="small", adjudicate=3, conditions=conditions)
    with write_tx(eng) as conn:
        lead = Principal(ensure_user(conn, username="lead", role="lead"), "lead", "lead")
        ann = Principal(ensure_user(conn, username="ann", role="annotator"), "ann", "annotator")
        ann2 = Principal(ensure_user(conn, username="ann2", role="annotator"), "ann2", "annotator")
    plan = create_cluster_plan(
        eng, lead, judge_a="judge_a", judge_b="judge_b", seed=5, name="cluster plan", double_fraction=0.5
    ).plan_id
    _decide(eng, ann, plan, 12)
    before = scoring.score(eng, lead, calibration="cluster")
    assert before.method == "cluster" and before.stratified is not None
    _decide(eng, ann2, plan, 8, start=1)
    S.undo_last(eng, ann2, plan)
    _decide(eng, ann, plan, 5)
    adj = scoring.load_project(eng).adjudications
    fresh = scoring.score(eng, lead, calibration="cluster")
    again = scoring.rescore(eng, lead, before, adj)
    _same(again, fresh)
    assert again.index is before.index and again.estimate.index is before.index, "the kept index was reused"
    assert "cluster-layout" in before.index.memo, "the estimator's design arrays are kept with the index"
    for name in ("table", "both_wrong", "annotators", "progress", "totals"):
        pd.testing.assert_frame_equal(getattr(again.estimate, name), getattr(fresh.estimate, name), obj=name)
    assert again.estimate.notes == fresh.estimate.notes
    assert not np.allclose(before.estimate.table["tcpr"], fresh.estimate.table["tcpr"]), "decisions changed scores"
    # a second rescore from the rescored state (the Scores page's chain of decisions)
    _decide(eng, ann, plan, 3)
    adj = scoring.load_project(eng).adjudications
    third = scoring.rescore(eng, lead, again, adj)
    _same(third, scoring.score(eng, lead, calibration="cluster"))
    # the plug-in tables come from the estimator's evaluation of its point estimates (the
    # predictions' evaluation patched on the observed clusters): the same as evaluating them anew
    assert again.estimate.estimate.evaluation is None, "handed to the tables once, not kept"
    for res in (fresh, third):
        main = res.instances[res.instances["condition"] == "main"]
        anew = reform.reform_tables(
            main, baseline=res.frames.baseline, adjudications=scoring.main_adjudications(res.frames), choice="choice"
        )
        for name in ("a2", "a3", "a5", "a6_a7", "a8"):
            pd.testing.assert_frame_equal(
                res.tables[name], anew[name], check_exact=False, rtol=1e-12, atol=1e-12, obj=name
            )


def test_rescore_of_a_raw_judge_keeps_its_labels(project):
    eng, lead, ann, plan = project
    before = scoring.score(eng, lead, judge="judge_b")
    _decide(eng, ann, plan, 4)
    _same(
        scoring.rescore(eng, lead, before, scoring.load_project(eng).adjudications),
        scoring.score(eng, lead, judge="judge_b"),
    )


def test_cache_applies_decisions_incrementally_and_rebuilds_on_other_changes(project):
    eng, lead, ann, plan = project
    cache = ScoreCache()
    v0 = explore.data_version(eng)
    r0 = cache.result(eng, lead, v0)
    assert cache.result(eng, lead, v0) is r0  # unchanged data: the same state
    _decide(eng, ann, plan, 5)
    v1 = explore.data_version(eng)
    assert split_version(v1)[0] == split_version(v0)[0] and v1 != v0
    r1 = cache.result(eng, lead, v1)
    assert cache.stats(eng) == {"rescored": 1, "rebuilt": 1}
    _same(r1, scoring.score(eng, lead, calibration="stratified"))
    assert r1.frames.instances is r0.frames.instances, "the instances are not loaded again"
    # a judgment is replaced (a re-run of the judge): the state is rebuilt from the database
    with eng.begin() as conn:
        jid = conn.execute(text("SELECT MIN(id) FROM judgment WHERE label IS NOT NULL")).scalar()
        cols = (
            "judge_id, response_id, constraint_id, prompt_version, rationale, status, error, raw, input_tokens, "
            "output_tokens, cost_usd, created_at"
        )
        conn.execute(
            text(f"CREATE TEMP TABLE j AS SELECT {cols}, 1 - label AS label FROM judgment WHERE id = :i"), {"i": jid}
        )
        conn.execute(text("DELETE FROM judgment WHERE id = :i"), {"i": jid})
        conn.execute(text(f"INSERT INTO judgment ({cols}, label) SELECT {cols}, label FROM j"))
    v2 = explore.data_version(eng)
    r2 = cache.result(eng, lead, v2)
    assert cache.stats(eng) == {"rescored": 1, "rebuilt": 2}
    _same(r2, scoring.score(eng, lead, calibration="stratified"))


def test_cache_is_bounded(project):
    eng, lead, _, _ = project
    cache = ScoreCache(max_states=2)
    v = explore.data_version(eng)
    for calibration, judge in (("stratified", None), ("pooled", None), ("stratified", "judge_a"), ("stratified", None)):
        cache.result(eng, lead, v, calibration=calibration, judge=judge)
        assert cache.states() <= 2
    assert cache.stats(eng, "pooled") == {"rescored": 0, "rebuilt": 0}, "least recently used labelling dropped"


def test_intervals_are_recomputed_in_the_background(project):
    eng, lead, ann, plan = project
    cache = ScoreCache()
    gate = threading.Event()
    calls = []

    def fn(result):
        calls.append(result)
        if len(calls) > 1:
            assert gate.wait(30)
        return explore.score_intervals(lead, result, n_boot=50)

    v0 = explore.data_version(eng)
    first = cache.intervals(eng, lead, v0, fn)
    assert first.fresh and first.frame is not None  # the first ones: computed in the call
    pd.testing.assert_frame_equal(first.frame, explore.score_intervals(lead, cache.result(eng, lead, v0), n_boot=50))
    _decide(eng, ann, plan, 4)
    v1 = explore.data_version(eng)
    stale = cache.intervals(eng, lead, v1, fn)
    assert not stale.fresh and stale.frame is first.frame, "the last intervals while the new ones are computed"
    assert cache.intervals(eng, lead, v1, fn).fresh is False and len(calls) == 2, "one computation at a time"
    gate.set()
    assert cache.wait_intervals(eng)
    done = cache.intervals(eng, lead, v1, fn)
    assert done.fresh
    pd.testing.assert_frame_equal(
        done.frame, explore.score_intervals(lead, scoring.score(eng, lead, calibration="stratified"), n_boot=50)
    )
    assert not done.frame.equals(first.frame)


def test_looking_does_not_start_the_recomputation_start_intervals_does(project):
    """The Scores page looks at the intervals first (``start=False``) and starts their
    recomputation at its end (``start_intervals``), so the thread does not compete with its rerun."""
    eng, lead, ann, plan = project
    cache = ScoreCache()
    calls = []

    def fn(result):
        calls.append(result)
        return explore.score_intervals(lead, result, n_boot=20)

    cache.intervals(eng, lead, explore.data_version(eng), fn)
    assert len(calls) == 1
    _decide(eng, ann, plan, 2)
    v1 = explore.data_version(eng)
    assert cache.intervals(eng, lead, v1, fn, start=False).fresh is False
    assert cache.wait_intervals(eng) and len(calls) == 1, "a look starts nothing"
    cache.start_intervals(eng, fn)
    assert cache.wait_intervals(eng) and len(calls) == 2
    assert calls[-1] is cache.result(eng, lead, v1), "the state just shown is the one recomputed"
    assert cache.intervals(eng, lead, v1, fn, start=False).fresh
    cache.start_intervals(eng, fn)  # fresh: nothing to do
    assert cache.wait_intervals(eng) and len(calls) == 2


def test_interval_errors_are_reported(project):
    eng, lead, _, _ = project

    def broken(_result):
        raise ValueError("no eligible questions")

    out = ScoreCache().intervals(eng, lead, explore.data_version(eng), broken)
    assert out.frame is None and out.error == "no eligible questions"


def test_an_error_judgment_overwritten_in_place_changes_the_data_version(project):
    """A judge run retrying an errored pair updates its row in place (no new id, same count):
    the version must still change, or a cached score would outlive the row."""
    from sqlmodel import Session

    from db.repo.judging import upsert_judgments

    eng, lead, _, _ = project
    with eng.begin() as conn:
        row = conn.execute(
            text("SELECT id, judge_id, response_id, constraint_id, prompt_version FROM judgment ORDER BY id LIMIT 1")
        ).one()
        conn.execute(text("UPDATE judgment SET status = 'error', label = NULL WHERE id = :i"), {"i": row.id})
    cache = ScoreCache()
    v0 = explore.data_version(eng)
    cache.result(eng, lead, v0)
    with Session(eng) as s:
        upsert_judgments(
            s,
            rows=[
                {
                    "judge_id": row.judge_id,
                    "response_id": row.response_id,
                    "constraint_id": row.constraint_id,
                    "prompt_version": row.prompt_version,
                    "label": 1,
                    "rationale": "",
                    "status": "ok",
                    "error": "",
                    "raw": "",
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cost_usd": 0.0,
                }
            ],
        )
        s.commit()
    v1 = explore.data_version(eng)
    assert v1 != v0 and split_version(v1)[0] != split_version(v0)[0]
    _same(cache.result(eng, lead, v1), scoring.score(eng, lead, calibration="stratified"))
    assert cache.stats(eng)["rebuilt"] == 2
