"""Reading a project's files safely and reporting their problems: the importers' shared base.

:class:`ImportFailed` carries every located problem of a rejected import (``file:line:
field: message``); :func:`one_line` keeps a problem on one line; :func:`open_regular` /
:func:`read_file` read a *regular* file only (never a FIFO, a device or a link out of a
bundle); :func:`read_records` reads a CSV or JSONL file into located records.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from pathlib import Path

MAX_REPORTED = 200
IMPORT_ACTION = "import_data"  # lead only


class ImportFailed(Exception):
    """The import was rejected; ``errors`` holds every located problem."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        shown = errors[:MAX_REPORTED]
        more = f"\n… and {len(errors) - MAX_REPORTED} more" if len(errors) > MAX_REPORTED else ""
        super().__init__(f"{len(errors)} problem(s):\n" + "\n".join(shown) + more)


_LINE_BREAKS = {ord(c): c.encode("unicode_escape").decode() for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


def one_line(msg: str) -> str:
    """``msg`` with line breaks escaped (``\\n``), so one problem stays one line of the report."""
    return msg.translate(_LINE_BREAKS)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def open_regular(path: Path, root: Path | None = None):
    """A binary file object on a *regular* file; :class:`OSError` with a clear message for
    anything else.

    A FIFO, a device (``/dev/zero``), a socket or a directory is refused without reading from
    it (opened non-blocking, checked with ``fstat`` on the open descriptor, so the check and the
    read see the same file). With ``root``, a symbolic link that leads outside ``root`` (a
    bundle's ``questions.jsonl -> /etc/shadow``) is refused before anything is opened.
    """
    if root is not None and path.is_symlink():
        target = Path(os.path.realpath(path))
        if not target.is_relative_to(Path(os.path.realpath(root))):
            raise OSError(f"is a symbolic link to {target}, outside the bundle directory (refused, nothing read)")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise OSError(f"is {kind}, not a regular file (refused, nothing read)")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_file(path: Path, root: Path | None = None) -> bytes:
    """The bytes of a *regular* file (:func:`open_regular`)."""
    with open_regular(path, root) as fh:
        return fh.read()


def read_records(data: bytes, filename: str, errors: list[str] | None = None) -> list[tuple[int, dict]]:
    """Parse a CSV (header row) or JSONL file into ``(line, record)`` pairs.

    The line is the 1-based line on which the record starts. Every unreadable line is
    reported, located (a JSON line that is not JSON or not an object, or that repeats a key,
    is reported and skipped; the other lines are still returned). With ``errors``, problems
    are appended to it and the readable records returned, so the caller can report the other
    lines' problems too; without, :class:`ImportFailed` is raised with all of them.
    """
    own = errors is None
    errors = [] if own else errors
    before = len(errors)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFailed([f"{filename}: not UTF-8 text ({exc})"]) from None
    low = filename.lower()
    if low.endswith(".csv"):
        out = _csv_records(text, filename, errors)
    elif low.endswith((".jsonl", ".ndjson", ".json")):
        out = _json_records(text, filename, errors)
    else:
        raise ImportFailed([f"{filename}: unknown file type; use .csv or .jsonl"])
    if own and len(errors) > before:
        raise ImportFailed(errors)
    return out


def _csv_records(text: str, filename: str, errors: list[str]) -> list[tuple[int, dict]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        return []
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        errors.append(f"{filename}:1: (header): column(s) {', '.join(map(repr, dup))} appear more than once")
    out, prev = [], reader.line_num
    try:
        for row in reader:
            start, prev = prev + 1, reader.line_num
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(header):
                errors.append(f"{filename}:{start}: (row): {len(row)} fields, the header has {len(header)}")
                continue
            out.append((start, dict(zip(header, row))))
    except csv.Error as exc:
        errors.append(f"{filename}:{reader.line_num}: (row): {exc}")
    return out


def _json_records(text: str, filename: str, errors: list[str]) -> list[tuple[int, dict]]:
    from reform_core.records import DuplicateKeyError, field_label, loads_unique

    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = loads_unique(line)
        except DuplicateKeyError as exc:
            errors += [
                f"{filename}:{n}: {field_label(k)}: given twice in this line (JSON would keep only the last value)"
                for k in exc.keys
            ]
            continue
        except (ValueError, RecursionError) as exc:
            errors.append(f"{filename}:{n}: (line): invalid JSON: {getattr(exc, 'msg', None) or exc}")
            continue
        if not isinstance(rec, dict):
            errors.append(f"{filename}:{n}: (line): expected a JSON object, got {type(rec).__name__}")
            continue
        out.append((n, rec))
    return out
