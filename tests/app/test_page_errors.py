"""Issue 34 item 7: an unexpected error on a page shows a short message with an error id, never
a traceback; the server log carries the traceback under the same id."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from reform_core.config import get_settings

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def shown_errors(monkeypatch, demo_db):
    """The app as deployed: page errors reported, not raised (the suite raises them)."""
    monkeypatch.setenv("REFORM_RAISE_PAGE_ERRORS", "false")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_a_failing_page_shows_an_error_id_and_logs_the_traceback(shown_errors, monkeypatch, caplog):
    import reform_core.services.project.overview as overview

    def broken(*args, **kwargs):
        raise RuntimeError("the overview's query broke: secret-internal-detail")

    monkeypatch.setattr(overview, "data_part", broken)
    with caplog.at_level(logging.ERROR, logger="reform.pages"):
        at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, "no traceback element on the page"
    messages = [e.value for e in at.error]
    assert len(messages) == 1
    found = re.search(r"error id ([0-9a-f]{10})", messages[0])
    assert found, messages
    assert "secret-internal-detail" not in messages[0] and "Traceback" not in messages[0]
    assert any("Local single-user mode" in c.value for c in at.caption), "the rest of the app (sidebar) still renders"
    records = [r for r in caplog.records if found.group(1) in r.getMessage()]
    assert len(records) == 1 and records[0].exc_info is not None
    trace = logging.Formatter().formatException(records[0].exc_info)
    assert "secret-internal-detail" in trace and "Traceback" in trace


def test_control_flow_passes_through(shown_errors):
    """st.stop / st.rerun are not errors: a page that stops early shows no error id."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/explore.py").run()  # stops early until a row is selected
    assert not at.exception and not [e.value for e in at.error if "error id" in e.value]


def test_a_fragment_is_guarded(shown_errors, caplog):
    """A fragment reruns on its own, outside the page: its body is wrapped as well."""
    script = """
import streamlit as st
from pages.components import errors

@st.fragment
@errors.guard
def part():
    raise ValueError("fragment broke")

part()
st.write("after the fragment")
"""
    at = AppTest.from_string(script, default_timeout=30)
    with caplog.at_level(logging.ERROR, logger="reform.pages"):
        at.run()
    assert not at.exception
    assert any("error id" in e.value for e in at.error)
    assert any("after the fragment" in m.value for m in at.markdown)
    assert any(
        "fragment broke" in logging.Formatter().formatException(r.exc_info) for r in caplog.records if r.exc_info
    )
