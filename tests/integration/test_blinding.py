"""Blinding of annotators beyond the queue items (issue 15 item 7): the Overview showed them
judge and model names with agreement rates, and plan names such as "gpt vs gemini #1"
(the default plan name is "<A> vs <B> #k") named the judges of the items they decide."""

from __future__ import annotations

import pytest

from db.repo.adjudication import ensure_user, write_tx
from reform_core.services import adjudication as S
from reform_core.services.auth import Principal
from reform_core.services.data import simulate_into
from reform_core.services.overview import overview
from reform_core.services.uow import get_engine


@pytest.fixture
def project(sqlite_url):
    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=11, scale="small")
    with write_tx(eng) as conn:
        users = {name: Principal(ensure_user(conn, username=name, role=role), name, role)
                 for name, role in (("lead", "lead"), ("ann1", "annotator"), ("ana", "analyst"))}
    default = S.create_plan(eng, users["lead"], judge_a="judge_a", judge_b="judge_b", seed=1)
    named = S.create_plan(eng, users["lead"], judge_a="judge_b", judge_b="judge_a", seed=2, name="judge_b first")
    return eng, users, (default, named)


def _names(eng) -> set[str]:
    from sqlalchemy import text

    with eng.connect() as conn:
        return {r[0] for r in conn.execute(text("SELECT name FROM judge UNION SELECT name FROM eval_model"))}


def test_annotators_see_no_judge_names_in_plans_or_on_the_overview(project):
    eng, u, (default, named) = project
    assert default.name == "judge_a vs judge_b #1"  # what a lead's default plan name says

    plans = S.list_plans(eng, u["ann1"])
    assert list(plans["name"]) == [f"Plan {default.plan_id}", f"Plan {named.plan_id}"]
    assert "judge_a" not in plans.columns

    ov = overview(eng, u["ann1"])
    assert ov.agreement is None, "judge agreement per model and judge pair is not for annotators"
    assert list(ov.progress["plan"]) == [f"Plan {default.plan_id}", f"Plan {named.plan_id}"]
    shown = " ".join(str(v) for frame in (ov.progress, ov.tasks) for v in frame.to_numpy().ravel())
    assert not [n for n in _names(eng) if n in shown], shown
    assert ov.progress[["tasks", "done", "claimed"]].dtypes.map(lambda d: d.kind == "i").all()


@pytest.mark.parametrize("who", ["lead", "ana"])
def test_leads_and_analysts_still_see_judges_and_plan_names(project, who):
    eng, u, (default, named) = project
    ov = overview(eng, u[who])
    assert set(ov.agreement["judge_a"]) | set(ov.agreement["judge_b"]) == {"judge_a", "judge_b"}
    assert list(ov.progress["plan"]) == [default.name, named.name]
    if who == "lead":
        assert list(S.list_plans(eng, u[who])["name"]) == [default.name, named.name]
