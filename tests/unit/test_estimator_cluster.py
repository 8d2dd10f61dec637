"""The default estimator (question-cluster difference estimator), checked exactly.

Unbiasedness is a statement about the design: averaged over every possible draw, the
estimate equals the true score of the fixed benchmark. On a tiny project the draws can be
enumerated, so these tests compute that average *exactly* (every pattern of sampled
clusters and audited rows with its probability) and compare it with the true scores from
the literal loop of :mod:`bench.loop_reference` — not with the estimator's
own engine. The project has correlated truths (a target fails in every variant) and an
agreement on which both judges are wrong.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from bench.loop_reference import loop_table2
from reform_core.estimators import adjudicator_error as ae
from reform_core.estimators import allocation, cluster, design, draws
from reform_core.estimators.cluster.audit_variance import audit_composite, audit_floor
from reform_core.unit_index import build_index

CATS = {"f1": "c1", "f2": "c2", "f3": "c3", "f4": "c3", "f5": "c1"}


def tiny_project() -> pd.DataFrame:
    """One model, four questions; rows: (question, instruction, feature, truth, label_a, label_b)."""
    spec = [
        # q1: a target (f1) that fails in both variants; judges split on both rows
        ("q1", "i1", "f1", 0, 1, 0),
        ("q1", "i1", "f2", 1, 1, 1),
        ("q1", "i1", "f3", 1, 1, 1),
        ("q1", "i2", "f1", 0, 0, 1),
        ("q1", "i2", "f2", 1, 1, 1),
        ("q1", "i2", "f4", 1, 1, 0),
        # q2: both judges wrong on (i3, f2); one disagreement
        ("q2", "i3", "f1", 1, 1, 1),
        ("q2", "i3", "f2", 0, 1, 1),
        ("q2", "i3", "f3", 1, 0, 1),
        ("q2", "i4", "f1", 1, 1, 1),
        ("q2", "i4", "f2", 1, 1, 1),
        ("q2", "i4", "f4", 0, 0, 0),
        # q3: a single instruction, judges agree everywhere (rightly)
        ("q3", "i5", "f1", 1, 1, 1),
        ("q3", "i5", "f2", 1, 1, 1),
        ("q3", "i5", "f5", 0, 0, 0),
        # q4: one disagreement, an agreed fail that is in truth a pass
        ("q4", "i6", "f1", 1, 1, 1),
        ("q4", "i6", "f2", 1, 0, 0),
        ("q4", "i6", "f3", 1, 1, 1),
        ("q4", "i7", "f1", 1, 1, 0),
        ("q4", "i7", "f2", 1, 1, 1),
        ("q4", "i7", "f4", 1, 1, 1),
    ]
    return toy_frame(spec, baseline_opposed=lambda df: df["feature"] != "f5")


def toy_frame(spec: list, *, baseline_opposed) -> pd.DataFrame:
    """INSTANCES of one model from rows (question, instruction, feature, truth, label_a, label_b)."""
    df = pd.DataFrame(spec, columns=["question", "instruction", "feature", "truth", "label_a", "label_b"])
    df["iid"] = np.arange(1, len(df) + 1, dtype=np.int64)
    df = df.assign(model="m", condition="main", task_type="t", mode="require", category=df["feature"].map(CATS))
    df["baseline_opposed"] = baseline_opposed(df)
    for c in ("truth", "label_a", "label_b"):
        df[c] = df[c].astype(float)
    return df


def params(
    pi_c: float, pi_0: float, pi_a: float, allocation: str = "gradient", unit: str = "row", second_opinion: str = "none"
) -> dict:
    return design.create(
        {"m": pi_c},
        {"m": pi_0},
        audit_pi=pi_a,
        double_fraction=0.0,
        seed=11,
        folds=2,
        audit_allocation=allocation,
        audit_unit=unit,
        second_opinion=second_opinion,
    )


def row_audit_pi(inst: pd.DataFrame, prm: dict) -> dict:
    """π_A of each agreement (by iid) under the plan's allocation rule."""
    index = build_index(inst)
    rows = inst.iloc[index.row_pos]
    pa = allocation.audit_row_probabilities(prm, index, rows, rows["label_a"].to_numpy(), rows["label_b"].to_numpy())
    return dict(zip(rows["iid"].to_numpy(), pa))


def perfect_decisions(inst: pd.DataFrame, iids) -> pd.DataFrame:
    sel = inst[inst["iid"].isin(list(iids))]
    return pd.DataFrame({"iid": sel["iid"].to_numpy(), "annotator": "ann", "h": sel["truth"].to_numpy()})


def expected_estimate(inst: pd.DataFrame, prm: dict, metrics) -> dict:
    """E[θ̂] over every realisation of the two-stage design, by enumeration."""
    clusters = sorted(inst["question"].unique())
    has_dis = inst.assign(d=inst["label_a"] != inst["label_b"]).groupby("question")["d"].any()
    agree = inst[inst["label_a"] == inst["label_b"]]
    pa_of = row_audit_pi(inst, prm)
    total = {m: 0.0 for m in metrics}
    for picked in itertools.product([False, True], repeat=len(clusters)):
        p_c = np.prod(
            [
                (prm.cluster_pi["m"] if has_dis[q] else prm.cluster_pi0["m"])
                if z
                else 1 - (prm.cluster_pi["m"] if has_dis[q] else prm.cluster_pi0["m"])
                for q, z in zip(clusters, picked)
            ]
        )
        if p_c == 0:
            continue
        chosen = [q for q, z in zip(clusters, picked) if z]
        cand = agree[agree["question"].isin(chosen)]["iid"].tolist()
        for audits in itertools.product([False, True], repeat=len(cand)):
            p_a = np.prod([pa_of[i] if z else 1 - pa_of[i] for i, z in zip(cand, audits)])
            if p_a == 0:
                continue
            audited = [i for i, z in zip(cand, audits) if z]
            dis = inst[(inst["label_a"] != inst["label_b"]) & inst["question"].isin(chosen)]["iid"].tolist()
            tasks = pd.DataFrame({"iid": dis + audited})
            est = cluster.estimate(
                inst,
                tasks,
                perfect_decisions(inst, dis + audited),
                prm,
                error_boot=0,
                error_model=ae.perfect(["ann"]),
                realised={"clusters": [("m", q) for q in chosen], "audits": audited},
            )
            row = est.table.iloc[0]
            for m in metrics:
                total[m] += p_c * p_a * row[m]
    return total


