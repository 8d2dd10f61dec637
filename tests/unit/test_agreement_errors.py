"""Bad or degenerate input to the agreement statistics gives a clear error, never NaN."""

import warnings

import numpy as np
import pandas as pd
import pytest

from reform_core import agreement as ag


def frame(matrix, row="item", col="rater", value="label"):
    matrix = np.asarray(matrix, dtype=object)
    return pd.DataFrame(
        [(f"i{i}", f"r{j}", matrix[i, j]) for i in range(matrix.shape[0]) for j in range(matrix.shape[1])],
        columns=[row, col, value],
    )


RATINGS = [[1, 2, 2], [3, 3, 4], [5, 4, 5], [2, 2, 1]]


def test_missing_column_is_named():
    with pytest.raises(ValueError, match="missing column.*'label'"):
        ag.fleiss_kappa(frame(RATINGS).rename(columns={"label": "answer"}))


def test_missing_rating_raises_or_drops_the_item():
    df = frame(RATINGS)
    df.loc[0, "label"] = np.nan
    with pytest.raises(ValueError, match="no value in column 'label'.*missing='drop'"):
        ag.fleiss_kappa(df)
    dropped = ag.fleiss_kappa(df, missing="drop")
    assert dropped == pytest.approx(ag.fleiss_kappa(frame(RATINGS[1:])))


def test_item_without_every_rater_is_reported():
    df = frame(RATINGS).iloc[1:]  # i0 lacks rater r0
    with pytest.raises(ValueError, match="1 item\\(s\\) lack a rating.*'i0'"):
        ag.fleiss_kappa(df)


def test_duplicate_rating_is_reported():
    df = frame(RATINGS)
    df = pd.concat([df, df.iloc[[0]]])
    with pytest.raises(ValueError, match="rated more than once"):
        ag.fleiss_kappa(df)


def test_constant_labels_raise_undefined():
    df = frame([[1, 1, 1]] * 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ag.UndefinedStatisticError, match="same category"):
            ag.fleiss_kappa(df)
        with pytest.raises(ag.UndefinedStatisticError, match="same label"):
            ag.cohen_kappa(frame([[1, 1]] * 4))


def test_constant_ratings_raise_undefined_icc():
    df = frame([[3, 3, 3]] * 5, "target", "rater", "rating")
    df["rating"] = df["rating"].astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ag.UndefinedStatisticError, match="no variation"):
            ag.icc(df)


def test_icc_rejects_unknown_kind_and_non_numeric_ratings():
    df = frame(RATINGS, "target", "rater", "rating")
    df["rating"] = df["rating"].astype(float)
    with pytest.raises(ValueError, match="kind must be one of"):
        ag.icc(df, kind="2")
    with pytest.raises(ValueError, match="numeric ratings"):
        ag.icc(df.assign(rating=df["rating"].astype(str)))


def test_bootstrap_needs_a_generator():
    df = frame(RATINGS, "target", "rater", "rating")
    df["rating"] = df["rating"].astype(float)
    with pytest.raises(ValueError, match="default_rng"):
        ag.icc(df, bootstrap=100)
    with pytest.raises(ValueError, match="default_rng"):
        ag.fleiss_kappa_ci(frame(RATINGS), rng=123)
    with pytest.raises(ValueError, match="replicates"):
        ag.icc(df, bootstrap=1, rng=np.random.default_rng(0))


def test_bootstrap_with_mostly_constant_resamples_raises():
    # One disagreeing item among 30: most resamples have no variation at all.
    m = [[1, 1, 1]] * 29 + [[1, 2, 1]]
    with pytest.raises(ag.UndefinedStatisticError, match="bootstrap replicates"):
        ag.fleiss_kappa_ci(frame(m), n_boot=200, rng=np.random.default_rng(0))


def test_cohen_kappa_needs_exactly_two_raters():
    with pytest.raises(ValueError, match="has 3 raters"):
        ag.cohen_kappa(frame(RATINGS))
    with pytest.raises(ValueError, match="absent"):
        ag.cohen_kappa(frame(RATINGS), raters=("r0", "zz"))


def test_yes_rates_reject_non_binary_answers():
    df = pd.DataFrame({"form": ["POS", "POS"], "rater": ["A", "B"], "label": ["yes", "maybe"]})
    with pytest.raises(ValueError, match="yes/no.*maybe"):
        ag.yes_rates(df)
    with pytest.raises(ValueError, match="missing answer"):
        ag.yes_rates(df.assign(label=[1, None]))
