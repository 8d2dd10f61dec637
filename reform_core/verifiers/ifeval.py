"""IFEval's 25 verifiable instructions as verifiers ``ifeval:<instruction_id>``.

Definitions follow the IFEval paper (Zhou et al. 2023, "Instruction-Following Evaluation
for Large Language Models", arXiv 2311.07911, Table 1 and §3) and reproduce its reference
checker (google-research ``instruction_following_eval``: ``instructions.py``,
``instructions_util.py``, ``evaluation_lib.py``) verdict for verdict:

* words are ``\\w+`` runs, sentences NLTK Punkt's English sentences, all-capital words
  are counted over ``nltk.word_tokenize`` tokens, languages come from ``langdetect``
  (``ifeval_text``);
* comparison relations are ``"less than"`` (count < N) and ``"at least"`` (count >= N);
* keywords, forbidden words, postscript markers and section splitters are regular
  expressions, as in the reference (case-insensitive; forbidden words between ``\\b``);
  one that is not a valid expression, where the reference stops with an error, matches
  literally;
* the response is checked as given (no line-ending normalisation);
* an empty (whitespace-only) response follows no instruction;
* **loose** mode (paper §3) also tries the response without its first line, without its
  last line, without both, and each of the four with ``*`` removed; it passes if any does.

Each verifier has the signature ``fn(text, *, mode="strict", **kwargs) -> CheckResult``
with the keyword arguments of IFEval's ``input_data.jsonl`` (None values are ignored).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable

from reform_core.verifiers import ifeval_text as tu
from reform_core.verifiers.base import CheckResult, register

MODES = ("strict", "loose")
RELATIONS = ("less than", "at least")

# instruction id -> (check function, required kwargs, optional kwargs)
_CHECKS: dict[str, tuple[Callable[..., CheckResult], tuple[str, ...], tuple[str, ...]]] = {}


def _ok(passed: bool, evidence: str, lines: tuple[int, ...] = (), **detail) -> CheckResult:
    return CheckResult(passed=bool(passed), evidence=evidence, lines=lines, detail=detail)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _regex(pattern: str) -> str:
    """``pattern`` as the reference uses it: a regular expression. One that does not
    compile (the reference stops there with ``re.error``) is matched literally."""
    try:
        re.compile(pattern)
    except re.error:
        return re.escape(pattern)
    return pattern


def _first_visible(m: re.Match) -> int:
    """Position of the first non-space character of a match (``^\\s*`` may span lines)."""
    return m.start() + len(m.group()) - len(m.group().lstrip())


def _compare(count: int, relation: str, n: int, what: str) -> CheckResult:
    if relation not in RELATIONS:
        raise ValueError(f"relation: must be one of {RELATIONS}, got {relation!r}")
    passed = count < n if relation == "less than" else count >= n
    return _ok(passed, f"{count} {what}; required {relation} {n}", count=count)


def _instruction(iid: str, required: tuple[str, ...] = (), optional: tuple[str, ...] = ()):
    def deco(fn):
        _CHECKS[iid] = (fn, required, optional)
        return fn

    return deco


# ---------------------------------------------------------------- keywords
@_instruction("keywords:existence", ("keywords",))
def _existence(text, keywords):
    missing = [k for k in sorted(keywords) if not re.search(_regex(k), text, flags=re.IGNORECASE)]
    if missing:
        return _ok(False, f"missing keywords: {missing}", missing=missing)
    return _ok(True, f"all keywords present: {list(keywords)}", missing=[])


@_instruction("keywords:frequency", ("keyword", "frequency", "relation"))
def _frequency(text, keyword, frequency, relation):
    keyword = keyword.strip()
    if not keyword:  # the reference draws a random word
        raise ValueError("keyword: must not be empty")
    n = len(re.findall(_regex(keyword), text, flags=re.IGNORECASE))
    return _compare(n, relation, frequency, f"occurrences of {keyword!r}")


@_instruction("keywords:forbidden_words", ("forbidden_words",))
def _forbidden(text, forbidden_words):
    found, lines = [], []
    for w in sorted(set(forbidden_words)):
        m = re.search(r"\b" + _regex(w) + r"\b", text, flags=re.IGNORECASE)
        if m:
            found.append(w)
            lines.append(_line_of(text, m.start()))
    if found:
        return _ok(False, f"forbidden words used: {found}", tuple(lines), found=found)
    return _ok(True, "no forbidden word used", found=[])


@_instruction("keywords:letter_frequency", ("letter", "let_frequency", "let_relation"))
def _letter_frequency(text, letter, let_frequency, let_relation):
    if len(letter) != 1:  # the reference draws a random letter
        raise ValueError(f"letter: must be a single character, got {letter!r}")
    letter = letter.strip().lower()
    n = Counter(text.lower())[letter]
    return _compare(n, let_relation, let_frequency, f"occurrences of letter {letter!r}")


# ---------------------------------------------------------------- language / case
@_instruction("language:response_language", ("language",))
def _response_language(text, language):
    got = tu.detect_language(text)
    if got is None:  # nothing to detect: IFEval counts this as followed
        return _ok(True, "language not detectable; counted as followed", detected=None)
    return _ok(got == language, f"detected language {got!r}, required {language!r}", detected=got)


@_instruction("change_case:english_capital")
def _english_capital(text):
    if not text.isupper():
        bad = next((m for m in re.finditer(r"\w+", text) if any(c.islower() for c in m.group())), None)
        where = f": {bad.group()!r} on line {_line_of(text, bad.start())}" if bad else ""
        lines = (_line_of(text, bad.start()),) if bad else ()
        return _ok(False, f"not all letters are capitals{where}", lines)
    got = tu.detect_language(text)
    return _ok(got in (None, "en"), f"all capitals; detected language {got!r}", detected=got)


@_instruction("change_case:english_lowercase")
def _english_lowercase(text):
    if not text.islower():
        bad = next((m for m in re.finditer(r"\w+", text) if any(c.isupper() for c in m.group())), None)
        where = f": {bad.group()!r} on line {_line_of(text, bad.start())}" if bad else ""
        lines = (_line_of(text, bad.start()),) if bad else ()
        return _ok(False, f"not all letters are lowercase{where}", lines)
    got = tu.detect_language(text)
    return _ok(got in (None, "en"), f"all lowercase; detected language {got!r}", detected=got)


@_instruction("change_case:capital_word_frequency", ("capital_frequency", "capital_relation"))
def _capital_words(text, capital_frequency, capital_relation):
    n = sum(1 for t in tu.word_tokens(text) if t.isupper())  # nltk.word_tokenize
    return _compare(n, capital_relation, capital_frequency, "all-capital words")


# ---------------------------------------------------------------- length
@_instruction("length_constraints:number_words", ("num_words", "relation"))
def _number_words(text, num_words, relation):
    return _compare(tu.count_words(text), relation, num_words, "words")


@_instruction("length_constraints:number_sentences", ("num_sentences", "relation"))
def _number_sentences(text, num_sentences, relation):
    return _compare(tu.count_sentences(text), relation, num_sentences, "sentences")


def _star_paragraphs(text: str) -> list[str] | None:
    """Paragraphs separated by ``***``; None if an inner paragraph is empty."""
    parts = re.split(r"\s?\*\*\*\s?", text)
    out = []
    for i, p in enumerate(parts):
        if p.strip():
            out.append(p)
        elif 0 < i < len(parts) - 1:
            return None
    return out


@_instruction("length_constraints:number_paragraphs", ("num_paragraphs",))
def _number_paragraphs(text, num_paragraphs):
    paras = _star_paragraphs(text)
    if paras is None:
        return _ok(False, "an empty paragraph between two *** dividers", count=None)
    n = len(paras)
    return _ok(n == num_paragraphs, f"{n} paragraphs separated by ***; required {num_paragraphs}", count=n)


def _first_word(paragraph: str) -> str:
    """The reference's first word: the first whitespace-separated token without leading
    quotes, cut at the first of ``. , ? ! ' "``, lower-cased character by character."""
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    return "".join(c.lower() for c in re.split(r"[.,?!'\"]", word, maxsplit=1)[0])


