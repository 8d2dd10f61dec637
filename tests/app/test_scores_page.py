"""Scores page (AppTest on the demo project): Table 2 with intervals, raw vs calibrated,
provisional warning, the task × model heatmaps and failing units with explorer links."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from tests.app.shown import assert_rounded, bounds, places

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(scope="module")
def scores_app(demo_db):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/scores.py").run()
    assert not at.exception, at.exception
    return at


def _raw_tcpr(url: str, judge: str) -> dict[str, float]:
    """TCPR of one judge's raw labels straight from SQL: mean over (model, main instruction)
    of the product of its constraint labels (docs/metrics.md#tcpr), instructions with a missing label dropped."""
    from reform_core.services.platform.uow import get_engine

    sql = text(
        "SELECT m.name AS model, r.id AS rid, g.label FROM response r JOIN eval_model m ON m.id = r.model_id "
        "JOIN instruction i ON i.id = r.instruction_id JOIN constraint_item c ON c.instruction_id = i.id "
        "LEFT JOIN judgment g ON g.response_id = r.id AND g.constraint_id = c.id AND g.status = 'ok' "
        "AND g.judge_id = (SELECT id FROM judge WHERE name = :j) WHERE i.condition = 'main'"
    )
    with get_engine(url).connect() as conn:
        rows = conn.execute(sql, {"j": judge}).all()
    per: dict[tuple, list] = {}
    for model, rid, label in rows:
        per.setdefault((model, rid), []).append(label)
    out: dict[str, list] = {}
    for (model, _), labels in per.items():
        if all(v is not None for v in labels):
            out.setdefault(model, []).append(float(np.prod(labels)))
    return {m: 100 * float(np.mean(v)) for m, v in out.items()}


def test_table2_has_intervals_and_counts(scores_app):
    """Table 2: rates, measurement intervals, denominators; the table below it: the same rates
    with their population intervals (21 columns would not fit the page)."""
    t2, pop = scores_app.dataframe[0].value, scores_app.dataframe[1].value
    for metric in ("TCPR", "EMCR", "R1", "R2", "R3"):
        assert f"{metric} measurement" in t2.columns and f"{metric} population" in pop.columns
        # the same rate in both tables, each rounded to what its own interval supports
        for a, b, ia, ib in zip(t2[metric], pop[metric], t2[f"{metric} measurement"], pop[f"{metric} population"]):
            assert abs(a - b) <= 0.5 * (10 ** -places(ia) + 10 ** -places(ib)) + 1e-6
    assert {"instructions", "units", "n1", "n2", "n3"} <= set(t2.columns)
    assert (t2["units"] == t2["n1"] + t2["n2"] + t2["n3"]).all()
    r3 = t2.set_index("model")
    assert all(
        r3.loc[m, "R3 measurement"] == f"too few units (n = {r3.loc[m, 'n3']})"
        for m in r3.index
        if r3.loc[m, "n3"] < 10
    ), "fewer than 10 units: too few, never a bare 0–100"
    for table in (t2, pop):
        for _, r in table.iterrows():
            for kind in ("measurement", "population"):
                if f"TCPR {kind}" in table.columns:
                    lo, hi = bounds(r[f"TCPR {kind}"])
                    assert lo <= r["TCPR"] <= hi


def test_default_estimator_shows_intervals_verdict_audit_and_annotators(scores_app, demo_db):
    """Issue 13 'Done when': on first start the demo's Scores page shows the default estimator,
    both intervals with one sentence each, the planner's verdict, the audit's both-wrong rate per
    model and (to the lead) each annotator's estimated accuracy — the same numbers as the CLI."""
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.platform.uow import get_engine
    from reform_core.services.scoring.scoring import score, score_json

    at = scores_app
    assert at.radio(key="scores_labels").value.startswith("Default estimator")
    shown = [m.value.replace("\\", "") for m in at.markdown]  # names are Markdown-escaped
    assert any("question-cluster difference estimator" in m and "demo queue" in m for m in shown)
    captions = [c.value for c in at.caption]
    assert any(c.startswith("**Measurement** — the score of this fixed benchmark") for c in captions)
    assert any(c.startswith("**Population** — adds the questions' own sampling") for c in captions)
    verdicts = [x.value for x in (*at.success, *at.warning) if x.value.startswith("Planner's verdict — ")]
    assert len(verdicts) == 1 and ("Precise enough" in verdicts[0] or "Not yet" in verdicts[0])
    frames = [d.value for d in at.dataframe]
    bw = next(f for f in frames if "both wrong %" in f.columns)
    acc = next(f for f in frames if "accuracy" in f.columns and "annotator" in f.columns)
    eng = get_engine(demo_db)
    cli = score_json(score(eng, local_principal(eng)))
    assert set(bw["model"]) == set(cli["models"]) and (bw["audited"] > 0).all()
    for r in bw.itertuples(index=False):
        assert_rounded(r[3], max(cli["models"][r.model]["both_wrong"]["rate"], 0), r[4])
    assert set(acc["annotator"]) == {a["annotator"] for a in cli["annotators"]} == {"alice", "bob", "carol"}
    t2 = frames[0].set_index("model")
    for m, r in cli["models"].items():
        assert_rounded(t2.loc[m, "TCPR"], r["tcpr"], t2.loc[m, "TCPR measurement"])


def test_provisional_warning_only_when_strata_lack_reviews(scores_app):
    scores_app.radio(key="scores_labels").set_value("Paper — stratified (the paper's main results)").run()
    assert any("Provisional" in w.value for w in scores_app.warning), "demo has strata without review"
    assert not any("both wrong %" in d.value.columns for d in scores_app.dataframe), "no audit table for a paper rule"
    scores_app.radio(key="scores_labels").set_value("Paper — pooled (auxiliary)").run()
    assert not scores_app.exception
    assert not any("Provisional" in w.value for w in scores_app.warning)
    scores_app.radio(key="scores_labels").set_value(scores_app.radio(key="scores_labels").options[0]).run()


def test_raw_judge_toggle_matches_sql(scores_app, demo_db):
    options = scores_app.radio(key="scores_labels").options
    raw = [o for o in options if o.startswith("Raw — judge ")]
    assert len(raw) == 2
    judge = re.sub(r"\\(.)", r"\1", raw[1].removeprefix("Raw — judge "))  # the label is Markdown-escaped
    scores_app.radio(key="scores_labels").set_value(raw[1]).run()
    assert not scores_app.exception
    t2 = scores_app.dataframe[0].value.set_index("model")
    expected = _raw_tcpr(demo_db, judge)
    assert set(expected) == set(t2.index)
    for model, value in expected.items():
        assert_rounded(t2.loc[model, "TCPR"], value, t2.loc[model, "TCPR measurement"])
    scores_app.radio(key="scores_labels").set_value(options[0]).run()


def test_heatmaps_share_the_0_100_scale(scores_app):
    charts = [c for c in scores_app.get("vega_lite_chart") if str(c.key).startswith("scores_heat_")]
    assert len(charts) == 2
    for chart in charts:
        spec = json.loads(chart.proto.spec)
        assert '"domain": [0, 100]' in json.dumps(spec), "shared 0–100 colour scale"
        assert "text" in json.dumps(spec), "values printed in the cells"


def test_failing_units_link_to_the_explorer(scores_app, demo_db):
    at = scores_app
    at.selectbox(key="scores_cell_model").set_value("pixel-mini").run()
    for task in at.selectbox(key="scores_cell_task").options:
        at.selectbox(key="scores_cell_task").set_value(task).run()
        if any("j_hat" in d.value.columns for d in at.dataframe):
            break
    units = next(d.value for d in at.dataframe if "j_hat" in d.value.columns)
    assert (units["j_hat"] < 100).all() and (units["j_hat"] >= 0).all()
    assert units["j_hat"].is_monotonic_increasing
    assert set(units["k"]) <= {1, 2, 3}
    from reform_core.services.platform.uow import get_engine

    with get_engine(demo_db).connect() as conn:
        questions = {r[0] for r in conn.execute(text("SELECT key FROM question WHERE task_type = :t"), {"t": task})}
    assert set(units["question"]) <= questions
    link = parse_qs(urlparse(units["open"].iloc[0]).query)
    assert urlparse(units["open"].iloc[0]).path == "explore"
    assert link["model"] == ["pixel-mini"] and link["f_model"] == ["pixel-mini"]
    assert link["question"] == [units["question"].iloc[0]]


def test_composition_tab_when_single_conditions_exist(scores_app):
    labels = [t.label for t in scores_app.tabs]
    assert {"Table 3 composition", "Prompting comparison", "A4 coverage", "Table 4 frequencies"} <= set(labels)
    assert any(
        "has no" in i.value and "prompted" in i.value for i in scores_app.info
    )  # the demo has no prompted condition
