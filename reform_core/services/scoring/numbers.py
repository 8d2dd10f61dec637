"""Numbers as the JSON outputs write them (``score --json``, the export's manifest)."""

from __future__ import annotations

from typing import Optional

import pandas as pd


def json_number(v) -> Optional[float]:
    """A number rounded to 6 decimals for JSON, None where missing."""
    return None if v is None or pd.isna(v) else round(float(v), 6)
