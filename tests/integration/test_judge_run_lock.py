"""The judge run lock (issue 15 item 11): two ``judge`` runs with the same judge name at
once never call the provider twice for a pair and never show a raw IntegrityError — the
second refuses with one ``error:`` line. A run whose process died is shown as stale and
the next run takes it over; a run can be cancelled from another process. Real CLI
processes on SQLite and PostgreSQL against a loopback fake provider that counts calls."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from fake_servers import FakeServer, seed_project
from sqlalchemy import text

from db.models import Job, utcnow
from reform_core.services.judging import judging as svc
from reform_core.services.platform import jobs
from reform_core.services.platform.uow import get_engine, unit_of_work

ROOT = Path(__file__).resolve().parents[2]
N = 12


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")}
    env.update(PYTHONPATH=str(ROOT), OPENAI_API_KEY="sk-test-lock", REFORM_JOB_HEARTBEAT_SECONDS="0.2", **extra)
    return env


def _judge(url: str, server: FakeServer, name: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reform_core",
            "judge",
            "--db",
            url,
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--name",
            name,
            "--base-url",
            server.url + "/v1",
            "--concurrency",
            "2",
            *extra,
        ],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(cond, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _judgments(engine, name: str) -> tuple[int, int]:
    with engine.connect() as c:
        return tuple(
            c.execute(
                text(
                    "select count(*), count(distinct g.response_id * 100000 + g.constraint_id) from judgment g "
                    "join judge j on j.id = g.judge_id where j.name = :n"
                ),
                {"n": name},
            ).one()
        )


def _assert_refused(err: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: judge:") and "is already running as job" in lines[0], err


def test_second_run_of_the_same_judge_refuses_with_one_line(any_db_url, server):
    """Pins issue 15 item 11: on PostgreSQL both runs called the provider for every
    response, on SQLite the second crashed with a raw IntegrityError."""
    engine = get_engine(any_db_url)
    seed_project(engine, responses=N)
    server.delay = 1.5  # the first run takes ~9 s: long enough for a second process to start
    first = _judge(any_db_url, server, "g")
    try:
        _wait_for(lambda: len(server.calls) >= 2)
        second = _judge(any_db_url, server, "g")
        out, err = second.communicate(timeout=120)
        assert second.returncode == 1, (out, err)
        _assert_refused(err)
        assert first.poll() is None, "the first run should still be running (raise the fake server's delay)"
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    markers = [c["marker"] for c in server.calls]
    assert len(markers) == N and len(set(markers)) == N  # every response called exactly once
    assert _judgments(engine, "g") == (3 * N, 3 * N)
    states = Counter(v.state for v in jobs.recent(engine, kind="judge"))
    assert states == {"done": 1}  # the refused run left no job behind


def test_simultaneous_starts_never_call_twice(any_db_url, server):
    """Two runs started at the same instant: one judges, the other refuses or finds nothing
    left; the provider sees each response once, and nobody sees a traceback."""
    engine = get_engine(any_db_url)
    seed_project(engine, responses=N)
    server.delay = 0.02
    for round_ in range(2):
        name = f"race{round_}"
        before = len(server.calls)
        procs = [_judge(any_db_url, server, name) for _ in range(2)]
        outs = [p.communicate(timeout=180) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert "Traceback" not in err and "IntegrityError" not in err + out, err
            if p.returncode != 0:
                assert p.returncode == 1
                _assert_refused(err)
        markers = [c["marker"] for c in server.calls[before:]]
        assert len(markers) == N and len(set(markers)) == N, Counter(markers).most_common(3)
        assert _judgments(engine, name) == (3 * N, 3 * N)


def test_a_killed_run_is_stale_and_the_next_run_takes_over(sqlite_url, server):
    engine = get_engine(sqlite_url)
    seed_project(engine, responses=N)
    server.delay = 0.3
    child = _judge(sqlite_url, server, "k")
    try:
        _wait_for(lambda: len(server.calls) >= 3)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    [dead] = jobs.recent(engine, kind="judge")
    assert dead.status == "running" and dead.state == "stale" and "has exited" in dead.stale_reason
    with engine.connect() as c:
        finished = c.execute(text("select count(distinct response_id) from judgment where status = 'ok'")).scalar()
    server.delay = 0.0
    out = svc.run_judge(
        engine, provider="openai", model="gpt-4o-mini", name="k", base_url=server.url + "/v1", api_key="sk-test-lock"
    )
    assert out["errors"] == 0 and _judgments(engine, "k") == (3 * N, 3 * N)
    old, new = jobs.get(engine, dead.id), jobs.recent(engine, kind="judge")[0]
    assert old.state == "failed" and old.error.startswith("stale: its process") and "taken over" in old.error
    assert new.state == "done" and new.result["calls"] == out["calls"] == N - finished


def test_heartbeat_expiry_on_another_host(sqlite_url, monkeypatch):
    """A running job of a process on another machine counts as alive until its heartbeat
    is older than REFORM_JOB_STALE_SECONDS, then it is taken over."""
    engine = get_engine(sqlite_url)
    seed_project(engine, responses=2)
    with unit_of_work(engine) as s:
        s.add(
            Job(
                kind="judge",
                lock_key="judge:verifiers",
                params={},
                owner="elsewhere:1",
                created_by="bob",
                heartbeat_at=utcnow() - timedelta(seconds=30),
            )
        )
    with pytest.raises(
        jobs.JobBusy, match=r"judge:verifiers is already running as job 1 \(started by bob on elsewhere:1"
    ):
        svc.run_judge(engine, provider="rules")
    assert jobs.recent(engine)[0].state == "running"
    from reform_core.config import get_settings

    monkeypatch.setattr(get_settings(), "job_stale_seconds", 20.0)
    assert jobs.recent(engine)[0].state == "stale"
    assert svc.run_judge(engine, provider="rules")["calls"] == 2
    assert [v.state for v in jobs.recent(engine)] == ["done", "failed"]
    assert "no heartbeat for 3" in jobs.get(engine, 1).error


def test_cancel_from_another_process(any_db_url, server):
    """A CLI run stops soon after ``jobs.cancel`` in another process: calls in flight
    finish and are written, no new call starts, the job ends "cancelled"."""
    engine = get_engine(any_db_url)
    seed_project(engine, responses=N)
    server.delay = 1.0
    child = _judge(any_db_url, server, "c")
    try:
        _wait_for(lambda: len(server.calls) >= 2)
        [job] = jobs.recent(engine, kind="judge")
        assert job.state == "running" and job.params["name"] == "c" and job.created_by == "cli"
        assert jobs.cancel(engine, job.id)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    assert "(cancelled)" in out
    job = jobs.get(engine, job.id)
    assert job.state == "cancelled" and job.result["cancelled"] is True
    calls = len(server.calls)
    assert calls < N and _judgments(engine, "c")[0] == 3 * job.result["calls"] == 3 * calls
    assert not jobs.cancel(engine, job.id)  # nothing left to cancel


def test_a_job_that_ends_while_its_row_is_read_is_not_called_stale(sqlite_url, monkeypatch):
    """The race behind a flaky 'stale' on the Judges page under load: the page reads the job
    row while it runs, the job then commits 'done' and leaves this process's active set, and
    only then the view is computed. The active set is snapshotted *before* the read."""
    from db.repo import jobs as repo

    engine = get_engine(sqlite_url)
    job_id = jobs.claim(engine, kind="judge", lock_key="judge:race", params={})
    real_recent = repo.recent

    def recent_then_finish(s, **kw):  # the job ends right after its 'running' row was read
        rows = real_recent(s, **kw)
        with jobs._ACTIVE_LOCK:
            jobs._ACTIVE.discard(job_id)
        return rows

    monkeypatch.setattr(repo, "recent", recent_then_finish)
    [view] = jobs.recent(engine, kind="judge")
    assert view.status == "running" and view.state == "running" and not view.stale_reason
    # a running row of this process that nobody works on any more is stale
    monkeypatch.setattr(repo, "recent", real_recent)
    [view] = jobs.recent(engine, kind="judge")
    assert view.state == "stale" and "no longer working on it" in view.stale_reason
