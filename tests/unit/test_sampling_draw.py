"""Seeded stratified draw, agreement audit and double adjudication (docs/metrics.md#allocation;
docs/estimator.md#the-audit-of-agreements, #adjudicator-error)."""

import numpy as np
import pandas as pd
import pytest

from reform_core.sampling import audit_sample, disagreements, double_adjudication, draw, plan
from reform_core.simulate import simulate


@pytest.fixture(scope="module")
def project():
    return simulate(3, "small")


@pytest.fixture(scope="module")
def dis(project):
    return disagreements(project.instances(), judge_a="label_judge_a", judge_b="label_judge_b")


def test_disagreements_of_simulated_project(project, dis):
    inst = project.instances()
    differ = inst[inst.label_judge_a != inst.label_judge_b]
    assert sorted(dis.iid) == sorted(differ.iid)
    a1 = differ.set_index("iid").label_judge_a.reindex(dis.iid).to_numpy() == 1
    assert ((dis.direction == "A1B0").to_numpy() == a1).all()


def test_draw_follows_plan_and_is_reproducible(dis):
    p = plan(dis)
    s1 = draw(dis, p, rng=np.random.default_rng(7))
    s2 = draw(dis.sample(frac=1.0, random_state=1), p, rng=np.random.default_rng(7))
    pd.testing.assert_frame_equal(s1, s2)  # same seed, any input order -> same draw
    s3 = draw(dis, p, rng=np.random.default_rng(8))
    assert set(s1.iid) != set(s3.iid) or len(s1) == len(dis)
    got = s1.groupby("stratum").size()
    want = p.set_index("stratum")["planned"]
    pd.testing.assert_series_equal(got.reindex(want.index), want, check_names=False, check_dtype=False)
    assert s1.iid.is_unique and set(s1.iid) <= set(dis.iid)
    assert sorted(s1.queue_order) == list(range(len(s1)))
    # each drawn row keeps its own stratum
    merged = s1.merge(dis, on="iid", suffixes=("", "_src"))
    assert (merged.stratum == merged.stratum_src).all()


def test_draw_is_uniform_within_stratum():
    # one stratum of 10 items, 3 drawn: each item drawn with probability 0.3
    d = pd.DataFrame(
        {
            "iid": np.arange(10),
            "model": "m",
            "category": "c",
            "mode": "require",
            "direction": "A1B0",
            "stratum": "m|A1B0|c|require",
        }
    )
    p = pd.DataFrame({"stratum": ["m|A1B0|c|require"], "planned": [3]})
    rng = np.random.default_rng(0)
    hits = np.zeros(10)
    reps = 800
    for _ in range(reps):
        hits[draw(d, p, rng=rng).iid.to_numpy()] += 1
    # binomial sd of each share: sqrt(.3*.7/800) = 0.016; allow about 4 sd
    assert np.abs(hits / reps - 0.3).max() < 0.065
    assert hits.sum() == 3 * reps


def test_draw_rejects_bad_input(dis):
    p = plan(dis)
    with pytest.raises(ValueError, match="Generator"):
        draw(dis, p, rng=42)
    too_many = p.assign(planned=p["size"] + 1)
    with pytest.raises(ValueError, match="more than the stratum"):
        draw(dis, too_many, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="stratum"):
        draw(dis.drop(columns="stratum"), p, rng=np.random.default_rng(0))


def test_audit_sample(project):
    inst = project.instances()
    agree = inst[inst.label_judge_a == inst.label_judge_b]
    s = audit_sample(agree, 30, np.random.default_rng(0))
    assert len(s) == 30 and s.iid.is_unique and set(s.iid) <= set(agree.iid)
    assert s.groupby("model").size().min() >= 1
    assert (s.label_judge_a == s.label_judge_b).all()
    pd.testing.assert_frame_equal(s, audit_sample(agree, 30, np.random.default_rng(0)))
    assert len(audit_sample(agree.head(5), 50, np.random.default_rng(0))) == 5
    with pytest.raises(ValueError, match="n must"):
        audit_sample(agree, -1, np.random.default_rng(0))


def test_double_adjudication():
    sample = pd.DataFrame({"iid": np.arange(40)})
    out = double_adjudication(sample, 0.25, np.random.default_rng(0))
    assert out["double"].sum() == 10 and "double" not in sample
    again = double_adjudication(sample, 0.25, np.random.default_rng(0))
    assert (out["double"] == again["double"]).all()
    assert double_adjudication(sample, 0.0, np.random.default_rng(0))["double"].sum() == 0
    assert double_adjudication(sample, 1.0, np.random.default_rng(0))["double"].all()
    with pytest.raises(ValueError, match="fraction"):
        double_adjudication(sample, 1.5, np.random.default_rng(0))
