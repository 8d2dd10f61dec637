"""Scores page after a new decision (issue 16): the points include the decision at once (the
kept state is rescored), the previous intervals stay on screen marked "updating" while the new
ones are computed in the background, and the next rerun after that shows them fresh."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from tests.app.conftest import app_database
from tests.app.shown import assert_rounded, bounds

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def fresh_demo(tmp_path):
    with app_database(f"sqlite:///{tmp_path / 'app.db'}", load_demo=True) as url:
        yield url


def test_new_decision_updates_points_now_and_intervals_in_the_background(fresh_demo, monkeypatch):
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.platform.uow import get_engine
    from reform_core.services.project import explore
    from reform_core.services.project.setup import DEMO_PLAN
    from reform_core.services.scoring import scoring

    gate, calls = threading.Event(), []
    real = explore.score_intervals

    def gated(principal, result, **kw):
        calls.append(result)
        if len(calls) > 1:  # the recomputation after the decision waits for the test
            assert gate.wait(60)
        return real(principal, result, **kw)

    monkeypatch.setattr(explore, "score_intervals", gated)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/scores.py").run()
    assert not at.exception, at.exception
    before = at.dataframe[0].value.set_index("model")
    assert not any("Intervals updating" in c.value for c in at.caption)

    eng = get_engine(fresh_demo)
    lead = local_principal(eng)
    exact_before = scoring.score(eng, lead).tables["table2"].set_index("model")
    with eng.connect() as conn:
        plan = conn.execute(text("SELECT id FROM sample_plan WHERE name = :n"), {"n": DEMO_PLAN}).scalar()
    for k in range(20):
        item = S.claim_next(eng, lead, plan)
        S.decide(eng, lead, item.task_id, "AB"[k % 2], seconds=1)
    expected = scoring.score(eng, lead).tables["table2"].set_index("model")

    at.run()
    assert not at.exception, at.exception
    now = at.dataframe[0].value.set_index("model")
    for model in expected.index:  # the points are current right away
        assert_rounded(now.loc[model, "TCPR"], expected.loc[model, "tcpr"], now.loc[model, "TCPR measurement"])
    # the decisions moved some score (the page shows each to the places its interval supports, which
    # 20 decisions need not change: the exact estimates did move, and the page shows the new ones)
    assert not exact_before["tcpr"].equals(expected["tcpr"]), "the decisions moved some score"
    assert any("Intervals updating" in c.value for c in at.caption)
    assert now["TCPR measurement"].tolist() == before["TCPR measurement"].tolist(), (
        "the last intervals, marked updating"
    )

    gate.set()
    from pages.components import state

    assert state.score_cache().wait_intervals(eng, calibration="cluster")  # the page's default estimator
    at.run()
    assert not any("Intervals updating" in c.value for c in at.caption)
    done = at.dataframe[0].value.set_index("model")
    assert done["TCPR measurement"].tolist() != before["TCPR measurement"].tolist()
    for model, r in done.iterrows():
        lo, hi = bounds(r["TCPR measurement"])
        assert lo <= r["TCPR"] <= hi


def test_a_decision_recomputes_the_auxiliary_analyses_but_not_a4_and_table4(fresh_demo, monkeypatch):
    """A4 coverage and Table 4 read neither judgments nor decisions: after a decision the Scores
    page recomputes the decision-dependent analyses only (issue 16: Table 4's bootstrap was
    most of the page's time after a decision)."""
    from pages.components import analyses_view
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.platform.uow import get_engine
    from reform_core.services.project.setup import DEMO_PLAN

    calls = {"static": 0, "all": 0}
    real_static, real_all = analyses_view.static_analyses, analyses_view.analyses

    def static(*a, **kw):
        calls["static"] += 1
        return real_static(*a, **kw)

    def everything(*a, **kw):
        calls["all"] += 1
        assert kw.get("static") is not None, "the page passes its kept static part"
        return real_all(*a, **kw)

    monkeypatch.setattr(analyses_view, "static_analyses", static)
    monkeypatch.setattr(analyses_view, "analyses", everything)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/scores.py").run()
    assert not at.exception, at.exception
    before = [d.value for d in at.dataframe if "coverage %" in d.value.columns]
    assert before and calls == {"static": 1, "all": 1}
    eng = get_engine(fresh_demo)
    lead = local_principal(eng)
    with eng.connect() as conn:
        plan = conn.execute(text("SELECT id FROM sample_plan WHERE name = :n"), {"n": DEMO_PLAN}).scalar()
    item = S.claim_next(eng, lead, plan)
    S.decide(eng, lead, item.task_id, "A", seconds=1)
    at.run()
    assert not at.exception, at.exception
    # the decision-dependent analyses are recomputed in the background, the last ones shown meanwhile
    assert any("Auxiliary analyses updating" in c.value for c in at.caption)
    import time

    deadline = time.monotonic() + 120
    while analyses_view._refreshers()((str(eng.url), "pooled", None)).busy():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    at.run()
    assert not any("Auxiliary analyses updating" in c.value for c in at.caption)
    assert calls == {"static": 1, "all": 2}
    after = [d.value for d in at.dataframe if "coverage %" in d.value.columns]
    assert after[0].equals(before[0])
