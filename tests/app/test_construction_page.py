"""The Construction page (AppTest): no page input can send a provider key to a host a lead
did not configure (issue 15 item 1; the Judges page's twin is in test_judges_page.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from reform_core.config import get_settings
from reform_core.services.judging import judging
from tests.integration.fake_servers import FakeServer

APP = str(Path(__file__).resolve().parents[2] / "app.py")
CANARY = f"sk-canary-{uuid.uuid4().hex}"
GCANARY = f"AIza-canary-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def servers():
    allowed, attacker = FakeServer().start(), FakeServer().start()
    yield allowed, attacker
    allowed.stop()
    attacker.stop()


@pytest.fixture(scope="module")
def page_env(demo_db, servers):
    """Configured endpoints on the allowed loopback server; the SDKs' default base URLs point
    there too, so the "official API" choice never leaves the machine in tests."""
    allowed, _ = servers
    mp = pytest.MonkeyPatch()
    mp.setenv(
        "REFORM_JUDGE_ENDPOINTS",
        json.dumps(
            {
                "lab": {"provider": "openai", "base_url": allowed.url + "/v1"},
                "lab-gemini": {"provider": "gemini", "base_url": allowed.url},
            }
        ),
    )
    mp.setenv("OPENAI_API_KEY", CANARY)
    mp.setenv("GOOGLE_API_KEY", GCANARY)
    mp.setenv("OPENAI_BASE_URL", allowed.url + "/v1")
    mp.setenv("GOOGLE_GEMINI_BASE_URL", allowed.url)
    get_settings.cache_clear()
    yield demo_db
    mp.undo()
    get_settings.cache_clear()


def _widget(seq, label):
    return next(w for w in seq if w.label == label)


def test_no_construction_input_sends_the_key_to_another_host(page_env, servers):
    """The Collect tab had a "Base URL" box: anyone reaching the app could point response
    collection at their own server and receive the key. Every text input is set to the
    attacker's URL under every provider and endpoint choice and a collection is launched:
    the attacker's server sees nothing, the configured server sees every call (with the key)."""
    allowed, attacker = servers
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/construction.py").run()
    assert not at.exception, at.exception
    assert not [w.label for w in [*at.text_input, *at.text_area] if "url" in w.label.lower()]
    hostile = attacker.url + "/v1"
    launched = 0
    for provider in ("openai", "gemini"):
        _widget(at.selectbox, "Provider").set_value(provider)
        at.run()
        options = _widget(at.selectbox, "Endpoint").options
        assert options[0] == judging.OFFICIAL
        assert set(options[1:]) == {"lab" if provider == "openai" else "lab-gemini"}
        for endpoint in options:
            for w in [*at.text_input, *at.text_area]:
                w.input(f"{hostile}-{provider}-{endpoint}")
            _widget(at.selectbox, "Endpoint").set_value(endpoint)
            _widget(at.multiselect, "Conditions").set_value(["baseline"])
            at.run()
            _widget(at.button, "Launch collection").click()
            at.run()
            assert not at.exception, at.exception
            assert any("responses written" in s.value for s in at.success), [e.value for e in at.error]
            launched += 1
    assert launched == 4
    assert attacker.requests == []
    sent = [{k.lower(): v for k, v in c["headers"].items()} for c in allowed.requests]
    assert sent, "nothing was collected"
    assert all(h.get("authorization") == f"Bearer {CANARY}" or h.get("x-goog-api-key") == GCANARY for h in sent)
