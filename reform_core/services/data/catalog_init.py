"""``catalog-init``: a starter catalog written from a table's distinct features.

The table is read as ``import-table`` reads it (CSV or Parquet, the same ``--map``); each
distinct feature becomes a catalog entry with the modes the table uses (an empty mode cell
is ``require``), the params its ``params`` cells give (type inferred from the values: a
param whose values have different JSON types is ``any``), a category from the key's prefix
before ``:`` (else ``custom``) and generic texts for the user to edit. When every row of a
feature and mode gives the same constraint text or acceptance, that text is the template.
The file loads with :func:`reform_core.catalog.load_catalog` and imports the same table
(``import-table TABLE --catalog FILE``). The format: ``docs/catalog.md``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import yaml

from reform_core.catalog.loader import BUNDLED, MODES, parse_catalog_text
from reform_core.records import DuplicateKeyError, loads_unique
from reform_core.services.data.reading import ImportFailed, one_line, read_file
from reform_core.services.data.table_import import Table, read_table, resolve_columns, table_cell

HEADER = """\
# Starter catalog written by `python -m reform_core catalog-init` from {table}.
# Edit the texts (name, definition, templates, acceptance) before judges and annotators read them;
# keep every key. Format and a complete example: docs/catalog.md.
# metrics: this table has no baseline data, so TCPR and the constraint pass rate apply; EMCR and
# R1-R3 need baseline annotations (a bundle's baseline_features.jsonl).
"""
TYPE_OF = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (list, "list"))


def catalog_name(table_name: str) -> str:
    """A catalog name from a table's file name (its stem; never a bundled catalog's name)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(table_name).stem).strip("-.")[:90] or "my-benchmark"
    return f"{stem}-own" if stem in BUNDLED else stem


def _json_type(v: Any) -> str:
    return (
        next(name for t, name in TYPE_OF if isinstance(v, t)) if isinstance(v, (bool, int, float, str, list)) else "any"
    )


def _param_entries(values: dict[str, list]) -> list[dict]:
    """One param entry per name, its type the values' common JSON type (int with float:
    float; anything else mixed: any)."""
    out = []
    for name, vals in values.items():
        types = {_json_type(v) for v in vals}
        ptype = types.pop() if len(types) == 1 else "float" if types == {"int", "float"} else "any"
        out.append({"name": name, "type": ptype, "description": "edit: what this parameter sets"})
    return out


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _texts(name: str, mode: str, given: set[str], accepted: set[str], shown: list[str]) -> tuple[str, str]:
    """The template and acceptance text of one mode: the table's own when all its rows agree,
    else a generic one naming the params every row gives (``shown``) as placeholders."""
    verb = "must have" if mode == "require" else "must not have"
    with_params = f" ({', '.join(f'{p}: {{{p}}}' for p in shown)})" if shown else ""
    template = _escape(given.pop()) if len(given) == 1 else f"Your response {verb} this feature: {name}{with_params}."
    acceptance = (
        _escape(accepted.pop())
        if len(accepted) == 1
        else f"The response {'has' if mode == 'require' else 'does not have'} the feature: {name}{with_params}."
    )
    return template, acceptance


def _collect(table: Table, columns: dict[str, str]) -> dict[str, dict]:
    """Per distinct feature (first-appearance order): modes, params values, texts per mode."""
    cells = {fld: [table_cell(v) for v in table.frame[col].tolist()] for fld, col in columns.items()}
    n = len(table.frame)
    get = {fld: cells.get(fld, [""] * n) for fld in ("feature", "mode", "params", "constraint_text", "acceptance")}
    features: dict[str, dict] = {}
    errors = []
    for i in range(n):
        key = get["feature"][i].strip() if isinstance(get["feature"][i], str) else ""
        if not key:
            continue
        mode = get["mode"][i].strip() if isinstance(get["mode"][i], str) else ""
        mode = mode or "require"
        if mode not in MODES:
            errors.append(f"{table.name}:{table.lines[i]}: mode: expected require or forbid, got {mode!r}")
            continue
        f = features.setdefault(key, {"modes": set(), "params": {}, "text": {}, "acceptance": {}, "rows": 0})
        f["modes"].add(mode)
        f["rows"] += 1
        for fld in ("text", "acceptance"):
            v = get["constraint_text" if fld == "text" else "acceptance"][i]
            f[fld].setdefault(mode, set()).add(v if isinstance(v, str) and v.strip() else None)
        params = _params(get["params"][i], f"{table.name}:{table.lines[i]}", errors)
        for k, v in params.items():
            f["params"].setdefault(k, []).append(v)
    if errors:
        raise ImportFailed(errors)
    return features


