"""Presence detectors feature:<key> (docs/metrics.md#catalog): positive, negative and edge cases."""

import pytest

from reform_core.catalog import load_catalog
from reform_core.verifiers import base
from reform_core.verifiers.features import detect_features


def present(key, text, **params):
    return base.get(f"feature:{key}")(text, **params)


# (feature, text, present?, expected deciding lines or None)
CASES = [
    # line layout
    ("column_alignment", "| a | b |\n|---|---|\n| 1 | 2 |", True, (1, 2, 3)),
    ("column_alignment", "Name    Age\nAlice   30\nBob     41", True, (1, 2, 3)),
    ("column_alignment", "One sentence.  Another sentence after two spaces that runs long here.\nNext.", False, None),
    ("dialogue_turns", "Alice: Hi there.\nBob: Hello!\nAlice: How are you?", True, (1, 2, 3)),
    ("dialogue_turns", "**Interviewer:** Why?\n**Dr. Lee:** Because.\n**Interviewer:** Thanks.", True, (1, 2, 3)),
    ("dialogue_turns", "Name: Alice\nAge: 30\nCity: Paris", False, None),
    ("line_breaks_and_spacing", "First part.\n\nSecond part.", True, (3,)),
    ("line_breaks_and_spacing", "One single line of text.", False, None),
    ("single_text_block", "Just one paragraph, written\nover two lines.", True, (1, 2)),
    ("single_text_block", "Para one.\n\nPara two.", False, None),
    ("single_text_block", "- only a list", False, None),
    # document structure
    ("appendix_section", "# Report\n\nBody.\n\n## Appendix A: Data\n\nRows.", True, (5,)),
    ("appendix_section", "# Report\n\nThe appendix of the body is an organ.", False, None),
    ("document_template", "Dear [Name],\n\nYour order [Order ID] ships on ____.", True, (1, 3)),
    ("document_template", "See [the docs](https://x.org) and reference [1].", False, None),
    ("document_title", "# My Title\n\nBody text here.", True, (1,)),
    ("document_title", "A Short Title\n\nBody text follows here.", True, (1,)),
    ("document_title", "This is a normal opening sentence.\n\nMore text.", False, None),
    ("front_matter", "---\ntitle: x\n---\n# Body\n\ntext", True, (1,)),
    ("front_matter", "## Abstract\n\nWe study X.\n\n## Method\n\nSteps.", True, (1,)),
    ("front_matter", "## Method\n\nSteps.\n\n## Results\n\nNumbers.", False, None),
    (
        "repeated_section_pattern",
        "## Plan A\n\n**Cost:** low\n\n**Risk:** high\n\n## Plan B\n\n**Cost:** high\n\n**Risk:** low",
        True,
        (1, 7),
    ),
    (
        "repeated_section_pattern",
        "## Intro\n\nText.\n\n## Details\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |",
        False,
        None,
    ),
    ("section_divider", "Part one.\n\n---\n\nPart two.", True, (3,)),
    ("section_divider", "Part one.\n\n* * *\n\nPart two.", True, (3,)),
    ("section_divider", "Part one.\n\nPart two.", False, None),
    ("section_headings", "# Intro\n\ntext\n\n## More\n\ntext", True, (1, 5)),
    ("section_headings", "**Background**\n\nSome text.", True, (1,)),
    ("section_headings", "Plain text with a #hashtag.\n\nAnd **bold** inside a sentence.", False, None),
    ("title_and_subtitle", "# Kyoto in Autumn\n## A three-day guide\n\nText.", True, (1, 2)),
    ("title_and_subtitle", "# Rust: A Practical Guide\n\nText.", True, (1,)),
    ("title_and_subtitle", "# Kyoto\n\nA paragraph of body text follows.", False, None),
    # lists
    ("bullet_list", "Intro\n\n- a\n- b", True, (3, 4)),
    ("bullet_list", "• first\n• second", True, (1, 2)),
    ("bullet_list", "1. a\n2. b", False, None),
    ("checklist", "- [ ] buy milk\n- [x] pay rent", True, (1, 2)),
    ("checklist", "☐ pack bags\n☑ book hotel", True, (1, 2)),
    ("checklist", "- buy milk\n- pay rent", False, None),
    ("nested_list", "- a\n  - b\n- c", True, (2,)),
    ("nested_list", "- a\n- b", False, None),
    ("numbered_enumeration", "1. a\n2. b", True, (1, 2)),
    ("numbered_enumeration", "(a) first\n(b) second", True, (1, 2)),
    ("numbered_enumeration", "一、准备\n二、出发", True, (1, 2)),
    ("numbered_enumeration", "- a\n- b\n\nIn 2024 we grew.", False, None),
    # structured fields
    ("key_value_fields", "**Name:** Alice\n**Role:** Engineer", True, (1, 2)),
    ("key_value_fields", "- Price: $10\n- Rating: 4.5", True, (1, 2)),
    ("key_value_fields", "Visit https://example.org today.\nThe time is 10:30 now.", False, None),
    ("table_or_grid", "| a | b |\n|---|---|\n| 1 | 2 |", True, (1, 2, 3)),
    ("table_or_grid", "| a | b |\n| 1 | 2 |", True, (1, 2)),  # no separator row: still a grid
    ("table_or_grid", "```\n+---+---+\n| 1 | 2 |\n+---+---+\n```", True, (2, 4)),
    ("table_or_grid", "Choose a|b or c.", False, None),
    # response framing
    (
        "code_and_explanation",
        "This function adds two numbers together.\n\n```python\ndef f(a, b):\n    return a + b\n```",
        True,
        (1, 3),
    ),
    ("code_and_explanation", "```python\nx = 1\n```", False, None),
    ("letter_or_email", "Dear Ms. Lee,\n\nThank you for your note.\n\nBest regards,\nSam", True, (1, 5)),
    ("letter_or_email", "Hello! Here is the answer.\n\nIt is 42.", False, None),
    ("schedule_or_itinerary", "## Day 1\n\nTemples.\n\n## Day 2\n\nMarkets.", True, (1, 5)),
    ("schedule_or_itinerary", "- 09:00 Breakfast\n- 12:30 Lunch", True, (1, 2)),
    ("schedule_or_itinerary", "We met on a day in spring.", False, None),
    # content organisation
    ("question_and_answer", "Q: What is it?\nA: A test.", True, (1, 2)),
    ("question_and_answer", "### Why does it matter?\n\nBecause it does.", True, (1,)),
    ("question_and_answer", "It matters because it does. Does it? Yes.", False, None),
    # inline markers and voice
    ("arrows_and_separators", "Input → model → output", True, (1,)),
    ("arrows_and_separators", "Plan A | Plan B", True, (1,)),
    ("arrows_and_separators", "A plain sentence - with a dash.", False, None),
    ("typographic_emphasis", "This is **bold** text.", True, (1,)),
    ("typographic_emphasis", "Line\n\nSome <u>underlined</u> words.", True, (3,)),
    ("typographic_emphasis", "snake_case_name and 2 * 3 = 6 are plain.", False, None),
    ("labels_and_tags", "[High] Fix the leak\n[Low] Paint the wall", True, (1, 2)),
    ("labels_and_tags", "Posted with #travel and #food.", True, (1,)),
    ("labels_and_tags", "See [the docs](https://x.org).", False, None),
    ("quotes_and_parentheses", 'The word "serendipity" (a happy accident).', True, (1,)),
    ("quotes_and_parentheses", "It's Bob's book.", False, None),
    ("direct_address", "You should try this.", True, (1,)),
    ("direct_address", "The youth of the bayou are fine.", False, None),
    ("signature_and_sign_off", "Body.\n\nCheers,\nSam", True, (3,)),
    ("signature_and_sign_off", "Body.\n\n— Ada Lovelace", True, (3,)),
    ("signature_and_sign_off", "Body text that ends normally.", False, None),
    ("emoji_and_symbols", "Great job 🎉", True, (1,)),
    ("emoji_and_symbols", "Done ✓ and ★ rated", True, (1,)),
    ("emoji_and_symbols", "It is 25°C © 2024.", False, None),
    # supplementary and technical blocks
    ("callout_or_note_block", "> [!WARNING]\n> Hot surface.", True, (1,)),
    ("callout_or_note_block", "**Note:** back up first.", True, (1,)),
    ("callout_or_note_block", "> Quoting a famous person here.", False, None),
    ("captioned_content", "| a | b |\n|---|---|\n| 1 | 2 |\n\n*Table 1: values*", True, (5,)),
    (
        "captioned_content",
        "| a | b |\n|---|---|\n| 1 | 2 |\n\nThe table shows values that matter for the analysis in detail.",
        False,
        None,
    ),
    ("citations_and_links", "See https://example.org for more.", True, (1,)),
    ("citations_and_links", "As shown [1], growth slowed (Smith, 2020).", True, (1,)),
    ("citations_and_links", "Claim with a footnote.[^1]\n\n[^1]: Source text.", True, (1,)),
    ("citations_and_links", "No sources here at all.", False, None),
    ("code_annotations", "```python\n# add one\nx = x + 1\n```", True, (2,)),
    ("code_annotations", "```js\nlet x = 1; // init\n```", True, (2,)),
    ("code_annotations", "```c\n#include <stdio.h>\nint x;\n```", False, None),
    ("code_block", "Text\n\n```\ncode\n```", True, (3, 4, 5)),
    ("code_block", "Inline `code` only.", False, None),
    ("textual_diagrams", "```\nsrc/\n├── main.py\n└── util.py\n```", True, (3, 4)),
    ("textual_diagrams", "```mermaid\ngraph TD; A-->B\n```", True, (1,)),
    ("textual_diagrams", "Start -> Check -> End", True, (1,)),
    ("textual_diagrams", "Just text with one arrow -> here.", False, None),
    ("files_and_modules", "**app.py**\n\n```python\nx = 1\n```", True, (1,)),
    ("files_and_modules", "```python\n# utils/io.py\nx = 1\n```", True, (2,)),
    ("files_and_modules", "Here is code:\n\n```python\nx = 1\n```", False, None),
    ("machine_readable_block", '```json\n{"a": 1}\n```', True, (1,)),
    ("machine_readable_block", "```\n<root><a>1</a></root>\n```", True, (1,)),
    ("machine_readable_block", '{"a": 1, "b": [1, 2]}', True, (1,)),
    ("machine_readable_block", "```python\nx = {'a': 1}\n```", False, None),
    ("mathematical_notation", "Energy is $E = mc^2$.", True, (1,)),
    ("mathematical_notation", "The area is \\(\\pi r^2\\).", True, (1,)),
    ("mathematical_notation", "Text\n\n$$\n\\int_0^1 x\\,dx\n$$", True, (3,)),
    ("mathematical_notation", "Costs $5 and $10 today.", False, None),
]


