"""Audits asked as their own question (issue 33 item 1): an annotator gives a verdict
(pass / fail) on an audit item instead of choosing between two agreeing judges; a verdict
against the agreed label is stored as ``neither``, one equal to it as the choice ``A``.

The estimator must see exactly the same data for the same answers: the same project scored
once with choice-based and once with verdict-based decisions (imported and given in the app's
service path) gives the same stored decisions and every number of ``score --json`` equal."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from db.repo.adjudication import ensure_user, write_tx
from reform_core.services.accounts.auth import Principal
from reform_core.services.accounts.users import cli_principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.adjudication.planning import create_cluster_plan
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.reading import ImportFailed
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.services.scoring.scoring import score, score_json
from reform_core.simulate import simulate

KEY = ("model", "instruction", "position")
ITEM = ("plan", "judge_a", "judge_b", *KEY)
ANNOTATORS = ("ext1", "ext2", "ext3")
ERROR = 0.15  # each annotator misreports the truth this often (so audits get verdicts both ways)


def _project(url: str, tmp: Path):
    eng = get_engine(url)
    simulate_into(eng, seed=5, scale="small", truth=tmp / "truth.csv")
    made = create_cluster_plan(eng, cli_principal(eng), judge_a="judge_a", judge_b="judge_b", seed=3, name="p")
    return eng, made


@pytest.fixture
def twins(tmp_path):
    """The same simulated project and plan in two databases, the hidden truth and the labels."""
    a = _project(f"sqlite:///{tmp_path / 'choices.db'}", tmp_path)
    b = _project(f"sqlite:///{tmp_path / 'verdicts.db'}", tmp_path)
    truth = pd.read_csv(tmp_path / "truth.csv", dtype={"instruction": str}).set_index(list(KEY))["truth"]
    inst = simulate(seed=5, scale="small").instances()
    labels = inst[inst["condition"] == "main"].set_index(list(KEY))[["label_judge_a", "label_judge_b"]]
    return a, b, truth, labels


def _tasks(eng, tmp: Path, name: str) -> list[dict]:
    out = tmp / f"{name}.jsonl"
    S.write_tasks(eng, cli_principal(eng), out, plan="p")
    return [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]


def _answers(lines: list[dict], truth: pd.Series, rng: np.random.Generator, who: str) -> list[dict]:
    """The underlying answers of one annotator on each line: what they find true (``said``)."""
    out = []
    for x in lines:
        y = int(truth.loc[tuple(x[k] for k in KEY)])
        said = 1 - y if rng.random() < ERROR else y
        out.append(
            {
                **{k: x[k] for k in ITEM},
                "kind": x["kind"],
                "answer": x["answer"],
                "said": said,
                "annotator": who,
                "seconds": float(rng.integers(5, 90)),
            }
        )
    return out


def _as_choices(answers: list[dict], labels: pd.DataFrame) -> list[dict]:
    """The lines an outside team wrote before verdicts: on an audit ``A`` (the judges agree, so
    either one) when the annotator finds the agreed label right, ``neither`` when wrong."""
    rows = []
    for a in answers:
        la, lb = (int(v) for v in labels.loc[tuple(a[k] for k in KEY)])
        if a["kind"] == "audit":
            choice = "A" if a["said"] == la else "neither"
        else:
            choice = "A" if a["said"] == la else "B"
        rows.append({**{k: a[k] for k in (*ITEM, "annotator", "seconds")}, "choice": choice, "note": "n"})
    return rows


def _as_verdicts(answers: list[dict], labels: pd.DataFrame) -> list[dict]:
    rows = _as_choices(answers, labels)
    for r, a in zip(rows, answers):
        if a["answer"] == "verdict":
            del r["choice"]
            r["verdict"] = "pass" if a["said"] else "fail"
    return rows


def _import(eng, root: Path, rows: list[dict]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "questions.jsonl").write_text("", encoding="utf-8")
    (root / "adjudications.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import_bundle(eng, root)


def _stored(eng) -> list[tuple]:
    with eng.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT task_id, annotator, choice, label, note, seconds, supersedes_id, judgment_a_id, judgment_b_id "
                    "FROM adjudication ORDER BY id"
                )
            ).all()
        ]


def test_verdicts_store_and_score_exactly_as_choices(twins, tmp_path):
    """Rounds of tasks → answers → import until no task is left (second and third opinions
    included); the choice-based and verdict-based projects ask the same tasks every round,
    store the same rows and score to the same numbers, intervals included."""
    (ea, made), (eb, _), truth, labels = twins
    rng = np.random.default_rng(7)
    kinds = {"verdict": 0, "fail": 0, "pass": 0}
    for rnd in range(4):
        lines = _tasks(ea, tmp_path, f"a{rnd}")
        assert lines == _tasks(eb, tmp_path, f"b{rnd}")  # the second-opinion rule saw the same data
        if not lines:
            break
        assert {x["answer"] for x in lines if x["kind"] == "audit"} <= {"verdict"}
        assert {x["answer"] for x in lines if x["kind"] == "disagreement"} <= {"choice"}
        answers = _answers(lines, truth, rng, ANNOTATORS[rnd] if rnd else "ext1")
        if rnd == 0:  # items needing two opinions from the start get a second annotator
            answers += _answers([x for x in lines if x["required"] == 2], truth, rng, "ext2")
        verdicts = _as_verdicts(answers, labels)
        for v in verdicts:
            if "verdict" in v:
                kinds["verdict"] += 1
                kinds[v["verdict"]] += 1
        _import(ea, tmp_path / f"choices{rnd}", _as_choices(answers, labels))
        _import(eb, tmp_path / f"verdicts{rnd}", verdicts)
    assert rnd >= 2, "the answers should have asked for second opinions"
    assert kinds["pass"] > 10 and kinds["fail"] > 3, kinds
    assert _stored(ea) == _stored(eb)
    got = [score_json(score(e, cli_principal(e), with_intervals=True, reps=200, seed=1)) for e in (ea, eb)]
    assert got[0]["estimator"] == "cluster" and got[0]["models"]
    assert got[0] == got[1]


def test_a_verdict_given_in_the_app_stores_what_a_choice_stored(twins):
    """The app's service path: on every audit item one annotator gives a verdict in one
    project and the equivalent choice (``A`` as shown, or ``neither`` with a note) in the other."""
    (ea, made), (eb, _), _, _ = twins

    def annotator(eng):
        with write_tx(eng) as conn:
            return Principal(ensure_user(conn, username="ann", role="annotator"), "ann", "annotator")

    ua, ub = annotator(ea), annotator(eb)
    with ea.connect() as conn:
        audits = conn.execute(text("SELECT COUNT(*) FROM adjudication_task WHERE kind = 'audit'")).scalar_one()
    answered = 0
    for _ in range(5000):
        if answered == audits:
            break
        ia, ib = S.claim_next(ea, ua, made.plan_id), S.claim_next(eb, ub, made.plan_id)
        assert (ia.task_id, ia.kind, ia.shown) == (ib.task_id, ib.kind, ib.shown)
        if not ia.is_audit:
            S.skip(ea, ua, ia.task_id)
            S.skip(eb, ub, ib.task_id)
            continue
        agreed = ia.judge_a.label
        verdict = "fail" if answered % 3 == 0 else "pass"
        note = f"note {answered}"  # a verdict's note is optional; "neither" (the equivalent choice) needs one
        S.give_verdict(ea, ua, ia.task_id, verdict, note=note, seconds=12.0, shown=ia.shown)
        same = (verdict == "pass") == (agreed == 1)
        with eb.connect() as conn:  # the side on screen that is the plan's judge A (both say the same)
            left = conn.execute(text("SELECT a_left FROM adjudication_task WHERE id = :t"), {"t": ib.task_id}).scalar()
        S.decide(
            eb,
            ub,
            ib.task_id,
            ("A" if left == "A" else "B") if same else "neither",
            note=note,
            seconds=12.0,
            shown=ib.shown,
        )
        answered += 1
    assert answered > 5
    assert _stored(ea) == _stored(eb)
    assert score_json(score(ea, cli_principal(ea))) == score_json(score(eb, cli_principal(eb)))
    undone = S.undo_last(ea, ua, made.plan_id)
    assert undone.verdict in ("pass", "fail")


def test_verdict_refusals(twins, tmp_path):
    """A verdict on a disagreement is refused with a located error (import) or a message (app);
    a line with both a choice and a verdict, or neither, is refused; nothing is written."""
    (ea, made), _, _, _ = twins
    lines = _tasks(ea, tmp_path, "t")
    dis = next(x for x in lines if x["kind"] == "disagreement")
    audit = next(x for x in lines if x["kind"] == "audit")
    before = _stored(ea)
    bad = [
        {**{k: audit[k] for k in ITEM}, "verdict": "fail", "choice": "A", "annotator": "ext1"},
        {**{k: audit[k] for k in ITEM}, "annotator": "ext1"},
        {**{k: audit[k] for k in ITEM}, "verdict": "maybe", "annotator": "ext1"},
        {**{k: audit[k] for k in ITEM}, "verdict": "pass", "annotator": "ext1"},
    ]
    with pytest.raises(ImportFailed) as info:
        _import(ea, tmp_path / "bad", bad)
    assert info.value.errors == [
        "adjudications.jsonl:1: verdict: give either choice (A | B | neither) or, on an audit of an agreement, "
        "verdict (pass | fail); not both",
        "adjudications.jsonl:2: verdict: give either choice (A | B | neither) or, on an audit of an agreement, "
        "verdict (pass | fail)",
        "adjudications.jsonl:3: verdict: Input should be 'pass' or 'fail'",
    ]
    lines_ok = [
        {**{k: audit[k] for k in ITEM}, "verdict": "pass", "annotator": "ext1"},
        {**{k: dis[k] for k in ITEM}, "verdict": "pass", "annotator": "ext1"},
    ]
    with pytest.raises(ImportFailed) as info:
        _import(ea, tmp_path / "bad2", lines_ok)
    assert info.value.errors == [
        "adjudications.jsonl:2: verdict: a verdict answers an audit of an agreement, but the judges do not agree "
        "on this instance: give choice (A | B | neither)"
    ]
    assert _stored(ea) == before

    with write_tx(ea) as conn:
        ann = Principal(ensure_user(conn, username="ann9", role="annotator"), "ann9", "annotator")
    item = S.claim_next(ea, ann, made.plan_id)
    while item.is_audit:
        S.skip(ea, ann, item.task_id)
        item = S.claim_next(ea, ann, made.plan_id)
    with pytest.raises(ValueError, match="a verdict answers an audit"):
        S.give_verdict(ea, ann, item.task_id, "pass", shown=item.shown)
    with pytest.raises(ValueError, match="verdict must be one of"):
        S.give_verdict(ea, ann, item.task_id, "yes", shown=item.shown)
    assert _stored(ea) == before
