"""What an annotator may read of a judge's rationale: nothing that tells which judge wrote it.

Annotators compare two judgments shown as "Judge A" and "Judge B" in a random order. A
rationale that names its judge, the judge's mode or provider, or that carries a tag only one
of the two judges writes, undoes that blinding. The judges of this product write no such thing
(the rules judge's rationale is its verifier's evidence alone). Rationales imported from
elsewhere, or stored by an earlier version, pass through :func:`blind_rationale` before an
annotator sees them. The patterns, applied in this order:

1. **Signatures in brackets** that name a verifier or a mode — ``[ifeval:punctuation:no_comma,
   strict]``, ``[keywords:existence, loose]``, ``[strict]`` (what the rules judge appended
   before) — are removed.
2. **A leading verdict tag** — ``Pass:``, ``FAIL -``, ``Verdict: fail.``, ``Label: 1`` — is
   removed: the verdict is shown on its own, and a tag one judge writes and the other does not
   tells them apart (the demo's judge B used to open every rationale with one).
3. **A mode named as such** — ``strict mode``, ``loose rules``, ``mode: strict``, ``(loose)`` —
   becomes ``[mode]``.
4. **Names** — the name, model and provider of each judge of the item (as stored in the
   judge table, three characters or more: ``gpt-judge``, ``gpt-5.4-mini``, ``openai``,
   ``strict``, ``verifiers``, ``rules``) and the names of LLM vendors and model families
   (:data:`VENDOR_NAMES`) — become ``[judge]``, whole words, any case, with a version suffix
   (``GPT-4o``). A provider that is an ordinary word is masked as well (a rationale's
   "rules" then reads "[judge]"): in a pair of an LLM and the rules judge it would tell them
   apart.

The filter masks words; it cannot hide what a rationale says (a loose judge's evidence for a
pass is what a strict judge would not accept) nor the labels themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

VENDOR_NAMES = (
    "OpenAI",
    "ChatGPT",
    "GPT",
    "Gemini",
    "Google",
    "Anthropic",
    "Claude",
    "Llama",
    "Meta AI",
    "Mistral",
    "Mixtral",
    "Qwen",
    "DeepSeek",
    "xAI",
    "Cohere",
    "Gemma",
)
MASK = "[judge]"
MODE_MASK = "[mode]"
MIN_NAME = 3  # a judge named "a" must not mask every "a"

_MODE = r"(?:strict|loose)"
_SIGNATURE = re.compile(r"\s*\[(?:[A-Za-z][\w.-]*(?::[\w.-]+)+(?:\s*,\s*" + _MODE + r")?|" + _MODE + r")\]", re.I)
_VERDICT_TAG = re.compile(
    r"^\s*(?:(?:pass(?:es|ed)?|fail(?:s|ed)?)\s*[:.\-–—]"
    r"|(?:verdict|label|decision|answer)\s*[:=]\s*[\w-]+\s*[:.;,\-–—)]*)\s*",
    re.I,
)
_MODE_PHRASES = re.compile(
    r"\b" + _MODE + r"[\s-]+(?:mode|rules?|checks?|checking|variant|evaluation)\b"
    r"|\b(?:mode|rules?)\s*[:=]\s*" + _MODE + r"\b|\(\s*" + _MODE + r"\s*\)",
    re.I,
)


def _names_pattern(names: Iterable[str]) -> re.Pattern | None:
    """Whole-word, any-case matches of ``names``, with a version or size suffix (``GPT-4o``,
    ``gemini-3.1-flash-lite``, ``gpt4``) but not a longer word (``Googled`` is left alone)."""
    words = {str(n).strip() for n in names if n and len(str(n).strip()) >= MIN_NAME}
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(r"(?<![\w-])(?:" + alternatives + r")(?:[-.][\w.-]*\w|\d[\w.-]*)?(?![\w-])", re.I)


_VENDORS = _names_pattern(VENDOR_NAMES)


def blind_rationale(text: str, names: Iterable[str] = ()) -> str:
    """``text`` without signatures, verdict tags, mode names and judge names (module docstring).

    Parameters
    ----------
    text : str
        A judge's rationale as stored.
    names : iterable of str
        The names, models and providers of the item's judges (both of them: a rationale naming
        the other judge tells as much).

    Returns
    -------
    str
        The rationale as an annotator may read it (``""`` stays ``""``); when a tag at its start
        was removed, the rest starts with a capital.
    """
    out = _SIGNATURE.sub("", text or "")
    untagged = _VERDICT_TAG.sub("", out, count=1)
    if untagged != out:
        out = untagged[:1].upper() + untagged[1:]
    out = _MODE_PHRASES.sub(MODE_MASK, out)
    own = _names_pattern(names)
    if own is not None:
        out = own.sub(MASK, out)
    return _VENDORS.sub(MASK, out).strip()