METRICS = ["tcpr", "r1", "r2", "r3", "emcr", "constraint_level"]


def truth_scores(inst: pd.DataFrame) -> dict:
    t = loop_table2(inst, p="truth").iloc[0]
    out = {m: t[m] for m in ("tcpr", "r1", "r2", "r3", "emcr")}
    out["constraint_level"] = 100 * inst["truth"].mean()
    return out


def test_the_project_breaks_the_independence_assumption():
    inst = tiny_project()
    judge = loop_table2(inst, p="label_a").iloc[0]
    truth = truth_scores(inst)
    assert judge["emcr"] != pytest.approx(truth["emcr"])  # the judges alone are off


@pytest.mark.parametrize("pi_c,pi_0", [(0.5, 0.5), (0.3, 0.8)])
def test_cluster_stage_is_exactly_unbiased(pi_c, pi_0):
    inst = tiny_project()
    prm = params(pi_c, pi_0, 0.0)
    got = expected_estimate(inst, prm, METRICS)
    # without an audit the estimator targets the score with agreed labels taken as right
    agreed_right = inst.assign(t=np.where(inst["label_a"] == inst["label_b"], inst["label_a"], inst["truth"]))
    want = loop_table2(agreed_right, p="t").iloc[0]
    for m in ("tcpr", "r1", "r2", "r3", "emcr"):
        assert got[m] == pytest.approx(want[m], abs=1e-9), m


def audit_project() -> pd.DataFrame:
    """q2 of the tiny project (both judges wrong on one row) and a one-instruction question
    with an agreed fail that is in truth a pass: 7 agreements, so 2^7 audit patterns."""
    inst = tiny_project()
    q2 = inst[inst["question"] == "q2"]
    q5 = pd.DataFrame(
        {
            "question": "q5",
            "instruction": "i8",
            "feature": ["f1", "f2", "f3"],
            "truth": [1.0, 1.0, 1.0],
            "label_a": [1.0, 0.0, 1.0],
            "label_b": [1.0, 0.0, 0.0],
        }
    )
    q5 = q5.assign(
        iid=[101, 102, 103],
        model="m",
        condition="main",
        task_type="t",
        mode="require",
        category=q5["feature"].map(CATS),
        baseline_opposed=True,
    )
    return pd.concat([q2, q5[q2.columns]], ignore_index=True)


@pytest.mark.parametrize("pi_c,allocation", [(1.0, "gradient"), (0.5, "gradient"), (0.5, "uniform")])
def test_two_stage_design_with_audit_is_exactly_unbiased_for_the_true_scores(pi_c, allocation):
    inst = audit_project()
    prm = params(pi_c, pi_c, 0.5, allocation)
    if allocation == "gradient":  # the allocation really varies, and keeps every agreement auditable
        pa = np.array([v for v in row_audit_pi(inst, prm).values() if v > 0])
        assert pa.min() > 0.05 and pa.max() - pa.min() > 0.1 and pa.mean() == pytest.approx(0.5)
    got = expected_estimate(inst, prm, METRICS)
    want = truth_scores(inst)
    agreed_right = inst.assign(t=np.where(inst["label_a"] == inst["label_b"], inst["label_a"], inst["truth"]))
    no_audit = loop_table2(agreed_right, p="t").iloc[0]
    checked = 0
    for m in METRICS:
        if np.isnan(want[m]):
            continue
        checked += 1
        if m == "constraint_level":  # a plain sum: exact
            assert got[m] == pytest.approx(want[m], abs=1e-9), m
        else:
            # products (TCPR, R^K, EMCR): linear audit + higher-order terms at their predicted value
            # (docs/estimator.md, "Long products"): exact up to that prediction, which in this
            # 2-question toy rests on a handful of audits (a predicted both-wrong rate near 1/7, so the
            # second-order miss is ~2 % of one unit, and one unit weighs up to 50 pp: measured −2.1 pp
            # on TCPR and −0.80 pp on R3 with π_c = 1, about −1.8 pp on R3 with π_c = 0.5 and a uniform
            # audit, a few tenths on R1/R2); leaving the audit out would be off by 5–50 pp here
            assert got[m] == pytest.approx(want[m], abs=2.5), m
            if m != "tcpr":  # the toy's both-wrong errors sit in joint units, not in its instructions' products
                assert abs(no_audit[m] - want[m]) > 5, m
    assert checked >= 4


def test_everything_adjudicated_gives_the_exact_scores():
    inst = tiny_project()
    prm = params(1.0, 1.0, 1.0)
    tasks = draws.draw(inst, prm)
    assert set(tasks["iid"]) == set(inst["iid"])  # every row is a task
    est = cluster.estimate(
        inst, tasks, perfect_decisions(inst, inst["iid"]), prm, error_boot=0, error_model=ae.perfect(["ann"])
    )
    want = truth_scores(inst)
    row = est.table.iloc[0]
    for m in METRICS:
        assert row[m] == pytest.approx(want[m], abs=1e-9), m
        assert row[f"se_{m}"] == pytest.approx(0.0, abs=1e-6), m  # nothing left to sample


