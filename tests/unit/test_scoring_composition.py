"""Composition (Table 3) and prompting comparison (ReFormBench, arXiv:2610.19693, §4.3–4.4,
App. A.8)."""

import pandas as pd
import pytest

from reform_core.metrics.composition import composition_table, prompting_comparison


def _row(instr, group, cond, pos, opp, p, question="q", feature=None):
    return dict(
        model="m",
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
    )


def composition_frame():
    rows = []
    for group, joint, single, opp in [
        ("g1", (1.0, 0.5, 1.0), (1.0, 1.0, 0.8), (True, False, False)),
        ("g2", (1.0, 1.0, 1.0), (0.5, 1.0, 1.0), (True, True, False)),
    ]:
        for pos in (1, 2, 3):
            rows.append(_row(group, group, "main", pos, opp[pos - 1], joint[pos - 1]))
            rows.append(_row(f"{group}-s{pos}", group, "single", pos, opp[pos - 1], single[pos - 1]))
    return pd.DataFrame(rows)


def test_composition_table_by_hand():
    t = composition_table(composition_frame()).set_index("measure")
    # Separate all-pass = mean(1·1·0.8, 0.5·1·1) = 65 %; Joint = mean(0.5, 1) = 75 %.
    assert t.loc["all_pass", "separate"] == pytest.approx(65) and t.loc["all_pass", "joint"] == pytest.approx(75)
    assert t.loc["all_pass", "delta_pp"] == pytest.approx(10) and t.loc["all_pass", "n"] == 2
    assert t.loc["opposed", "separate"] == pytest.approx(250 / 3) and t.loc["opposed", "joint"] == pytest.approx(100)
    assert t.loc["aligned", "separate"] == pytest.approx(280 / 3) and t.loc["aligned", "joint"] == pytest.approx(
        250 / 3
    )
    assert t.loc["gap", "separate"] == pytest.approx(-10) and t.loc["gap", "joint"] == pytest.approx(50 / 3)
    assert t.loc["gap", "delta_pp"] == pytest.approx(50 / 3 + 10)


def test_composition_leaves_unknown_opposition_out_of_both_groups():
    """Issue 14: a target without baseline annotation is neither opposed nor aligned."""
    df = composition_frame()
    df["baseline_opposed"] = df["baseline_opposed"].astype("boolean")
    df.loc[(df["pair_group"] == "g1") & (df["position"] == 3), "baseline_opposed"] = pd.NA
    t = composition_table(df).set_index("measure")
    assert t.loc["all_pass", "n"] == 2  # the all-pass product does not need the baseline
    assert t.loc["opposed", "n"] == 3 and t.loc["aligned", "n"] == 2  # g1 position 3 in neither
    assert t.loc["aligned", "separate"] == pytest.approx(100) and t.loc["aligned", "joint"] == pytest.approx(75)


def test_composition_rejects_incomplete_pairs():
    df = composition_frame()
    df = df[~((df["condition"] == "single") & (df["instruction"] == "g2-s3"))]
    bad = pd.concat([df, pd.DataFrame([_row("g2-s9", "g2", "single", 9, False, 1.0)])])
    with pytest.raises(ValueError, match="g2"):
        composition_table(bad)


def worked_example(cond, b_in_v2):
    spec = {
        "v1": [("bullets", "forbid", True, 1.0), ("headings", "require", True, 1.0), ("closing", "forbid", True, 1.0)],
        "v2": [
            ("bullets", "forbid", True, 1.0),
            ("headings", "require", True, b_in_v2),
            ("table", "require", False, 1.0),
        ],
        "v3": [("bullets", "forbid", True, 1.0), ("bold", "forbid", False, 1.0), ("emoji", "forbid", False, 1.0)],
    }
    suffix = "" if cond == "main" else "-p"
    return [
        dict(
            model="m",
            question="q",
            instruction=v + suffix,
            condition=cond,
            pair_group=v,
            task_type="t",
            position=pos,
            feature=f,
            category=f,
            mode=mode,
            baseline_opposed=opp,
            p=p,
        )
        for v, cons in spec.items()
        for pos, (f, mode, opp, p) in enumerate(cons, 1)
    ]


def test_prompting_comparison_shares_units():
    df = pd.DataFrame(worked_example("main", 0.0) + worked_example("prompted", 1.0))
    t = prompting_comparison(df).set_index("metric")
    assert round(t.loc["emcr", "base"], 2) == 27.78 and t.loc["emcr", "other"] == pytest.approx(100)
    assert t.loc["emcr", "diff_pp"] == pytest.approx(100 - 250 / 9)
    assert t.loc["tcpr", "diff_pp"] == pytest.approx(100 / 3)
    assert t.loc[["r1", "r2", "r3"], "n"].tolist() == [2, 3, 1]


def test_prompting_comparison_requires_every_counterpart():
    other = [r for r in worked_example("prompted", 1.0) if not (r["instruction"] == "v3-p" and r["position"] == 2)]
    with pytest.raises(ValueError, match="v3"):
        prompting_comparison(pd.DataFrame(worked_example("main", 0.0) + other))
