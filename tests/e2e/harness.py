"""Shared pieces of the real-browser tests: Debian's Chromium and a ``streamlit run app.py``
server on a free loopback port.

Locally a missing Chromium skips the browser tests; in CI (``CI=true``, set by ``.ci/run``)
it fails them, so they can never be skipped silently there.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("REFORM_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def require_chromium() -> str:
    """The Chromium executable; skip (locally) or fail (CI) when it or Playwright is missing."""
    missing = None
    if not Path(CHROMIUM).exists():
        missing = f"{CHROMIUM} missing (apt-get install -y chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "playwright is not installed (pip install -r requirements.lock)"
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests cannot run in CI: {missing}")
        pytest.skip(missing)
    return CHROMIUM


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=1).status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"streamlit did not start within {timeout:.0f} s")
        time.sleep(0.3)


@contextmanager
def streamlit_app(env: dict[str, str], *args: str, port: int | None = None, host: str = "127.0.0.1") -> Iterator[str]:
    """Run ``streamlit run app.py [args]`` from the repository root; yield its base URL."""
    port = port or free_port()
    full_env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **env}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            *args,
        ],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://{host}:{port}"
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def browser_context(**kwargs):
    """A fresh Chromium context (its own cookie jar)."""
    from playwright.sync_api import expect, sync_playwright

    chromium = require_chromium()
    expect.set_options(timeout=30_000)  # a fresh process's first page opens the database
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=ARGS)
        context = browser.new_context(**{"viewport": {"width": 1400, "height": 1000}, **kwargs})
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()
            browser.close()
