"""IFEval stress cases: IFEval's instructions checked on altered and swapped responses.

GPT-4's 540 responses exercise only the texts GPT-4 wrote. To compare our checker with the
reference one on more kinds of text, each of IFEval's 541 prompts gets its instructions
checked on

* its own response (GPT-4's, when there is one) under every transform of :data:`TRANSFORMS`
  (upper case, lower case, Windows line endings, commas removed, ...), and
* ``CROSS`` responses of other prompts, each under a transform drawn at random,

all drawn with a fixed seed, so the cases are the same on every machine. A case is an
IFEval input line whose prompt is ``"<key>/<case>"`` (a synthetic, unique prompt) with the
instructions of prompt ``key``; its response is ``TRANSFORMS[transform](response of source)``.
``bench/ifeval_reference.py --stress`` writes the reference checker's verdicts on these
cases; ``tests/unit/test_ifeval_reference.py`` compares ours with them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

SEED = 20261204
CROSS = 3


def _first_paragraph(text: str) -> str:
    return text.split("\n\n")[0]


def _first_third(text: str) -> str:
    return text[: len(text) // 3]


TRANSFORMS: dict[str, Callable[[str], str]] = {
    "same": lambda t: t,
    "upper": str.upper,
    "lower": str.lower,
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "no_commas": lambda t: t.replace(",", ""),
    "quoted": lambda t: f'"{t}"',
    "dash_bullets": lambda t: t.replace("* ", "- "),
    "first_paragraph": _first_paragraph,
    "first_third": _first_third,
}


@dataclass(frozen=True)
class StressCase:
    """Prompt ``key``'s instructions on ``TRANSFORMS[transform](response of source)``."""

    case: int
    key: int
    source: int
    transform: str

    @property
    def prompt(self) -> str:
        return f"{self.key}/{self.case}"


def stress_cases(keys: list[int], answered: list[int]) -> list[StressCase]:
    """The cases for the prompt ``keys`` (input order) given the keys with a response."""
    rng = random.Random(SEED)
    names = list(TRANSFORMS)
    out: list[StressCase] = []
    for key in keys:
        pairs = [(key, name) for name in names] if key in answered else []
        pairs += [(rng.choice(answered), rng.choice(names)) for _ in range(CROSS)]
        out += [StressCase(len(out) + i, key, src, name) for i, (src, name) in enumerate(pairs)]
    return out


def stress_inputs(prompts: list[dict], responses: dict[int, str]) -> tuple[list[dict], dict[str, str]]:
    """IFEval input lines and ``{prompt: response}`` of the stress cases.

    ``prompts``: IFEval input lines (``key``, ``prompt``, ``instruction_id_list``,
    ``kwargs``); ``responses``: ``{key: response}`` of the prompts that have one.
    """
    by_key = {p["key"]: p for p in prompts}
    cases = stress_cases([p["key"] for p in prompts], sorted(responses))
    lines, texts = [], {}
    for c in cases:
        src = by_key[c.key]
        lines.append(
            {
                "key": c.case,
                "prompt": c.prompt,
                "instruction_id_list": src["instruction_id_list"],
                "kwargs": src["kwargs"],
            }
        )
        texts[c.prompt] = TRANSFORMS[c.transform](responses[c.source])
    return lines, texts
