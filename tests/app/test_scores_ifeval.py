"""Scores page on an IFEval project (issue 14, point 3): IFEval's accuracies, strict and loose,
no EMCR claimed, no traceback. Data: the vendored IFEval copy (Apache-2.0, see its README)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from reform_core.services.accounts.auth import Principal
from reform_core.services.data.ifeval_import import import_ifeval
from reform_core.services.judging.judging import run_judge
from reform_core.services.platform.uow import get_engine
from reform_core.services.scoring.scoring import score, score_json, set_pair
from tests.app.conftest import app_database
from tests.app.shown import assert_rounded

APP = str(Path(__file__).resolve().parents[2] / "app.py")
DATA = Path(__file__).resolve().parents[1] / "data" / "ifeval"


@pytest.fixture(scope="module")
def ifeval_app_db(tmp_path_factory):
    with app_database(f"sqlite:///{tmp_path_factory.mktemp('ifeval_app') / 'app.db'}", load_demo=False) as url:
        eng = get_engine(url)
        import_ifeval(
            eng,
            input_path=DATA / "input_data.jsonl",
            responses={"gpt4": DATA / "input_response_data_gpt4_20231107_145030.jsonl"},
        )
        for mode in ("strict", "loose"):
            run_judge(eng, provider="rules", mode=mode, name=mode)
        set_pair(eng, Principal(0, "lead", "lead"), "strict", "loose")
        yield url


def test_ifeval_accuracies_on_the_scores_page(ifeval_app_db):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/scores.py").run()
    assert not at.exception, at.exception
    assert any(s.value == "IFEval accuracy (%)" for s in at.subheader)
    assert not any("EMCR" in s.value for s in at.subheader)  # IFEval has no baseline: EMCR never claimed
    table = next(d.value for d in at.dataframe if "prompt level (strict)" in d.value.columns).set_index("model")
    expected = score_json(score(get_engine(ifeval_app_db), Principal(0, "lead", "lead")))["models"]["gpt4"]
    for mode in ("strict", "loose"):  # rules judges: nothing estimated, no interval: one decimal (docs/display.md)
        assert_rounded(table.loc["gpt4", f"prompt level ({mode})"], expected[mode]["prompt_level"], "—")
        assert_rounded(table.loc["gpt4", f"instruction level ({mode})"], expected[mode]["instruction_level"], "—")
    assert_rounded(
        table.loc["gpt4", "prompt level (calibrated)"],
        expected["prompt_level"],
        table.loc["gpt4", "prompt level 95% measurement"],
    )
    for level, value in (("prompt", expected["prompt_level"]), ("instruction", expected["instruction_level"])):
        for kind in ("measurement", "population"):  # the calibrated accuracies come with both intervals
            lo, hi = map(float, re.findall(r"\d+(?:\.\d+)?", table.loc["gpt4", f"{level} level 95% {kind}"]))
            # The measurement interval comes from Jeffreys posterior draws of the strata (never zero width at
            # 0 %/100 %); its percentile bounds can sit a hair beside the plug-in point (known, see the note).
            assert lo < hi and lo - 0.1 <= value <= hi + 0.1
    assert len(at.get("vega_lite_chart")) == 1  # the TCPR heatmap only
    # the metrics are described for IFEval's shape: 1-3 constraints per prompt, no EMCR (issue 32 item 4)
    shown = " ".join(m.value for m in at.markdown).replace("\\", "")  # md() escapes punctuation
    assert "all of the prompt's constraints (1–3 per prompt here" in shown and "all three" not in shown
    assert "EMCR" not in shown and not any("emcr" in i.value.lower() for i in at.info)
