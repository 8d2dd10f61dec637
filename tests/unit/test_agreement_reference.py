"""Agreement statistics against published values and reference libraries.

Outside references: Fleiss (1971) diagnoses data (κ = 0.4302, as reproduced in
statsmodels' and R irr's tests); Shrout & Fleiss (1979) data with their published ICCs and
R psych::ICC's F-based bounds; statsmodels / scikit-learn / pingouin as implementations;
the WISE paper's (*When Verifiable Counts Depend on Wording*) Table 24 for yes-rates.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from reform_core import agreement as ag

WISE = Path(__file__).resolve().parents[1] / "data" / "wise"

# Fleiss (1971): 30 patients x 6 psychiatrists, 5 diagnoses (1 depression, 2 personality
# disorder, 3 schizophrenia, 4 neurosis, 5 other); the raw form of R irr's `diagnoses`.
DIAGNOSES = np.array(
    [
        [4, 4, 4, 4, 4, 4],
        [2, 2, 2, 5, 5, 5],
        [2, 3, 3, 3, 3, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 2, 2, 4, 4, 4],
        [1, 1, 3, 3, 3, 3],
        [3, 3, 3, 3, 5, 5],
        [1, 1, 3, 3, 3, 4],
        [1, 1, 4, 4, 4, 4],
        [5, 5, 5, 5, 5, 5],
        [1, 4, 4, 4, 4, 4],
        [1, 2, 4, 4, 4, 4],
        [2, 2, 2, 3, 3, 3],
        [1, 4, 4, 4, 4, 4],
        [2, 2, 4, 4, 4, 5],
        [3, 3, 3, 3, 3, 5],
        [1, 1, 1, 4, 5, 5],
        [1, 1, 1, 1, 1, 2],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 4, 4, 4, 4, 4],
        [2, 2, 4, 5, 5, 5],
        [1, 1, 4, 4, 4, 4],
        [1, 4, 4, 4, 4, 5],
        [2, 2, 2, 2, 2, 4],
        [1, 1, 1, 1, 5, 5],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 3, 3, 3],
        [5, 5, 5, 5, 5, 5],
    ]
)

# Shrout & Fleiss (1979) Table 2: 6 targets x 4 judges.
SHROUT_FLEISS = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])


def long_frame(matrix, row="item", col="rater", value="label"):
    n, k = matrix.shape
    return pd.DataFrame(
        [(f"i{i}", f"r{j}", matrix[i, j]) for i in range(n) for j in range(k)], columns=[row, col, value]
    )


def sf_frame():
    return long_frame(SHROUT_FLEISS, "target", "rater", "rating")


def test_diagnoses_transcription_matches_published_margins():
    # Category totals printed by Fleiss (1971) / checked in statsmodels' tests.
    assert np.bincount(DIAGNOSES.ravel())[1:].tolist() == [26, 26, 30, 55, 43]


def test_fleiss_kappa_reproduces_fleiss_1971():
    assert ag.fleiss_kappa(long_frame(DIAGNOSES)) == pytest.approx(0.4302445, abs=5e-7)


def test_fleiss_kappa_is_invariant_to_row_order_and_label_names():
    df = long_frame(DIAGNOSES).sample(frac=1, random_state=3)
    df["label"] = df["label"].map({1: "dep", 2: "pers", 3: "schiz", 4: "neur", 5: "other"})
    assert ag.fleiss_kappa(df) == pytest.approx(0.4302445, abs=5e-7)


def test_vectorised_bootstrap_kappa_equals_statsmodels_per_replicate():
    counts = aggregate_raters(DIAGNOSES)[0].astype(float)
    rng = np.random.default_rng(7)
    weights = ag.item_bootstrap_weights(len(counts), 25, rng)
    got = ag._fleiss_weighted(counts, weights)
    for w, k in zip(weights, got):
        resampled = np.repeat(counts, w, axis=0)
        assert k == pytest.approx(sm_fleiss(resampled), abs=1e-12)


def test_fleiss_kappa_ci_is_seeded_and_covers_estimate():
    df = long_frame(DIAGNOSES)
    a = ag.fleiss_kappa_ci(df, n_boot=500, rng=np.random.default_rng(11))
    b = ag.fleiss_kappa_ci(df, n_boot=500, rng=np.random.default_rng(11))
    c = ag.fleiss_kappa_ci(df, n_boot=500, rng=np.random.default_rng(12))
    assert a == b and a != c
    assert a.ci_low < a.value < a.ci_high
    # Fleiss' large-sample SE for these data is about 0.05; a 95 % interval spans ~0.2.
    assert 0.1 < a.ci_high - a.ci_low < 0.35


@pytest.mark.parametrize(
    "kind, published",
    [("1,1", 0.1657), ("2,1", 0.2898), ("3,1", 0.7148), ("2,k", 0.6201)],
)
def test_icc_reproduces_shrout_fleiss_1979(kind, published):
    assert ag.icc(sf_frame(), kind=kind).value == pytest.approx(published, abs=5e-5)


# R psych::ICC on the Shrout-Fleiss data: lower bounds printed to 3, upper to 2 decimals.
PSYCH_BOUNDS = {
    "1,1": (-0.133, 0.72),
    "2,1": (0.019, 0.76),
    "3,1": (0.342, 0.95),
    "1,k": (-0.884, 0.91),
    "2,k": (0.071, 0.93),
    "3,k": (0.676, 0.99),
}


@pytest.mark.parametrize("kind", ag.ICC_KINDS)
def test_icc_f_interval_matches_r_psych(kind):
    res = ag.icc(sf_frame(), kind=kind)
    lo, hi = PSYCH_BOUNDS[kind]
    assert res.ci_low == pytest.approx(lo, abs=5e-4)
    assert res.ci_high == pytest.approx(hi, abs=5e-3)


PINGOUIN_TYPE = {
    "1,1": "ICC(1,1)",
    "2,1": "ICC(A,1)",
    "3,1": "ICC(C,1)",
    "1,k": "ICC(1,k)",
    "2,k": "ICC(A,k)",
    "3,k": "ICC(C,k)",
}


@pytest.mark.filterwarnings("ignore")
def test_icc_equals_pingouin_on_random_ratings():
    pg = pytest.importorskip("pingouin")
    rng = np.random.default_rng(5)
    y = rng.integers(1, 6, size=(24, 5)) + rng.integers(0, 3, size=(24, 1))
    df = long_frame(y, "target", "rater", "rating")
    ref = pg.intraclass_corr(df, targets="target", raters="rater", ratings="rating").set_index("Type")
    for kind, name in PINGOUIN_TYPE.items():
        res = ag.icc(df, kind=kind)
        assert res.value == pytest.approx(ref.loc[name, "ICC"], abs=1e-9)
        lo, hi = ref.loc[name, "CI95"]  # pingouin rounds its bounds to 2 decimals
        assert res.ci_low == pytest.approx(lo, abs=0.005 + 1e-9)
        assert res.ci_high == pytest.approx(hi, abs=0.005 + 1e-9)


@pytest.mark.filterwarnings("ignore")
def test_vectorised_bootstrap_icc_equals_pingouin_per_replicate():
    pg = pytest.importorskip("pingouin")
    y = SHROUT_FLEISS.astype(float)
    weights = ag.item_bootstrap_weights(len(y), 8, np.random.default_rng(3))
    reps = ag._icc_value("2,k", ag._mean_squares(y, weights))
    for w, value in zip(weights, reps):
        resampled = np.repeat(y, w, axis=0)
        df = long_frame(resampled, "target", "rater", "rating")
        ref = pg.intraclass_corr(df, targets="target", raters="rater", ratings="rating").set_index("Type")
        assert value == pytest.approx(ref.loc["ICC(A,k)", "ICC"], abs=1e-9, nan_ok=True)


def test_icc_bootstrap_interval_is_seeded():
    a = ag.icc(sf_frame(), kind="2,k", bootstrap=400, rng=np.random.default_rng(1))
    b = ag.icc(sf_frame(), kind="2,k", bootstrap=400, rng=np.random.default_rng(1))
    assert a == b
    assert a.value == pytest.approx(0.6201, abs=5e-5)
    assert a.ci_low < a.ci_high


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_equals_scikit_learn(weights):
    df = long_frame(DIAGNOSES[:, [0, 3]])
    expected = cohen_kappa_score(DIAGNOSES[:, 0], DIAGNOSES[:, 3], weights=weights)
    assert ag.cohen_kappa(df, weights=weights) == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_picks_two_of_many_raters():
    df = long_frame(DIAGNOSES)
    expected = cohen_kappa_score(DIAGNOSES[:, 1], DIAGNOSES[:, 4])
    assert ag.cohen_kappa(df, raters=("r1", "r4")) == pytest.approx(expected, abs=1e-12)


def wise_validation_frame():
    """Long yes/no answers consistent with the WISE paper's Table 24 (24 items, 5 annotators).

    Table 24 gives each annotator's rate over the four targets of a form; which target got
    the "no" is not printed, so the "no"s are placed on the first targets.
    """
    table = pd.read_csv(WISE / "table24_yes_rates.csv", index_col="form")
    rows = []
    for form, r in table.iterrows():
        for annotator in ["A1", "A2", "A3", "A4", "A5"]:
            n_no = round((1 - r[annotator]) * 4)
            for j, target in enumerate([5, 8, 10, 12]):
                rows.append((f"{form}-{target}", form, annotator, "no" if j < n_no else "yes"))
    return pd.DataFrame(rows, columns=["item", "form", "rater", "label"]), table


def test_yes_rates_reproduce_table_24():
    df, table = wise_validation_frame()
    got = ag.yes_rates(df, by="form")
    for form, r in table.iterrows():
        for annotator in ["A1", "A2", "A3", "A4", "A5"]:
            assert got.loc[form, annotator] == pytest.approx(r[annotator])
        assert round(100 * got.loc[form, "all"]) == r["exact_n_pct"]
    # overall row: per-annotator rates over all 24 items
    assert got.loc["all", "A2"] == pytest.approx(table["A2"].mean())
    assert got.loc["all", "all"] == pytest.approx(113 / 120)


def test_yes_rates_accept_bool_and_01():
    df, _ = wise_validation_frame()
    as_bool = df.assign(label=df["label"].eq("yes"))
    as_int = df.assign(label=df["label"].eq("yes").astype(int))
    pd.testing.assert_frame_equal(ag.yes_rates(as_bool), ag.yes_rates(as_int))


def test_validation_agreement_table_25_layout_and_values():
    df, _ = wise_validation_frame()
    rng = np.random.default_rng(0)
    df["clarity"] = rng.integers(1, 6, len(df)) + df["form"].map(lambda f: len(f) % 3)
    df["naturalness"] = rng.integers(1, 6, len(df)).astype(float)
    out = ag.validation_agreement(
        df, answer="label", ratings=("clarity", "naturalness"), n_boot=300, rng=np.random.default_rng(1)
    )
    assert list(out.index) == ["label", "clarity", "naturalness"]
    assert list(out["statistic"]) == ["Fleiss' kappa", "ICC(2,k)", "ICC(2,k)"]
    assert out.loc["label", "value"] == pytest.approx(ag.fleiss_kappa(df))
    assert out.loc["clarity", "value"] == pytest.approx(ag.icc(df, target="item", rating="clarity", kind="2,k").value)
    assert (out["ci_low"] <= out["value"]).all() and (out["value"] <= out["ci_high"]).all()
    again = ag.validation_agreement(
        df, answer="label", ratings=("clarity", "naturalness"), n_boot=300, rng=np.random.default_rng(1)
    )
    pd.testing.assert_frame_equal(out, again)


def test_table_24_bounds_fleiss_kappa_below_the_printed_0_54():
    """The WISE paper's Table 24 holds 7 "no" answers among 120; the best case for agreement puts
    the "no"s of one form on the same target, and even then κ is far below Table 25's 0.54.
    Documents a paper-internal inconsistency (see the helper's report)."""
    df, _ = wise_validation_frame()  # "no"s already clustered on the first targets
    assert ag.fleiss_kappa(df) == pytest.approx(
        sm_fleiss(aggregate_raters(df.pivot(index="item", columns="rater", values="label").to_numpy())[0])
    )
    assert ag.fleiss_kappa(df) < 0.2
