"""Parse a response once into a Markdown structure that rule-based checkers share.

``parse(text)`` normalises line endings (``\\r\\n`` / ``\\r`` -> ``\\n``), runs markdown-it-py
(CommonMark + GFM tables, task lists, alerts, autolinks, footnotes, front matter, and
``$...$`` / ``\\(...\\)`` / ``\\[...\\]`` math) and collects, in one pass over the token
stream, the facts the checkers ask for. Results are cached per text, so several checkers on
the same response parse it once. All line numbers are 1-based lines of the normalised text.
Inline contents without any inline syntax (most paragraphs, items and cells) skip
markdown-it's inline parser, whose output for them is known: text and line breaks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Callable, NamedTuple

from markdown_it import MarkdownIt
from markdown_it.parser_inline import ParserInline
from markdown_it.rules_core import StateCore
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.gfm import gfm_plugin
from mdit_py_plugins.texmath import texmath_plugin

# Characters that can start inline syntax under this configuration (emphasis, strikethrough,
# code spans, links, images, footnotes, math, escapes, HTML, entities, GFM autolinks). An
# inline content without any of them parses to plain text and line breaks only.
_INLINE_SYNTAX = re.compile(r"[$\\`~*_\[\]!<&:@]|www\.")


def _inline_rule(state: StateCore) -> None:
    """markdown-it's core rule "inline", except that contents without inline syntax are not
    run through the inline parser: they get ``meta["plain"]`` instead, and
    :func:`_plain_segments` gives the text the parser would have made of them."""
    md = state.md
    for tok in state.tokens:
        if tok.type == "inline":
            if tok.children is None:
                tok.children = []
            if _INLINE_SYNTAX.search(tok.content):
                md.inline.parse(tok.content, md, state.env, tok.children)
            else:
                tok.meta["plain"] = True


def _make_parser(
    *, skip_plain_inline: bool = True, dollars: bool = True, brackets: bool = True, off: tuple[str, ...] = ()
) -> MarkdownIt:
    """The parser; ``dollars`` / ``brackets`` add the math plugins, ``off`` names rules to
    disable (see :func:`_parser_for`)."""
    md = MarkdownIt("commonmark").use(gfm_plugin, front_matter=True)
    if dollars:  # no "$ x $" and no "$5 and $10": currency is not math
        md.use(dollarmath_plugin, allow_space=False, allow_digits=False, allow_blank_lines=False)
    if brackets:
        md.use(texmath_plugin, delimiters="brackets")
    if off:
        md.disable(list(off))
    if "gfm_autolink_www" in off:  # the plugin's only extra stop character for the text rule
        md.inline.terminator_re = ParserInline().terminator_re
    if skip_plain_inline:
        md.core.ruler.at("inline", _inline_rule)
    return md


_MD = _make_parser()  # the full configuration, for any text

# Rules that cannot match a text failing their test (each test is a necessary condition of
# the rules' syntax, e.g. a GFM table's header row contains "|"), so a parser without them
# gives the same tokens for that text and saves their tries at every line or position.
_SETEXT_UNDERLINE = re.compile(r"\n[ \t>]*(?:=+|-+)[ \t]*$", re.M)  # never on the first line
_LIST_MARKER = re.compile(r"^[ \t>]*(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)", re.M)
_NEEDS: tuple[tuple[Callable[[str], bool], tuple[str, ...]], ...] = (
    (lambda s: s.startswith("---"), ("front_matter",)),
    (lambda s: "|" in s, ("table",)),
    (lambda s: "    " in s or "\t" in s, ("code",)),  # indented code: 4 columns past its container
    (lambda s: "```" in s or "~~~" in s, ("fence",)),
    (lambda s: ">" in s, ("blockquote",)),
    (lambda s: _LIST_MARKER.search(s) is not None, ("list",)),
    (lambda s: "]:" in s, ("reference",)),
    (lambda s: "#" in s, ("heading",)),
    (lambda s: _SETEXT_UNDERLINE.search(s) is not None, ("lheading",)),
    (lambda s: "<" in s, ("html_block", "html_inline", "autolink")),
    (lambda s: "[" in s, ("link",)),
    (lambda s: "![" in s, ("image",)),
    (lambda s: "`" in s, ("backticks",)),
    (lambda s: "\\" in s, ("escape",)),
    (lambda s: "&" in s, ("entity",)),
    (lambda s: "\\" in s or "&" in s, ("text_join",)),  # joins the escapes' and entities' text
    (lambda s: "*" in s or "_" in s, ("emphasis",)),
    (lambda s: "~" in s, ("strikethrough",)),
    (lambda s: "www." in s, ("gfm_autolink_www",)),
    (lambda s: "http" in s or "mailto:" in s or "xmpp:" in s, ("gfm_autolink_protocol",)),
    (lambda s: "@" in s, ("gfm_autolink_email",)),
    (lambda s: "[^" in s, ("footnote_def", "footnote_ref", "footnote_tail")),  # tail: moves what they found
)


def _parser_for(text: str) -> MarkdownIt:
    """The cheapest parser that gives ``text`` the same tokens as the full one (:data:`_MD`):
    math plugins only for texts with their delimiters, and no rule whose syntax is absent."""
    off = tuple(name for needed, names in _NEEDS if not needed(text) for name in names)
    return _parser(off, "$" in text, "\\(" in text or "\\[" in text)


@lru_cache(maxsize=64)
def _parser(off: tuple[str, ...], dollars: bool, brackets: bool) -> MarkdownIt:
    return _make_parser(dollars=dollars, brackets=brackets, off=off)


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


class Block(NamedTuple):
    """A top-level block: heading, paragraph, bullet_list, ordered_list, table, fence,
    code_block, blockquote, alert, hr, html_block, math_block or front_matter."""

    kind: str
    start: int
    end: int


class Heading(NamedTuple):
    line: int
    level: int
    text: str


class ListItem(NamedTuple):
    """A list item: its line, list kind, nesting depth (1 = outermost), task-box state
    (None when not a task item) and the raw text of its first line."""

    line: int
    ordered: bool
    depth: int
    checked: bool | None
    text: str


class Line(NamedTuple):
    """One source line of an inline container (paragraph, heading or table cell), raw
    Markdown without block markers; ``where`` is paragraph / heading / cell; the flags say
    whether it sits inside a list or block quote."""

    line: int
    text: str
    where: str
    in_list: bool
    in_quote: bool


class CodeBlock(NamedTuple):
    """A fenced or indented code block; ``first`` is the line of its first content line."""

    start: int
    end: int
    info: str
    content: str
    first: int

    @property
    def lang(self) -> str:
        return self.info.split()[0].lower() if self.info.strip() else ""

    def numbered_lines(self) -> list[tuple[int, str]]:
        return [(self.first + k, s) for k, s in enumerate(self.content.split("\n"))]


@dataclass
class Doc:
    """The parsed response. Build it with :func:`parse`, never directly."""

    text: str
    lines: list[str]
    blocks: list[Block] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)
    items: list[ListItem] = field(default_factory=list)
    text_lines: list[Line] = field(default_factory=list)
    segments: list[tuple[int, str]] = field(default_factory=list)  # prose text outside code / math
    marks: dict[str, list[int]] = field(default_factory=dict)  # inline token type -> lines
    links: list[tuple[int, str]] = field(default_factory=list)
    html_inline: list[tuple[int, str]] = field(default_factory=list)
    code_blocks: list[CodeBlock] = field(default_factory=list)
    math_blocks: list[int] = field(default_factory=list)
    tables: list[tuple[int, int]] = field(default_factory=list)  # (start, end) of every table
    blockquotes: list[tuple[int, int]] = field(default_factory=list)
    alerts: list[tuple[int, str]] = field(default_factory=list)
    hrs: list[int] = field(default_factory=list)
    front_matter: str | None = None
    cache: dict = field(default_factory=dict, repr=False)  # derived facts, memoised by checkers

    @property
    def empty(self) -> bool:
        return not self.text.strip()

    @cached_property
    def prose(self) -> str:
        """All prose text outside code and math, one segment per line piece."""
        return "\n".join(s for _, s in self.segments)

    @cached_property
    def is_cjk(self) -> bool:
        return bool(_CJK.search(self.prose))

    @cached_property
    def paragraphs(self) -> list[Block]:
        """Top-level content blocks (everything but rules and front matter)."""
        return [b for b in self.blocks if b.kind not in ("hr", "front_matter")]

    def sentences(self, text: str) -> list[str]:
        """Split ``text`` into sentences offline with pysbd (English or Chinese rules)."""
        return [s for s in _segmenter("zh" if _CJK.search(text) else "en").segment(text) if s.strip()]


@lru_cache(maxsize=4)
def _segmenter(lang: str):
    import pysbd  # slow to import; only sentence-level checks need it

    return pysbd.Segmenter(language=lang, clean=False)


def normalise(text: str | None) -> str:
    """``None`` -> ``""``; Windows and old-Mac line endings -> ``\\n``."""
    return (text or "").replace("\r\n", "\n").replace("\r", "\n")


def parse(text: str | None) -> Doc:
    """Parse ``text`` (cached: the same string is parsed once)."""
    return _parse(normalise(text))


def parse_uncached(text: str | None) -> Doc:
    """Parse ``text`` without the cache (bulk work where each text is parsed once)."""
    return _parse.__wrapped__(normalise(text))


@lru_cache(maxsize=512)
def _parse(text: str) -> Doc:
    return _collect(text, _parser_for(text).parse(text))


def _collect(text: str, tokens) -> Doc:
    doc = Doc(text=text, lines=text.split("\n"))
    stack: list[str] = []  # open container types
    list_stack: list[bool] = []  # ordered? per open list
    item_pending: list[tuple[int, bool | None]] = []  # list items awaiting their first inline
    cell = False
    heading = (0, 0)
    last = 1
    for tok in tokens:
        t = tok.type
        if tok.map:
            last = tok.map[0] + 1
        start = last
        end = tok.map[1] if tok.map else start
        if tok.nesting == 1:
            if tok.level == 0 and not t.startswith("footnote"):
                doc.blocks.append(Block(t[:-5], start, end))  # "<kind>_open" -> kind
            stack.append(t)
            if t in ("bullet_list_open", "ordered_list_open"):
                list_stack.append(t == "ordered_list_open")
            elif t == "list_item_open":
                item_pending.append((start, tok.meta.get("checked") if "checked" in tok.meta else None))
            elif t == "heading_open":
                heading = (start, int(tok.tag[1]))
            elif t == "table_open":
                doc.tables.append((start, end))
            elif t == "blockquote_open":
                doc.blockquotes.append((start, end))
            elif t == "alert_open":
                doc.alerts.append((start, str(tok.meta.get("kind", tok.info))))
            elif t in ("th_open", "td_open"):
                cell = True
            continue
        if tok.nesting == -1:
            opened = stack.pop() if stack else ""
            if opened in ("bullet_list_open", "ordered_list_open"):
                list_stack.pop()
            elif opened == "list_item_open":
                line, checked = item_pending.pop()
                if line >= 0:  # an item without inline content (e.g. an empty bullet)
                    doc.items.append(ListItem(line, list_stack[-1], len(list_stack), checked, ""))
            elif opened in ("th_open", "td_open"):
                cell = False
            continue
        if tok.level == 0 and not t.startswith("footnote"):
            doc.blocks.append(Block(t, start, end))
        if t in ("fence", "code_block"):
            doc.code_blocks.append(CodeBlock(start, end, tok.info.strip(), tok.content, start + (t == "fence")))
        elif t in ("math_block", "math_block_eqno", "amsmath"):
            doc.math_blocks.append(start)
        elif t == "hr":
            doc.hrs.append(start)
        elif t == "front_matter":
            doc.front_matter = tok.content
        elif t == "inline":
            _inline(doc, tok, start, stack, cell, item_pending, list_stack, heading)
    return doc


def _inline(doc: Doc, tok, start: int, stack, cell, item_pending, list_stack, heading) -> None:
    parent = stack[-1] if stack else ""
    if parent == "alert_title_open":
        return  # the title ("Note", "Warning") is generated, not written
    in_list = bool(list_stack)
    in_quote = "blockquote_open" in stack or "alert_open" in stack
    where = "cell" if cell else "heading" if parent == "heading_open" else "paragraph"
    raw_lines = tok.content.split("\n")
    doc.text_lines.extend(Line(start + k, raw, where, in_list, in_quote) for k, raw in enumerate(raw_lines))
    if where == "heading":
        doc.headings.append(Heading(heading[0], heading[1], tok.content.strip()))
    if item_pending and item_pending[-1][0] >= 0 and not cell and where == "paragraph":
        line, checked = item_pending.pop()
        doc.items.append(ListItem(line, list_stack[-1], len(list_stack), checked, raw_lines[0]))
        item_pending.append((-1, None))  # the item's first paragraph is taken
    if tok.meta.get("plain"):
        doc.segments.extend(_plain_segments(start, raw_lines))
        return
    line = start
    for child in tok.children or ():
        ct = child.type
        if ct == "text":
            if child.content:
                doc.segments.append((line, child.content))
        elif ct in ("softbreak", "hardbreak"):
            line += 1
        elif ct == "link_open":
            doc.links.append((line, str(child.attrs.get("href", ""))))
        elif ct == "html_inline":
            doc.html_inline.append((line, child.content))
        elif not ct.endswith("_close"):
            doc.marks.setdefault(ct, []).append(line)


def _plain_segments(start: int, raw_lines: list[str]) -> list[tuple[int, str]]:
    """The text pieces markdown-it's inline parser makes of a content without inline syntax:
    one per non-empty line; a line break drops the line's trailing space (all trailing
    spaces for a hard break of 2+) and the next line's leading spaces and tabs."""
    out, last = [], len(raw_lines) - 1
    for k, s in enumerate(raw_lines):
        if k:
            s = s.lstrip(" \t")
        if k < last and s.endswith(" "):
            s = s.rstrip(" ") if s.endswith("  ") else s[:-1]
        if s:
            out.append((start + k, s))
    return out
