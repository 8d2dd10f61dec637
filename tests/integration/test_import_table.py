"""``import-table``: any benchmark's data from a plain CSV / Parquet table (issue 14, point 4).

The table here is IFEval's own verdict file (``official_verdicts_gpt4.csv``: one row per
(prompt, instruction id) with kwargs and the reference checker's strict / loose verdicts)
joined with the prompts and GPT-4's responses: a table nobody here shaped for ReForm.

Checked against independent paths: the constraint texts equal those ``import-ifeval``
renders from the same prompts, and ``score --judge`` on the imported verdicts equals
IFEval's prompt- and instruction-level accuracy computed by a literal loop over the CSV.
Errors are located (file, line or row, column, field), every problem at once, and nothing
is written unless the whole table is valid (SQLite and PostgreSQL).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import text

from reform_core.services.data.ifeval_import import import_ifeval
from reform_core.services.data.table_import import ImportFailed, import_table, parse_mapping
from reform_core.services.platform.uow import dispose_engines, get_engine

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "ifeval"
INPUT = DATA / "input_data.jsonl"
RESPONSES = DATA / "input_response_data_gpt4_20231107_145030.jsonl"
MAP = [
    "key=question",
    "instruction_id=feature",
    "kwargs_json=params",
    "strict=label:official-strict",
    "loose=label:official-loose",
]


def _ifeval_table(keys: int | None = None) -> pd.DataFrame:
    """The verdict file with each prompt's text and GPT-4's response (first ``keys`` prompts)."""
    prompts = {str(d["key"]): d["prompt"] for d in map(json.loads, INPUT.read_text(encoding="utf-8").splitlines())}
    answers = {}
    for d in map(json.loads, RESPONSES.read_text(encoding="utf-8").splitlines()):
        answers.setdefault(d["prompt"], d["response"])
    df = pd.read_csv(DATA / "official_verdicts_gpt4.csv", dtype=str, keep_default_na=False)
    if keys is not None:
        df = df[df["key"].isin(list(dict.fromkeys(df["key"]))[:keys])]
    df.insert(1, "prompt", df["key"].map(prompts))
    df["response"] = df["prompt"].map(answers)
    df.insert(0, "model", "gpt4")
    return df.reset_index(drop=True)


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "reform_core", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=os.environ.copy(),
    )


def _counts(eng) -> dict:
    with eng.connect() as conn:
        return {
            t: conn.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar()
            for t in ("question", "instruction", "constraint_item", "response", "judge", "judgment")
        }


def _official_accuracy(df: pd.DataFrame, column: str) -> tuple[float, float]:
    per_key = defaultdict(list)
    for key, v in zip(df["key"], df[column]):
        per_key[key].append(int(v))
    flat = [v for vs in per_key.values() for v in vs]
    return 100 * sum(all(vs) for vs in per_key.values()) / len(per_key), 100 * sum(flat) / len(flat)


def test_ifeval_verdict_table_through_the_cli(tmp_path):
    df = _ifeval_table()
    path = tmp_path / "verdicts.csv"
    df.to_csv(path, index=False)
    url = f"sqlite:///{tmp_path / 't.db'}"
    r = _cli("import-table", path, "--db", url, *[a for m in MAP for a in ("--map", m)], "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["catalog"] == "ifeval" and out["rows"] == 832 and out["questions"] == 540
    assert out["constraints"] == 832 and out["responses"] == 540 and out["judgments"] == 2 * 832
    assert out["labels"] == {"official-loose": 832, "official-strict": 832} and out["ignored_columns"] == []
    assert out["columns"]["strict"] == "label:official-strict" and out["columns"]["prompt"] == "prompt"

    # the same constraint texts and acceptance criteria as import-ifeval renders from input_data.jsonl
    ref = get_engine(f"sqlite:///{tmp_path / 'ref.db'}")
    import_ifeval(ref, input_path=INPUT, responses={"gpt4": RESPONSES})
    q = (
        "SELECT i.key, c.position, c.feature, c.mode, c.text, c.acceptance FROM constraint_item c "
        "JOIN instruction i ON i.id = c.instruction_id ORDER BY i.key, c.position"
    )
    with get_engine(url).connect() as conn:
        mine = {(k, p): rest for k, p, *rest in conn.execute(text(q)).all()}
    with ref.connect() as conn:
        theirs = {(k.removeprefix("ifeval-"), p): rest for k, p, *rest in conn.execute(text(q)).all()}
    assert mine == {k: v for k, v in theirs.items() if k in mine} and len(mine) == 832
    assert mine[("1000", 3)][2] == "Answer with at least 300 words."

    # scoring the imported verdicts gives IFEval's own accuracies
    for judge, column in (("official-strict", "strict"), ("official-loose", "loose")):
        s = json.loads(_cli("score", "--db", url, "--judge", judge, "--json").stdout)["models"]["gpt4"]
        prompt_level, instruction_level = _official_accuracy(df, column)
        assert s["prompt_level"] == pytest.approx(prompt_level, abs=1e-6)
        assert s["instruction_level"] == pytest.approx(instruction_level, abs=1e-6)
        assert s["emcr"] is None  # IFEval: no baseline data, no EMCR

    # re-importing identical data changes nothing
    again = json.loads(
        _cli("import-table", path, "--db", url, *[a for m in MAP for a in ("--map", m)], "--json").stdout
    )
    assert all(again[k] == 0 for k in ("questions", "constraints", "responses", "judgments"))


def test_parquet_gives_the_same_project_as_csv(tmp_path):
    df = _ifeval_table(keys=30)
    df.to_csv(tmp_path / "t.csv", index=False)
    pq = df.copy()
    pq["strict"] = pq["strict"].astype(int).astype(bool)  # typed cells: booleans, a JSON string
    pq.to_parquet(tmp_path / "t.parquet")
    mapping = parse_mapping(MAP)
    engines = {}
    for name in ("t.csv", "t.parquet"):
        engines[name] = get_engine(f"sqlite:///{tmp_path / (name + '.db')}")
        import_table(engines[name], (tmp_path / name).read_bytes(), name, mapping)
    q = (
        "SELECT j.name, i.key, c.position, c.text, g.label, r.text FROM judgment g JOIN judge j ON j.id = g.judge_id "
        "JOIN constraint_item c ON c.id = g.constraint_id JOIN instruction i ON i.id = c.instruction_id "
        "JOIN response r ON r.id = g.response_id ORDER BY 1, 2, 3"
    )
    rows = {}
    for name, eng in engines.items():
        with eng.connect() as conn:
            rows[name] = conn.execute(text(q)).all()
    assert rows["t.csv"] == rows["t.parquet"] and len(rows["t.csv"]) == 2 * len(df)


def test_every_problem_is_located_and_nothing_is_written(any_db_url, tmp_path):
    eng = get_engine(any_db_url)
    good = _ifeval_table(keys=3)
    import_table(eng, good.to_csv(index=False).encode(), "good.csv", parse_mapping(MAP))
    before = _counts(eng)

    bad = _ifeval_table(keys=12).copy()
    for col in ("prompt", "response"):  # one line per row (multi-line cells: test_malformed_files)
        bad[col] = bad[col].str.replace("\n", " ")
    bad.loc[0, "strict"] = "maybe"  # line 2
    bad.loc[1, "instruction_id"] = "punctuation:no_commas"  # line 3: unknown feature
    bad.loc[4, "kwargs_json"] = '{"num_words": "many"}'  # line 6: wrong kwargs
    bad.loc[5, "model"] = ""  # line 7: required
    same = next(i for i in range(7, len(bad)) if bad.loc[i, "key"] == bad.loc[i - 1, "key"])
    bad.loc[same, "response"] = "another answer"  # differs from the prompt's row above
    with pytest.raises(ImportFailed) as exc:
        import_table(eng, bad.to_csv(index=False).encode(), "bad.csv", parse_mapping(MAP))
    errors = exc.value.errors
    assert (
        "bad.csv:2: 'strict' (label:official-strict): expected 1, 0, true, false, yes, no, pass, fail or empty, got 'maybe'"
        in errors
    )
    assert any(
        e.startswith("bad.csv:3: 'instruction_id' (feature): unknown feature 'punctuation:no_commas'") for e in errors
    )
    assert any(e.startswith("bad.csv:6: 'kwargs_json' (params): ") for e in errors)
    assert "bad.csv:7: model: required (empty cell)" in errors
    assert (
        f"bad.csv:{same + 2}: response: differs from line {same + 1} for the same model 'gpt4' and instruction "
        f"'{bad.loc[same, 'key']}'" in errors
    ), errors
    assert len(errors) == 5, errors
    assert _counts(eng) == before

    # a conflict found only after the importer has written new questions and responses: the
    # whole table is rolled back (one transaction)
    late = _ifeval_table(keys=5)
    late.loc[0, "strict"] = str(1 - int(late.loc[0, "strict"]))  # changes an existing judgment …
    with pytest.raises(ImportFailed) as exc:  # … while keys 4-5 are new
        import_table(eng, late.to_csv(index=False).encode(), "late.csv", parse_mapping(MAP))
    assert any(e.startswith("late.csv:2: label: conflicts with existing judgment") for e in exc.value.errors), (
        exc.value.errors
    )
    assert _counts(eng) == before
    out = import_table(eng, late.to_csv(index=False).encode(), "late.csv", parse_mapping(MAP), replace=True)
    assert out["judgments"] == 1 + 2 * (len(late) - len(good)) and _counts(eng)["question"] == 5
    dispose_engines()


def test_default_positions_texts_and_a_table_without_responses(tmp_path):
    eng = get_engine(f"sqlite:///{tmp_path / 't.db'}")
    table = pd.DataFrame(
        {
            "model": ["m1", "m1", "m2", "m2"],
            "question": ["q1", "q1", "q1", "q1"],
            "prompt": ["Describe tides."] * 4,
            "feature": ["bullet_list", "checklist", "bullet_list", "checklist"],
            "mode": ["require", "forbid", "require", "forbid"],
            "judge A": ["1", "0", "", "yes"],
            "why": ["three bullets", "", "", ""],
            "notes": ["x"] * 4,
        }
    )
    out = import_table(
        eng, table.to_csv(index=False).encode(), "t.csv", parse_mapping(["judge A=label:a", "why=rationale:a"])
    )
    assert out["catalog"] == "reformbench" and out["constraints"] == 2 and out["responses"] == 2
    assert out["responses_without_text"] == 2 and out["ignored_columns"] == ["notes"]
    assert out["labels"] == {"a": 3} and out["not_judged"] == {"a": 1}
    with eng.connect() as conn:
        cons = conn.execute(text("SELECT position, feature, mode, text FROM constraint_item ORDER BY position")).all()
        jd = conn.execute(text("SELECT label, rationale, status FROM judgment ORDER BY id")).all()
    assert [c[:3] for c in cons] == [(1, "bullet_list", "require"), (2, "checklist", "forbid")]
    assert all(c[3] and c[3] != c[1] for c in cons)  # rendered from the catalog template
    assert jd == [(1, "three bullets", "ok"), (0, "", "ok"), (1, "", "ok")]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--map", "kwargs=params"], "no column 'kwargs'"),
        (["--map", "key=questions"], "unknown field 'questions'"),
        (["--map", "key=label:"], "the judge name must have 1 to 200 characters"),
        (["--map", "strict"], "expected COLUMN=FIELD"),
    ],
)
def test_cli_mapping_errors_exit_nonzero_with_one_error(tmp_path, args, message):
    _ifeval_table(keys=2).to_csv(tmp_path / "t.csv", index=False)
    r = _cli("import-table", tmp_path / "t.csv", "--db", f"sqlite:///{tmp_path / 't.db'}", *args)
    assert r.returncode == 1 and message in r.stderr and r.stderr.startswith("error: "), r.stderr


def test_cli_reports_a_missing_required_field(tmp_path):
    _ifeval_table(keys=2).to_csv(tmp_path / "t.csv", index=False)
    r = _cli("import-table", tmp_path / "t.csv", "--db", f"sqlite:///{tmp_path / 't.db'}")
    assert r.returncode == 1
    assert "t.csv:1: (header): no column for the required field 'question'" in r.stderr
    assert "no column for the required field 'feature'" in r.stderr


def test_malformed_files(tmp_path):
    eng = get_engine(f"sqlite:///{tmp_path / 't.db'}")
    with pytest.raises(ImportFailed, match=r"t.csv:3: \(line\): 2 field\(s\), the header has 3"):
        import_table(eng, b"model,question,feature\nm,q,bullet_list\nm,q\n", "t.csv", {})
    with pytest.raises(ImportFailed, match=r"t.csv:2: \(line\): not valid UTF-8"):
        import_table(eng, b"model,question,feature\nm,q,\xff\n", "t.csv", {})
    with pytest.raises(ImportFailed, match=r"t.parquet:0: \(file\): not a readable Parquet file"):
        import_table(eng, b"not parquet", "t.parquet", {})
    with pytest.raises(ImportFailed, match=r"expected a .csv or .parquet file"):
        import_table(eng, b"", "t.xlsx", {})
    # a quoted cell over several lines: the next record's line is where it starts
    data = b'model,question,feature,prompt\nm,q1,bullet_list,"two\nlines"\nm,q2,nope,x\n'
    with pytest.raises(ImportFailed) as exc:
        import_table(eng, data, "t.csv", {})
    assert exc.value.errors == [
        "t.csv:4: feature: unknown feature 'nope' of catalog reformbench; for your own "
        "features, write a starter catalog with `python -m reform_core catalog-init t.csv "
        "--out catalog.yaml`, edit its texts and import with --catalog catalog.yaml"
    ]
    assert _counts(eng)["question"] == 0


def test_only_regular_files_are_read(tmp_path):
    """A FIFO would block the import forever, /dev/zero would exhaust memory (as for bundles)."""
    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)
    url = f"sqlite:///{tmp_path / 't.db'}"
    r = _cli("import-table", fifo, "--db", url)
    assert r.returncode == 1 and "t.csv:0: (file): cannot read: is a FIFO (named pipe), not a regular file" in r.stderr
    r = _cli("import-table", tmp_path, "--db", url)
    assert r.returncode == 1 and "(file): cannot read: is a directory, not a regular file" in r.stderr