@_instruction("length_constraints:nth_paragraph_first_word", ("num_paragraphs", "nth_paragraph", "first_word"))
def _nth_paragraph_first_word(text, num_paragraphs, nth_paragraph, first_word):
    if not 1 <= nth_paragraph <= num_paragraphs:  # the reference draws a random paragraph
        raise ValueError(f"nth_paragraph: must be 1..num_paragraphs ({num_paragraphs}), got {nth_paragraph}")
    parts = text.split("\n\n")
    n = sum(1 for p in parts if p.strip())
    if nth_paragraph > n:
        return _ok(False, f"only {n} paragraphs; paragraph {nth_paragraph} is missing", count=n)
    para = parts[nth_paragraph - 1].strip()
    if not para:
        return _ok(False, f"paragraph {nth_paragraph} is empty", count=n)
    word = _first_word(para)
    passed = n == num_paragraphs and word == first_word.lower()
    return _ok(
        passed,
        f"{n} paragraphs (required {num_paragraphs}); paragraph {nth_paragraph} starts with "
        f"{word!r} (required {first_word.lower()!r})",
        count=n,
        first_word=word,
    )


# ---------------------------------------------------------------- detectable content
@_instruction("detectable_content:number_placeholders", ("num_placeholders",))
def _placeholders(text, num_placeholders):
    found = re.findall(r"\[.*?\]", text)
    return _ok(
        len(found) >= num_placeholders,
        f"{len(found)} [placeholders]; required at least {num_placeholders}",
        count=len(found),
    )


