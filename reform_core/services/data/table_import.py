"""Import a plain table (CSV or Parquet) of any benchmark: one row per (model, prompt, constraint).

A column mapping (``COLUMN=FIELD``) says which column holds which field; a column named
exactly like a field maps to it unless the mapping gives that field another column.
Fields (:data:`FIELDS`): ``model``, ``question`` and ``feature`` are required; the others
default as described there. ``label:JUDGE`` / ``rationale:JUDGE`` columns carry a judge's
labels (``1 0 true false yes no pass fail``; empty: not judged, unless a rationale is given,
then an abstention) and rationales; any number of judges.

The rows become questions, instructions with their constraints (text and acceptance
criteria rendered from the catalog template with ``params`` unless given), responses and
judgments, written through the bundle importer (``services/data/importer.py``): every problem is
reported at once as ``file:line: column (field): message`` — for CSV the line where the
record starts, for Parquet the row number (1 = first row) — and nothing is written unless
the whole table is valid (one transaction). Rows that describe the same question,
instruction, constraint or response must agree; re-importing identical data changes nothing.
Without a position column, rows of one response with the same feature, mode and params are
that constraint's occurrences when they agree (IFEval asks for some twice) and an error when
their texts or labels differ. Features the catalog lacks are one message naming each with its
rows (and ``catalog-init`` for a team's own features), not one per row.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pandas as pd
from sqlalchemy.engine import Engine

from reform_core.catalog.loader import BUNDLED
from reform_core.records import DuplicateKeyError, loads_unique, storage_problem
from reform_core.services.data.importer import Progress, frames_bundle, import_bundle_obj
from reform_core.services.data.reading import IMPORT_ACTION, ImportFailed, one_line

FIELDS: dict[str, str] = {
    "model": "the model that answered (required)",
    "question": "the prompt's id (required)",
    "prompt": "the prompt's text",
    "instruction": "the instruction's id (default: the prompt id: one instruction per prompt)",
    "instruction_text": "the full text the model saw (default: the prompt text)",
    "condition": "the instruction's condition (default: main)",
    "pair_group": "the instruction's pair group (default: its id)",
    "position": "the constraint's position in its instruction, 1–50 (default: order of first appearance; a "
    "constraint listed twice for one response is two constraints)",
    "feature": "the catalog feature the constraint asks for or forbids (required)",
    "mode": "require or forbid (default: the feature's first mode)",
    "constraint_text": "the constraint as worded (default: the catalog template with params)",
    "acceptance": "its acceptance criteria (default: the catalog's, with params)",
    "params": "the constraint's parameters, a JSON object",
    "response": "the model's response text",
}
JUDGE_FIELDS = ("label", "rationale")  # label:JUDGE, rationale:JUDGE
REQUIRED = ("model", "question", "feature")
KEY_FIELDS = ("model", "question", "instruction", "feature", "mode", "condition", "pair_group", "position")
MAX_LEN = {"model": 200, "question": 200, "instruction": 200, "feature": 200, "condition": 50, "pair_group": 200}
LABELS = {"1": 1, "0": 0, "true": 1, "false": 0, "yes": 1, "no": 0, "pass": 1, "fail": 0}
SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def field_problem(name: str) -> Optional[str]:
    """Why ``name`` is not a field of the table import, or None."""
    kind, sep, judge = name.partition(":")
    if sep:
        if kind not in JUDGE_FIELDS:
            return f"unknown field {name!r} (judge fields are label:JUDGE and rationale:JUDGE)"
        if not judge.strip() or len(judge) > 200:
            return f"field {name!r}: the judge name must have 1 to 200 characters"
        return None
    if name not in FIELDS:
        return f"unknown field {name!r} (fields: {', '.join(FIELDS)}, label:JUDGE, rationale:JUDGE)"
    return None


def parse_mapping(specs: list[str]) -> dict[str, str]:
    """``COLUMN=FIELD`` specs as ``{column: field}``; ValueError naming every bad spec."""
    out: dict[str, str] = {}
    problems = []
    for spec in specs:
        column, sep, fld = spec.rpartition("=")
        if not sep or not column or not fld:
            problems.append(f"--map {spec!r}: expected COLUMN=FIELD")
            continue
        problem = field_problem(fld)
        if problem:
            problems.append(f"--map {spec!r}: {problem}")
        elif column in out and out[column] != fld:
            problems.append(f"--map {spec!r}: column {column!r} is already mapped to {out[column]!r}")
        else:
            out[column] = fld
    if problems:
        raise ValueError("; ".join(problems))
    return out


@dataclass
class Table:
    """The cells of an uploaded table as Python values, with each row's located line."""

    name: str
    frame: pd.DataFrame
    lines: list[int]
    unit: str = "line"  # what ``lines`` count: CSV lines, Parquet rows


