"""Prompt building, strict parsing and the cache key (pure, offline)."""

import json

import pytest

from reform_core.judges import prompt
from reform_core.judges.base import TASK_PRESENCE, ConstraintSpec, JudgeItem
from reform_core.judges.cache import cache_key
from reform_core.judges.parsing import ParseError, parse_verdicts


def _item(**kw):
    specs = (
        ConstraintSpec(101, 1, "bullet_list", "require", "Use a bulleted list.", "at least 3 bullets"),
        ConstraintSpec(102, 2, "headings", "forbid", "Do not use headings.", "no line starts with #"),
        ConstraintSpec(103, 3, "bold", "require", "Bold the key term.", "exactly one **term**"),
    )
    return JudgeItem(7, kw.get("instruction", "Explain photosynthesis."), kw.get("response", "- a\n- b"), specs)


def test_prompt_carries_instruction_constraints_criteria_and_response():
    item = _item()
    msgs = prompt.build_messages(item)
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    assert "Explain photosynthesis." in user and "- a\n- b" in user
    for c in item.constraints:
        assert f"[{c.prompt_id}] ({c.mode}) {c.text}" in user
        assert f"Acceptance criteria: {c.acceptance}" in user
    # database ids never reach the judge
    assert "101" not in user and "102" not in user


def test_prompt_has_no_slot_for_model_identity():
    # JudgeItem carries no model field, so the prompt cannot name the evaluated model
    assert "model" not in {f for f in JudgeItem.__dataclass_fields__}
    with pytest.raises(TypeError):
        JudgeItem(1, "i", "r", _item().constraints, model="gpt")  # type: ignore[call-arg]


def test_schema_lists_exactly_the_constraint_ids():
    schema = prompt.response_schema(_item())
    verdict = schema["properties"]["verdicts"]["items"]
    assert verdict["properties"]["constraint_id"]["enum"] == ["c1", "c2", "c3"]
    assert verdict["properties"]["label"]["enum"] == [0, 1]
    assert verdict["additionalProperties"] is False and schema["additionalProperties"] is False
    assert set(verdict["required"]) == {"constraint_id", "rationale", "label"}


def test_presence_prompt_lists_features_with_definitions():
    item = JudgeItem(
        1,
        "What is DNA?",
        "text",
        (ConstraintSpec("bullet_list", 1, "bullet_list", text="A list of bullets", name="Bullet list"),),
        task=TASK_PRESENCE,
    )
    user = prompt.build_messages(item)[1]["content"]
    assert "[c1] Bullet list\nDefinition: A list of bullets" in user
    assert "present" in prompt.build_messages(item)[0]["content"]


def test_repair_messages_append_answer_and_error():
    msgs = prompt.build_messages(_item())
    rep = prompt.repair_messages(msgs, "not json", "malformed JSON: x", ["c1", "c2", "c3"])
    assert rep[:2] == msgs and rep[2] == {"role": "assistant", "content": "not json"}
    assert "malformed JSON: x" in rep[3]["content"] and "c1, c2, c3" in rep[3]["content"]


def test_item_validation():
    c = ConstraintSpec(1, 1, "f")
    with pytest.raises(ValueError, match="no constraints"):
        JudgeItem(1, "i", "r", ())
    with pytest.raises(ValueError, match="duplicate constraint positions"):
        JudgeItem(1, "i", "r", (c, c))
    with pytest.raises(ValueError, match="task"):
        JudgeItem(1, "i", "r", (c,), task="other")


def test_cache_key_covers_inputs_not_transport():
    item = _item()
    msgs, schema = prompt.build_messages(item), prompt.response_schema(item)
    k = cache_key("openai", "gpt-4o", msgs, schema)
    assert k == cache_key("openai", "gpt-4o", [dict(m) for m in msgs], json.loads(json.dumps(schema)))
    assert k != cache_key("gemini", "gpt-4o", msgs, schema)
    assert k != cache_key("openai", "gpt-4o-mini", msgs, schema)
    assert k != cache_key("openai", "gpt-4o", msgs, schema, prompt_version="other")
    assert k != cache_key("openai", "gpt-4o", prompt.build_messages(_item(response="changed")), schema)


GOOD = {
    "verdicts": [
        {"constraint_id": "c2", "rationale": "no headings", "label": 1},
        {"constraint_id": "c1", "rationale": "two bullets only", "label": 0},
    ]
}


def test_parse_success_in_expected_order():
    out = parse_verdicts(json.dumps(GOOD), ["c1", "c2"])
    assert list(out) == ["c1", "c2"]
    assert out == {"c1": (0, "two bullets only"), "c2": (1, "no headings")}


def _with(entry_update=None, **top):
    obj = json.loads(json.dumps(GOOD))
    if entry_update:
        obj["verdicts"][0].update(entry_update)
    obj.update(top)
    return json.dumps(obj)


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "empty answer"),
        ("   ", "empty answer"),
        ('{"verdicts": [', "malformed JSON"),
        ("```json\n{}\n```", "malformed JSON"),
        ("[1, 2]", "expected a JSON object"),
        (_with(extra=1), "exactly the key 'verdicts'"),
        ('{"results": []}', "exactly the key 'verdicts'"),
        ('{"verdicts": {"c1": 1}}', "must be a list"),
        ('{"verdicts": ["c1"]}', "expected an object"),
        (json.dumps({"verdicts": [{"constraint_id": "c1", "label": 1}]}), "missing fields \\['rationale'\\]"),
        (_with({"confidence": 0.9}), "unexpected fields \\['confidence'\\]"),
        (_with({"constraint_id": 2}), "expected a string"),
        (_with({"constraint_id": "c9"}), "unknown id 'c9'"),
        (json.dumps({"verdicts": [GOOD["verdicts"][0], GOOD["verdicts"][0]]}), "duplicate id 'c2'"),
        (json.dumps({"verdicts": GOOD["verdicts"][:1]}), "missing verdicts for constraint ids \\['c1'\\]"),
        (_with({"label": 2}), "integer 0 or 1"),
        (_with({"label": True}), "integer 0 or 1"),
        (_with({"label": "1"}), "integer 0 or 1"),
        (_with({"label": 1.0}), "integer 0 or 1"),
        (_with({"label": None}), "integer 0 or 1"),
        (_with({"rationale": None}), "rationale: expected a string"),
    ],
)
def test_parse_errors(text, match):
    with pytest.raises(ParseError, match=match):
        parse_verdicts(text, ["c1", "c2"])


def test_parse_error_is_a_value_error():
    assert issubclass(ParseError, ValueError)
