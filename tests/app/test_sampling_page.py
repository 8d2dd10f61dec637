"""Sampling page (AppTest on the demo): the default design is the question-cluster plan of the
default estimator, sized by Cochran's margin or by a target half-width (the planner), and a
question-cluster plan shows the precision reached so far with the verdict (issue 13 item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(scope="module")
def sampling_app(demo_db):
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.switch_page("pages/sampling.py").run()
    assert not at.exception, at.exception
    return at


def _preview(at):
    next(b for b in at.button if "Preview" in str(b.label)).click().run()
    assert not at.exception, at.exception


def test_demo_plan_shows_precision_and_verdict(sampling_app):
    at = sampling_app
    plan = at.selectbox[-1]
    assert plan.format_func(plan.value) == "demo queue"
    assert any(m.value.startswith("**Precision so far** — target ±3 pp on TCPR") for m in at.markdown)
    verdict = [x.value for x in (*at.success, *at.warning) if x.value.startswith(("Precise enough", "Not yet"))]
    assert len(verdict) == 1
    prog = next(d.value for d in at.dataframe if "clusters_observed" in d.value.columns)
    assert (prog["clusters_observed"] > 0).all() and "tcpr half-width (pp)" in prog.columns


def test_default_design_preview_and_target_half_width(sampling_app):
    at = sampling_app
    assert at.radio(key="plan_design").value == "Question-cluster (default estimator)"
    _preview(at)
    sizes = next(d.value for d in at.dataframe if "audit_tasks" in d.value.columns)
    assert (sizes["audit_tasks"] > 0).all() and (sizes["audit_pi"] == 0.3).all()  # the default mean audit share
    assert any("target ±3 pp on TCPR" in c.value for c in at.caption)
    # sized by Cochran's margin: its inputs, and no target half-width input (issue 34)
    labels = {n.label for n in at.number_input}
    assert {"Confidence", "Margin of error e", "Audit share of agreements"} <= labels
    assert "Target half-width (pp)" not in labels
    at.radio(key="plan_size_by").set_value("Target half-width").run()
    labels = {n.label for n in at.number_input}
    assert "Target half-width (pp)" in labels and not {"Confidence", "Margin of error e"} & labels
    at.number_input(key="plan_target").set_value(12.0)
    _preview(at)
    sizes = next(d.value for d in at.dataframe if "audit_tasks" in d.value.columns)
    assert "predicted_half_width" in sizes.columns
    reachable = sizes["reachable"].map(lambda v: v in (True, "yes"))  # flags are shown as yes / no
    assert ((sizes["predicted_half_width"].astype(float) <= 12.0) | ~reachable).all()
    assert any("target ±12 pp on TCPR" in c.value for c in at.caption)
    at.radio(key="plan_design").set_value("Stratified (paper, Cochran/FPC)").run()
    _preview(at)
    assert any(d.value.columns.tolist()[:4] == ["model", "disagreements", "planned", "strata"] for d in at.dataframe)
