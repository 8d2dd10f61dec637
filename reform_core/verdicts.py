"""An annotator's own verdict on an audit item (the judges agree) and how it is stored.

An audit verdict ("pass" or "fail": does the response satisfy the constraint?) is stored as
the choice an annotator would have made among the two agreeing judgments before verdicts
existed, so the estimators read the same data for the same answers.
"""

from __future__ import annotations

from typing import Optional

VERDICTS = ("pass", "fail")


def verdict_choice(verdict: str, agreed: int) -> tuple[str, Optional[int]]:
    """The stored ``(choice, label)`` of an audit verdict given the judges' agreed label: a
    verdict equal to it is stored as the choice of a judge ("A": both say the same) with that
    label, a verdict against it as "neither" (both judges wrong) without one — exactly what an
    annotator's choice among the two agreeing judgments stored before verdicts existed, so
    the estimators read the same data for the same answers."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    said = 1 if verdict == "pass" else 0
    return ("A", int(agreed)) if said == int(agreed) else ("neither", None)


def verdict_of(label: Optional[int], agreed: Optional[int]) -> Optional[str]:
    """The audit verdict a stored decision stands for (the inverse of :func:`verdict_choice`)."""
    said = label if label is not None else (None if agreed is None else 1 - int(agreed))
    return None if said is None else ("pass" if int(said) == 1 else "fail")
