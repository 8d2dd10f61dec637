"""Hostile input (issue 9): property-based fuzzing of the bundle and IFEval importers.

Each example starts from a valid skeleton (``make_bundle`` / a three-prompt IFEval file)
and applies one to three random corruptions: random JSON values in fields, wrong types,
deleted fields, unknown fields, huge strings, tricky Unicode (NUL, escaped lone
surrogates, bidi overrides, newlines), non-UTF-8 bytes, raw garbage lines, duplicate
JSON keys, duplicated records, dangling references, missing or unreadable files.

The property: the import either succeeds, or raises ``ImportFailed`` whose every message
is one line ``<file>:<line>: <field>: <message>`` naming a file the user gave us, and the
database is byte-for-byte unchanged (every table dumped before and after).

The deterministic ``test_known_*`` cases below are minimal reproductions of crashes the
fuzzer found (see the reliability report); they fail until the importers are fixed.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import inspect, text

from reform_core.records import BUNDLE_FILES
from reform_core.services.data.ifeval_import import import_ifeval
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.reading import ImportFailed
from reform_core.services.platform.uow import get_engine
from tests.integration.test_import import make_bundle

LOCATED = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+): (?P<rest>[^\n]+)$")
# no shrink phase: CI time stays bounded even when a bug is found (the test_known_*
# cases below are the shrunk reproductions)
FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    # state deliberately carries over between examples (one database per test)
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# ----------------------------------------------------------------------------- helpers


def dump(engine) -> dict:
    """Every row of every table except Alembic's, in a stable order."""
    out = {}
    with engine.connect() as conn:
        for t in sorted(inspect(conn).get_table_names()):
            if t != "alembic_version":
                out[t] = sorted((tuple(map(repr, r)) for r in conn.execute(text(f'SELECT * FROM "{t}"'))))
    return out


def check_located(exc: ImportFailed, files: dict[str, int]) -> None:
    """Every message is one located line naming one of ``files`` (name -> line count)."""
    assert exc.errors, "ImportFailed without messages"
    for msg in exc.errors:
        m = LOCATED.match(msg)
        assert m, f"not a located one-line message: {msg!r}"
        assert m["file"] in files, f"{msg!r} names {m['file']!r}, not one of {sorted(files)}"
        assert 0 <= int(m["line"]) <= max(files[m["file"]], 1), f"{msg!r}: line out of range"
        assert ": " in m["rest"] and m["rest"].split(": ", 1)[1].strip(), f"{msg!r}: no field/message"


def line_counts(root: Path) -> dict[str, int]:
    out = {}
    for p in root.iterdir():
        try:
            out[p.name] = p.read_bytes().count(b"\n") + 1 if p.is_file() else 0
        except OSError:
            out[p.name] = 0
    return out


def attempt(engine, run, files: dict[str, int]) -> str:
    before = dump(engine)
    try:
        run()
    except ImportFailed as exc:
        check_located(exc, files)
        assert dump(engine) == before, "a rejected import changed the database"
        return "rejected"
    return "imported"


# ----------------------------------------------------------------------------- strategies

TRICKY = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\\ud800",
    "\\udfff\\ud800",
    "\u202eevil",
    "line\nbreak",
    "tab\tx",
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "${jndi:x}",
    "%s%n",
    "../../etc/passwd",
    "q1",
    "q2",
    "q9",
    "q1-v1",
    "q2-v1",
    "m1",
    "m9",
    "ja",
    "jb",
    "zz",
    "bullet_list",
    "nope",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(TRICKY)
)
json_values = st.recursive(
    scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=6
)
FIELDS = [
    "key",
    "text",
    "question",
    "instruction",
    "model",
    "judge",
    "judge_a",
    "judge_b",
    "position",
    "label",
    "status",
    "feature",
    "mode",
    "constraints",
    "params",
    "settings",
    "meta",
    "choice",
    "seconds",
    "plan",
    "present",
    "name",
    "catalog",
    "format",
    "version",
    "prompt_version",
    "a\nb: c",
]


