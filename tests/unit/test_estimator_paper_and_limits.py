"""The paper's estimators with their named intervals (reform_core.estimators.paper) against
hand-computed values and scipy's Beta quantiles, and the default estimator's limit when
everything is decided twice.

Hand-computed project: one model, four one-instruction questions with three constraints
each (categories c1, c2, c3, mode require). Position 1 of every instruction is a
disagreement A1B0 (one stratum, ``m|A1B0|c1|require``); every other row is an agreed pass.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bench.loop_reference import loop_table2
from reform_core.estimators import cluster, design, draws, paper
from reform_core.simulate import simulate


def hand_project() -> pd.DataFrame:
    rows = []
    for q in range(4):
        for pos, cat in enumerate(("c1", "c2", "c3"), start=1):
            dis = pos == 1
            rows.append(
                {
                    "iid": 10 * q + pos,
                    "model": "m",
                    "question": f"q{q}",
                    "instruction": f"i{q}",
                    "condition": "main",
                    "task_type": "t",
                    "position": pos,
                    "feature": f"f{pos}",
                    "category": cat,
                    "mode": "require",
                    "baseline_opposed": True,
                    "label_a": 1.0,
                    "label_b": 0.0 if dis else 1.0,
                }
            )
    return pd.DataFrame(rows)


def test_stratified_point_and_a_fully_passing_stratum_still_varies_like_its_jeffreys_posterior():
    inst = hand_project()
    # three of the four disagreements reviewed, all judged pass: π̂ = 3/3 = 1
    dec = pd.DataFrame({"iid": [1, 11, 21], "h": [1.0, 1.0, 1.0]})
    scores, cal = paper.stratified(inst, dec, n_boot=40_000, rng=np.random.default_rng(1))
    s = scores.set_index("metric").loc["tcpr"]
    # by hand: reviewed rows take their decision, the unreviewed one π̂ = 1, the rest agree: TCPR = 4/4
    assert s["estimate"] == pytest.approx(100.0)
    # measurement: p of the unreviewed row ~ Beta(3 + ½, 0 + ½), TCPR = (3 + p)/4
    q_lo, q_hi = stats.beta.ppf([0.025, 0.975], 3.5, 0.5)
    assert s["measurement_lo"] == pytest.approx(100 * (3 + q_lo) / 4, abs=0.15)
    assert s["measurement_hi"] == pytest.approx(100 * (3 + q_hi) / 4, abs=0.02)
    assert s["measurement_hi"] - s["measurement_lo"] > 5  # a 100 % stratum does not claim certainty


def test_stratified_with_no_review_yet_draws_the_unknown_rate_from_the_jeffreys_prior():
    """No decision at all: the provisional point (fallback ½ per disagreement) must not come with a
    zero-width measurement interval (the IFEval Scores page showed lo == hi before any review)."""
    inst = hand_project()
    scores, cal = paper.stratified(
        inst, pd.DataFrame({"iid": [], "h": []}), n_boot=40_000, rng=np.random.default_rng(3)
    )
    s = scores.set_index("metric").loc["tcpr"]
    assert cal["provisional"].any() and s["estimate"] == pytest.approx(50.0)  # 4 instructions × p = ½
    # the one stratum's rate p ~ Beta(½, ½) (prior: nothing reviewed); TCPR = 100 p
    q_lo, q_hi = stats.beta.ppf([0.025, 0.975], 0.5, 0.5)
    assert s["measurement_lo"] == pytest.approx(100 * q_lo, abs=0.1)
    assert s["measurement_hi"] == pytest.approx(100 * q_hi, abs=0.1)


def test_pooled_weight_by_hand_and_audit_decisions_are_ignored():
    inst = hand_project()
    # decisions on disagreements: 2 side with A (h = 1 = A's label), 1 with B; on agreements (audits): 3 "wrong"
    dec = pd.DataFrame({"iid": [1, 11, 21, 2, 12, 22], "h": [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]})
    scores, cal = paper.pooled(inst, dec, n_boot=20_000, rng=np.random.default_rng(2))
    assert cal.attrs["w_a"] == pytest.approx(2 / 3) and cal.attrs["n_pool"] == 3
    # every instruction: W_A · 1 · 1 → TCPR = 2/3
    s = scores.set_index("metric").loc["tcpr"]
    assert s["estimate"] == pytest.approx(100 * 2 / 3)
    q_lo, q_hi = stats.beta.ppf([0.025, 0.975], 2.5, 1.5)  # W_A ~ Beta(k + ½, n − k + ½)
    assert s["measurement_lo"] == pytest.approx(100 * q_lo, abs=0.4)
    assert s["measurement_hi"] == pytest.approx(100 * q_hi, abs=0.4)


def test_everything_decided_twice_in_agreement_shrinks_the_interval_to_the_exact_score():
    """Issue 13: when every instance of a small project is adjudicated twice and all the
    decisions agree, the measurement interval lies within 0.5 pp of the exact score —
    with the adjudicator-error model *fitted* from those decisions, not assumed."""
    sim = simulate(3, "small", both_wrong=0.02)
    inst = sim.instances()
    inst = inst[inst["condition"] == "main"].reset_index(drop=True)
    ja, jb = (f"label_{j}" for j in sim.judges)
    models = inst["model"].unique()
    prm = design.create({m: 1.0 for m in models}, {m: 1.0 for m in models}, audit_pi=1.0, double_fraction=1.0, seed=5)
    tasks = draws.draw(inst, prm, judge_a=ja, judge_b=jb)
    assert set(tasks["iid"]) == set(inst["iid"]) and (tasks["required"] == 2).all()
    truth = inst.set_index("iid")["truth"].astype(float)
    rng = np.random.default_rng(0)
    first = rng.integers(0, 4, len(tasks))
    dec = pd.DataFrame(
        {
            "iid": np.repeat(tasks["iid"].to_numpy(), 2),
            "annotator": [f"a{(f + k) % 4}" for f in first for k in (0, 1)],
            "h": np.repeat(truth.reindex(tasks["iid"]).to_numpy(), 2),
        }
    )
    est = cluster.estimate(inst, tasks, dec, prm, judge_a=ja, judge_b=jb, error_boot=20, rng=rng)
    assert est.error_model.identified
    exact = loop_table2(inst, p="truth").set_index("model")
    exact["constraint_level"] = 100 * inst.groupby("model")["truth"].mean()
    table = est.table.set_index("model")
    checked = 0
    for m in models:
        for metric in ("tcpr", "emcr", "r1", "r2", "r3", "constraint_level"):
            want = exact.loc[m, metric]
            if np.isnan(want):
                continue
            lo, hi = table.loc[m, f"{metric}_lo"], table.loc[m, f"{metric}_hi"]
            assert abs(lo - want) <= 0.5 and abs(hi - want) <= 0.5, (m, metric, lo, want, hi)
            checked += 1
    assert checked >= 12
    # and with a judge pair that disagrees with the truth, the judges alone would be off
    assert (inst[ja] != inst["truth"]).any()


def test_population_interval_holds_the_measurement_interval():
    """Resampling questions only adds uncertainty: on a small project whose audit finds no
    error (the Jeffreys floor binds) the population interval contains the measurement one
    for every model and metric (it did not before: helper 13a's report, TCPR [71.9, 87.2]
    against a measurement interval of [67.1, 91.3])."""
    sim = simulate(5, "small", both_wrong=0.01)
    inst = sim.instances()
    inst = inst[inst["condition"] == "main"].reset_index(drop=True)
    ja, jb = (f"label_{j}" for j in sim.judges)
    prm = draws.default_design(inst, seed=0, judge_a=ja, judge_b=jb)
    tasks = draws.draw(inst, prm, judge_a=ja, judge_b=jb)
    truth = inst.set_index("iid")["truth"].astype(float)
    dec = pd.DataFrame(
        {
            "iid": np.repeat(tasks["iid"].to_numpy(), 2),
            "annotator": ["a", "b"] * len(tasks),
            "h": np.repeat(truth.reindex(tasks["iid"]).to_numpy(), 2),
        }
    )
    est = cluster.estimate(inst, tasks, dec, prm, judge_a=ja, judge_b=jb, error_boot=5)
    assert any((v > 0).any() for v in est.floor_variance.values())  # the floor adds variance here
    f = cluster.scores_frame(est, cluster.population_intervals(est, n_boot=500, rng=np.random.default_rng(1)))
    f = f.dropna(subset=["measurement_lo"])
    assert len(f) >= 12
    assert (f["population_lo"] <= f["measurement_lo"] + 1e-9).all()
    assert (f["population_hi"] >= f["measurement_hi"] - 1e-9).all()
    assert (f["population_hi"] - f["population_lo"] > f["measurement_hi"] - f["measurement_lo"]).any()
