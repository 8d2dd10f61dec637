"""WISE bootstrap schemes, contrast intervals, ranking intervals and input checks.

References: the plug-in bootstrap variance of a mean (analytic), scipy's Kendall τ_b, and
the printed intervals of the WISE paper's (*When Verifiable Counts Depend on Wording*)
Tables 4 and 23 (reproduced loosely from outputs
synthesised to match the printed per-model compliance of Table 22).
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reform_core.metrics import wise

DATA = Path(__file__).resolve().parents[1] / "data" / "wise"


def outputs_from_table(table: pd.DataFrame, providers: pd.Series, seed: int, n_items=100, reps=3):
    """Long outputs whose per-model compliance equals ``table`` (shares on the k/300 grid)."""
    rng = np.random.default_rng(seed)
    parts = []
    for m in table.index:
        for f in table.columns:
            k = int(round(table.loc[m, f] * n_items * reps))
            v = np.zeros(n_items * reps, dtype=int)
            v[:k] = 1
            rng.shuffle(v)
            parts.append(
                pd.DataFrame(
                    {
                        "provider": providers[m],
                        "model": m,
                        "item": np.repeat(np.arange(n_items), reps),
                        "form": f,
                        "passed": v,
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def family():
    providers = pd.read_csv(DATA / "models.csv").set_index("model")["provider"]
    t = pd.read_csv(DATA / "table22_family.csv", index_col="model")
    t = (t[providers.reindex(t.index) != "Google"] * 3).round() / 300
    return outputs_from_table(t, providers, seed=0), t


def test_model_compliance_recovers_the_table(family):
    df, t = family
    got = wise.model_compliance(df)
    pd.testing.assert_frame_equal(got.loc[t.index, t.columns], t, check_exact=False, atol=1e-12)


def test_failure_directions_weight_models_equally():
    df = pd.DataFrame(
        {
            "model": ["a"] * 4 + ["b"] * 2,
            "form": ["POS"] * 6,
            "direction": ["under", "under", "under", "exact", "over", "exact"],
        }
    )
    got = wise.failure_directions(df)
    # model a: 3/4 under, 1/4 exact; model b: 1/2 over, 1/2 exact
    assert got.loc["POS", "under"] == pytest.approx((0.75 + 0) / 2)
    assert got.loc["POS", "exact"] == pytest.approx((0.25 + 0.5) / 2)
    assert got.loc["POS", "over"] == pytest.approx((0 + 0.5) / 2)


def small_panel(seed=1, n_models=6, n_items=40):
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n_models):
        base = rng.uniform(0.2, 0.8)
        for i in range(n_items):
            for f, shift in (("POS", 0.0), ("NEG", -0.15)):
                for r in range(3):
                    rows.append((f"p{m // 2}", f"m{m}", i, f, int(rng.uniform() < base + shift)))
    return pd.DataFrame(rows, columns=["provider", "model", "item", "form", "passed"])


def cell_tables(df):
    g = df.groupby(["model", "item", "form"])["passed"].mean().unstack("form")
    return {m: g.loc[m] for m in g.index.get_level_values(0).unique()}


def test_equal_model_item_variance_matches_plugin_formula():
    df = small_panel()
    reps = wise.bootstrap_pooled(df, scheme="equal-model-item", n_boot=4000, rng=np.random.default_rng(2))
    tables = cell_tables(df)
    d = {m: t["NEG"] - t["POS"] for m, t in tables.items()}
    # Var of the mean of M independent item-bootstrap means: sum_m var_m / n_m / M^2
    expected = sum(x.var(ddof=0) / len(x) for x in d.values()) / len(d) ** 2
    got = (reps["NEG"] - reps["POS"]).var()
    assert got == pytest.approx(expected, rel=0.1)


def test_model_item_variance_matches_plugin_formula():
    df = small_panel()
    reps = wise.bootstrap_pooled(df, scheme="model-item", n_boot=4000, rng=np.random.default_rng(3))
    tables = cell_tables(df)
    x = {m: t["POS"] for m, t in tables.items()}
    means = np.array([v.mean() for v in x.values()])
    within = np.mean([v.var(ddof=0) / len(v) for v in x.values()])
    expected = (means.var(ddof=0) + within) / len(x)
    assert reps["POS"].var() == pytest.approx(expected, rel=0.1)


def test_provider_scheme_equals_model_item_when_each_provider_has_one_model():
    df = small_panel()
    one_each = df.assign(provider=df["model"])
    a = wise.bootstrap_pooled(one_each, scheme="provider-model-item", n_boot=4000, rng=np.random.default_rng(4))
    b = wise.bootstrap_pooled(df, scheme="model-item", n_boot=4000, rng=np.random.default_rng(5))
    assert a["POS"].var() == pytest.approx(b["POS"].var(), rel=0.12)


def test_provider_scheme_is_wider_when_providers_differ():
    # Two providers, one strong and one weak, three models each: resampling providers adds
    # between-provider variance that the model-item scheme does not see as a block.
    rows = []
    for p, level in (("strong", 0.9), ("weak", 0.1)):
        for m in range(3):
            for i in range(30):
                rows.append((p, f"{p}{m}", i, "POS", int(i / 30 < level)))
    df = pd.DataFrame(rows, columns=["provider", "model", "item", "form", "passed"])
    a = wise.bootstrap_pooled(df, scheme="provider-model-item", n_boot=2000, rng=np.random.default_rng(6))
    b = wise.bootstrap_pooled(df, scheme="model-item", n_boot=2000, rng=np.random.default_rng(6))
    assert a["POS"].var() > 2 * b["POS"].var()


@pytest.mark.parametrize("scheme", wise.SCHEMES)
def test_bootstrap_is_seeded(scheme):
    df = small_panel()
    a = wise.bootstrap_pooled(df, scheme=scheme, n_boot=50, rng=np.random.default_rng(9))
    b = wise.bootstrap_pooled(df, scheme=scheme, n_boot=50, rng=np.random.default_rng(9))
    pd.testing.assert_frame_equal(a, b)
    assert a.shape == (50, 2)


# Printed 95 % intervals (percentage points): Table 4 (provider-model-item) and Table 23.
PRINTED = [
    ("provider-model-item", "AVOID1", -29.1, -14.0),
    ("provider-model-item", "AVOID3", -23.2, -9.6),
    ("provider-model-item", "AVOID4", -32.3, -16.6),
    ("provider-model-item", "EXCLUDE1", -38.9, -22.6),
    ("provider-model-item", "EXCLUDE2", -18.1, -6.1),
    ("model-item", "AVOID4", -31.5, -17.1),
    ("model-item", "EXCLUDE1", -38.4, -23.5),
    ("equal-model-item", "AVOID4", -26.7, -21.3),
    ("equal-model-item", "EXCLUDE1", -33.2, -27.7),
]


@pytest.mark.parametrize("scheme", ["provider-model-item", "model-item", "equal-model-item"])
def test_intervals_from_table_22_are_close_to_printed(family, scheme):
    """Loose check: the raw outputs are synthetic (item pairing unknown), so +-2.5 pp."""
    df, _ = family
    got = wise.contrast_intervals(df, scheme=scheme, rng=np.random.default_rng(10))
    for s, form, lo, hi in PRINTED:
        if s == scheme:
            assert 100 * got.loc[form, "ci_low"] == pytest.approx(lo, abs=2.5), form
            assert 100 * got.loc[form, "ci_high"] == pytest.approx(hi, abs=2.5), form
    assert (got["p_holm"] >= got["p_value"]).all()
    assert (got["p_holm"] < 0.01).all()  # Table 10: all five family contrasts significant


def test_contrast_point_values_equal_pooled_deltas(family):
    df, t = family
    got = wise.contrast_intervals(df, scheme="item", n_boot=200, rng=np.random.default_rng(1))
    expected = t.mean() - t.mean()["POS"]
    assert np.allclose(got["delta"], expected[got.index], atol=1e-12)
    assert "POS" not in got.index


def test_vectorised_ranking_metrics_equal_point_version_on_replicates(family):
    df, t = family
    rng = np.random.default_rng(12)
    models, forms, tables = wise._cells(df, model="model", item="item", form="form", passed="passed", fn="t")
    c = wise._joint_item_means(tables, 30, rng, "t")
    vec = wise._ranking_metrics(c, forms.index("POS"))
    for b in range(30):
        point = wise.ranking_stability(pd.DataFrame(c[b], index=models, columns=forms), reference="POS")
        # Means equal in exact arithmetic may differ in the last bit after the matrix
        # product; both versions treat values equal to TIE_DECIMALS decimals as ties.
        cb = np.round(c[b], wise.TIE_DECIMALS)
        for j, f in enumerate(forms):
            if f == "POS":
                continue
            tau = stats.kendalltau(cb[:, forms.index("POS")], cb[:, j]).statistic
            assert vec["tau_b"][b, j] == pytest.approx(tau, abs=1e-9)
            for name in wise.RANKING_COLUMNS:
                assert vec[name][b, j] == pytest.approx(point.loc[f, name], abs=1e-9)


def test_ranking_intervals_bracket_point_values_and_printed_tau(family):
    df, t = family
    ci = wise.ranking_stability_intervals(df, rng=np.random.default_rng(13))
    point = wise.ranking_stability(t)
    assert (ci["tau_b_low"] <= point["tau_b"] + 1e-9).all() and (point["tau_b"] <= ci["tau_b_high"] + 1e-9).all()
    # Table 5 task-bootstrap interval of EXCLUDE1: tau_b in [0.273, 0.648] (loose, synthetic items)
    assert ci.loc["EXCLUDE1", "tau_b_low"] == pytest.approx(0.273, abs=0.1)
    assert ci.loc["EXCLUDE1", "tau_b_high"] == pytest.approx(0.648, abs=0.1)


def test_reversal_rate_excludes_pairs_tied_under_either_form():
    c = pd.DataFrame({"POS": [0.9, 0.5, 0.5, 0.1], "NEG": [0.1, 0.5, 0.6, 0.7]}, index=list("abcd"))
    got = wise.ranking_stability(c)
    # strict under both: (a,b) rev, (a,c) rev, (a,d) rev, (b,d) rev, (c,d) rev; (b,c) tied in POS
    assert got.loc["NEG", "reversal_rate"] == 1.0


def test_ties_at_rank_three_enter_the_top_set():
    c = pd.DataFrame({"POS": [0.9, 0.8, 0.7, 0.1], "NEG": [0.9, 0.8, 0.5, 0.5]}, index=list("abcd"))
    # NEG top set: a, b and the tie c=d at rank 3 -> {a,b,c,d}; POS top set {a,b,c}: 3/4
    assert wise.ranking_stability(c).loc["NEG", "top3_jaccard"] == pytest.approx(0.75)


def test_constant_form_gives_nan_tau_without_warnings():
    import warnings

    c = pd.DataFrame({"POS": [0.9, 0.5, 0.1], "NEG": [0.2, 0.2, 0.2]}, index=list("abc"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = wise.ranking_stability(c)
    assert np.isnan(got.loc["NEG", "tau_b"]) and np.isnan(got.loc["NEG", "reversal_rate"])


def test_bad_input_is_named():
    c = pd.DataFrame({"POS": [0.9, np.nan], "NEG": [0.2, 0.3]}, index=["a", "b"])
    with pytest.raises(ValueError, match="model 'b' under form 'POS'"):
        wise.ranking_stability(c)
    with pytest.raises(ValueError, match="reference form 'BASE'"):
        wise.ranking_stability(c.fillna(0.5), reference="BASE")
    with pytest.raises(ValueError, match="shares in \\[0, 1\\]"):
        wise.robustness(c.fillna(0.5) * 100)
    df = small_panel()
    with pytest.raises(ValueError, match="no output under form"):
        wise.contrast_intervals(
            df.iloc[1:].loc[lambda d: ~((d.model == "m0") & (d.item == 0) & (d.form == "NEG"))],
            rng=np.random.default_rng(0),
        )
    with pytest.raises(ValueError, match="must be 0/1"):
        wise.model_compliance(df.assign(passed=2))
    with pytest.raises(ValueError, match="scheme must be one of"):
        wise.bootstrap_pooled(df, scheme="cluster", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="default_rng"):
        wise.bootstrap_pooled(df, rng=None)
    with pytest.raises(ValueError, match="several providers"):
        wise.bootstrap_pooled(df.assign(provider=np.where(df.index % 2 == 0, "x", "y")), rng=np.random.default_rng(0))
