"""Pytest hooks: the run fails when a test changed a file that git tracks (issue 15 item 18:
a test rewrote ``reports/ifeval_disagreements.md`` on every run).

Active when ``CI=true`` (``.ci/run``, a clean clone) or ``REFORM_CHECK_TRACKED=1``; off
otherwise, so editing the code while a long local run goes on is not reported. Imported by
``tests/conftest.py``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

_KEY = "reform_tracked_snapshot"


def _enabled() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("REFORM_CHECK_TRACKED") == "1"


def snapshot(root: Path) -> dict[str, str] | None:
    """``{path: sha256 of its content}`` of every tracked file under ``root`` (None: not a git checkout)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    digests = {}
    for name in filter(None, out.decode("utf-8", "surrogateescape").split("\0")):
        try:
            digests[name] = hashlib.sha256((root / name).read_bytes()).hexdigest()
        except OSError:
            digests[name] = "<unreadable or deleted>"
    return digests


def pytest_sessionstart(session: pytest.Session) -> None:
    if _enabled():
        setattr(session.config, _KEY, snapshot(Path(session.config.rootpath)))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = getattr(session.config, _KEY, None)
    if not _enabled() or before is None:
        return
    after = snapshot(Path(session.config.rootpath)) or {}
    changed = sorted(name for name in before if after.get(name) != before[name])
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "tests changed tracked files (a test must write only under tmp_path): " + ", ".join(changed)
        if reporter is not None:
            reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
