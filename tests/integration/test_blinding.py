"""Blinding of annotators beyond the queue items (issue 15 item 7): the Overview showed them
judge and model names with agreement rates, and plan names such as "gpt vs gemini #1"
(the default plan name is "<A> vs <B> #k") named the judges of the items they decide.

Issue 33 item 2: the rationales themselves named the judge's mode (the rules judge's
``[…, strict]``), the Adjudicate page showed leads the plan names, and the demo's judge B wrote
in a style of its own."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import text

from db.repo.adjudication import ensure_user, write_tx
from reform_core.judges.blinding import blind_rationale
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.services.project.overview import overview


@pytest.fixture
def project(sqlite_url):
    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=11, scale="small")
    with write_tx(eng) as conn:
        users = {
            name: Principal(ensure_user(conn, username=name, role=role), name, role)
            for name, role in (("lead", "lead"), ("ann1", "annotator"), ("ana", "analyst"))
        }
    default = S.create_plan(eng, users["lead"], judge_a="judge_a", judge_b="judge_b", seed=1)
    named = S.create_plan(eng, users["lead"], judge_a="judge_b", judge_b="judge_a", seed=2, name="judge_b first")
    return eng, users, (default, named)


def _names(eng) -> set[str]:
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


# ----------------------------------------------------------------------------- issue 33 item 2


def test_the_adjudicate_page_lists_plans_without_names_for_every_role(project):
    """The Adjudicate page showed leads the plan names ("judge_a vs judge_b #1"); its plan list
    is blinded for everyone now."""
    eng, u, (default, named) = project
    for who in ("lead", "ann1"):
        plans = S.queue_plans(eng, u[who])
        assert sorted(plans["label"]) == sorted([f"Plan {default.plan_id}", f"Plan {named.plan_id}"])
        assert list(plans.columns) == ["id", "label", "tasks", "done"]


IFEVAL = Path(__file__).resolve().parents[1] / "data" / "ifeval"
MODE_WORDS = re.compile(r"\b(strict|loose)\b", re.I)


@pytest.fixture(scope="module")
def ifeval_pair(tmp_path_factory):
    """IFEval (GPT-4's responses) judged by the rules judge strict and loose, named after their
    modes as the README's walkthrough does, and a plan over the pair."""
    from reform_core.services.accounts.users import cli_principal
    from reform_core.services.data.ifeval_import import import_ifeval
    from reform_core.services.judging.judging import run_judge

    eng = get_engine(f"sqlite:///{tmp_path_factory.mktemp('ifeval') / 'ifeval.db'}")
    import_ifeval(
        eng,
        input_path=IFEVAL / "input_data.jsonl",
        responses={"gpt4": IFEVAL / "input_response_data_gpt4_20231107_145030.jsonl"},
    )
    for mode in ("strict", "loose"):
        run_judge(eng, provider="rules", mode=mode, name=mode)
    plan = S.create_plan(eng, cli_principal(eng), judge_a="strict", judge_b="loose", seed=4, audit=30, margin=0.05)
    return eng, plan


def _rationales(eng) -> list[tuple[str, str, str]]:
    with eng.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT j.name, c.feature, g.rationale FROM judgment g JOIN judge j ON j.id = g.judge_id "
                    "JOIN constraint_item c ON c.id = g.constraint_id ORDER BY g.id"
                )
            ).all()
        ]


def test_the_rules_judge_writes_no_mode_and_the_filter_removes_old_signatures(ifeval_pair):
    """The rules judge ended every IFEval rationale in ``[ifeval:<id>, strict]`` / ``[…, loose]``.
    Now it writes the evidence alone; rationales stored that way (or imported) lose the suffix
    in the display filter and read exactly like the new ones."""
    eng, _ = ifeval_pair
    rows = _rationales(eng)
    assert len(rows) == 2 * 832
    assert not [r for r in rows if MODE_WORDS.search(r[2]) or re.search(r"ifeval:|\brules\b", r[2], re.I)]
    for judge, feature, why in rows:
        old = f"{why} [ifeval:{feature}, {judge}]"
        assert blind_rationale(old, (judge, "verifiers", "verifiers-loose", "rules")) == why.strip()


