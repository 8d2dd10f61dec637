"""Secrets never persisted (issue 9): a canary API key must appear nowhere.

The real CLI runs in subprocesses with ``OPENAI_API_KEY`` / ``GOOGLE_API_KEY`` set to a
unique canary, against the loopback fake provider scripted to answer 401, 400 and 500
errors whose bodies echo the request's credentials (as a careless proxy would), plus
malformed answers. Then the project is exported (``export``, ``export-bundle``) and
backed up. The canary (and its distinctive random part) must not occur in the bytes of
the SQLite files (main, WAL, SHM), the exports, the backup, or any captured stdout /
stderr, including the provider SDK's own debug log (``OPENAI_LOG=debug``). A positive
control proves the fake server really saw the key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 180


def _run(args: list[str], env: dict) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [sys.executable, "-m", "reform_core", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    return r


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_canary_key_appears_nowhere(tmp_path, server):
    rnd = uuid.uuid4().hex
    canary = f"sk-canary-{rnd}"
    gcanary = f"AIza-canary-{rnd[::-1]}"
    work = tmp_path / "work"
    work.mkdir()
    db = f"sqlite:///{work / 'reform.db'}"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")}
    env.update(
        PYTHONPATH=str(ROOT),
        OPENAI_API_KEY=canary,
        GOOGLE_API_KEY=gcanary,
        OPENAI_LOG="debug",
        REFORM_DATA_DIR=str(work),
    )
    outputs: list[str] = []

    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
        r = _run(list(args), env)
        outputs.extend([r.stdout, r.stderr])
        if ok:
            assert r.returncode == 0, f"{args}: {r.stderr[-2000:]}"
        return r

    run("demo", "--db", db, "--json")
    # every error class whose body echoes the credentials, then malformed output, then normal answers
    server.push("401echo", "400echo", "500echo", "403echo", "malformed", "malformed", "malformed")
    r = run(
        "judge",
        "--db",
        db,
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--name",
        "leaky-openai",
        "--base-url",
        server.url + "/v1",
        "--concurrency",
        "1",
        "--limit",
        "5",
        "--json",
    )
    out = json.loads(r.stdout)
    assert out["calls"] == 5 and out["errors"] > 0, out
    server.push("401echo", "400echo", "malformed")
    r = run(
        "judge",
        "--db",
        db,
        "--provider",
        "gemini",
        "--model",
        "gemini-2.0-flash",
        "--name",
        "leaky-gemini",
        "--base-url",
        server.url,
        "--concurrency",
        "1",
        "--limit",
        "3",
        "--json",
    )
    assert json.loads(r.stdout)["errors"] > 0

    # positive control: the key really went over the wire, and errors were stored
    sent = {
        v for c in server.calls for k, v in c["headers"].items() if k.lower() in ("authorization", "x-goog-api-key")
    }
    assert f"Bearer {canary}" in sent and gcanary in sent, sent
    run("status", "--db", db, "--json")
    run("export", "--db", db, "--out", str(tmp_path / "export"))
    run("export-bundle", "--db", db, "--out", str(tmp_path / "bundle"))
    run("backup", "--db", db, "--out", str(tmp_path / "backup" / "reform.bak"))
    run(
        "judge",
        "--db",
        db,
        "--provider",
        "openai",
        "--model",
        "other-model",
        "--name",
        "leaky-openai",
        "--base-url",
        server.url + "/v1",
        ok=False,
    )  # a failing command's error path too

    import sqlite3

    con = sqlite3.connect(work / "reform.db")
    stored_errors = [r[0] for r in con.execute("SELECT error FROM judgment WHERE status = 'error'")]
    assert any("credentials" in e for e in stored_errors), "the echoing errors were not stored at all"
    job_params = [json.loads(r[0]) for r in con.execute("SELECT params FROM job WHERE kind = 'judge'")]
    assert len(job_params) == 2 and all(p["base_url"].startswith(server.url) for p in job_params)  # jobs recorded
    con.close()

    blobs = {
        "database files": _all_bytes(work),
        "export": _all_bytes(tmp_path / "export"),
        "bundle export": _all_bytes(tmp_path / "bundle"),
        "backup": _all_bytes(tmp_path / "backup"),
        "stdout/stderr": "\n".join(outputs).encode(),
    }
    assert blobs["export"] and blobs["bundle export"] and blobs["backup"]
    assert b"openai._base_client" in blobs["stdout/stderr"], "the SDK debug log was not captured"
    for where, data in blobs.items():
        for secret in (canary, gcanary, rnd, rnd[::-1]):
            assert secret.encode() not in data, f"secret {secret[:14]}… found in {where}"
