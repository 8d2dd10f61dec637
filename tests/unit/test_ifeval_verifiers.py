"""IFEval verifiers: one positive and one negative case per instruction, plus edge cases.

Expected verdicts are worked out by hand from the instruction definitions in the IFEval
paper (Zhou et al. 2023, arXiv 2311.07911, Table 1) and its strict/loose rules (§3).
"""

import pytest

from reform_core.verifiers import get, registered_ids
from reform_core.verifiers.ifeval import INSTRUCTION_IDS, check, loose_variants

BULLETS3 = "Intro line\n* one\n* two\n- three"
CASES = [
    # (instruction id, kwargs, text, expected strict verdict)
    ("punctuation:no_comma", {}, "No commas here.", True),
    ("punctuation:no_comma", {}, "One, two.", False),
    ("keywords:existence", {"keywords": ["apple", "pie"]}, "I like Apple PIE.", True),
    ("keywords:existence", {"keywords": ["apple", "pie"]}, "I like apple cake.", False),
    ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "at least"}, "cat Cat", True),
    ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "at least"}, "one cat", False),
    ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "less than"}, "one cat", True),
    ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "less than"}, "cat cat", False),
    ("keywords:forbidden_words", {"forbidden_words": ["bad"]}, "A badge is fine.", True),
    ("keywords:forbidden_words", {"forbidden_words": ["bad"]}, "That is BAD.", False),
    ("keywords:letter_frequency", {"letter": "Z", "let_frequency": 3, "let_relation": "at least"}, "zz Z", True),
    ("keywords:letter_frequency", {"letter": "z", "let_frequency": 3, "let_relation": "at least"}, "zz", False),
    ("keywords:letter_frequency", {"letter": "z", "let_frequency": 3, "let_relation": "less than"}, "zz", True),
    (
        "language:response_language",
        {"language": "de"},
        "Das ist ein kurzer deutscher Satz über das Wetter in Berlin und die Menschen dort.",
        True,
    ),
    (
        "language:response_language",
        {"language": "de"},
        "This is a short English sentence about the weather in London and its people.",
        False,
    ),
    ("change_case:english_capital", {}, "THIS IS ALL IN CAPITAL LETTERS AND IN ENGLISH.", True),
    ("change_case:english_capital", {}, "THIS IS NOT all capitals.", False),
    ("change_case:english_lowercase", {}, "this is all in lowercase letters and in english.", True),
    ("change_case:english_lowercase", {}, "this is Not all lowercase.", False),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        "The NASA and ESA agencies.",
        True,
    ),
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "less than"},
        "The NASA and ESA agencies.",
        False,
    ),
    ("length_constraints:number_words", {"num_words": 5, "relation": "less than"}, "one two three four", True),
    ("length_constraints:number_words", {"num_words": 5, "relation": "at least"}, "one two three four", False),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 3, "relation": "at least"},
        "Mr. Smith came. He sat down! Did he stay?",
        True,
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 3, "relation": "less than"},
        "Mr. Smith came. He sat down! Did he stay?",
        False,
    ),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "First part.\n***\nSecond part.", True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "First.\n***\n***\nSecond.", False),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "Then"},
        'Intro.\n\n"Then, we go.',
        True,
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "Intro.\n\nAfter that.",
        False,
    ),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "Dear [name] at [address]", True),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "Dear [name]", False),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Body.\n\nP.S. see you", True),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Body.\n\nP.S. see you", False),
    ("detectable_format:number_bullet_lists", {"num_bullets": 3}, BULLETS3, True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, BULLETS3, False),
    ("detectable_format:constrained_response", {}, "Well... My answer is maybe.", True),
    ("detectable_format:constrained_response", {}, "My answer is perhaps.", False),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and **two**", True),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and ** **", False),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "SECTION", "num_sections": 2},
        "SECTION 1\nabc\nSECTION 2\ndef",
        True,
    ),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "SECTION", "num_sections": 3},
        "SECTION 1\nabc\nSECTION 2\ndef",
        False,
    ),
    ("detectable_format:json_format", {}, '```json\n{"a": [1, 2]}\n```', True),
    ("detectable_format:json_format", {}, '{"a": 1,}', False),
    ("detectable_format:title", {}, "<<My Title>>\nText", True),
    ("detectable_format:title", {}, "<< >>\nText", False),
    ("combination:two_responses", {}, "First answer.\n******\nSecond answer.", True),
    ("combination:two_responses", {}, "Same.\n******\nSame.", False),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Write a poem."}, "write a poem. Roses are red.", True),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Write a poem."}, "Roses are red.", False),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, '"Done. Any other questions?"', True),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, "Done. Any more questions?", False),
    ("startend:quotation", {}, '  "quoted"  ', True),
    ("startend:quotation", {}, '"', False),
]