@_instruction("detectable_content:postscript", ("postscript_marker",))
def _postscript(text, postscript_marker):
    marker = postscript_marker.strip()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + _regex(marker.lower()) + r".*$"
    lower = text.lower()
    m = re.search(pattern, lower, flags=re.MULTILINE)
    if m:
        line = _line_of(lower, _first_visible(m))
        return _ok(True, f"postscript {marker!r} on line {line}", (line,))
    return _ok(False, f"no postscript starting with {marker!r}")


# ---------------------------------------------------------------- detectable format
@_instruction("detectable_format:number_bullet_lists", ("num_bullets",))
def _bullets(text, num_bullets):
    found = [
        *re.finditer(r"^\s*\*[^\*].*$", text, flags=re.MULTILINE),
        *re.finditer(r"^\s*-.*$", text, flags=re.MULTILINE),
    ]
    lines = tuple(sorted({_line_of(text, _first_visible(m)) for m in found}))
    return _ok(
        len(found) == num_bullets,
        f"{len(found)} markdown bullet points; required exactly {num_bullets}",
        lines,
        count=len(found),
    )


@_instruction("detectable_format:constrained_response")
def _constrained(text):
    options = ("My answer is yes.", "My answer is no.", "My answer is maybe.")
    hit = next((o for o in options if o in text.strip()), None)
    return _ok(hit is not None, f"contains {hit!r}" if hit else f"none of {list(options)}")


@_instruction("detectable_format:number_highlighted_sections", ("num_highlights",))
def _highlights(text, num_highlights):
    singles = [h for h in re.findall(r"\*[^\n*]*\*", text) if h.strip("*").strip()]
    doubles = [h for h in re.findall(r"\*\*[^\n*]*\*\*", text) if h[2:-2].strip()]
    n = len(singles) + len(doubles)
    return _ok(n >= num_highlights, f"{n} *highlighted* sections; required at least {num_highlights}", count=n)


@_instruction("detectable_format:multiple_sections", ("num_sections",), ("section_spliter",))
def _sections(text, num_sections, section_spliter="Section"):
    section_spliter = section_spliter.strip()
    parts = re.split(r"\s?" + _regex(section_spliter) + r"\s?\d+\s?", text)
    n = len(parts) - 1
    return _ok(
        n >= num_sections,
        f"{n} sections marked '{section_spliter} N'; required at least {num_sections}",
        count=n,
    )


@_instruction("detectable_format:json_format")
def _json_format(text):
    body = text.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):  # one after the other, as the reference
        body = body.removeprefix(fence)
    try:
        json.loads(body.removesuffix("```").strip())
    except ValueError as exc:
        return _ok(False, f"not valid JSON: {exc}")
    return _ok(True, "the response is valid JSON")


@_instruction("detectable_format:title")
def _title(text):
    for m in re.finditer(r"<<[^\n]+>>", text):
        if m.group().lstrip("<").rstrip(">").strip():
            return _ok(True, f"title {m.group()!r} on line {_line_of(text, m.start())}", (_line_of(text, m.start()),))
    return _ok(False, "no title in <<double angular brackets>>")


# ---------------------------------------------------------------- combination
@_instruction("combination:two_responses")
def _two_responses(text):
    parts = text.split("******")
    kept = []
    for i, p in enumerate(parts):
        if p.strip():
            kept.append(p)
        elif 0 < i < len(parts) - 1:
            return _ok(False, "an empty response between ****** separators")
    if len(kept) != 2:
        return _ok(False, f"{len(kept)} responses separated by ******; required 2", count=len(kept))
    if kept[0].strip() == kept[1].strip():
        return _ok(False, "the two responses are identical", count=2)
    return _ok(True, "two different responses separated by ******", count=2)


@_instruction("combination:repeat_prompt", ("prompt_to_repeat",))
def _repeat_prompt(text, prompt_to_repeat):
    passed = text.strip().lower().startswith(prompt_to_repeat.strip().lower())
    return _ok(passed, "starts with the prompt verbatim" if passed else "does not start with the prompt verbatim")


