"""Render helpers: untrusted response text is rendered inertly; badges and labels."""

from __future__ import annotations

import pytest

from pages.components import render

SAFE_TAGS = {"h1", "p", "span", "code", "table", "thead", "tbody", "tr", "th", "td"}


def _tags(html_text: str) -> tuple[set[str], list]:
    from html.parser import HTMLParser

    tags, attrs = set(), []

    class P(HTMLParser):
        def handle_starttag(self, tag, a):
            tags.add(tag)
            attrs.extend(a)

    P().feed(html_text)
    return tags, attrs


HOSTILE = (
    "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n"
    "[click me](javascript:alert(3)) and [site](https://evil.example/p)\n\n![pixel](https://tracker.example/p.png)\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n"
)


def test_markdown_is_inert():
    out = render.safe_markdown_html(HOSTILE)
    tags, attrs = _tags(out)
    assert tags <= SAFE_TAGS, f"unexpected tags {tags - SAFE_TAGS}"
    assert all(name == "class" for name, _ in attrs), attrs  # no href / src / on* attribute
    assert "&lt;script&gt;" in out, "raw HTML is shown escaped, not dropped"
    assert "https://evil.example/p" in out and "tracker.example" in out, "URLs stay visible as text"
    assert "<h1>Title</h1>" in out and "<table>" in out, "ordinary Markdown still renders"


def test_markdown_handles_empty():
    assert render.safe_markdown_html(None) == ""


@pytest.mark.parametrize("value, text", [(1, "pass"), (1.0, "pass"), (0, "fail"), (None, "—"), (float("nan"), "—")])
def test_label_text(value, text):
    assert render.label_text(value) == text


@pytest.mark.parametrize("p, colour", [(1.0, "green"), (0.95, "green"), (0.5, "orange"), (0.02, "red")])
def test_p_badge(p, colour):
    assert render.p_badge(p).startswith(f":{colour}-badge[p = {p:.2f}]"[: len(colour) + 8])