def test_all_25_instruction_ids_registered():
    assert len(INSTRUCTION_IDS) == 25
    assert registered_ids("ifeval:") == [f"ifeval:{i}" for i in INSTRUCTION_IDS]


def test_every_instruction_has_a_positive_and_a_negative_case():
    seen = {(iid, expected) for iid, _, _, expected in CASES}
    for iid in INSTRUCTION_IDS:
        assert (iid, True) in seen and (iid, False) in seen, iid


@pytest.mark.parametrize("iid,kwargs,text,expected", CASES)
def test_strict_verdicts(iid, kwargs, text, expected):
    res = get(f"ifeval:{iid}")(text, **kwargs)
    assert res.passed is expected, res.evidence
    assert res.score == (1.0 if expected else 0.0)
    assert res.evidence


@pytest.mark.parametrize("iid", INSTRUCTION_IDS)
@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_and_whitespace_follow_nothing(iid, text):
    kwargs = next(kw for i, kw, _, _ in CASES if i == iid)
    assert not check(iid, text, kwargs, mode="strict").passed
    assert not check(iid, text, kwargs, mode="loose").passed


def test_none_kwargs_are_ignored_and_unknown_ones_rejected():
    assert check("punctuation:no_comma", "ok", {"num_words": None}).passed
    with pytest.raises(ValueError, match="unexpected kwargs.*num_words"):
        check("punctuation:no_comma", "ok", {"num_words": 3})
    with pytest.raises(ValueError, match="missing kwargs.*keywords"):
        check("keywords:existence", "ok", {"keywords": None})
    with pytest.raises(ValueError, match="relation"):
        check("length_constraints:number_words", "a b", {"num_words": 2, "relation": "more than"})
    with pytest.raises(ValueError, match="instruction_id"):
        check("no:such", "text")
    with pytest.raises(ValueError, match="mode"):
        check("punctuation:no_comma", "text", mode="lenient")


def test_loose_variants_are_the_papers_eight():
    variants = loose_variants("Sure, here:\n**body**\nBye")
    assert variants == [
        "Sure, here:\n**body**\nBye",
        "**body**\nBye",
        "Sure, here:\n**body**",
        "**body**",
        "Sure, here:\nbody\nBye",
        "body\nBye",
        "Sure, here:\nbody",
        "body",
    ]


def test_loose_mode_drops_a_chatty_first_line():
    text = "Sure, here is my answer:\nNo commas at all here"
    assert not check("punctuation:no_comma", text).passed
    res = check("punctuation:no_comma", text, mode="loose")
    assert res.passed and res.detail["variant"] == 1


def test_loose_mode_removes_asterisks():
    text = '**"A quoted answer"**'
    assert not check("startend:quotation", text).passed
    assert check("startend:quotation", text, mode="loose").passed


def test_windows_line_endings_are_checked_as_given_like_the_reference():
    """The reference splits paragraphs at ``"\\n\\n"`` of the response as given: a Windows
    ``"\\r\\n\\r\\n"`` is no paragraph break there, so it is none here."""
    kw = {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "second"}
    unix = "First paragraph.\n\nSecond paragraph."
    assert check("length_constraints:nth_paragraph_first_word", unix, kw).passed
    windows = check("length_constraints:nth_paragraph_first_word", unix.replace("\n", "\r\n"), kw)
    assert not windows.passed and windows.detail["count"] == 1


