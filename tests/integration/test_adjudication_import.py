"""Decisions made elsewhere: ``adjudications.jsonl`` imports never touch accounts (issue 15
item 3), respect ``required`` in live plans (item 9), and round-trip with ``tasks`` for an
outside annotation team (issue 13), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

from db.repo.adjudication import ensure_user, write_tx
from reform_core.services.accounts.auth import Principal
from reform_core.services.accounts.sso import SignInRefused, sso_principal
from reform_core.services.accounts.users import cli_principal, local_principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.reading import ImportFailed
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from tests.integration.test_adjudication_progress import assert_counters_match

REPO = Path(__file__).resolve().parents[2]


def _bundle(root: Path, decisions: list[dict]) -> Path:
    """A bundle holding only decisions (``questions.jsonl`` is required, here empty)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "questions.jsonl").write_text("", encoding="utf-8")
    (root / "adjudications.jsonl").write_text("".join(json.dumps(d) + "\n" for d in decisions), encoding="utf-8")
    return root


def _rows(eng, sql: str, **params) -> list[tuple]:
    with eng.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql), params).all()]


def _item(eng, task_id: int) -> dict:
    """The file fields naming a task's item (plan, judges, model, instruction, position)."""
    ((plan, ja, jb, model, instruction, position),) = _rows(
        eng,
        (
            "SELECT p.name, ja.name, jb.name, m.name, i.key, c.position FROM adjudication_task t "
            "JOIN sample_plan p ON p.id = t.plan_id JOIN judge ja ON ja.id = p.judge_a_id "
            "JOIN judge jb ON jb.id = p.judge_b_id JOIN response r ON r.id = t.response_id "
            "JOIN eval_model m ON m.id = r.model_id JOIN constraint_item c ON c.id = t.constraint_id "
            "JOIN instruction i ON i.id = c.instruction_id WHERE t.id = :t"
        ),
        t=task_id,
    )
    return {
        "plan": plan,
        "judge_a": ja,
        "judge_b": jb,
        "model": model,
        "instruction": instruction,
        "position": position,
    }


@pytest.fixture
def project(any_db_url):
    eng = get_engine(any_db_url)
    simulate_into(eng, seed=5, scale="small")
    with write_tx(eng) as conn:
        users = {
            name: Principal(ensure_user(conn, username=name, role=role), name, role)
            for name, role in (("boss", "lead"), ("ann1", "annotator"), ("ann2", "annotator"))
        }
    users["cli"], users["local"] = cli_principal(eng), local_principal(eng)
    return eng, users


def test_imports_never_create_change_or_demote_accounts(project, tmp_path):
    """Issue 15 item 3: ``"annotator": "cli"`` turned the CLI's lead into an annotator, "local"
    demoted the local lead, an imported e-mail became an active account (OIDC sign-in), an empty
    name was accepted. Now names are text (or an existing annotator account), and reserved or
    non-annotator account names are refused with a located error."""
    eng, u = project
    plan = S.create_plan(eng, u["boss"], judge_a="judge_a", judge_b="judge_b", seed=1, name="p1").plan_id
    tasks = [t for (t,) in _rows(eng, "SELECT id FROM adjudication_task WHERE plan_id = :p ORDER BY id", p=plan)]
    accounts = _rows(eng, "SELECT * FROM app_user ORDER BY id")
    bad = [("cli", 1), ("Local", 2), ("", 3), ("  ", 4), ("boss", 5)]
    decisions = [{**_item(eng, tasks[k]), "choice": "A", "annotator": name} for name, k in bad]
    decisions.append({**_item(eng, tasks[6]), "choice": "B", "annotator": "mallory@example.com"})
    with pytest.raises(ImportFailed) as exc:
        import_bundle(eng, _bundle(tmp_path / "bad", decisions))
    errors = exc.value.errors
    assert [e.split(": ")[0] for e in errors] == [f"adjudications.jsonl:{n}" for n in range(1, 6)], errors
    assert all(": annotator: " in e for e in errors)
    assert "reserved" in errors[0] and "reserved" in errors[1] and "lead account" in errors[4]
    assert _rows(eng, "SELECT COUNT(*) FROM adjudication") == [(0,)]
    assert _rows(eng, "SELECT * FROM app_user ORDER BY id") == accounts

    good = [
        {**_item(eng, tasks[6]), "choice": "B", "annotator": "mallory@example.com"},
        {**_item(eng, tasks[7]), "choice": "A", "annotator": "ann1"},
    ]
    assert import_bundle(eng, _bundle(tmp_path / "good", good))["adjudications"] == 2
    assert _rows(eng, "SELECT * FROM app_user ORDER BY id") == accounts  # no account created or changed
    with pytest.raises(SignInRefused) as refused:  # an SSO identity with that verified e-mail gets nothing
        sso_principal(
            eng,
            {
                "iss": "https://idp.example",
                "sub": "m",
                "iat": 1,
                "email": "mallory@example.com",
                "email_verified": True,
            },
        )
    assert refused.value.reason == "not_invited"
    assert cli_principal(eng).role == "lead" and local_principal(eng).role == "lead"
    got = _rows(eng, "SELECT task_id, user_id, annotator FROM adjudication ORDER BY task_id")
    assert got == [(tasks[6], None, "mallory@example.com"), (tasks[7], u["ann1"].user_id, "")]
    # an imported decision of ann1 is ann1's: the app does not hand ann1 that item again
    assert S.claim_next(eng, u["ann1"], plan).task_id != tasks[7]
    assert_counters_match(eng, plan)


