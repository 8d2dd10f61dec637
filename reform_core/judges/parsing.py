"""Strict, pure parsing of a judge's answer (docs/metrics.md#what-a-judge-sees).

The answer must be one JSON object ``{"verdicts": [...]}`` with exactly one entry per
expected constraint id, each ``{"constraint_id": str, "rationale": str, "label": 0|1}``.
Anything else — malformed JSON, a missing, duplicate or unknown id, a label that is not
the integer 0 or 1 (``true``, ``"1"``, ``1.0`` and ``null`` are rejected), a missing or
extra field — raises :class:`ParseError`. A parse error is never turned into a fail.
"""

from __future__ import annotations

import json
from typing import Sequence

VERDICT_FIELDS = {"constraint_id", "rationale", "label"}


class ParseError(ValueError):
    """The judge's answer does not follow the required format."""


def parse_verdicts(text: str, expected_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
    """Map each expected constraint id to ``(label, rationale)``, in ``expected_ids`` order.

    Raises
    ------
    ParseError
        naming the first problem found (the message is fed back in the repair request).
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty answer")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, too many digits, too deep
        raise ParseError(f"malformed JSON: {str(exc) or type(exc).__name__}") from None
    if not isinstance(obj, dict):
        raise ParseError(f"expected a JSON object, got {type(obj).__name__}")
    if set(obj) != {"verdicts"}:
        raise ParseError(f"expected exactly the key 'verdicts', got {sorted(obj)}")
    items = obj["verdicts"]
    if not isinstance(items, list):
        raise ParseError(f"'verdicts' must be a list, got {type(items).__name__}")
    expected = list(expected_ids)
    found: dict[str, tuple[int, str]] = {}
    for n, entry in enumerate(items):
        if not isinstance(entry, dict):
            raise ParseError(f"verdicts[{n}]: expected an object, got {type(entry).__name__}")
        if set(entry) != VERDICT_FIELDS:
            missing = sorted(VERDICT_FIELDS - set(entry))
            extra = sorted(set(entry) - VERDICT_FIELDS)
            raise ParseError(f"verdicts[{n}]: missing fields {missing}, unexpected fields {extra}")
        cid, label, rationale = entry["constraint_id"], entry["label"], entry["rationale"]
        if not isinstance(cid, str):
            raise ParseError(f"verdicts[{n}].constraint_id: expected a string, got {cid!r}")
        if cid not in expected:
            raise ParseError(f"verdicts[{n}].constraint_id: unknown id {cid!r} (expected {expected})")
        if cid in found:
            raise ParseError(f"verdicts[{n}].constraint_id: duplicate id {cid!r}")
        if type(label) is not int or label not in (0, 1):
            raise ParseError(f"verdicts[{n}].label: must be the integer 0 or 1, got {label!r}")
        if not isinstance(rationale, str):
            raise ParseError(f"verdicts[{n}].rationale: expected a string, got {rationale!r}")
        found[cid] = (label, rationale)
    missing_ids = [i for i in expected if i not in found]
    if missing_ids:
        raise ParseError(f"missing verdicts for constraint ids {missing_ids}")
    return {i: found[i] for i in expected}