def test_unicode_text():
    assert check("change_case:english_lowercase", "ça va très bien, merci beaucoup mon ami.", {}).passed is False
    assert check("punctuation:no_comma", "日本語の文章、読点は英語のカンマではない。").passed
    assert check(
        "language:response_language", "Это короткое предложение на русском языке о погоде.", {"language": "ru"}
    ).passed
    assert check(
        "length_constraints:number_words", "naïve café résumé", {"num_words": 3, "relation": "at least"}
    ).passed


def test_nested_markdown_bullets_and_highlights():
    text = "# Title\n* top\n  * nested\n    - deeper\n**bold** and *it*\n---"
    res = check("detectable_format:number_bullet_lists", text, {"num_bullets": 4})
    # "* top", "  * nested", "    - deeper" and the "---" rule (a line starting with "-")
    assert res.passed and res.lines == (2, 3, 4, 6)
    # **bold** counts once (as a double highlight), *it* once; the list stars pair up with nothing
    assert check("detectable_format:number_highlighted_sections", text, {"num_highlights": 2}).passed
    assert not check("detectable_format:number_highlighted_sections", text, {"num_highlights": 3}).passed


def test_language_detection_is_deterministic():
    text = "Ciao, come stai? Oggi il tempo è bello e andiamo al mare."
    verdicts = {check("language:response_language", text, {"language": "it"}).passed for _ in range(5)}
    assert verdicts == {True}


def test_evidence_points_at_lines():
    res = check("punctuation:no_comma", "fine\nnot, fine\nok, ok, ok")
    assert res.lines == (2, 3) and "3 commas" in res.evidence


def test_keywords_are_regular_expressions_as_in_the_reference():
    """The reference passes keywords to ``re.search`` / ``re.findall`` unescaped; one that is
    no valid expression ("(c": where the reference stops with an error) matches literally here."""
    kw = {"keyword": "a.b", "frequency": 1, "relation": "at least"}
    assert check("keywords:frequency", "axb", kw).passed
    assert check("keywords:existence", "colour", {"keywords": ["colou?r"]}).passed
    assert not check("keywords:forbidden_words", "a grey cat", {"forbidden_words": ["gr[ae]y"]}).passed
    # Python >= 3.11 reads "C++" as the possessive "C+": CCC matches, as in the reference
    assert check("keywords:existence", "I code in CCC daily.", {"keywords": ["C++"]}).passed
    assert check("keywords:existence", "see (c) above", {"keywords": ["(c"]}).passed
    assert not check("keywords:existence", "see c above", {"keywords": ["(c"]}).passed


def test_first_word_stops_at_the_references_punctuation():
    """The reference's first word ends at the first of . , ? ! ' " (so "Bob's" is "bob")."""
    kw = {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "bob"}
    assert check("length_constraints:nth_paragraph_first_word", "Intro.\n\nBob's turn.", kw).passed
    assert check("length_constraints:nth_paragraph_first_word", 'Intro.\n\n"Bob?" she asked.', kw).passed
    with pytest.raises(ValueError, match="nth_paragraph"):  # the reference draws one at random
        check("length_constraints:nth_paragraph_first_word", "a\n\nb", {**kw, "nth_paragraph": 3})


def test_bullet_patterns_are_the_references_multiline_expressions():
    """``^\\s*\\*[^\\*].*$`` with re.MULTILINE: ``[^\\*]`` may be the line break, so a lone
    "*" line followed by "- item" counts twice (once per pattern), as in the reference."""
    res = check("detectable_format:number_bullet_lists", "*\n- item", {"num_bullets": 2})
    assert res.passed and res.lines == (1, 2)


def test_json_fences_are_removed_one_after_the_other():
    """The reference strips ```json, ```Json, ```JSON and ``` in turn, then a final ```."""
    assert check("detectable_format:json_format", '```json```{"a": 1}```', {}).passed


def test_letter_frequency_counts_any_single_character():
    """Google's current reference counts a non-letter such as '#' as given (an earlier
    version replaced it by a random letter)."""
    kw = {"letter": "#", "let_frequency": 2, "let_relation": "at least"}
    assert check("keywords:letter_frequency", "# one\n# two", kw).passed
    assert not check("keywords:letter_frequency", "# one", kw).passed
