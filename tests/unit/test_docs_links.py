"""Links between the README and the pages of docs/ that name a section (``page.md#anchor`` or
``#anchor``) land on a heading of that page: moving text between pages must not leave a
reader at the top of the wrong one."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]*)#([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    tokens = MarkdownIt("commonmark").enable("table").parse(page.read_text(encoding="utf-8"))
    return frozenset(slug(tokens[k + 1].content) for k, t in enumerate(tokens) if t.type == "heading_open")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_section_link_lands_on_a_heading(page):
    broken = []
    for target, anchor in LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        linked = ((page.parent / target) if target else page).resolve()
        if linked.suffix == ".md" and linked.exists() and anchor not in anchors(linked):
            broken.append(f"{target or page.name}#{anchor}")
    assert not broken, f"{page.name}: links to sections that do not exist: {broken}"


def test_the_slug_is_githubs():
    assert slug("Stable `--json` shapes") == "stable---json-shapes"
    assert slug("1. Database") == "1-database"
    assert slug("Single sign-on (OIDC)") == "single-sign-on-oidc"