def test_item_estimates_are_exactly_unbiased_for_any_pattern_set():
    # E[f | y] computed by enumerating every outcome pattern of 1, 2 and 3 decisions
    rates = pd.Series({"a": 0.92, "b": 0.85, "c": 0.97})
    spec = pd.Series({"a": 0.9, "b": 0.95, "c": 0.8})
    model = ae.ErrorModel(
        rates, spec, (0.9, 0.9), pd.Series(dtype=float), True, pd.Series(dtype=int), pd.Series(dtype=int)
    )
    for anns in (["a"], ["a", "b"], ["a", "b", "c"]):
        for prior in (0.1, 0.5, 0.93):
            for y in (0, 1):
                mean = 0.0
                for pattern in itertools.product([0, 1], repeat=len(anns)):
                    p = np.prod(
                        [
                            (rates[a] if h else 1 - rates[a]) if y else (1 - spec[a] if h else spec[a])
                            for a, h in zip(anns, pattern)
                        ]
                    )
                    d = pd.DataFrame({"iid": 1, "annotator": anns, "h": list(pattern)})
                    f = ae.item_estimates(d, model, pd.Series({1: prior}))["y_tilde"].iloc[0]
                    mean += p * f
                assert mean == pytest.approx(y, abs=1e-9), (anns, prior, y)


def test_em_matches_a_literal_dawid_skene_loop():
    """With the smoothing priors switched off, fit() is maximum-likelihood Dawid–Skene;
    a literal EM written from the model (per item, per annotator loops) must agree."""
    rng = np.random.default_rng(5)
    rows = []
    for item in range(300):
        group = item % 2
        y = int(rng.random() < (0.8 if group else 0.2))
        for a in rng.choice(["x", "y", "z"], size=2, replace=False):
            acc = {"x": 0.9, "y": 0.8, "z": 0.95}[a]
            rows.append((item, a, y if rng.random() < acc else 1 - y, f"g{group}"))
    d = pd.DataFrame(rows, columns=["iid", "annotator", "h", "group"])
    fitted = ae.fit(d, prior_strength=0.0, pooled_prior_strength=0.0)
    # literal EM
    anns = sorted(d["annotator"].unique())
    alpha = {a: 0.9 for a in anns}
    beta = {a: 0.9 for a in anns}
    rho = {"g0": 0.5, "g1": 0.5}
    items: dict = {}
    for i, a, h, grp in d.itertuples(index=False):
        items.setdefault(i, (grp, []))[1].append((a, h))
    for _ in range(3000):
        post = {}
        for i, (grp, votes) in items.items():
            l1, l0 = rho[grp], 1 - rho[grp]
            for a, h in votes:
                l1 *= alpha[a] if h else 1 - alpha[a]
                l0 *= (1 - beta[a]) if h else beta[a]
            post[i] = l1 / (l1 + l0)
        num_a = {a: 0.0 for a in anns}
        den_a = {a: 0.0 for a in anns}
        num_b = {a: 0.0 for a in anns}
        den_b = {a: 0.0 for a in anns}
        for i, (grp, votes) in items.items():
            for a, h in votes:
                num_a[a] += post[i] * h
                den_a[a] += post[i]
                num_b[a] += (1 - post[i]) * (1 - h)
                den_b[a] += 1 - post[i]
        alpha = {a: num_a[a] / den_a[a] for a in anns}
        beta = {a: num_b[a] / den_b[a] for a in anns}
        rho = {g_: float(np.mean([post[i] for i, (grp, _) in items.items() if grp == g_])) for g_ in rho}
    for a in anns:
        assert fitted.alpha[a] == pytest.approx(alpha[a], abs=2e-4)
        assert fitted.beta[a] == pytest.approx(beta[a], abs=2e-4)


def test_an_audit_that_finds_no_error_still_reports_variance():
    inst = tiny_project()
    inst["truth"] = np.where(inst["label_a"] == inst["label_b"], inst["label_a"], inst["truth"])  # no both-wrong
    prm = params(1.0, 1.0, 0.5)
    tasks = draws.draw(inst, prm)
    est = cluster.estimate(
        inst, tasks, perfect_decisions(inst, tasks["iid"]), prm, error_boot=0, error_model=ae.perfect(["ann"])
    )
    audit = est.components.set_index("metric").loc["tcpr", "audit"]
    assert audit > 0  # the Jeffreys-rate floor: 0 errors found is not 0 errors left
    bw = est.both_wrong.iloc[0]
    assert bw["both_wrong"] == pytest.approx(0.0) and bw["hi"] > 0