def _csv(data: bytes, name: str) -> Table:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFailed([f"{name}:{line}: (line): not valid UTF-8"]) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    errors, rows, lines = [], [], []
    header: Optional[list[str]] = None
    start = 1
    try:
        for record in reader:
            line, start = start, reader.line_num + 1
            if not record or (len(record) == 1 and not record[0].strip()):
                continue
            if header is None:
                header = record
                continue
            if len(record) != len(header):
                errors.append(f"{name}:{line}: (line): {len(record)} field(s), the header has {len(header)}")
                continue
            rows.append(record)
            lines.append(line)
    except csv.Error as exc:
        errors.append(one_line(f"{name}:{reader.line_num}: (line): {exc}"))
    if header is None:
        errors.append(f"{name}:1: (header): the file has no header row")
    else:
        seen = set()
        for col in header:
            if not col.strip():
                errors.append(f"{name}:1: (header): an empty column name")
            elif col in seen:
                errors.append(one_line(f"{name}:1: (header): column {col!r} appears twice"))
            seen.add(col)
    if errors:
        raise ImportFailed(errors)
    return Table(name, pd.DataFrame(rows, columns=header, dtype=object), lines)


def _parquet(data: bytes, name: str) -> Table:
    try:
        frame = pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds
        raise ImportFailed([one_line(f"{name}:0: (file): not a readable Parquet file: {exc}")]) from None
    frame.columns = [str(c) for c in frame.columns]
    frame = frame.astype(object).reset_index(drop=True)
    return Table(name, frame, list(range(1, len(frame) + 1)), unit="row")


def read_table(data: bytes, filename: str) -> Table:
    """Parse CSV (UTF-8, header row) or Parquet bytes; the format from the file name's suffix."""
    name = Path(filename).name
    kind = SUFFIXES.get(Path(filename).suffix.lower())
    if kind is None:
        raise ImportFailed([f"{name}:0: (file): expected a .csv or .parquet file"])
    return _csv(data, name) if kind == "csv" else _parquet(data, name)


def resolve_columns(columns: list[str], mapping: dict[str, str], name: str) -> dict[str, str]:
    """``{field: column}``: the mapping, plus columns named like a field that no mapping overrides."""
    errors = [
        one_line(f"{name}:1: (header): --map {c}={f}: no column {c!r} (columns: {', '.join(map(repr, columns))})")
        for c, f in mapping.items()
        if c not in columns
    ]
    by_field: dict[str, str] = {}
    for column, fld in mapping.items():
        if fld in by_field:
            errors.append(
                one_line(f"{name}:1: (header): field {fld!r} is mapped from both {by_field[fld]!r} and {column!r}")
            )
        by_field[fld] = column
    for column in columns:
        if column not in mapping and field_problem(column) is None and column not in by_field:
            by_field.setdefault(column, column)
    errors += [
        f"{name}:1: (header): no column for the required field {f!r} (map one with --map COLUMN={f})"
        for f in REQUIRED
        if f not in by_field
    ]
    for fld in by_field:
        if fld.startswith("rationale:") and f"label:{fld[10:]}" not in by_field:
            errors.append(one_line(f"{name}:1: (header): {fld!r} needs a label:{fld[10:]} column"))
    if errors:
        raise ImportFailed(errors)
    return by_field


