"""Presence detectors for the rule-detectable ReFormBench catalog features (docs/metrics.md#catalog).

Each detector is registered as ``feature:<key>`` with signature
``fn(text: str, **params) -> CheckResult``; ``passed=True`` means the feature is PRESENT
in the text according to its generic presence definition (ReFormBench, arXiv:2610.19693, Table A12), and
``lines`` names the 1-based lines that decided it. Detectors see Markdown structure through
:func:`reform_core.verifiers.markdown.parse` (one cached parse per text); code blocks and
inline code are never read as prose, so a ``#`` inside a code fence is not a heading.

:func:`detect_features` runs every detector of a catalog on one text (one parse), e.g. to
annotate baseline responses (the set ``P[m,q]`` of docs/metrics.md#targets-and-baseline-opposition);
:func:`detect_features_many` does the same for many texts on a pool of worker processes (``bench/bench_features.py``).
"""

from __future__ import annotations

import gc
import inspect
import json
import os
import re
import unicodedata
import xml.etree.ElementTree as ET
from bisect import bisect_right
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from functools import lru_cache
from itertools import accumulate, repeat
from typing import Callable, Iterable

import emoji

from reform_core.verifiers.base import CheckResult, register
from reform_core.verifiers.markdown import Doc, parse, parse_uncached

_IMPLS: dict[str, Callable[..., CheckResult]] = {}


def _detector(key: str):
    """Register ``impl(doc, **params)`` as the text verifier ``feature:<key>``."""

    def deco(impl):
        allowed = set(list(inspect.signature(impl).parameters)[1:])

        def verifier(text: str, **params) -> CheckResult:
            unknown = sorted(set(params) - allowed)
            if unknown:
                raise ValueError(
                    f"feature:{key}: unknown parameter(s) {unknown}; accepted: {sorted(allowed) or 'none'}"
                )
            return impl(parse(text), **params)

        verifier.__name__ = f"feature_{key}"
        verifier.__doc__ = impl.__doc__
        register(f"feature:{key}")(verifier)
        _IMPLS[key] = impl
        return impl

    return deco


def detect_features(text: str, catalog=None) -> dict[str, CheckResult]:
    """Run every presence detector of ``catalog`` on ``text`` (parsed once).

    Parameters
    ----------
    text : str
        The response (Markdown or plain text).
    catalog : Catalog, optional
        Defaults to the bundled ReFormBench catalog. Every ``rule_detectable`` feature of
        the catalog must have a ``feature:<key>`` detector.

    Returns
    -------
    dict
        ``{feature key: CheckResult}`` for the catalog's rule-detectable features, in
        catalog order; ``passed`` means present.
    """
    keys = _detectable_keys(catalog)
    doc = parse(text)
    return {key: _IMPLS[key](doc) for key in keys}


