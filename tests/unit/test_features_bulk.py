"""Speed paths of the feature detectors give the same answers as the plain ones:
the skipped inline parser (vs markdown-it's own), the emoji scan (vs the emoji package),
needle-filtered greps (vs the full pattern) and detect_features_many (vs detect_features)."""

import emoji
import pytest

from reform_core.verifiers import features, markdown
from reform_core.verifiers.features import detect_features, detect_features_many

# Inline contents with and without inline syntax, line breaks of every kind, containers.
TRICKY = [
    "plain words\non two lines",
    "soft break with one space \nnext line",
    "hard break with two spaces  \nnext line",
    "hard break with many spaces     \n   indented next line",
    "tab before break\t\nand\t \nmixed \t\nend",
    "  \n\nlead",
    "Visit www.example.org today",
    "See http://example.org today",
    "Mail someone@example.org today",
    "snake_case and 2 * 3 and a~b and $5 and \\escape and `code` and [link](u) and <b>x</b> and &amp;",
    "# Heading with trailing spaces   \n\nSetext title  \n===",
    "- item one  \n  continued\n- item two\n  - nested \n    deeper",
    "> quote line  \n> second line\n>\n> third",
    "| a | b |\n|---|---|\n| plain cell | **bold** cell |\n| x  | y |",
    "第一行  \n第二行 🎉\n第三行",
    "Footnote[^1] here.\n\n[^1]: the note  \n    continues",
    "---\ntitle: x\n---\nBody  \ntext",
    "line one\\\nline two\nwwwx. and www without dot",
]


@pytest.mark.parametrize("text", TRICKY)
def test_skipping_the_inline_parser_changes_no_fact(text):
    reference = markdown._make_parser(skip_plain_inline=False)
    expected = markdown._collect(text, reference.parse(text))
    assert markdown.parse_uncached(text) == expected
    assert expected.segments  # the case has prose to compare


def test_some_contents_skip_the_inline_parser_and_some_do_not():
    tokens = [t for t in markdown._MD.parse("plain line\n\nwith **bold**") if t.type == "inline"]
    assert [bool(t.meta.get("plain")) for t in tokens] == [True, False]


# Every rule the per-text parser may leave out, each in a text that uses it (and in its
# containers), so a wrong "cannot match" test shows up as different tokens.
RULE_CASES = [
    "---\ntitle: x\n---\n\n# Body",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "    indented code\n\n- item\n\n      code in an item\n\n>     code in a quote\n\n\tcode after a tab",
    "```python\nx = 1\n```\n\n~~~\ntilde fence\n~~~",
    "> quote\n> - list in quote\n>\n> [!NOTE]\n> alert",
    "- a\n- b\n\n1) one\n2) two\n\n10. ten\n\n-\n  empty first line\n\n>- tight quote list\n\n* star\n+ plus",
    "Text with a [ref].\n\n[ref]: http://example.org 'Title'",
    "# H1\n\n###### H6\n\n- # heading in item",
    "Setext\n===\n\nSub\n---\n\n> Quoted\n> ===\n\n- Item\n  ---\n\nOne\n=",
    "<div>\nhtml block\n</div>\n\ninline <b>html</b> and <http://example.org> and <a@b.org>",
    "a [link](http://x.org) and ![image](x.png) and `code` and \\*escaped\\* and &amp; &copy;",
    "**bold** and _em_ and ~~strike~~ and ~single~",
    "www.example.org and https://example.org/x and mailto:a@b.org and xmpp:a@b.org and c@d.org",
    "Claim.[^1]\n\n[^1]: The note.",
    "$x^2$ and $$y$$\n\n$$\nz\n$$ (1)",
    "\\(a\\) and\n\n\\[ b \\]\n\n\\[ c \\] (2)",
    "***\n\n- - -\n\n___",
    "plain words only\non two lines",
]


@pytest.mark.parametrize("text", RULE_CASES + TRICKY)
def test_the_per_text_parser_gives_the_full_parsers_tokens(text):
    text = markdown.normalise(text)
    assert markdown._parser_for(text).parse(text) == markdown._MD.parse(text)


