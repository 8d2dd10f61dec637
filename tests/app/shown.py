"""How a test reads a rounded number off a page table (docs/display.md): the places a cell
shows follow from the interval text beside it."""

from __future__ import annotations

import re


def places(interval: str) -> int:
    """Decimal places of a point shown beside ``interval``: those of the interval's numbers;
    0 for a too-few estimate, 1 (the default) where no interval is shown ("—")."""
    if interval.startswith("too "):
        return 0
    numbers = re.findall(r"-?\d+(?:\.(\d+))?", interval)
    if not numbers:
        return 1
    return len(numbers[0])


def assert_rounded(shown, value: float, interval: str) -> None:
    """``shown`` (a number, or its text in a column that also holds "—") is ``value`` rounded to
    the places its interval text supports."""
    d = places(interval)
    if isinstance(shown, str):
        assert re.fullmatch(r"-?\d+" + (rf"\.\d{{{d}}}" if d else ""), shown), f"{shown!r} is not to {d} places"
        shown = float(shown)
    assert round(shown, d) == shown, f"{shown} has more than {d} places (interval {interval!r})"
    assert abs(shown - value) <= 0.5 * 10**-d + 1e-6, f"{shown} is not {value} to {d} places ({interval!r})"


def bounds(interval: str) -> tuple[float, float]:
    """The two numbers of ``lo–hi`` or ``lo to hi``."""
    lo, hi = re.split(r"–| to ", interval)
    return float(lo), float(hi)
