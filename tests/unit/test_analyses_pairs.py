"""Issue 17: auxiliary analyses score complete, consistent pairs only and list what they
leave out; their replicate formulas agree with the point tables (and with a literal
resample of the frame)."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from reform_core.metrics import analyses as A
from reform_core.metrics.composition import composition_table, prompting_comparison
from reform_core.metrics.coverage import catalog_coverage, feature_frequency, frequency_correlation


def _row(instr, group, cond, pos, opp, p, question="q1", feature=None, model="m"):
    return dict(
        model=model,
        question=question,
        instruction=instr,
        condition=cond,
        pair_group=group,
        task_type="t",
        position=pos,
        feature=feature or f"f{pos}",
        category=f"c{pos}",
        mode="require",
        baseline_opposed=opp,
        p=p,
        iid=0,
    )


def frame(groups=6, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(groups):
        q = f"q{g // 2}"
        for pos in (1, 2, 3):
            opp = bool(rng.random() < 0.5)
            rows.append(_row(f"g{g}", f"g{g}", "main", pos, opp, float(rng.choice([0, 0.3, 1])), question=q))
            rows.append(_row(f"g{g}-s{pos}", f"g{g}", "single", pos, opp, float(rng.choice([0, 0.7, 1])), question=q))
            rows.append(_row(f"g{g}-p", f"g{g}", "prompted", pos, opp, float(rng.choice([0, 0.6, 1])), question=q))
    df = pd.DataFrame(rows)
    df["iid"] = range(len(df))
    return df


def _broken():
    df = frame()
    # incomplete group: g1 has single versions for positions 1 and 2 only
    df = df[~(df["instruction"] == "g1-s3")]
    # feature mismatch: g2's single version at position 2 answers another feature
    df.loc[df["instruction"] == "g2-s2", "feature"] = "other"
    # judge error: both judges errored on g3's single version at position 1
    df.loc[df["instruction"] == "g3-s1", "p"] = np.nan
    # missing prompted version: g4 has none; g5's prompted version misses position 3
    df = df[~(df["instruction"] == "g4-p")]
    df = df[~((df["instruction"] == "g5-p") & (df["position"] == 3))]
    # feature mismatch in prompting: g0's prompted position 1 is a different constraint mode
    df.loc[(df["instruction"] == "g0-p") & (df["position"] == 1), "mode"] = "forbid"
    return df


def test_each_failure_route_is_left_out_and_counted():
    df = _broken()
    with pytest.raises(ValueError):  # the engine alone refuses the incomplete pairing
        composition_table(df)
    clean, ex = A.composition_pairs(df)
    assert A.exclusion_counts(ex) == {
        "incomplete group": 1,
        "missing prompted version": 0,
        "feature mismatch": 1,
        "judge error": 1,
    }
    assert set(ex["pair_group"]) == {"g1", "g2", "g3"}
    assert ex.set_index("pair_group").loc["g2", "detail"] == "position 2: main f2:require, single other:require"
    kept = {"g0", "g4", "g5"}
    assert set(clean["pair_group"]) == kept
    # the table on the kept groups equals the table on a frame holding only those groups
    by_hand = df[df["pair_group"].isin(kept) & df["condition"].isin(["main", "single"])]
    pd.testing.assert_frame_equal(composition_table(clean), composition_table(by_hand))

    clean_p, ex_p = A.prompting_pairs(df)
    assert A.exclusion_counts(ex_p) == {
        "incomplete group": 0,
        "missing prompted version": 2,
        "feature mismatch": 1,
        "judge error": 0,
    }
    assert set(ex_p.loc[ex_p["reason"] == "missing prompted version", "pair_group"]) == {"g4", "g5"}
    with pytest.raises(ValueError):
        prompting_comparison(df[df["condition"] != "single"].dropna(subset=["p"]))
    kept_p = {"g1", "g2", "g3"}
    by_hand = df[df["pair_group"].isin(kept_p) & df["condition"].isin(["main", "prompted"])]
    pd.testing.assert_frame_equal(prompting_comparison(clean_p), prompting_comparison(by_hand))


def test_judge_error_on_the_main_side_leaves_the_pair_out():
    df = frame()
    df.loc[(df["instruction"] == "g0") & (df["position"] == 2), "p"] = np.nan
    _, ex = A.composition_pairs(df)
    _, ex_p = A.prompting_pairs(df)
    assert ex["reason"].tolist() == ["judge error"] and ex_p["reason"].tolist() == ["judge error"]


def test_single_version_without_main_instruction_is_incomplete():
    df = frame()
    df = df[~((df["instruction"] == "g2") & (df["condition"] == "main"))]
    _, ex = A.composition_pairs(df)
    assert ex["reason"].tolist() == ["incomplete group"] and "without their main instruction" in ex["detail"].iloc[0]


def test_composition_replicates_match_the_table_and_a_literal_resample():
    df = frame(groups=8, seed=3)
    clean, _ = A.composition_pairs(df)
    data = A.CompositionData(clean)
    t = composition_table(clean).set_index("measure")
    one = A.composition_replicates(data, np.ones((1, len(data.questions))))
    for measure in ("all_pass", "opposed", "aligned", "gap"):
        assert one[f"{measure}_separate"][0, 0] == pytest.approx(t.loc[measure, "separate"], abs=1e-12)
        assert one[f"{measure}_joint"][0, 0] == pytest.approx(t.loc[measure, "joint"], abs=1e-12)
    # integer weights = the table of the frame with each question copied w_q times
    w = np.array([[2, 0, 1, 3]])
    parts = []
    for qi, q in enumerate(data.questions):
        for c in range(int(w[0, qi])):
            d = clean[clean["question"] == q].copy()
            d["pair_group"] = d["pair_group"] + f"#{c}"
            d["instruction"] = d["instruction"] + f"#{c}"
            parts.append(d)
    literal = composition_table(pd.concat(parts)).set_index("measure")
    rep = A.composition_replicates(data, w)
    for measure in ("all_pass", "opposed", "aligned"):
        assert rep[f"{measure}_separate"][0, 0] == pytest.approx(literal.loc[measure, "separate"], abs=1e-12)
        assert rep[f"{measure}_delta"][0, 0] == pytest.approx(literal.loc[measure, "delta_pp"], abs=1e-12)


def test_coverage_and_frequency_replicates_match_the_point_tables():
    rng = np.random.default_rng(1)
    ext = pd.DataFrame(
        {
            "model": rng.choice(["a", "b"], 200),
            "question": rng.choice([f"q{i}" for i in range(9)], 200),
            "mapping": rng.choice(["exact", "subtype", "composite", "uncovered", "not_format"], 200),
        }
    )
    point = catalog_coverage(ext)
    groups = A.CoverageGroups(ext, questions=sorted(ext["question"].unique()), models=["a", "b"])
    rep = A.coverage_replicates(groups)
    assert rep[0] == pytest.approx(point["coverage"].to_numpy(), abs=1e-12)
    # integer question weights = the point table of the frame with each question copied w_q times
    w = rng.integers(0, 3, size=(1, 9))
    qs = sorted(ext["question"].unique())
    copied = pd.concat([ext[ext["question"] == q] for i, q in enumerate(qs) for _ in range(int(w[0, i]))])
    assert A.coverage_replicates(groups, w)[0] == pytest.approx(
        catalog_coverage(copied)["coverage"].to_numpy(), abs=1e-12
    )
    # within-question resampling keeps each (model, question)'s instance count and moves only the shares
    cov, unc = groups.resample_within(400, rng)
    assert (cov + unc <= groups.n).all() and (cov <= groups.n).all()
    assert cov.mean(axis=0) == pytest.approx(groups.covered, abs=0.5)

    models, questions, feats = ["r1", "r2", "x"], [f"q{i}" for i in range(12)], [f"f{i}" for i in range(7)]
    ind = (rng.random((3, 12, 7)) < 0.4).astype(float)
    m, q, f = np.nonzero(ind)
    ann = pd.DataFrame(
        {"model": np.array(models)[m], "question": np.array(questions)[q], "feature": np.array(feats)[f]}
    )
    freq = feature_frequency(ann, features=feats, n_questions=12)[models]
    reps = A.frequency_replicates(ind, np.ones((1, 12)))
    assert reps[0] == pytest.approx(freq.to_numpy().T, abs=1e-12)
    rho = A.correlation_replicates(reps, [0, 1], [2])
    ref = frequency_correlation(freq, ["r1", "r2"], others=["x"])
    assert rho[0, 0] == pytest.approx(ref["rho"].iloc[0], abs=1e-12)
    assert rho[0, 0] == pytest.approx(spearmanr(freq["x"], freq[["r1", "r2"]].mean(axis=1)).statistic, abs=1e-12)


def test_table4_keeps_unannotated_catalog_features_and_divides_by_the_common_questions():
    """Issue 17: Table 4's frequencies are over the catalog (a feature nobody shows counts 0)
    and the common question set (questions every model answered), not the annotated ones."""
    from reform_core.services.scoring.analyses import _table4

    features = ["f1", "f2", "f3", "f4", "f5"]  # f5 never annotated
    common = ["q1", "q2", "q3", "q4"]
    ann = pd.DataFrame(
        [  # (model, question, feature); q9 is answered by one model only
            ("r", "q1", "f1"),
            ("r", "q2", "f1"),
            ("r", "q1", "f2"),
            ("r", "q3", "f3"),
            ("r", "q9", "f4"),
            ("x", "q1", "f1"),
            ("x", "q2", "f2"),
            ("x", "q3", "f2"),
            ("x", "q4", "f4"),
        ],
        columns=["model", "question", "feature"],
    )
    freq, corr, notes = _table4(ann, features, common, ["r", "x"], ["r"], 20, np.random.default_rng(0), 0.95)
    f = freq.pivot(index="feature", columns="model", values="frequency").loc[features]
    # by hand over |Q_common| = 4, q9 left out, f5 kept at 0
    assert f["r"].tolist() == [0.5, 0.25, 0.25, 0.0, 0.0] and f["x"].tolist() == [0.25, 0.5, 0.0, 0.25, 0.0]
    rho = corr.set_index("model").loc["x", "rho"]
    assert rho == pytest.approx(
        spearmanr([0.25, 0.5, 0.0, 0.25, 0.0], [0.5, 0.25, 0.25, 0.0, 0.0]).statistic, abs=1e-12
    )
    assert any("outside the common question set" in n for n in notes)
    # the old defaults (annotated features only, |Q| = annotated questions) give another ρ
    old = (
        frequency_correlation(feature_frequency(ann)[["r", "x"]], ["r"], others=["x"])
        .set_index("model")
        .loc["x", "rho"]
    )
    assert old != pytest.approx(rho)


def test_average_ranks_and_spearman_match_scipy_with_ties():
    from scipy.stats import rankdata

    from reform_core.metrics import coverage as C

    rng = np.random.default_rng(4)
    for _ in range(20):
        x = rng.integers(0, 5, size=30).astype(float) / 4
        assert C.average_ranks(x) == pytest.approx(rankdata(x), abs=0)
        y = rng.random(30)
        assert C.spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    xs = rng.integers(0, 4, size=(50, 12)).astype(float)
    ys = rng.integers(0, 6, size=(50, 12)).astype(float)
    ys[0] = 1.0  # a constant row: ρ undefined
    assert C.average_ranks(xs) == pytest.approx(rankdata(xs, axis=1), abs=0)
    rows = C.spearman_rows(xs, ys)
    assert np.isnan(rows[0])
    assert rows[1:] == pytest.approx([spearmanr(a, b).statistic for a, b in zip(xs[1:], ys[1:])], abs=1e-12)


def test_spearman_p_value_matches_scipy():
    """The t-approximation p-value (incomplete beta by continued fraction) against
    ``scipy.stats.spearmanr``'s, from 3 pairs to 400, ties and perfect correlation included."""
    from scipy.special import betainc

    from reform_core.metrics import coverage as C

    rng = np.random.default_rng(11)
    checked = 0
    for n in (3, 4, 5, 8, 13, 30, 77, 400):
        for _ in range(25):
            x = rng.integers(0, 6, size=n).astype(float)
            y = x + rng.normal(0, rng.choice([0.3, 1.0, 5.0]), size=n)
            res = spearmanr(x, y)
            if np.isnan(res.statistic):
                continue
            rho = C.spearman(x, y)
            assert C.spearman_p_value(rho, n) == pytest.approx(res.pvalue, rel=1e-9, abs=1e-300)
            checked += 1
    assert checked > 150
    assert C.spearman_p_value(1.0, 10) == 0.0 and np.isnan(C.spearman_p_value(0.5, 2))
    for a in (0.5, 1.5, 3.0, 20.0, 199.0):
        for b in (0.5, 2.0):
            for x in (1e-6, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-9):
                assert C._betainc(a, b, x) == pytest.approx(betainc(a, b, x), rel=1e-10, abs=1e-300)


