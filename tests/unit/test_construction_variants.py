"""Variant construction: composition, automated checks, target links, Table A11, screening."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reform_core.catalog import load_catalog
from reform_core.construction import variants as V

CAT = load_catalog("reformbench")
QUESTIONS = pd.DataFrame({"key": ["q1", "q2", "q3"], "text": ["Explain tides.", "Plan a party.", "Compare cars."]})


def _build(seed=0, per_question=6):
    return V.propose_variants(QUESTIONS, CAT, per_question=per_question, rng=np.random.default_rng(seed))


def test_proposed_variants_pass_every_check_and_use_distinct_categories():
    ins, con = _build()
    assert len(ins) == 18 and len(con) == 54
    assert V.check_variants(ins, con, CAT, verbatim=True).empty
    cats = con.groupby("instruction")["category"].nunique()
    assert (cats == 3).all()
    # the category recorded is the catalog's
    assert all(CAT.feature(f).category == c for f, c in zip(con["feature"], con["category"]))
    # every parameter lies in its declared range
    for r in con.itertuples():
        for p in CAT.feature(r.feature).params:
            if p.name in r.params and p.min is not None:
                assert p.min <= r.params[p.name] <= p.max


def test_targets_recur_within_a_question_and_generation_is_seeded():
    ins, con = _build(per_question=8)
    links = V.target_links(ins, con)
    assert (links["n_variants"] >= 2).any()
    ins2, con2 = _build(per_question=8)
    pd.testing.assert_frame_equal(con, con2)
    _, con3 = _build(seed=1, per_question=8)
    assert not con.equals(con3)


def test_checks_report_each_kind_of_problem():
    ins, con = _build(per_question=1)
    bad = con.copy()
    first = bad.index[bad["instruction"] == ins["key"][0]]
    # 1: same category twice, 2: out-of-range param, 3: wrong text
    f_int = next(f for f in CAT if any(p.type == "int" and p.max is not None for p in f.params))
    p_int = next(p for p in f_int.params if p.type == "int" and p.max is not None)
    row = V.make_constraint(CAT, f_int.key, "require", position=1)
    bad.loc[first[0], ["feature", "category", "mode", "text", "acceptance"]] = [
        row["feature"],
        row["category"],
        "require",
        row["text"],
        row["acceptance"],
    ]
    bad.at[first[0], "params"] = {p_int.name: int(p_int.max) + 1}
    bad.at[first[1], "text"] = "something else"
    issues = V.check_variants(ins, bad, CAT)
    assert "params" in set(issues["field"]) and "text" in set(issues["field"])
    assert str(int(p_int.max) + 1) in " ".join(issues["message"])
    # a missing constraint and an unknown feature
    short = con[~((con["instruction"] == ins["key"][1]) & (con["position"] == 3))].copy()
    short.loc[short["instruction"] == ins["key"][2], "feature"] = "no_such_feature"
    issues = V.check_variants(ins, short, CAT)
    assert any("expected 3 constraints, found 2" in m for m in issues["message"])
    assert any("no_such_feature" in m for m in issues["message"])


def test_duplicate_category_is_flagged():
    lists = [f for f in CAT if f.category == "lists"][:2]
    other = next(f for f in CAT if f.category == "line_layout")
    cons = [V.make_constraint(CAT, f.key, "forbid", position=j) for j, f in enumerate([*lists, other], 1)]
    con = pd.DataFrame([{"instruction": "x", **c} for c in cons])
    ins = pd.DataFrame({"key": ["x"], "text": ["t"]})
    issues = V.check_variants(ins, con, CAT)
    assert list(issues["field"]) == ["category"]


def test_validate_params_errors_name_feature_param_and_value():
    f = next(f for f in CAT if any(p.choices for p in f.params))
    p = next(p for p in f.params if p.choices)
    with pytest.raises(ValueError, match=rf"{f.key}.*{p.name}.*'bogus'"):
        V.validate_params(f, {p.name: "bogus"})
    with pytest.raises(ValueError, match="unknown param"):
        V.validate_params(f, {"nope": 1})


def test_target_links_reproduce_the_paper_example():
    # ReFormBench (arXiv:2610.19693) App. A.7.4: question 1164, variants H-0008, H-1324, H-1325 all require a repeated
    # section pattern and a closing next step; H-0008 and H-1325 forbid tables, H-1324 forbids symbols.
    rows = []
    for v, third in (("H-0008", "table_or_grid"), ("H-1324", "emoji_and_symbols"), ("H-1325", "table_or_grid")):
        rows += [
            {"instruction": v, "feature": "repeated_section_pattern", "mode": "require"},
            {"instruction": v, "feature": "call_to_action", "mode": "require"},
            {"instruction": v, "feature": third, "mode": "forbid"},
        ]
    ins = pd.DataFrame({"key": ["H-0008", "H-1324", "H-1325"], "question": "1164"})
    links = V.target_links(ins, pd.DataFrame(rows)).set_index(["feature", "mode"])
    assert links.loc[("repeated_section_pattern", "require"), "n_variants"] == 3
    assert links.loc[("table_or_grid", "forbid"), "variants"] == ("H-0008", "H-1325")
    assert links.loc[("emoji_and_symbols", "forbid"), "n_variants"] == 1


def test_multiplicity_table_counts_by_hand():
    # q1: 4 variants; target a in all 4, b in 2, c..f once each. q2: 1 variant with 3 single targets.
    ins = pd.DataFrame({"key": ["a1", "a2", "a3", "a4", "b1"], "question": ["q1"] * 4 + ["q2"]})
    con = pd.DataFrame(
        [
            *[{"instruction": k, "feature": "a", "mode": "require"} for k in ("a1", "a2", "a3", "a4")],
            {"instruction": "a1", "feature": "b", "mode": "forbid"},
            {"instruction": "a2", "feature": "b", "mode": "forbid"},
            {"instruction": "a3", "feature": "c", "mode": "forbid"},
            {"instruction": "a4", "feature": "d", "mode": "forbid"},
            {"instruction": "a1", "feature": "b", "mode": "require"},
            {"instruction": "a2", "feature": "e", "mode": "require"},
            {"instruction": "b1", "feature": "a", "mode": "require"},
            {"instruction": "b1", "feature": "b", "mode": "require"},
            {"instruction": "b1", "feature": "c", "mode": "require"},
        ]
    )
    t = V.multiplicity_table(ins, con).set_index("variants")
    assert t.loc["1", "questions"] == 1 and t.loc["4–5", "questions"] == 1
    # targets: q1 a/require (4), b/forbid (2), c/forbid, d/forbid, b/require, e/require (1 each); q2: 3 singles
    assert t.loc["1", "targets"] == 7 and t.loc["2", "targets"] == 1 and t.loc["4–5", "targets"] == 1
    assert t.loc["Total", "targets"] == 9
    assert t.attrs["recurring"] == 2 and t.attrs["max_per_question"] == 4 and t.attrs["max_per_target"] == 4


def test_screening_keeps_the_lowest_mean_allpass_with_ties_by_id():
    # all-pass per (model, instruction) = product over positions; score = mean over models
    p = {
        ("m1", "i3"): (0.9, 0.9, 0.9),
        ("m2", "i3"): (1.0, 1.0, 0.5),  # 0.729, 0.5 -> 0.6145
        ("m1", "i1"): (0.5, 1.0, 1.0),
        ("m2", "i1"): (0.5, 1.0, 1.0),  # 0.5
        ("m1", "i2"): (1.0, 1.0, 0.5),
        ("m2", "i2"): (0.5, 1.0, 1.0),  # 0.5 (tie with i1)
        ("m1", "i0"): (1.0, 1.0, 1.0),
        ("m2", "i0"): (1.0, 0.9, 1.0),
    }  # 0.95
    rows = [
        {"model": m, "instruction": i, "position": j + 1, "p": x} for (m, i), ps in p.items() for j, x in enumerate(ps)
    ]
    out = V.screen_difficulty(pd.DataFrame(rows), keep=2)
    assert out["instruction"].tolist() == ["i1", "i2", "i3", "i0"]
    assert out["score"].tolist() == pytest.approx([0.5, 0.5, 0.6145, 0.95])
    assert out["kept"].tolist() == [True, True, False, False]
    with pytest.raises(ValueError, match="lacks screening model"):
        V.screen_difficulty(pd.DataFrame(rows[:-3]), keep=1)
    bad = pd.DataFrame(rows).assign(p=lambda d: d["p"].where(d.index != 0, np.nan))
    with pytest.raises(ValueError, match="'p'"):
        V.screen_difficulty(bad, keep=1)


def test_derived_single_and_prompted_conditions_pair_with_the_main_instruction():
    ins, con = _build(per_question=1)
    new_ins, new_con = V.derive_conditions(ins, con, QUESTIONS)
    assert sorted(new_ins["condition"].value_counts().items()) == [("prompted", 3), ("single", 9)]
    assert (new_ins["pair_group"].isin(ins["key"])).all()
    s = new_con[new_con["instruction"] == f"{ins['key'][0]}-s2"]
    assert s["position"].tolist() == [2]
    assert s["text"].iloc[0] in new_ins.set_index("key").loc[f"{ins['key'][0]}-s2", "text"]
    p = new_con[new_con["instruction"] == f"{ins['key'][0]}-p"]
    assert p["feature"].tolist() == con[con["instruction"] == ins["key"][0]]["feature"].tolist()