def table_cell(v: Any) -> Any:
    """A cell as ``""`` (empty), a string, or (Parquet) a dict/list/number kept for params."""
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if hasattr(v, "tolist") and not isinstance(v, str):  # numpy scalars and arrays
        return table_cell(v.tolist())
    if isinstance(v, (dict, list)):
        return v
    if isinstance(v, (int, str)):
        return str(v)
    if pd.isna(v):
        return ""
    return str(v)


def _choose_catalog(conn, features: set[str], catalog):
    """``(catalog, file)``: ``catalog`` (a bundled or stored name, a file path, or a
    :class:`~reform_core.services.data.catalogs.CatalogFile`), else the bundled or stored catalog
    that knows most of ``features`` (a typo stays one error). ``file``: the catalog file to
    store with the project, if one was read."""
    from reform_core.services.data import catalogs

    if isinstance(catalog, catalogs.CatalogFile):
        return catalog.catalog, catalog
    if catalog:
        try:
            return catalogs.resolve(conn, catalog)
        except ValueError as exc:
            raise ImportFailed([one_line(f"(catalog): {exc}")]) from None
    return max(catalogs.candidates(conn), key=lambda cat: sum(f in cat for f in features)), None


MAX_UNKNOWN_SHOWN = 10  # unknown features named in the one message about them


@dataclass
class _State:
    """What the rows of a table have built so far (:meth:`_Rows.frames`)."""

    judges: list[str]
    questions: dict = field(default_factory=dict)
    instructions: dict = field(default_factory=dict)
    constraints: dict = field(default_factory=dict)
    responses: dict = field(default_factory=dict)
    judgments: list = field(default_factory=list)
    q_seen: dict = field(default_factory=dict)
    i_seen: dict = field(default_factory=dict)
    c_seen: dict = field(default_factory=dict)
    r_seen: dict = field(default_factory=dict)
    row_seen: dict = field(default_factory=dict)
    twins: dict = field(default_factory=dict)
    next_pos: dict = field(default_factory=dict)
    occurrence: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    unjudged: dict = field(default_factory=dict)

    def __post_init__(self):
        self.labels = {j: 0 for j in self.judges}
        self.unjudged = {j: 0 for j in self.judges}