@pytest.mark.parametrize("key, text, expected, lines", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_detector(key, text, expected, lines):
    r = present(key, text)
    assert r.passed is expected, r.evidence
    assert r.score == (1.0 if expected else 0.0)
    if lines is not None:
        assert r.lines == lines, r.evidence
    if expected:
        assert "line" in r.evidence
    # Windows line endings give the same verdict and line numbers
    r2 = present(key, text.replace("\n", "\r\n"))
    assert (r2.passed, r2.lines) == (r.passed, r.lines)


DETECTABLE = load_catalog("reformbench").rule_detectable_keys()


def test_every_detector_has_a_positive_and_a_negative_case():
    pos = {k for k, _, e, _ in CASES if e}
    neg = {k for k, _, e, _ in CASES if not e}
    assert pos == neg == set(DETECTABLE)


@pytest.mark.parametrize("text", ["", "   \n\t\n  ", None])
def test_empty_and_whitespace_output_has_no_feature(text):
    results = detect_features(text)
    assert list(results) == DETECTABLE
    assert [k for k, r in results.items() if r.passed] == []


def test_code_fence_hash_is_not_a_heading_nor_a_list():
    text = "Intro text here.\n\n```bash\n# install\n- not a list\n| a | b |\n```"
    r = detect_features(text)
    assert not r["section_headings"].passed
    assert not r["bullet_list"].passed
    assert not r["table_or_grid"].passed
    assert r["code_annotations"].passed and r["code_annotations"].lines == (4,)


def test_nested_markdown_list_in_quote_and_table_in_list():
    text = "> Quoted:\n> - a\n>   - b\n\n- item\n\n  | x | y |\n  |---|---|\n  | 1 | 2 |"
    r = detect_features(text)
    assert r["nested_list"].passed and r["nested_list"].lines == (3,)
    assert r["table_or_grid"].passed and r["table_or_grid"].lines == (7, 8, 9)
    assert r["bullet_list"].lines == (2, 3, 5)


def test_unicode_cjk_and_emoji():
    text = "# 旅行计划\n\n第一天：参观寺庙 🏯\n第二天：逛市场\n\n您好，请注意安全。"
    r = detect_features(text)
    assert r["document_title"].passed
    assert r["schedule_or_itinerary"].lines == (3, 4)
    assert r["emoji_and_symbols"].lines == (3,) and "🏯" in r["emoji_and_symbols"].detail["symbols"]
    assert r["direct_address"].lines == (6,)
    assert not r["bullet_list"].passed


def test_single_text_block_units_and_bad_param():
    assert present("single_text_block", "One. Two.", unit="sentence").passed is False
    assert present("single_text_block", "Only one sentence here.", unit="sentence").passed is True
    assert present("single_text_block", "- a\n- b", unit="block").passed is True
    with pytest.raises(ValueError, match="unit must be"):
        present("single_text_block", "x", unit="word")
    with pytest.raises(ValueError, match="feature:bullet_list: unknown parameter"):
        present("bullet_list", "- a", n=3)


def test_nested_list_depth_param():
    text = "- a\n  - b\n    - c"
    assert present("nested_list", text, depth=3).lines == (3,)
    assert not present("nested_list", text, depth=4).passed


def test_detect_features_rejects_a_catalog_without_detectors():
    with pytest.raises(ValueError, match="without a feature:\\* detector"):
        from reform_core.catalog import parse_catalog

        cat = parse_catalog(
            {
                "name": "x",
                "version": "1",
                "categories": [{"key": "c", "name": "C"}],
                "features": [
                    {
                        "key": "tone",
                        "name": "Tone",
                        "category": "c",
                        "definition": "d",
                        "require_template": "r",
                        "forbid_template": "f",
                        "acceptance": {"require": "r", "forbid": "f"},
                        "rule_detectable": True,
                    }
                ],
            }
        )
        detect_features("text", cat)
