"""Issue 15 item 6: bundle files that are not regular files.

A ``responses.jsonl`` that is a symlink to ``/dev/zero`` exhausted memory, a FIFO hung the
import, and a symlink to ``/etc/shadow`` revealed its line count in the error messages. Each
import runs as the real CLI in a child process with a 1 GiB address-space limit and a
timeout, so the old behaviour fails the test instead of the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from reform_core.services.platform.uow import dispose_engines, get_engine
from tests.integration.test_import import make_bundle

ROOT = Path(__file__).resolve().parents[2]


def _limit() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _import(bundle: Path, url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "REFORM_DATABASE_URL": url}
    try:
        return subprocess.run(
            [sys.executable, "-m", "reform_core", "import", str(bundle), "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_limit,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the import hung")


def _questions(url: str) -> int:
    with get_engine(url).connect() as conn:
        n = conn.execute(text("SELECT COUNT(*) FROM question")).scalar_one()
    dispose_engines()
    return int(n)


@pytest.fixture
def secret(tmp_path) -> Path:
    p = tmp_path / "outside" / "secret.txt"
    p.parent.mkdir()
    p.write_text("root:$6$hash:19000:0:99999:7:::\n" * 3 + "daemon:*:19000::::::\n")
    return p


@pytest.mark.parametrize("fname", ["responses.jsonl", "questions.jsonl", "bundle.json"])
@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "link_out", "etc_shadow"])
def test_special_bundle_files_are_refused_without_reading(tmp_path, sqlite_url, secret, kind, fname):
    if kind == "etc_shadow" and not os.path.lexists("/etc/shadow"):
        pytest.skip("no /etc/shadow on this machine")
    bundle = make_bundle(tmp_path / "b")
    target = bundle / fname
    target.unlink()
    if kind == "dev_zero":
        target.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "link_out":
        target.symlink_to(secret)
    else:
        target.symlink_to("/etc/shadow")
    r = _import(bundle, sqlite_url)
    assert r.returncode == 1, (r.stdout[-500:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    mine = [line for line in lines if f"{fname}:" in line]
    assert len(mine) == 1, lines
    expected = {
        "dev_zero": "outside the bundle directory",
        "fifo": "is a FIFO (named pipe), not a regular file",
        "link_out": "outside the bundle directory",
        "etc_shadow": "outside the bundle directory",
    }[kind]
    assert f"{fname}:0: (file): cannot read: " in mine[0] and expected in mine[0], mine[0]
    assert "nothing read" in mine[0]
    for n in range(1, 6):  # no line of the target is ever located (no line count revealed)
        assert f"{fname}:{n}:" not in r.stderr
    assert "root:" not in r.stderr and "$6$" not in r.stderr
    assert _questions(sqlite_url) == 0  # the database is unchanged


def test_a_device_inside_the_bundle_directory_is_refused(tmp_path, sqlite_url):
    """A link that stays inside the bundle is followed, but only to a regular file: here the
    bundle directory itself holds a link to ``/dev/zero`` that another file links to."""
    bundle = make_bundle(tmp_path / "b")
    (bundle / "zero").symlink_to("/dev/zero")
    (bundle / "responses.jsonl").unlink()
    (bundle / "responses.jsonl").symlink_to(bundle / "zero")
    r = _import(bundle, sqlite_url)
    assert r.returncode == 1 and "outside the bundle directory" in r.stderr, r.stderr[-1000:]


def test_links_inside_the_bundle_to_regular_files_still_import(tmp_path, sqlite_url):
    bundle = make_bundle(tmp_path / "b")
    real = bundle / "data-questions.jsonl.txt"
    (bundle / "questions.jsonl").rename(real)
    (bundle / "questions.jsonl").symlink_to(real.name)
    r = _import(bundle, sqlite_url)
    assert r.returncode == 0, r.stderr[-1000:]
    assert _questions(sqlite_url) == 2


def test_special_input_files_named_directly_are_refused(tmp_path, sqlite_url):
    from reform_core.services.data.reading import read_file

    fifo = tmp_path / "input.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="is a FIFO"):
        read_file(fifo)  # returns at once: opened non-blocking, refused by fstat
    with pytest.raises(OSError, match="is a character device"):
        read_file(Path("/dev/zero"))  # an input file named directly: refused by fstat, nothing read
    with pytest.raises(OSError, match="is a directory"):
        read_file(tmp_path)