class _Rows:
    """Validates the rows and assembles the importer's frames."""

    def __init__(self, table: Table, columns: dict[str, str], choose: Callable[[set[str]], tuple]):
        self.t = table
        self.columns = columns
        self.errors: list[str] = []
        frame = table.frame
        self.cells = {fld: [table_cell(v) for v in frame[col].tolist()] for fld, col in columns.items()}
        n = len(frame)
        self.n = n
        for fld in FIELDS:
            self.cells.setdefault(fld, [""] * n)
        for fld in KEY_FIELDS + tuple(f for f in columns if f.startswith("label:")):
            self.cells[fld] = [v.strip() if isinstance(v, str) else v for v in self.cells[fld]]
        features = {v for v in self.cells["feature"] if isinstance(v, str) and v}
        self.cat, self.catalog_file = choose(features)
        self.unknown: dict[str, list[int]] = {}  # feature → rows, in row order

    def err(self, i: int, fld: str, msg: str) -> None:
        col = self.columns.get(fld)
        where = f"{col!r} ({fld})" if col and col != fld else fld
        if col is None and fld in FIELDS:
            where = f"({fld})"
        self.errors.append(one_line(f"{self.t.name}:{self.t.lines[i]}: {where}: {msg}"))

    def _text(self, i: int, fld: str) -> str:
        v = self.cells[fld][i]
        if not isinstance(v, str):
            self.err(i, fld, f"expected text, got {type(v).__name__}")
            return ""
        problem = storage_problem(v)
        if problem:
            self.err(i, fld, problem)
            return ""
        if fld in MAX_LEN and len(v) > MAX_LEN[fld]:
            self.err(i, fld, f"at most {MAX_LEN[fld]} characters, got {len(v)}")
        return v

    def _params(self, i: int):
        v = self.cells["params"][i]
        if isinstance(v, dict):
            params = v
        elif v == "":
            params = {}
        else:
            try:
                params = loads_unique(v) if isinstance(v, str) else None
            except DuplicateKeyError as exc:
                self.err(
                    i,
                    "params",
                    f"key(s) {', '.join(map(repr, exc.keys))} given twice (JSON would keep only the last value)",
                )
                return None
            except (ValueError, RecursionError) as exc:
                self.err(i, "params", f"invalid JSON: {getattr(exc, 'msg', None) or exc}")
                return None
        if not isinstance(params, dict):
            self.err(i, "params", "expected a JSON object")
            return None
        problem = storage_problem(params)
        if problem:
            self.err(i, "params", problem)
            return None
        return {k: v for k, v in params.items() if v is not None}

    def _constraint(self, i: int, feature: str) -> Optional[dict]:
        from reform_core.services.data.ifeval_import import param_problems

        if feature not in self.cat:
            self.unknown.setdefault(feature, []).append(i)  # one message for all of them: unknown_features
            return None
        feat = self.cat[feature]
        mode = self.cells["mode"][i] or feat.modes[0]
        if mode not in feat.modes:
            self.err(i, "mode", f"{feature!r} has no mode {mode!r} (modes: {', '.join(feat.modes)})")
            return None
        params = self._params(i)
        if params is None:
            return None
        problems = param_problems(feat, params, ifeval=self.cat.name == "ifeval")
        for p in problems:
            self.err(i, "params", p)
        if problems:
            return None
        text, acceptance = self._text(i, "constraint_text"), self._text(i, "acceptance")
        try:
            text = text or feat.render(mode, **params)
            acceptance = acceptance or feat.render_acceptance(mode, **params)
        except (ValueError, KeyError, IndexError) as exc:
            self.err(i, "params", f"cannot render the catalog template: {exc}")
            return None
        return {"feature": feature, "mode": mode, "text": text, "acceptance": acceptance, "params": params}

    def _agree(self, seen: dict, key, value, i: int, fld: str, what: str) -> None:
        """Rows that describe the same thing must give the same ``value``."""
        first = seen.setdefault(key, (value, i))
        if first[0] != value:
            self.err(i, fld, f"differs from {self.t.unit} {self.t.lines[first[1]]} for the same {what}")

    def frames(self) -> tuple[dict[str, pd.DataFrame], dict]:
        """The importer's frames and the import report (:class:`ImportFailed` with every problem)."""
        st = _State(judges=sorted(f[6:] for f in self.columns if f.startswith("label:")))
        for i in range(self.n):
            self._row(i, st)
        self._unknown_features()
        if self.errors:
            raise ImportFailed(self.errors)
        frames = {
            kind: pd.DataFrame(list(rows.values() if isinstance(rows, dict) else rows))
            for kind, rows in (
                ("questions", st.questions),
                ("instructions", st.instructions),
                ("constraints", st.constraints),
                ("responses", st.responses),
                ("judgments", st.judgments),
            )
        }
        has_response = "response" in self.columns
        report = {
            "rows": self.n,
            "catalog": self.cat.name,
            "columns": {col: fld for fld, col in self.columns.items()},
            "labels": st.labels,
            "not_judged": st.unjudged,
            "responses_without_text": sum(1 for r in st.responses.values() if not r["text"])
            if has_response
            else len(st.responses),
        }
        return frames, report

    def _row(self, i: int, st: "_State") -> None:
        """Row ``i``: its question, instruction and response (agreeing with earlier rows), then
        its constraint and judgments."""
        vals = self._row_values(i)
        if vals is None:
            return
        model, qkey = vals["model"], vals["question"]
        ikey = vals["instruction"] or qkey
        cons = self._constraint(i, self._text(i, "feature"))
        self._add_question(i, st, qkey, vals["prompt"])
        self._add_instruction(i, st, qkey, ikey, vals)
        self._agree(
            st.r_seen, (model, ikey), vals["response"], i, "response", f"model {model!r} and instruction {ikey!r}"
        )
        if cons is None:
            for j in st.judges:  # still report bad label cells
                self._label(i, j)
            return
        pos = self._position(i, st, model, ikey, cons)
        if pos is None:
            return
        st.constraints.setdefault(
            (ikey, pos), {"instruction": ikey, "position": pos, **cons, "_line": self.t.lines[i], "_file": self.t.name}
        )
        if self._repeated_row(i, st, model, ikey, pos):
            return
        st.responses.setdefault(
            (model, ikey),
            {
                "model": model,
                "question": qkey,
                "instruction": ikey,
                "text": vals["response"],
                "_line": self.t.lines[i],
                "_file": self.t.name,
            },
        )
        self._add_judgments(i, st, model, ikey, pos)

    def _row_values(self, i: int) -> Optional[dict[str, str]]:
        """Row ``i``'s text cells by field, or None (reported) when a required cell is empty."""
        c = self.cells
        vals = {
            f: self._text(i, f)
            for f in (
                "model",
                "question",
                "instruction",
                "prompt",
                "instruction_text",
                "condition",
                "pair_group",
                "response",
            )
        }
        missing = [f for f in REQUIRED if not (c[f][i] if isinstance(c[f][i], str) else True)]
        for f in missing:
            self.err(i, f, "required (empty cell)")
        if missing:
            return None
        return vals

    def _add_question(self, i: int, st: "_State", qkey: str, prompt: str) -> None:
        """Question ``qkey`` with its prompt, which must agree with earlier rows of that question."""
        self._agree(st.q_seen, qkey, prompt, i, "prompt", f"question {qkey!r}")
        st.questions.setdefault(qkey, {"key": qkey, "text": prompt, "_line": self.t.lines[i], "_file": self.t.name})

    def _add_instruction(self, i: int, st: "_State", qkey: str, ikey: str, vals: dict[str, str]) -> None:
        """Instruction ``ikey`` of question ``qkey``, which must agree with earlier rows of that instruction."""
        ins = (
            qkey,
            vals["instruction_text"] or vals["prompt"],
            vals["condition"] or "main",
            vals["pair_group"] or ikey,
        )
        compared = ins if "instruction_text" in self.columns else (ins[0], ins[2], ins[3])  # else: the prompt's
        self._agree(
            st.i_seen,
            ikey,
            compared,
            i,
            "instruction",
            f"instruction {ikey!r} (its question, text, condition and pair group)",
        )
        st.instructions.setdefault(
            ikey,
            {
                "key": ikey,
                "question": ins[0],
                "text": ins[1],
                "condition": ins[2],
                "pair_group": ins[3],
                "_line": self.t.lines[i],
                "_file": self.t.name,
            },
        )

    def _repeated_row(self, i: int, st: "_State", model: str, ikey: str, pos: int) -> bool:
        """Whether an earlier row already gave this model, instruction and position (reported)."""
        first = st.row_seen.setdefault((model, ikey, pos), i)
        if first != i:
            self.err(
                i,
                "model",
                f"a second row for model {model!r}, instruction {ikey!r}, position {pos} "
                f"(first at {self.t.unit} {self.t.lines[first]})",
            )
            return True
        return False

    def _add_judgments(self, i: int, st: "_State", model: str, ikey: str, pos: int) -> None:
        """Each judge's judgment of row ``i``, counting labels and rows a judge left unjudged."""
        for j in st.judges:
            judgment = self._judgment(i, j, model, ikey, pos)
            if judgment is None:
                st.unjudged[j] += 1
                continue
            st.judgments.append(judgment)
            st.labels[j] += judgment["label"] is not None

    def _position(self, i: int, st: "_State", model: str, ikey: str, cons: dict) -> Optional[int]:
        """The constraint's position: the ``position`` cell, else the order of first appearance
        in its instruction (the n-th row of one constraint for one response is its n-th
        occurrence: IFEval asks for some constraints twice). Rows that would be the same
        constraint of the same response but disagree are an error, not two constraints."""
        signature = json.dumps([cons[k] for k in ("feature", "mode", "text", "acceptance", "params")], sort_keys=True)
        if "position" in self.columns:
            raw_pos = self.cells["position"][i]
            try:
                pos = int(float(raw_pos)) if raw_pos != "" and float(raw_pos).is_integer() else None
            except (TypeError, ValueError):
                pos = None
            if pos is None or not 1 <= pos <= 50:
                self.err(i, "position", f"expected an integer from 1 to 50, got {raw_pos!r}")
                return None
        else:
            if self._conflicting_twin(i, st, model, ikey, cons):
                return None
            nth = st.occurrence.get((model, ikey, signature), 0)
            st.occurrence[(model, ikey, signature)] = nth + 1
            known = st.next_pos.setdefault(ikey, {})
            pos = known.setdefault((signature, nth), len(known) + 1)
            if pos > 50:
                self.err(i, "feature", f"instruction {ikey!r} has more than 50 distinct constraints")
                return None
        self._agree(
            st.c_seen,
            (ikey, pos),
            signature,
            i,
            "feature",
            f"constraint ({ikey!r}, position {pos}): feature, mode, text, acceptance and params",
        )
        return pos

    def _conflicting_twin(self, i: int, st: "_State", model: str, ikey: str, cons: dict) -> bool:
        """Without a position column, rows of one response with the same feature, mode and
        params must agree on the constraint's text and on every judge's label: a row that
        disagrees with the first such row is reported (True), since which constraint it
        describes cannot be told."""
        key = (model, ikey, cons["feature"], cons["mode"], json.dumps(cons["params"], sort_keys=True))
        labels = {
            j: LABELS.get(v.lower(), v) if isinstance(v, str) else v
            for j in st.judges
            for v in [self.cells[f"label:{j}"][i]]
        }
        first = st.twins.setdefault(key, (i, cons["text"], cons["acceptance"], labels))
        if first[0] == i:
            return False
        fi, text, acceptance, first_labels = first
        where = (
            f"conflicts with {self.t.unit} {self.t.lines[fi]}, the same model {model!r}, prompt {ikey!r}, "
            f"feature {cons['feature']!r}, mode and params"
        )
        hint = "; if the prompt asks for this constraint twice, give each row its position (a position column)"
        if (text, acceptance) != (cons["text"], cons["acceptance"]):
            fld = "constraint_text" if text != cons["text"] else "acceptance"
            self.err(i, fld, f"{where}, with another {fld.replace('_', ' ')}{hint}")
            return True
        differ = [j for j in st.judges if labels[j] != first_labels[j]]
        for j in differ:
            there, here = ("no label" if v == "" else repr(v) for v in (first_labels[j], labels[j]))
            self.err(i, f"label:{j}", f"{where}, labelled {there} there and {here} here{hint}")
        return bool(differ)

    def _unknown_features(self) -> None:
        """One located message (at the first such row) for every feature the catalog lacks,
        each with its rows, instead of one message per row."""
        if not self.unknown:
            return
        shown = list(self.unknown.items())[:MAX_UNKNOWN_SHOWN]

        def rows_of(rows: list[int]) -> str:
            lines = ", ".join(str(self.t.lines[r]) for r in rows[:5]) + (", …" if len(rows) > 5 else "")
            return f"{self.t.unit}{'s' if len(rows) > 1 else ''} {lines}"

        if len(self.unknown) == 1:
            feature, rows = shown[0]
            what = f"unknown feature {feature!r}" + (f" ({rows_of(rows)})" if len(rows) > 1 else "")
        else:
            more = f" and {len(self.unknown) - len(shown)} more" if len(self.unknown) > len(shown) else ""
            what = (
                f"{len(self.unknown)} unknown features: " + ", ".join(f"{f!r} ({rows_of(r)})" for f, r in shown) + more
            )
        if self.catalog_file is not None or self.cat.name not in BUNDLED:
            hint = f"add {'it' if len(self.unknown) == 1 else 'them'} to catalog {self.cat.name} (docs/catalog.md)"
        else:
            hint = self._bundled_hint()
        self.err(shown[0][1][0], "feature", f"{what} of catalog {self.cat.name}; {hint}")

    def _bundled_hint(self) -> str:
        from reform_core.catalog import load_catalog

        others = [n for n in BUNDLED if n != self.cat.name and all(f in load_catalog(n) for f in self.unknown)]
        if others:
            return (
                f"{'it is a feature' if len(self.unknown) == 1 else 'they are features'} of catalog {others[0]}: "
                f"--catalog {others[0]}"
            )
        return (
            f"for your own features, write a starter catalog with `python -m reform_core catalog-init "
            f"{self.t.name} --out catalog.yaml`, edit its texts and import with --catalog catalog.yaml"
        )

    def _label(self, i: int, judge: str) -> Optional[int]:
        """0, 1, None (empty) or -1 (invalid, reported)."""
        raw = self.cells[f"label:{judge}"][i]
        key = raw.lower() if isinstance(raw, str) else raw
        if key == "":
            return None
        if key not in LABELS:
            self.err(i, f"label:{judge}", f"expected 1, 0, true, false, yes, no, pass, fail or empty, got {raw!r}")
            return -1
        return LABELS[key]

    def _judgment(self, i: int, judge: str, model: str, ikey: str, pos: int) -> Optional[dict]:
        label = self._label(i, judge)
        rationale = self._text(i, f"rationale:{judge}") if f"rationale:{judge}" in self.columns else ""
        if label is None and not rationale or label == -1:
            return None
        return {
            "judge": judge,
            "model": model,
            "instruction": ikey,
            "position": pos,
            "label": label,
            "rationale": rationale,
            "status": "ok" if label is not None else "abstain",
            "_line": self.t.lines[i],
            "_file": self.t.name,
        }


