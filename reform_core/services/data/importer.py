"""Import a bundle (see ``reform_core.records``) or in-memory frames into the database.

Everything is validated before anything is written; all problems are reported at once
as ``file:line: field: message``; the write happens in one transaction, so the database
is unchanged unless the whole import is valid. Re-importing identical data changes
nothing; data that conflicts with an existing row is an error unless ``replace``.
"""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Connection, Engine

from db.repo import data as repo
from db.repo.keys import key_frame
from reform_core import records as R
from reform_core.services.data.reading import ImportFailed, one_line, open_regular, read_file

Progress = Optional[Callable[[str], None]]

FRAME_COLUMNS: dict[str, list[str]] = {
    "questions": ["key", "text", "task_type", "domain", "language", "source"],
    "instructions": ["key", "question", "condition", "pair_group", "text"],
    "constraints": ["instruction", "position", "feature", "category", "mode", "text", "acceptance", "params"],
    "models": ["name", "provider", "settings"],
    "responses": ["model", "question", "instruction", "kind", "text", "meta"],
    "baseline": ["model", "question", "feature", "present", "source", "evidence"],
    "judges": ["name", "provider", "model", "prompt_version", "config"],
    "judgments": [
        "judge",
        "model",
        "instruction",
        "position",
        "label",
        "rationale",
        "status",
        "error",
        "prompt_version",
    ],
    "adjudications": [
        "judge_a",
        "judge_b",
        "model",
        "instruction",
        "position",
        "choice",
        "verdict",
        "annotator",
        "note",
        "seconds",
        "plan",
    ],
    "extractions": ["model", "question", "label", "feature", "match", "source"],
}
FILE_OF = {
    "questions": "questions.jsonl",
    "instructions": "instructions.jsonl",
    "constraints": "instructions.jsonl",
    "models": "models.jsonl",
    "responses": "responses.jsonl",
    "baseline": "baseline_features.jsonl",
    "judges": "judges.jsonl",
    "judgments": "judgments.jsonl",
    "adjudications": "adjudications.jsonl",
    "extractions": "extractions.jsonl",
}


@dataclass
class Bundle:
    """Validated frames of one import, each with a ``_line`` column (1-based source line).

    A frame may also carry a ``_file`` column naming each row's source file (default:
    the bundle file of its kind, ``FILE_OF``); errors are located with both.
    """

    frames: dict[str, pd.DataFrame]
    manifest: R.BundleManifest = field(default_factory=R.BundleManifest)
    source: str = "<frames>"
    catalog_file: object = None  # a team's own catalog read from a file (services.catalogs.CatalogFile)

    def file(self, kind: str) -> str:
        return FILE_OF[kind]


# ----------------------------------------------------------------------------- parsing


field_label = R.field_label  # re-exported: the importers' one way of printing a field


def iter_lines(path: Path, errors: list[str], root: Path | None = None) -> Iterator[tuple[int, str]]:
    """The non-blank ``(line number, text)`` lines of a UTF-8 file, read one at a time (memory
    independent of the file's size); problems go to ``errors`` (a line that is not UTF-8 ends
    the file's reading).

    Lines are split at ``\\n`` only, so line numbers match what editors and ``wc -l`` show.
    Only regular files are read (:func:`open_regular`; ``root``: refuse links out of it).
    """
    fname = path.name
    try:
        fh = open_regular(path, root)
    except OSError as exc:
        errors.append(one_line(f"{fname}:0: (file): cannot read: {exc.strerror or exc}"))
        return
    with fh:
        for n, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                errors.append(f"{fname}:{n}: (line): not valid UTF-8")
                return
            if line.strip():
                yield n, line[:-1] if line.endswith("\n") else line


def read_lines(path: Path, errors: list[str], root: Path | None = None) -> list[tuple[int, str]]:
    """Every line of :func:`iter_lines` as a list."""
    return list(iter_lines(path, errors, root))


def iter_records(
    path: Path, record_type: type, errors: list[str], root: Path | None = None
) -> Iterator[tuple[int, object]]:
    """Parse and validate one line at a time, strictly (:func:`reform_core.records.parse_record`:
    no type coercion, no repeated key); append every located problem of every line to ``errors``."""
    for lineno, line in iter_lines(path, errors, root):
        record, problems = R.parse_record(record_type, line)
        if record is not None:
            yield lineno, record
        errors += [one_line(f"{path.name}:{lineno}: {loc}: {msg}") for loc, msg in problems]


CATALOG_FILES = ("catalog.yaml", "catalog.yml", "catalog.json")  # a bundle's own catalog (export-bundle writes it)


