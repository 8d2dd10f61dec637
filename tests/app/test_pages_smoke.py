"""Every registered page renders on the demo project without an exception (AppTest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages.components.nav import PAGES

APP = str(Path(__file__).resolve().parents[2] / "app.py")

TIMEOUT = 60


def test_app_entry_renders_overview(demo_db):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    assert any("Local single-user mode" in c.value for c in at.caption)
    assert at.metric, "the overview shows the project counts"
    questions = next(m for m in at.metric if m.label == "Questions")
    assert int(questions.value.replace(",", "")) >= 12


@pytest.mark.parametrize("spec", PAGES, ids=[p.path for p in PAGES])
def test_page_renders(demo_db, spec):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(spec.path).run()
    assert not at.exception, f"{spec.path}: {at.exception}"
    assert not at.error, f"{spec.path}: {[e.value for e in at.error]}"