def test_a_kept_memo_reuses_its_design_only_for_the_same_labels_and_tasks():
    """The design arrays a caller keeps in its memo (for reruns after new decisions) are reused
    only while labels, tasks and parameters are unchanged: with other labels the estimate is
    the one a fresh run gives."""
    inst = tiny_project()
    prm = params(1.0, 1.0, 1.0)
    tasks = draws.draw(inst, prm)
    index = build_index(inst, condition=None)
    memo: dict = {}
    half = perfect_decisions(inst, inst["iid"]).iloc[::2]
    first = cluster.estimate(
        inst, tasks, half, prm, error_boot=0, error_model=ae.perfect(["ann"]), index=index, memo=memo
    )
    assert "cluster-layout" in memo
    flipped = inst.assign(label_b=1 - inst["label_b"])
    for frame, dec, t in (
        (inst, perfect_decisions(inst, inst["iid"]), tasks),
        (flipped, half, tasks),
        (inst, half, tasks.iloc[: len(tasks) // 2]),
    ):
        kept = cluster.estimate(
            frame, t, dec, prm, error_boot=0, error_model=ae.perfect(["ann"]), index=index, memo=memo
        )
        fresh = cluster.estimate(frame, t, dec, prm, error_boot=0, error_model=ae.perfect(["ann"]))
        pd.testing.assert_frame_equal(kept.table, fresh.table)
        assert kept.notes == fresh.notes
    assert not first.table.equals(
        cluster.estimate(
            inst, tasks, perfect_decisions(inst, inst["iid"]), prm, error_boot=0, error_model=ae.perfect(["ann"])
        ).table
    )


# ----------------------------------------------------------------------------- design version 3


def persistent_error_project() -> pd.DataFrame:
    """One model, two questions. In qa the judges agree that target f1 passes in all three
    variants, but in truth the model fails it in two of them (both judges wrong together on
    one target, twice: the correlated errors of docs/estimator.md#the-audit-of-agreements); one
    disagreement on (i2, f4)."""
    spec = [
        ("qa", "i1", "f1", 0, 1, 1),
        ("qa", "i1", "f2", 1, 1, 1),
        ("qa", "i1", "f3", 1, 1, 1),
        ("qa", "i2", "f1", 0, 1, 1),
        ("qa", "i2", "f2", 1, 1, 1),
        ("qa", "i2", "f4", 1, 1, 0),
        ("qa", "i3", "f1", 1, 1, 1),
        ("qa", "i3", "f5", 1, 1, 1),
        ("qa", "i3", "f3", 1, 1, 1),
        ("qb", "i4", "f1", 1, 1, 1),
        ("qb", "i4", "f2", 0, 0, 0),
        ("qb", "i4", "f3", 1, 1, 1),
    ]
    return toy_frame(spec, baseline_opposed=lambda df: True)


def expected_by_group(inst: pd.DataFrame, prm: dict, metrics) -> dict:
    """E[θ̂] over every realisation of a design that audits by target: clusters, then one
    draw per audit group (design.audit_groups) of the sampled clusters."""
    clusters = sorted(inst["question"].unique())
    pa_of = row_audit_pi(inst, prm)
    agree = inst[inst["label_a"] == inst["label_b"]].copy()
    agree["group"] = design.audit_groups(
        agree["model"], agree["question"], agree["feature"], agree["mode"], agree["label_a"], keys=False
    )[0]
    total = {m: 0.0 for m in metrics}
    for picked in itertools.product([False, True], repeat=len(clusters)):
        p_c = np.prod([prm.cluster_pi["m"] if z else 1 - prm.cluster_pi["m"] for z in picked])
        if p_c == 0:
            continue
        chosen = [q for q, z in zip(clusters, picked) if z]
        cand = agree[agree["question"].isin(chosen)]
        groups = sorted(cand["group"].unique())
        pi_g = {gk: pa_of[int(cand.loc[cand["group"] == gk, "iid"].iloc[0])] for gk in groups}
        for pattern in itertools.product([False, True], repeat=len(groups)):
            p_a = np.prod([pi_g[gk] if z else 1 - pi_g[gk] for gk, z in zip(groups, pattern)])
            if p_a == 0:
                continue
            audited = cand.loc[cand["group"].isin([gk for gk, z in zip(groups, pattern) if z]), "iid"].tolist()
            dis = inst[(inst["label_a"] != inst["label_b"]) & inst["question"].isin(chosen)]["iid"].tolist()
            est = cluster.estimate(
                inst,
                pd.DataFrame({"iid": dis + audited}),
                perfect_decisions(inst, dis + audited),
                prm,
                error_boot=0,
                error_model=ae.perfect(["ann"]),
                realised={"clusters": [("m", q) for q in chosen], "audits": audited},
            )
            for m in metrics:
                total[m] += p_c * p_a * est.table.iloc[0][m]
    return total


def test_auditing_by_target_makes_single_target_units_exact_under_correlated_errors():
    """Both judges wrong on one target in two variants: R1's unit for that target multiplies
    both errors. Audited together (by target) the product is observed, so R1 is exactly
    unbiased; audited row by row its second-order term is only predicted, and the enumeration
    shows the miss."""
    inst = persistent_error_project()
    want = truth_scores(inst)
    by_target = expected_by_group(inst, params(1.0, 1.0, 0.5, "uniform", unit="target"), METRICS)
    for m in ("constraint_level", "r1"):
        assert by_target[m] == pytest.approx(want[m], abs=1e-9), m
    # TCPR: each instruction holds one row of the target, audited linearly; the instructions' other
    # audited rows enter their products at the predicted value (second order)
    assert by_target["tcpr"] == pytest.approx(want["tcpr"], abs=0.5)
    by_row = expected_estimate(inst[inst["question"] == "qa"], params(1.0, 1.0, 0.5, "uniform"), ["r1"])
    want_qa = truth_scores(inst[inst["question"] == "qa"])
    assert abs(by_row["r1"] - want_qa["r1"]) > 1.0  # the predicted second-order term misses


@pytest.mark.parametrize("allocation", ["neyman", "uniform"])
def test_auditing_by_target_keeps_tcpr_exact_and_the_joint_scores_close(allocation):
    inst = audit_project()
    prm = params(0.5, 0.5, 0.5, allocation, unit="target")
    pa = np.array([v for v in row_audit_pi(inst, prm).values() if v > 0])
    assert pa.min() > 0.05 and pa.mean() == pytest.approx(0.5)  # every agreement auditable, mean as asked
    got = expected_by_group(inst, prm, METRICS)
    want = truth_scores(inst)
    for m in METRICS:
        if np.isnan(want[m]):
            continue
        tol = 1e-9 if m == "constraint_level" else 2.5  # products: cross-group terms predicted
        assert got[m] == pytest.approx(want[m], abs=tol), m


def test_neyman_allocation_audits_agreed_fails_more_when_they_are_rarer():
    """Under the planning assumption (both judges wrong on 1 % of instances whatever the
    truth) an agreed fail is far likelier wrong than an agreed pass when fails are rare, so the
    Neyman allocation gives agreed fails a higher audit probability; the model's mean stays."""
    rng = np.random.default_rng(3)
    n = 600
    inst = pd.DataFrame(
        {
            "iid": np.arange(n, dtype=np.int64),
            "model": "m",
            "question": [f"q{i // 6}" for i in range(n)],
            "instruction": [f"i{i // 3}" for i in range(n)],
            "condition": "main",
            "task_type": "t",
            "feature": [f"f{i % 3}" for i in range(n)],
            "category": [f"c{i % 3}" for i in range(n)],
            "mode": "require",
            "baseline_opposed": True,
        }
    )
    lab = (rng.random(n) < 0.9).astype(float)
    inst["label_a"], inst["label_b"] = lab, lab
    inst.loc[::17, "label_b"] = 1 - inst.loc[::17, "label_a"]
    prm = design.create(
        {"m": 1.0}, {"m": 1.0}, audit_pi=0.2, double_fraction=0.0, seed=1, audit_allocation="neyman", audit_unit="row"
    )
    pa = pd.Series(row_audit_pi(inst, prm))
    agree = (inst["label_a"] == inst["label_b"]).to_numpy()
    fails = agree & (inst["label_a"] == 0).to_numpy()
    passes = agree & (inst["label_a"] == 1).to_numpy()
    assert pa[inst["iid"][fails]].mean() > 2 * pa[inst["iid"][passes]].mean()
    assert pa[inst["iid"][agree]].mean() == pytest.approx(0.2)
    mean_label = ((inst["label_a"] + inst["label_b"]) / 2).to_numpy()
    r = allocation.prior_wrong_rates(mean_label, agree, np.zeros(n, dtype=int), 1, 0.01)
    assert r[0, 0] == pytest.approx(0.01 * mean_label.sum() / fails.sum())  # expected true passes shown as fails
    assert r[0, 1] == pytest.approx(0.01 * (n - mean_label.sum()) / passes.sum())


def test_second_opinion_estimates_are_exactly_unbiased_with_a_random_second_annotator():
    """The second-opinion rule's outcomes, enumerated: the first annotator's decision, and a
    second decision only when it differs from the reference, by an annotator drawn in
    proportion to the decisions' shares. E[ỹ | y] = y exactly for every first annotator,
    reference, prior and truth."""
    rates = pd.Series({"a": 0.92, "b": 0.85, "c": 0.97})
    spec = pd.Series({"a": 0.9, "b": 0.95, "c": 0.8})
    model = ae.ErrorModel(
        rates, spec, (0.9, 0.9), pd.Series(dtype=float), True, pd.Series(dtype=int), pd.Series(dtype=int)
    )
    # decisions of other items fix each annotator's share of decisions (who gives second opinions)
    others = pd.DataFrame({"iid": np.arange(100, 106), "annotator": ["a", "b", "b", "c", "c", "c"], "h": 1})
    ref_others = pd.Series(1.0, index=others["iid"])
    share = {"a": 1 / 6, "b": 2 / 6, "c": 3 / 6}
    p_h = lambda a, h, y: (rates[a] if h else 1 - rates[a]) if y else (1 - spec[a] if h else spec[a])  # noqa: E731
    for first in ("a", "b", "c"):
        seconds = {a: share[a] / (1 - share[first]) for a in share if a != first}
        for ref in (0.0, 1.0):
            for prior in (0.05, 0.5, 0.97):
                for y in (0, 1):
                    mean = 0.0
                    for h1 in (0, 1):
                        outcomes = (
                            [((first, h1),)]
                            if h1 == ref
                            else [((first, h1), (a2, h2)) for a2 in seconds for h2 in (0, 1)]
                        )
                        for out in outcomes:
                            p = p_h(first, h1, y) * (1 if len(out) == 1 else seconds[out[1][0]] * p_h(*out[1], y))
                            d = pd.concat(
                                [
                                    pd.DataFrame(
                                        {"iid": 1, "annotator": [a for a, _ in out], "h": [h for _, h in out]}
                                    ),
                                    others,
                                ],
                                ignore_index=True,
                            )
                            f = ae.item_estimates(
                                d, model, pd.Series({1: prior}), reference=pd.concat([pd.Series({1: ref}), ref_others])
                            )
                            mean += p * f.loc[1, "y_tilde"]
                    assert mean == pytest.approx(y, abs=1e-9), (first, ref, prior, y)


def test_an_item_awaiting_its_second_opinion_is_pending():
    d = pd.DataFrame({"iid": [1, 2, 2, 3], "annotator": ["a", "a", "b", "a"], "h": [0.0, 0.0, 1.0, 1.0]})
    ref = pd.Series({1: 1.0, 2: 1.0, 3: 1.0, 4: np.nan})
    done, pending = ae.second_opinion_items(d, ref)
    assert sorted(done) == [2, 3] and list(pending) == [1]
    with pytest.raises(ValueError, match="await their second opinion"):
        ae.item_estimates(d, ae.perfect(["a", "b"]), pd.Series(dtype=float), reference=ref)


def test_the_second_opinion_rule_of_a_plan():
    prm = design.create({"m": 1.0}, {"m": 1.0}, audit_pi=0.3, double_fraction=0.0, seed=4, second_opinion="all")
    assert design.required_annotators(prm, "audit", 7, None) == 1
    assert design.required_annotators(prm, "audit", 7, "A") == 1
    assert design.required_annotators(prm, "audit", 7, "neither") == 2  # both judges wrong: ask another
    assert design.required_annotators(prm, "disagreement", 7, "A") == 1
    assert design.required_annotators(prm, "disagreement", 7, "B") == 2  # against the reference judge A
    audit_only = {**prm.to_stored(), "second_opinion": "audit"}
    assert design.required_annotators(audit_only, "disagreement", 7, "B") == 1
    assert design.required_annotators({**prm.to_stored(), "second_opinion": "none"}, "audit", 7, "neither") is None
    assert design.required_annotators({"source": "import"}, "audit", 7, "neither") is None
    both = {**prm.to_stored(), "double_fraction": 1.0}  # doubled from the start: always two
    assert design.required_annotators(both, "audit", 7, "A") == 2
    ref = prm.second_opinion_reference([1, 2], ["audit", "disagreement"], [0.0, 1.0])
    assert list(ref) == [0.0, 1.0]
    assert np.isnan(design.Design.from_stored(both).second_opinion_reference([1], ["audit"], [1.0])).all()


def test_third_opinion_estimates_are_exactly_unbiased_with_random_later_annotators():
    """Depth 3 (an audit's third opinion), enumerated literally: a second annotator only when
    the first decision differs from the reference, a third only when the second does too,
    each later annotator drawn among those not yet on the item in proportion to the pool's
    decisions. E[ỹ | y] = y exactly for every first annotator, reference, prior and truth."""
    rates = pd.Series({"a": 0.92, "b": 0.85, "c": 0.97, "d": 0.9})
    spec = pd.Series({"a": 0.9, "b": 0.95, "c": 0.8, "d": 0.7})
    model = ae.ErrorModel(
        rates, spec, (0.9, 0.9), pd.Series(dtype=float), True, pd.Series(dtype=int), pd.Series(dtype=int)
    )
    others = pd.DataFrame({"iid": np.arange(100, 110), "annotator": list("abbcccdddd"), "h": 1})
    pool = others["annotator"].value_counts()
    refs = pd.Series(1.0, index=others["iid"])
    p_h = lambda a, h, y: (rates[a] if h else 1 - rates[a]) if y else (1 - spec[a] if h else spec[a])  # noqa: E731

    def paths(first, ref):
        for h1 in (0, 1):
            if h1 == ref:
                yield [(first, h1)]
                continue
            for a2 in pool.index.drop(first):
                for h2 in (0, 1):
                    if h2 == ref:
                        yield [(first, h1), (a2, h2)]
                        continue
                    for a3 in pool.index.drop([first, a2]):
                        for h3 in (0, 1):
                            yield [(first, h1), (a2, h2), (a3, h3)]

    for first in "abcd":
        for ref in (0.0, 1.0):
            for prior in (0.05, 0.5, 0.97):
                for y in (0, 1):
                    mean = 0.0
                    for path in paths(first, ref):
                        p, on = p_h(first, path[0][1], y), [first]
                        for a, h in path[1:]:
                            free = pool.drop(on)
                            p *= free[a] / free.sum() * p_h(a, h, y)
                            on.append(a)
                        d = pd.concat(
                            [
                                pd.DataFrame({"iid": 1, "annotator": [a for a, _ in path], "h": [h for _, h in path]}),
                                others,
                            ],
                            ignore_index=True,
                        )
                        f = ae.item_estimates(
                            d,
                            model,
                            pd.Series({1: prior}),
                            reference=pd.concat([pd.Series({1: ref}), refs]),
                            depth=pd.Series({1: 3}),
                        )
                        mean += p * f.loc[1, "y_tilde"]
                    assert mean == pytest.approx(y, abs=1e-9), (first, ref, prior, y)


def test_the_third_opinion_rule_reduces_to_the_fixed_formula_with_equal_annotators():
    """With every annotator at one error rate the depth-3 estimate depends on the leaf only:
    its values and noise equal the closed form of design.second_opinion_noise (normal
    equations over the four leaves), checked here against a literal sum over the leaves."""
    e, rho = 0.1, 0.99
    model = ae.ErrorModel(
        pd.Series(1 - e, index=list("abc")),
        pd.Series(1 - e, index=list("abc")),
        (1 - e, 1 - e),
        pd.Series(dtype=float),
        True,
        pd.Series(dtype=int),
        pd.Series(dtype=int),
    )
    leaves = [[1.0], [0.0, 1.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]  # reference 1: decisions until one says 1
    vals = []
    for k, hs in enumerate(leaves):
        d = pd.DataFrame({"iid": 1, "annotator": list("abc")[: len(hs)], "h": hs})
        d = pd.concat([d, pd.DataFrame({"iid": [5, 6, 7], "annotator": list("abc"), "h": 1.0})], ignore_index=True)
        got = ae.item_estimates(
            d,
            model,
            pd.Series({1: rho}),
            reference=pd.Series({1: 1.0, 5: 1.0, 6: 1.0, 7: 1.0}),
            depth=pd.Series({1: 3}),
        )
        vals.append(got.loc[1, "y_tilde"])
        assert got.loc[1, "n"] == len(hs)
    # leaf probabilities given the truth, written out
    p1 = np.array([1 - e, e * (1 - e), e * e * (1 - e), e**3])
    p0 = np.array([e, (1 - e) * e, (1 - e) ** 2 * e, (1 - e) ** 3])
    f = np.array(vals)
    assert p1 @ f == pytest.approx(1.0) and p0 @ f == pytest.approx(0.0)  # unbiased
    noise = rho * (p1 @ f**2 - 1) + (1 - rho) * (p0 @ f**2)
    assert allocation.second_opinion_noise(e, np.array([rho]), 3)[0] == pytest.approx(noise)
    # the third opinion cuts the noise of an audit that confirms the judges, for few decisions
    assert (
        allocation.second_opinion_noise(e, np.array([rho]), 3)[0]
        < 0.35 * allocation.second_opinion_noise(e, np.array([rho]))[0]
    )


def test_an_item_owed_its_third_opinion_is_pending():
    d = pd.DataFrame(
        {
            "iid": [1, 1, 2, 2, 3, 3, 3, 4, 4],
            "annotator": ["a", "b", "a", "b", "a", "b", "c", "a", "b"],
            "h": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0],
        }
    )
    ref = pd.Series({1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0})
    done, pending = ae.second_opinion_items(d, ref, depth=pd.Series({1: 3, 2: 3, 3: 3, 4: 2}))
    assert sorted(done) == [2, 3, 4] and list(pending) == [1]  # 4 asks two at most
    with pytest.raises(ValueError, match="await"):
        ae.item_estimates(
            d,
            ae.perfect(["a", "b", "c"]),
            pd.Series(dtype=float),
            reference=ref,
            depth=pd.Series({1: 3, 2: 3, 3: 3, 4: 2}),
        )


def test_the_third_opinion_rule_of_a_plan():
    prm = design.create({"m": 1.0}, {"m": 1.0}, audit_pi=0.3, double_fraction=0.0, seed=4, second_opinion="all")
    assert prm.audit_opinions == 3 and prm.to_stored()["audit_opinions"] == 3
    assert design.required_annotators(prm, "audit", 7, ["neither", "neither"]) == 3
    assert design.required_annotators(prm, "audit", 7, ["neither", "A"]) == 2
    assert design.required_annotators(prm, "audit", 7, ["neither", "neither", "neither"]) == 3  # three at most
    assert design.required_annotators(prm, "audit", 7, []) == 1
    assert design.required_annotators(prm, "disagreement", 7, ["B", "B"]) == 2  # two at most on a disagreement
    older = design.Design.from_stored(
        {k: v for k, v in prm.to_stored().items() if k != "audit_opinions"}
    )  # plans made before the key: two at most
    assert design.required_annotators(older, "audit", 7, ["neither", "neither"]) == 2
    assert list(prm.opinion_depth(["audit", "disagreement"])) == [3, 2]
    assert list(older.opinion_depth(["audit"])) == [2]
    with pytest.raises(ValueError, match="audit_opinions"):
        design.create({"m": 1.0}, {"m": 1.0}, audit_pi=0.3, double_fraction=0.0, seed=4, audit_opinions=4)


def test_the_audit_variance_is_the_mean_of_the_direct_estimate_and_the_pooled_prediction():
    """Hand-computed. One exposure column: direct 4, 0, 2 on exposures 1, 1, 2 fit
    ρ = Σ d·E / Σ E² = 8/6 (least squares), predictions 4/3, 4/3, 8/3, means 8/3, 2/3, 7/3."""
    got = audit_composite(np.array([4.0, 0.0, 2.0]), np.array([1.0, 1.0, 2.0]))
    assert got == pytest.approx([8 / 3, 2 / 3, 7 / 3])
    # one model scored, or no exposure: the direct estimate
    assert audit_composite(np.array([3.0]), np.array([2.0])) == pytest.approx([3.0])
    assert audit_composite(np.array([3.0, 1.0]), np.zeros(2)) == pytest.approx([3.0, 1.0])
    # a direct estimate below zero counts as zero: d = 1, 0 → ρ = 1/2, means 3/4 and 1/4
    assert audit_composite(np.array([1.0, -3.0]), np.array([1.0, 1.0])) == pytest.approx([0.75, 0.25])
    # a model without a finite variance neither pools nor takes the pool's value: ρ = (4 + 6)/(1 + 9) = 1
    got = audit_composite(np.array([4.0, np.nan, 2.0]), np.array([1.0, 1.0, 3.0]))
    assert np.isnan(got[1]) and got[[0, 2]] == pytest.approx([2.5, 2.5])


def test_the_audit_floor_pools_the_jeffreys_rate_of_each_agreed_label_over_the_models():
    """Hand-computed. Four audited rows, two models, every π_A = ½ and π_c = 1, so a row's term
    is G²/π_A · (1 − π_A)/(π_A π_c) = 2G². Agreed fails: model 0 (G = 1, wrong 1) and model 1
    (G = 2, wrong 0) → pooled k = 1 of n = 2, r̃ = 1.5/3 = ½, r̃(1 − r̃) = ¼. Agreed passes:
    model 0 (G = 1) and model 1 (G = 3), none wrong (a debiased −0.2 counts as 0) → r̃ = ½/3,
    r̃(1 − r̃) = 5/36. Floors: model 0: 2·¼ + 2·5/36 = 7/9; model 1: 8·¼ + 18·5/36 = 9/2.
    A rate per model and label would have given model 1's passes r̃ = ½/2 = ¼ (k = 0 of 1) instead."""
    grad = np.array([1.0, 2.0, 1.0, 3.0, 5.0])
    audited = np.array([True, True, True, True, False])  # the last row is not audited: no part
    wrong = np.array([1.0, 0.0, 0.0, -0.2, 1.0])
    pi_a, pi_c = np.full(5, 0.5), np.ones(5)
    row_model = np.array([0, 1, 0, 1, 0])
    label = np.array([0, 0, 1, 1, 1])
    floor, exposure = audit_floor(grad, audited, wrong, pi_a, pi_c, row_model, 2, label)
    assert floor == pytest.approx([7 / 9, 9 / 2])
    assert exposure == pytest.approx(np.array([[0.5, 0.5], [2.0, 4.5]]))  # ¼ · Σ 2G² per model × label
    # a literal loop over the rows, the rates pooled by label
    rate = {}
    for lab in (0, 1):
        rows = [i for i in range(5) if audited[i] and label[i] == lab]
        k = max(sum(wrong[i] for i in rows), 0.0)
        rate[lab] = min((k + 0.5) / (len(rows) + 1), 0.5)
    lit = [0.0, 0.0]
    for i in range(5):
        if audited[i]:
            t = grad[i] ** 2 / pi_a[i] * ((1 - pi_a[i]) / (pi_a[i] * pi_c[i]) + (1 - pi_c[i]) / pi_c[i] ** 2)
            lit[row_model[i]] += rate[label[i]] * (1 - rate[label[i]]) * t
    assert floor == pytest.approx(lit)


def test_the_prior_only_floor_leaves_out_the_errors_the_audit_found():
    """Same rows as above with ``found=False``: the rate is the prior's half event alone,
    r̃ = ½/(n + 1) = ½/3 = 1/6 on both labels (n = 2 each), r̃(1 − r̃) = 5/36, whatever the audit
    found. Floors: model 0: (2·1 + 2·1)·5/36 = 5/9; model 1: (2·4 + 2·9)·5/36 = 65/18, below the
    floors that count model 0's found error (7/9, 9/2). The exposures do not depend on the rate."""
    grad = np.array([1.0, 2.0, 1.0, 3.0, 5.0])
    audited = np.array([True, True, True, True, False])
    wrong = np.array([1.0, 0.0, 0.0, -0.2, 1.0])
    pi_a, pi_c = np.full(5, 0.5), np.ones(5)
    row_model = np.array([0, 1, 0, 1, 0])
    label = np.array([0, 0, 1, 1, 1])
    floor, exposure = audit_floor(grad, audited, wrong, pi_a, pi_c, row_model, 2, label, found=False)
    assert floor == pytest.approx([5 / 9, 65 / 18])
    assert exposure == pytest.approx(np.array([[0.5, 0.5], [2.0, 4.5]]))
    # wrong counts make no difference to it
    again, _ = audit_floor(grad, audited, np.ones(5), pi_a, pi_c, row_model, 2, label, found=False)
    assert again == pytest.approx(floor)


def test_the_pooled_prediction_fits_one_rate_per_agreed_label_by_non_negative_least_squares():
    """Exposure split by agreed label (columns fail, pass). Direct 2, 4, 9 on exposures
    (1, 0), (0, 1), (1, 1): the normal equations 2ρ_f + ρ_p = 11, ρ_f + 2ρ_p = 13 give
    ρ = (3, 5), predictions 3, 5, 8, means 2.5, 4.5, 8.5. Direct 0, 4, 1: unconstrained
    ρ_f = −1, so ρ_f = 0 and ρ_p minimises (4 − ρ_p)² + (1 − ρ_p)² at 2.5; predictions 0, 2.5,
    2.5."""
    e = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert audit_composite(np.array([2.0, 4.0, 9.0]), e) == pytest.approx([2.5, 4.5, 8.5])
    assert audit_composite(np.array([0.0, 4.0, 1.0]), e) == pytest.approx([0.0, 3.25, 1.75])
    # an exact fit returns the direct estimates
    assert audit_composite(np.array([2.0, 4.0, 6.0]), e) == pytest.approx([2.0, 4.0, 6.0])


def test_a_model_whose_audit_found_nothing_borrows_the_audit_variance_of_the_others():
    """Two models with the same questions and design; the judges are wrong together on some
    of the first model's agreements (f2 / f3 outside q2) and on none of the second's. Scored together, the second model's audit variance is
    larger than when it is scored alone (it borrows the first's variance per unit of exposure)
    and the first's is smaller (its own events count half); each model's point estimate is the
    same either way."""
    one = tiny_project()
    agree = one["label_a"] == one["label_b"]
    m1 = one.assign(model="m1")
    flip = agree & one["feature"].isin(["f2", "f3"]) & (one["question"] != "q2")
    m1["truth"] = np.where(flip, 1 - one["label_a"], np.where(agree, one["label_a"], one["truth"]))
    m2 = one.assign(model="m2", truth=np.where(agree, one["label_a"], one["truth"]))
    both = pd.concat([m1, m2], ignore_index=True)
    both["iid"] = np.arange(1, len(both) + 1, dtype=np.int64)

    def run(inst):
        models = sorted(inst["model"].unique())
        prm = design.create(
            {m: 1.0 for m in models},
            {m: 1.0 for m in models},
            audit_pi=0.5,
            double_fraction=0.0,
            seed=11,
            folds=2,
            audit_allocation="gradient",
            audit_unit="row",
            second_opinion="none",
        )
        tasks = draws.draw(inst, prm)
        est = cluster.estimate(
            inst, tasks, perfect_decisions(inst, tasks["iid"]), prm, error_boot=0, error_model=ae.perfect(["ann"])
        )
        return (
            est.components[est.components["metric"] == "tcpr"].set_index("model")["audit"],
            est.table.set_index("model")["tcpr"],
        )

    audit, point = run(both)
    for m in ("m1", "m2"):
        alone_audit, alone_point = run(both[both["model"] == m])
        assert point[m] == pytest.approx(alone_point[m])
        if m == "m2":
            assert audit[m] > alone_audit[m]
        else:
            assert audit[m] < alone_audit[m]
