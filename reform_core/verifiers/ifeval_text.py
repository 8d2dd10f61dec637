"""IFEval's text measures, computed as its reference checker computes them.

The reference checker (google-research ``instruction_following_eval``, the code of Zhou et
al. 2023, "Instruction-Following Evaluation for Large Language Models", arXiv 2311.07911)
counts words with NLTK's ``RegexpTokenizer(r"\\w+")``, sentences with NLTK's Punkt tokenizer
and its pretrained English model, all-capital words over ``nltk.word_tokenize`` tokens, and
languages with ``langdetect``. This module uses the same packages. The English Punkt model
(NLTK data ``punkt_tab``, MIT licence; see ``data/nltk_data/README.md``) ships with
ReForm, so nothing is downloaded.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from reform_core.verifiers.text_utils import detect_language

NLTK_DATA = Path(__file__).resolve().parent / "data" / "nltk_data"
PUNKT_ENGLISH = NLTK_DATA / "tokenizers" / "punkt_tab" / "english"

__all__ = [
    "NLTK_DATA",
    "PUNKT_ENGLISH",
    "count_sentences",
    "count_words",
    "detect_language",
    "sentences",
    "word_tokens",
]


@lru_cache(maxsize=1)
def _punkt():
    """NLTK's Punkt sentence tokenizer with the shipped English model.

    Reads the four model files as ``nltk.tokenize.punkt.load_punkt_params`` does (that
    function only opens files under NLTK's data folders).
    """
    from nltk.tabdata import PunktDecoder
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    decode, params = PunktDecoder(), PunktParameters()
    with (PUNKT_ENGLISH / "collocations.tab").open(encoding="utf-8") as f:
        params.collocations = set(decode.tab2tups(f))
    with (PUNKT_ENGLISH / "sent_starters.txt").open(encoding="utf-8") as f:
        params.sent_starters = decode.txt2set(f)
    with (PUNKT_ENGLISH / "abbrev_types.txt").open(encoding="utf-8") as f:
        params.abbrev_types = decode.txt2set(f)
    with (PUNKT_ENGLISH / "ortho_context.tab").open(encoding="utf-8") as f:
        params.ortho_context = decode.tab2intdict(f)
    return PunktSentenceTokenizer(params)


@lru_cache(maxsize=1)
def _word_regexp():
    from nltk.tokenize import RegexpTokenizer

    return RegexpTokenizer(r"\w+")


def count_words(text: str) -> int:
    """Number of ``\\w+`` runs (the reference's ``instructions_util.count_words``)."""
    return len(_word_regexp().tokenize(text))


def sentences(text: str) -> list[str]:
    """Punkt's English sentences (``nltk.sent_tokenize(text)``)."""
    return _punkt().tokenize(text)


def count_sentences(text: str) -> int:
    """Number of Punkt sentences (the reference's ``instructions_util.count_sentences``)."""
    return len(sentences(text))


def word_tokens(text: str) -> list[str]:
    """``nltk.word_tokenize(text)``: Punkt sentences, each split by NLTK's Treebank-style
    word tokenizer (what ``word_tokenize`` does with ``preserve_line=False``)."""
    from nltk.tokenize import word_tokenize

    return [tok for sent in sentences(text) for tok in word_tokenize(sent, preserve_line=True)]