RAW_LINES = [
    b"[" * 50_000,
    b'{"a": ' * 2000,
    b"1" * 5000,
    b"\xff\xfe",
    b"\x00" * 8,
    b"null",
    b"[]",
    b"1",
    b'"s"',
    b'{"key": "q1", "key": "q1"}',
    b"\xef\xbb\xbf{}",
    b'{"key": "\\ud800"}',
]


@st.composite
def corruption(draw, files: list[str]):
    kind = draw(
        st.sampled_from(
            [
                "set",
                "set",
                "set",
                "delete_field",
                "raw_line",
                "bytes",
                "dupe_key",
                "dupe_line",
                "huge",
                "drop_file",
                "dir_file",
                "constraint",
            ]
        )
    )
    return (
        kind,
        draw(st.sampled_from(files)),
        draw(st.integers(0, 20)),
        draw(st.sampled_from(FIELDS)),
        draw(json_values),
        draw(st.binary(max_size=24) | st.sampled_from(RAW_LINES)),
    )


def _lines(p: Path) -> list[bytes]:
    return p.read_bytes().splitlines() if p.is_file() else []


def apply(root: Path, corr) -> None:
    kind, fname, idx, fld, value, raw = corr
    p = root / fname
    if kind == "drop_file":
        p.unlink(missing_ok=True) if not p.is_dir() else shutil.rmtree(p)
        return
    if kind == "dir_file":
        if not p.is_dir():
            p.unlink(missing_ok=True)
            p.mkdir()
        return
    lines = _lines(p)
    if not lines:
        lines = [b"{}"]
    i = idx % len(lines)
    try:
        rec = json.loads(lines[i])
    except (ValueError, RecursionError):  # an earlier corruption may have made the line unparsable
        rec = None
    if kind == "raw_line" or not isinstance(rec, dict):
        lines[i] = json.dumps(value).encode() if kind != "bytes" else raw
    elif kind == "bytes":
        lines[i] = lines[i][: len(lines[i]) // 2] + raw + lines[i][len(lines[i]) // 2 :]
    elif kind == "set":
        rec[fld] = value
        lines[i] = json.dumps(rec).encode()
    elif kind == "delete_field":
        rec.pop(fld if fld in rec else next(iter(rec), ""), None)
        lines[i] = json.dumps(rec).encode()
    elif kind == "dupe_key":  # raw JSON text with the same key twice
        k = next(iter(rec), fld)
        body = json.dumps({**rec, k: value})
        lines[i] = (body[:-1] + (", " if body != "{}" else "") + f"{json.dumps(k)}: {json.dumps(value)}}}").encode()
    elif kind == "dupe_line":
        lines.append(lines[i])
    elif kind == "huge":
        rec[fld] = "x" * 300_000 if not isinstance(value, str) else value * (1 + 300_000 // max(1, len(value)))
        lines[i] = json.dumps(rec).encode()
    elif kind == "constraint" and isinstance(rec.get("constraints"), list) and rec["constraints"]:
        c = rec["constraints"][idx % len(rec["constraints"])]
        if isinstance(c, dict):
            c[fld] = value
        lines[i] = json.dumps(rec).encode()
    if p.is_dir():
        return
    p.write_bytes(b"\n".join(lines) + b"\n")


# ----------------------------------------------------------------------------- bundles

BUNDLE_TARGETS = list(BUNDLE_FILES) + ["bundle.json"]


@pytest.fixture
def seeded(any_db_url, tmp_path):
    """A database holding the skeleton bundle (so corrupt re-imports hit conflict paths too)."""
    eng = get_engine(any_db_url)
    import_bundle(eng, make_bundle(tmp_path / "skeleton"))
    return eng


@FUZZ
@given(corrs=st.lists(corruption(BUNDLE_TARGETS), min_size=1, max_size=3))
def test_fuzzed_bundle_is_imported_or_rejected_with_located_errors(seeded, corrs):
    with tempfile.TemporaryDirectory() as d:
        root = make_bundle(Path(d) / "b")
        (root / "questions.jsonl").write_text((root / "questions.jsonl").read_text() + '{"key": "q-new"}\n')
        for c in corrs:
            apply(root, c)
        files = {**{f: 0 for f in BUNDLE_TARGETS}, **line_counts(root)}
        attempt(seeded, lambda: import_bundle(seeded, root), files)


def test_fuzz_harness_detects_real_changes(seeded, tmp_path):
    """The 'unchanged' check can fail: a valid new question is a visible change."""
    before = dump(seeded)
    root = make_bundle(tmp_path / "ok")
    (root / "questions.jsonl").write_text((root / "questions.jsonl").read_text() + '{"key": "q-new"}\n')
    assert attempt(seeded, lambda: import_bundle(seeded, root), line_counts(root)) == "imported"
    assert dump(seeded) != before


# ----------------------------------------------------------------------------- IFEval

IFEVAL_INPUT = [
    {
        "key": 1001,
        "prompt": "Plan a trip to Japan. No commas.",
        "instruction_id_list": ["punctuation:no_comma"],
        "kwargs": [{}],
    },
    {
        "key": 1005,
        "prompt": "Write a resume with 12 placeholders.",
        "instruction_id_list": ["detectable_content:number_placeholders"],
        "kwargs": [{"num_placeholders": 12}],
    },
    {
        "key": 1019,
        "prompt": "Ask a question in lowercase.",
        "instruction_id_list": ["change_case:english_lowercase", "punctuation:no_comma"],
        "kwargs": [{}, {}],
    },
]


def make_ifeval(root: Path) -> tuple[Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    inp, resp = root / "input_data.jsonl", root / "responses_m.jsonl"
    inp.write_text("".join(json.dumps(d) + "\n" for d in IFEVAL_INPUT))
    resp.write_text(
        "".join(json.dumps({"prompt": d["prompt"], "response": f"answer {d['key']}"}) + "\n" for d in IFEVAL_INPUT)
    )
    return inp, resp


IFEVAL_FIELDS = ["key", "prompt", "instruction_id_list", "kwargs", "response"]


@st.composite
def ifeval_corruption(draw):
    kind, fname, idx, _, value, raw = draw(corruption(["input_data.jsonl", "responses_m.jsonl"]))
    return (kind, fname, idx, draw(st.sampled_from(IFEVAL_FIELDS)), value, raw)


@pytest.fixture
def sqlite_engine(sqlite_url):
    return get_engine(sqlite_url)


@FUZZ
@given(corrs=st.lists(ifeval_corruption(), min_size=1, max_size=3))
def test_fuzzed_ifeval_is_imported_or_rejected_with_located_errors(sqlite_engine, corrs):
    with tempfile.TemporaryDirectory() as d:
        inp, resp = make_ifeval(Path(d))
        for c in corrs:
            apply(Path(d), c)
        # both files were given by the user, even if a corruption deleted one of them
        files = {inp.name: 0, resp.name: 0, **line_counts(Path(d))}
        attempt(sqlite_engine, lambda: import_ifeval(sqlite_engine, input_path=inp, responses={"m": resp}), files)


# ----------------------------------------------------------------------------- minimal reproductions

BUNDLE_BUGS = {
    # bundle.json is read with read_text("utf-8") outside the located-error path
    "manifest_not_utf8": ("bundle.json", b'{"name": "\xff"}\n'),
    # ensure_catalog -> load_catalog raises a bare ValueError for an unknown catalog
    "manifest_unknown_catalog": ("bundle.json", b'{"catalog": "no-such-catalog"}\n'),
    # an adjudication whose model has no response to the instruction passes validation,
    # then _adjudications() looks it up in ``rid`` -> KeyError
    "adjudication_without_response": (
        "adjudications.jsonl",
        json.dumps(
            {"judge_a": "ja", "judge_b": "jb", "model": "m9", "instruction": "q1-v1", "position": 2, "choice": "A"}
        ).encode()
        + b"\n",
    ),
    # an unknown field name is printed raw: a newline in it forges a second "located" line
    "field_name_with_newline": ("questions.jsonl", b'{"key": "q1", "x\\nquestions.jsonl:1: key: forged": 1}\n'),
    # an infinite ``seconds`` is accepted and stored (should be a finite number >= 0)
    "seconds_infinite": (
        "adjudications.jsonl",
        json.dumps(
            {
                "judge_a": "ja",
                "judge_b": "jb",
                "model": "m1",
                "instruction": "q1-v1",
                "position": 2,
                "choice": "A",
                "seconds": 1e400,
            }
        )
        .replace("Infinity", "1e400")
        .encode()
        + b"\n",
    ),
}


@pytest.mark.parametrize("case", sorted(BUNDLE_BUGS))
def test_known_bundle_crash(case, sqlite_url, tmp_path):
    eng = get_engine(sqlite_url)
    before = dump(eng)
    root = make_bundle(tmp_path / "b")
    fname, content = BUNDLE_BUGS[case]
    (root / fname).write_bytes(content)
    with pytest.raises(ImportFailed) as exc:
        import_bundle(eng, root)
    check_located(exc.value, line_counts(root))
    assert dump(eng) == before


def test_known_nul_in_text_is_located_on_every_backend(any_db_url, tmp_path):
    """PostgreSQL text cannot hold NUL: psycopg raises DataError at write time, unlocated."""
    eng = get_engine(any_db_url)
    before = dump(eng)
    root = make_bundle(tmp_path / "b")
    (root / "questions.jsonl").write_text('{"key": "q1", "text": "a\\u0000b"}\n{"key": "q2"}\n')
    with pytest.raises(ImportFailed) as exc:
        import_bundle(eng, root)
    check_located(exc.value, line_counts(root))
    assert any(e.startswith("questions.jsonl:1: text:") for e in exc.value.errors), exc.value.errors
    assert dump(eng) == before


IFEVAL_BUGS = {
    "input_not_utf8": ("input_data.jsonl", b"\xff\n"),
    "responses_not_utf8": ("responses_m.jsonl", b"\xfe\n"),
    "input_line_not_object": ("input_data.jsonl", b"1\n"),
    "responses_line_not_object": ("responses_m.jsonl", b"[1]\n"),
    "kwargs_not_list": (
        "input_data.jsonl",
        b'{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": 3}\n',
    ),
    "kwargs_entry_not_object": (
        "input_data.jsonl",
        b'{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": ["x"]}\n',
    ),
    "instruction_id_not_string": (
        "input_data.jsonl",
        b'{"key": 1, "prompt": "p", "instruction_id_list": [{}], "kwargs": [{}]}\n',
    ),
    "prompt_not_string": (
        "input_data.jsonl",
        b'{"key": 1, "prompt": {}, "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}\n',
    ),
    # duplicate keys are reported against questions.jsonl / instructions.jsonl, files the user never gave
    "duplicate_key_names_wrong_file": (
        "input_data.jsonl",
        b'{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}\n'
        b'{"key": 1, "prompt": "p2", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}\n',
    ),
    "responses_file_missing": ("responses_m.jsonl", None),
    # json.loads raises RecursionError / a plain ValueError, not JSONDecodeError
    "input_deeply_nested": ("input_data.jsonl", b"[" * 100_000 + b"\n"),
    "input_huge_integer": ("input_data.jsonl", b'{"key": ' + b"1" * 5000 + b"}\n"),
}


@pytest.mark.parametrize("case", sorted(IFEVAL_BUGS))
def test_known_ifeval_crash(case, sqlite_url, tmp_path):
    eng = get_engine(sqlite_url)
    before = dump(eng)
    d = tmp_path / "ifeval"
    inp, resp = make_ifeval(d)
    fname, content = IFEVAL_BUGS[case]
    if content is None:
        (d / fname).unlink()
    else:
        (d / fname).write_bytes(content)
    with pytest.raises(ImportFailed) as exc:
        import_ifeval(eng, input_path=inp, responses={"m": resp})
    files = line_counts(d)
    files.setdefault(fname, 0)
    check_located(exc.value, files)
    assert dump(eng) == before
