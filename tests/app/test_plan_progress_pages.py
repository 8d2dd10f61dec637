"""Scores and Sampling pages on a plan part-way (AppTest on the demo; issues 34 and 36): the
Scores page says "in progress" with the counts per model; the Scores page, the Sampling page and
``score --json`` show the same verdict (one number); a lead extends and closes a plan from the
Sampling page, and the verdict then says it was closed and why."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _page(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def _verdict(at, prefix: str = "") -> str:
    shown = [x.value.replace("\\", "") for x in (*at.success, *at.warning)]  # Markdown-escaped
    found = [
        x
        for x in shown
        if x.startswith(prefix) and any(k in x for k in ("Not yet", "Precise enough", "In progress:", "Closed on"))
    ]
    assert len(found) == 1, found
    return found[0].removeprefix(prefix)


def _task_counts(url: str, plan: str) -> dict:
    from reform_core.services.platform.uow import get_engine

    with get_engine(url).connect() as conn:
        rows = conn.execute(
            text(
                "SELECT m.name, COUNT(*), SUM(CASE WHEN t.decided >= t.required THEN 1 ELSE 0 END), "
                "SUM(CASE WHEN t.decided > 0 AND t.decided < t.required THEN 1 ELSE 0 END) FROM adjudication_task t "
                "JOIN sample_plan p ON p.id = t.plan_id JOIN response r ON r.id = t.response_id "
                "JOIN eval_model m ON m.id = r.model_id WHERE p.name = :n GROUP BY m.name"
            ),
            {"n": plan},
        ).all()
    return {m: (int(n), int(d), int(w)) for m, n, d, w in rows}


def test_scores_in_progress_with_counts_and_one_verdict_everywhere(demo_db):
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.platform.uow import get_engine
    from reform_core.services.scoring.scoring import score, score_json

    scores = _page("pages/scores.py")
    note = next(w.value for w in scores.warning if w.value.startswith("In progress")).replace("\\", "")  # escaped names
    counts = _task_counts(demo_db, "demo queue")
    assert 0 < sum(d for _, d, _ in counts.values()) < sum(n for n, _, _ in counts.values())  # the demo is part-way
    for model, (n, d, w) in counts.items():
        assert f"{model}: {d:,} of {n:,} tasks decided, {w:,} item(s) awaiting another opinion" in note
    on_scores = _verdict(scores, "Planner's verdict — ")
    sampling = _page("pages/sampling.py")
    on_sampling = _verdict(sampling)
    eng = get_engine(demo_db)
    cli = score_json(score(eng, local_principal(eng)))["verdict"]
    assert on_scores == on_sampling == cli["message"]
    worst = max(v for v in cli["models"].values() if v is not None)
    assert f"±{worst:.2f} pp" in on_scores  # the largest half-width, the same number on both pages
    prog = next(d.value for d in sampling.dataframe if "decisions still needed" in d.value.columns)
    assert {"tasks_decided", "tasks_planned", "awaiting_opinion"} <= set(prog.columns)


def test_a_lead_extends_then_closes_a_plan_on_the_sampling_page(demo_db):
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication.planning import create_cluster_plan
    from reform_core.services.platform.uow import get_engine

    eng = get_engine(demo_db)
    made = create_cluster_plan(
        eng, local_principal(eng), judge_a="gpt-judge", judge_b="gemini-judge", margin=0.2, name="pilot"
    )
    at = _page("pages/sampling.py")
    assert at.selectbox[-1].format_func(at.selectbox[-1].value) == "pilot"
    at.number_input(key="plan_extend_questions").set_value(2)
    next(b for b in at.button if b.label == "Extend the plan").click().run()
    assert not at.exception, at.exception
    flash = next(s.value for s in at.success if s.value.startswith("Plan extended"))
    added = int(flash.split(": ")[1].split(" ")[0])
    assert added > 0 and sum(n for n, _, _ in _task_counts(demo_db, "pilot").values()) == made.tasks + added

    at.text_input(key="plan_close_reason").input("budget spent *for now*")
    next(b for b in at.button if b.label == "Close the plan").click().run()
    assert any("Tick the box" in w.value for w in at.warning)  # a close needs its confirmation
    at.checkbox(key="plan_close_sure").check()
    next(b for b in at.button if b.label == "Close the plan").click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Plan closed: ") for s in at.success)
    info = next(i.value for i in at.info if i.value.startswith("Closed on"))
    assert "budget spent \\*for now\\*" in info  # the reason is shown inertly (Markdown escaped)
    assert _verdict(at).startswith("Closed on")
    assert not any(b.label in ("Close the plan", "Extend the plan") for b in at.button)
