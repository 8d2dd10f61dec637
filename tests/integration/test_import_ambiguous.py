"""Ambiguous input is an error, located (issue 32 item 6): conflicting duplicate rows of a
table or a bundle, a key given twice in one JSON line, a value of the wrong JSON type, a MOSAIC
prompt whose ``size`` disagrees with its checks, and a file with an unreadable line still
reporting its other problems. Every case: ``file:line: field: message`` and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reform_core.construction.mosaic_gen import assemble
from reform_core.services.accounts.auth import Principal
from reform_core.services.data.ifeval_import import import_ifeval
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.reading import ImportFailed
from reform_core.services.data.table_import import import_table
from reform_core.services.platform.uow import get_engine
from reform_core.services.studies import mosaic
from reform_core.services.studies.generations import import_generations
from tests.integration.test_fuzz_importers import dump
from tests.integration.test_import import make_bundle

LEAD = Principal(0, "lead", "lead")
TABLE = pd.DataFrame(
    {
        "model": ["m1", "m1", "m2", "m2"],
        "question": ["q1"] * 4,
        "prompt": ["Describe tides."] * 4,
        "feature": ["bullet_list", "checklist", "bullet_list", "checklist"],
        "mode": ["require", "forbid", "require", "forbid"],
        "gpt": ["1", "0", "1", "1"],
    }
)
MAP = {"gpt": "label:gpt"}


def _csv(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode()


def _rejected(eng, run) -> list[str]:
    before = dump(eng)
    with pytest.raises(ImportFailed) as exc:
        run()
    assert dump(eng) == before, "a rejected import wrote something"
    return exc.value.errors


# ----------------------------------------------------------------------------- tables


def test_table_rows_of_one_constraint_with_conflicting_labels_or_texts(any_db_url):
    eng = get_engine(any_db_url)
    twin = pd.concat([TABLE, TABLE.iloc[[0]].assign(gpt="0")], ignore_index=True)  # line 6: m1's bullet_list again
    assert _rejected(eng, lambda: import_table(eng, _csv(twin), "t.csv", MAP)) == [
        "t.csv:6: 'gpt' (label:gpt): conflicts with line 2, the same model 'm1', prompt 'q1', feature 'bullet_list', "
        "mode and params, labelled 1 there and 0 here; if the prompt asks for this constraint twice, give each row "
        "its position (a position column)"
    ]
    worded = pd.concat([TABLE, TABLE.iloc[[1]]], ignore_index=True).assign(
        constraint_text=["", "", "", "", "No checklists at all."]
    )
    assert _rejected(eng, lambda: import_table(eng, _csv(worded), "t.csv", MAP)) == [
        "t.csv:6: constraint_text: conflicts with line 3, the same model 'm1', prompt 'q1', feature 'checklist', mode "
        "and params, with another constraint text; if the prompt asks for this constraint twice, give each row its "
        "position (a position column)"
    ]
    positioned = pd.concat([TABLE, TABLE.iloc[[0]]], ignore_index=True).assign(position=[1, 2, 1, 2, 1])
    assert _rejected(eng, lambda: import_table(eng, _csv(positioned), "t.csv", MAP)) == [
        "t.csv:6: model: a second row for model 'm1', instruction 'q1', position 1 (first at line 2)"
    ]


def test_agreeing_repeated_rows_are_the_constraint_asked_twice(sqlite_url):
    """IFEval asks some prompts for one instruction twice (key 30: startend:quotation): rows
    that agree are that constraint's occurrences, in order."""
    eng = get_engine(sqlite_url)
    twice = pd.concat([TABLE, TABLE.iloc[[0, 2]]], ignore_index=True)
    out = import_table(eng, _csv(twice), "t.csv", MAP)
    assert out["constraints"] == 3 and out["judgments"] == 6


def test_a_params_cell_with_a_repeated_key(sqlite_url):
    eng = get_engine(sqlite_url)
    t = TABLE.assign(params=['{"items": 3, "items": 4}', "", "", ""])
    assert _rejected(eng, lambda: import_table(eng, _csv(t), "t.csv", MAP)) == [
        "t.csv:2: params: key(s) 'items' given twice (JSON would keep only the last value)"
    ]


