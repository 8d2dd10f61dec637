"""Paper-scale simulator (ReFormBench, arXiv:2610.19693, §4, App. A.3, A.6, A.7): counts and shapes, one generation."""

import time

import pytest

from reform_core.simulate import simulate


@pytest.fixture(scope="module")
def paper():
    start = time.perf_counter()
    sp = simulate(0)
    return sp, time.perf_counter() - start


def test_paper_scale(paper):
    sp, seconds = paper
    assert seconds < 20  # "a few seconds" (about 1 s on an idle core)
    inst = sp.instances()
    main = inst[inst.condition == "main"]

    # ReFormBench: 910 questions, 7 task types, 10 domains, 5,000 variants, 10 models
    assert len(sp.questions) == 910
    assert sp.questions["task_type"].value_counts().to_dict()["Knowledge QA"] == 163
    assert sp.questions["task_type"].nunique() == 7 and sp.questions["domain"].nunique() == 10
    assert len(sp.instructions) == 5000 and len(sp.models) == 10
    assert (main.groupby("model").size() == 15000).all()
    assert len(main) == 150_000
    assert sp.constraints.groupby("feature").ngroups <= 66
    assert sp.constraints.groupby("instruction")["category"].nunique().eq(3).all()

    # App. A.3.1: 87.67 % agreement; agreement varies by model
    agree = main["label_judge_a"] == main["label_judge_b"]
    assert abs(agree.mean() - 0.8767) < 0.01
    by_model = agree.groupby(main["model"]).mean()
    assert by_model.max() - by_model.min() > 0.03

    # App. A.6: 91,332 baseline annotations
    assert abs(len(sp.baseline) - 91_332) < 9_133

    # Table A11 / App. A.7.4: multiplicity of variants per question and per target
    per_q = sp.instructions.groupby("question").size()
    assert per_q.max() <= 30 and per_q.min() >= 1
    assert abs((per_q == 1).sum() - 256) <= 5
    targets = (
        sp.constraints.merge(sp.instructions[["instruction", "question"]])
        .groupby(["question", "feature", "mode"])
        .size()
    )
    share_recurring = (targets > 1).mean()
    assert 0.40 <= share_recurring <= 0.60
    assert 4_500 <= len(targets) <= 7_500

    # judge error rates differ by direction and by judge
    rates = {}
    for judge in sp.judges:
        lab = main[f"label_{judge}"]
        rates[judge] = ((lab[main.truth == 0] == 1).mean(), (lab[main.truth == 1] == 0).mean())
    (a_fp, a_ff), (b_fp, b_ff) = rates["judge_a"], rates["judge_b"]
    assert abs(a_fp - a_ff) > 0.01 and abs(b_fp - b_ff) > 0.02 and abs(a_ff - b_ff) > 0.02

    # truth: opposed targets harder; TCPR per model in a paper-like range
    by_group = main.groupby("baseline_opposed")["truth"].mean()
    assert by_group[True] < by_group[False]
    tcpr = main.groupby(["model", "instruction"])["truth"].min().groupby("model").mean()
    assert 0.35 < tcpr.min() < tcpr.max() < 0.85
