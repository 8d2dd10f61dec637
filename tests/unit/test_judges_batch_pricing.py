"""Batch request writing / result ingestion and the cost table (pure)."""

import json

import pytest

from reform_core.judges import batch, pricing
from reform_core.judges.base import ConstraintSpec, JudgeItem


def _items():
    specs = (ConstraintSpec(10, 1, "a", "require", "A"), ConstraintSpec(11, 2, "b", "forbid", "B"))
    return [
        JudgeItem(1, "instr 1", "resp 1", specs),
        JudgeItem(2, "instr 2", "resp 2", specs),
        JudgeItem(3, "instr 3", "resp 3", specs),
    ]


def _ok_body(text, pt=50, ct=10):
    return {
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": pt, "completion_tokens": ct},
    }


GOOD = json.dumps(
    {
        "verdicts": [
            {"constraint_id": "c1", "rationale": "r1", "label": 1},
            {"constraint_id": "c2", "rationale": "r2", "label": 0},
        ]
    }
)


def test_openai_lines_are_chat_completion_requests():
    lines = [json.loads(x) for x in batch.openai_lines(_items(), model="gpt-4o").splitlines()]
    assert [x["custom_id"] for x in lines] == ["constraints:1", "constraints:2", "constraints:3"]
    body = lines[0]["body"]
    assert lines[0]["url"] == "/v1/chat/completions" and lines[0]["method"] == "POST"
    assert body["temperature"] == 0 and body["model"] == "gpt-4o"
    assert body["response_format"]["type"] == "json_schema" and body["response_format"]["json_schema"]["strict"]
    assert "resp 1" in body["messages"][1]["content"]


def test_gemini_requests_carry_keys_and_json_schema():
    reqs = batch.gemini_requests(_items())
    assert reqs[1]["metadata"] == {"key": "constraints:2"}
    cfg = reqs[0]["config"]
    assert cfg["temperature"] == 0 and cfg["response_mime_type"] == "application/json"
    assert cfg["response_json_schema"]["required"] == ["verdicts"]
    assert reqs[0]["contents"][0]["role"] == "user" and "instr 1" in reqs[0]["contents"][0]["parts"][0]["text"]


def test_openai_rows_and_ingest_with_partial_failure():
    out = "\n".join(
        [
            json.dumps(
                {"custom_id": "constraints:1", "error": None, "response": {"status_code": 200, "body": _ok_body(GOOD)}}
            ),
            json.dumps(
                {
                    "custom_id": "constraints:2",
                    "error": None,
                    "response": {"status_code": 200, "body": _ok_body("{not json")},
                }
            ),
            json.dumps(
                {"custom_id": "constraints:99", "error": None, "response": {"status_code": 200, "body": _ok_body(GOOD)}}
            ),
        ]
    )
    err = json.dumps(
        {
            "custom_id": "constraints:3",
            "error": None,
            "response": {"status_code": 500, "body": {"error": {"message": "server fell over"}}},
        }
    )
    rows = batch.openai_rows(out, err)
    assert [r.key for r in rows] == ["constraints:1", "constraints:2", "constraints:99", "constraints:3"]
    got = batch.ingest(rows, _items()[:3], model="gpt-4o", prices={"gpt-4o": (2.0, 8.0)})
    by = {r.item.response_id: r for r in got.results}
    assert [(v.constraint_id, v.label, v.status) for v in by[1].verdicts] == [(10, 1, "ok"), (11, 0, "ok")]
    assert all(v.status == "error" and v.label is None for v in by[2].verdicts)
    assert "malformed JSON" in by[2].verdicts[0].error
    assert all(v.status == "error" for v in by[3].verdicts) and "server fell over" in by[3].verdicts[0].error
    assert got.unknown_keys == ["constraints:99"] and got.missing == []
    # batch price: half of (50*2 + 10*8) / 1e6
    assert by[1].cost_usd == pytest.approx(0.5 * (50 * 2.0 + 10 * 8.0) / 1e6)


def test_ingest_leaves_items_without_lines_pending():
    rows = [batch.BatchRow("constraints:1", None, "expired")]
    got = batch.ingest(rows, _items(), model="m")
    assert got.missing == ["constraints:2", "constraints:3"] and len(got.results) == 1


def test_openai_rows_reject_malformed_result_file():
    with pytest.raises(ValueError, match="line 1"):
        batch.openai_rows("{oops")


def test_completion_from_dict_errors():
    with pytest.raises(ValueError, match="refused"):
        batch.completion_from_dict({"choices": [{"message": {"content": None, "refusal": "no"}}]})
    with pytest.raises(ValueError, match="no choices"):
        batch.completion_from_dict({"choices": []})
    c = batch.completion_from_dict(_ok_body("x", 7, 3))
    assert (c.text, c.input_tokens, c.output_tokens) == ("x", 7, 3)


def test_cost_table_override_and_validation(monkeypatch):
    assert pricing.cost_usd("no-such-model", 1000, 1000) == 0.0 and not pricing.known("no-such-model")
    assert pricing.cost_usd("m", 1_000_000, 500_000, prices={"m": (3.0, 12.0)}) == pytest.approx(3.0 + 6.0)
    monkeypatch.setenv(pricing.ENV_VAR, json.dumps({"m": [1.0, 2.0]}))
    assert pricing.cost_usd("m", 2_000_000, 0) == pytest.approx(2.0)
    assert pricing.cost_usd("m", 2_000_000, 0, batch=True) == pytest.approx(1.0)
    monkeypatch.setenv(pricing.ENV_VAR, "{bad")
    with pytest.raises(ValueError, match="REFORM_JUDGE_PRICES"):
        pricing.cost_usd("m", 1, 1)
    monkeypatch.delenv(pricing.ENV_VAR)
    with pytest.raises(ValueError, match="'m'"):
        pricing.cost_usd("m", 1, 1, prices={"m": (1.0,)})
    with pytest.raises(ValueError, match="negative"):
        pricing.cost_usd("m", 1, 1, prices={"m": (-1.0, 1.0)})
