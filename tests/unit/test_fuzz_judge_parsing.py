"""Hostile input (issue 9): fuzzing the strict judge-output parser.

Whatever a model (or a man in the middle) returns, ``parse_verdicts`` either returns one
``(label, rationale)`` per expected id, with labels exactly 0/1, or raises its documented
``ParseError`` with a non-empty message; never any other exception. The oracle for a
valid answer is built independently of the parser (the generated verdict list itself).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reform_core.judges.parsing import ParseError, parse_verdicts

IDS = ["c1", "c2", "c3"]
FUZZ = settings(max_examples=150, deadline=None, derandomize=True)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=15), c, max_size=4),
    max_leaves=12,
)
verdict_like = st.fixed_dictionaries(
    {
        "constraint_id": st.sampled_from(IDS + ["c99", ""]) | json_values,
        "rationale": st.text(max_size=40) | json_values,
        "label": st.sampled_from([0, 1, 2, -1, True, False, None, 1.0, "1", "yes"]) | json_values,
    },
    optional={"extra": json_values},
)
answers = (
    st.text()
    | json_values.map(json.dumps)
    | st.lists(verdict_like, max_size=5).map(lambda v: json.dumps({"verdicts": v}))
    | st.lists(verdict_like, max_size=5).map(lambda v: "```json\n" + json.dumps({"verdicts": v}) + "\n```")
    | st.binary(max_size=60).map(lambda b: b.decode("utf-8", "replace"))
)


def _call(text, ids=IDS):
    try:
        return parse_verdicts(text, ids)
    except ParseError as exc:
        assert str(exc).strip(), "a ParseError must say what is wrong"
        return None


@FUZZ
@given(text=answers)
def test_arbitrary_answers_parse_or_raise_parse_error(text):
    out = _call(text)
    if out is not None:
        assert list(out) == IDS
        assert all(type(lab) is int and lab in (0, 1) and isinstance(r, str) for lab, r in out.values())


@FUZZ
@given(
    labels=st.lists(st.sampled_from([0, 1]), min_size=3, max_size=3),
    rationales=st.lists(st.text(max_size=50), min_size=3, max_size=3),
    order=st.permutations(IDS),
)
def test_every_valid_answer_is_accepted_in_any_order(labels, rationales, order):
    truth = dict(zip(IDS, zip(labels, rationales)))
    text = json.dumps(
        {"verdicts": [{"constraint_id": i, "rationale": truth[i][1], "label": truth[i][0]} for i in order]}
    )
    assert parse_verdicts(text, IDS) == truth


@FUZZ
@given(entries=st.lists(verdict_like, min_size=1, max_size=4))
def test_answers_with_any_bad_entry_are_rejected(entries):
    """Accepted only if every entry is exactly {id, rationale: str, label: int 0/1} covering IDS once."""

    def valid(e):
        return (
            set(e) == {"constraint_id", "rationale", "label"}
            and e["constraint_id"] in IDS
            and isinstance(e["rationale"], str)
            and type(e["label"]) is int
            and e["label"] in (0, 1)
        )

    expected_ok = all(valid(e) for e in entries) and sorted(e["constraint_id"] for e in entries) == IDS
    out = _call(json.dumps({"verdicts": entries}))
    assert (out is not None) == expected_ok


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,  # RecursionError inside json.loads
        '{"verdicts": ' + "[" * 5000 + "]" * 5000 + "}",
        "1" * 5000,  # ValueError: int digits limit
        '{"verdicts": [{"constraint_id": "c1", "rationale": "", "label": ' + "1" * 5000 + "}]}",
    ],
    ids=["deep_array", "deep_verdicts", "huge_int", "huge_int_label"],
)
def test_pathological_json_raises_parse_error(text):
    """Minimal reproductions: json.loads raises RecursionError / a plain ValueError here."""
    with pytest.raises(ParseError):
        parse_verdicts(text, IDS)


@FUZZ
@given(text=answers, ids=st.lists(st.text(max_size=8), max_size=4, unique=True))
def test_any_expected_ids_never_crash(text, ids):
    _call(text, ids)
