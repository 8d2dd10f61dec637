"""Stratified and pooled calibration rules (docs/metrics.md#stratified-calibration, #pooled-calibration;
ReFormBench, arXiv:2610.19693, §3.5, App. A.3)."""

import numpy as np
import pandas as pd
import pytest

from reform_core.calibration import calibrate_pooled, calibrate_stratified, pooled_weights, stratum_rates


def frame():
    # m1: stratum A1B0|lists|require has 4 disagreements (iids 2..5), 3 reviewed;
    #     stratum A0B1|lists|require has 1 unreviewed disagreement (iid 6) -> fallback.
    # m2: one disagreement and no adjudication at all -> 0.5.
    rows = [
        (0, "m1", "lists", "require", 1, 1),
        (1, "m1", "lists", "require", 0, 0),
        (2, "m1", "lists", "require", 1, 0),
        (3, "m1", "lists", "require", 1, 0),
        (4, "m1", "lists", "require", 1, 0),
        (5, "m1", "lists", "require", 1, 0),
        (6, "m1", "lists", "require", 0, 1),
        (7, "m2", "lists", "forbid", 1, 0),
        (8, "m2", "lists", "forbid", np.nan, 1),
        (9, "m2", "lists", "forbid", np.nan, np.nan),
    ]
    return pd.DataFrame(rows, columns=["iid", "model", "category", "mode", "label_a", "label_b"])


ADJ = pd.DataFrame({"iid": [2, 3, 4], "a": [1.0, 1.0, 0.0]})


def test_stratified_rules():
    out = calibrate_stratified(frame(), ADJ).set_index("iid")
    assert out.loc[0, "p"] == 1 and out.loc[0, "source"] == "agreed"
    assert out.loc[1, "p"] == 0 and out.loc[1, "source"] == "agreed"
    assert list(out.loc[[2, 3, 4], "p"]) == [1, 1, 0] and set(out.loc[[2, 3, 4], "source"]) == {"adjudicated"}
    # π̂_h = mean of the three reviewed labels of the stratum
    assert out.loc[5, "p"] == pytest.approx(2 / 3) and out.loc[5, "source"] == "stratum"
    assert out.loc[5, "stratum"] == "m1|A1B0|lists|require" and not out.loc[5, "provisional"]
    # Unreviewed stratum of m1 -> model's pooled estimate: reviews side with A in 2 of 3 -> W_A = 2/3;
    # direction A0B1 passes when B is right -> 1 - W_A.
    assert out.loc[6, "p"] == pytest.approx(1 / 3) and out.loc[6, "source"] == "fallback" and out.loc[6, "provisional"]
    # m2 has no adjudication at all -> 0.5, provisional
    assert out.loc[7, "p"] == 0.5 and out.loc[7, "provisional"]
    # missing labels: one judge -> its label; none -> NaN, counted
    assert out.loc[8, "p"] == 1 and out.loc[8, "source"] == "single_judge"
    assert np.isnan(out.loc[9, "p"]) and out.loc[9, "source"] == "missing"
    assert out.attrs["n_missing"] == 1


def test_stratum_rates_table():
    r = stratum_rates(frame(), ADJ).set_index("stratum")
    assert r.loc["m1|A1B0|lists|require", ["n_disagreements", "n_reviewed"]].tolist() == [4, 3]
    assert r.loc["m1|A1B0|lists|require", "pi_hat"] == pytest.approx(2 / 3)
    assert np.isnan(r.loc["m1|A0B1|lists|require", "pi_hat"])
    assert r.loc["m1|A0B1|lists|require", "provisional"]
    assert r.loc["m2|A1B0|lists|forbid", "p_used"] == 0.5


def test_adjudicated_agreement_keeps_the_agreed_label():
    out = calibrate_stratified(frame(), pd.DataFrame({"iid": [0], "a": [0.0]})).set_index("iid")
    assert out.loc[0, "p"] == 1 and out.loc[0, "source"] == "agreed"


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="more than one"):
        calibrate_stratified(frame(), pd.DataFrame({"iid": [2, 2], "a": [1.0, 0.0]}))
    with pytest.raises(ValueError, match="'a'"):
        calibrate_stratified(frame(), pd.DataFrame({"iid": [2], "a": [1.7]}))
    with pytest.raises(ValueError, match="'a'"):
        calibrate_stratified(frame(), pd.DataFrame({"iid": [2], "a": [np.nan]}))
    with pytest.raises(ValueError, match="label_a"):
        calibrate_stratified(frame().assign(label_a=2.0), ADJ)
    with pytest.raises(ValueError, match="label_x"):
        calibrate_stratified(frame(), ADJ, judge_a="label_x")


def test_pooled_weights_reproduce_seed_pool():
    # ReFormBench App. A.3.2: 6,689 of 7,125 adjudications favour GPT -> 93.88 % / 6.12 %.
    pool = pd.DataFrame({"choice": ["gpt"] * 6689 + ["gemini"] * 436})
    w = pooled_weights(pool)
    assert round(100 * w["gpt"], 2) == 93.88 and round(100 * w["gemini"], 2) == 6.12
    inst = pd.DataFrame({"label_a": [1.0, 0.0, 1.0, 0.0, np.nan], "label_b": [0.0, 1.0, 1.0, 0.0, 1.0]})
    out = calibrate_pooled(inst, w["gpt"])
    assert out["p"].iloc[0] == pytest.approx(6689 / 7125) and out["p"].iloc[1] == pytest.approx(436 / 7125)
    assert out["p"].iloc[2] == 1.0 and out["p"].iloc[3] == 0.0 and out["p"].iloc[4] == 1.0
    assert list(out["source"]) == ["pooled", "pooled", "agreed", "agreed", "single_judge"]
    with pytest.raises(ValueError, match="w_a"):
        calibrate_pooled(inst, 1.5)
    with pytest.raises(ValueError, match="at least one"):
        pooled_weights(pool.iloc[:0])
