"""Issue 15 item 18: a test run that changes a tracked file fails (in CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _repo(tmp_path: Path, body: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (repo / "conftest.py").write_text("from tests.tracked_files import pytest_sessionfinish, pytest_sessionstart\n")
    (repo / "report.md").write_text("tracked\n")
    (repo / "test_it.py").write_text(f"from pathlib import Path\n\ndef test_it():\n    {body}\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(git + ["init", "-q"], cwd=repo, check=True)
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], cwd=repo, check=True)
    return repo


def _pytest(repo: Path, ci: bool) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "true" if ci else "", "REFORM_CHECK_TRACKED": ""}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "test_it.py"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "body, fails",
    [
        ("Path('report.md').write_text('rewritten')", True),
        ("Path('untracked.txt').write_text('new file')", False),
        ("assert Path('report.md').read_text() == 'tracked\\n'", False),
    ],
)
def test_a_run_that_changes_a_tracked_file_fails_in_ci(tmp_path, body, fails):
    repo = _repo(tmp_path, body)
    r = _pytest(repo, ci=True)
    assert (r.returncode != 0) is fails, r.stdout[-2000:]
    assert ("tests changed tracked files" in r.stdout and "report.md" in r.stdout) is fails, r.stdout[-2000:]
    if fails:
        assert _pytest(repo, ci=False).returncode == 0  # off outside CI
