"""The catalogs of a project: the bundled ones by name, a team's own kept with the project.

A team's own catalog is a file (format: ``docs/catalog.md``) given to ``import-table
--catalog FILE``, uploaded on the Import page, given to ``init --catalog FILE`` or named by a
bundle's manifest. Its text is stored with the project (table ``catalog_document``) the first
time, so every later command — the rules judge, ``score``, ``export`` — finds it by its name
without the file. A file whose catalog name is stored with other content is refused unless the
import replaces (``--replace``: the stored text and the features are updated); a bundled
catalog's name cannot be taken. Exports list every catalog of the project with its version,
its number of features and the SHA-256 of its text (:func:`manifest_entries`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from sqlalchemy.engine import Connection

from db.repo import catalogs as repo
from db.repo import data as data_repo
from reform_core.catalog.loader import BUNDLED, Catalog, CatalogError, bundled_text, load_catalog, parse_catalog_text
from reform_core.records import storage_problem
from reform_core.services.data.reading import ImportFailed, one_line, read_file

SUFFIXES = (".yaml", ".yml", ".json")
MAX_BYTES = 5_000_000  # a catalog of thousands of features is well under 1 MB


@dataclass(frozen=True)
class CatalogFile:
    """A catalog read from a file: the parsed catalog, the file's text and its name."""

    catalog: Catalog
    text: str
    filename: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def parse_catalog_file(data: bytes, filename: str) -> CatalogFile:
    """A catalog file's bytes validated; :class:`ImportFailed` lists every problem as
    ``file:line: field: message``."""
    name = Path(filename).name
    if Path(name).suffix.lower() not in SUFFIXES:
        raise ImportFailed([one_line(f"{name}:0: (file): expected a catalog file ending in .yaml, .yml or .json")])
    if len(data) > MAX_BYTES:
        raise ImportFailed([f"{name}:0: (file): larger than {MAX_BYTES:,} bytes"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFailed([f"{name}:{line}: (file): not valid UTF-8"]) from None
    problem = storage_problem(text)
    if problem:
        line = text[: max(text.find("\x00"), 0)].count("\n") + 1
        raise ImportFailed([f"{name}:{line}: (file): {problem}"])
    try:
        catalog = parse_catalog_text(text, source=name, json_format=name.lower().endswith(".json"))
    except CatalogError as exc:
        raise ImportFailed([one_line(e) for e in exc.errors]) from None
    if catalog.name in BUNDLED:
        raise ImportFailed(
            [
                f"{name}:{_name_line(text)}: name: {catalog.name!r} is the name of a bundled catalog; "
                "give your catalog its own name"
            ]
        )
    return CatalogFile(catalog, text, name)


def _name_line(text: str) -> int:
    """The line of the catalog's top-level ``name`` key (1 if not found)."""
    for n, line in enumerate(text.splitlines(), start=1):
        if re.match(r"""\s*["']?name["']?\s*:""", line):
            return n
    return 1


def read_upload(principal, data: bytes, filename: str) -> CatalogFile:
    """:func:`parse_catalog_file` for a signed-in user (the Import page): leads only."""
    from reform_core.services.accounts.auth import require
    from reform_core.services.data.reading import IMPORT_ACTION

    require(principal, IMPORT_ACTION)
    return parse_catalog_file(data, filename)


def stored_names(engine) -> list[str]:
    """The names of the catalogs stored with the project, in the order they were stored."""
    with engine.connect() as conn:
        return list(repo.catalog_documents(conn))


def read_catalog_path(path: str | Path, root: Optional[Path] = None) -> CatalogFile:
    """:func:`parse_catalog_file` on a file (a regular file only; with ``root``, a symbolic
    link out of that directory is refused, as for a bundle's other files)."""
    path = Path(path)
    try:
        data = read_file(path, root)
    except OSError as exc:
        raise ImportFailed([one_line(f"{path.name}:0: (file): cannot read: {exc.strerror or exc}")]) from None
    return parse_catalog_file(data, path.name)


@lru_cache(maxsize=32)
def _parse_stored(text: str, filename: str) -> Catalog:
    return parse_catalog_text(text, source=filename, json_format=filename.lower().endswith(".json"))


def catalog_named(conn: Connection, name: str) -> Catalog:
    """The bundled catalog ``name`` or the one stored with the project under that name
    (ValueError if neither)."""
    if name in BUNDLED:
        return load_catalog(name)
    doc = repo.catalog_document(conn, name)
    if doc is None:
        stored = ", ".join(repo.catalog_documents(conn)) or "none"
        raise ValueError(
            f"catalog {name!r} is neither bundled ({', '.join(BUNDLED)}) nor stored with this project "
            f"(stored: {stored})"
        )
    return _parse_stored(doc["content"], doc["filename"] or f"{name}.yaml")


def resolve(conn: Connection, name_or_path: str) -> tuple[Catalog, Optional[CatalogFile]]:
    """A catalog by bundled name, stored name or file path; the file too when read from one.
    ValueError when it is none of them; :class:`ImportFailed` for a file with problems."""
    try:
        return catalog_named(conn, name_or_path), None
    except ValueError as exc:
        if not Path(name_or_path).is_file():
            raise ValueError(f"{exc}, nor a file (a catalog file: docs/catalog.md)") from None
    f = read_catalog_path(name_or_path)
    return f.catalog, f


def store(conn: Connection, f: CatalogFile, *, replace: bool = False) -> int:
    """Keep ``f`` with the project and load its features (new ones inserted, loaded ones
    updated); return the features inserted. The same text again changes nothing."""
    doc = repo.catalog_document(conn, f.catalog.name)
    if doc is not None and doc["sha256"] == f.sha256:
        return 0
    if doc is not None and not replace:
        raise ImportFailed(
            [
                one_line(
                    f"{f.filename}:{_name_line(f.text)}: name: catalog {f.catalog.name!r} is stored with this project with "
                    f"other content (from {doc['filename']}, sha256 {doc['sha256'][:12]}…); import with --replace to replace it"
                )
            ]
        )
    repo.save_catalog_document(
        conn,
        {
            "name": f.catalog.name,
            "version": str(f.catalog.version)[:50],
            "filename": f.filename[:200],
            "sha256": f.sha256,
            "content": f.text,
        },
    )
    return write_features(conn, f.catalog)


def write_features(conn: Connection, cat: Catalog) -> int:
    """Load ``cat``'s features into ``catalog_feature`` (the importer checks constraints
    against them); return the number inserted."""
    rows = [
        {
            "catalog": cat.name,
            "catalog_version": str(cat.version)[:50],
            "key": f.key,
            "name": f.name[:200],
            "category": f.category[:100],
            "category_name": (f.category_name or "")[:200],
            "definition": f.definition or "",
            "require_template": f.require_template or "",
            "forbid_template": f.forbid_template or "",
            "rule_detectable": bool(f.rule_detectable),
        }
        for f in cat.features
    ]
    return repo.save_catalog_features(conn, cat.name, rows)


def ensure(
    conn: Connection, name_or_path: str = "reformbench", *, file: Optional[CatalogFile] = None, replace: bool = False
) -> tuple[Catalog, int]:
    """The catalog an import uses, stored and loaded if it is not yet: ``file`` (a catalog
    file read already) or a bundled name, stored name or file path. Returns the catalog and
    the number of features inserted."""
    if file is None:
        cat, file = resolve(conn, name_or_path)
        if file is None:
            return cat, 0 if repo.catalog_feature_keys(conn, cat.name) else write_features(conn, cat)
    return file.catalog, store(conn, file, replace=replace)


def candidates(conn: Connection) -> list[Catalog]:
    """The bundled catalogs and those stored with the project (a stored one that no longer
    parses is skipped)."""
    out = [load_catalog(name) for name in BUNDLED]
    for name in repo.catalog_documents(conn):
        try:
            out.append(catalog_named(conn, name))
        except ValueError:
            continue
    return out


def project_catalogs(conn: Connection) -> list[Catalog]:
    """The catalogs whose features the project's constraints use, each resolved (bundled or
    stored); one that cannot be resolved is left out."""
    out = []
    for name in data_repo.project_catalogs(conn):
        try:
            out.append(catalog_named(conn, name))
        except ValueError:
            continue
    return out


def manifest_entries(conn: Connection) -> list[dict]:
    """Every catalog loaded into the project: ``name, version, features, used`` (the project's
    constraints use it), ``source`` (``bundled`` or the stored file's name) and ``sha256`` of
    its text; a stored one also ``text`` (what an export writes beside its manifest)."""
    used = set(data_repo.project_catalogs(conn))
    docs = repo.catalog_documents(conn)
    out = []
    for name, version, n in repo.loaded_catalogs(conn):
        entry = {"name": name, "version": version, "features": int(n), "used": name in used}
        if name in BUNDLED:
            entry.update(source="bundled", sha256=hashlib.sha256(bundled_text(name).encode("utf-8")).hexdigest())
        elif name in docs:
            entry.update(source=docs[name]["filename"], sha256=docs[name]["sha256"], text=docs[name]["content"])
        else:
            entry.update(source="unknown (loaded before catalogs were stored with the project)", sha256=None)
        out.append(entry)
    return out
