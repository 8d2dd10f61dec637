"""The four WISE checkers (docs/metrics.md#wording-forms-and-checkers; WISE paper App. R) and
their failure directions."""

import pytest

from reform_core.verifiers import base


def check(verifier_id, text, **params):
    return base.get(verifier_id)(text, **params)


def test_all_four_are_registered():
    assert base.registered_ids("wise:") == [
        "wise:exact_words",
        "wise:json_keys",
        "wise:keyword_once",
        "wise:word_range",
    ]


@pytest.mark.parametrize(
    "text, n, passed, direction, count",
    [
        ("Jupiter is the largest planet.", 5, True, "exact", 5),  # WISE paper Table 8
        ("Jupiter is the largest planet here.", 5, False, "over", 6),
        ("Jupiter", 5, False, "under", 1),
        ("Au", 5, False, "under", 1),
        ("## Answer\n\n- Gold's symbol is Au", 7, True, "exact", 7),  # Markdown markers count
        ("  spaced\t\tout \n words  ", 3, True, "exact", 3),
        ("", 0, True, "exact", 0),
        (None, 5, False, "under", 0),
        ("well-known can't", 2, True, "exact", 2),
    ],
)
def test_exact_words(text, n, passed, direction, count):
    r = check("wise:exact_words", text, n=n)
    assert (r.passed, r.detail["direction"], r.detail["word_count"]) == (passed, direction, count)
    assert r.score == (1.0 if passed else 0.0)
    assert r.detail["error"] == count - n


def test_word_count_uses_python_whitespace_split():
    text = "a\u00a0b\u2003c\nd"  # no-break space and em space are whitespace for str.split
    assert check("wise:exact_words", text, n=4).passed
    assert len(text.split()) == 4


@pytest.mark.parametrize(
    "n_words, direction",
    [(7, "under"), (8, "within"), (10, "within"), (12, "within"), (13, "over")],
)
def test_word_range_is_inclusive(n_words, direction):
    r = check("wise:word_range", " ".join(["w"] * n_words))
    assert r.detail["direction"] == direction
    assert r.passed is (direction == "within")


@pytest.mark.parametrize(
    "text, occurrences, direction",
    [
        ("The ocean is vast.", 1, "once"),
        ("OCEAN waves; the Ocean.", 2, "multiple"),
        ("Oceans and oceanic life.", 0, "zero"),  # whole words only
        ("ocean_floor is one token", 0, "zero"),
        ("(ocean) - ocean's", 2, "multiple"),  # punctuation is a word boundary
        ("", 0, "zero"),
    ],
)
def test_keyword_once(text, occurrences, direction):
    r = check("wise:keyword_once", text, keyword="ocean")
    assert (r.detail["occurrences"], r.detail["direction"]) == (occurrences, direction)
    assert r.passed is (occurrences == 1)


def test_keyword_reports_lines_and_escapes_regex_characters():
    r = check("wise:keyword_once", "first line\nuse C++ here", keyword="C++")
    assert r.passed and r.lines == (2,)


@pytest.mark.parametrize(
    "text, passed, direction",
    [
        ('{"name": "Ada", "year": 1815}', True, "ok"),
        ('  {"year": 1815, "name": "Ada"}\n', True, "ok"),
        ('{"name": "Ada"}', False, "wrong_keys"),
        ('{"name": "Ada", "year": 1815, "note": 1}', False, "wrong_keys"),
        ('["name", "year"]', False, "wrong_keys"),
        ('```json\n{"name": "Ada", "year": 1815}\n```', False, "parse_failure"),
        ('Here is the JSON: {"name": "Ada", "year": 1815}', False, "parse_failure"),
        ("", False, "parse_failure"),
        (None, False, "parse_failure"),
    ],
)
def test_json_keys(text, passed, direction):
    r = check("wise:json_keys", text, keys=["name", "year"])
    assert (r.passed, r.detail["direction"]) == (passed, direction)


@pytest.mark.parametrize(
    "verifier_id, params, message",
    [
        ("wise:exact_words", {"n": -1}, "non-negative integer"),
        ("wise:exact_words", {"n": "8"}, "non-negative integer"),
        ("wise:word_range", {"low": 12, "high": 8}, "must not exceed"),
        ("wise:keyword_once", {"keyword": " "}, "non-empty string"),
        ("wise:json_keys", {"keys": "name"}, "not one string"),
        ("wise:json_keys", {"keys": []}, "non-empty"),
    ],
)
def test_bad_parameters_are_named(verifier_id, params, message):
    with pytest.raises(ValueError, match=message):
        check(verifier_id, "text", **params)
