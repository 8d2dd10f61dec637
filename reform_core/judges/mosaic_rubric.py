"""MOSAIC's LLM-as-a-judge for constraints without a deterministic check (MOSAIC, arXiv:2601.18554,
§3.3, App. D.4).

Pure: the judge's messages and the parsing of its answer. The prompt is App. D.4.1's
system and user templates; ``rubric`` is the constraint's App. D.4.2 rubric as
``"<name>: <description>"`` (``reform_core.construction.mosaic_gen`` writes it so). The
judge answers a JSON object with ``reasoning`` and ``score`` on 0–10; the score is mapped
to [0, 1] by dividing by 10 and, like every MOSAIC score, binarised at ≥ 0.5 (MOSAIC
§3.3; docs/metrics.md#mosaic), i.e. a judge score of 5 or more counts as followed.
"""

from __future__ import annotations

import math

from reform_core.construction.prompts import json_object

PROMPT_VERSION = "mosaic-rubric-v1"
SYSTEM = (
    "You are an expert writing coach acting as a fair and strict judge. Your task is to evaluate a given "
    "passage based on a provided rubric."
)
USER = (
    "### Passage ###\n{passage}\n\n### Rubric ###\nEvaluate the given passage on the following criterion on a "
    "scale of 0 to 10: {rubric} (0 = completely disagree, 2 = somewhat disagree, 5 = neutral, 8 = somewhat "
    "agree, 10 = completely agree).\n\n### Instructions ###\nProvide your output only in a JSON format with the "
    'keys "reasoning" and "score".'
)


def messages(passage: str, rubric: str) -> list[dict]:
    """System and user messages asking the judge to score ``passage`` against ``rubric``."""
    if not str(rubric or "").strip():
        raise ValueError("rubric: the constraint has no rubric for the judge")
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER.format(passage=passage or "", rubric=str(rubric).strip())},
    ]


def parse_score(text: str) -> tuple[float, str]:
    """``(score in [0, 1], reasoning)`` from the judge's answer; ValueError if unusable."""
    obj = json_object(text)
    raw = obj.get("score")
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            raise ValueError(f"field 'score': not a number: {obj.get('score')!r}") from None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or not 0 <= raw <= 10:
        raise ValueError(f"field 'score': expected a number from 0 to 10, got {obj.get('score')!r}")
    reasoning = obj.get("reasoning", "")
    return float(raw) / 10.0, str(reasoning if reasoning is not None else "")[:4000]
