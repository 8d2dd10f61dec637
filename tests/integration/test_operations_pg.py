"""Issue 15 item 5: PostgreSQL backup and restore as an operator needs them.

A failed ``backup`` used to truncate the previous backup file to 0 bytes (``pg_dump
--file=out``); a SIGKILLed ``backup``/``restore`` left ``pg_dump``/``pg_restore`` running as
orphans that finished the job; the database password was on ``pg_dump``'s command line.
Here ``pg_dump``/``pg_restore`` are made to wait on a table lock another connection holds,
so the test can look at the running child and kill the CLI while it works.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from reform_core.services.data.importer import import_bundle
from reform_core.services.platform.uow import get_engine
from reform_core.services.project.operations import OperationFailed, backup
from tests.integration.test_import import make_bundle

ROOT = Path(__file__).resolve().parents[2]
CANARY = "canary-db-password-7d1f"  # the test server trusts local connections: any password works


def _children(pid: int, name: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if comm == name and int(rest[1]) == pid:
            out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait(cond, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def project(postgres_url, tmp_path):
    eng = get_engine(postgres_url)
    import_bundle(eng, make_bundle(tmp_path / "b"))
    with_password = make_url(postgres_url).set(password=CANARY).render_as_string(hide_password=False)
    return eng, with_password


def test_a_failed_backup_keeps_the_previous_one(project, tmp_path):
    eng, url = project
    out = tmp_path / "nightly.bak"
    backup(url, out)
    good = out.read_bytes()
    assert len(good) > 1000
    broken = make_url(url).set(database="reform_no_such_database").render_as_string(hide_password=False)
    with pytest.raises(OperationFailed, match="pg_dump failed"):
        backup(broken, out)
    assert out.read_bytes() == good  # was truncated to 0 bytes
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "b") == ["nightly.bak"]  # no partial file left


@pytest.mark.parametrize("command", ["backup", "restore"])
def test_killing_the_cli_kills_its_child_and_no_password_on_its_command_line(project, tmp_path, command):
    eng, url = project
    bak = tmp_path / "snap.bak"
    backup(url, bak)
    tool = {"backup": "pg_dump", "restore": "pg_restore"}[command]
    args = ["--out", str(tmp_path / "new.bak")] if command == "backup" else ["--from", str(bak)]
    blocker = eng.connect()
    trans = blocker.begin()
    # pg_dump waits for a share lock, pg_restore --clean for an exclusive one: both wait on this
    blocker.execute(text("LOCK TABLE question IN ACCESS EXCLUSIVE MODE"))
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"}
    cli = subprocess.Popen(
        [sys.executable, "-m", "reform_core", command, *args, "--db", url],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert _wait(lambda: _children(cli.pid, tool)), f"{tool} never started"
        (child,) = _children(cli.pid, tool)
        time.sleep(1.0)  # it is connected and waiting on the lock
        argv = Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace")
        assert CANARY not in argv, argv.replace("\0", " ")
        assert CANARY in Path(f"/proc/{child}/environ").read_bytes().decode(errors="replace")  # PGPASSWORD
        assert _alive(child)
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=30)
        assert _wait(lambda: not _alive(child), timeout=10), f"{tool} outlived the killed CLI"
    finally:
        trans.rollback()
        blocker.close()
        if cli.poll() is None:
            cli.kill()
    assert not (tmp_path / "new.bak").exists()  # nothing under the final name
