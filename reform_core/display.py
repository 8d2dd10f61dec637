"""How a number with an interval is shown to a person (docs/display.md).

Pure functions, no I/O: the pages, the CLI's tables and the export's ``summary.txt`` call
them; JSON outputs keep full precision and never pass through here.

* **Rounding** (:func:`decimals_for`): a point and its interval bounds are written to the
  decimal place of the half-width's first significant digit (±13.4 → whole points, ±4.47 →
  whole points, ±0.46 → one decimal, ±0.046 → two), never coarser than ``coarsest`` (whole
  percentage points by default: a rate is not rounded to tens) nor finer than ``finest``.
  Without a usable interval (missing, zero width) ``default`` decimals are used.
* **Too few** (:func:`too_few`): a rate over fewer than :data:`MIN_UNITS` units, or with an
  interval wider than :data:`MAX_WIDTH_PP` percentage points, carries no information a lead
  can act on: it is shown greyed, to whole points, with "too few units (n = 3)" (or "too
  uncertain: wider than 50 pp (n = 48)") instead of its interval.
* **p-values** (:func:`p_value_text`): two significant digits, and ``< 1e-4`` below 10⁻⁴.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import pandas as pd

MIN_UNITS = 10  # fewer units than this: too few for an informative interval
MAX_WIDTH_PP = 50.0  # an interval wider than this (percentage points): too few as well
P_FLOOR = 1e-4  # p-values below this are written "< 1e-4"
MISSING = "—"


def _number(value) -> Optional[float]:
    """``value`` as a finite float, or None (None, NaN, pd.NA, ±inf, non-numbers)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def decimals_for(lo, hi, *, coarsest: int = 0, finest: int = 2, default: int = 1) -> int:
    """Decimal places for a point with the interval ``[lo, hi]``: those of the first significant
    digit of the half-width ``(hi − lo) / 2``, clamped to ``[coarsest, finest]``; ``default``
    when the interval is missing or has no width.

    >>> decimals_for(56.46, 89.15), decimals_for(24.54, 25.46), decimals_for(0.9952, 1.0, finest=4)
    (0, 1, 3)
    """
    a, b = _number(lo), _number(hi)
    if a is None or b is None or b - a <= 0:
        return default
    half = (b - a) / 2
    return int(min(max(-math.floor(math.log10(half)), coarsest), finest))


def number_text(value, decimals: int) -> str:
    """``value`` to ``decimals`` places ("—" when missing); never "-0"."""
    x = _number(value)
    if x is None:
        return MISSING
    text = f"{x:.{max(decimals, 0)}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def interval_text(lo, hi, decimals: int, *, sep: Optional[str] = None) -> str:
    """``lo–hi`` to ``decimals`` places (``lo to hi`` when a bound is negative, so that a minus
    sign never meets the dash); "—" when either bound is missing."""
    a, b = _number(lo), _number(hi)
    if a is None or b is None:
        return MISSING
    lo_text, hi_text = number_text(a, decimals), number_text(b, decimals)
    if sep is None:
        sep = " to " if lo_text.startswith("-") or hi_text.startswith("-") else "–"
    return f"{lo_text}{sep}{hi_text}"


def too_few(n, lo=None, hi=None, *, min_units: int = MIN_UNITS, max_width: float = MAX_WIDTH_PP) -> bool:
    """Whether a rate over ``n`` units with the interval ``[lo, hi]`` (percentage points) is too
    weakly supported to show its interval: ``n < min_units``, or the interval wider than
    ``max_width``. A missing interval alone is not "too few" (the caller says why it is missing)."""
    count = _number(n)
    if count is not None and count < min_units:
        return True
    a, b = _number(lo), _number(hi)
    return a is not None and b is not None and b - a > max_width


def too_few_text(n, unit: str = "units", *, min_units: int = MIN_UNITS, max_width: float = MAX_WIDTH_PP) -> str:
    """The text shown in place of an uninformative interval: ``too few units (n = 3)`` when
    ``n < min_units``, else ``too uncertain: wider than 50 pp (n = 48)``."""
    count = _number(n)
    if count is None:
        return f"too uncertain: wider than {max_width:g} pp"
    if count < min_units:
        return f"too few {unit} (n = {int(count):,})"
    return f"too uncertain: wider than {max_width:g} pp (n = {int(count):,})"


@dataclass(frozen=True)
class Shown:
    """One estimate as shown: ``point`` and ``interval`` texts, the rounded point (a number, for
    sortable tables), its ``decimals`` and whether it is ``greyed`` (too few)."""

    point: str
    interval: str
    value: Optional[float]
    decimals: int
    greyed: bool


