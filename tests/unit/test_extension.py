"""Extending a question-cluster plan (issue 36 item 6; :mod:`reform_core.estimators.extension`):
the extended sample is nested in the old one's complement (a question sampled before stays
sampled, with the same audits and doubled items), it is the plan's design at the raised
probabilities, and N more questions per model are expected."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reform_core.estimators import draws, extension
from reform_core.frames import CONDITION_MAIN
from reform_core.simulate import simulate

JA, JB = "label_judge_a", "label_judge_b"


@pytest.fixture(scope="module")
def main():
    inst = simulate(2, "small").instances()
    return inst[inst["condition"] == CONDITION_MAIN].reset_index(drop=True)


def _design(main, seed=0):
    return draws.default_design(main, seed=seed, judge_a=JA, judge_b=JB, margin=0.15)


def test_earlier_draws_are_kept_and_the_probability_rises_by_the_rule(main):
    d = _design(main)
    grown, table = extension.extended_design(d, main, 4, judge_a=JA, judge_b=JB)
    before = draws.draw(main, d, judge_a=JA, judge_b=JB)
    after = draws.draw(main, grown, judge_a=JA, judge_b=JB)
    # every task drawn before is drawn again, with the same kind, stratum and number of annotators
    old = before.set_index("iid")[["kind", "stratum", "required"]]
    assert old.equals(after.set_index("iid").loc[old.index, ["kind", "stratum", "required"]])
    clusters = extension.cluster_table(main, d, judge_a=JA, judge_b=JB)
    for r in table.itertuples(index=False):
        mine = clusters[clusters["model"] == r.model]
        left = int((~mine["sampled"]).sum())
        f = min(1.0, 4 / left)
        assert r.not_sampled == left and r.share == pytest.approx(f)
        assert grown.cluster_pi[r.model] == pytest.approx(d.cluster_pi[r.model] + f * (1 - d.cluster_pi[r.model]))
    now = extension.cluster_table(main, grown, judge_a=JA, judge_b=JB)
    assert (now["sampled"] | ~clusters["sampled"]).all()  # nested: sampled before ⇒ sampled now
    # nothing but the cluster probabilities changed
    assert (grown.seed, grown.audit_pi, grown.double_fraction) == (d.seed, d.audit_pi, d.double_fraction)


def test_n_more_questions_are_expected(main):
    """Over 400 plan seeds the mean number of new questions per model is N (= 3), within 4
    standard errors of the mean."""
    new = []
    for seed in range(400):
        d = _design(main, seed)
        grown, _ = extension.extended_design(d, main, 3, judge_a=JA, judge_b=JB)
        a = extension.cluster_table(main, d, judge_a=JA, judge_b=JB)
        b = extension.cluster_table(main, grown, judge_a=JA, judge_b=JB)
        new.extend((b["sampled"] & ~a["sampled"]).groupby(a["model"]).sum().tolist())
    new = np.asarray(new, dtype=float)
    assert abs(new.mean() - 3.0) < 4 * new.std(ddof=1) / np.sqrt(len(new)), new.mean()


def test_more_questions_than_left_takes_them_all_and_bad_counts_are_refused(main):
    d = _design(main)
    grown, table = extension.extended_design(d, main, 10_000, judge_a=JA, judge_b=JB)
    assert all(v == 1.0 for v in grown.cluster_pi.values()) and (table["share"] == 1.0).all()
    assert extension.cluster_table(main, grown, judge_a=JA, judge_b=JB)["sampled"].all()
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="questions must be an integer >= 1"):
            extension.extended_design(d, main, bad, judge_a=JA, judge_b=JB)


def test_new_tasks_are_the_ones_not_held_in_queue_order():
    all_tasks = pd.DataFrame({"iid": [5, 3, 9, 1], "queue_order": [2, 0, 3, 1], "model": "m"})
    got = extension.new_tasks(all_tasks, [3, 9])
    assert got["iid"].tolist() == [1, 5]