def detect_features_many(
    texts: Iterable[str], catalog=None, *, processes: int | None = None
) -> list[dict[str, CheckResult]]:
    """:func:`detect_features` on many texts, spread over a pool of worker processes.

    Parameters
    ----------
    texts : iterable of str
        The responses.
    catalog : Catalog, optional
        As for :func:`detect_features`.
    processes : int, optional
        Worker processes; defaults to the CPUs this process may use. ``1`` runs in this
        process; the pool is only worth its start-up cost for a few hundred texts or more.

    Returns
    -------
    list of dict
        One ``{feature key: CheckResult}`` per text, in input order; the results equal
        ``detect_features(text, catalog)``.
    """
    texts = list(texts)
    keys = _detectable_keys(catalog)
    if processes is None:
        processes = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if not isinstance(processes, int) or processes < 1:
        raise ValueError(f"detect_features_many: processes must be a positive integer, got {processes!r}")
    processes = min(processes, max(1, len(texts) // _MIN_PER_PROCESS))
    with _gc_paused():  # unpickling and wrapping the results make only acyclic objects
        if processes == 1:
            rows = _detect_rows(keys, texts)
        else:
            size = -(-len(texts) // (processes * _CHUNKS_PER_PROCESS))
            chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
            with ProcessPoolExecutor(processes) as pool:
                rows = [row for part in pool.map(_detect_rows, repeat(keys), chunks) for row in part]
        return [dict(zip(keys, (CheckResult(*r) for r in row))) for row in rows]


_MIN_PER_PROCESS = 50
_CHUNKS_PER_PROCESS = 8  # small enough for the workers to finish together on a busy machine


@contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector: bulk parsing allocates many short-lived objects,
    none of them in reference cycles, and each collection would walk all of them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _detect_rows(keys: tuple[str, ...], texts: list[str]) -> list[list[tuple]]:
    """Detector results as plain tuples (cheap to send between processes), each text parsed
    once without the parse cache."""
    with _gc_paused():
        rows = []
        for text in texts:
            doc = parse_uncached(text)
            results = (_IMPLS[key](doc) for key in keys)
            rows.append([(r.passed, r.score, r.evidence, r.lines, r.detail) for r in results])
        return rows


def _detectable_keys(catalog) -> tuple[str, ...]:
    if catalog is None:
        return _default_keys()
    keys = tuple(catalog.rule_detectable_keys())
    missing = [k for k in keys if k not in _IMPLS]
    if missing:
        raise ValueError(
            f"catalog {catalog.name!r}: rule_detectable feature(s) without a feature:* detector: {missing}"
        )
    return keys


@lru_cache(maxsize=1)
def _default_keys() -> tuple[str, ...]:
    from reform_core.catalog import load_catalog

    return _detectable_keys(load_catalog("reformbench"))


# ----------------------------------------------------------------- helpers


def _fmt(lines: tuple[int, ...]) -> str:
    shown = ", ".join(map(str, lines[:8]))
    return shown + (f", … ({len(lines)} in all)" if len(lines) > 8 else "")


def _result(lines, what: str, **detail) -> CheckResult:
    """Present iff ``lines`` is non-empty; evidence names the lines."""
    lines = tuple(sorted(set(lines)))
    if lines:
        evidence = f"{what}: line{'s' if len(lines) > 1 else ''} {_fmt(lines)}"
    else:
        evidence = f"no {what}"
    return CheckResult(passed=bool(lines), evidence=evidence, lines=lines, detail={"count": len(lines), **detail})


def _absent(reason: str, **detail) -> CheckResult:
    return CheckResult(passed=False, evidence=reason, detail=detail)


_STRIP_MARKUP = re.compile(r"[*_`~]+")


def _plain(raw: str) -> str:
    return _STRIP_MARKUP.sub("", raw).strip()


class _Lines:
    """Numbered text lines joined into one string, so one regex pass finds matching lines."""

    def __init__(self, pairs: list[tuple[int, str]]):
        self.pairs = pairs
        self.text = "\n".join(s for _, s in pairs)
        self._offsets = list(accumulate((len(s) + 1 for _, s in pairs[:-1]), initial=0))

    def grep(self, regex: re.Pattern, needle: re.Pattern | None = None) -> list[int]:
        """Lines with at least one match (patterns must not match across a newline).

        ``needle``, a fast pattern (e.g. a character class) that matches on every line where
        ``regex`` matches, is a pre-filter: ``regex`` then only runs on the lines it finds.
        """
        if needle is not None:
            return self._grep_lines(regex, needle)
        out, pos, offsets, n = [], 0, self._offsets, len(self._offsets)
        while (m := regex.search(self.text, pos)) is not None:
            i = bisect_right(offsets, m.start()) - 1
            out.append(self.pairs[i][0])
            if i + 1 >= n:
                break
            pos = offsets[i + 1]  # next line: one hit per line is enough
        return out

    def _grep_lines(self, regex: re.Pattern, needle: re.Pattern) -> list[int]:
        out, pos, offsets, n, text = [], 0, self._offsets, len(self._offsets), self.text
        while (c := needle.search(text, pos)) is not None:
            i = bisect_right(offsets, c.start()) - 1
            end = offsets[i + 1] - 1 if i + 1 < n else len(text)
            if regex.search(text, offsets[i], end) is not None:
                out.append(self.pairs[i][0])
            pos = end + 1
        return out


def _memo(doc: Doc, name: str, build):
    if name not in doc.cache:
        doc.cache[name] = build()
    return doc.cache[name]


def _prose(doc: Doc) -> _Lines:
    """Prose text per line (outside code and math), inline pieces joined by spaces."""

    def build():
        out: dict[int, str] = {}
        for line, seg in doc.segments:
            out[line] = out[line] + " " + seg if line in out else seg
        return _Lines(sorted(out.items()))

    return _memo(doc, "prose", build)


def _raw(doc: Doc, *, cells: bool = False) -> _Lines:
    """Raw Markdown of paragraph and list lines (and table cells if asked)."""
    return _memo(
        doc,
        f"raw{cells}",
        lambda: _Lines(
            [(t.line, t.text) for t in doc.text_lines if t.where == "paragraph" or (cells and t.where == "cell")]
        ),
    )


def _raw_lines(doc: Doc, *, cells: bool = False) -> list[tuple[int, str]]:
    return _raw(doc, cells=cells).pairs


_BOLD_LABEL = re.compile(r"^(\*\*|__)(?P<a>[^*_].*?)\1\s*[:：]?$|^(\*\*|__)(?P<b>[^*_].*?)[:：]\3$")


def _labels(doc: Doc) -> list[tuple[int, str]]:
    """Headings and standalone bold label lines (outside lists), as (line, plain text)."""

    def build():
        out = [(h.line, h.text) for h in doc.headings]
        for t in doc.text_lines:
            if t.where == "paragraph" and not t.in_list and t.text.startswith(("**", "__")):
                m = _BOLD_LABEL.match(t.text.strip())
                if m and len((m.group("a") or m.group("b")).split()) <= 12:
                    out.append((t.line, _plain(m.group("a") or m.group("b"))))
        return sorted(out)

    return _memo(doc, "labels", build)


def _content_lines(doc: Doc) -> list[int]:
    return _memo(doc, "content", lambda: [i + 1 for i, s in enumerate(doc.lines) if s.strip()])


# ----------------------------------------------------------------- line layout

_GAP = re.compile(r"\t+| {2,}")
_GAP_INSIDE = re.compile(r"\S(?:\t| {2,})(?=\S)")
_GAP_NEEDLE = re.compile(r"\t|  ")


@_detector("column_alignment")
def column_alignment(doc: Doc) -> CheckResult:
    """Content in parallel columns: a table, or >= 2 consecutive lines split into the same
    number (>= 2) of short columns by tabs or runs of spaces (in paragraphs or plain code
    blocks)."""
    found = [ln for start, end in doc.tables for ln in range(start, end + 1)]
    rows = _Lines(
        _raw_lines(doc)
        + [r for cb in doc.code_blocks if cb.lang in ("", "text", "txt", "plaintext") for r in cb.numbered_lines()]
    )
    text_at = dict(rows.pairs)
    ncols = {}
    for ln in rows.grep(_GAP_INSIDE, _GAP_NEEDLE):
        s = text_at[ln]
        cells = [c for c in _GAP.split(s.strip()) if c]
        if len(cells) >= 2 and all(len(c.split()) <= 6 for c in cells):
            ncols[ln] = len(cells)
    found += [ln for ln, n in ncols.items() if ncols.get(ln + 1) == n or ncols.get(ln - 1) == n]
    return _result(found, "aligned columns")


_SPEAKER = re.compile(
    r"^\s*(?:\*\*|__)?(?P<who>[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}|[\u4e00-\u9fff]{1,6})"
    r"(?:\*\*|__)?\s*(?:\([^)]{0,30}\))?\s*[:：]\s*(?:\*\*|__)?\s*\S"
)
_NOT_SPEAKERS = {"q", "a", "question", "answer", "note", "tip", "warning", "example", "step", "source"}


@_detector("dialogue_turns")
def dialogue_turns(doc: Doc) -> CheckResult:
    """Speaker turns on separate lines: a run of >= 3 consecutive speaker-labelled lines
    with >= 2 alternating speakers, one of them speaking at least twice."""
    turns = []
    for line, raw in _raw_lines(doc):
        m = _SPEAKER.match(raw)
        who = m.group("who").lower() if m else None
        turns.append((line, who if who not in _NOT_SPEAKERS else None))
    found: list[int] = []
    run: list[tuple[int, str]] = []
    for line, who in turns + [(0, None)]:
        if who and (not run or run[-1][1] != who):
            run.append((line, who))
            continue
        names = [w for _, w in run]
        if len(run) >= 3 and len(set(names)) >= 2 and len(set(names)) < len(names):
            found += [ln for ln, _ in run]
        run = [(line, who)] if who else []
    return _result(found, "dialogue turns")


@_detector("line_breaks_and_spacing")
def line_breaks_and_spacing(doc: Doc) -> CheckResult:
    """Line breaks or blank lines inside the response (leading/trailing space ignored)."""
    content = _content_lines(doc)
    if len(content) < 2:
        return _absent("the response is at most one line")
    blank = [i + 1 for i in range(content[0], content[-1]) if not doc.lines[i].strip()]
    return _result(content[1:], "line breaks", blank_lines=len(blank), lines_with_content=len(content))


@_detector("single_text_block")
def single_text_block(doc: Doc, unit: str = "paragraph") -> CheckResult:
    """The response is one block: with ``unit="paragraph"`` (default) one paragraph; with
    ``"sentence"`` one paragraph of one sentence; with ``"block"`` one top-level block of
    any kind."""
    if unit not in ("paragraph", "sentence", "block"):
        raise ValueError(f"feature:single_text_block: unit must be paragraph, sentence or block, got {unit!r}")
    blocks = doc.paragraphs
    if len(blocks) != 1:
        return _absent(f"{len(blocks)} top-level blocks", blocks=len(blocks))
    b = blocks[0]
    if unit != "block" and b.kind != "paragraph":
        return _absent(f"the single block is a {b.kind}, not a paragraph", blocks=1)
    if unit == "sentence":
        n = len(doc.sentences(" ".join(t.text for t in doc.text_lines)))
        if n != 1:
            return _absent(f"one paragraph of {n} sentences", blocks=1, sentences=n)
    return _result(range(b.start, b.end + 1), f"single {unit}", blocks=1)


# --------------------------------------------------------- document structure

_APPENDIX = re.compile(
    r"^(?:[\dA-Z][.)]\s*)?(appendix|appendices|annex|addendum|supplement(?:ary)?\b|afterword|postscript|附录|补充|后记)",
    re.I,
)


@_detector("appendix_section")
def appendix_section(doc: Doc) -> CheckResult:
    """A heading or section label naming an appendix, supplement, annex or afterword."""
    return _result([ln for ln, text in _labels(doc) if _APPENDIX.match(text)], "appendix section")


_PLACEHOLDER = re.compile(
    r"\[(?!\d+\])(?![xX ]\])[^\[\]\n]{1,40}\](?![(\[:])|\{\{[^{}\n]{1,40}\}\}|<[A-Za-z][^<>\n]{0,38} [^<>\n]{0,38}>|_{4,}"
)


@_detector("document_template")
def document_template(doc: Doc) -> CheckResult:
    """A reusable template: >= 2 fill-in placeholders ([Name], {{name}}, <your name>, ____)."""
    hits = [(ln, m.group(0)) for ln, s in _raw_lines(doc, cells=True) for m in _PLACEHOLDER.finditer(s)]
    if len({p for _, p in hits}) < 2:
        return _absent(f"{len(hits)} placeholder(s); a template needs at least 2", count=len(hits))
    return _result([ln for ln, _ in hits], "template placeholders")


_SENTENCE_END = re.compile(r"[.!?。！？:：,，;；]$")


def _title_line(doc: Doc) -> int | None:
    """Line of a standalone title opening the response, if any."""
    blocks = doc.paragraphs
    if len(blocks) < 2:
        return None
    first = blocks[0]
    if first.kind == "heading":
        return first.start
    if first.kind != "paragraph" or first.end != first.start:
        return None
    raw = next(t.text for t in doc.text_lines if t.line == first.start)
    plain = _plain(raw)
    if _BOLD_LABEL.match(raw.strip()) or (
        0 < len(plain.split()) <= 12 and len(plain) <= 80 and not _SENTENCE_END.search(plain)
    ):
        return first.start
    return None


@_detector("document_title")
def document_title(doc: Doc) -> CheckResult:
    """A standalone title at the beginning: the first block is a heading, or a single
    short line (bold, or <= 12 words without closing punctuation) followed by content."""
    line = _title_line(doc)
    return _result([line] if line else [], "opening title")


_FRONT_LABEL = re.compile(
    r"^(abstract|executive summary|summary|tl;?dr|synopsis|overview|metadata|at a glance|key takeaways|摘要|概要|概述|提要)\b",
    re.I,
)
_META_KEY = re.compile(
    r"^(?:\*\*|__)?(author|authors|date|title|version|tags|subject|to|from|cc|re|keywords|status|作者|日期|标题|版本|关键词)(?:\*\*|__)?\s*[:：]",
    re.I,
)


@_detector("front_matter")
def front_matter(doc: Doc) -> CheckResult:
    """A block before the body: YAML front matter, an Abstract / Summary / TL;DR /
    Overview label among the first blocks, or >= 2 metadata lines (Author:, Date:, ...)
    at the top."""
    if doc.front_matter is not None:
        return _result([1], "YAML front matter")
    blocks = doc.paragraphs
    if len(blocks) < 2:
        return _absent("no body to precede")
    head_end = blocks[min(2, len(blocks) - 2)].end
    found = [ln for ln, text in _labels(doc) if ln <= head_end and _FRONT_LABEL.match(text)]
    first = blocks[0]
    meta = [ln for ln, s in _raw_lines(doc) if first.start <= ln <= first.end and _META_KEY.match(s.strip())]
    if len(meta) >= 2:
        found += meta
    return _result(found, "front matter block")


def _sections(doc: Doc) -> list[tuple[int, int]]:
    """(start, end) line spans of the sections under the most frequent heading level."""
    levels = [h.level for h in doc.headings]
    if len(levels) < 2:
        return []
    level = max(set(levels), key=lambda lv: (levels.count(lv), -lv))
    starts = [h.line for h in doc.headings if h.level == level]
    ends = [h.line - 1 for h in doc.headings if h.level <= level and h.line > starts[0]] + [len(doc.lines)]
    return [(s, min(e for e in ends if e >= s)) for s in starts]


_KEY_PREFIX = re.compile(r"^(?:[-*+]\s+|\d+[.)]\s+)?(?:\*\*|__)([^*_]{1,40}?)[:：]?(?:\*\*|__)\s*[:：]?")


@_detector("repeated_section_pattern")
def repeated_section_pattern(doc: Doc) -> CheckResult:
    """>= 2 sections under same-level headings with the same internal structure (the same
    sequence of sub-headings, bold labels and block kinds, at least two elements), or >= 2
    same-level headings that repeat a numbered pattern ("Day 1", "Option 2: ...")."""
    sigs: dict[tuple, list[int]] = {}
    label_at = {ln: text for ln, text in _labels(doc)}
    keys_at = {ln: m.group(1).strip().lower() for ln, s in _raw_lines(doc) if (m := _KEY_PREFIX.match(s.strip()))}
    for start, end in _sections(doc):
        sig = []
        for b in doc.blocks:
            if start < b.start <= end:
                sig.append(b.kind)
        for ln in range(start + 1, end + 1):
            if ln in label_at:
                sig.append("label:" + re.sub(r"\d+", "#", label_at[ln].lower()))
            elif ln in keys_at:
                sig.append("key:" + keys_at[ln])
        if len(sig) >= 2:
            sigs.setdefault(tuple(sig), []).append(start)
    found = [ln for starts in sigs.values() if len(starts) >= 2 for ln in starts]
    numbered: dict[tuple, list[int]] = {}
    for h in doc.headings:
        m = re.match(r"^(?:\d+[.)]\s*)?([^\W\d]+)\s*\d+\b", h.text)
        if m:
            numbered.setdefault((h.level, m.group(1).lower()), []).append(h.line)
    found += [ln for lines in numbered.values() if len(lines) >= 2 for ln in lines]
    return _result(found, "repeated section structure")


_DIVIDER = re.compile(r"^[ \t]*(?:([=~_*·•◆◇★☆※§─━═#-])\1{2,}|(?:[*·•◆◇★☆※§]\s+){2,}[*·•◆◇★☆※§])[ \t]*$", re.M)


@_detector("section_divider")
def section_divider(doc: Doc) -> CheckResult:
    """Horizontal rules, page breaks (form feed) or standalone marker lines (* * *, ===)."""
    found = list(doc.hrs)
    found += _raw(doc).grep(_DIVIDER)
    found += [i + 1 for i, s in enumerate(doc.lines) if "\f" in s]
    return _result(found, "section dividers")


@_detector("section_headings")
def section_headings(doc: Doc) -> CheckResult:
    """Markdown headings (ATX or setext) or standalone bold section labels."""
    labels = _labels(doc)
    return _result([ln for ln, _ in labels], "headings", headings=len(doc.headings))


@_detector("title_and_subtitle")
def title_and_subtitle(doc: Doc) -> CheckResult:
    """An opening title combined with a subtitle: a deeper heading or a one-line italic /
    "Subtitle:" paragraph directly after it, or a title split by a colon or dash."""
    line = _title_line(doc)
    if line is None:
        return _absent("no opening title")
    title = next((h.text for h in doc.headings if h.line == line), None) or _plain(doc.lines[line - 1])
    blocks = doc.paragraphs
    nxt = blocks[1]
    found = []
    if re.search(r"\S\s*(?::|：| — | – | - |\|)\s*\S", title):
        found.append(line)
    heads = {h.line: h.level for h in doc.headings}
    if nxt.kind == "heading" and line in heads and heads[nxt.start] > heads[line]:
        found += [line, nxt.start]
    elif nxt.kind == "paragraph" and nxt.start == nxt.end:
        raw = doc.lines[nxt.start - 1].strip()
        if re.match(r"^([*_])[^*_].*\1$", raw) or re.match(r"^(?:\*\*)?subtitle\b", raw, re.I):
            found += [line, nxt.start]
    return _result(found, "title with subtitle")


# ------------------------------------------------------------------- lists

_TEXT_BULLET = re.compile(r"^[ \t]*[•◦▪‣●○■➤►▸][ \t]*\S", re.M)


@_detector("bullet_list")
def bullet_list(doc: Doc) -> CheckResult:
    """Unordered list items (-, *, +) or lines starting with a bullet glyph (•, ●, ▪, ...)."""
    found = [it.line for it in doc.items if not it.ordered]
    found += _raw(doc).grep(_TEXT_BULLET)
    return _result(found, "bullet items")


_CHECKBOX = re.compile(r"^[ \t]*(?:[☐☑☒□✅✔✓✗✘⬜]|\[[ xX✓]\])[ \t]*\S", re.M)


@_detector("checklist")
def checklist(doc: Doc) -> CheckResult:
    """Task-list items (- [ ] / - [x]) or items starting with a checkbox or check mark."""
    found = [it.line for it in doc.items if it.checked is not None]
    found += _raw(doc).grep(_CHECKBOX)
    return _result(found, "checklist items")


@_detector("nested_list")
def nested_list(doc: Doc, depth: int = 2) -> CheckResult:
    """List items at nesting depth >= ``depth`` (default 2)."""
    found = [it.line for it in doc.items if it.depth >= depth]
    return _result(
        found, f"list items nested {depth}+ levels", max_depth=max((it.depth for it in doc.items), default=0)
    )


_TEXT_ORDINAL = re.compile(
    r"^[ \t]*(?:\(?[a-zA-Z]\)|[a-hA-H][.)]\s|\(\d{1,2}\)|[ivxIVX]{1,4}[.)]\s|\d{1,2}[、．]|[一二三四五六七八九十]{1,3}[、.．]|[①-⑳])[ \t]*\S",
    re.M,
)
_NUMBERED_HEADING = re.compile(r"^(?:\d{1,2}|[A-H]|[IVX]{1,4})[.)、:]\s*\S")


@_detector("numbered_enumeration")
def numbered_enumeration(doc: Doc) -> CheckResult:
    """Ordered list items, or >= 2 lines / headings starting with an ordered label
    (a), (1), ii., 1、, 一、, ①, "1. Title" headings)."""
    found = [it.line for it in doc.items if it.ordered]
    text = _raw(doc).grep(_TEXT_ORDINAL)
    heads = [h.line for h in doc.headings if _NUMBERED_HEADING.match(h.text)]
    for extra in (text, heads):
        if len(extra) >= 2:
            found += extra
    return _result(found, "enumerated items")


# -------------------------------------------------------- structured fields

_KEY_VALUE = re.compile(
    r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(?:\*\*|__)?(?P<key>[^:：*_\n]{1,40}?)(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*(?P<val>\S.*)$"
)


_COLON = re.compile("[:：]")
_NOT_A_KEY = re.compile(r"https?$|[.!?。！？]|^\d+$|^\W+$")


def _is_field_key(key: str) -> bool:
    words = key.split()
    return 0 < len(words) <= 4 and not _NOT_A_KEY.search(key) and not key[0].isspace()


@_detector("key_value_fields")
def key_value_fields(doc: Doc) -> CheckResult:
    """>= 2 lines or items of the form "Field: value" (field names of at most 4 words)."""
    found = []
    raw = _raw(doc)
    text_at = dict(raw.pairs)
    for ln in raw.grep(_COLON):
        m = _KEY_VALUE.match(text_at[ln])
        key = m.group("key").strip() if m else ""
        if m and _is_field_key(key) and key.lower() not in _NOT_SPEAKERS and not m.group("val").startswith("//"):
            found.append(ln)
    if len(found) < 2:
        return _absent(f"{len(found)} 'Field: value' line(s); fields need at least 2", count=len(found))
    return _result(found, "key-value fields")


_PIPE_ROW = re.compile(r"\|.*\|.*\|?")
_GRID_LINE = re.compile(r"^\s*[+┌├└╔╠╚][-=─━═+┬┼┴╦╬╩]{3,}")


@_detector("table_or_grid")
def table_or_grid(doc: Doc) -> CheckResult:
    """A Markdown table, >= 2 consecutive pipe-delimited rows (even without a separator
    row), or an ASCII / box-drawing grid."""
    found = [ln for start, end in doc.tables for ln in range(start, end + 1)]
    pipes = {ln for ln, s in _raw_lines(doc) if s.count("|") >= 2 and _PIPE_ROW.search(s)}
    found += [ln for ln in pipes if ln + 1 in pipes or ln - 1 in pipes]
    for cb in doc.code_blocks:
        grid = [ln for ln, s in cb.numbered_lines() if _GRID_LINE.match(s)]
        if len(grid) >= 2:
            found += grid
    return _result(found, "table or grid")


# ------------------------------------------------- response framing and genre


@_detector("code_and_explanation")
def code_and_explanation(doc: Doc) -> CheckResult:
    """At least one code block plus explanatory prose (a paragraph of >= 5 words)."""
    if not doc.code_blocks:
        return _absent("no code block")
    prose = [t.line for t in doc.text_lines if t.where == "paragraph" and len(_plain(t.text).split()) >= 5]
    if not prose:
        return _absent("code without explanatory prose")
    return _result([cb.start for cb in doc.code_blocks] + prose[:1], "code and explanation")


_SALUTATION = re.compile(
    r"^(?:\*\*)?(dear\b|hi\b|hello\b|hey\b|greetings\b|good (?:morning|afternoon|evening)\b|to whom it may concern|subject\s*:|尊敬的|亲爱的|您好|你好)",
    re.I,
)
_CLOSING = re.compile(
    r"^(?:\*\*)?(sincerely|yours (?:sincerely|truly|faithfully)|best(?: regards| wishes)?|kind regards|warm(?:est)? regards|regards"
    r"|cheers|many thanks|thanks(?: again)?|thank you|respectfully|with (?:gratitude|appreciation)|warmly|此致|敬礼|祝好|顺祝)\b[^.!?]{0,25}[,，!！]?(?:\*\*)?$",
    re.I,
)


def _closing_lines(doc: Doc, last: int = 4) -> list[int]:
    content = _content_lines(doc)[-last:]
    return [ln for ln in content if _CLOSING.match(doc.lines[ln - 1].strip().rstrip("*_"))]


@_detector("letter_or_email")
def letter_or_email(doc: Doc) -> CheckResult:
    """A letter frame: a salutation (Dear ..., Hi ..., Subject:, 尊敬的) in the first 3
    lines and a closing (Sincerely, Best regards, 此致) in the last 4 lines."""
    content = _content_lines(doc)
    opening = [ln for ln in content[:3] if _SALUTATION.match(doc.lines[ln - 1].strip())]
    closing = _closing_lines(doc)
    if not opening or not closing:
        return _absent(
            "no salutation" if not opening else "no closing", salutation=bool(opening), closing=bool(closing)
        )
    return _result(opening + closing, "letter salutation and closing")


_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}"
_TIME_LABEL = re.compile(
    r"^\s*(?:[-*+]\s+|\d+[.)]\s+|\|\s*)?(?:\*\*|__)?(?:"
    r"day\s*\d+|week\s*\d+|month\s*\d+|(?:mon|tues|wednes|thurs|fri|satur|sun)day|\d{1,2}[:.]\d{2}\s*(?:am|pm)?"
    r"|\d{1,2}\s*(?:am|pm)\b|(?:early |late )?(?:morning|afternoon|evening|night|noon|midday)\b|"
    + _MONTHS
    + r"|\d{4}-\d{2}-\d{2}|第[一二三四五六七八九十\d]+[天日周]|[上下]午|晚上|早上|\d{1,2}月\d{1,2}日)",
    re.I,
)


@_detector("schedule_or_itinerary")
def schedule_or_itinerary(doc: Doc) -> CheckResult:
    """>= 2 entries (headings, items, lines or table rows) labelled by a day, date or
    time (Day 1, Monday, 09:00, Morning, 第一天)."""
    lines = [(h.line, h.text) for h in doc.headings] + _raw_lines(doc, cells=True)
    found = sorted({ln for ln, s in lines if _TIME_LABEL.match(s)})
    if len(found) < 2:
        return _absent(f"{len(found)} time-labelled entr{'y' if len(found) == 1 else 'ies'}; a schedule needs 2")
    return _result(found, "schedule entries")


# ---------------------------------------------------- content organisation

_Q_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(?:q\d*|question\s*\d*|问题?\d*)(?:\*\*|__)?\s*[:：.]", re.I)
_A_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(?:a\d*|answer\s*\d*|答\d*|回答)(?:\*\*|__)?\s*[:：.]", re.I)


@_detector("question_and_answer")
def question_and_answer(doc: Doc) -> CheckResult:
    """Question-answer pairs: a Q:/Question: line followed by an A:/Answer: line, or a
    heading / standalone line ending with "?" followed by more content."""
    raw = _raw_lines(doc)
    found = []
    for (l1, s1), (l2, s2) in zip(raw, raw[1:]):
        if _Q_LABEL.match(s1) and _A_LABEL.match(s2):
            found += [l1, l2]
    last_line = _content_lines(doc)[-1] if not doc.empty else 0
    for ln, text in _labels(doc):
        if text.rstrip().endswith(("?", "？")) and ln < last_line:
            found.append(ln)
    for b in doc.paragraphs:
        if b.kind == "paragraph" and b.start == b.end and b.end < last_line and b.start not in found:
            s = _plain(doc.lines[b.start - 1])
            if s.endswith(("?", "？")) and len(s.split()) <= 20:
                found.append(b.start)
    return _result(found, "question-answer pairs")


# ------------------------------------------------- inline markers and voice

_ARROW = re.compile(r"[→←↔⇒⇐⇔⟶⟹⟵➜➔➡⬅↑↓⇨➝➞]|--?>|<--?|<?=>")
_ARROW_OR_SEPARATOR = re.compile(_ARROW.pattern + r"|[|｜·»](?<=[ \t][|｜·»])[ \t]|::(?<=[ \t]::)[ \t]")
_ARROW_OR_SEPARATOR_NEEDLE = re.compile(r"[→←↔⇒⇐⇔⟶⟹⟵➜➔➡⬅↑↓⇨➝➞<>|｜·»:]")


@_detector("arrows_and_separators")
def arrows_and_separators(doc: Doc) -> CheckResult:
    """Arrows (→, ->, =>, ⇒) or special separators (" | ", " · ", " » ", " :: ") in the prose."""
    found = _prose(doc).grep(_ARROW_OR_SEPARATOR, _ARROW_OR_SEPARATOR_NEEDLE)
    return _result(found, "arrows or separators")


_HTML_EMPHASIS = re.compile(r"^<(b|i|u|em|strong|mark|ins|del|s)\b", re.I)


@_detector("typographic_emphasis")
def typographic_emphasis(doc: Doc) -> CheckResult:
    """Bold, italic or strikethrough Markdown, or <b>/<i>/<u>/<mark> HTML tags."""
    found = [ln for mark in ("strong_open", "em_open", "s_open") for ln in doc.marks.get(mark, [])]
    found += [ln for ln, tag in doc.html_inline if _HTML_EMPHASIS.match(tag)]
    return _result(found, "emphasised text")


_TAG_START = re.compile(
    r"^[ \t]*(?:\[(?!\d+\])(?![ xX]\])[^\[\]]{1,20}\](?!\()\s*\S|【[^】]{1,20}】|(?:TODO|FIXME|NEW|DONE|WIP|BETA|HOT|TBD)[ \t]*[:\]])",
    re.M,
)
_TAG_INLINE = re.compile(
    r"【[^】]{1,20}】|#(?<![\w#&]#)[A-Za-z\u4e00-\u9fff][\w\u4e00-\u9fff-]*|\((?:required|optional|recommended|new|beta|deprecated|必填|可选)\)",
    re.I,
)


@_detector("labels_and_tags")
def labels_and_tags(doc: Doc) -> CheckResult:
    """Short labels marking content: a bracketed tag opening a line ([High], 【标签】),
    status-word prefixes (TODO:, WIP:), hashtags (#tag) or (Optional)/(Required) tags."""
    found = _raw(doc).grep(_TAG_START) + _prose(doc).grep(_TAG_INLINE)
    return _result(found, "labels or tags")


_QUOTED = re.compile(
    r"\"[^\"\n]+\"|“[^”\n]+”|‘[^’\n]+’|«[^»\n]+»|「[^」\n]+」|『[^』\n]+』|„[^“\n]+“|'(?<!\w')[^'\n]+'(?!\w)"
)
_PAREN = re.compile(r"\([^()\n]+\)|（[^（）\n]+）")
_PAREN_NEEDLE = re.compile(r"[(（]")


@_detector("quotes_and_parentheses")
def quotes_and_parentheses(doc: Doc) -> CheckResult:
    """Quoted terms ("...", “...”, 「...」, «...») or parenthetical additions in the prose."""
    quotes = _prose(doc).grep(_QUOTED)
    parens = _prose(doc).grep(_PAREN, _PAREN_NEEDLE)
    return _result(quotes + parens, "quotes or parentheses", quote_lines=len(quotes), paren_lines=len(parens))


_SECOND_PERSON = re.compile(r"[yY](?<!\w[yY])(?i:ou|our|ours|ourself|ourselves)\b|[你您]")
_SECOND_PERSON_NEEDLE = re.compile(r"[yY你您]")


@_detector("direct_address")
def direct_address(doc: Doc) -> CheckResult:
    """Second-person address of the reader (you, your, yourself; 你, 您) in the prose."""
    return _result(_prose(doc).grep(_SECOND_PERSON, _SECOND_PERSON_NEEDLE), "second-person address")


_ATTRIBUTION = re.compile(
    r"^(?:—|–|--|~)\s*\S.{0,40}$|^\[your name\]$|^(?:\*\*)?(?:signed|signature|署名)\s*[:：]", re.I
)


@_detector("signature_and_sign_off")
def signature_and_sign_off(doc: Doc) -> CheckResult:
    """A sign-off (Best regards, Sincerely, Cheers) or signature / attribution line
    (— Name, [Your Name], Signed:) among the last 3 lines."""
    tail = _content_lines(doc)[-3:]
    found = _closing_lines(doc, last=3)
    found += [ln for ln in tail if _ATTRIBUTION.match(doc.lines[ln - 1].strip().strip("*_"))]
    return _result(found, "sign-off or signature")


_NOT_MARKERS = set("°©®™℃℉№")


@lru_cache(maxsize=1)
def _symbol_chars() -> frozenset[str]:
    """Characters that may start an emoji or are pictographic symbols (category So)."""
    chars = {chr(c) for c in range(0xA0, 0x20000) if unicodedata.category(chr(c)) == "So"}
    chars |= {e[0] for e in emoji.EMOJI_DATA if ord(e[0]) >= 0xA0}
    return frozenset(chars - _NOT_MARKERS - {chr(c) for c in range(0x2500, 0x2580)})  # box drawing: diagrams


_NON_ASCII = re.compile(r"[^\x00-\x9f]")  # every symbol candidate is >= U+00A0
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


def _emoji_list(s: str) -> list[dict]:
    """``emoji.emoji_list(s)``, run only on the non-ASCII stretches of ``s`` (same result,
    much faster on long lines: the emoji tokenizer is a Python loop over every character).

    No emoji is all ASCII, and the only ASCII characters in emoji are the ``#``, ``*`` and
    digit bases of keycaps, so each stretch starts at those bases right before it."""
    out = []
    for run in _NON_ASCII_RUN.finditer(s):
        start = run.start()
        while start > 0 and s[start - 1] in "#*0123456789":
            start -= 1
        out += [
            {**e, "match_start": e["match_start"] + start, "match_end": e["match_end"] + start}
            for e in emoji.emoji_list(s[start : run.end()])
        ]
    return out


def _symbols(s: str) -> list[str]:
    """Emoji (by the emoji package) and other So symbols of ``s``."""
    found, rest, last = [], [], 0
    for e in _emoji_list(s):
        if e["emoji"].rstrip("\ufe0f") not in _NOT_MARKERS:
            found.append(e["emoji"])
        rest.append(s[last : e["match_start"]])
        last = e["match_end"]
    rest.append(s[last:])
    chars = _symbol_chars()
    return found + [c for c in _NON_ASCII.findall("".join(rest)) if c in chars]


@_detector("emoji_and_symbols")
def emoji_and_symbols(doc: Doc) -> CheckResult:
    """Emoji or pictographic symbols (✓, ★, ●, ▶, ☐; Unicode category So) in the prose;
    °, ©, ®, ™ and box-drawing characters do not count."""
    found, symbols = [], []
    chars = _symbol_chars()
    for ln, s in _prose(doc).pairs:
        if s.isascii() or not any(c in chars for c in _NON_ASCII.findall(s)):
            continue
        hit = _symbols(s)
        if hit:
            found.append(ln)
            symbols += hit
    return _result(found, "emoji or symbols", symbols="".join(dict.fromkeys(symbols)))


# ------------------------------------------ supplementary and technical blocks

_CALLOUT = re.compile(
    r"^\s*(?:\*\*|__)?(?:[⚠💡ℹ📌❗❕🔔📝✏️⭐]\ufe0f?\s*)?(?:\*\*|__)?"
    r"(note|nb|n\.b\.|tip|warning|caution|important|notice|hint|attention|danger|info|remember|pro tip|heads up|disclaimer|reminder|注意|提示|警告|说明|备注|小贴士)"
    r"\b\s*(?:\*\*|__)?\s*[:：!—-]",
    re.I,
)
_CALLOUT_GLYPH = re.compile(r"^\s*(?:[⚠💡ℹ📌❗🔔]\ufe0f?)")
_ADMONITION = re.compile(r"^(?:!!!|\?\?\?)\s*\w+")


@_detector("callout_or_note_block")
def callout_or_note_block(doc: Doc) -> CheckResult:
    """A note / tip / warning block: a GitHub alert (> [!NOTE]), an admonition (!!! note),
    a block quote opening with a label or warning glyph, or a paragraph opening with
    "Note:", "**Warning:**", "⚠️" and the like."""
    found = [ln for ln, _ in doc.alerts]
    quote_starts = {start for start, _ in doc.blockquotes}
    for t in doc.text_lines:
        if t.where != "paragraph":
            continue
        if _CALLOUT.match(t.text) and (not t.in_list or t.in_quote):
            found.append(t.line)
        elif t.in_quote and t.line in quote_starts and _CALLOUT_GLYPH.match(t.text):
            found.append(t.line)
    found += [i + 1 for i, s in enumerate(doc.lines) if s.startswith(("!!!", "???")) and _ADMONITION.match(s)]
    return _result(found, "callout blocks")


_CAPTION = re.compile(
    r"^(?:\*\*|\*|_)?(?:figure|fig\.|table|listing|chart|diagram|image|caption|图|表)\s*\d*[:.：]", re.I
)
_ITALIC_LINE = re.compile(r"^([*_])[^*_].{0,150}\1$")


@_detector("captioned_content")
def captioned_content(doc: Doc) -> CheckResult:
    """A caption line directly after a table, code block, formula or image: "Figure 1:",
    "Table 2." (or 图/表) or a short italic line."""
    image_lines = set(doc.marks.get("image", []))
    found = []
    blocks = doc.paragraphs
    for prev, cur in zip(blocks, blocks[1:]):
        is_content = prev.kind in ("table", "fence", "code_block", "math_block") or (
            prev.kind == "paragraph" and prev.start == prev.end and prev.start in image_lines
        )
        if is_content and cur.kind == "paragraph" and cur.start == cur.end and cur.start - prev.end <= 2:
            raw = doc.lines[cur.start - 1].strip()
            if _CAPTION.match(raw) or (_ITALIC_LINE.match(raw) and len(raw.split()) <= 25):
                found.append(cur.start)
    return _result(found, "captions")


_CITATION = re.compile(
    r"\[\d+(?:\s*[,–-]\s*\d+)*\]|\([A-Z][A-Za-z'-]+(?: et al\.| and [A-Z][A-Za-z'-]+)?,? \d{4}[a-z]?\)"
)
_SOURCES = re.compile(
    r"^(references|sources?|bibliography|further reading|citations|works cited|参考文献|参考资料|来源|出处)\b", re.I
)
_CITATION = re.compile(
    _CITATION.pattern
    + r"|^[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?(?i:source|sources|reference|来源|出处)(?:\*\*|__)?[ \t]*[:：]",
    re.M,
)


@_detector("citations_and_links")
def citations_and_links(doc: Doc) -> CheckResult:
    """Links and URLs, footnote references, citation markers ([1], (Smith, 2020)), a
    References / Sources section or "Source:" lines."""
    found = [ln for ln, _ in doc.links] + doc.marks.get("footnote_ref", []) + doc.marks.get("image", [])
    found += _raw(doc, cells=True).grep(_CITATION)
    found += [ln for ln, text in _labels(doc) if _SOURCES.match(text)]
    return _result(found, "citations or links")


_HASH_LANGS = {
    "",
    "python",
    "py",
    "python3",
    "bash",
    "sh",
    "shell",
    "zsh",
    "ruby",
    "rb",
    "r",
    "yaml",
    "yml",
    "perl",
    "toml",
    "dockerfile",
    "make",
    "makefile",
    "powershell",
    "ps1",
    "ini",
    "conf",
    "julia",
    "elixir",
    "nim",
    "coffee",
    "tcl",
}
_NOT_CODE = {"markdown", "md", "text", "txt", "plaintext", "output", "console", "json", "csv", "tsv", "mermaid"}
_LINE_COMMENT = re.compile(r"^\s*(?://|/\*|\*/|\*\s|<!--|\"\"\"|'''|--\s|REM\s)")
_HASH_COMMENT = re.compile(
    r"^\s*#(?![!\[]|include|define|if|ifdef|ifndef|endif|else|elif|pragma|import|undef|region|endregion)"
)
_TRAILING = re.compile(r"\S\s+//\s|;\s*//|\S\s+/\*")
_TRAILING_HASH = re.compile(r"\S\s+#\s")


@_detector("code_annotations")
def code_annotations(doc: Doc) -> CheckResult:
    """Comments or docstrings inside code blocks (//, /* */, # in hash-comment languages,
    --, <!-- -->, triple-quoted strings); markdown/text/output/JSON blocks are not code."""
    found = []
    for cb in doc.code_blocks:
        if cb.lang in _NOT_CODE:
            continue
        hash_lang = cb.lang in _HASH_LANGS
        for ln, s in cb.numbered_lines():
            if (
                _LINE_COMMENT.match(s)
                or _TRAILING.search(s)
                or (hash_lang and (_HASH_COMMENT.match(s) or _TRAILING_HASH.search(s)))
            ):
                found.append(ln)
    return _result(found, "code comments")


@_detector("code_block")
def code_block(doc: Doc) -> CheckResult:
    """Fenced (``` / ~~~) or indented code blocks."""
    found = [ln for cb in doc.code_blocks for ln in range(cb.start, cb.end + 1)]
    return _result(found, "code blocks", blocks=len(doc.code_blocks))


_DIAGRAM_LANGS = {
    "mermaid",
    "dot",
    "graphviz",
    "plantuml",
    "puml",
    "ascii",
    "flowchart",
    "diagram",
    "tree",
    "svgbob",
    "ditaa",
}
_DIAGRAM_LINE = re.compile(
    r"[\u2500-\u257f]"  # box drawing
    r"|^[ \t]*(?:[|][ \t]*)*(?:\|--|\+--|`--|\|__)"  # ASCII tree branches
    rf"|^(?=[^\n]{{0,120}}$)[^\n]*?(?:{_ARROW.pattern})[^\n]*?(?:{_ARROW.pattern})",  # arrow chain A -> B -> C
    re.M,
)
_DIAGRAM_NEEDLE = re.compile(r"[\u2500-\u257f→←↔⇒⇐⇔⟶⟹⟵➜➔➡⬅↑↓⇨➝➞<>|+`]")  # box, arrow or branch
_ARROW_ONLY = re.compile(r"^[ \t]*(?:[↓⬇↑⇓|v^]|-->|->)[ \t]*$", re.M)


@_detector("textual_diagrams")
def textual_diagrams(doc: Doc) -> CheckResult:
    """Text-based graphics: box-drawing characters, tree branches (├── / |--), diagram
    code blocks (mermaid, dot, plantuml), arrow chains (A → B → C) or arrow-only lines."""
    found = [cb.start for cb in doc.code_blocks if cb.lang in _DIAGRAM_LANGS]
    lines = _Lines([r for cb in doc.code_blocks for r in cb.numbered_lines()] + _raw_lines(doc))
    found += lines.grep(_DIAGRAM_LINE, _DIAGRAM_NEEDLE)
    arrow_only = lines.grep(_ARROW_ONLY)
    if len(arrow_only) >= 1 and len(found) + len(arrow_only) >= 2:
        found += arrow_only
    return _result(found, "text diagram lines")


_FILENAME = re.compile(
    r"(?:^|[\s`*/(\"'])[\w.-]*\w\.(?:py|js|mjs|ts|tsx|jsx|java|go|rs|rb|php|c|h|cc|cpp|hpp|cs|swift|kt|scala|sh|bash|yaml|yml|json|toml|ini|cfg|html|css|scss|sql|md|xml|gradle|vue|svelte|dart|lua|pl|ex|exs|tf|env|txt|lock|mod|ipynb|r)\b"
    r"|\b(?:Dockerfile|Makefile|Procfile|Gemfile|Cargo\.toml)\b"
)


@_detector("files_and_modules")
def files_and_modules(doc: Doc) -> CheckResult:
    """A code block labelled with its file name: a short line naming a file just above
    it, a file name in the fence info (```python title=app.py) or in its first comment."""
    found = []
    for cb in doc.code_blocks:
        if _FILENAME.search(" " + cb.info):
            found.append(cb.start)
            continue
        first = cb.content.split("\n", 1)[0]
        if _LINE_COMMENT.match(first) or first.lstrip().startswith("#"):
            if _FILENAME.search(first) and len(first.split()) <= 6:
                found.append(cb.first)
                continue
        above = [ln for ln in range(max(1, cb.start - 3), cb.start) if doc.lines[ln - 1].strip()]
        if above:
            label = doc.lines[above[-1] - 1].strip()
            if _FILENAME.search(label) and len(label.split()) <= 12:
                found.append(above[-1])
    return _result(found, "file-labelled code blocks")


_DATA_LANGS = {
    "json",
    "jsonc",
    "json5",
    "jsonl",
    "ndjson",
    "geojson",
    "yaml",
    "yml",
    "xml",
    "csv",
    "tsv",
    "toml",
    "ini",
    "plist",
    "svg",
    "properties",
}


def _parses_as_data(s: str) -> bool:
    s = s.strip()
    if s[:1] in "{[":
        try:
            return isinstance(json.loads(s), (dict, list))
        except ValueError:
            return False
    if s.startswith("<") and s.endswith(">"):
        try:
            ET.fromstring(s)
            return True
        except ET.ParseError:
            return False
    return False


@_detector("machine_readable_block")
def machine_readable_block(doc: Doc) -> CheckResult:
    """A JSON / YAML / XML / CSV / TOML block: a code block labelled with a data format or
    whose content parses as JSON or XML, YAML front matter, or a whole response that is JSON."""
    found = [1] if doc.front_matter is not None else []
    for cb in doc.code_blocks:
        if cb.lang in _DATA_LANGS or (cb.lang in ("", "text", "txt", "plaintext") and _parses_as_data(cb.content)):
            found.append(cb.start)
    if not doc.code_blocks and _parses_as_data(doc.text):
        found.append(_content_lines(doc)[0])
    return _result(found, "machine-readable blocks")


_LATEX = re.compile(
    r"\\(?:frac|sqrt|sum|prod|int|lim|alpha|beta|gamma|delta|theta|lambda|mu|sigma|pi|infty|cdot|times|leq|geq|neq|approx|begin\{(?:equation|align))\b"
)
_MATH = re.compile(
    _LATEX.pattern
    + r"|[∑∏∫√∞≈≠≤≥±∂∇∈∉⊂⊆⊃⊇∪∩∀∃≡∝⊥∠×÷]|\^(?<=\w\^)[\w{(]"  # symbols, x^2
    + r"|(?:=(?<=[a-zA-Z]=)(?<![\w.][a-zA-Z]=)| =(?<=[a-zA-Z] =)(?<![\w.][a-zA-Z] =))[ \t]?[-+]?[\d(a-zA-Z]"  # x = 2y
)
_MATH_NEEDLE = re.compile(r"[\\^=∑∏∫√∞≈≠≤≥±∂∇∈∉⊂⊆⊃⊇∪∩∀∃≡∝⊥∠×÷]")


@_detector("mathematical_notation")
def mathematical_notation(doc: Doc) -> CheckResult:
    """Math: $...$, $$...$$, \\(...\\), \\[...\\] typesetting, LaTeX commands, math symbols
    (≤, ∑, √, ×), exponents (x^2) or equations (x = 2y) in the prose, or tex code blocks."""
    found = [ln for kind, lines in doc.marks.items() if kind.startswith("math") for ln in lines]
    found += doc.math_blocks
    found += [cb.start for cb in doc.code_blocks if cb.lang in ("latex", "tex", "math")]
    found += _prose(doc).grep(_MATH, _MATH_NEEDLE)
    return _result(found, "mathematical notation")