# ---------------------------------------------------------------- start / end
@_instruction("startend:end_checker", ("end_phrase",))
def _end_checker(text, end_phrase):
    body = text.strip().strip('"').lower()
    passed = body.endswith(end_phrase.strip().lower())
    tail = body[-len(end_phrase) - 10 :]
    return _ok(passed, f"ends with {tail!r}; required end {end_phrase!r}")


@_instruction("startend:quotation")
def _quotation(text):
    body = text.strip()
    passed = len(body) > 1 and body[0] == '"' and body[-1] == '"'
    return _ok(passed, "wrapped in double quotes" if passed else "not wrapped in double quotation marks")


# ---------------------------------------------------------------- punctuation
@_instruction("punctuation:no_comma")
def _no_comma(text):
    lines = tuple(sorted({_line_of(text, m.start()) for m in re.finditer(",", text)}))
    if lines:
        return _ok(False, f"{text.count(',')} commas, on lines {list(lines)}", lines, count=text.count(","))
    return _ok(True, "no comma", count=0)


# ---------------------------------------------------------------- strict / loose driver
def loose_variants(text: str) -> list[str]:
    """The eight loose-mode variants of a response (IFEval paper §3).

    The response itself, without its first line, without its last line, without both,
    and the same four with every ``*`` removed.
    """
    lines = text.split("\n")
    base = [
        text,
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    ]
    return base + [v.replace("*", "") for v in base]


def clean_kwargs(instruction_id: str, kwargs: dict) -> dict:
    """Drop None values; ValueError on a missing or unexpected kwarg of the instruction."""
    _, required, optional = _CHECKS[instruction_id]
    given = {k: v for k, v in kwargs.items() if v is not None}
    unknown = sorted(set(given) - set(required) - set(optional))
    if unknown:
        raise ValueError(f"{instruction_id}: unexpected kwargs {unknown}; expected {list(required + optional)}")
    missing = [k for k in required if k not in given]
    if missing:
        raise ValueError(f"{instruction_id}: missing kwargs {missing}")
    return given


def check(instruction_id: str, text: str, kwargs: dict | None = None, mode: str = "strict") -> CheckResult:
    """Evaluate one IFEval instruction on a response in ``"strict"`` or ``"loose"`` mode.

    Parameters
    ----------
    instruction_id : str
        An IFEval id such as ``"punctuation:no_comma"`` (without the ``ifeval:`` prefix).
    text : str
        The response, checked as given (as the reference does, line endings included).
    kwargs : dict, optional
        The instruction's kwargs as in IFEval's ``input_data.jsonl``; None values ignored.
    mode : {"strict", "loose"}
        Loose mode passes if any of :func:`loose_variants` passes (Zhou et al. 2023, §3).

    Returns
    -------
    CheckResult
        ``detail["variant"]`` names the first passing loose variant (index into
        :func:`loose_variants`; 0 is the response itself).
    """
    if instruction_id not in _CHECKS:
        raise ValueError(f"instruction_id: unknown IFEval instruction {instruction_id!r}")
    if mode not in MODES:
        raise ValueError(f"mode: must be one of {MODES}, got {mode!r}")
    if text is None:
        raise ValueError("text: response is None")
    fn = _CHECKS[instruction_id][0]
    args = clean_kwargs(instruction_id, kwargs or {})
    variants = [text] if mode == "strict" else loose_variants(text)
    first = None
    for i, variant in enumerate(variants):
        if not variant.strip():
            res = CheckResult(False, evidence="empty response")
        else:
            res = fn(variant, **args)
        if res.passed:
            return CheckResult(
                True, evidence=res.evidence, lines=res.lines if i == 0 else (), detail={**res.detail, "variant": i}
            )
        first = first or res
    return CheckResult(False, evidence=first.evidence, lines=first.lines, detail={**first.detail, "variant": None})


def _make_verifier(instruction_id: str):
    def verifier(text: str, *, mode: str = "strict", **kwargs) -> CheckResult:
        return check(instruction_id, text, kwargs, mode=mode)

    verifier.__name__ = "ifeval_" + re.sub(r"\W", "_", instruction_id)
    verifier.__doc__ = f"IFEval instruction ``{instruction_id}`` (Zhou et al. 2023); see :func:`check`."
    return verifier


INSTRUCTION_IDS = tuple(sorted(_CHECKS))

for _iid in INSTRUCTION_IDS:
    register(f"ifeval:{_iid}")(_make_verifier(_iid))
