"""No lost work (issue 9): SIGKILL an import and a ``simulate`` mid-transaction.

The child is the real CLI (``python -m reform_core import|simulate``) in its own
process. We read its progress lines (printed as each table is written, all inside the
import's single transaction) and send SIGKILL as soon as the responses step starts, so
questions, instructions, constraints and models are already written but not committed.
Afterwards the database must hold nothing of that import (or, had the kill come too
late, all of it), ``doctor`` must be ok, and a plain re-run must complete with the full
counts. On SQLite and PostgreSQL. (A killed *judge* run resuming is covered by
``test_judges_service.py::test_killed_run_resumes_without_repeating_or_duplicating``.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reform_core.services.data.bundle_export import export_bundle
from reform_core.services.data.importer import frames_bundle, import_bundle_obj
from reform_core.services.data.simulated import simulation_frames
from reform_core.services.data.status import status
from reform_core.services.platform.uow import dispose_engines, get_engine
from reform_core.services.project.operations import doctor

ROOT = Path(__file__).resolve().parents[2]
KILL_AT = "… responses"  # progress line printed just before the responses are written
EMPTY = {
    "questions": 0,
    "instructions": 0,
    "constraints": 0,
    "models": 0,
    "responses": 0,
    "judgments": 0,
    "disagreements": 0,
    "adjudications": 0,
    "pair": None,
    "plans": [],
}


@pytest.fixture(scope="module")
def big_bundle(tmp_path_factory) -> Path:
    """A few-second import on disk: 200 questions, 800 instructions, 3 models, 14,400 judgments."""
    from reform_core.simulate import simulate

    d = tmp_path_factory.mktemp("bundle")
    eng = get_engine(f"sqlite:///{d / 'src.db'}")
    sim = simulate(seed=3, scale="small", n_questions=200, n_instructions=800, n_models=3)
    import_bundle_obj(eng, frames_bundle(simulation_frames(sim, adjudicate=20, seed=3)))
    export_bundle(eng, d / "bundle")
    eng.dispose()
    dispose_engines()
    return d / "bundle"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "reform_core", *args]


def run_and_kill(cmd: list[str], timeout: float = 120) -> tuple[int, list[str]]:
    """Start ``cmd``, SIGKILL it the moment its progress reaches ``KILL_AT``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.monotonic() + timeout
    try:
        for line in child.stderr:
            seen.append(line.rstrip("\n"))
            if line.startswith(KILL_AT):
                child.send_signal(signal.SIGKILL)
                break
            assert time.monotonic() < deadline, f"no {KILL_AT!r} progress line in time: {seen}"
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    return child.returncode, seen


def _after_kill(url: str, rc: int, seen: list[str]) -> dict:
    assert rc == -signal.SIGKILL, f"the child was not killed mid-way (rc={rc}, progress={seen})"
    assert "… questions" in seen, seen  # writes had started before the kill
    dispose_engines()
    eng = get_engine(url)
    counts = status(eng)
    report = doctor(eng)
    assert report["ok"], report
    return counts


def _rerun(cmd: list[str]) -> dict:
    r = subprocess.run(
        cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_killed_import_leaves_nothing_and_reruns(backend, big_bundle, request, tmp_path):
    url = f"sqlite:///{tmp_path / 'k.db'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    get_engine(url)  # schema first, so the child's transaction is the import alone
    cmd = _cli("import", str(big_bundle), "--db", url)
    rc, seen = run_and_kill(cmd)
    counts = _after_kill(url, rc, seen)
    assert counts == EMPTY, f"a killed import left partial data: {counts}"

    out = _rerun(cmd + ["--json"])
    assert out["questions"] == 200 and out["instructions"] == 800 and out["judgments"] == 14_400
    dispose_engines()
    eng = get_engine(url)
    full = status(eng)
    assert (full["questions"], full["instructions"], full["judgments"]) == (200, 800, 14_400)
    assert full["adjudications"] == out["adjudications"] > 0
    assert doctor(eng)["ok"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_killed_simulate_leaves_nothing_and_reruns(backend, request, tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    get_engine(url)
    cmd = _cli("simulate", "--db", url, "--seed", "5", "--scale", "small")
    rc, seen = run_and_kill(cmd)
    counts = _after_kill(url, rc, seen)
    assert counts == EMPTY, f"a killed simulate left partial data: {counts}"

    out = _rerun(cmd + ["--json"])
    dispose_engines()
    full = status(get_engine(url))
    assert (full["questions"], full["instructions"], full["judgments"]) == (
        out["questions"],
        out["instructions"],
        out["judgments"],
    )
    assert full["questions"] == 30 and full["instructions"] == 120
