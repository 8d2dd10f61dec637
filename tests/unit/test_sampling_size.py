"""Cochran/FPC sizing and allocation (docs/metrics.md#sample-size, #allocation; ReFormBench,
arXiv:2610.19693, App. A.3.1, Table A3)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reform_core.sampling import allocate, cochran_size, disagreements, plan

# Per-model disagreement counts of ReFormBench Table A3 and the task's expected sizes.
TABLE_A3_N = [1239, 1308, 1416, 1375, 1544, 2010, 2203, 2365, 2185, 2847]
EXPECTED_N = [574, 588, 609, 602, 632, 698, 720, 736, 718, 777]


def test_spec_examples():
    assert cochran_size(1308) == 588
    assert cochran_size(1416) == 609


@pytest.mark.parametrize("population, expected", list(zip(TABLE_A3_N, EXPECTED_N)))
def test_table_a3_sizes(population, expected):
    assert cochran_size(population) == expected


def test_textbook_values():
    # Textbook Cochran values: e = 5 %, 95 %, p = .5 -> n0 = 384.16, N = 1000 -> 278;
    # unbounded population at e = 3 % -> n0 = 1067.07 -> 1068.
    assert cochran_size(1000, margin=0.05) == 278
    assert cochran_size(10**9) == 1068
    # 99 % confidence, e = 5 %: n0 = 663.49, N = 5000 -> 586
    assert cochran_size(5000, confidence=0.99, margin=0.05) == 586


def test_small_populations():
    assert cochran_size(0) == 0
    assert cochran_size(1) == 1
    assert cochran_size(10) == 10  # FPC never asks for more than the population


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"population": -1}, "population"),
        ({"population": 2.5}, "population"),
        ({"population": True}, "population"),
        ({"population": 10, "confidence": 1.0}, "confidence"),
        ({"population": 10, "p": 0.0}, "p must"),
        ({"population": 10, "margin": 0}, "margin"),
    ],
)
def test_cochran_rejects_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        cochran_size(**kwargs)


def test_allocate_hand_example():
    # quotas 1.125 / 3.875 -> floors 1 / 3; the remainder goes to the lower fraction (b: 3/31)
    out = allocate(pd.Series({"a": 9, "b": 31}), 5)
    assert out.to_dict() == {"a": 1, "b": 4}
    # equal fractions after flooring: tie broken by stratum key
    out = allocate(pd.Series({"c": 30, "b": 20, "a": 10}), 7)
    assert out.to_dict() == {"c": 3, "b": 2, "a": 2}


def test_allocate_minimum_and_caps():
    out = allocate(pd.Series({"big": 1000, "tiny": 1, "empty": 0}), 10)
    assert out["tiny"] == 1 and out["empty"] == 0 and out["big"] == 9
    assert allocate(pd.Series({"a": 3, "b": 2}), 100).to_dict() == {"a": 3, "b": 2}
    assert allocate(pd.Series({"a": 3, "b": 2}), 0).sum() == 0


def test_allocate_rejects_bad_input():
    with pytest.raises(ValueError, match="non-negative integers"):
        allocate(pd.Series({"a": -1}), 3)
    with pytest.raises(ValueError, match="n must"):
        allocate(pd.Series({"a": 3}), -2)
    with pytest.raises(ValueError, match="duplicate"):
        allocate(pd.Series([1, 2], index=["a", "a"]), 2)


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=40),
    n=st.integers(min_value=0, max_value=3000),
)
def test_allocate_properties(sizes, n):
    s = pd.Series(sizes, index=[f"s{i:02d}" for i in range(len(sizes))])
    out = allocate(s, n)
    total = sum(sizes)
    assert (out <= s).all() and (out >= 0).all()
    if total == 0 or n == 0:
        assert out.sum() == 0
        return
    assert (out[s > 0] >= 1).all()
    assert (out[s == 0] == 0).all()
    target = min(n, total)
    quota = s * target / total
    forced = int(((s > 0) & (quota < 1)).sum())
    if forced == 0:
        assert (np.abs(out - quota) < 1).all()  # proportional up to rounding
    # docs/metrics.md#allocation: the total is n' = min(n, N) whenever it covers every non-empty stratum (issue 14);
    # strata raised to their minimum one are paid for by the others (see test_sampling_allocate_properties)
    assert out.sum() == max(target, int((s > 0).sum()))


def _paper_disagreements(seed=0):
    """Disagreements with Table A3 counts per model spread over 32 strata each."""
    rng = np.random.default_rng(seed)
    rows = []
    for m, n in enumerate(TABLE_A3_N):
        strata = [(d, c, mo) for d in ("A1B0", "A0B1") for c in "abcdefgh" for mo in ("require", "forbid")]
        weights = rng.dirichlet(np.full(len(strata), 0.7))
        idx = rng.choice(len(strata), size=n, p=weights)
        for k in idx:
            d, c, mo = strata[k]
            rows.append((f"m{m}", c, mo, d))
    df = pd.DataFrame(rows, columns=["model", "category", "mode", "direction"])
    df["iid"] = np.arange(len(df))
    df["stratum"] = df["model"] + "|" + df["direction"] + "|" + df["category"] + "|" + df["mode"]
    return df


def test_plan_matches_table_a3_totals():
    d = _paper_disagreements()
    p = plan(d)
    totals = p.groupby("model")["planned"].sum()
    sizes = p.groupby("model")["size"].sum()
    for m, (n, expected) in enumerate(zip(TABLE_A3_N, EXPECTED_N)):
        assert sizes[f"m{m}"] == n
        forced = p[(p.model == f"m{m}") & (p["size"] * expected / n < 1)].shape[0]
        assert expected <= totals[f"m{m}"] <= expected + min(forced, 2)
    assert (p["planned"] >= 1).all() and (p["planned"] <= p["size"]).all()
    assert list(p.columns) == ["model", "condition", "stratum", "direction", "category", "mode", "size", "planned"]


def test_plan_parameters_pass_through():
    d = _paper_disagreements()
    p = plan(d, margin=0.05)
    assert p[p.model == "m1"]["planned"].sum() >= cochran_size(1308, margin=0.05)
    assert p[p.model == "m1"]["planned"].sum() < 588


def test_disagreements_frame():
    inst = pd.DataFrame(
        {
            "iid": [5, 1, 2, 3, 4],
            "model": ["m", "m", "m", "n", "n"],
            "category": ["lists", "lists", "lists", "x", "x"],
            "mode": ["require", "forbid", "require", "forbid", "require"],
            "label_a": [1.0, 0.0, 1.0, np.nan, 0.0],
            "label_b": [0.0, 1.0, 1.0, 1.0, 0.0],
        }
    )
    d = disagreements(inst)
    assert d["iid"].tolist() == [1, 5]
    assert d["direction"].tolist() == ["A0B1", "A1B0"]
    assert d["stratum"].tolist() == ["m|A0B1|lists|forbid", "m|A1B0|lists|require"]
    assert list(d.columns) == ["iid", "model", "category", "mode", "direction", "stratum", "condition"]


def test_disagreements_rejects_bad_labels():
    inst = pd.DataFrame(
        {"iid": [1], "model": ["m"], "category": ["c"], "mode": ["require"], "label_a": [2.0], "label_b": [0.0]}
    )
    with pytest.raises(ValueError, match="label_a"):
        disagreements(inst)
    with pytest.raises(ValueError, match="judge_x"):
        disagreements(inst.assign(label_a=1.0), judge_a="judge_x")


def test_missing_stratum_fields_are_rejected():
    inst = pd.DataFrame(
        {"iid": [1], "model": ["m"], "category": [None], "mode": ["require"], "label_a": [1.0], "label_b": [0.0]}
    )
    with pytest.raises(ValueError, match="category"):
        disagreements(inst)
    d = _paper_disagreements().head(20)
    d.loc[3, "mode"] = None
    with pytest.raises(ValueError, match="mode"):
        plan(d)


def test_strata_and_plan_sizes_carry_the_condition():
    """Issue 17: a single-constraint condition's disagreements form their own strata and get
    their own Cochran size; the main condition's plan is the one it has without them."""
    rows = []
    for i in range(400):
        rows.append(
            {
                "iid": i,
                "model": "m",
                "category": "lists",
                "mode": "require",
                "condition": "main",
                "label_a": 1.0,
                "label_b": 0.0,
            }
        )
    for i in range(400, 460):
        rows.append(
            {
                "iid": i,
                "model": "m",
                "category": "lists",
                "mode": "require",
                "condition": "single",
                "label_a": 1.0,
                "label_b": 0.0,
            }
        )
    inst = pd.DataFrame(rows)
    d = disagreements(inst)
    assert set(d["stratum"]) == {"m|A1B0|lists|require", "m|A1B0|lists|require|single"}
    p = plan(d)
    main_only = plan(disagreements(inst[inst["condition"] == "main"]))
    by = p.set_index("stratum")["planned"]
    assert by["m|A1B0|lists|require"] == main_only.set_index("stratum")["planned"]["m|A1B0|lists|require"]
    assert by["m|A1B0|lists|require"] == cochran_size(400)
    assert by["m|A1B0|lists|require|single"] == cochran_size(60)