def _bundle_catalog(root: Path, manifest: R.BundleManifest, named: bool, errors: list[str]):
    """The bundle's own catalog file (``catalog.yaml`` beside ``bundle.json``, or the file the
    manifest names, relative to the bundle or as given), read and validated; None for a bundled
    catalog or one stored with the project (checked when the import opens the database)."""
    from reform_core.catalog.loader import BUNDLED
    from reform_core.services.data.catalogs import read_catalog_path

    own = [root / n for n in CATALOG_FILES if os.path.lexists(root / n)]
    name = manifest.catalog
    paths = own or ([] if name in BUNDLED else [p for p in (root / name, Path(name)) if p.is_file()][:1])
    if not paths:
        return None
    try:
        f = read_catalog_path(paths[0], root if paths[0].parent == root else None)
    except ImportFailed as exc:
        errors += exc.errors
        return None
    if own and named and name != f.catalog.name:
        errors.append(
            one_line(f"bundle.json:1: catalog: {name!r} is not the catalog of {paths[0].name} ({f.catalog.name!r})")
        )
    manifest.catalog = f.catalog.name
    return f


def read_bundle(path: str | Path) -> Bundle:
    """Read and validate a bundle directory; raise :class:`ImportFailed` on any problem."""
    root = Path(path)
    if not root.is_dir():
        raise ImportFailed([f"{root}:0: (bundle): not a directory"])
    errors: list[str] = []
    manifest = R.BundleManifest()
    mpath = root / "bundle.json"
    if os.path.lexists(mpath):
        try:
            parsed, problems = R.parse_record(R.BundleManifest, read_file(mpath, root).decode("utf-8"))
        except OSError as exc:
            errors.append(one_line(f"bundle.json:0: (file): cannot read: {exc.strerror or exc}"))
        except UnicodeDecodeError:
            errors.append("bundle.json:0: (file): not valid UTF-8")
        else:
            errors += [one_line(f"bundle.json:1: {loc}: {msg}") for loc, msg in problems]
            manifest = parsed or manifest
    catalog_file = _bundle_catalog(root, manifest, "catalog" in manifest.model_fields_set, errors)
    known = set(R.BUNDLE_FILES) | {"bundle.json", *CATALOG_FILES}
    for p in sorted(root.iterdir()):
        if p.is_file() and p.suffix in (".jsonl", ".json") and p.name not in known:
            errors.append(f"{p.name}:0: (file): unknown bundle file (expected one of {', '.join(R.BUNDLE_FILES)})")
    if not os.path.lexists(root / "questions.jsonl"):
        errors.append("questions.jsonl:0: (file): missing (every bundle needs its questions)")
    # one record at a time: validated, then straight into column lists (repeated short values
    # shared), so memory holds the frames only — not the file, its lines or the record objects
    builder = _FrameBuilder()
    for fname, rtype in R.RECORD_TYPES.items():
        p = root / fname
        if os.path.lexists(p):
            for n, record in iter_records(p, rtype, errors, root):
                builder.add(fname, n, record)
    frames = builder.frames()
    if errors:  # the valid lines' own problems too: a bad line does not hide the rest of its file
        raise ImportFailed(errors + duplicate_errors(frames))
    return Bundle(frames=frames, manifest=manifest, source=str(root), catalog_file=catalog_file)


_KIND_OF = {
    "questions.jsonl": "questions",
    "models.jsonl": "models",
    "baseline_features.jsonl": "baseline",
    "judges.jsonl": "judges",
    "judgments.jsonl": "judgments",
    "adjudications.jsonl": "adjudications",
    "extractions.jsonl": "extractions",
}
_SHARED_MAX = 64  # strings up to this length are shared between rows (keys, names, statuses)
_OBJECT_COLUMNS = {"params", "settings", "meta", "config"}  # dicts (JSON) stay Python objects


