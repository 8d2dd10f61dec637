"""Explore page (AppTest on the demo project): filters, paging, shareable links, the example view."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from reform_core.services.project.explore import Filters

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _open(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.switch_page("pages/explore.py").run()
    assert not at.exception, at.exception
    return at


def plain(markdown: str) -> str:
    """What a Markdown string shows: backslash escapes resolved, word joiners dropped."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def _total(at: AppTest) -> int:
    label = at.number_input(key="explore_page").label  # "Page (of N; M matching instances)"
    return int(label.split(";")[1].split()[0].replace(",", ""))


def _sql_disagreements(url: str) -> int:
    """(response, constraint) pairs whose two judges' ok labels differ, counted in SQL."""
    from reform_core.services.platform.uow import get_engine

    with get_engine(url).connect() as conn:
        return conn.execute(
            text(
                "SELECT COUNT(*) FROM judgment a JOIN judgment b ON a.response_id = b.response_id "
                "AND a.constraint_id = b.constraint_id AND a.judge_id < b.judge_id "
                "WHERE a.status = 'ok' AND b.status = 'ok' AND a.label <> b.label"
            )
        ).scalar_one()


def test_filters_page_and_count(demo_db):
    at = _open()
    everything = _total(at)
    assert len(at.dataframe[0].value) == 50
    at.selectbox(key="explore_agree").set_value("disagree").run()
    assert _total(at) == _sql_disagreements(demo_db) < everything
    rows = at.dataframe[0].value
    assert (rows["label_a"] != rows["label_b"]).all()
    assert at.query_params["f_agree"] == "disagree"
    at.selectbox(key="explore_mode").set_value("forbid").run()
    rows = at.dataframe[0].value
    assert len(rows) and (rows["mode"] == "forbid").all()
    assert _total(at) < _sql_disagreements(demo_db)


def test_link_restores_filters_and_opens_the_example(demo_db):
    query = {
        **Filters(model="quill-2", opposed="opposed", p_max=0.5).to_params(),
        "model": "quill-2",
        "question": "q02",
        "instruction": "q02-v2",
    }
    at = _open(query)
    assert at.selectbox(key="explore_model").value == "quill-2"
    assert at.selectbox(key="explore_opposed").value == "opposed"
    assert at.slider(key="explore_p").value == (0.0, 0.5)
    rows = at.dataframe[0].value
    assert (rows["model"] == "quill-2").all() and (rows["baseline_opposed"] == "yes").all() and (rows["p"] <= 0.5).all()
    assert any("q02" in plain(s.value) and "quill-2" in plain(s.value) for s in at.subheader)
    titles = [plain(m.value) for m in at.markdown if m.value.startswith("**")]
    assert titles[0].startswith("**baseline")
    assert titles[1].startswith("**⭐ q02-v2"), "the linked variant comes first"
    lines = [ln for m in at.markdown for ln in m.value.split("  \n") if "-badge[p = " in ln]
    assert lines, "per-constraint p_u badges"
    agreed = [ln for ln in lines if ln.count(": pass") == 2]
    assert agreed and all("p = 1.00" in ln for ln in agreed), (
        "two agreeing passes give p_u = 1 (docs/metrics.md#stratified-calibration)"
    )
    failed = [ln for ln in lines if ln.count(": fail") == 2]
    assert all("p = 0.00" in ln for ln in failed)
    at.toggle(key="explore_raw").set_value(True).run()
    assert at.code, "raw view shows the text with line numbers"


def test_bad_link_shows_an_error_not_a_crash(demo_db):
    at = _open({"f_p_min": "abc"})
    assert any("p_min" in plain(e.value) for e in at.error)
    assert _total(at) > 0


def test_unknown_question_in_link(demo_db):
    at = _open({"model": "quill-2", "question": "nope"})
    assert any("nope" in plain(e.value) for e in at.error)


def test_example_view_shows_no_stray_none(demo_db):
    """Issue 15 item 17: a bare ``None`` was written under every response panel (Streamlit's
    "magic" wrote the value of an expression statement)."""
    query = {"model": "quill-2", "question": "q02", "instruction": "q02-v2"}
    at = _open(query)
    assert len(at.get("html")) >= 3, "the example's responses were not shown"
    stray = [e.value for e in at.markdown if e.value.strip() in ("None", "`None`")]
    assert not stray, f"{len(stray)} stray None element(s) on the example view"
    for toggle in (True,):
        at.toggle(key="explore_raw").set_value(toggle).run()
        assert not [e.value for e in at.markdown if e.value.strip() in ("None", "`None`")]
