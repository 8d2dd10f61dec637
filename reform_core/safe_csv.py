"""CSV files that a spreadsheet opens without running anything (CSV/formula injection).

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by
Excel, LibreOffice and Google Sheets as a formula (``=HYPERLINK(…)``, ``=cmd|…``). Every CSV
ReForm writes — ``export``, the construction and simulation files, the verifier's verdicts,
the pages' downloads — goes through :func:`write_csv` / :func:`csv_text`, which prefix such
a text cell with an apostrophe (the OWASP rule). Numbers are never touched: only ``str``
cells (and text headers and index labels) are, so numeric columns stay numeric.

The rule is made lossless by also prefixing a text cell that already starts with an
apostrophe; :func:`restore` (used by :func:`read_csv`) removes exactly one leading
apostrophe from every text cell, so ReForm reads its own files back unchanged (``score-export``).
JSON and Parquet files keep the raw values.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
PREFIX = "'"


def neutralise_cell(value):
    """``value`` with an apostrophe in front when it is text starting with a formula trigger
    (or with an apostrophe, to keep the rule reversible); anything else unchanged."""
    if isinstance(value, str) and value.startswith(TRIGGERS + (PREFIX,)):
        return PREFIX + value
    return value


def restore_cell(value):
    """The inverse of :func:`neutralise_cell` for a cell read back from a ReForm CSV."""
    if isinstance(value, str) and value.startswith(PREFIX):
        return value[len(PREFIX) :]
    return value


def _map_text(frame: pd.DataFrame, fn) -> pd.DataFrame:
    out = frame.copy()
    for c in out.columns:
        if out[c].dtype == object or isinstance(out[c].dtype, (pd.StringDtype, pd.CategoricalDtype)):
            out[c] = out[c].astype(object).map(fn)
    out.columns = [fn(c) for c in out.columns]
    if out.index.dtype == object:
        out.index = out.index.map(fn)
    return out


def neutralise(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every text cell, text header and index label neutralised."""
    return _map_text(frame, neutralise_cell)


def restore(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` (read from a ReForm CSV) with the neutralising apostrophes removed."""
    return _map_text(frame, restore_cell)


# RFC 4180 line ends: with "\r\n" as the terminator the csv writer quotes a field holding a bare
# carriage return too (with "\n" alone it did not, and a "\r" in a name split the row in two).
LINE_END = "\r\n"


def csv_text(frame: pd.DataFrame, *, index: bool = False, **kwargs) -> str:
    """``frame`` as safe CSV text (for a download button)."""
    return neutralise(frame).to_csv(index=index, lineterminator=LINE_END, **kwargs)


def write_csv(frame: pd.DataFrame, path: str | Path, *, index: bool = False, **kwargs) -> None:
    """Write ``frame`` to ``path`` as safe CSV (UTF-8)."""
    neutralise(frame).to_csv(path, index=index, lineterminator=LINE_END, **kwargs)


def read_csv(path: str | Path, **kwargs) -> pd.DataFrame:
    """Read a CSV that :func:`write_csv` wrote, with its text cells as they were."""
    return restore(pd.read_csv(path, **kwargs))
