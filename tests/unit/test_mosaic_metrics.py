"""MOSAIC metrics (docs/metrics.md#mosaic-scores) on a hand-worked example and against scipy / numpy."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reform_core.metrics import mosaic

# r1: A B C, r2: B A, r3: A, r4: C A B  (position = list order); binarised at >= 0.5
ROWS = [
    ("r1", "A", 1, 1.0),
    ("r1", "B", 2, 0.4),
    ("r1", "C", 3, 0.6),
    ("r2", "B", 1, 0.9),
    ("r2", "A", 2, 0.2),
    ("r3", "A", 1, 0.5),
    ("r4", "C", 1, 0.0),
    ("r4", "A", 2, 1.0),
    ("r4", "B", 3, 1.0),
]


@pytest.fixture
def df():
    return pd.DataFrame(ROWS, columns=["response", "constraint", "position", "score"])


def test_scc_by_hand(df):
    out = mosaic.scc(df)
    assert out["constraint"].tolist() == ["A", "B", "C"]
    assert out["n"].tolist() == [4, 3, 2]
    assert out["scc"].tolist() == pytest.approx([3 / 4, 2 / 3, 1 / 2])


def test_pcc_counts_only_responses_with_both(df):
    out = mosaic.pcc(df)
    assert out[["constraint_i", "constraint_j", "n"]].values.tolist() == [["A", "B", 3], ["A", "C", 2], ["B", "C", 2]]
    assert out["pcc"].tolist() == pytest.approx([1 / 3, 1 / 2, 0.0])


def test_poscc_over_responses_with_at_least_p_constraints(df):
    out = mosaic.poscc(df)
    assert out["position"].tolist() == [1, 2, 3]
    assert out["n"].tolist() == [4, 3, 2]
    assert out["poscc"].tolist() == pytest.approx([3 / 4, 1 / 3, 1.0])


def test_prompt_accuracy(df):
    out = mosaic.prompt_accuracy(df)
    assert out["response"].tolist() == ["r1", "r2", "r3", "r4"]
    assert out["n_constraints"].tolist() == [3, 2, 1, 3]
    assert out["pa"].tolist() == pytest.approx([2 / 3, 1 / 2, 1.0, 2 / 3])


def test_correlation_closed_form(df):
    # A,B over r1,r2,r4: A=[1,0,1], B=[0,1,1] -> r = -1/2; t = -1/sqrt(3) with 1 df (Cauchy):
    # two-sided p = 2 * (1/2 - atan(1/sqrt(3))/pi) = 2/3.
    out = mosaic.constraint_correlations(df).set_index(["constraint_i", "constraint_j"])
    assert out.loc[("A", "B"), "r"] == pytest.approx(-0.5, abs=1e-12)
    assert out.loc[("A", "B"), "p_value"] == pytest.approx(2 / 3, abs=1e-12)
    assert math.isnan(out.loc[("A", "C"), "r"])  # only 2 shared responses
    assert out["n"].tolist() == [3, 2, 2]


def test_correlation_agrees_with_numpy_and_scipy_on_random_data():
    rng = np.random.default_rng(7)
    n = 200
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.7, a, 1 - a)  # correlated with a
    c = rng.random(n)
    rows = [(f"r{i}", "a", 1, float(a[i])) for i in range(n)]
    rows += [(f"r{i}", "b", 2, float(b[i])) for i in range(n)]
    rows += [(f"r{i}", "c", 3, float(c[i])) for i in range(0, n, 2)]  # c only on even responses
    out = mosaic.constraint_correlations(pd.DataFrame(rows, columns=["response", "constraint", "position", "score"]))
    got = out.set_index(["constraint_i", "constraint_j"])
    assert got.loc[("a", "b"), "r"] == pytest.approx(np.corrcoef(a, b)[0, 1], abs=1e-12)
    ref = stats.pearsonr(a.astype(float), b.astype(float))
    assert got.loc[("a", "b"), "p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    even = np.arange(0, n, 2)
    cb = (c[even] >= 0.5).astype(float)
    assert got.loc[("b", "c"), "n"] == n // 2
    assert got.loc[("b", "c"), "r"] == pytest.approx(np.corrcoef(b[even], cb)[0, 1], abs=1e-12)
    # phi coefficient from the 2x2 table equals Pearson on binary data
    n11, n00 = np.sum((a == 1) & (b == 1)), np.sum((a == 0) & (b == 0))
    n10, n01 = np.sum((a == 1) & (b == 0)), np.sum((a == 0) & (b == 1))
    phi = (n11 * n00 - n10 * n01) / math.sqrt((n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00))
    assert got.loc[("a", "b"), "r"] == pytest.approx(phi, abs=1e-12)


def test_constant_outcome_gives_nan_not_a_warning(df):
    const = df.assign(score=1.0)
    out = mosaic.constraint_correlations(const)
    assert out["r"].isna().all() and out["p_value"].isna().all()


def test_grouping_by_model(df):
    both = pd.concat([df.assign(model="m1"), df.assign(model="m2", score=1.0)])
    out = mosaic.scc(both, by="model")
    assert list(out.columns) == ["model", "constraint", "n", "scc"]
    m1 = out[out.model == "m1"]["scc"].tolist()
    m2 = out[out.model == "m2"]["scc"].tolist()
    assert m1 == pytest.approx([3 / 4, 2 / 3, 1 / 2]) and m2 == [1.0, 1.0, 1.0]
    assert mosaic.poscc(both, by=["model"])["poscc"].tolist() == pytest.approx([3 / 4, 1 / 3, 1, 1, 1, 1])


def test_custom_column_roles(df):
    renamed = df.rename(columns={"response": "r", "constraint": "c", "position": "p", "score": "s"})
    out = mosaic.poscc(renamed, response="r", constraint="c", position="p", score="s")
    assert out["poscc"].tolist() == pytest.approx([3 / 4, 1 / 3, 1.0])


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda d: d.drop(columns="score"), r"missing column\(s\) \['score'\]"),
        (lambda d: d.assign(score=[1.2] + [0.0] * (len(d) - 1)), "column 'score'.*bad value 1.2"),
        (lambda d: d.assign(score=[np.nan] + [0.0] * (len(d) - 1)), "column 'score'"),
        (lambda d: pd.concat([d, d.iloc[[0]]]), r"\['r1', 'A'\] occurs more than once"),
    ],
)
def test_bad_input_is_named(df, change, message):
    with pytest.raises(ValueError, match=message):
        mosaic.scc(change(df))


def test_position_gaps_are_rejected(df):
    gap = df.copy()
    gap.loc[gap.response == "r2", "position"] = [1, 3]
    with pytest.raises(ValueError, match=r"response 'r2' has positions \[1, 3\], expected 1..2"):
        mosaic.poscc(gap)
    with pytest.raises(ValueError, match="min_n"):
        mosaic.constraint_correlations(df, min_n=2)
