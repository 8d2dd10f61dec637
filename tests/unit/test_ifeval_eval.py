"""Reading and evaluating IFEval-format files, and the ``verify-ifeval`` command."""

import json

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from reform_core import ifeval_eval
from reform_core.commands import verify

INPUTS = [
    {"key": 1, "prompt": "Say hi without commas.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    {
        "key": 2,
        "prompt": "Two words, twice the keyword.",
        "instruction_id_list": ["length_constraints:number_words", "keywords:frequency", "keywords:frequency"],
        "kwargs": [
            {"num_words": 3, "relation": "less than", "keyword": None},
            {"keyword": "hi", "frequency": 2, "relation": "at least"},
            {"keyword": "yo", "frequency": 1, "relation": "at least"},
        ],
    },
    {"key": 3, "prompt": "No answer for me.", "instruction_id_list": ["startend:quotation"], "kwargs": [{}]},
]
RESPONSES = [
    {"prompt": "Say hi without commas.", "response": "Sure, here it is:\nhi there"},
    {"prompt": "Two words, twice the keyword.", "response": "hi hi"},
]


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    return _write(tmp_path / "in.jsonl", INPUTS), _write(tmp_path / "resp.jsonl", RESPONSES)


@pytest.mark.parametrize("mode,no_comma", [("strict", False), ("loose", True)])
def test_evaluate_joins_by_prompt_and_lists_missing(files, mode, no_comma):
    run = ifeval_eval.evaluate(ifeval_eval.read_inputs(files[0]), ifeval_eval.read_responses(files[1]), mode=mode)
    assert run.missing == [3]
    v = run.verdicts
    assert list(v.columns) == ["key", "instruction_id", "passed", "evidence"]
    assert v[["key", "instruction_id"]].values.tolist() == [
        [1, "punctuation:no_comma"],
        [2, "length_constraints:number_words"],
        [2, "keywords:frequency"],
        [2, "keywords:frequency"],
    ]
    assert v["passed"].tolist() == [no_comma, True, True, False]
    acc = ifeval_eval.accuracy(v)
    assert acc["instruction_level"] == pytest.approx((2 + no_comma) / 4)
    assert acc["prompt_level"] == pytest.approx((0 + no_comma) / 2)


@pytest.mark.parametrize(
    "line,message",
    [
        ("{not json", "in.jsonl:2: line: invalid JSON"),
        ("[1, 2]", "in.jsonl:2: line: expected a JSON object"),
        (json.dumps({"prompt": "p", "instruction_id_list": [], "kwargs": []}), "in.jsonl:2: key: missing"),
        (
            json.dumps({"key": "7", "prompt": "p", "instruction_id_list": [], "kwargs": []}),
            "in.jsonl:2: key: expected int",
        ),
        (
            json.dumps({"key": 7, "prompt": "p", "instruction_id_list": ["x:y"], "kwargs": [{}]}),
            "in.jsonl:2: instruction_id_list: unknown instruction 'x:y'",
        ),
        (
            json.dumps({"key": 7, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": []}),
            "in.jsonl:2: kwargs: expected 1 objects",
        ),
        (json.dumps(INPUTS[0]), "in.jsonl:2: key: 1 repeats line 1"),
    ],
)
def test_malformed_input_lines_name_file_line_and_field(tmp_path, line, message):
    path = _write(tmp_path / "in.jsonl", [INPUTS[0], line])
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        ifeval_eval.read_inputs(path)


def test_malformed_response_lines(tmp_path):
    path = _write(tmp_path / "r.jsonl", [RESPONSES[0], {"prompt": "x", "response": 3}])
    with pytest.raises(ValueError, match=r"r.jsonl:2: response: expected str"):
        ifeval_eval.read_responses(path)
    path = _write(tmp_path / "r.jsonl", [RESPONSES[0], {**RESPONSES[0], "response": "other"}])
    with pytest.raises(ValueError, match=r"r.jsonl:2: prompt: repeats line 1"):
        ifeval_eval.read_responses(path)
    with pytest.raises(ValueError, match="cannot read"):
        ifeval_eval.read_responses(tmp_path / "nope.jsonl")


def test_bad_kwargs_name_the_line_or_the_key(tmp_path):
    bad = {**INPUTS[0], "kwargs": [{"num_words": 3}]}
    with pytest.raises(
        ValueError, match=r"in.jsonl:1: kwargs: punctuation:no_comma: unexpected kwargs \['num_words'\]"
    ):
        ifeval_eval.read_inputs(_write(tmp_path / "in.jsonl", [bad]))
    prompt = ifeval_eval.IFEvalPrompt(9, "p", ("keywords:existence",), ({},))
    with pytest.raises(ValueError, match=r"key 9: keywords:existence: missing kwargs \['keywords'\]"):
        ifeval_eval.evaluate([prompt], {"p": "x"})


@pytest.fixture
def app():
    app = typer.Typer()
    verify.register(app)

    @app.command("noop")  # a second command keeps typer from collapsing to a single command
    def _noop():
        pass

    return app


def test_cli_writes_csv_and_reports_missing(app, files, tmp_path):
    out = tmp_path / "sub" / "verdicts.csv"
    args = [
        "verify-ifeval",
        "--input",
        str(files[0]),
        "--responses",
        str(files[1]),
        "--mode",
        "loose",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert list(table.columns) == ["key", "instruction_id", "passed"]
    assert table["passed"].tolist() == [1, 1, 1, 0]
    assert "without a response (keys): 3" in result.output
    assert "3 of 3" not in result.output and "2 of 3 prompts evaluated" in result.output


def test_cli_errors_exit_nonzero_with_message(app, files, tmp_path):
    bad = _write(tmp_path / "bad.jsonl", ["{oops"])
    args = ["verify-ifeval", "--input", str(bad), "--responses", str(files[1]), "--out", str(tmp_path / "o.csv")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "bad.jsonl:1: line: invalid JSON" in result.output
    args = [
        "verify-ifeval",
        "--input",
        str(files[0]),
        "--responses",
        str(files[1]),
        "--mode",
        "fuzzy",
        "--out",
        str(tmp_path / "o.csv"),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "--mode" in result.output
