"""Issue 15 item 18: tests and CI on a fresh machine.

Pins: ``.ci/run`` used to let the browser tests skip silently when Chromium was missing;
there was no global per-test timeout; requirements were unpinned (``>=``), so a fresh install
resolved whatever was newest; the README pointed outside the repository (the shared folder beside it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".ci"))
import lock  # noqa: E402  (.ci/lock.py)


def _readme_commands() -> list[str]:
    return re.findall(r"```bash\n(python -m pip install[^\n]*)\n```", (ROOT / "README.md").read_text())


def test_ci_run_fails_when_chromium_or_postgres_is_missing(tmp_path):
    missing = str(tmp_path / "no-chromium")  # a browser path that does not exist
    env = {**os.environ, "REFORM_TEST_CHROMIUM": missing}
    r = subprocess.run(["bash", ".ci/run", "--check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and f"error: {missing} is missing" in r.stderr, r.stderr
    env = {**os.environ, "REFORM_TEST_POSTGRES_URL": "postgresql://postgres@127.0.0.1:1/none"}
    r = subprocess.run(["bash", ".ci/run", "--check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "error: no PostgreSQL server answers" in r.stderr, r.stderr


def test_browser_tests_fail_in_ci_and_skip_locally_without_chromium(monkeypatch, tmp_path):
    from tests.e2e import harness

    monkeypatch.setattr(harness, "CHROMIUM", str(tmp_path / "no-chromium"))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="browser tests cannot run in CI"):
        harness.require_chromium()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        harness.require_chromium()


def test_every_test_has_a_timeout(request):
    assert request.config.pluginmanager.hasplugin("timeout"), "pytest-timeout is not active"
    assert float(request.config.getini("timeout")) >= 300, "a generous global per-test timeout is configured"


def test_lock_pins_every_requirement_at_a_satisfying_version():
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    for req in lock.read_requirements(ROOT / "requirements-dev.txt"):
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not pinned in requirements.lock"
        assert req.specifier.contains(pins[name], prereleases=True), f"lock pins {name}=={pins[name]}, outside {req}"
    for name, version in pins.items():
        assert "," not in version and version.strip() == version


def test_lock_matches_what_is_installed_and_tested():
    """The lock is the closure of requirements-dev.txt at the installed versions (``.ci/lock.py``)."""
    assert lock.render() == (ROOT / "requirements.lock").read_text(), (
        "requirements.lock is out of date: run python .ci/lock.py (see its docstring)"
    )


def test_readme_commands_install_the_lock():
    commands = _readme_commands()
    assert len(commands) == 2, commands
    assert all("-r requirements.lock" in c for c in commands), commands
    assert "streamlit run app.py" in commands[0] and "python -m pytest" in commands[1]
    assert "-r requirements.lock" in (ROOT / ".ci/run").read_text()


def test_docs_link_only_inside_the_repository():
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        assert "../" + "shared" not in text, f"{doc.name} points outside the repository"
        for target in re.findall(r"\]\(([^)#\s]+)\)", text) + re.findall(
            r"`((?:docs|bench|tests|reform_core)/[^`\s]+\.md)`", text
        ):
            if "://" in target:
                continue
            assert (doc.parent / target).exists() or (ROOT / target).exists(), f"{doc.name}: {target} does not exist"


def test_requirement_lines_parse():
    for name in ("requirements.txt", "requirements-dev.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-r"):
                Requirement(line)
