"""Bundle import: round trip, located validation errors, idempotence, conflicts, IFEval, migrations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from db.engine import current_revision, head_revision, make_engine, upgrade
from reform_core.services.data.bundle_export import export_bundle
from reform_core.services.data.ifeval_import import import_ifeval
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.reading import ImportFailed
from reform_core.services.data.status import status
from reform_core.services.platform.uow import get_engine

REPO = Path(__file__).resolve().parents[2]
IFEVAL = REPO / "tests" / "data" / "ifeval"  # vendored copy (Apache-2.0, see its README)


def _w(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def make_bundle(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "bundle.json").write_text(
        json.dumps({"format": "reform-bundle", "version": 1, "name": "tiny", "catalog": "reformbench"})
    )
    _w(
        root / "questions.jsonl",
        [
            {
                "key": "q1",
                "text": "Explain photosynthesis.",
                "task_type": "explain",
                "domain": "science",
                "language": "en",
            },
            {"key": "q2", "text": "How do I boil an egg?", "task_type": "howto", "domain": "cooking", "language": "en"},
        ],
    )
    cons = lambda a, b, c: [  # noqa: E731
        {
            "position": 1,
            "feature": a,
            "mode": "require",
            "text": f"use {a}",
            "acceptance": "present",
            "params": {"n": 2},
        },
        {"position": 2, "feature": b, "mode": "forbid", "text": f"no {b}", "acceptance": "absent"},
        {"position": 3, "feature": c, "mode": "require", "text": f"use {c}", "acceptance": "present"},
    ]
    _w(
        root / "instructions.jsonl",
        [
            {
                "key": "q1-v1",
                "question": "q1",
                "text": "Explain photosynthesis. Rules…",
                "constraints": cons("section_headings", "bullet_list", "typographic_emphasis"),
            },
            {
                "key": "q1-v2",
                "question": "q1",
                "text": "Explain photosynthesis. Other rules…",
                "constraints": cons("section_headings", "numbered_enumeration", "code_block"),
            },
            {
                "key": "q2-v1",
                "question": "q2",
                "text": "How do I boil an egg? Rules…",
                "constraints": cons("numbered_enumeration", "table_or_grid", "typographic_emphasis"),
            },
        ],
    )
    _w(root / "models.jsonl", [{"name": "m1", "provider": "openai", "settings": {"temperature": 0}}])
    resp = []
    for m in ("m1", "m2"):
        for q in ("q1", "q2"):
            resp.append({"model": m, "question": q, "text": f"baseline {m} {q} ✓"})
        for i, q in (("q1-v1", "q1"), ("q1-v2", "q1"), ("q2-v1", "q2")):
            resp.append({"model": m, "question": q, "instruction": i, "text": f"answer {m} {i}\r\nline 2"})
    _w(root / "responses.jsonl", resp)
    _w(
        root / "baseline_features.jsonl",
        [
            {"model": "m1", "question": "q1", "feature": "bullet_list"},
            {"model": "m2", "question": "q2", "feature": "numbered_enumeration", "present": True, "source": "llm"},
        ],
    )
    _w(root / "judges.jsonl", [{"name": "ja", "provider": "openai", "model": "gpt-x", "prompt_version": "v1"}])
    jd = []
    for j in ("ja", "jb"):
        for m in ("m1", "m2"):
            for i in ("q1-v1", "q1-v2", "q2-v1"):
                for p in (1, 2, 3):
                    lab = 0 if (j == "jb" and p == 2 and m == "m1") else 1
                    jd.append(
                        {
                            "judge": j,
                            "model": m,
                            "instruction": i,
                            "position": p,
                            "label": lab,
                            "rationale": f"{j} says {lab}",
                        }
                    )
    _w(root / "judgments.jsonl", jd)
    _w(
        root / "adjudications.jsonl",
        [
            {
                "judge_a": "ja",
                "judge_b": "jb",
                "model": "m1",
                "instruction": "q1-v1",
                "position": 2,
                "choice": "B",
                "annotator": "alice",
            },
        ],
    )
    return root


def _dump(url: str) -> dict:
    """Every row of every project table (for 'database unchanged' checks)."""
    eng = get_engine(url)
    out = {}
    with eng.connect() as conn:
        for t in (
            "question",
            "instruction",
            "constraint_item",
            "eval_model",
            "response",
            "baseline_feature",
            "judge",
            "judgment",
            "adjudication_task",
            "adjudication",
            "app_user",
            "sample_plan",
        ):
            out[t] = [tuple(r) for r in conn.execute(text(f"SELECT * FROM {t} ORDER BY id"))]
    return out


def test_round_trip_and_idempotent(tmp_path, any_db_url):
    b = make_bundle(tmp_path / "b")
    eng = get_engine(any_db_url)
    counts = import_bundle(eng, b)
    assert counts["questions"] == 2 and counts["instructions"] == 3 and counts["constraints"] == 9
    assert counts["responses"] == 10 and counts["judgments"] == 36 and counts["adjudications"] == 1
    st = status(eng)
    assert st["models"] == 2 and st["disagreements"] == 3 and st["adjudications"] == 1
    before = _dump(any_db_url)
    again = import_bundle(eng, b)
    assert sum(again.values()) == 0
    assert _dump(any_db_url) == before

    out1 = export_bundle(eng, tmp_path / "out1")
    assert out1["judgments.jsonl"] == 36
    eng2 = get_engine(f"sqlite:///{tmp_path / 'second.db'}")
    import_bundle(eng2, tmp_path / "out1")
    export_bundle(eng2, tmp_path / "out2")
    for name in sorted(p.name for p in (tmp_path / "out1").iterdir()):
        assert (tmp_path / "out1" / name).read_text() == (tmp_path / "out2" / name).read_text(), name
    # the exported bundle holds the same facts as the source bundle
    src_q = [{"source": "", **json.loads(x)} for x in (b / "questions.jsonl").read_text().splitlines()]
    exp_q = [json.loads(x) for x in (tmp_path / "out1" / "questions.jsonl").read_text().splitlines()]
    assert src_q == exp_q
    key = lambda d: (d["judge"], d["model"], d["instruction"], d["position"], d["label"], d["rationale"])  # noqa: E731
    src_j = {key(json.loads(x)) for x in (b / "judgments.jsonl").read_text().splitlines()}
    exp_j = {key(json.loads(x)) for x in (tmp_path / "out1" / "judgments.jsonl").read_text().splitlines()}
    assert src_j == exp_j


BAD_CASES = [
    # (file, line index to corrupt, new record or raw text, expected message fragment)
    ("questions.jsonl", 1, "{not json", "questions.jsonl:2: (line): Invalid JSON"),
    ("questions.jsonl", 1, {"text": "no key"}, "questions.jsonl:2: key: Field required"),
    (
        "questions.jsonl",
        1,
        {"key": "q1", "text": "dup"},
        "questions.jsonl:2: key: duplicate question key (first at line 1)",
    ),
    (
        "instructions.jsonl",
        0,
        {
            "key": "q1-v1",
            "question": "nope",
            "constraints": [{"position": 1, "feature": "table_or_grid", "mode": "require"}],
        },
        "instructions.jsonl:1: question: unknown question 'nope'",
    ),
    (
        "instructions.jsonl",
        0,
        {
            "key": "q1-v1",
            "question": "q1",
            "constraints": [{"position": 1, "feature": "table_or_grid", "mode": "maybe"}],
        },
        "instructions.jsonl:1: constraints.0.mode: Input should be 'require' or 'forbid'",
    ),
    (
        "instructions.jsonl",
        0,
        {
            "key": "q1-v1",
            "question": "q1",
            "constraints": [{"position": 1, "feature": "not_a_feature", "mode": "require"}],
        },
        "instructions.jsonl:1: constraints.feature: unknown catalog feature 'not_a_feature'",
    ),
    (
        "responses.jsonl",
        0,
        {"model": "m1", "question": "q2", "instruction": "q1-v1", "text": "x"},
        "responses.jsonl:1: instruction: instruction 'q1-v1' belongs to question 'q1', not 'q2'",
    ),
    (
        "baseline_features.jsonl",
        0,
        {"model": "m9", "question": "q1", "feature": "table_or_grid"},
        "baseline_features.jsonl:1: question: no baseline response of model 'm9' to question 'q1'",
    ),
    (
        "judgments.jsonl",
        0,
        {"judge": "ja", "model": "m1", "instruction": "q1-v1", "position": 1, "label": 2},
        "judgments.jsonl:1: label: Value error, must be 0, 1, true, false or null, got 2",
    ),
    (
        "judgments.jsonl",
        0,
        {"judge": "ja", "model": "m1", "instruction": "q1-v1", "position": 7, "label": 1},
        "judgments.jsonl:1: position: instruction 'q1-v1' has no constraint at position 7",
    ),
    (
        "judgments.jsonl",
        0,
        {"judge": "ja", "model": "m1", "instruction": "q1-v1", "position": 1, "status": "ok"},
        "judgments.jsonl:1: (line): Value error, label: required when status is 'ok'",
    ),
    (
        "adjudications.jsonl",
        0,
        {"judge_a": "ja", "judge_b": "zz", "model": "m1", "instruction": "q1-v1", "position": 2, "choice": "A"},
        "adjudications.jsonl:1: judge_b: unknown judge 'zz'",
    ),
]


@pytest.mark.parametrize("fname,idx,bad,expected", BAD_CASES)
def test_bad_input_is_located_and_changes_nothing(tmp_path, sqlite_url, fname, idx, bad, expected):
    eng = get_engine(sqlite_url)
    good = make_bundle(tmp_path / "good")
    import_bundle(eng, good)
    before = _dump(sqlite_url)
    b = make_bundle(tmp_path / "bad")
    # the bad bundle also carries new, valid rows that must NOT be written
    with (b / "questions.jsonl").open("a") as fh:
        fh.write(json.dumps({"key": "q-new", "text": "new"}) + "\n")
    lines = (b / fname).read_text().splitlines()
    lines[idx] = bad if isinstance(bad, str) else json.dumps(bad)
    (b / fname).write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFailed) as exc:
        import_bundle(eng, b)
    assert any(e.startswith(expected) for e in exc.value.errors), exc.value.errors
    assert _dump(sqlite_url) == before


def test_all_problems_reported_at_once(tmp_path, sqlite_url):
    b = make_bundle(tmp_path / "b")
    lines = (b / "judgments.jsonl").read_text().splitlines()
    lines[3] = json.dumps({"judge": "ja", "model": "m1", "instruction": "q1-v1", "position": 1, "label": "yes"})
    lines[5] = "[]"
    (b / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    (b / "questions.jsonl").write_text((b / "questions.jsonl").read_text() + '{"key": ""}\n')
    with pytest.raises(ImportFailed) as exc:
        import_bundle(get_engine(sqlite_url), b)
    errs = exc.value.errors
    assert any(e.startswith("judgments.jsonl:4: label:") for e in errs)
    assert any(e.startswith("judgments.jsonl:6:") for e in errs)
    assert any(e.startswith("questions.jsonl:3: key:") for e in errs)


def test_conflict_needs_replace(tmp_path, sqlite_url):
    eng = get_engine(sqlite_url)
    b = make_bundle(tmp_path / "b")
    import_bundle(eng, b)
    lines = (b / "questions.jsonl").read_text().splitlines()
    q = json.loads(lines[0])
    q["text"] = "Explain photosynthesis to a child."
    lines[0] = json.dumps(q)
    (b / "questions.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportFailed) as exc:
        import_bundle(eng, b)
    assert exc.value.errors == [
        "questions.jsonl:1: text: conflicts with existing question [q1] (use --replace to overwrite)"
    ]
    counts = import_bundle(eng, b, replace=True)
    assert counts["questions"] == 1
    with eng.connect() as conn:
        assert conn.execute(text("SELECT text FROM question WHERE key='q1'")).scalar() == q["text"]


def test_migrations_upgrade_empty_database(any_db_url):
    eng = make_engine(any_db_url)
    assert current_revision(eng) is None
    upgrade(eng)
    assert current_revision(eng) == head_revision(eng)
    upgrade(eng)  # idempotent
    with eng.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM judgment")).scalar() == 0
    eng.dispose()


def test_ifeval_importer_loads_everything(sqlite_url):
    eng = get_engine(sqlite_url)
    out = import_ifeval(
        eng,
        input_path=IFEVAL / "input_data.jsonl",
        responses={"gpt4": IFEVAL / "input_response_data_gpt4_20231107_145030.jsonl"},
    )
    assert out["questions"] == 541 and out["instructions"] == 541 and out["responses"] == 540
    assert out["missing_responses"] == {"gpt4": ["2785"]}
    src = [json.loads(line) for line in (IFEVAL / "input_data.jsonl").read_text().splitlines()]
    assert out["constraints"] == sum(len(d["instruction_id_list"]) for d in src)
    with eng.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT c.feature, c.params FROM constraint_item c JOIN instruction i ON i.id = c.instruction_id "
                "WHERE i.key = 'ifeval-1000' ORDER BY c.position"
            )
        ).all()
    d1000 = next(d for d in src if d["key"] == 1000)
    assert [r[0] for r in rows] == d1000["instruction_id_list"]
    got = [json.loads(r[1]) if isinstance(r[1], str) else r[1] for r in rows]
    assert got == [{k: v for k, v in kw.items() if v is not None} for kw in d1000["kwargs"]]


def test_cli_status_and_import_json(tmp_path):
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    b = make_bundle(tmp_path / "b")
    r = subprocess.run(
        [sys.executable, "-m", "reform_core", "import", str(b), "--db", db, "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["judgments"] == 36
    r = subprocess.run(
        [sys.executable, "-m", "reform_core", "status", "--db", db, "--json"], capture_output=True, text=True, cwd=REPO
    )
    st = json.loads(r.stdout)
    assert set(st) == {
        "questions",
        "instructions",
        "constraints",
        "models",
        "responses",
        "judgments",
        "disagreements",
        "adjudications",
        "pair",
        "plans",
    }
    assert st["pair"] is None  # not set; ja, jb are the only judges, so scoring may use them
    assert st["plans"] == [{"name": "imported", "judge_a": "ja", "judge_b": "jb", "tasks": 1, "done": 1}]
    lines = (b / "questions.jsonl").read_text().splitlines()
    (b / "questions.jsonl").write_text(lines[0] + "\n{oops\n")
    r = subprocess.run(
        [sys.executable, "-m", "reform_core", "import", str(b), "--db", db], capture_output=True, text=True, cwd=REPO
    )
    assert r.returncode != 0 and "questions.jsonl:2:" in r.stderr


def test_old_database_upgrades_keeping_data(tmp_path, any_db_url):
    """A database left at the first revision (an 'old' install) upgrades on open, data intact."""
    eng = make_engine(any_db_url)
    upgrade(eng, "0001")
    assert current_revision(eng) == "0001"
    with eng.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO question (key, text, task_type, domain, language, source) "
                "VALUES ('old-q', 'kept', '', '', '', '')"
            )
        )
    eng.dispose()
    eng2 = get_engine(any_db_url)  # what the app and the CLI do on start
    assert current_revision(eng2) == head_revision(eng2) != "0001"
    with eng2.connect() as conn:
        assert conn.execute(text("SELECT text FROM question WHERE key = 'old-q'")).scalar() == "kept"


def test_schema_head_constant_matches_migrations(sqlite_url):
    from db.engine import SCHEMA_HEAD

    assert head_revision(make_engine(sqlite_url)) == SCHEMA_HEAD
