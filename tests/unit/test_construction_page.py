"""The construction page renders for a lead, estimates collection cost and generates prompt sets."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from reform_core.config import get_settings

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "construction.py")


def _reset():
    import streamlit as st

    from reform_core.services.platform.uow import dispose_engines

    get_settings.cache_clear()
    st.cache_resource.clear()
    st.cache_data.clear()
    dispose_engines()


@pytest.fixture()
def app_env(tmp_path, monkeypatch):
    monkeypatch.setenv("REFORM_DATABASE_URL", f"sqlite:///{tmp_path / 'page.db'}")
    monkeypatch.setenv("REFORM_LOAD_DEMO", "false")
    monkeypatch.setenv("REFORM_AUTH_MODE", "local")
    _reset()
    yield
    _reset()


def test_page_estimates_and_generates(app_env):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, at.exception
    at.text_input(key="con_model").input("m1").run()
    assert not at.exception, at.exception
    # an empty project: no questions, so nothing pending
    assert next(m for m in at.metric if m.label == "Calls pending").value == "0"
    at.number_input(key="mos_n").set_value(210).run()
    at.button(key="mos_gen").click().run()
    assert not at.exception, at.exception
    assert len(at.dataframe) >= 2
    at.text_area(key="wise_tasks").input("Name a planet.\nName a metal.").run()
    at.button(key="wise_gen").click().run()
    assert not at.exception, at.exception
    assert any("2 tasks × 6 forms × 3 repetitions" in m.value for m in at.markdown)
