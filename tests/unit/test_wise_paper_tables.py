"""WISE metrics reproduce the printed tables of the WISE paper (*When Verifiable Counts Depend
on Wording*) from its per-model tables.

The per-model compliance tables (21, 22, 17–20) are the inputs; the pooled tables (2, 3, 4,
6, 11, 13–16), the ranking table (5), the model-level gaps (19), the Holm column (10) and
the floor diagnostic (12) are the outside reference values. See tests/data/wise/README.md.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from reform_core.metrics import wise

DATA = Path(__file__).resolve().parents[1] / "data" / "wise"
PROVIDER = pd.read_csv(DATA / "models.csv").set_index("model")["provider"]


def per_model(table: str, model_set: str = "all") -> pd.DataFrame:
    """A per-model table as shares, snapped to the k/300 grid of 100 items x 3 repetitions."""
    t = pd.read_csv(DATA / f"{table}.csv", index_col="model").drop(columns=["gap"], errors="ignore")
    assert ((t * 3 - (t * 3).round()).abs() <= 0.15 + 1e-9).all().all(), "cell off the k/300 grid"
    t = (t * 3).round() / 300
    if model_set == "non_gemini":
        t = t[PROVIDER.reindex(t.index) != "Google"]
    return t


def pct(x):
    return round(100 * x + 1e-9, 1)


POOLED = pd.read_csv(DATA / "pooled_results.csv", keep_default_na=False)


@pytest.mark.parametrize("row", POOLED.to_dict("records"), ids=lambda r: f"{r['source']}-{r['form']}")
def test_pooled_compliance_and_difference(row):
    c = wise.wording_contrasts(per_model(row["panel_table"], row["model_set"]), reference="POS")
    assert pct(c.loc[row["form"], "compliance"]) == float(row["compliance"])
    if row["diff"] != "":
        delta = 100 * c.loc[row["form"], "delta"]
        if row["note"]:  # printed value inconsistent with its own per-model table
            assert delta == pytest.approx(float(row["diff"]), abs=0.1)
        else:
            assert pct(c.loc[row["form"], "delta"]) == float(row["diff"])


def test_table_4_model_sets_have_eleven_models():
    assert len(per_model("table22_family", "non_gemini")) == 11
    assert len(per_model("table20_keyword", "non_gemini")) == 6


@pytest.mark.parametrize("row", pd.read_csv(DATA / "table11_audit.csv").to_dict("records"), ids=lambda r: r["panel"])
def test_audit_summary_table_11(row):
    s = wise.robustness(per_model(row["panel_table"], row["model_set"]), reference="POS")
    got = [pct(s["reference"]), pct(s["c_mean"]), pct(s["c_worst"]), pct(s["g_wording"])]
    assert got == [row["pos"], row["c_mean"], row["c_worst"], row["g_wording"]]


def test_model_level_gaps_table_19():
    gaps = pd.read_csv(DATA / "table19_range.csv", index_col="model")["gap"]
    got = wise.model_robustness(per_model("table19_range"), reference="POS")["g_wording"]
    assert [pct(got[m]) for m in gaps.index] == gaps.tolist()


def test_worst_form_of_avoidance_family_is_exclude1():
    s = wise.robustness(per_model("table22_family", "non_gemini"))
    assert s["worst_form"] == "EXCLUDE1" and s["best_form"] == "POS"


def test_ranking_stability_reproduces_table_5():
    expected = pd.read_csv(DATA / "table05_ranking.csv", index_col="form")
    got = wise.ranking_stability(per_model("table22_family", "non_gemini"), reference="POS")
    assert list(got.columns) == ["tau_b", "reversal_rate", "top3_jaccard", "max_rank_shift"]
    assert list(got.index) == list(expected.index)
    for form, e in expected.iterrows():
        assert round(got.loc[form, "tau_b"], 3) == e["tau_b"]
        assert pct(got.loc[form, "reversal_rate"]) == e["reversal_pct"]
        assert got.loc[form, "top3_jaccard"] == pytest.approx(e["top3_jaccard"])
        assert got.loc[form, "max_rank_shift"] == e["max_rank_shift"]


def test_ranking_stability_tau_equals_scipy_and_rates_are_shares():
    c = per_model("table21_original")
    got = wise.ranking_stability(c, reference="POS")
    for form in got.index:
        assert got.loc[form, "tau_b"] == pytest.approx(stats.kendalltau(c["POS"], c[form]).statistic, abs=1e-9)
    assert got[["reversal_rate", "top3_jaccard"]].stack().between(0, 1).all()


def test_table_5_narrative_rank_moves():
    # §5.4: under EXCLUDE1 Opus moves from rank 1 to 5 and DeepSeek V4 Pro from 7 to 3;
    # under AVOID1 Claude Haiku moves from rank 6 to 11.
    c = per_model("table22_family", "non_gemini")
    ranks = c.rank(ascending=False, method="average")
    assert ranks.loc["Claude Opus 4.8", ["POS", "EXCLUDE1"]].tolist() == [1, 5]
    assert ranks.loc["DeepSeek V4 Pro", ["POS", "EXCLUDE1"]].tolist() == [7, 3]
    assert ranks.loc["Claude Haiku 4.5", ["POS", "AVOID1"]].tolist() == [6, 11]


def test_holm_reproduces_table_10():
    # Raw p printed as "<.001" are entered as 0.0005; Holm values must match the print.
    original = [0.0005, 0.006, 0.0005, 0.357, 0.689]  # NEG, NEVER, AVOID1, AVOID2, CNEG
    assert [round(p, 3) for p in wise.holm(original)[1:5:2]] == [0.018, 0.714]
    assert round(wise.holm(original)[4], 3) == 0.714
    assert round(wise.holm([0.237, 0.0005])[0], 3) == 0.237  # range family


def test_holm_equals_statsmodels():
    p = np.random.default_rng(4).uniform(size=9)
    assert np.allclose(wise.holm(p), multipletests(p, method="holm")[1], atol=1e-9, rtol=0)


def test_floor_regime_flags_table_12_gemini():
    t12 = pd.read_csv(DATA / "table12_floor.csv")
    for experiment, g in t12.groupby("experiment"):
        profile = g.assign(exact=g["exact_pct"] / 100)
        out = wise.floor_regime(profile)
        assert bool(out.loc["Gemini 2.5 Flash", "floor"]), experiment
        assert out.loc["Gemini 2.5 Flash", "word_change"] == pytest.approx(
            g["mean_words"].iloc[-1] - g["mean_words"].iloc[0]
        )
        # mean error column of Table 12 is mean words minus target
        assert np.allclose(g["mean_words"] - g["target"], g["mean_error"], atol=1e-9)


def test_floor_regime_gemini_31_and_a_regular_model():
    # App. I: Gemini 3.1 exact 21.6/0.9/0.7/0.0 %, mean length between 2.36 and 2.88 words.
    gem31 = pd.DataFrame(
        {
            "model": "Gemini 3.1",
            "target": [5, 8, 10, 12],
            "exact": [0.216, 0.009, 0.007, 0.0],
            "mean_words": [2.88, 2.5, 2.4, 2.36],
        }
    )
    regular = pd.DataFrame(
        {
            "model": "Claude",
            "target": [5, 8, 10, 12],
            "exact": [0.6, 0.5, 0.45, 0.4],
            "mean_words": [5.2, 8.1, 9.8, 11.6],
        }
    )
    short_but_compliant = gem31.assign(model="X", exact=[0.2, 0.02, 0.0, 0.0])
    out = wise.floor_regime(pd.concat([gem31, regular, short_but_compliant]))
    assert out["floor"].to_dict() == {"Gemini 3.1": True, "Claude": False, "X": False}


def test_target_profile_from_outputs():
    df = pd.DataFrame(
        {
            "model": ["m"] * 6,
            "target": [5, 5, 5, 8, 8, 8],
            "words": [5, 3, 4, 2, 3, 4],
            "passed": [1, 0, 0, 0, 0, 0],
        }
    )
    p = wise.target_profile(df).set_index("target")
    assert p.loc[5, "exact"] == pytest.approx(1 / 3) and p.loc[8, "exact"] == 0
    assert p.loc[5, "mean_words"] == pytest.approx(4) and p.loc[8, "mean_error"] == pytest.approx(3 - 8)
