"""Operations: consistent backup and restore, and ``doctor`` health checks.

SQLite: backup uses SQLite's online backup API (a consistent snapshot even while the app
writes); restore checks the file is a ReForm database, then copies it into place with the
same API. PostgreSQL: ``pg_dump --format=custom`` and ``pg_restore --clean --if-exists``
(the client tools must be on PATH). Either way a backup is written to a temporary file
next to ``out`` and renamed into place only once complete, so a failed backup leaves the
previous one intact. The PostgreSQL tools get the password in ``PGPASSWORD`` (never on
their command line, which ``ps`` shows to every user), and die with the CLI process that
started them (Linux ``PR_SET_PDEATHSIG``; a Ctrl-C or an error kills them too).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from db.engine import current_revision, head_revision, is_sqlite, normalize_url
from db.repo import adjudication as adj_repo


class OperationFailed(Exception):
    pass


def _sqlite_path(url: str) -> Path:
    db = make_url(normalize_url(url)).database
    if not db or db == ":memory:":
        raise OperationFailed("backup/restore need a SQLite file database, not :memory:")
    return Path(db)


def _pg_conninfo(url: str) -> tuple[str, dict]:
    """The connection URL for the client tools *without* its password, and the environment
    carrying the password (``PGPASSWORD``), if the URL has one."""
    u = make_url(normalize_url(url)).set(drivername="postgresql")
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"}
    if u.password is not None:
        env["PGPASSWORD"] = str(u.password)
    return u._replace(password=None).render_as_string(hide_password=False), env  # set() ignores None


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the parent died before prctl took effect
            os._exit(1)


def _run_tool(argv: list[str], env: dict) -> subprocess.CompletedProcess:
    """Run a PostgreSQL client tool as a child that cannot outlive this process."""
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent
    )
    try:
        out, err = proc.communicate()
    except BaseException:  # Ctrl-C, SIGTERM turned into an exception, ...: never leave it running
        proc.kill()
        proc.wait()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def backup(url: str, out: str | Path) -> dict:
    """Write a consistent snapshot of the database at ``url`` to ``out``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if is_sqlite(url):
        src_path = _sqlite_path(url)
        if not src_path.exists():
            raise OperationFailed(f"{src_path}: no such database file")
        tmp = out.with_suffix(out.suffix + ".partial")
        tmp.unlink(missing_ok=True)
        src = sqlite3.connect(str(src_path), timeout=30)
        dst = sqlite3.connect(str(tmp))
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
        tmp.replace(out)  # never leave a half-written backup under the final name
        return {"backend": "sqlite", "file": str(out), "bytes": out.stat().st_size}
    if shutil.which("pg_dump") is None:
        raise OperationFailed("pg_dump not found on PATH (install the PostgreSQL client tools)")
    conninfo, env = _pg_conninfo(url)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        r = _run_tool(["pg_dump", "--format=custom", "--no-owner", f"--file={tmp}", conninfo], env)
        if r.returncode != 0:
            raise OperationFailed(f"pg_dump failed: {r.stderr.strip()}")
        tmp.replace(out)  # never leave a half-written backup under the final name
    finally:
        tmp.unlink(missing_ok=True)
    return {"backend": "postgresql", "file": str(out), "bytes": out.stat().st_size}


def _check_sqlite_backup(path: Path) -> str:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            rev = con.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise OperationFailed(f"{path}: not a ReForm SQLite backup ({exc})") from exc
    if ok != "ok":
        raise OperationFailed(f"{path}: integrity check failed: {ok}")
    if rev is None:
        raise OperationFailed(f"{path}: no schema version recorded")
    return rev[0]


def restore(url: str, source: str | Path) -> dict:
    """Replace the database at ``url`` with the backup ``source`` (stop the app first)."""
    source = Path(source)
    if not source.exists():
        raise OperationFailed(f"{source}: no such backup file")
    from reform_core.services.platform.uow import dispose_engines

    dispose_engines()
    if is_sqlite(url):
        rev = _check_sqlite_backup(source)
        dst_path = _sqlite_path(url)
        dst_path.parent.mkdir(parents=True, exist_ok=True)
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        dst = sqlite3.connect(str(dst_path), timeout=30)
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
        return {"backend": "sqlite", "restored_from": str(source), "schema": rev}
    if shutil.which("pg_restore") is None:
        raise OperationFailed("pg_restore not found on PATH (install the PostgreSQL client tools)")
    conninfo, env = _pg_conninfo(url)
    r = _run_tool(
        [
            "pg_restore",
            "--clean",
            "--if-exists",
            "--no-owner",
            "--single-transaction",
            f"--dbname={conninfo}",
            str(source),
        ],
        env,
    )
    if r.returncode != 0:
        raise OperationFailed(f"pg_restore failed: {r.stderr.strip()}")
    return {"backend": "postgresql", "restored_from": str(source)}


