"""Estimator validation on the simulator (CI-sized), plus the validation helpers.

The full run — 12 scenarios × 100 paper-scale replicates with PPI++ as comparator — is
``python bench/bench_validation.py`` (results in bench/results/validation.md).
"""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from bench.validation import REPLICATE_COLUMNS, run_replicate, simulated_decisions, summarize
from reform_core.estimators import draws
from reform_core.simulate import simulate

# Reduced scale: 150 questions, 800 instructions, 4 models; judges wrong together on 1 %.
SCALE = dict(scale="paper", n_questions=150, n_instructions=800, n_models=4)
SEEDS = range(100, 110)


@pytest.fixture(scope="module")
def replicates():
    return pd.concat(
        [run_replicate(s, both_wrong=0.01, n_boot=200, error_boot=10, **SCALE) for s in SEEDS], ignore_index=True
    )


@pytest.fixture(scope="module")
def summary(replicates):
    return summarize(replicates).set_index(["estimator", "metric"])


@pytest.mark.parametrize("metric", ["tcpr", "emcr"])
def test_default_estimator_removes_the_judges_bias(summary, metric):
    ours, judge = summary.loc[("cluster", metric)], summary.loc[("judge_a", metric)]
    assert ours["n_pairs"] == 4 * len(SEEDS)
    # judges wrong together bias the raw scores down; the audit corrects it
    assert judge["bias"] < -1.0
    assert abs(ours["bias"]) < abs(judge["bias"]) / 2
    assert abs(ours["bias"]) < 3 * ours["bias_se"] + 0.3


@pytest.mark.parametrize("metric", ["tcpr", "emcr"])
def test_default_measurement_intervals_cover_the_fixed_benchmark(summary, metric):
    assert summary.loc[("cluster", metric), "coverage"] >= 0.85
    # the paper's rule assumes agreeing judges are right: its measurement interval does not cover
    assert summary.loc[("stratified", metric), "coverage"] < summary.loc[("cluster", metric), "coverage"]


def test_truth_and_raw_judge_tcpr_match_a_direct_computation(replicates):
    # Outside reference: TCPR = mean over instructions of the product of the three labels.
    seed = SEEDS[0]
    inst = simulate(seed, both_wrong=0.01, **SCALE).instances()
    inst = inst[inst["condition"] == "main"]
    rep = replicates[(replicates["seed"] == seed) & (replicates["metric"] == "tcpr")]
    for column, estimator in (("truth", None), ("label_judge_a", "judge_a"), ("label_judge_b", "judge_b")):
        direct = 100 * inst.groupby(["model", "instruction"])[column].prod().groupby("model").mean()
        got = rep[rep["estimator"] == (estimator or "judge_a")].set_index("model")
        np.testing.assert_allclose(got["estimate" if estimator else "truth"], direct.reindex(got.index), rtol=1e-12)


def test_a_replicate_is_reproducible_from_its_seed():
    kw = dict(scale="small", n_boot=50, error_boot=5, human_error=0.05)
    first = run_replicate(7, **kw)
    again = run_replicate(7, **kw)
    other = run_replicate(8, **kw)
    assert list(first.columns) == REPLICATE_COLUMNS
    pd.testing.assert_frame_equal(first, again)
    assert not first["estimate"].equals(other["estimate"])


def test_simulated_annotators_are_distinct_per_task_and_err_at_the_given_rate():
    sim = simulate(3, "small")
    inst = sim.instances()
    tasks = draws.draw(
        inst,
        draws.default_design(inst, seed=3, judge_a="label_judge_a", judge_b="label_judge_b", double_fraction=1.0),
        judge_a="label_judge_a",
        judge_b="label_judge_b",
    )
    truth = inst.set_index("iid")["truth"].astype(float)
    dec = simulated_decisions(truth, tasks, 0.2, np.random.default_rng(0))
    assert len(dec) == int(tasks["required"].sum())
    assert (dec.groupby("iid")["annotator"].nunique() == dec.groupby("iid").size()).all()
    wrong = (dec["h"].to_numpy() != truth.reindex(dec["iid"]).to_numpy()).mean()
    lo, hi = proportion_confint(int(wrong * len(dec)), len(dec), alpha=0.001, method="beta")
    assert lo <= 0.2 <= hi