def show(
    point,
    lo,
    hi,
    n=None,
    *,
    unit: str = "units",
    coarsest: int = 0,
    finest: int = 2,
    default: int = 1,
    min_units: int = MIN_UNITS,
    max_width: float = MAX_WIDTH_PP,
) -> Shown:
    """A point with its interval and denominator ``n`` as shown (module docstring): rounded to
    what the interval supports; when :func:`too_few` holds, greyed, to ``coarsest`` places, with
    :func:`too_few_text` in place of the interval."""
    greyed = too_few(n, lo, hi, min_units=min_units, max_width=max_width)
    d = coarsest if greyed else decimals_for(lo, hi, coarsest=coarsest, finest=finest, default=default)
    x = _number(point)
    interval = too_few_text(n, unit, min_units=min_units, max_width=max_width) if greyed else interval_text(lo, hi, d)
    return Shown(
        point=number_text(x, d), interval=interval, value=None if x is None else round(x, d), decimals=d, greyed=greyed
    )


def p_value_text(p, *, floor: float = P_FLOOR, replicates: Optional[int] = None) -> str:
    """A p-value for a person: two significant digits, ``< 1e-4`` below ``floor``, "—" missing.
    A bootstrap p-value (``replicates`` given) cannot be resolved below ``1/replicates``: one
    under it reads ``< 0.0005`` (2,000 replicates), never ``< 1e-4``.

    >>> p_value_text(2e-20), p_value_text(0.03141), p_value_text(0.5), p_value_text(1.0)
    ('< 1e-4', '0.031', '0.5', '1')
    >>> p_value_text(0.0, replicates=2000)
    '< 0.0005'
    """
    x = _number(p)
    if x is None:
        return MISSING
    if replicates and x < 1 / replicates:
        return f"< {1 / replicates:.2g}"
    if x < floor:
        return f"< {floor:.0e}".replace("e-0", "e-")
    return f"{x:.2g}"


# ----------------------------------------------------------------------------- readable tables


@dataclass
class Table:
    """A table as shown: ``frame`` (points rounded, still numbers, so a table sorts; intervals as
    text), ``decimals`` (places per numeric cell, NaN elsewhere) and ``greyed`` (cells of a
    too-few estimate) — all three with the same shape."""

    frame: "pd.DataFrame"
    decimals: "pd.DataFrame"
    greyed: "pd.DataFrame"

    def select(self, columns: list) -> "Table":
        """The same table with only ``columns`` (in that order)."""
        return Table(self.frame[columns], self.decimals[columns], self.greyed[columns])

    def text(self) -> "pd.DataFrame":
        """Every cell as text, exactly as shown (for the CLI and summaries)."""
        import pandas as pd

        out = self.frame.copy().astype(object)
        for c in out.columns:
            d = self.decimals[c]
            out[c] = [
                number_text(v, int(k))
                if pd.notna(k)
                else (MISSING if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
                for v, k in zip(self.frame[c], d)
            ]
        return out


class TableBuilder:
    """Builds a :class:`Table` column by column from a result frame (one row per estimate)."""

    def __init__(self, keys: "pd.DataFrame"):
        self._n = len(keys)
        self._cols: dict = {}
        self._dec: dict = {}
        self._grey: dict = {}
        for c in keys.columns:
            self.column(c, keys[c].tolist())

    def column(self, label: str, values, decimals: Optional[int] = None, greyed=None) -> "TableBuilder":
        """A plain column (``decimals``: numbers shown to fixed places; ``greyed``: per row)."""
        values = list(values)
        self._cols[label] = values
        self._dec[label] = [decimals if decimals is not None and _number(v) is not None else None for v in values]
        self._grey[label] = list(greyed) if greyed is not None else [False] * self._n
        return self

    def estimate(
        self,
        label: str,
        point,
        lo,
        hi,
        *,
        n=None,
        unit: str = "units",
        interval: Optional[str] = None,
        extra: tuple = (),
        **rule,
    ) -> "TableBuilder":
        """A point column rounded by its interval ``[lo, hi]``, and that interval as text beside it
        (column ``interval``, default ``"<label> 95% CI"``), greyed with :func:`too_few_text` in
        place of the interval where too few; ``extra``: more ``(label, lo, hi)`` intervals beside
        it, each to its own places (greyed with the point)."""
        n = [None] * self._n if n is None else list(n)
        cells = [show(p, a, b, k, unit=unit, **rule) for p, a, b, k in zip(point, lo, hi, n)]
        grey = [c.greyed for c in cells]
        self._cols[label] = [c.value for c in cells]
        self._dec[label] = [c.decimals if c.value is not None else None for c in cells]
        self._grey[label] = grey
        self.column(interval or f"{label} 95% CI", [c.interval for c in cells], greyed=grey)
        for name, xs, ys in extra:
            self.column(
                name,
                [
                    c.interval if c.greyed else interval_text(a, b, decimals_for(a, b, **_places(rule)))
                    for c, a, b in zip(cells, xs, ys)
                ],
                greyed=grey,
            )
        return self

    def drop(self, label: str) -> "TableBuilder":
        """Leave out the column ``label``."""
        for store in (self._cols, self._dec, self._grey):
            store.pop(label, None)
        return self

    def build(self) -> Table:
        import pandas as pd

        return Table(pd.DataFrame(self._cols), pd.DataFrame(self._dec, dtype=float), pd.DataFrame(self._grey))


def _places(rule: dict) -> dict:
    return {k: v for k, v in rule.items() if k in ("coarsest", "finest", "default")}
