"""End to end through the pages (``streamlit.testing.v1.AppTest``): a lead designs a 24-item
study, three annotators complete it on the rating page (with a resume and an edit), and the
results page shows Fleiss' κ and ICC with intervals equal to the library's values computed
directly from the answers the annotators gave."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from db.repo.users import insert_user
from reform_core import agreement as A
from reform_core import display
from reform_core.config import get_settings
from reform_core.services.accounts.auth import Principal
from reform_core.services.platform.uow import get_engine
from reform_core.services.studies import generations
from reform_core.services.studies import wording as w
from tests.app.shown import assert_rounded

REPO = Path(__file__).resolve().parents[2]
PRINCIPAL_KEY = "reform_principal"  # pages/components/session.py
TIMEOUT = 30


@pytest.fixture
def app_env(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/app.db"
    monkeypatch.setenv("REFORM_DATABASE_URL", url)
    monkeypatch.setenv("REFORM_LOAD_DEMO", "false")
    monkeypatch.setenv("REFORM_AUTH_MODE", "password")
    get_settings.cache_clear()
    st.cache_resource.clear()  # the page's engine() must open this test's database
    eng = get_engine(url)
    with eng.begin() as conn:
        users = {
            name: Principal(insert_user(conn, username=name, role=role, password_hash=""), name, role)
            for name, role in [
                ("lead", "lead"),
                ("ana", "analyst"),
                ("ann0", "annotator"),
                ("ann1", "annotator"),
                ("ann2", "annotator"),
            ]
        }
    yield eng, users
    get_settings.cache_clear()
    st.cache_resource.clear()


def _page(name: str, principal: Principal) -> AppTest:
    at = AppTest.from_file(str(REPO / "pages" / name), default_timeout=TIMEOUT)
    at.session_state[PRINCIPAL_KEY] = principal
    at.run()
    assert not at.exception, at.exception
    return at


def _current_item(at: AppTest) -> int:
    key = next(r.key for r in at.radio if r.key.startswith(f"wording_{w.ANSWER}_"))
    return int(key.rsplit("_", 1)[1])


def _answer(at: AppTest, values: dict) -> None:
    item = _current_item(at)
    at.radio(key=f"wording_{w.ANSWER}_{item}").set_value("Yes" if values[w.ANSWER] else "No")
    for r in w.RATINGS:
        at.radio(key=f"wording_{r}_{item}").set_value(values[r])


def _values(rng, base: dict, item: int) -> dict:
    return {
        w.ANSWER: bool(rng.random() < 0.75),
        **{r: int(np.clip(base[item][r] + rng.integers(-1, 2), 1, 5)) for r in w.RATINGS},
    }


def test_three_annotators_complete_a_study_and_results_match_the_library(app_env):
    eng, users = app_env

    # the lead designs the study: the six forms of the WISE paper's Table 1 × targets 5, 8, 10, 12
    at = _page("wording_design.py", users["lead"])
    at.text_input(key="wording_new_name").input("validation")
    at.button(key="wording_new_create").click().run()
    assert not at.exception
    assert any("24 items" in s.value for s in at.success), [e.value for e in at.error]
    sid = int(w.list_studies(eng, users["lead"]).loc[0, "id"])
    items = w.study_items(eng, users["lead"], study_id=sid)
    base_rng = np.random.default_rng(11)
    base = {int(i): {r: int(base_rng.integers(1, 6)) for r in w.RATINGS} for i in items["item_id"]}

    given = {}
    for n, name in enumerate(["ann0", "ann1", "ann2"]):
        rng = np.random.default_rng(100 + n)
        at = _page("wording_rate.py", users[name])
        for step in range(24):
            if name == "ann0" and step == 10:  # leave and come back: the page resumes at the first unanswered
                at = _page("wording_rate.py", users[name])
                assert at.subheader[0].value == "Item 11 of 24"
            item = _current_item(at)
            assert item not in {i for i, u in given if u == name}
            values = _values(rng, base, item)
            _answer(at, values)
            at.button(key="wording_next_todo").click().run()
            assert not at.exception, at.exception
            given[(item, name)] = values
        assert any("Every item is answered" in s.value for s in at.success)
        # one save per item (issue 15 item 17): five answers given, one row each, not five
        saves = [len(w.rating_history(eng, users[name], item_id=int(i))) for i in items["item_id"]]
        assert saves == [1] * len(saves), saves

    # ann2 goes back one item and changes the answer: a new row supersedes, the old one stays
    at.button(key="wording_prev").click().run()
    item = _current_item(at)
    flipped = not given[(item, "ann2")][w.ANSWER]
    at.radio(key=f"wording_{w.ANSWER}_{item}").set_value("Yes" if flipped else "No").run()
    assert len(w.rating_history(eng, users["ann2"], item_id=item)) == 1, "a click on a scale is not a save"
    at.button(key="wording_save").click().run()
    given[(item, "ann2")] = {**given[(item, "ann2")], w.ANSWER: flipped}
    hist = w.rating_history(eng, users["ann2"], item_id=item)
    assert len(hist) == 2 and list(hist[w.ANSWER].iloc[-2:]) == [not flipped, flipped]

    # an annotator may not open the results
    denied = AppTest.from_file(str(REPO / "pages" / "wording_results.py"), default_timeout=TIMEOUT)
    denied.session_state[PRINCIPAL_KEY] = users["ann0"]
    denied.run()
    assert any("may not view scores" in e.value for e in denied.error) and not denied.dataframe

    # the analyst's results page shows the library's values on the answers given above
    at = _page("wording_results.py", users["ana"])
    shown = next(d.value for d in at.dataframe if "statistic" in d.value.columns).set_index(["measure", "statistic"])
    df = pd.DataFrame([{"item": i, "rater": u, **v} for (i, u), v in given.items()])
    df[w.ANSWER] = df[w.ANSWER].astype(int)
    k = A.fleiss_kappa_ci(df, label=w.ANSWER, n_boot=2000, rng=np.random.default_rng(0))
    _shown_as(shown.loc[(w.ANSWER, "Fleiss' kappa")], k)
    for r in w.RATINGS:
        for kind in ("2,1", "2,k"):
            e = A.icc(
                df.assign(**{r: df[r].astype(float)}),
                target="item",
                rating=r,
                kind=kind,
                bootstrap=2000,
                rng=np.random.default_rng(0),
            )
            _shown_as(shown.loc[(r, f"ICC({kind})")], e)
    alpha = A.krippendorff_alpha_ci(df, label=w.ANSWER, level="nominal", n_boot=2000, rng=np.random.default_rng(0))
    _shown_as(shown.loc[(w.ANSWER, w.ALPHA_STATISTIC)], alpha)
    assert (shown["95% CI"] != "—").all()
    yes = next(d.value for d in at.dataframe if "ann0" in d.value.columns)
    forms = dict(zip(items["item_id"], items["form"]))
    pos = [v[w.ANSWER] for (i, u), v in given.items() if u == "ann1" and forms[i] == "POS"]
    assert yes.loc["POS", "ann1"] == pytest.approx(np.mean(pos))


def _shown_as(row, expected) -> None:
    """A statistic as the page shows it: the library's value and interval, each to the places the
    interval supports (docs/display.md: coefficients to 1–3 decimals)."""
    value, lo, hi = expected
    d = display.decimals_for(lo, hi, coarsest=1, finest=3, default=3)
    assert row["95% CI"] == display.interval_text(lo, hi, d)
    assert_rounded(row["value"], value, row["95% CI"])


def test_results_page_shows_compliance_charts_and_designer_is_for_leads(app_env):
    eng, users = app_env
    forms = [
        {"key": "POS", "template": "Answer using exactly {N} words."},
        {"key": "AVOID1", "template": "Avoid using any number of words other than {N}."},
    ]
    w.create_study(eng, users["lead"], name="s", forms=forms, targets=[5, 8])
    rows = [
        {
            "item": f"t{t}",
            "model": m,
            "provider": "p",
            "form": f,
            "target": t,
            "repetition": 0,
            "output": " ".join(["w"] * (t + (1 if (m, f) == ("m2", "AVOID1") else 0))),
        }
        for t in (5, 8)
        for m in ("m1", "m2")
        for f in ("POS", "AVOID1")
    ]
    generations.import_generations(
        eng, users["lead"], data=pd.DataFrame(rows).to_csv(index=False).encode(), filename="g.csv"
    )
    at = _page("wording_results.py", users["lead"])
    rec = next(d.value for d in at.dataframe if "compliance" in d.value.columns)
    assert rec.loc["AVOID1", "compliance"] == pytest.approx(0.5) and rec.loc["AVOID1", "delta"] == pytest.approx(-0.5)
    assert len(at.get("vega_lite_chart")) == 2  # POS-to-worst gaps, failure directions
    agreement = next(d.value for d in at.dataframe if "statistic" in d.value.columns)
    assert (agreement["value"] == "—").all() and (agreement["95% CI"] == "—").all()
    assert agreement["note"].str.contains("at least 2 annotators").all()

    denied = AppTest.from_file(str(REPO / "pages" / "wording_design.py"), default_timeout=TIMEOUT)
    denied.session_state[PRINCIPAL_KEY] = users["ann1"]
    denied.run()
    assert any("may not manage wording" in e.value for e in denied.error) and not denied.text_input