def test_items_shown_carry_no_judge_mode_or_provider_name(ifeval_pair):
    """Rationales stored the old way, naming their judge and its model: the rationales an
    annotator is handed name none of them (the page around them: tests/e2e/test_browser.py)."""
    eng, plan = ifeval_pair
    with write_tx(eng) as conn:
        ann = Principal(ensure_user(conn, username="blind-ann", role="annotator"), "blind-ann", "annotator")
        conn.execute(
            text(
                "UPDATE judgment SET rationale = j.name || ' (' || j.model || ', rules provider) says: ' || rationale "
                "|| ' [ifeval:' || (SELECT feature FROM constraint_item c WHERE c.id = constraint_id) || ', ' || j.name || ']' "
                "FROM judge j WHERE j.id = judgment.judge_id"
            )
        )
    secrets = re.compile(r"\b(strict|loose|rules|verifiers(-loose)?)\b|ifeval:", re.I)
    seen = 0
    while (item := S.claim_next(eng, ann, plan.plan_id)) is not None and seen < 200:
        for j in (item.judge_a, item.judge_b):
            assert not secrets.search(j.rationale), j.rationale
            assert j.rationale.startswith("[judge] ([judge], [judge] provider) says: ")
        S.skip(eng, ann, item.task_id) if seen % 2 else S.decide(
            eng, ann, item.task_id, "neither", note="x", shown=item.shown
        )
        seen += 1
    assert seen >= 30


OLD_DEMO = [  # rationales of the demo bundle before issue 33: judge B opened every one with a verdict tag
    ("gemini-judge", "Pass: the response has 3 bulleted items, as the forbid constraint on bullet list asks."),
    ("gemini-judge", "Fail: no line starts with a bullet marker, contrary to the require constraint on bullet list."),
    (
        "gpt-judge",
        "The response uses 2 section headings ('Overview', 'Why it happens'), which meets the acceptance criterion.",
    ),
]


@pytest.mark.parametrize(("judge", "why"), OLD_DEMO)
def test_the_filter_removes_verdict_tags_and_names(judge, why):
    out = blind_rationale(f"{why} ({judge}, gpt-5.4-mini)", ("gpt-judge", "gemini-judge", "gpt-5.4-mini"))
    assert not re.match(r"(pass|fail)\b", out, re.I) and "judge (" not in out
    assert "gpt" not in out.lower() and "gemini" not in out.lower()
    assert out[0].isupper() and out.endswith("([judge], [judge])")


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("followed [ifeval:punctuation:no_comma, strict]", "followed"),
        ("FAIL - too short", "Too short"),
        ("Verdict: fail. The response uses commas.", "The response uses commas."),
        ("Fails to mention the keyword", "Fails to mention the keyword"),
        ("No comma appears.", "No comma appears."),
        ("In strict mode (loose) it passes; rules: strict", "In [mode] [mode] it passes; [mode]"),
        ("As GPT-4o and Claude's rival, Googled; Philosophy", "As [judge] and [judge]'s rival, Googled; Philosophy"),
        ("[10:30] meeting", "[10:30] meeting"),
    ],
)
def test_the_documented_patterns(raw, shown):
    assert blind_rationale(raw) == shown


STYLE_FEATURES = {
    "first word": lambda words: words[0].lower(),
    "last three words": lambda words: tuple(w.lower() for w in words[-3:]),
}


def _style_accuracy(rationales: list[tuple[str, tuple, str]]) -> float:
    """The best held-out accuracy of telling the judge from one style feature of a rationale
    (:data:`STYLE_FEATURES`): a lookup fitted on half the instances (a stable hash of the
    instance), tested on the other half; an unseen or tied value counts as a coin toss."""
    best = 0.0
    for feature in STYLE_FEATURES.values():
        train, test = {}, []
        for judge, unit, why in rationales:
            value = feature(why.split())
            if hashlib.sha256(repr(unit).encode()).digest()[0] % 2:
                train.setdefault(value, Counter())[judge] += 1
            else:
                test.append((judge, value))
        score = 0.0
        for judge, value in test:
            top = train.get(value, Counter()).most_common(2)
            if not top or len(top) == 2 and top[0][1] == top[1][1]:
                score += 0.5
            else:
                score += top[0][0] == judge
        best = max(best, score / len(test))
    return best


def test_demo_rationales_do_not_tell_their_judge_by_style():
    """Judge B's demo rationales all began with "Pass:" / "Fail:"; now both judges draw their
    phrasing from the same pool. A style lookup tells them apart at chance level — and it does
    tell the old style apart (the check has teeth)."""
    from reform_core.demo.build import build

    rows = [(j.judge, (j.model, j.instruction, j.position), j.rationale) for j in build()["judgments.jsonl"]]
    assert abs(_style_accuracy(rows) - 0.5) < 0.07
    old = [(judge, unit, ("Pass: " if judge == "gemini-judge" else "") + why) for judge, unit, why in rows]
    assert _style_accuracy(old) > 0.95