def test_table4_population_interval_of_rho_is_the_fisher_z_interval_of_a_literal_question_resample():
    """ρ's population interval: Fisher-z interval tanh(atanh ρ̂ ± z·sd(atanh ρ*)) over question
    resamples (issue 34: the basic interval left ρ̂ out), checked against a literal loop
    (questions copied w_q times, frequencies and Spearman ρ recomputed with the reference
    implementations)."""
    from reform_core.services.scoring.analyses import _table4

    rng = np.random.default_rng(7)
    features = [f"f{i}" for i in range(12)]
    common = [f"q{i}" for i in range(15)]
    base = rng.uniform(0.05, 0.6, size=12)
    rows = [(m, q, f) for m in ("r", "x") for q in common for f, b in zip(features, base) if rng.random() < b]
    ann = pd.DataFrame(rows, columns=["model", "question", "feature"])
    B = 60
    _, corr, _ = _table4(ann, features, common, ["r", "x"], ["r"], B, np.random.default_rng(1), 0.95)
    W = np.random.default_rng(1).multinomial(len(common), np.full(len(common), 1 / len(common)), size=B)
    reps = []
    for w in W:
        copied = pd.concat(
            [ann[ann["question"] == q].assign(question=f"{q}#{c}") for q, k in zip(common, w) for c in range(int(k))]
        )
        f = feature_frequency(copied, features=features, n_questions=len(common))[["r", "x"]]
        reps.append(spearmanr(f["x"], f["r"]).statistic)
    from scipy.stats import norm

    row = corr.set_index("model").loc["x"]
    half = norm.ppf(0.975) * np.nanstd(np.arctanh(reps), ddof=1)
    assert row["rho_pop_low"] == pytest.approx(np.tanh(np.arctanh(row["rho"]) - half), abs=1e-9)
    assert row["rho_pop_high"] == pytest.approx(np.tanh(np.arctanh(row["rho"]) + half), abs=1e-9)
    assert row["rho_pop_low"] <= row["rho"] <= row["rho_pop_high"]