class _FrameBuilder:
    """Column lists of every frame kind, filled one record at a time; equal short strings are
    stored once (a judgments file repeats the same judge, model and instruction keys)."""

    def __init__(self) -> None:
        self.cols = {k: {c: [] for c in FRAME_COLUMNS[k] + ["_line"]} for k in FRAME_COLUMNS}
        self.shared: dict[str, str] = {}

    def _row(self, kind: str, d: dict, line: int) -> None:
        cols, shared = self.cols[kind], self.shared
        for c in FRAME_COLUMNS[kind]:
            v = d.get(c)
            if isinstance(v, str) and len(v) <= _SHARED_MAX:
                v = shared.setdefault(v, v)
            cols[c].append(v)
        cols["_line"].append(line)

    def add(self, fname: str, n: int, r) -> None:
        d = r.model_dump()
        if fname == "instructions.jsonl":
            for c in d.pop("constraints"):
                self._row("constraints", {**c, "instruction": r.key}, n)
            self._row("instructions", d, n)
        elif fname == "responses.jsonl":
            d["kind"] = "baseline" if not d["instruction"] else "constrained"
            d["instruction"] = d["instruction"] or ""
            self._row("responses", d, n)
        else:
            self._row(_KIND_OF[fname], d, n)

    def frames(self) -> dict[str, pd.DataFrame]:
        """The frames; each column list is freed as soon as it is converted (never the whole
        kind twice in memory). Text columns stay ``object`` columns of the shared strings: an
        Arrow string column would copy every repeated key once per row (−57 MB of peak RSS at
        paper scale, measured)."""
        out = {}
        self.shared.clear()
        for kind in list(self.cols):
            cols = self.cols.pop(kind)
            data = {}
            for c in list(cols):
                values = cols.pop(c)
                text = c in _OBJECT_COLUMNS or isinstance(next((v for v in values if v is not None), None), str)
                data[c] = pd.Series(values, dtype=object if text else None)
            out[kind] = pd.DataFrame(data, columns=FRAME_COLUMNS[kind] + ["_line"], copy=False)
        return out


def frames_bundle(
    frames: dict[str, pd.DataFrame],
    source: str = "<frames>",
    catalog: str = "reformbench",
    construction_models: tuple[str, ...] = (),
) -> Bundle:
    """Wrap in-memory frames (e.g. from the simulator) as a bundle; missing columns get defaults."""
    defaults = {
        "text": "",
        "task_type": "",
        "domain": "",
        "language": "",
        "source": "",
        "condition": "main",
        "pair_group": "",
        "category": "",
        "acceptance": "",
        "params": None,
        "provider": "",
        "settings": None,
        "meta": None,
        "present": True,
        "evidence": "",
        "model": "",
        "prompt_version": "",
        "config": None,
        "rationale": "",
        "status": "ok",
        "error": "",
        "note": "",
        "seconds": 0.0,
        "plan": "imported",
        "verdict": "",
        "annotator": "import",
        "kind": "constrained",
    }
    out = {}
    for kind, cols in FRAME_COLUMNS.items():
        df = frames.get(kind)
        if df is None:
            df = pd.DataFrame(columns=cols)
        df = df.copy()
        for c in cols:
            if c not in df.columns:
                d = defaults.get(c, "")
                if kind in ("baseline", "extractions") and c == "source":
                    d = "import"
                df[c] = [{} for _ in range(len(df))] if d is None else d
            elif c in ("params", "settings", "meta", "config"):
                df[c] = [
                    v if isinstance(v, dict) else (json.loads(v) if isinstance(v, str) and v else {}) for v in df[c]
                ]
        if "_line" not in df.columns:
            df["_line"] = np.arange(1, len(df) + 1)
        out[kind] = df[cols + ["_line"] + (["_file"] if "_file" in df.columns else [])]
    return Bundle(
        frames=out,
        manifest=R.BundleManifest(catalog=catalog, construction_models=list(construction_models)),
        source=source,
    )


# ----------------------------------------------------------------------------- helpers


def _norm(values) -> list[str]:
    """Comparable string form of cell values (JSON canonical, NaN = None, 1.0 = 1)."""
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            out.append("\0")
        elif isinstance(v, (dict, list)):
            out.append(json.dumps(v, sort_keys=True))
        elif isinstance(v, (bool, np.bool_)):
            out.append(str(int(v)))
        elif isinstance(v, (float, np.floating)) and float(v).is_integer():
            out.append(str(int(v)))
        else:
            out.append(str(v))
    return out


def _py(v):
    """Convert pandas/numpy scalars to plain Python values for the driver."""
    if v is None:
        return None
    if isinstance(v, float) and np.isnan(v):
        return None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return None if np.isnan(v) else float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def _rows(df: pd.DataFrame, cols: list[str]) -> list[dict]:
    data = {c: [_py(v) for v in df[c].tolist()] for c in cols}
    return [dict(zip(cols, vals)) for vals in zip(*(data[c] for c in cols))] if len(df) else []


WRITE_BATCH = 20_000  # rows turned into driver rows at a time (the frame is never copied whole)