def import_table(
    engine: Engine,
    data: bytes,
    filename: str,
    mapping: dict[str, str],
    *,
    catalog=None,
    replace: bool = False,
    progress: Progress = None,
) -> dict:
    """Validate and import one table (module docstring); return rows written per kind plus
    ``rows``, ``catalog``, ``columns`` (column → field), ``ignored_columns``, per judge
    ``labels`` (labels and abstentions written) and ``not_judged`` (rows without a label),
    and ``responses_without_text``. ``catalog``: a bundled name, the name of a catalog stored
    with the project, a catalog file's path or a
    :class:`~reform_core.services.data.catalogs.CatalogFile` (a file is stored with the project:
    :mod:`reform_core.services.data.catalogs`); default: the bundled or stored catalog that knows
    most features. Raises :class:`ImportFailed`."""
    table = read_table(data, filename)
    columns = resolve_columns(list(table.frame.columns), mapping, table.name)
    if table.frame.empty:
        raise ImportFailed([f"{table.name}:1: (file): no data rows"])
    with engine.connect() as conn:
        rows = _Rows(table, columns, lambda features: _choose_catalog(conn, features, catalog))
    frames, report = rows.frames()
    bundle = frames_bundle(frames, source=table.name, catalog=rows.cat.name)
    bundle.catalog_file = rows.catalog_file
    counts = import_bundle_obj(engine, bundle, replace=replace, progress=progress)
    used = set(columns.values())
    return {**counts, **report, "ignored_columns": [c for c in table.frame.columns if c not in used]}