def test_the_per_text_parser_leaves_out_rules_a_text_cannot_use():
    full, lean = markdown._MD, markdown._parser_for("plain words only")
    assert len(lean.get_active_rules()["block"]) < len(full.get_active_rules()["block"])
    assert len(lean.get_active_rules()["inline"]) < len(full.get_active_rules()["inline"])
    assert lean.inline.terminator_re.pattern != full.inline.terminator_re.pattern  # no stop at "w"
    assert markdown._parser_for(RULE_CASES[0]) is not lean
    assert markdown._parser_for("other plain words") is lean  # one parser per rule set


def test_the_full_parser_stops_the_text_rule_only_at_the_default_characters_and_w():
    extra = set(markdown._MD.inline.terminator_re.pattern) - set(markdown.ParserInline().terminator_re.pattern)
    assert extra == {"w"}


EMOJI_CASES = [
    "Great job 🎉 and 👍🏽 done",
    "Keycaps 1️⃣ 2️⃣ #️⃣ *️⃣ 10️⃣ and plain 1 2 #",
    "Family 👨‍👩‍👧‍👦 and flag 🇯🇵 and ❤️‍🔥",
    "Non-RGI 👨🏻‍🦰‍🚀 joins and x🏻\u200d😀 tail",
    "Text-style ☺︎ vs ☺️, © ® ™ and ✓ ★",
    "中文 🏯 混合 é à ü",
    "no emoji at all",
]


@pytest.mark.parametrize("text", EMOJI_CASES)
def test_emoji_scan_matches_the_emoji_package(text):
    assert features._emoji_list(text) == emoji.emoji_list(text)


NEEDLED = [
    (features._ARROW_OR_SEPARATOR, features._ARROW_OR_SEPARATOR_NEEDLE),
    (features._PAREN, features._PAREN_NEEDLE),
    (features._SECOND_PERSON, features._SECOND_PERSON_NEEDLE),
    (features._MATH, features._MATH_NEEDLE),
    (features._GAP_INSIDE, features._GAP_NEEDLE),
    (features._DIAGRAM_LINE, features._DIAGRAM_NEEDLE),
]
GREP_LINES = [
    "Input → model → output",
    "Plan A | Plan B",
    "a -> b",
    "x <= y",
    "ratio: 3:1",
    "a :: b",
    "(a note) here",
    "（注）",
    "You and your team",
    "bayou youth",
    "你好",
    "x^2 + y = 3",
    "\\frac{1}{2}",
    "a ≤ b",
    "Name    Age",
    "col\tcol",
    "├── main.py",
    "|-- src",
    "A -> B -> C",
    "plain text line",
    "",
]


@pytest.mark.parametrize("regex, needle", NEEDLED, ids=lambda p: getattr(p, "pattern", "")[:20])
def test_needle_prefilter_finds_the_same_lines(regex, needle):
    lines = features._Lines(list(enumerate(GREP_LINES, start=1)))
    full = lines.grep(regex)
    assert full  # the sample exercises the pattern
    assert lines.grep(regex, needle) == full


def _texts():
    from tests.unit.test_features_detectors import CASES

    return [c[1] for c in CASES] + TRICKY + EMOJI_CASES + ["", None, "   "]


def _plain(results):
    return [{k: (r.passed, r.score, r.evidence, r.lines, r.detail) for k, r in res.items()} for res in results]


@pytest.mark.parametrize("processes", [1, 2])
def test_detect_features_many_equals_detect_features(processes):
    texts = _texts()
    assert len(texts) >= 2 * features._MIN_PER_PROCESS  # two workers really start
    expected = _plain(detect_features(t) for t in texts)
    assert _plain(detect_features_many(texts, processes=processes)) == expected


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2"])
def test_detect_features_many_rejects_bad_process_counts(bad):
    with pytest.raises(ValueError, match="processes must be a positive integer"):
        detect_features_many(["x"], processes=bad)