def _insert_frame(conn: Connection, tname: str, df: pd.DataFrame, cols: list[str], *, empty: bool = False) -> None:
    """Insert every row of ``df`` (columns ``cols``) in batches, inside the caller's transaction
    (PostgreSQL: ``COPY`` per batch; into an ``empty`` table with its foreign keys checked once
    at the end: :func:`db.repo.data.bulk_load`)."""
    with repo.bulk_load(conn, tname, len(df)) if empty else nullcontext():
        for start in range(0, len(df), WRITE_BATCH):
            repo.bulk_insert(conn, tname, _rows(df.iloc[start : start + WRITE_BATCH], cols))


NATURAL_KEYS = (  # (kind, natural key, what a row is): two rows of a bundle with one key are ambiguous
    ("questions", ["key"], "question key"),
    ("instructions", ["key"], "instruction key"),
    ("constraints", ["instruction", "position"], "constraint position"),
    ("models", ["name"], "model"),
    ("responses", ["model", "question", "instruction"], "response"),
    ("baseline", ["model", "question", "feature"], "baseline feature"),
    ("judges", ["name"], "judge"),
    ("judgments", ["judge", "model", "instruction", "position", "prompt_version"], "judgment"),
    ("extractions", ["model", "question", "label"], "extraction"),
    (
        "adjudications",
        ["plan", "judge_a", "judge_b", "model", "instruction", "position", "annotator"],
        "decision of this annotator in this plan",
    ),
)


def duplicate_errors(frames: dict[str, pd.DataFrame]) -> list[str]:
    """A located error for every row that repeats an earlier row's natural key
    (:data:`NATURAL_KEYS`), whether its other values agree or conflict."""
    out: list[str] = []
    for kind, keys, label in NATURAL_KEYS:
        df = frames.get(kind)
        if df is None or df.empty:
            continue
        dup = df[df.duplicated(keys, keep=False)]
        if dup.empty:
            continue
        first = dup.groupby(keys, sort=False)["_line"].transform("min")
        for (_, row), fl in zip(dup.iterrows(), first):
            if row["_line"] != fl:
                fname = row.get("_file")
                fname = fname if isinstance(fname, str) else FILE_OF[kind]
                out.append(
                    one_line(f"{fname}:{int(row['_line'])}: {keys[-1]}: duplicate {label} (first at line {int(fl)})")
                )
    return out


@dataclass
class _Known:
    """What the reference checks learnt (bundle ∪ database) and the writes reuse."""

    inst_q: dict  # instruction key -> its question key
    db_models: set  # model names stored before the import
    db_judges: set  # judge names stored before the import


def _judgment_rows(jd: pd.DataFrame, *, inst_q: dict, rid: dict, cid: dict, jid: dict) -> pd.DataFrame:
    """The judgments with their response, constraint and judge ids in place of the keys.

    The largest frame: ids added to a shallow copy (no copy of the data; the bundle's own frame
    is left as it was), as int arrays (no list of Python ints), and the key strings they replace
    dropped."""
    n_jd, jd = len(jd), jd.copy(deep=False)
    qk = jd["instruction"].map(inst_q)
    jd["response_id"] = np.fromiter(
        (rid[(m, q, i)] for m, q, i in zip(jd["model"], qk, jd["instruction"])), dtype=np.int64, count=n_jd
    )
    del qk
    jd["constraint_id"] = np.fromiter(
        (cid[(i, p)] for i, p in zip(jd["instruction"], jd["position"])), dtype=np.int64, count=n_jd
    )
    jd["judge_id"] = jd["judge"].map(jid)
    jd["label"] = jd["label"].astype("Int64").astype(object).where(jd["label"].notna(), None)
    for c in ("judge", "model", "instruction", "position"):
        del jd[c]
    return jd


