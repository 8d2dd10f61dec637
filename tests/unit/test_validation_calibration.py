"""Issue 5 acceptance on the simulator with known truth (CI-sized), plus the validation helpers.

The full 100-replicate run at paper scale is ``python bench/bench_validation.py``.
"""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from reform_core.simulate import simulate
from reform_core.validation import REPLICATE_COLUMNS, run_replicate, run_replicates, summarize

# Reduced scale: 150 questions, 800 instructions, 4 models (about 0.7 s per replicate).
SCALE = dict(scale="paper", n_questions=150, n_instructions=800, n_models=4)
N_REPLICATES = 20


@pytest.fixture(scope="module")
def replicates():
    return run_replicates(range(100, 100 + N_REPLICATES), n_boot=500, **SCALE)


@pytest.fixture(scope="module")
def summary(replicates):
    return summarize(replicates).set_index("metric")


@pytest.mark.parametrize("metric", ["tcpr", "emcr"])
def test_calibrated_scores_are_closer_to_the_truth_than_either_judge(summary, metric):
    row = summary.loc[metric]
    assert row["n_pairs"] == 4 * N_REPLICATES
    assert row["mae_calibrated"] < row["mae_judge_a"]
    assert row["mae_calibrated"] < row["mae_judge_b"]


@pytest.mark.parametrize("metric", ["tcpr", "emcr"])
def test_engine_intervals_cover_the_truth(summary, metric):
    assert summary.loc[metric, "coverage"] >= 0.90


def test_both_judges_wrong_bounds_what_calibration_can_reach(summary):
    # Disagreements adjudicated perfectly leave only the errors on which both judges agree.
    for metric in ("tcpr", "emcr"):
        assert summary.loc[metric, "mae_oracle_disagreements"] < summary.loc[metric, "mae_calibrated"]


def test_truth_and_raw_judge_tcpr_match_a_direct_computation(replicates):
    # Outside reference: TCPR = mean over instructions of the product of the three labels.
    seed = 100
    inst = simulate(seed, **SCALE).instances()
    rep = replicates[(replicates["seed"] == seed) & (replicates["metric"] == "tcpr")].set_index("model")
    for column, estimator in (("truth", "truth"), ("label_judge_a", "judge_a"), ("label_judge_b", "judge_b")):
        direct = 100 * inst.groupby(["model", "instruction"])[column].prod().groupby("model").mean()
        np.testing.assert_allclose(rep[estimator], direct.reindex(rep.index), rtol=1e-12)


def test_a_replicate_is_reproducible_from_its_seed():
    kw = dict(scale="small", n_boot=50)
    first = run_replicate(7, rng=np.random.default_rng(1), **kw)
    again = run_replicate(7, rng=np.random.default_rng(1), **kw)
    other = run_replicate(7, rng=np.random.default_rng(2), **kw)
    assert list(first.columns) == REPLICATE_COLUMNS
    pd.testing.assert_frame_equal(first, again)
    assert not first["ci_low"].equals(other["ci_low"])  # the generator drives the bootstrap


def _frame(truth, calibrated, low, high, seeds):
    n = len(truth)
    return pd.DataFrame({
        "seed": seeds, "model": [f"m{i}" for i in range(n)], "metric": "tcpr", "truth": truth,
        "calibrated": calibrated, "judge_a": np.add(truth, 2.0), "judge_b": np.subtract(truth, 3.0),
        "oracle_disagreements": truth, "true_rates": truth, "ci_low": low, "ci_high": high,
        "adj_low": low, "adj_high": high, "n_disagreements": 10, "n_adjudicated": 5,
    })


def test_summarize_errors_and_clopper_pearson_coverage():
    truth = np.array([50.0, 60.0, 70.0, 80.0, np.nan])
    df = _frame(truth, truth + [1.0, -2.0, 0.5, 0.0, 0.0], [49, 61, 60, 70, 0], [51, 65, 80, 90, 1], [1, 1, 2, 2, 2])
    row = summarize(df).iloc[0]
    assert row["n_pairs"] == 4 and row["n_undefined"] == 1
    assert row["mae_calibrated"] == pytest.approx((1 + 2 + 0.5 + 0) / 4)
    assert row["bias_calibrated"] == pytest.approx((1 - 2 + 0.5 + 0) / 4)
    assert row["mae_judge_a"] == pytest.approx(2.0) and row["mae_judge_b"] == pytest.approx(3.0)
    assert row["covered"] == 3 and row["coverage"] == pytest.approx(0.75)
    low, high = proportion_confint(3, 4, alpha=0.05, method="beta")  # Clopper–Pearson
    assert row["coverage_low"] == pytest.approx(low, abs=1e-9)
    assert row["coverage_high"] == pytest.approx(high, abs=1e-9)
    assert row["win_a"] == 1.0 and row["win_b"] == 1.0


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="rng"):
        run_replicate(1, rng=1, scale="small")
    with pytest.raises(ValueError, match="level"):
        run_replicate(1, rng=np.random.default_rng(0), scale="small", level=1.5)
    with pytest.raises(ValueError, match="seeds"):
        run_replicates([])
    with pytest.raises(ValueError, match="ci_low"):
        summarize(pd.DataFrame({"seed": [1]}))
    with pytest.raises(ValueError, match="empty"):
        summarize(pd.DataFrame(columns=REPLICATE_COLUMNS))