def import_upload(
    engine: Engine,
    principal,
    data: bytes,
    filename: str,
    mapping: dict[str, str],
    *,
    catalog=None,
    replace: bool = False,
) -> dict:
    """:func:`import_table` for a signed-in user (the import page): leads only. ``catalog``: a
    name, or a :class:`~reform_core.services.data.catalogs.CatalogFile` uploaded."""
    from reform_core.services.accounts.auth import require

    require(principal, IMPORT_ACTION)
    return import_table(engine, data, filename, mapping, catalog=catalog, replace=replace)


def guess_field(column: str) -> str:
    """The field a column maps to by name (``""``: not imported)."""
    return column if field_problem(column) is None else ""


def import_table_file(engine: Engine, path: str | Path, mapping: dict[str, str], **kw) -> dict:
    """:func:`import_table` on a file."""
    from reform_core.services.data.reading import read_file

    path = Path(path)
    try:
        data = read_file(path)  # a regular file only: never a FIFO or /dev/zero
    except OSError as exc:
        raise ImportFailed([one_line(f"{path.name}:0: (file): cannot read: {exc.strerror or exc}")]) from None
    return import_table(engine, data, path.name, mapping, **kw)


__all__ = [
    "FIELDS",
    "ImportFailed",
    "guess_field",
    "import_table",
    "import_table_file",
    "import_upload",
    "parse_mapping",
    "read_table",
]