class _Writer:
    def __init__(self, conn: Connection, bundle: Bundle, replace: bool, progress: Progress):
        self.conn = conn
        self.b = bundle
        self.f = bundle.frames
        self.replace = replace
        self.errors: list[str] = []
        self.counts: dict[str, int] = {}
        self.progress = progress or (lambda _msg: None)

    def err(self, kind: str, row: pd.Series, fld: str, msg: str) -> None:
        fname = row.get("_file")
        fname = fname if isinstance(fname, str) else FILE_OF[kind]
        self.errors.append(one_line(f"{fname}:{int(row['_line'])}: {fld}: {msg}"))

    def missing(self, kind: str, df: pd.DataFrame, mask, fld: str, msg_fn) -> None:
        for _, row in df[mask].iterrows():
            self.err(kind, row, fld, msg_fn(row))

    # -- sync one table -------------------------------------------------------------
    def sync(
        self,
        kind: str,
        tname: str,
        df: pd.DataFrame,
        key_cols: list[str],
        val_cols: list[str],
        label: str,
        *,
        immutable: bool = False,
    ) -> None:
        """Insert new rows, skip identical ones, report (or with replace: update) conflicts."""
        written = 0
        if df.empty:
            self.counts[kind] = 0
            return
        has_rows = repo.count_rows(self.conn, tname) > 0
        if not has_rows:
            _insert_frame(self.conn, tname, df, key_cols + val_cols, empty=True)
            self.counts[kind] = len(df)
            return
        existing = repo.read_frame(self.conn, tname, ["id"] + key_cols + val_cols)
        merged = df.merge(existing, on=key_cols, how="left", suffixes=("", "__old"))
        is_new = merged["id"].isna().to_numpy()
        new = merged[is_new]
        old = merged[~is_new]
        updates = []
        if len(old):
            diff = np.zeros(len(old), dtype=bool)
            diff_cols = [[] for _ in range(len(old))]
            for c in val_cols:
                d = np.array(_norm(old[c].tolist())) != np.array(_norm(old[c + "__old"].tolist()))
                for i in np.flatnonzero(d):
                    diff_cols[i].append(c)
                diff |= d
            changed = old[diff]
            if len(changed):
                if self.replace and not immutable:
                    updates = _rows(changed.assign(id=changed["id"].astype(int)), ["id"] + val_cols)
                else:
                    hint = "" if immutable else " (use --replace to overwrite)"
                    for (_, row), cols in zip(changed.iterrows(), [c for c in diff_cols if c]):
                        key = ", ".join(str(row[k]) for k in key_cols)
                        self.err(kind, row, cols[0], f"conflicts with existing {label} [{key}]{hint}")
        if self.errors:
            return
        _insert_frame(self.conn, tname, new, key_cols + val_cols)
        repo.bulk_update(self.conn, tname, updates)
        if updates:
            from db.repo.status import bump_revision

            bump_revision(self.conn)  # rows replaced in place: cached scores must see it
        written = len(new) + len(updates)
        self.counts[kind] = written

    # -- the import -----------------------------------------------------------------
    def run(self) -> dict[str, int]:
        """Check every reference against bundle ∪ database, then write in dependency order;
        return rows written per kind. ImportFailed with every located problem: the reference
        checks' before anything is written, conflicts after each group of writes (the caller's
        transaction then rolls back)."""
        self.errors += duplicate_errors(self.f)
        known = self._check_references()
        self._raise_if_errors()
        qid, iid = self._write_questions()
        rid = self._write_models_and_responses(known, qid, iid)
        self._write_features(rid)
        jid, cid = self._write_judgments(known, rid)
        adj = self.f["adjudications"]
        if len(adj):
            self.progress("adjudications")
            self.counts["adjudications"] = self._adjudications(adj, jid, rid, cid, known.inst_q)
        else:
            self.counts["adjudications"] = 0
        self._raise_if_errors()
        return self.counts

    def _raise_if_errors(self) -> None:
        """ImportFailed with every problem found so far, if there is one."""
        if self.errors:
            raise ImportFailed(self.errors)

    # -- references, checked against bundle ∪ database ------------------------------
    def _check_references(self) -> _Known:
        """Check that every row names things the bundle or the database holds; problems go to
        ``errors``. Returns what the writes reuse."""
        conn, f = self.conn, self.f
        q_keys = set(key_frame(conn, "question")["question"]) | set(f["questions"]["key"])
        ins = f["instructions"]
        self.missing(
            "instructions",
            ins,
            ~ins["question"].isin(q_keys),
            "question",
            lambda r: f"unknown question {r['question']!r}",
        )
        db_i = key_frame(conn, "instruction")
        inst_q = dict(zip(db_i["instruction"], db_i["question"]))
        inst_q.update(zip(ins["key"], ins["question"]))
        feat_cat = self._check_constraints()
        db_c, cons = key_frame(conn, "constraint"), f["constraints"]
        con_keys = set(zip(db_c["instruction"], db_c["position"]))
        con_keys |= set(zip(cons["instruction"], cons["position"]))
        db_models = set(key_frame(conn, "model")["model"])
        resp_keys = self._check_responses(q_keys, inst_q)
        self._check_features(resp_keys, feat_cat)
        self._check_judgments(inst_q, resp_keys, con_keys)
        db_judges = set(key_frame(conn, "judge")["judge"])
        self._check_adjudications(db_judges, inst_q, resp_keys, con_keys)
        return _Known(inst_q=inst_q, db_models=db_models, db_judges=db_judges)

    def _check_constraints(self) -> dict:
        """Every constraint's feature is in a loaded catalog and a given category matches the
        catalog's; the catalog's category is then stored with each constraint of a known
        feature. Returns the catalog's feature → category."""
        cat = key_frame(self.conn, "feature")
        feat_cat = dict(zip(cat["feature"], cat["category"]))
        cons = self.f["constraints"]
        if len(cons):
            loaded = ", ".join(sorted(set(cat["catalog"]))) or "none"
            unknown = ~cons["feature"].isin(feat_cat)
            self.missing(
                "constraints",
                cons,
                unknown,
                "constraints.feature",
                lambda r: f"unknown catalog feature {r['feature']!r} (catalogs loaded: {loaded})",
            )
            known_cat = cons["feature"].map(feat_cat)
            bad_cat = (~unknown) & (cons["category"] != "") & (cons["category"] != known_cat)
            self.missing(
                "constraints",
                cons,
                bad_cat,
                "constraints.category",
                lambda r: (
                    f"{r['category']!r} does not match the catalog category "
                    f"{feat_cat.get(r['feature'])!r} of {r['feature']!r}"
                ),
            )
            self.f["constraints"] = cons.assign(category=known_cat.fillna(cons["category"]))
        return feat_cat

    def _check_responses(self, q_keys: set, inst_q: dict) -> set:
        """Every response names a known question and, when constrained, a known instruction of
        that question. Returns the (model, question, instruction) keys of bundle ∪ database."""
        resp = self.f["responses"]
        if len(resp):
            self.missing(
                "responses",
                resp,
                ~resp["question"].isin(q_keys),
                "question",
                lambda r: f"unknown question {r['question']!r}",
            )
            has_i = resp["instruction"] != ""
            iq = resp["instruction"].map(inst_q)
            self.missing(
                "responses",
                resp,
                has_i & iq.isna(),
                "instruction",
                lambda r: f"unknown instruction {r['instruction']!r}",
            )
            wrong = has_i & iq.notna() & (iq != resp["question"])
            self.missing(
                "responses",
                resp,
                wrong,
                "instruction",
                lambda r: (
                    f"instruction {r['instruction']!r} belongs to question "
                    f"{inst_q[r['instruction']]!r}, not {r['question']!r}"
                ),
            )
        db_r = key_frame(self.conn, "response")
        resp_keys = set(zip(db_r["model"], db_r["question"], db_r["instruction"]))
        resp_keys |= set(zip(resp["model"], resp["question"], resp["instruction"]))
        return resp_keys

    def _check_features(self, resp_keys: set, feat_cat: dict) -> None:
        """Baseline features and feature extractions belong to a baseline response and name a
        catalog feature (an extraction may name none)."""
        base = self.f["baseline"]
        if len(base):
            ok = [(m, q, "") in resp_keys for m, q in zip(base["model"], base["question"])]
            self.missing(
                "baseline",
                base,
                ~np.array(ok),
                "question",
                lambda r: f"no baseline response of model {r['model']!r} to question {r['question']!r}",
            )
            self.missing(
                "baseline",
                base,
                ~base["feature"].isin(feat_cat),
                "feature",
                lambda r: f"unknown catalog feature {r['feature']!r}",
            )
        ext = self.f["extractions"]
        if len(ext):
            ok = [(m, q, "") in resp_keys for m, q in zip(ext["model"], ext["question"])]
            self.missing(
                "extractions",
                ext,
                ~np.array(ok),
                "question",
                lambda r: f"no baseline response of model {r['model']!r} to question {r['question']!r}",
            )
            self.missing(
                "extractions",
                ext,
                (ext["feature"] != "") & ~ext["feature"].isin(feat_cat),
                "feature",
                lambda r: f"unknown catalog feature {r['feature']!r}",
            )

    def _check_judgments(self, inst_q: dict, resp_keys: set, con_keys: set) -> None:
        """Every judgment names a known instruction, a response of its model to it and one of
        its constraints."""
        jd = self.f["judgments"]
        if not len(jd):
            return
        qk = jd["instruction"].map(inst_q)
        self.missing("judgments", jd, qk.isna(), "instruction", lambda r: f"unknown instruction {r['instruction']!r}")
        has = [(m, q, i) in resp_keys for m, q, i in zip(jd["model"], qk, jd["instruction"])]
        self.missing(
            "judgments",
            jd,
            qk.notna() & ~np.array(has),
            "model",
            lambda r: f"no response of model {r['model']!r} to instruction {r['instruction']!r}",
        )
        hasc = [(i, p) in con_keys for i, p in zip(jd["instruction"], jd["position"])]
        self.missing(
            "judgments",
            jd,
            qk.notna() & ~np.array(hasc),
            "position",
            lambda r: f"instruction {r['instruction']!r} has no constraint at position {r['position']}",
        )

    def _check_adjudications(self, db_judges: set, inst_q: dict, resp_keys: set, con_keys: set) -> None:
        """Every adjudication names known judges (stored, in judges.jsonl or judging in
        judgments.jsonl), a constraint and a response of its model."""
        f = self.f
        adj = f["adjudications"]
        if not len(adj):
            return
        j_names = db_judges | set(f["judges"]["name"]) | set(f["judgments"]["judge"])
        for col in ("judge_a", "judge_b"):
            self.missing("adjudications", adj, ~adj[col].isin(j_names), col, lambda r, c=col: f"unknown judge {r[c]!r}")
        hasc = [(i, p) in con_keys for i, p in zip(adj["instruction"], adj["position"])]
        self.missing(
            "adjudications",
            adj,
            ~np.array(hasc),
            "position",
            lambda r: f"instruction {r['instruction']!r} has no constraint at position {r['position']}",
        )
        qk = adj["instruction"].map(inst_q)
        has = [(m, q, i) in resp_keys for m, q, i in zip(adj["model"], qk, adj["instruction"])]
        self.missing(
            "adjudications",
            adj,
            np.array(hasc) & ~np.array(has),
            "model",
            lambda r: f"no response of model {r['model']!r} to instruction {r['instruction']!r}",
        )

    # -- writes, in dependency order -------------------------------------------------
    def _write_questions(self) -> tuple[dict, dict]:
        """Write questions, instructions and constraints; return the question and instruction
        ids by key."""
        conn, f = self.conn, self.f
        self.progress("questions")
        self.sync(
            "questions",
            "question",
            f["questions"],
            ["key"],
            ["text", "task_type", "domain", "language", "source"],
            "question",
        )
        qid = dict(zip(*key_frame(conn, "question")[["question", "id"]].T.values))

        self.progress("instructions")
        ins = f["instructions"].assign(question_id=f["instructions"]["question"].map(qid))
        self.sync(
            "instructions",
            "instruction",
            ins,
            ["key"],
            ["question_id", "condition", "pair_group", "text"],
            "instruction",
        )
        iid = dict(zip(*key_frame(conn, "instruction")[["instruction", "id"]].T.values))

        cons = f["constraints"].assign(instruction_id=lambda d: d["instruction"].map(iid))
        self.sync(
            "constraints",
            "constraint_item",
            cons,
            ["instruction_id", "position"],
            ["feature", "category", "mode", "text", "acceptance", "params"],
            "constraint",
        )
        return qid, iid

    def _write_models_and_responses(self, known: _Known, qid: dict, iid: dict) -> dict:
        """Write the models (with those only named by a response) and the responses; return the
        response ids by (model, question, instruction)."""
        conn, f = self.conn, self.f
        self.progress("models")
        models, resp = f["models"], f["responses"]
        implicit = sorted(set(resp["model"]) - set(models["name"]) - known.db_models)
        if implicit:
            models = pd.concat(
                [
                    models,
                    pd.DataFrame({"name": implicit, "provider": "", "settings": [{} for _ in implicit], "_line": 0}),
                ],
                ignore_index=True,
            )
        self.sync("models", "eval_model", models, ["name"], ["provider", "settings"], "model")
        mid = dict(zip(*key_frame(conn, "model")[["model", "id"]].T.values))

        self.progress("responses")
        resp = resp.assign(
            model_id=resp["model"].map(mid),
            question_id=resp["question"].map(qid),
            instruction_id=resp["instruction"].map(iid),
            variant=resp["instruction"],
        )
        self.sync(
            "responses",
            "response",
            resp,
            ["model_id", "question_id", "variant"],
            ["instruction_id", "kind", "text", "meta"],
            "response",
        )
        self._raise_if_errors()
        rk = key_frame(conn, "response")
        return dict(zip(zip(rk["model"], rk["question"], rk["instruction"]), rk["id"]))

    def _write_features(self, rid: dict) -> None:
        """Write the baseline features and the feature extractions of the baseline responses."""
        self.progress("baseline features")
        base = self.f["baseline"]
        base = base.assign(response_id=[rid[(m, q, "")] for m, q in zip(base["model"], base["question"])])
        self.sync(
            "baseline",
            "baseline_feature",
            base,
            ["response_id", "feature"],
            ["present", "source", "evidence"],
            "baseline feature",
        )
        ext = self.f["extractions"]
        if len(ext):
            self.progress("feature extractions")
            ext = ext.assign(
                response_id=[rid[(m, q, "")] for m, q in zip(ext["model"], ext["question"])], mapping=ext["match"]
            )
            self.sync(
                "extractions",
                "feature_extraction",
                ext,
                ["response_id", "label"],
                ["feature", "mapping", "source"],
                "feature extraction",
            )
        else:
            self.counts["extractions"] = 0

    def _write_judgments(self, known: _Known, rid: dict) -> tuple[dict, dict]:
        """Write the judges (with those only named by a judgment) and the judgments; return the
        judge ids by name and the constraint ids by (instruction, position)."""
        conn, f = self.conn, self.f
        self.progress("judges")
        judges, jd = f["judges"], f["judgments"]
        implicit = sorted(set(jd["judge"]) - set(judges["name"]) - known.db_judges)
        if implicit:
            judges = pd.concat(
                [
                    judges,
                    pd.DataFrame(
                        {
                            "name": implicit,
                            "provider": "replay",
                            "model": "",
                            "prompt_version": "",
                            "config": [{} for _ in implicit],
                            "_line": 0,
                        }
                    ),
                ],
                ignore_index=True,
            )
        self.sync("judges", "judge", judges, ["name"], ["provider", "model", "prompt_version", "config"], "judge")
        jid = dict(zip(*key_frame(conn, "judge")[["judge", "id"]].T.values))

        self.progress("judgments")
        ck = key_frame(conn, "constraint")
        cid = dict(zip(zip(ck["instruction"], ck["position"]), ck["id"]))
        if len(jd):
            jd = _judgment_rows(jd, inst_q=known.inst_q, rid=rid, cid=cid, jid=jid)
        self.sync(
            "judgments",
            "judgment",
            jd,
            ["judge_id", "response_id", "constraint_id", "prompt_version"],
            ["label", "rationale", "status", "error"],
            "judgment",
        )
        self._raise_if_errors()
        return jid, cid

    def _adjudications(self, adj, jid, rid, cid, inst_q) -> int:
        """Decisions made elsewhere: see :mod:`reform_core.services.data.adjudication_import`."""
        from reform_core.services.data.adjudication_import import write_adjudications

        return write_adjudications(
            self.conn,
            adj,
            jid=jid,
            rid=rid,
            cid=cid,
            inst_q=inst_q,
            err=lambda row, fld, msg: self.err("adjudications", row, fld, msg),
        )