def test_import_into_a_live_plan_respects_required_and_the_lease_holder(project, tmp_path):
    """Issue 15 item 9: an import marked a required=2 task done with one decision and then
    refused the annotator holding it; doctor reported bad counters."""
    eng, u = project
    plan = S.create_plan(
        eng, u["boss"], judge_a="judge_a", judge_b="judge_b", seed=2, overlap_fraction=1.0, name="double"
    ).plan_id
    held = S.claim_next(eng, u["ann1"], plan)  # ann1 is reading this item
    import_bundle(eng, _bundle(tmp_path / "one", [{**_item(eng, held.task_id), "choice": "B", "annotator": "ext1"}]))
    assert _rows(eng, "SELECT status, decided, claimed_by FROM adjudication_task WHERE id = :t", t=held.task_id) == [
        ("claimed", 1, u["ann1"].user_id)
    ]
    assert_counters_match(eng, plan)
    assert S.decide(eng, u["ann1"], held.task_id, "A", shown=held.shown).task_done  # not refused
    assert _rows(eng, "SELECT status, decided FROM adjudication_task WHERE id = :t", t=held.task_id) == [("done", 2)]

    # an import that completes an item someone holds: the holder's decision still counts
    held = S.claim_next(eng, u["ann2"], plan)
    both = [{**_item(eng, held.task_id), "choice": c, "annotator": a} for c, a in (("A", "ext1"), ("B", "ext2"))]
    import_bundle(eng, _bundle(tmp_path / "two", both))
    assert _rows(eng, "SELECT status, decided FROM adjudication_task WHERE id = :t", t=held.task_id) == [("done", 2)]
    assert_counters_match(eng, plan)
    S.decide(eng, u["ann2"], held.task_id, "A", shown=held.shown)
    assert _rows(eng, "SELECT status, decided, claimed_by FROM adjudication_task WHERE id = :t", t=held.task_id) == [
        ("done", 3, None)
    ]
    assert_counters_match(eng, plan)

    # a live plan takes decisions only on its own items
    other = _rows(
        eng,
        "SELECT i.key, c.position, m.name FROM response r JOIN eval_model m ON m.id = r.model_id "
        "JOIN constraint_item c ON c.instruction_id = r.instruction_id "
        "JOIN instruction i ON i.id = c.instruction_id WHERE NOT EXISTS (SELECT 1 FROM adjudication_task t "
        "WHERE t.response_id = r.id AND t.constraint_id = c.id) ORDER BY r.id, c.position LIMIT 1",
    )[0]
    stray = {
        **_item(eng, held.task_id),
        "instruction": other[0],
        "position": other[1],
        "model": other[2],
        "choice": "A",
        "annotator": "ext1",
    }
    with pytest.raises(ImportFailed, match=r"adjudications.jsonl:1: plan: plan 'double' has no item"):
        import_bundle(eng, _bundle(tmp_path / "stray", [stray]))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reform_core", *args], capture_output=True, text=True, cwd=REPO)


