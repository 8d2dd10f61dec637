"""Issue 17: the Scores page on a project broken along every failure route (incomplete
group, missing prompted version, feature mismatch, judge error) renders every tab, says
what each analysis left out and why, and offers the list as a download."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import app_database
from tests.app.shown import bounds, places
from tests.integration.analyses_project import write_broken_project

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TABS = {
    "A8 eligible units",
    "A2 violation spread",
    "A3 judge agreement",
    "A5 tasks",
    "A6/A7 per task",
    "Table 3 composition",
    "Prompting comparison",
    "A4 coverage",
    "Table 4 frequencies",
}


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


def test_every_analysis_has_its_plot_and_readable_table(broken_app):
    """Issue 34 item 4: Table 3, prompting, A4 coverage and Table 4 each come with an altair chart
    (Table 4: ρ and the frequencies), their tables have readable headers (no raw column names such
    as ``separate_pop_low``), points are rounded to their intervals and p-values read ``< 1e-4``."""
    import json

    at = broken_app
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    text = json.dumps(specs)
    # the axis titles of Table 3, prompting, A4, ρ and the frequencies
    for title in (
        "pass rate %",
        "prompted − main (pp)",
        "coverage %",
        "Spearman ρ (95 % interval, Fisher z)",
        "% of questions",
    ):
        assert json.dumps(title)[1:-1] in text, title
    assert len(specs) == 2 + 5, "two heatmaps plus one chart per analysis (Table 4: two)"
    frames = [d.value for d in at.dataframe]
    raw = [
        c for f in frames for c in f.columns if str(c).endswith(("_low", "_high", "_pop", "_meas")) or c == "delta_pp"
    ]
    assert raw == [], raw
    t3 = next(f for f in frames if "separate %" in f.columns)
    assert {"separate pop.", "separate meas.", "joint %", "joint pop.", "joint meas.", "Δ pp", "Δ pop."} <= set(
        t3.columns
    )
    for v, iv in zip(t3["separate %"], t3["separate pop."]):
        if not iv.startswith("too "):
            assert round(v, places(iv)) == v
    rho = next(f for f in frames if "ρ" in f.columns)
    assert rho["p"].tolist() and all(p == "< 1e-4" or float(p) >= 1e-4 for p in rho["p"])
    for r, iv in zip(rho["ρ"], rho["ρ 95% CI (Fisher z)"]):
        lo, hi = bounds(iv)
        assert lo <= r <= hi, "ρ's interval contains its estimate"


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
    import reform_core.services.scoring.analyses as svc

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

    from reform_core.services.data.importer import import_bundle
    from reform_core.services.platform.uow import get_engine

    url = f"sqlite:///{tmp_path / 'app.db'}"
    write_broken_project(url)
    with app_database(url, load_demo=False):
        at = AppTest.from_file(APP, default_timeout=180).run()
        at.switch_page("pages/scores.py").run()
        before = [d.value for d in at.dataframe if "coverage %" in d.value.columns][0]
        pooled = before.set_index("model").loc["Pooled", "extracted"]
        b = tmp_path / "more"
        b.mkdir()
        (b / "questions.jsonl").write_text("")
        (b / "extractions.jsonl").write_text(
            _json.dumps({"model": "model-01", "question": "q0001", "label": "new thing", "match": "uncovered"}) + "\n"
        )
        import_bundle(get_engine(url), b)
        at.run()
        after = [d.value for d in at.dataframe if "coverage %" in d.value.columns][0]
    assert after.set_index("model").loc["Pooled", "extracted"] == pooled + 1
