"""Real-browser test: Debian's Chromium drives ``streamlit run app.py`` in password mode.

A lead signs in, opens the explorer and an example, and downloads an export; an annotator
adjudicates one item with the keyboard.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.e2e.harness import require_chromium

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PASSWORDS = {"lead1": ("lead", "lead-password-1"), "ann1": ("annotator", "annotator-password-1")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()  # skips locally, fails in CI
    from reform_core.services.data import ensure_demo
    from reform_core.services.uow import dispose_engines, get_engine
    from reform_core.services.users import create_user

    url = f"sqlite:///{tmp_path_factory.mktemp('e2e') / 'e2e.db'}"
    engine = get_engine(url)
    ensure_demo(engine)
    users = {name: create_user(engine, None, username=name, password=password, role=role)
             for name, (role, password) in PASSWORDS.items()}
    from reform_core.services.adjudication import create_plan

    create_plan(engine, users["lead1"], judge_a="gpt-judge", judge_b="gemini-judge", seed=1, name="e2e")
    dispose_engines()
    port = _free_port()
    env = {**os.environ, "REFORM_DATABASE_URL": url, "REFORM_AUTH_MODE": "password", "REFORM_LOAD_DEMO": "false",
           "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=1).status == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail("streamlit did not start within 30 s")
        time.sleep(0.3)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def page(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(accept_downloads=True, viewport={"width": 1600, "height": 1000})
        pg = context.new_page()
        pg.set_default_timeout(30_000)
        yield pg
        context.close()
        browser.close()


def _sign_in(page, server: str, username: str) -> None:
    from playwright.sync_api import expect

    page.goto(server)
    expect(page.get_by_role("heading", name="Sign in to ReForm")).to_be_visible()
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(PASSWORDS[username][1])
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text(f"Signed in as {username}")).to_be_visible()


def test_lead_explores_and_downloads_an_export(page, server):
    from playwright.sync_api import expect

    _sign_in(page, server, "lead1")
    # Explorer: client-side navigation keeps the signed-in session.
    page.get_by_role("link", name="Explore").click()
    expect(page.get_by_role("heading", name="Explore examples")).to_be_visible()
    expect(page.get_by_text("matching instances")).to_be_visible()
    page.wait_for_url("**/explore**")
    # Filtering writes a shareable link into the URL.
    page.get_by_test_id("stSelectbox").filter(has_text="Judges").click()
    page.get_by_role("option", name="disagree").click()
    page.wait_for_url("**f_agree=disagree**")
    expect(page.get_by_text("matching instances")).to_be_visible()

    page.get_by_role("link", name="Export").click()
    expect(page.get_by_role("heading", name="Export")).to_be_visible()
    page.get_by_role("button", name="Run export").click()
    download_button = page.get_by_role("button", name="Download export (zip)")
    expect(download_button).to_be_visible(timeout=60_000)
    with page.expect_download() as info:
        download_button.click()
    download = info.value
    assert download.suggested_filename.startswith("reform-export-stratified-")
    data = Path(download.path()).read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        assert set(zf.namelist()) == set(manifest["files"]) | {"manifest.json"}
        assert "instances.csv" in manifest["files"]


def test_annotator_sees_only_annotator_pages_and_adjudicates_with_keyboard(page, server):
    from playwright.sync_api import expect

    _sign_in(page, server, "ann1")
    expect(page.get_by_role("heading", name="ReForm demo")).to_be_visible()  # the overview
    for hidden in ("Scores", "Explore", "Export", "Users"):
        expect(page.get_by_role("link", name=hidden, exact=True)).to_have_count(0)
    nav = page

    nav.get_by_role("link", name="Adjudicate").click()
    expect(page.get_by_role("button", name="Judge A is better supported")).to_be_visible()
    page.keyboard.press("a")  # shortcut: side with the left judge (per the adjudication page's help)
    # the page confirms the stored decision (a persistent caption; a toast says "Saved" too)
    expect(page.get_by_text("your last decision is stored")).to_be_visible()
