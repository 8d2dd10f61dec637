"""The MOSAIC results page and the WISE section of Wording results on the demo (AppTest):
the demo's studies show content on first start, and the numbers shown are the services'
(issue 18)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from reform_core import display
from reform_core.services.accounts.users import local_principal
from reform_core.services.platform.uow import get_engine
from reform_core.services.studies import mosaic, wise
from tests.app.shown import assert_rounded

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 90


def _page(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def _frame(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_mosaic_page_shows_the_demo_study_with_intervals_and_drill_down(demo_db):
    at = _page("pages/mosaic_results.py")
    assert at.selectbox(key="mosaic_study").value == "demo-mosaic"
    eng = get_engine(demo_db)
    expected = mosaic.score(eng, local_principal(eng), study="demo-mosaic", n_boot=2000, seed=0)["models"]
    shown = _frame(at, "PA 95% CI").set_index("model")
    assert set(shown.index) == {"helix-pro", "quill-2", "pixel-mini"}
    for model, m in expected.items():
        lo, hi = m["intervals"]["pa"]
        d = display.decimals_for(lo, hi)  # docs/display.md: the half-width's first significant digit
        assert shown.loc[model, "PA 95% CI"] == display.interval_text(lo, hi, d)
        assert_rounded(shown.loc[model, "PA %"], m["pa"], shown.loc[model, "PA 95% CI"])
        assert shown.loc[model, "unchecked"] == m["unchecked"] > 0  # the demo has no LLM judge
    assert any("need the LLM judge" in t.value for t in at.text)
    assert len(at.get("vega_lite_chart")) == 3  # SCC bars, PCC heatmap, PosCC lines

    at.selectbox(key="mosaic_model").set_value("quill-2").run()
    failing = _frame(at, "failing")
    assert (failing["failing"] != "").all() and len(failing) > 0
    prompt = at.selectbox(key="mosaic_prompt").value
    detail = mosaic.output_detail(eng, local_principal(eng), study="demo-mosaic", prompt=prompt, model="quill-2")
    checks = _frame(at, "evidence")
    assert list(checks["constraint"]) == list(detail["checks"]["constraint"])
    assert (checks["followed"] == False).any()  # noqa: E712 - the failing check is shown
    assert detail["output"] in [c.value for c in at.code]


def test_wording_results_shows_the_demo_wise_study(demo_db):
    at = _page("pages/wording_results.py")
    assert at.selectbox(key="wise_results_study").value == "demo-wise"
    eng = get_engine(demo_db)
    expected = wise.score(eng, local_principal(eng), study="demo-wise", n_boot=2000, seed=0)
    forms = _frame(at, "Holm p").set_index("form")
    assert list(forms.index) == ["POS", "NEG", "NEVER", "AVOID1", "AVOID2", "CNEG"]
    for form, f in expected["forms"].items():
        assert_rounded(forms.loc[form, "compliance %"], f["compliance"], forms.loc[form, "compliance % 95% CI"])
        if form == "POS":
            assert forms.loc[form, "Holm p"] == "—", "the reference form has no contrast"
            continue
        assert forms.loc[form, "Holm p"] == display.p_value_text(f["p_holm"], replicates=2000)
        assert_rounded(forms.loc[form, "τ_b"], f["tau_b"], forms.loc[form, "τ_b 95% CI"])
        for column, key, scale in (
            ("reversals % 95% CI", "reversal_rate", 100),
            ("top-3 95% CI", "top3_jaccard", 1),
            ("shift 95% CI", "max_rank_shift", 1),
        ):
            lo, hi = f[f"{key}_interval"]
            lo, hi = scale * lo, scale * hi
            if scale == 100 and hi - lo > display.MAX_WIDTH_PP:  # a share: too uncertain, greyed
                assert forms.loc[form, column] == "too uncertain: wider than 50 pp", column
                continue
            finest = 1 if key == "max_rank_shift" else 3 if scale == 1 else 2
            coarsest = 1 if key == "top3_jaccard" else 0
            d = display.decimals_for(lo, hi, coarsest=coarsest, finest=finest, default=finest)
            assert forms.loc[form, column] == display.interval_text(lo, hi, d), column
    metrics = {m.label: m.value for m in at.metric}
    for label, key, unit in (("C_worst", "c_worst", "%"), ("G_wording", "g_wording", "pp")):
        lo, hi = expected[f"{key}_interval"]
        assert metrics[label] == f"{display.number_text(expected[key], display.decimals_for(lo, hi))} {unit}"
