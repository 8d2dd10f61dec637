"""Issue 14 point 5: ICC on degenerate/offset data, explicit category order for weighted
Cohen κ, Krippendorff's α (published values, a second implementation, a literal loop)."""

import itertools
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest

from reform_core import agreement as ag

# Shrout & Fleiss (1979) Table 2: 6 targets x 4 judges (published ICCs in docs/metrics.md#icc).
SHROUT_FLEISS = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float)
PUBLISHED = {"1,1": 0.1657, "2,1": 0.2898, "2,k": 0.6201, "3,1": 0.7148}

# Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", the reliability data of
# 4 observers x 12 units with missing values (NaN = not coded). The same matrix is R's
# DescTools::KrippAlpha "C" example.
NA = np.nan
KRIPP = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NA, NA, NA],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NA, 3],
        [NA, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NA],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NA],
    ]
)
KRIPP_PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def icc_frame(matrix):
    m = np.asarray(matrix, float)
    return pd.DataFrame(
        [(f"t{i}", f"r{j}", m[i, j]) for i in range(m.shape[0]) for j in range(m.shape[1])],
        columns=["target", "rater", "rating"],
    )


def kripp_frame(data=KRIPP, *, drop_missing_rows=False):
    df = pd.DataFrame(
        [(f"u{u:02d}", f"o{o}", data[o, u]) for o in range(data.shape[0]) for u in range(data.shape[1])],
        columns=["item", "rater", "label"],
    )
    return df[df["label"].notna()] if drop_missing_rows else df


# ------------------------------------------------------------------------------------ ICC


@pytest.mark.parametrize("kind", ag.ICC_KINDS)
def test_icc_is_invariant_to_a_large_rating_offset(kind):
    """Pins issue 14: uncentred sums of squares returned ICC 1.0 for ratings offset by 1e8."""
    plain = ag.icc(icc_frame(SHROUT_FLEISS), kind=kind)
    shifted = ag.icc(icc_frame(SHROUT_FLEISS + 1e8), kind=kind)
    if kind in PUBLISHED:
        assert shifted.value == pytest.approx(PUBLISHED[kind], abs=5e-5)
    assert shifted.value == pytest.approx(plain.value, abs=1e-6)
    assert shifted.ci_low == pytest.approx(plain.ci_low, abs=1e-6)
    assert shifted.ci_high == pytest.approx(plain.ci_high, abs=1e-6)


# raters differ by constant offsets only: EMS = 0 (no rater x target interaction)
OFFSETS = np.array([[1, 2, 3], [2, 3, 4], [5, 6, 7], [3, 4, 5]], float)