def _params(v: Any, where: str, errors: list[str]) -> dict:
    if isinstance(v, dict):
        return {k: x for k, x in v.items() if x is not None}
    if not isinstance(v, str) or not v.strip():
        return {}
    try:
        parsed = loads_unique(v)
    except DuplicateKeyError as exc:
        errors.append(f"{where}: params: key(s) {', '.join(map(repr, exc.keys))} given twice")
        return {}
    except (ValueError, RecursionError) as exc:
        errors.append(one_line(f"{where}: params: invalid JSON: {getattr(exc, 'msg', None) or exc}"))
        return {}
    if not isinstance(parsed, dict):
        errors.append(f"{where}: params: expected a JSON object")
        return {}
    return {k: x for k, x in parsed.items() if x is not None}


def _entry(key: str, f: dict) -> dict:
    prefix, sep, rest = key.partition(":")
    name = (rest if sep else key).replace("_", " ").replace("-", " ").strip().capitalize() or key
    modes = [m for m in MODES if m in f["modes"]]
    entry: dict[str, Any] = {
        "key": key,
        "name": name,
        "category": prefix if sep and prefix else "custom",
        "definition": f"edit: what makes a response have the feature '{name}'.",
        "modes": modes,
    }
    acceptance = {}
    shown = [p for p, vals in f["params"].items() if len(vals) == f["rows"] and p.isidentifier()]
    for mode in modes:
        given, accepted = set(f["text"].get(mode, ())), set(f["acceptance"].get(mode, ()))
        template, acc = _texts(
            name, mode, given if None not in given else set(), accepted if None not in accepted else set(), shown
        )
        entry[f"{mode}_template"] = template
        acceptance[mode] = acc
    entry["acceptance"] = acceptance
    entry["params"] = _param_entries(f["params"])
    entry["rule_detectable"] = False
    return entry


def starter_catalog(table: Table, columns: dict[str, str], *, name: Optional[str] = None) -> dict:
    """The starter catalog of a table (module docstring) as plain data."""
    features = _collect(table, columns)
    if not features:
        raise ImportFailed([f"{table.name}:1: (file): no feature in the table"])
    entries = [_entry(k, f) for k, f in features.items()]
    categories = list(dict.fromkeys(e["category"] for e in entries))
    return {
        "name": name or catalog_name(table.name),
        "version": "0.1",
        "description": f"Starter catalog of the features of {table.name} (edit the texts).",
        "metrics": ["tcpr", "constraint_level"],
        "categories": [
            {"key": c, "name": "Custom" if c == "custom" else c.replace("_", " ").capitalize()} for c in categories
        ],
        "features": entries,
    }


def catalog_init(
    table_path: str | Path, out: str | Path, mapping: dict[str, str], *, name: Optional[str] = None, force: bool = False
) -> dict:
    """Write the starter catalog of the table at ``table_path`` to ``out`` (YAML; refused if
    ``out`` exists, unless ``force``); return ``{"features": n, "out": path}``."""
    table_path, out = Path(table_path), Path(out)
    try:
        data = read_file(table_path)
    except OSError as exc:
        raise ImportFailed([one_line(f"{table_path.name}:0: (file): cannot read: {exc.strerror or exc}")]) from None
    table = read_table(data, table_path.name)
    columns = resolve_columns(list(table.frame.columns), mapping, table.name)
    if name is not None and (not name.strip() or len(name) > 100 or name in BUNDLED):
        raise ValueError(f"--name: 1 to 100 characters, not a bundled catalog's name ({', '.join(BUNDLED)})")
    catalog = starter_catalog(table, columns, name=name)
    text = HEADER.format(table=table.name) + yaml.safe_dump(catalog, sort_keys=False, allow_unicode=True, width=100)
    parse_catalog_text(text, source=out.name)  # what is written must load (a bug here, not a user error)
    if out.exists() and not force:
        raise ValueError(f"--out: {out} exists; choose another file or pass --force to overwrite it")
    out.write_text(text, encoding="utf-8")
    return {"features": len(catalog["features"]), "out": str(out)}


__all__ = ["catalog_init", "catalog_name", "starter_catalog"]
