"""Scores part-way, stopping and extending a plan (issue 36 items 4 and 6, issue 34 item 2), on
SQLite and PostgreSQL: a project scored part-way is provisional with the right counts and stops
being so once everything is decided; the verdict is one number (the Scores page's run) whatever
asks for it and counts the opinions still owed; ``plan-close`` withdraws the open tasks, refuses
later decisions and records its reason in the verdict and the export's manifest; ``plan-extend``
adds questions with earlier draws and decisions kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from db.repo.adjudication import ensure_user, plan_params, write_tx
from reform_core.estimators.design import Design
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.adjudication.planning import create_cluster_plan
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.services.scoring import estimates as E
from reform_core.services.scoring.scoring import score, score_json
from tests.integration.test_adjudication_progress import assert_counters_match

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "reform_core", *args], capture_output=True, text=True, cwd=REPO)
    assert (r.returncode == 0) == ok, r.stderr
    return r


@pytest.fixture
def project(any_db_url):
    eng = get_engine(any_db_url)
    simulate_into(eng, seed=5, scale="small")
    with write_tx(eng) as conn:
        users = {
            name: Principal(ensure_user(conn, username=name, role=role), name, role)
            for name, role in (("lead", "lead"), ("ann1", "annotator"), ("ann2", "annotator"))
        }
    return eng, any_db_url, users


def _decide(eng, users, plan_id: int, limit: int, who_decides=("ann1", "ann2")) -> int:
    """Annotators take items in queue order and side with the judge shown on the left (so about
    half the disagreements go to judge B and ask a second opinion); at most ``limit`` decisions.
    One annotator alone leaves every second opinion owed."""
    made = 0
    while made < limit:
        progressed = False
        for who in who_decides:
            item = S.claim_next(eng, users[who], plan_id)
            if item is None or made >= limit:
                continue
            S.decide(eng, users[who], item.task_id, "A", seconds=3.0, shown=item.shown)
            made, progressed = made + 1, True
        if not progressed:
            break
    return made


def _db_counts(eng, plan_id: int) -> dict:
    """Per model, from the task rows: tasks, complete ones, and ones with some but not all decisions."""
    with eng.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT m.name, COUNT(*), SUM(CASE WHEN t.decided >= t.required THEN 1 ELSE 0 END), "
                "SUM(CASE WHEN t.decided > 0 AND t.decided < t.required THEN 1 ELSE 0 END) FROM adjudication_task t "
                "JOIN response r ON r.id = t.response_id JOIN eval_model m ON m.id = r.model_id WHERE t.plan_id = :p "
                "GROUP BY m.name"
            ),
            {"p": plan_id},
        ).all()
    return {m: {"tasks_planned": int(n), "tasks_decided": int(d), "awaiting_opinion": int(w)} for m, n, d, w in rows}


def _progress(doc: dict) -> dict:
    return {
        m: {k: r["progress"][k] for k in ("tasks_planned", "tasks_decided", "awaiting_opinion")}
        for m, r in doc["models"].items()
    }


def test_part_way_is_provisional_with_counts_then_final(project):
    eng, _, users = project
    made = create_cluster_plan(eng, users["lead"], judge_a="judge_a", judge_b="judge_b", seed=3, margin=0.1)
    _decide(eng, users, made.plan_id, made.tasks // 2, who_decides=("ann1",))
    doc = score_json(score(eng, users["lead"]))
    counts = _db_counts(eng, made.plan_id)
    assert doc["provisional"] is True and _progress(doc) == counts
    assert sum(c["awaiting_opinion"] for c in counts.values()) > 0  # second opinions are owed part-way
    v = doc["verdict"]
    assert v["opinions_owed"] == sum(c["awaiting_opinion"] for c in counts.values())
    assert not v["reached"] and "you may stop" not in v["message"]
    # reachable within this plan here: the decisions still needed, the pending opinions among them
    assert v["reachable"] and v["decisions_needed"] is not None and v["extend_questions"] == 0
    assert v["decisions_needed"] == sum(f["decisions_needed"] for f in v["forward"].values())
    assert all(f["decisions_needed"] >= counts[m]["awaiting_opinion"] for m, f in v["forward"].items())
    assert f"{v['opinions_owed']} of them opinions already owed" in v["message"]
    # one number: the Sampling page's computation, score --json with and without intervals
    with_ivl = score_json(score(eng, users["lead"], with_intervals=True, reps=50))
    assert with_ivl["verdict"]["models"] == v["models"]
    assert with_ivl["verdict"]["message"] == v["message"]
    assert E.plan_precision(eng, users["lead"], made.plan_id).verdict["models"] == v["models"]
    for m, hw in v["models"].items():
        lo, hi = with_ivl["models"][m]["intervals"]["measurement"]["tcpr"] or (None, None)
        assert hw is None if lo is None else hw == pytest.approx((hi - lo) / 2, abs=2e-6)  # Table 2's interval

    _decide(eng, users, made.plan_id, 10 * made.tasks)
    done = score_json(score(eng, users["lead"]))
    counts = _db_counts(eng, made.plan_id)
    assert done["provisional"] is False and _progress(done) == counts
    assert all(c["tasks_decided"] == c["tasks_planned"] and c["awaiting_opinion"] == 0 for c in counts.values())
    assert done["verdict"]["opinions_owed"] == 0 and done["verdict"]["tasks_left"] == 0


def test_close_withdraws_refuses_and_records_its_reason(project, tmp_path):
    eng, url, users = project
    made = create_cluster_plan(eng, users["lead"], judge_a="judge_a", judge_b="judge_b", seed=3, margin=0.1)
    _decide(eng, users, made.plan_id, made.tasks // 3)
    held = S.claim_next(eng, users["ann1"], made.plan_id)  # an item on screen while the lead closes
    with eng.connect() as conn:
        open_before = conn.execute(
            text("SELECT COUNT(*) FROM adjudication_task WHERE plan_id = :p AND status IN ('open', 'claimed')"),
            {"p": made.plan_id},
        ).scalar_one()
        decisions_before = conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one()
    reason = 'pilot: precise enough for the go/no-go =HYPERLINK("x")'
    out = json.loads(_cli("plan-close", made.name, "--db", url, "--reason", reason, "--json").stdout)
    assert out == {"plan": made.name, "withdrawn": open_before} and open_before > 0
    closed = plan_params(eng.connect(), plan_id=made.plan_id)["closed"]
    assert closed["reason"] == reason and closed["by"] == "cli" and closed["withdrawn"] == open_before
    assert Design.from_stored(plan_params(eng.connect(), plan_id=made.plan_id)).extra["closed"] == closed
    # nothing is served or accepted any more; the decisions made stay
    assert S.claim_next(eng, users["ann2"], made.plan_id) is None
    with pytest.raises(S.AdjudicationRefused, match="withdrawn"):
        S.decide(eng, users["ann1"], held.task_id, "A", shown=held.shown)
    with pytest.raises(S.AdjudicationRefused, match="closed plan"):
        S.undo_last(eng, users["ann2"], made.plan_id)
    tasks = tmp_path / "tasks.jsonl"
    assert (
        json.loads(_cli("tasks", "--db", url, "--plan", made.name, "--out", str(tasks), "--json").stdout)["tasks"] == 0
    )
    _cli("plan-close", made.name, "--db", url, ok=False)
    assert "was closed on" in _cli("plan-extend", made.name, "--db", url, "--questions", "2", ok=False).stderr
    with eng.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one() == decisions_before
    assert_counters_match(eng, made.plan_id)
    # the verdict and the export say that the plan was closed, when and why
    doc = score_json(score(eng, users["lead"]))
    assert doc["verdict"]["closed"] == closed
    assert doc["verdict"]["message"].startswith(f"Closed on {closed['at'][:10]} by cli ({reason})")
    assert "you may stop" not in doc["verdict"]["message"]
    assert doc["verdict"]["decisions_needed"] is None and doc["verdict"]["opinions_owed"] == 0  # nothing owed now
    _cli("export", "--db", url, "--out", str(tmp_path / "export"), "--reps", "20")
    manifest = json.loads((tmp_path / "export" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["plan_closure"] == closed and manifest["verdict"]["closed"] == closed


def test_a_closed_plan_is_final_not_provisional(project):
    eng, url, users = project
    made = create_cluster_plan(eng, users["lead"], judge_a="judge_a", judge_b="judge_b", seed=3, margin=0.1)
    _decide(eng, users, made.plan_id, made.tasks // 3)
    _cli("plan-close", made.name, "--db", url, "--reason", "stop")
    doc = score_json(score(eng, users["lead"]))
    assert doc["provisional"] is False
    assert all(r["progress"]["awaiting_opinion"] == 0 for r in doc["models"].values())
    assert all(r["progress"]["tasks_decided"] == r["progress"]["tasks_planned"] for r in doc["models"].values())
    assert any("the plan was closed on" in n and "(stop)" in n for n in doc["notes"])


def test_import_into_a_closed_plan_is_refused_with_its_line(project, tmp_path):
    eng, url, users = project
    made = create_cluster_plan(eng, users["lead"], judge_a="judge_a", judge_b="judge_b", seed=3, margin=0.1)
    tasks = tmp_path / "tasks.jsonl"
    _cli("tasks", "--db", url, "--plan", made.name, "--out", str(tasks))
    line = json.loads(tasks.read_text(encoding="utf-8").splitlines()[0])
    _cli("plan-close", made.name, "--db", url)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "questions.jsonl").write_text("", encoding="utf-8")
    (bundle / "adjudications.jsonl").write_text(
        json.dumps(
            {
                **{k: line[k] for k in ("plan", "judge_a", "judge_b", "model", "instruction", "position")},
                "annotator": "ext1",
                "choice": "A",
                "note": "",
                "seconds": 1.0,
            }
        )
        + "\n",
        encoding="utf-8",
    )
    err = _cli("import", str(bundle), "--db", url, ok=False).stderr
    assert "adjudications.jsonl:1" in err and "plan" in err and "was closed on" in err
    with eng.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one() == 0


def test_extend_keeps_earlier_draws_and_decisions(project):
    eng, url, users = project
    made = create_cluster_plan(eng, users["lead"], judge_a="judge_a", judge_b="judge_b", seed=3, margin=0.2)
    _decide(eng, users, made.plan_id, made.tasks // 2)
    with eng.connect() as conn:
        before = conn.execute(
            text(
                "SELECT id, response_id, constraint_id, decided, order_key FROM adjudication_task "
                "WHERE plan_id = :p ORDER BY id"
            ),
            {"p": made.plan_id},
        ).all()
        n_decisions = conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one()
    params0 = plan_params(eng.connect(), plan_id=made.plan_id)
    out = json.loads(_cli("plan-extend", made.name, "--db", url, "--questions", "2", "--json").stdout)
    assert set(out) == {"plan", "tasks"} and out["plan"] == made.name and out["tasks"] > 0
    with eng.connect() as conn:
        after = conn.execute(
            text(
                "SELECT id, response_id, constraint_id, decided, order_key FROM adjudication_task "
                "WHERE plan_id = :p ORDER BY id"
            ),
            {"p": made.plan_id},
        ).all()
        assert conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one() == n_decisions
    assert after[: len(before)] == before and len(after) == len(before) + out["tasks"]
    assert min(r[4] for r in after[len(before) :]) > max(r[4] for r in before)  # queued behind the others
    params = plan_params(eng.connect(), plan_id=made.plan_id)
    assert all(params["cluster_pi"][m] > params0["cluster_pi"][m] for m in params0["cluster_pi"])
    assert params["extensions"][0]["questions"] == 2 and params["extensions"][0]["tasks"] == out["tasks"]
    assert {k: v for k, v in params.items() if k not in ("cluster_pi", "cluster_pi0", "models", "extensions")} == {
        k: v for k, v in params0.items() if k not in ("cluster_pi", "cluster_pi0", "models")
    }
    assert_counters_match(eng, made.plan_id)
    # the new questions' tasks are served and the estimator sees the grown sample
    doc = score_json(score(eng, users["lead"]))
    assert sum(r["progress"]["tasks_planned"] for r in doc["models"].values()) == len(after)
    assert doc["provisional"] is True
    item = S.claim_next(eng, users["ann1"], made.plan_id)
    assert item is not None
    assert (
        "no sample plan named 'nope'" in _cli("plan-extend", "nope", "--db", url, "--questions", "1", ok=False).stderr
    )
