"""Judging service end to end: kill -9 and resume, secrets never leak, the CLI, rules,
replay and baseline annotation."""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import typer
from fake_servers import seed_project
from sqlalchemy import text
from sqlmodel import Session
from typer.testing import CliRunner

from db.models import CatalogFeature
from reform_core.commands import judging as judging_commands
from reform_core.judges.retry import RetryPolicy
from reform_core.services.judging import judging as svc
from reform_core.services.platform.uow import get_engine
from reform_core.verifiers.base import CheckResult, register

ROOT = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path}/t.db"
    e = get_engine(url)
    yield url, e
    e.dispose()


def _q(engine, sql):
    with engine.connect() as c:
        return [tuple(r) for r in c.execute(text(sql))]


CHILD = """
import sys
from reform_core.services.judging.judging import run_judge
from reform_core.services.platform.uow import get_engine
run_judge(get_engine(sys.argv[1]), provider="openai", model="gpt-4o-mini", name="g",
          base_url=sys.argv[2], concurrency=4, commit_every=1)
"""


def test_killed_run_resumes_without_repeating_or_duplicating(db, server):
    url, engine = db
    seed_project(engine, responses=40)
    server.delay = 0.15
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test-resume"}
    child = subprocess.Popen([sys.executable, "-c", CHILD, url, server.url + "/v1"], env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while len(server.calls) < 16 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert child.poll() is None, "the run finished before it could be killed"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    time.sleep(0.3)  # let in-flight server threads finish
    done = {r[0] for r in _q(engine, "select distinct response_id from judgment where status='ok'")}
    n_rows = _q(engine, "select count(*) from judgment")[0][0]
    assert 0 < len(done) < 40 and n_rows == 3 * len(done)  # whole items committed, nothing partial
    done_markers = {f"RESP-{rid}" for rid in done}  # seed: response n has id n and marker RESP-n
    first_calls = len(server.calls)

    server.delay = 0.0
    out = svc.run_judge(
        engine,
        provider="openai",
        model="gpt-4o-mini",
        name="g",
        base_url=server.url + "/v1",
        api_key="sk-test-resume",
        concurrency=4,
    )
    second = [c["marker"] for c in server.calls[first_calls:]]
    assert not done_markers & set(second)  # finished work is never called again
    assert len(second) == len(set(second)) == 40 - len(done) == out["calls"]
    assert _q(engine, "select count(*), count(distinct response_id || '-' || constraint_id) from judgment") == [
        (120, 120)
    ]
    assert _q(engine, "select count(*) from judgment where status != 'ok'") == [(0,)]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_api_key_never_leaks(db, server, caplog, capsys, monkeypatch, provider):
    url, engine = db
    canary = f"sk-test-CANARY-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY" if provider == "openai" else "GOOGLE_API_KEY", canary)
    seed_project(engine, responses=4)
    server.push("400echo", "malformed", "malformed")
    caplog.set_level(logging.DEBUG)
    app = typer.Typer()
    judging_commands.register(app)
    base = server.url + "/v1" if provider == "openai" else server.url
    res = CliRunner().invoke(
        app,
        [
            "judge",
            "--db",
            url,
            "--provider",
            provider,
            "--model",
            "m",
            "--name",
            "leaky",
            "--base-url",
            base,
            "--concurrency",
            "1",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"calls": 4, "written": 12, "errors": 6, "labels": 6, "abstentions": 0}
    header = "authorization" if provider == "openai" else "x-goog-api-key"
    seen_keys = {v for c in server.calls for k, v in c["headers"].items() if k.lower() == header}
    assert seen_keys == {f"Bearer {canary}" if provider == "openai" else canary}  # the key was really used...
    errors = [r[0] for r in _q(engine, "select error from judgment where status='error'")]
    assert any("fake error 400 for credentials" in e and "***" in e for e in errors)  # ...and redacted
    engine.dispose()
    blobs = b"".join(p.read_bytes() for p in Path(url[len("sqlite:///") :]).parent.iterdir())
    assert canary.encode() not in blobs
    captured = capsys.readouterr()
    for where in (res.output, captured.out, captured.err, caplog.text, "\n".join(errors)):
        assert canary not in where


def test_cli_judge_rules_and_errors(db):
    url, engine = db
    seed_project(engine, responses=2)
    app = typer.Typer()
    judging_commands.register(app)
    runner = CliRunner()
    res = runner.invoke(app, ["judge", "--db", url, "--provider", "rules", "--json"])
    assert res.exit_code == 0
    assert json.loads(res.output) == {"calls": 2, "written": 6, "errors": 0, "labels": 0, "abstentions": 6}
    res = runner.invoke(app, ["judge", "--db", url, "--provider", "openai", "--json"])
    assert res.exit_code != 0 and "model" in res.output
    res = runner.invoke(app, ["judge-batch", "explode", "--db", url])
    assert res.exit_code != 0 and "submit, poll or ingest" in res.output
    res = runner.invoke(app, ["judge-prompt", "--db", url])
    assert res.exit_code == 0 and "prompt version reform-judge-v1" in res.output and "RESP-1" in res.output


def test_missing_key_is_a_clear_error(db, monkeypatch):
    _, engine = db
    for k in ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(svc, "get_settings", lambda: type("S", (), {"openai_api_key": None, "google_api_key": None})())
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        svc.run_judge(engine, provider="openai", model="m")
    with pytest.raises(ValueError, match="provider"):
        svc.run_judge(engine, provider="claude", model="m")


def test_judge_name_cannot_switch_model(db, server):
    _, engine = db
    seed_project(engine, responses=1)
    kw = dict(provider="openai", name="j", base_url=server.url + "/v1", api_key="k")
    svc.run_judge(engine, model="gpt-4o", **kw)
    with pytest.raises(ValueError, match="exists with provider='openai', model='gpt-4o'"):
        svc.run_judge(engine, model="gpt-4.1", **kw)


def test_replay_copies_an_imported_judge(db, server):
    _, engine = db
    seed_project(engine, responses=3)
    server.labeler = lambda ids, prompt: {i: int(i != "c2") for i in ids}
    svc.run_judge(engine, provider="openai", model="gpt-4o", name="src", base_url=server.url + "/v1", api_key="k")
    out = svc.run_judge(engine, provider="replay", source="src", name="copy")
    assert (out["calls"], out["written"], out["errors"]) == (3, 9, 0)
    src = _q(
        engine,
        "select response_id, constraint_id, label from judgment j join judge g on g.id=j.judge_id "
        "where g.name='src' order by 1, 2",
    )
    cp = _q(
        engine,
        "select response_id, constraint_id, label from judgment j join judge g on g.id=j.judge_id "
        "where g.name='copy' order by 1, 2",
    )
    assert src == cp and sorted({r[2] for r in cp}) == [0, 1]


def test_cancel_and_limit(db, server):
    _, engine = db
    seed_project(engine, responses=30)
    server.delay = 0.05
    cancel = threading.Event()

    def progress(done, total):
        if done >= 3:
            cancel.set()

    out = svc.run_judge(
        engine,
        provider="openai",
        model="gpt-4o",
        name="c",
        base_url=server.url + "/v1",
        api_key="k",
        concurrency=2,
        progress=progress,
        cancel=cancel,
    )
    assert out["cancelled"] and 3 <= out["calls"] < 30
    assert _q(engine, "select count(*) from judgment")[0][0] == 3 * out["calls"]
    out2 = svc.run_judge(
        engine, provider="openai", model="gpt-4o", name="c", base_url=server.url + "/v1", api_key="k", limit=5
    )
    assert out2["calls"] == 5


@register("feature:tjs_bullets")
def _bullets(text: str) -> CheckResult:
    return CheckResult("- " in text, evidence="dash list")


def test_annotate_baseline_rules_then_llm(db, server):
    _, engine = db
    seed = seed_project(engine, responses=3, baseline=3)
    with Session(engine) as s:
        s.add(CatalogFeature(catalog="t", key="tjs_bullets", name="Bullets", category="lists", definition="dash list"))
        s.add(
            CatalogFeature(
                catalog="t", key="tjs_tone", name="Formal tone", category="voice", definition="formal register"
            )
        )
        s.commit()
    server.labeler = lambda ids, prompt: {i: 1 for i in ids}
    out = svc.annotate_baseline(
        engine, provider="openai", model="gpt-4o", base_url=server.url + "/v1", api_key="k", catalog="t", retry=FAST
    )
    assert out == {"responses": 3, "written": 6, "rule": 3, "llm": 3, "errors": 0}
    rows = _q(engine, "select response_id, feature, present, source from baseline_feature order by 1, 2")
    assert {(r[1], r[3]) for r in rows} == {("tjs_bullets", "rule"), ("tjs_tone", "llm")}
    assert {r[0] for r in rows} == set(seed["baseline"])
    assert all(r[2] == 0 for r in rows if r[1] == "tjs_bullets")  # baseline texts have no dash list
    body = json.dumps(server.calls[0]["body"])
    assert "Formal tone" in body and "Bullets" not in body  # the LLM sees only what rules cannot decide
    again = svc.annotate_baseline(
        engine, provider="openai", model="gpt-4o", base_url=server.url + "/v1", api_key="k", catalog="t"
    )
    assert again["written"] == 0 and len(server.calls) == 3
