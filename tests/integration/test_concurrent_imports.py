"""Issue 15 item 11: two imports at once. The loser used to print a raw IntegrityError
(≈2,000 characters of SQL, or PostgreSQL's three-line UniqueViolation). Imports are now
serialised: the second waits, then writes only what is new; any error is one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from reform_core.cli import one_line_error
from reform_core.services.platform.uow import dispose_engines, get_engine
from reform_core.services.project.operations import doctor

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "reform_core" / "demo" / "bundle"
TABLES = ("question", "instruction", "response", "judgment", "adjudication")


def _counts(url: str) -> dict:
    with get_engine(url).connect() as conn:
        out = {t: conn.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar_one() for t in TABLES}
    dispose_engines()
    return out


def test_two_simultaneous_imports(any_db_url):
    env = {**os.environ, "REFORM_DATABASE_URL": any_db_url}
    get_engine(any_db_url)  # migrate once, so both imports race on the data, not the schema
    dispose_engines()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "reform_core", "import", str(BUNDLE), "--json"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    for rc, _, err in results:
        assert rc == 0 or (rc == 1 and err.startswith("error: ") and err.count("\n") == 1 and len(err) < 600), err
        assert "IntegrityError" not in err and "UniqueViolation" not in err and "[SQL" not in err, err
    assert any(rc == 0 for rc, _, _ in results)
    once = _counts(any_db_url)
    assert all(once[t] > 0 for t in ("question", "response", "judgment")), once
    r = subprocess.run(
        [sys.executable, "-m", "reform_core", "import", str(BUNDLE), "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert _counts(any_db_url) == once  # nothing imported twice
    assert doctor(get_engine(any_db_url))["ok"]


def test_unexpected_database_errors_are_one_line(sqlite_url):
    from sqlalchemy.exc import IntegrityError, OperationalError

    eng = get_engine(sqlite_url)
    with pytest.raises(IntegrityError) as info:
        with eng.begin() as conn:
            conn.execute(text("INSERT INTO project_meta (key, value) VALUES ('k', 'v')"))
            conn.execute(text("INSERT INTO project_meta (key, value) VALUES ('k', 'v')"))
    line = one_line_error(info.value)
    assert "\n" not in line and "[SQL" not in line and line.startswith("IntegrityError: UNIQUE constraint failed")
    locked = OperationalError("BEGIN IMMEDIATE", {}, __import__("sqlite3").OperationalError("database is locked"))
    assert one_line_error(locked).startswith("the database is busy")