def ensure_catalog(conn: Connection, name: str = "reformbench", *, file=None, replace: bool = False) -> int:
    """Load a bundled, stored or custom catalog (``name``: a name or a file path; ``file``: a
    :class:`~reform_core.services.data.catalogs.CatalogFile` read already) into ``catalog_feature``
    and keep a custom one with the project (:mod:`reform_core.services.data.catalogs`); return the
    number of features inserted."""
    from reform_core.services.data.catalogs import ensure

    return ensure(conn, name, file=file, replace=replace)[1]


IMPORT_LOCK_KEY = 0x5245464F524D01  # the advisory lock of imports on PostgreSQL ("REFORM", 1)


def import_bundle_obj(
    engine: Engine, bundle: Bundle, *, replace: bool = False, progress: Progress = None
) -> dict[str, int]:
    """Validate and write ``bundle`` in one transaction; return rows written per kind.

    Imports are serialised (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped
    advisory lock): a second import started meanwhile waits, then finds the first one's rows
    and writes only what is new, instead of failing on a unique constraint (issue 15 item 11)."""
    from sqlalchemy import text

    from db.repo.adjudication import write_tx

    with write_tx(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": IMPORT_LOCK_KEY})
        try:
            ensure_catalog(conn, bundle.manifest.catalog or "reformbench", file=bundle.catalog_file, replace=replace)
        except (ValueError, OSError) as exc:
            raise ImportFailed([one_line(f"bundle.json:1: catalog: {exc}")]) from None
        writer = _Writer(conn, bundle, replace, progress)
        counts = writer.run()
        if bundle.manifest.name:
            repo.set_meta(conn, {"project_name": bundle.manifest.name})
        if bundle.manifest.construction_models:
            repo.set_meta(conn, {"construction_models": json.dumps(list(bundle.manifest.construction_models))})
        return counts


def import_bundle(
    engine: Engine, path: str | Path, *, replace: bool = False, progress: Progress = None
) -> dict[str, int]:
    """Read, validate and import a bundle directory (see ``reform_core.records``)."""
    return import_bundle_obj(engine, read_bundle(path), replace=replace, progress=progress)