_ORPHAN_CHECKS = {
    "judgments without response": "SELECT COUNT(*) FROM judgment j LEFT JOIN response r ON r.id = j.response_id WHERE r.id IS NULL",
    "judgments without constraint": "SELECT COUNT(*) FROM judgment j LEFT JOIN constraint_item c ON c.id = j.constraint_id WHERE c.id IS NULL",
    "constraints without instruction": "SELECT COUNT(*) FROM constraint_item c LEFT JOIN instruction i ON i.id = c.instruction_id WHERE i.id IS NULL",
    "responses without model": "SELECT COUNT(*) FROM response r LEFT JOIN eval_model m ON m.id = r.model_id WHERE m.id IS NULL",
    "baseline features without response": "SELECT COUNT(*) FROM baseline_feature b LEFT JOIN response r ON r.id = b.response_id WHERE r.id IS NULL",
    "adjudications without task": "SELECT COUNT(*) FROM adjudication a LEFT JOIN adjudication_task t ON t.id = a.task_id WHERE t.id IS NULL",
    "tasks without plan": "SELECT COUNT(*) FROM adjudication_task t LEFT JOIN sample_plan p ON p.id = t.plan_id WHERE p.id IS NULL",
    "ratings without item": "SELECT COUNT(*) FROM wording_rating w LEFT JOIN wording_item i ON i.id = w.item_id WHERE i.id IS NULL",
}


def _data_checks(engine: Engine, conn) -> list[dict]:
    """Missing data the scores leave out (docs/metrics.md#missing-data): baseline coverage and instances no judge
    of the scoring pair labelled. Warnings (``warn``), not faults: the database is sound, but
    the scores say what they leave out."""
    from db.repo import data as data_repo
    from db.repo import scoring as score_repo
    from reform_core.services.data.catalogs import catalog_named
    from reform_core.services.scoring.scoring import project_pair

    out = []
    catalogs = data_repo.project_catalogs(conn)
    emcr = []
    for name in catalogs:
        try:
            if "emcr" in catalog_named(conn, name).metrics:
                emcr.append(name)
        except ValueError:
            emcr.append(name)
    cov = score_repo.baseline_coverage(conn)
    missing = cov["pairs"] - cov["annotated"]
    if not emcr and catalogs:
        detail = f"not needed: catalog {', '.join(catalogs)} declares no EMCR ({cov['annotated']} of {cov['pairs']} annotated)"
    else:
        detail = f"{cov['annotated']} of {cov['pairs']} (model, question) pairs have a baseline annotation" + (
            f"; the targets of the other {missing} are left out of EMCR (opposition unknown)" if missing else ""
        )
    out.append(
        {"check": "baseline coverage", "ok": True, "warn": bool(emcr or not catalogs) and missing > 0, "detail": detail}
    )
    pair = project_pair(engine)
    n = score_repo.unlabelled_instances(conn, judges=list(pair) if pair else None)
    who = f"the scoring pair ({pair[0]}, {pair[1]})" if pair else "any judge"
    out.append(
        {
            "check": "unlabelled instances",
            "ok": True,
            "warn": n["instances"] > 0,
            "detail": f"{n['instances']} (response, constraint) pair(s) in {n['responses']} response(s) have no label "
            f"from {who}" + ("; their instructions are left out of every score" if n["instances"] else ""),
        }
    )
    return out


def doctor(engine: Engine) -> dict:
    """Health checks: schema version, orphan rows, lease state, integrity (``ok`` is False on any
    problem), and warnings (``warn``) about data the scores leave out."""
    checks: list[dict] = []
    cur, head = current_revision(engine), head_revision(engine)
    checks.append({"check": "schema version", "ok": cur == head, "detail": f"database {cur}, code {head}"})
    with engine.connect() as conn:
        for name, sql in _ORPHAN_CHECKS.items():
            n = int(conn.execute(text(sql)).scalar_one())
            checks.append({"check": f"orphans: {name}", "ok": n == 0, "detail": f"{n} row(s)"})
        now = datetime.now(timezone.utc)
        claimed = conn.execute(text("SELECT lease_until FROM adjudication_task WHERE status = 'claimed'")).all()
        expired = 0
        for (lease,) in claimed:
            if lease is None:
                expired += 1
                continue
            if isinstance(lease, str):
                lease = datetime.fromisoformat(lease)
            if lease.tzinfo is None:
                lease = lease.replace(tzinfo=timezone.utc)
            expired += lease < now
        checks.append(
            {
                "check": "leases",
                "ok": True,
                "detail": f"{len(claimed)} claimed, {expired} expired (expired leases return to the queue on the next claim)",
            }
        )
        bad = int(
            conn.execute(
                text("SELECT COUNT(*) FROM adjudication_task t WHERE t.status = 'done' AND t.decided < t.required")
            ).scalar_one()
        )
        checks.append(
            {
                "check": "task counters",
                "ok": bad == 0,
                "detail": f"{bad} done task(s) with fewer decisions than required",
            }
        )
        bad = adj_repo.task_counter_mismatches(conn)
        checks.append(
            {
                "check": "task decision counts",
                "ok": bad == 0,
                "detail": f"{bad} task(s) whose decided count or status disagrees with their decisions",
            }
        )
        bad = adj_repo.counter_mismatches(conn)
        checks.append(
            {
                "check": "progress counters",
                "ok": bad == 0,
                "detail": f"{bad} plan progress counter row(s) differ from a recount",
            }
        )
        checks += _data_checks(engine, conn)
        if conn.dialect.name == "sqlite":
            res = conn.execute(text("PRAGMA integrity_check")).scalar_one()
            checks.append({"check": "sqlite integrity", "ok": res == "ok", "detail": res})
            mode = conn.execute(text("PRAGMA journal_mode")).scalar_one()
            checks.append({"check": "sqlite journal mode", "ok": mode == "wal", "detail": mode})
    return {"ok": all(c["ok"] for c in checks), "checks": checks}