# ----------------------------------------------------------------------------- bundles


def _edit(root: Path, fname: str, index: int, line: str) -> None:
    lines = (root / fname).read_text().splitlines()
    lines[index] = line
    (root / fname).write_text("\n".join(lines) + "\n")


def test_a_key_given_twice_in_a_bundle_line(any_db_url, tmp_path):
    eng = get_engine(any_db_url)
    b = make_bundle(tmp_path / "b")
    _edit(b, "models.jsonl", 0, '{"name": "m1", "provider": "openai", "name": "m9"}')
    _edit(b, "questions.jsonl", 1, '{"key": "q2", "text": "How?", "task_type": "a", "task_type": "b"}')
    lines = (b / "instructions.jsonl").read_text().splitlines()
    nested = lines[0].replace('"params": {"n": 2}', '"params": {"n": 2, "n": 3}')
    assert nested != lines[0]
    _edit(b, "instructions.jsonl", 0, nested)
    errors = _rejected(eng, lambda: import_bundle(eng, b))
    assert "models.jsonl:1: name: given twice in this line (JSON would keep only the last value)" in errors
    assert "questions.jsonl:2: task_type: given twice in this line (JSON would keep only the last value)" in errors
    assert "instructions.jsonl:1: n: given twice in this line (JSON would keep only the last value)" in errors
    assert len(errors) == 3, errors


@pytest.mark.parametrize(
    "fname, index, record, expected",
    [
        (
            "judgments.jsonl",
            0,
            {"judge": "ja", "model": "m1", "instruction": "q1-v1", "position": "1", "label": 1},
            "judgments.jsonl:1: position: Input should be a valid integer",
        ),
        (
            "baseline_features.jsonl",
            0,
            {"model": "m1", "question": "q1", "feature": "bullet_list", "present": 1},
            "baseline_features.jsonl:1: present: Input should be a valid boolean",
        ),
        (
            "adjudications.jsonl",
            0,
            {
                "judge_a": "ja",
                "judge_b": "jb",
                "model": "m1",
                "instruction": "q1-v1",
                "position": 2,
                "choice": "B",
                "annotator": "alice",
                "seconds": "12",
            },
            "adjudications.jsonl:1: seconds: Input should be a valid number",
        ),
        ("questions.jsonl", 0, {"key": 1, "text": "x"}, "questions.jsonl:1: key: Input should be a valid string"),
    ],
)
def test_a_value_of_the_wrong_json_type_is_not_converted(sqlite_url, tmp_path, fname, index, record, expected):
    eng = get_engine(sqlite_url)
    b = make_bundle(tmp_path / "b")
    _edit(b, fname, index, json.dumps(record))
    errors = _rejected(eng, lambda: import_bundle(eng, b))
    assert any(e.startswith(expected) for e in errors), errors


def test_conflicting_duplicates_in_a_bundle(sqlite_url, tmp_path):
    eng = get_engine(sqlite_url)
    b = make_bundle(tmp_path / "b")
    jd = (b / "judgments.jsonl").read_text().splitlines()
    flipped = json.loads(jd[0]) | {"label": 0, "rationale": "no"}
    (b / "judgments.jsonl").write_text("\n".join(jd + [json.dumps(flipped)]) + "\n")
    adj = json.loads((b / "adjudications.jsonl").read_text())
    (b / "adjudications.jsonl").write_text(json.dumps(adj) + "\n" + json.dumps(adj | {"choice": "A"}) + "\n")
    errors = _rejected(eng, lambda: import_bundle(eng, b))
    assert errors == [
        f"judgments.jsonl:{len(jd) + 1}: prompt_version: duplicate judgment (first at line 1)",
        "adjudications.jsonl:2: annotator: duplicate decision of this annotator in this plan (first at line 1)",
    ]


def test_a_bad_line_does_not_hide_the_other_problems_of_its_file(sqlite_url, tmp_path):
    eng = get_engine(sqlite_url)
    b = make_bundle(tmp_path / "b")
    qs = (b / "questions.jsonl").read_text().splitlines()
    (b / "questions.jsonl").write_text("\n".join([qs[0], "{not json", qs[1], qs[0]]) + "\n")
    errors = _rejected(eng, lambda: import_bundle(eng, b))
    assert errors[0].startswith("questions.jsonl:2: (line): Invalid JSON")
    assert "questions.jsonl:4: key: duplicate question key (first at line 1)" in errors