def test_simulated_opinions_follow_the_plans_rule_to_a_third():
    """Under the rule every audit of the default plan gets a second decision exactly when its
    first differs from the reference and a third exactly when the second does too, each from
    an annotator not yet on the item."""
    sim = simulate(3, "small")
    inst = sim.instances()
    params = draws.default_design(inst, seed=3, judge_a="label_judge_a", judge_b="label_judge_b", double_fraction=0.0)
    tasks = draws.draw(inst, params, judge_a="label_judge_a", judge_b="label_judge_b")
    agreed = inst.set_index("iid")["label_judge_a"].reindex(tasks["iid"]).to_numpy(dtype=float)
    ref = pd.Series(params.second_opinion_reference(tasks["iid"], tasks["kind"], agreed), index=tasks["iid"])
    depth = pd.Series(params.opinion_depth(tasks["kind"]), index=tasks["iid"])
    truth = inst.set_index("iid")["truth"].astype(float)
    dec = simulated_decisions(truth, tasks, 0.3, np.random.default_rng(1), reference=ref, depth=depth)
    assert (dec.groupby("iid")["annotator"].nunique() == dec.groupby("iid").size()).all()
    kinds = tasks.set_index("iid")["kind"]
    seen = {1: 0, 2: 0, 3: 0}
    for iid, hs in dec.groupby("iid", sort=False)["h"]:
        hs = list(hs)
        r, most = ref[iid], depth[iid]
        expect = next((k + 1 for k, h in enumerate(hs) if h == r), len(hs))
        assert len(hs) == min(expect, most) and (len(hs) == most or hs[-1] == r), (iid, hs, r)
        assert all(h != r for h in hs[:-1])
        if len(hs) == 3:
            assert kinds[iid] == "audit"
        seen[len(hs)] += 1
    assert seen[2] > 0 and seen[3] > 0  # at 30 % error both happen


def _frame(truth, estimate, low, high):
    n = len(truth)
    return pd.DataFrame(
        {
            "seed": 1,
            "model": [f"m{i}" for i in range(n)],
            "metric": "tcpr",
            "truth": truth,
            "estimator": "cluster",
            "estimate": estimate,
            "lo": low,
            "hi": high,
            "pop_lo": np.nan,
            "pop_hi": np.nan,
            "decisions": 10,
        }
    )


def test_summarize_errors_and_clopper_pearson_coverage():
    truth = np.array([50.0, 60.0, 70.0, 80.0, np.nan])
    df = _frame(truth, truth + [1.0, -2.0, 0.5, 0.0, 0.0], [49, 61, 60, 70, 0], [51, 65, 80, 90, 1])
    row = summarize(df).iloc[0]
    assert row["n_pairs"] == 4 and row["n_undefined"] == 1
    assert row["mae"] == pytest.approx((1 + 2 + 0.5 + 0) / 4)
    assert row["bias"] == pytest.approx((1 - 2 + 0.5 + 0) / 4)
    assert row["coverage"] == pytest.approx(0.75)
    low, high = proportion_confint(3, 4, alpha=0.05, method="beta")  # Clopper–Pearson
    assert row["coverage_low"] == pytest.approx(low, abs=1e-9)
    assert row["coverage_high"] == pytest.approx(high, abs=1e-9)
    assert row["width"] == pytest.approx(np.mean([2, 4, 20, 20]))


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="level"):
        run_replicate(1, scale="small", level=1.5)
    with pytest.raises(ValueError, match="human_error"):
        simulated_decisions(
            pd.Series(dtype=float), pd.DataFrame({"iid": [], "required": []}), 0.7, np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="estimate"):
        summarize(pd.DataFrame({"seed": [1]}))
    with pytest.raises(ValueError, match="empty"):
        summarize(pd.DataFrame(columns=REPLICATE_COLUMNS))
