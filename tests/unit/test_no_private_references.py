"""The repository is self-contained (issue 35, item 4): no tracked file cites the outside
specification the project started from, the source papers by their private file names
("seed" plus a three-digit number), or the private folder they live in. A reader who clones
the repository has none of them; definitions are cited as ``docs/metrics.md#<anchor>`` (and
docs/estimator.md, docs/formats.md, docs/cli.md), papers by title and arXiv id.

The words are built from parts below, so this file does not cite them itself; a test that must
name them (to assert they are absent somewhere) does the same.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.unit.test_docs_links import anchors

ROOT = Path(__file__).resolve().parents[2]

_SPEC = "SP" + "EC"
_SEED = "se" + "ed"
PRIVATE = re.compile(
    rf"\b{_SPEC}\b"  # the outside specification ("… §4"), as a word
    rf"|(?i:\b{_SEED}s?[ _-]?0\d\d\b)"  # a paper by its file number ("… 000 §3.4", "…s 000/001")
    rf"|(?i:{_SEED}s/0\d\d)"  # a paper's file in the private folder
    r"|/work/" + "shared"  # the private folder itself
)

DOC_LINK = re.compile(r"\b(?:docs/)?(\w+)\.md#([\w\-]+)")


def tracked_texts() -> dict[str, str]:
    """``{path: text}`` of every file git tracks that is text (UTF-8, no NUL byte)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"not a git checkout ({exc})")
    texts = {}
    for name in filter(None, out.decode("utf-8", "surrogateescape").split("\0")):
        path = ROOT / name
        if not path.is_file():  # deleted in the working tree, not yet in the index
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            texts[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return texts


def hits(texts: dict[str, str], pattern: re.Pattern) -> list[str]:
    """``path:line: text`` of every line of ``texts`` that ``pattern`` matches."""
    return [
        f"{name}:{n}: {line.strip()[:160]}"
        for name, text in sorted(texts.items())
        for n, line in enumerate(text.splitlines(), 1)
        if pattern.search(line)
    ]


def test_the_pattern_finds_each_kind_of_private_reference_and_nothing_else():
    found = [
        f"({_SPEC} §4.1)",
        f"{_SPEC}.md",
        f"{_SEED} 000 §3.4",
        f"{_SEED.title()} 002 Table 25",
        f"{_SEED}s 000/001",
        f"{_SEED}-003",
        f"/work/{'shared'}/{_SEED}s/002_x.txt",
    ]
    clean = [
        "a SPECIFICITY series",
        "specification",
        f"--{_SEED} 0",
        f"{_SEED} 0001",
        f"{_SEED}=3",
        "docs/metrics.md#stratified-calibration",
        "ReFormBench (arXiv:2610.19693) §3.4",
    ]
    assert [s for s in found if not PRIVATE.search(s)] == []
    assert [s for s in clean if PRIVATE.search(s)] == []


def test_no_tracked_file_cites_the_private_sources():
    texts = tracked_texts()
    assert "reform_core/metrics/reform.py" in texts and "docs/metrics.md" in texts  # the scan sees the product
    found = hits(texts, PRIVATE)
    assert not found, (
        f"{len(found)} line(s) cite the outside specification or a paper by its private file name; cite "
        "docs/metrics.md#<anchor> for a definition and the paper by title and arXiv id instead:\n" + "\n".join(found)
    )


def test_every_docs_section_cited_anywhere_exists():
    """A citation ``docs/PAGE.md#anchor`` (or ``PAGE.md#anchor``) in any tracked text file names a
    heading of that page, so the references that replaced the private ones lead somewhere."""
    broken = []
    for name, text in sorted(tracked_texts().items()):
        for n, line in enumerate(text.splitlines(), 1):
            for page, anchor in DOC_LINK.findall(line):
                doc = ROOT / "docs" / f"{page}.md"
                if doc.is_file() and anchor not in anchors(doc):
                    broken.append(f"{name}:{n}: {page}.md#{anchor}")
    assert broken == [], "citations of sections that do not exist:\n" + "\n".join(broken)