def test_every_problem_is_listed_up_to_a_cap(sqlite_url, tmp_path):
    eng = get_engine(sqlite_url)
    b = make_bundle(tmp_path / "b")
    (b / "questions.jsonl").write_text("".join(f'{{"key": "q{i}", "domain": {i}}}\n' for i in range(250)))
    with pytest.raises(ImportFailed) as exc:
        import_bundle(eng, b)
    assert len(exc.value.errors) >= 250 and exc.value.errors[249].startswith("questions.jsonl:250: domain:")
    assert str(exc.value).endswith(f"… and {len(exc.value.errors) - 200} more")


# ----------------------------------------------------------------------------- other importers


def _prompts(n: int = 2) -> list[dict]:
    rng = np.random.default_rng(0)
    return [
        assemble("marketing_email", "smartphone", ("short_paragraphs", "dash_lists"), rng, prompt_id=f"p{i}")
        for i in range(n)
    ]


def test_a_mosaic_prompt_whose_size_disagrees_with_its_checks(sqlite_url):
    eng = get_engine(sqlite_url)
    good, short = _prompts()
    bad = [good | {"size": 3}, short | {"size": "2"}]
    data = "".join(json.dumps(p) + "\n" for p in bad).encode()
    errors = _rejected(eng, lambda: mosaic.import_prompts(eng, LEAD, study="s", data=data, filename="p.jsonl"))
    assert errors == [
        "p.jsonl:1: size: 3 does not match the 2 constraint(s) of the prompt's checks",
        "p.jsonl:2: size: must be an integer, got '2'",
    ]
    ok = mosaic.import_prompts(
        eng, LEAD, study="s", data="".join(json.dumps(p) + "\n" for p in _prompts()).encode(), filename="p.jsonl"
    )
    assert ok["written"] == 2


def test_a_mosaic_file_lists_every_problem_not_only_the_unreadable_line(sqlite_url):
    eng = get_engine(sqlite_url)
    first, second = _prompts()
    lines = [
        "{broken",
        json.dumps(first | {"size": 5}),
        json.dumps(second).replace('"id": "p1"', '"id": "p1", "id": "p9"'),
    ]
    errors = _rejected(
        eng, lambda: mosaic.import_prompts(eng, LEAD, study="s", data="\n".join(lines).encode(), filename="p.jsonl")
    )
    assert errors[0].startswith("p.jsonl:1: (line): invalid JSON")
    assert errors[1:] == [
        "p.jsonl:3: id: given twice in this line (JSON would keep only the last value)",
        "p.jsonl:2: size: 5 does not match the 2 constraint(s) of the prompt's checks",
    ]


def test_wise_generations_with_a_repeated_key(sqlite_url):
    eng = get_engine(sqlite_url)
    line = (
        '{"item": "i1", "model": "m", "provider": "p", "form": "POS", "target": "5", "repetition": 0, '
        '"output": "a b c d e", "output": "x"}'
    )
    errors = _rejected(eng, lambda: import_generations(eng, LEAD, data=line.encode(), filename="g.jsonl"))
    assert errors == ["g.jsonl:1: output: given twice in this line (JSON would keep only the last value)"]


def test_ifeval_input_with_a_repeated_key(sqlite_url, tmp_path):
    eng = get_engine(sqlite_url)
    (tmp_path / "input.jsonl").write_text(
        '{"key": 1, "prompt": "Hi", "instruction_id_list": [], "kwargs": [], "prompt": "Bye"}\n'
    )
    (tmp_path / "r.jsonl").write_text('{"prompt": "Hi", "response": "x"}\n')
    errors = _rejected(
        eng, lambda: import_ifeval(eng, input_path=tmp_path / "input.jsonl", responses={"m": tmp_path / "r.jsonl"})
    )
    assert "input.jsonl:1: prompt: given twice in this line (JSON would keep only the last value)" in errors
