"""Hostile tables (issue 14 point 4, SECURITY T2): property-based fuzzing of ``import-table``.

From a valid CSV table (two models, two prompts, IFEval constraints with kwargs, two judges),
one to three random corruptions: a cell replaced by a tricky or random string, a row with a
cell too few or too many, a raw garbage line, non-UTF-8 bytes, a duplicated row, a quote
left open. The property (as for bundles): the import succeeds, or raises ``ImportFailed``
whose every message is one located line ``t.csv:<line>: <field>: <message>`` and the
database is byte-for-byte unchanged.
"""

from __future__ import annotations

import csv
import io

from hypothesis import given
from hypothesis import strategies as st

from reform_core.services.data.table_import import import_table, parse_mapping
from reform_core.services.platform.uow import get_engine
from tests.integration.test_fuzz_importers import FUZZ, TRICKY, attempt

HEADER = ["model", "key", "prompt", "instruction_id", "kwargs", "response", "gpt", "why", "gem"]
ROWS = [
    [
        "m1",
        "1",
        "Write a poem",
        "length_constraints:number_words",
        '{"num_words": 300, "relation": "at least"}',
        "short poem",
        "0",
        "too short",
        "1",
    ],
    ["m1", "1", "Write a poem", "punctuation:no_comma", "{}", "short poem", "1", "", ""],
    [
        "m2",
        "1",
        "Write a poem",
        "length_constraints:number_words",
        '{"num_words": 300, "relation": "at least"}',
        "long, poem",
        "1",
        "",
        "yes",
    ],
    ["m2", "1", "Write a poem", "punctuation:no_comma", "", "long, poem", "0", "comma", "false"],
    [
        "m1",
        "2",
        "Say hi\nin two lines",
        "keywords:forbidden_words",
        '{"forbidden_words": ["rock"]}',
        "hi",
        "1",
        "",
        "1",
    ],
]
MAP = parse_mapping(
    ["key=question", "instruction_id=feature", "kwargs=params", "gpt=label:gpt", "why=rationale:gpt", "gem=label:gem"]
)
CELL = (
    st.sampled_from(TRICKY)
    | st.text(max_size=12)
    | st.sampled_from(
        [
            "",
            "1",
            "0",
            "2",
            "maybe",
            "{",
            "[]",
            '{"num_words": "x"}',
            '{"nope": 1}',
            "forbid",
            "require",
            "punctuation:no_comma",
            "ifeval",
            "51",
            "-1",
            "1.5",
            "m1",
            "2",
            '"',
            "a,b",
        ]
    )
)


@st.composite
def corruption(draw):
    kind = draw(st.sampled_from(["cell", "cell", "cell", "short_row", "long_row", "garbage", "bytes", "dup", "quote"]))
    return kind, draw(st.integers(0, len(ROWS) - 1)), draw(st.integers(0, len(HEADER) - 1)), draw(CELL)


def _render(rows) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(HEADER)
    w.writerows(rows)
    return buf.getvalue().encode("utf-8", "surrogatepass")


def corrupted(corrs) -> bytes:
    rows = [list(r) for r in ROWS]
    tail = b""
    for kind, r, c, value in corrs:
        if kind == "cell":
            rows[r][c] = value
        elif kind == "short_row":
            rows[r] = rows[r][:-1]
        elif kind == "long_row":
            rows[r] = rows[r] + [value]
        elif kind == "dup":
            rows.append(list(rows[r]))
        elif kind == "garbage":
            tail += value.encode("utf-8", "surrogatepass") + b"\n"
        elif kind == "bytes":
            tail += b"m1,1,\xff\xfe,x\n"
        elif kind == "quote":
            tail += b'm1,1,"open quote\n'
    return _render(rows) + tail


@FUZZ
@given(corrs=st.lists(corruption(), min_size=1, max_size=3))
def test_fuzzed_table_is_imported_or_rejected_with_located_errors(sqlite_url, corrs):
    eng = get_engine(sqlite_url)
    data = corrupted(corrs)
    files = {"t.csv": data.count(b"\n") + 1}
    attempt(eng, lambda: import_table(eng, data, "t.csv", MAP), files)


def test_the_skeleton_imports():
    """The fuzzer starts from a valid table (else every example would only test rejection)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        eng = get_engine(f"sqlite:///{Path(d) / 't.db'}")
        out = import_table(eng, corrupted([]), "t.csv", MAP)
        assert out["rows"] == 5 and out["judgments"] == 9 and out["catalog"] == "ifeval"
        eng.dispose()
