"""Cluster-bootstrap intervals (docs/metrics.md#intervals), checked against brute-force resampled frames."""

import numpy as np
import pandas as pd
import pytest

from reform_core.calibration import calibrate_stratified, stratum_rates
from reform_core.metrics import reform
from reform_core.metrics.intervals import bootstrap_intervals, replicate_scores, row_strata
from reform_core.simulate import simulate
from reform_core.unit_index import build_index

JA, JB = "label_judge_a", "label_judge_b"


@pytest.fixture(scope="module")
def project():
    sim = simulate(seed=3, scale="small")
    inst = sim.instances()
    dis = inst[inst[JA] != inst[JB]]
    sample = dis.sample(frac=0.5, random_state=0)
    adj = pd.DataFrame({"iid": sample["iid"].to_numpy(), "a": sim.oracle(sample["iid"]).to_numpy()})
    cal = calibrate_stratified(inst, adj, judge_a=JA, judge_b=JB)
    rates = stratum_rates(inst, adj, judge_a=JA, judge_b=JB)
    assert (cal["source"] == "stratum").sum() > 10  # the adjudication resampling has work to do
    return cal, rates


def resampled_frame(df, index, weights, p_override=None):
    """Brute force: copy every question w_q times (as distinct questions) and rescore."""
    main = df[df["condition"] == "main"].copy()
    if p_override is not None:
        main["p"] = p_override
    parts = []
    for code, w in enumerate(weights):
        q = main[main["question"] == index.questions[code]]
        for c in range(int(w)):
            parts.append(q.assign(question=q["question"] + f"#{c}", instruction=q["instruction"] + f"#{c}"))
    return pd.concat(parts, ignore_index=True)


def test_question_replicate_equals_brute_force(project):
    cal, _ = project
    index = build_index(cal)
    pv = index.pass_vector(cal, "p")
    rng = np.random.default_rng(11)
    nq = len(index.questions)
    weights = rng.multinomial(nq, np.full(nq, 1 / nq), size=2)
    reps = replicate_scores(index, pv, weights)
    for b in range(2):
        frame = resampled_frame(cal, index, weights[b])
        brute = reform.table2(frame)
        for metric in ["tcpr", "emcr", "r1", "r2", "r3"]:
            np.testing.assert_allclose(reps[metric][b], brute[metric], rtol=1e-10, equal_nan=True)
        np.testing.assert_allclose(reps["constraint_level"][b], _constraint_level(frame, index), rtol=1e-10)


def _constraint_level(frame, index):
    """Mean p over every constraint row of each model, by a literal loop (IFEval instruction level)."""
    out = []
    for model in index.models:
        ps = [p for m, p in zip(frame["model"], frame["p"]) if m == model]
        out.append(100 * sum(ps) / len(ps))
    return np.array(out)


def test_adjudication_replicate_equals_brute_force(project):
    cal, rates = project
    index = build_index(cal)
    pv = index.pass_vector(cal, "p")
    h, pi_hat, n_rev = row_strata(index, cal, rates, pv)
    rng = np.random.default_rng(5)
    pi = 0.25 + 0.5 * pi_hat  # any replicate rates, all different from the point rates
    nq = len(index.questions)
    weights = rng.multinomial(nq, np.full(nq, 1 / nq), size=1)
    reps = replicate_scores(index, pv, weights, row_stratum=h, pi=pi[:, None])
    plain = replicate_scores(index, pv, weights)
    assert not np.allclose(plain["tcpr"], reps["tcpr"])  # the resampled rates matter
    p_new = np.where(h >= 0, pi[np.maximum(h, 0)], pv)
    # index rows are the main rows in frame order
    frame = resampled_frame(cal, index, weights[0], p_override=p_new)
    brute = reform.table2(frame)
    for metric in ["tcpr", "emcr", "r1", "r2", "r3"]:
        np.testing.assert_allclose(reps[metric][0], brute[metric], rtol=1e-10, equal_nan=True)
    assert not np.allclose(plain["constraint_level"], reps["constraint_level"])
    np.testing.assert_allclose(reps["constraint_level"][0], _constraint_level(frame, index), rtol=1e-10)


def test_unit_weights_and_point_rates_give_the_point_estimate(project):
    cal, rates = project
    index = build_index(cal)
    pv = index.pass_vector(cal, "p")
    h, pi_hat, _ = row_strata(index, cal, rates, pv)
    reps = replicate_scores(index, pv, np.ones((1, len(index.questions))), row_stratum=h, pi=pi_hat[:, None])
    point = reform.table2(cal)
    np.testing.assert_allclose(reps["emcr"][0], point["emcr"], rtol=1e-12)
    np.testing.assert_allclose(reps["tcpr"][0], point["tcpr"], rtol=1e-12)


def test_intervals_reproducible_and_cover_the_estimate(project):
    cal, rates = project
    a = bootstrap_intervals(cal, n_boot=300, rng=np.random.default_rng(42), rates=rates)
    b = bootstrap_intervals(cal, n_boot=300, rng=np.random.default_rng(42), rates=rates)
    c = bootstrap_intervals(cal, n_boot=300, rng=np.random.default_rng(43), rates=rates)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["ci_low"], c["ci_low"], equal_nan=True)
    main = a[a["metric"].isin(["tcpr", "emcr", "constraint_level"])]
    level = a[a["metric"] == "constraint_level"].set_index("model")["estimate"]
    expect = 100 * cal[cal["condition"] == "main"].groupby("model")["p"].mean()
    np.testing.assert_allclose(level.loc[expect.index], expect, rtol=1e-12)
    assert ((main["ci_low"] <= main["estimate"]) & (main["estimate"] <= main["ci_high"])).all()
    assert (main["ci_high"] > main["ci_low"]).all()
    q_only = bootstrap_intervals(cal, n_boot=300, rng=np.random.default_rng(42))
    assert (q_only["estimate"].to_numpy() == a["estimate"].to_numpy()).all()


def test_bad_arguments(project):
    cal, rates = project
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_intervals(cal, n_boot=0)
    with pytest.raises(ValueError, match="rng"):
        bootstrap_intervals(cal, n_boot=10, rng=np.random.RandomState(0))
    with pytest.raises(ValueError, match="source"):
        bootstrap_intervals(cal.drop(columns="source"), n_boot=10, rates=rates)
    shifted = rates.assign(pi_hat=rates["pi_hat"] / 2)
    with pytest.raises(ValueError, match="rates"):
        bootstrap_intervals(cal, n_boot=10, rates=shifted)