@pytest.mark.parametrize("kind", ag.ICC_KINDS)
def test_icc_with_zero_error_mean_square_is_defined_and_continuous(kind):
    """Pins issue 14: a zero mean square raised a raw ZeroDivisionError in the F interval.

    The value and interval at EMS = 0 must equal the limit of the ordinary formulas, checked by
    perturbing the ratings by 1e-7 (the ordinary path, tested against R psych elsewhere)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = ag.icc(icc_frame(OFFSETS), kind=kind)
    near = ag.icc(icc_frame(OFFSETS + np.random.default_rng(0).normal(0, 1e-7, OFFSETS.shape)), kind=kind)
    assert exact.value == pytest.approx(near.value, abs=1e-5)
    assert exact.ci_low == pytest.approx(near.ci_low, abs=1e-4)
    assert exact.ci_high == pytest.approx(near.ci_high, abs=1e-4)
    if kind.startswith("3"):
        assert exact == (1.0, 1.0, 1.0)
    boot = ag.icc(icc_frame(OFFSETS), kind=kind, bootstrap=200, rng=np.random.default_rng(1))
    assert boot.value == exact.value and np.isfinite([boot.ci_low, boot.ci_high]).all()


def test_icc_perfect_agreement_gives_one():
    df = icc_frame([[1, 1, 1], [2, 2, 2], [4, 4, 4], [3, 3, 3]])
    for kind in ag.ICC_KINDS:
        assert ag.icc(df, kind=kind) == (1.0, 1.0, 1.0)


def test_wording_agreement_table_survives_zero_mean_squares():
    """Pins issue 14: the wording results service crashed on pure rater offsets."""
    from reform_core.services.studies.wording import agreement_table

    rows = []
    for i in range(5):
        for j, rater in enumerate(("ann", "bob", "cy")):
            rows.append(
                {
                    "item": i,
                    "rater": rater,
                    "requires_exact": bool(i % 2),
                    "clarity": 1 + j + (i % 3),
                    "naturalness": 3,
                    "ambiguity": 1 + (i % 2),
                    "complexity": 2 + j,
                }
            )
    table = agreement_table(pd.DataFrame(rows), n_boot=50)
    clarity = table[(table["measure"] == "clarity") & (table["statistic"] == "ICC(2,1)")].iloc[0]
    expected = ag.icc(
        pd.DataFrame(rows).rename(columns={"item": "target", "clarity": "rating"}).astype({"rating": float}), kind="2,1"
    ).value
    assert 0 < clarity["value"] < 1 and clarity["value"] == pytest.approx(expected)
    assert np.isfinite([clarity["ci_low"], clarity["ci_high"]]).all()
    naturalness = table[table["measure"] == "naturalness"]
    assert naturalness["value"].isna().all() and naturalness["note"].str.contains("no variation").all()


# ------------------------------------------------------------------------------- Cohen κ


def two_raters(a, b):
    return pd.DataFrame(
        [(i, "x", v) for i, v in enumerate(a)] + [(i, "y", v) for i, v in enumerate(b)],
        columns=["item", "rater", "label"],
    )


def test_weighted_kappa_refuses_string_labels_without_an_order():
    """Pins issue 14: string labels were ordered alphabetically without a word."""
    df = two_raters(["low", "medium", "high", "low", "high"], ["low", "high", "high", "medium", "medium"])
    with pytest.raises(ValueError, match="categories=\\[lowest"):
        ag.cohen_kappa(df, weights="linear")
    assert ag.cohen_kappa(df) == pytest.approx(ag.cohen_kappa(df, categories=["high", "low", "medium"]))


def test_weighted_kappa_uses_the_given_order():
    a = ["low", "medium", "high", "low", "high", "medium"]
    b = ["low", "high", "high", "medium", "medium", "medium"]
    order = ["low", "medium", "high"]
    got = ag.cohen_kappa(two_raters(a, b), weights="quadratic", categories=order)
    # literal Cohen (1968) weighted κ with w_ij = (i - j)^2 over the order's positions
    idx = {c: i for i, c in enumerate(order)}
    x, y = np.array([idx[v] for v in a]), np.array([idx[v] for v in b])
    k = len(order)
    obs = np.zeros((k, k))
    for i, j in zip(x, y):
        obs[i, j] += 1
    exp = np.outer(obs.sum(1), obs.sum(0)) / obs.sum()
    w = np.subtract.outer(np.arange(k), np.arange(k)) ** 2
    assert got == pytest.approx(1 - (w * obs).sum() / (w * exp).sum(), abs=1e-12)
    alphabetical = ag.cohen_kappa(two_raters(a, b), weights="quadratic", categories=sorted(order))
    assert alphabetical != pytest.approx(got)


def test_weighted_kappa_numeric_labels_use_numeric_order_and_reject_unknown_categories():
    df = two_raters([1, 2, 10, 2], [1, 10, 10, 2])
    assert ag.cohen_kappa(df, weights="linear") == pytest.approx(
        ag.cohen_kappa(df, weights="linear", categories=[1, 2, 10])
    )
    with pytest.raises(ValueError, match="not in categories"):
        ag.cohen_kappa(df, weights="linear", categories=[1, 2])


# ------------------------------------------------------------------------- Krippendorff α


def literal_alpha(data: np.ndarray, level: str, order=None) -> float:
    """α = 1 − D_o / D_e from the pairwise-disagreement definitions (Krippendorff 2011, §A):

    D_o = (1/n) Σ_u 1/(m_u − 1) Σ_{i≠j in u} δ²(v_i, v_j) over pairable units;
    D_e = 1/(n(n − 1)) Σ_{i≠j over all pairable values} δ²(v_i, v_j)."""
    units = [[v for v in data[:, u] if not (isinstance(v, float) and np.isnan(v))] for u in range(data.shape[1])]
    units = [u for u in units if len(u) >= 2]
    values = [v for u in units for v in u]
    n = len(values)
    order = order or sorted(set(values))
    freq = {c: values.count(c) for c in order}

    def delta(c, k):
        if level == "nominal":
            return float(c != k)
        if level == "interval":
            return (c - k) ** 2
        if level == "ratio":
            return ((c - k) / (c + k)) ** 2 if c + k else 0.0
        i, j = sorted((order.index(c), order.index(k)))
        return (sum(freq[order[g]] for g in range(i, j + 1)) - (freq[c] + freq[k]) / 2) ** 2

    d_o = sum(sum(delta(a, b) for a, b in itertools.permutations(u, 2)) / (len(u) - 1) for u in units) / n
    d_e = sum(delta(a, b) for a, b in itertools.permutations(values, 2)) / (n * (n - 1))
    return 1 - d_o / d_e


@pytest.mark.parametrize("level", ag.ALPHA_LEVELS)
def test_krippendorff_alpha_reproduces_published_values(level):
    got = ag.krippendorff_alpha(kripp_frame(), level=level)
    assert round(got, 3) == KRIPP_PUBLISHED[level]
    reference = krippendorff.alpha(reliability_data=KRIPP, level_of_measurement=level)
    assert got == pytest.approx(reference, abs=1e-12)
    assert got == pytest.approx(literal_alpha(KRIPP, level), abs=1e-12)
    # absent rows and NaN labels are the same missing data
    assert ag.krippendorff_alpha(kripp_frame(drop_missing_rows=True), level=level) == pytest.approx(got, abs=1e-12)


@pytest.mark.parametrize("level", ag.ALPHA_LEVELS)
def test_krippendorff_alpha_matches_reference_on_random_incomplete_data(level):
    rng = np.random.default_rng(5)
    for _ in range(5):
        data = rng.integers(1, 6, size=(rng.integers(2, 6), 15)).astype(float)
        data[rng.random(data.shape) < 0.25] = np.nan
        got = ag.krippendorff_alpha(kripp_frame(data), level=level)
        assert got == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-10)
        assert got == pytest.approx(literal_alpha(data, level), abs=1e-10)


def test_ordinal_alpha_needs_an_order_for_strings():
    words = {1: "none", 2: "few", 3: "some", 4: "many", 5: "all"}
    df = kripp_frame()
    df["label"] = df["label"].map(words)
    with pytest.raises(ValueError, match="categories="):
        ag.krippendorff_alpha(df, level="ordinal")
    got = ag.krippendorff_alpha(df, level="ordinal", categories=list(words.values()))
    assert got == pytest.approx(ag.krippendorff_alpha(kripp_frame(), level="ordinal"), abs=1e-12)
    assert ag.krippendorff_alpha(df) == pytest.approx(0.743421052631579, abs=1e-12)
    with pytest.raises(ValueError, match="numeric"):
        ag.krippendorff_alpha(df, level="interval")


def test_krippendorff_alpha_errors():
    with pytest.raises(ag.UndefinedStatisticError, match="same"):
        ag.krippendorff_alpha(kripp_frame(np.ones((3, 4))))
    with pytest.raises(ValueError, match="pairable"):
        ag.krippendorff_alpha(kripp_frame(np.array([[1.0, NA], [NA, 2.0]])))
    with pytest.raises(ValueError, match="level must be"):
        ag.krippendorff_alpha(kripp_frame(), level="circular")
    df = kripp_frame()
    with pytest.raises(ValueError, match="more than once"):
        ag.krippendorff_alpha(pd.concat([df, df.iloc[[0]]]))


def test_krippendorff_alpha_bootstrap_equals_recomputation_per_replicate():
    """The vectorised replicate α equals α recomputed on the resampled items (a literal resample)."""
    df = kripp_frame()
    counts, order = ag._alpha_counts(df, "item", "rater", "label", "ordinal", None, "t")
    weights = ag.item_bootstrap_weights(len(counts), 20, np.random.default_rng(3))
    reps = ag._alpha_weighted(counts, order, "ordinal", weights)
    pairable = [u for u in range(KRIPP.shape[1]) if np.isfinite(KRIPP[:, u]).sum() >= 2]
    for w, rep in zip(weights, reps):
        cols = np.repeat(np.array(pairable), w)
        expected = (
            literal_alpha(KRIPP[:, cols], "ordinal")
            if len(set(KRIPP[:, cols][np.isfinite(KRIPP[:, cols])])) > 1
            else np.nan
        )
        assert rep == pytest.approx(expected, abs=1e-10, nan_ok=True)
    a = ag.krippendorff_alpha_ci(df, level="ordinal", n_boot=300, rng=np.random.default_rng(9))
    b = ag.krippendorff_alpha_ci(df, level="ordinal", n_boot=300, rng=np.random.default_rng(9))
    assert a == b and a.ci_low < a.value <= a.ci_high