def test_outside_team_round_trip_through_tasks_and_import(project, tmp_path):
    """Issue 13: plan → ``tasks`` → decisions by two named outside annotators (both on every
    double item) → ``import`` → every task decided exactly ``required`` times by distinct
    annotators, counters right; a re-import changes nothing."""
    eng, u = project
    db = str(eng.url.render_as_string(hide_password=False))
    made = S.create_plan(
        eng, u["boss"], judge_a="judge_a", judge_b="judge_b", seed=3, audit=8, overlap_fraction=0.4, name="outside"
    )
    # one double item already has one decision from the app: it needs one more
    item = S.claim_next(eng, u["ann1"], made.plan_id)
    S.decide(eng, u["ann1"], item.task_id, "A", shown=item.shown)
    required = dict(_rows(eng, "SELECT id, required FROM adjudication_task WHERE plan_id = :p", p=made.plan_id))

    out = tmp_path / "tasks.jsonl"
    r = _cli("tasks", "--db", db, "--plan", "outside", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert json.loads(r.stdout)["tasks"] == len(lines) == made.tasks - (required[item.task_id] == 1)
    assert all(
        list(x) == ["plan", "kind", "required", "judge_a", "judge_b", "model", "instruction", "position", "answer"]
        for x in lines
    )
    assert all(x["answer"] == ("verdict" if x["kind"] == "audit" else "choice") for x in lines)
    assert {x["kind"] for x in lines} == {"disagreement", "audit"}
    assert sum(x["required"] for x in lines) == sum(required.values()) - 1

    rng = np.random.default_rng(0)
    decisions = []
    for x in lines:
        for who in ("ext1", "ext2")[: x["required"]]:
            choice = str(rng.choice(["A", "B", "neither"]))
            decisions.append(
                {
                    **{k: x[k] for k in ("plan", "judge_a", "judge_b", "model", "instruction", "position")},
                    "choice": choice,
                    "annotator": who,
                    "seconds": float(rng.integers(5, 60)),
                    "note": "both judges are wrong" if choice == "neither" else "",
                }
            )
    bundle = _bundle(tmp_path / "decisions", decisions)
    r = _cli("import", str(bundle), "--db", db)
    assert r.returncode == 0, r.stderr
    tasks = _rows(eng, "SELECT id, required, decided, status FROM adjudication_task WHERE plan_id = :p", p=made.plan_id)
    assert all(dec == req and status == "done" for _, req, dec, status in tasks), tasks
    per_task = _rows(
        eng,
        "SELECT d.task_id, COUNT(*), COUNT(DISTINCT COALESCE(u.username, d.annotator)) "
        "FROM adjudication d LEFT JOIN app_user u ON u.id = d.user_id JOIN adjudication_task t "
        "ON t.id = d.task_id WHERE t.plan_id = :p GROUP BY d.task_id",
        p=made.plan_id,
    )
    assert {t: (n, k) for t, n, k in per_task} == {t: (req, req) for t, req in required.items()}
    assert_counters_match(eng, made.plan_id)

    before = _rows(eng, "SELECT * FROM adjudication ORDER BY id"), _rows(eng, "SELECT * FROM plan_stratum_count")
    r = _cli("import", str(bundle), "--db", db)
    assert r.returncode == 0, r.stderr
    assert (
        _rows(eng, "SELECT * FROM adjudication ORDER BY id"),
        _rows(eng, "SELECT * FROM plan_stratum_count"),
    ) == before
    r = _cli("tasks", "--db", db, "--plan", "outside", "--out", str(out))
    assert r.returncode == 0 and out.read_text(encoding="utf-8") == ""
    r = _cli("tasks", "--db", db, "--plan", "nope", "--out", str(out))
    assert r.returncode != 0 and r.stderr.startswith("error: --plan: no sample plan named 'nope'")
