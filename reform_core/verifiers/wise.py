"""The four WISE checkers (docs/metrics.md#wording-forms-and-checkers; the WISE paper, *When
Verifiable Counts Depend on Wording*, §3, §4 and App. R).

Each checker runs on the complete visible output: headings, Markdown, framing text and
wrappers count. ``detail["direction"]`` records the failure direction used by the WISE
failure profiles (``reform_core.metrics.wise.failure_directions``):

=====================  ==========================================
``wise:exact_words``   ``under`` / ``exact`` / ``over``
``wise:keyword_once``  ``zero`` / ``once`` / ``multiple``
``wise:word_range``    ``under`` / ``within`` / ``over``
``wise:json_keys``     ``parse_failure`` / ``wrong_keys`` / ``ok``
=====================  ==========================================
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Iterable

from reform_core.verifiers.base import CheckResult, register


def word_count(text: str | None) -> int:
    """Whitespace-delimited tokens of the whole output: ``len((text or "").strip().split())``."""
    return len((text or "").strip().split())


def _non_negative_int(value, name: str, verifier: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{verifier}: parameter {name!r} must be a non-negative integer, got {value!r}")
    return int(value)


@register("wise:exact_words")
def exact_words(text: str | None, *, n: int) -> CheckResult:
    """Pass iff the output has exactly ``n`` words (WISE eq. 3)."""
    n = _non_negative_int(n, "n", "wise:exact_words")
    count = word_count(text)
    direction = "exact" if count == n else ("under" if count < n else "over")
    return CheckResult(
        passed=count == n,
        evidence=f"{count} words, required exactly {n} ({direction})",
        detail={"direction": direction, "word_count": count, "target": n, "error": count - n},
    )


@register("wise:word_range")
def word_range(text: str | None, *, low: int = 8, high: int = 12) -> CheckResult:
    """Pass iff the word count lies in the inclusive interval [low, high] (WISE §3)."""
    low = _non_negative_int(low, "low", "wise:word_range")
    high = _non_negative_int(high, "high", "wise:word_range")
    if low > high:
        raise ValueError(f"wise:word_range: low ({low}) must not exceed high ({high})")
    count = word_count(text)
    direction = "under" if count < low else ("over" if count > high else "within")
    return CheckResult(
        passed=direction == "within",
        evidence=f"{count} words, required {low}-{high} ({direction})",
        detail={"direction": direction, "word_count": count, "low": low, "high": high},
    )


@register("wise:keyword_once")
def keyword_once(text: str | None, *, keyword: str) -> CheckResult:
    """Pass iff ``keyword`` occurs exactly once as a case-insensitive whole word.

    A whole-word occurrence is not preceded or followed by a word character (letter,
    digit, underscore), so "cat" matches in "A cat." but not in "concatenate" or "cats".
    """
    if not isinstance(keyword, str) or not keyword.strip():
        raise ValueError(f"wise:keyword_once: parameter 'keyword' must be a non-empty string, got {keyword!r}")
    kw = keyword.strip()
    pattern = re.compile(r"(?<!\w)" + re.escape(kw) + r"(?!\w)", re.IGNORECASE)
    body = text or ""
    hits = list(pattern.finditer(body))
    count = len(hits)
    direction = {0: "zero", 1: "once"}.get(count, "multiple")
    lines = tuple(sorted({body.count("\n", 0, m.start()) + 1 for m in hits}))
    return CheckResult(
        passed=count == 1,
        evidence=f"keyword {kw!r} occurs {count} time(s), required exactly once ({direction})",
        lines=lines,
        detail={"direction": direction, "occurrences": count, "keyword": kw},
    )


@register("wise:json_keys")
def json_keys(text: str | None, *, keys: Iterable[str]) -> CheckResult:
    """Pass iff the whole output parses as one JSON object whose key set equals ``keys``.

    Surrounding whitespace is allowed; any other prose or a code fence makes the output
    unparseable (``parse_failure``). A parseable value that is not an object, or an object
    with a different key set, is ``wrong_keys``.
    """
    if isinstance(keys, str):
        raise ValueError("wise:json_keys: parameter 'keys' must be a collection of key names, not one string")
    required = set(keys)
    if not required or not all(isinstance(k, str) for k in required):
        raise ValueError(f"wise:json_keys: parameter 'keys' must be non-empty strings, got {keys!r}")
    try:
        value = json.loads(text or "")
    except (json.JSONDecodeError, RecursionError) as exc:
        return CheckResult(
            passed=False,
            evidence=f"output is not valid JSON: {exc}",
            detail={"direction": "parse_failure", "required_keys": sorted(required)},
        )
    if not isinstance(value, dict):
        return CheckResult(
            passed=False,
            evidence=f"top-level JSON value is a {type(value).__name__}, not an object",
            detail={"direction": "wrong_keys", "keys": [], "required_keys": sorted(required)},
        )
    found = set(value)
    missing, extra = sorted(required - found), sorted(found - required)
    ok = not missing and not extra
    return CheckResult(
        passed=ok,
        evidence="key set matches" if ok else f"missing keys {missing}, unexpected keys {extra}",
        detail={
            "direction": "ok" if ok else "wrong_keys",
            "keys": sorted(found),
            "required_keys": sorted(required),
            "missing": missing,
            "extra": extra,
        },
    )
