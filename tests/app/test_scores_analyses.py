"""Issue 17: the Scores page on a project broken along every failure route (incomplete
group, missing prompted version, feature mismatch, judge error) renders every tab, says
what each analysis left out and why, and offers the list as a download."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import app_database
from tests.integration.analyses_project import write_broken_project

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TABS = {"A8 eligible units", "A2 violation spread", "A3 judge agreement", "A5 tasks", "A6/A7 per task",
        "Table 3 composition", "Prompting comparison", "A4 coverage", "Table 4 frequencies"}


@pytest.fixture(scope="module")
def broken_app(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('broken_app') / 'app.db'}"
    write_broken_project(url)
    with app_database(url, load_demo=False):
        at = AppTest.from_file(APP, default_timeout=180).run()
        at.switch_page("pages/scores.py").run()
        yield at


def test_every_tab_renders_on_the_broken_project(broken_app):
    at = broken_app
    assert not at.exception, at.exception
    assert TABS <= {t.label for t in at.tabs}
    warnings = [w.value for w in at.warning]
    assert not [w for w in warnings if "not available" in w], warnings
    infos = " ".join(i.value for i in at.info)
    for reason in ("incomplete group", "feature mismatch", "judge error", "missing prompted version"):
        assert reason.replace(" ", "") in infos.replace("\\", "").replace(" ", ""), reason
    labels = [b.label for b in at.get("download_button")]
    assert "Download the list of left-out groups (CSV)" in labels
    frames = {len(d.value) for d in at.dataframe}
    assert 0 not in frames


def test_stratified_rule_and_raw_labels_render(broken_app):
    at = broken_app
    at.radio(key="scores_aux_rule").set_value("stratified").run()
    assert not at.exception, at.exception
    assert any("per condition" in c.value for c in at.caption)
    raw = [o for o in at.radio(key="scores_labels").options if o.startswith("Raw")][0]
    at.radio(key="scores_labels").set_value(raw).run()
    assert not at.exception, at.exception
    assert TABS <= {t.label for t in at.tabs}


def test_one_failing_analysis_does_not_take_the_others_down(tmp_path, monkeypatch):
    import reform_core.services.analyses as svc

    def boom(*a, **k):
        raise RuntimeError("composition engine broke")

    monkeypatch.setattr(svc, "composition_table", boom)
    url = f"sqlite:///{tmp_path / 'app.db'}"
    write_broken_project(url)
    with app_database(url, load_demo=False):
        at = AppTest.from_file(APP, default_timeout=180).run()
        at.switch_page("pages/scores.py").run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any("composition engine broke" in w.replace("\\", "") for w in warnings), warnings
    assert len([w for w in warnings if "available" in w]) == 1  # only Table 3; prompting, A4, Table 4 still render
    assert TABS <= {t.label for t in at.tabs}


def test_new_extractions_reach_the_coverage_tab(tmp_path):
    """The analyses' cache key includes their own inputs: extractions imported after a first
    visit show up in Table A4 without any scored change."""
    import json as _json

    from reform_core.services.importer import import_bundle
    from reform_core.services.uow import get_engine

    url = f"sqlite:///{tmp_path / 'app.db'}"
    write_broken_project(url)
    with app_database(url, load_demo=False):
        at = AppTest.from_file(APP, default_timeout=180).run()
        at.switch_page("pages/scores.py").run()
        before = [d.value for d in at.dataframe if "coverage" in d.value.columns][0]
        pooled = before.set_index("model").loc["Pooled", "extracted"]
        b = tmp_path / "more"
        b.mkdir()
        (b / "questions.jsonl").write_text("")
        (b / "extractions.jsonl").write_text(_json.dumps({"model": "model-01", "question": "q0001", "label": "new thing",
                                                          "match": "uncovered"}) + "\n")
        import_bundle(get_engine(url), b)
        at.run()
        after = [d.value for d in at.dataframe if "coverage" in d.value.columns][0]
    assert after.set_index("model").loc["Pooled", "extracted"] == pooled + 1
