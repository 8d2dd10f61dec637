"""TCPR / EMCR engine: the worked example of docs/metrics.md, published-table checks and properties."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.loop_reference import loop_table2
from reform_core.calibration import calibrate_stratified
from reform_core.metrics import reform
from reform_core.unit_index import build_index

FEATURES = [f"f{i}" for i in range(6)]


def _rows(model, question, variants, task="t", start=0):
    """variants: {name: [(feature, mode, opposed, p), ...]} -> INSTANCES rows."""
    rows = []
    for name, cons in variants.items():
        for pos, (feat, mode, opp, p) in enumerate(cons, 1):
            rows.append(
                dict(
                    iid=start + len(rows),
                    model=model,
                    question=question,
                    instruction=f"{question}-{name}",
                    condition="main",
                    pair_group=f"{question}-{name}",
                    task_type=task,
                    position=pos,
                    feature=feat,
                    category=f"cat-{feat}",
                    mode=mode,
                    baseline_opposed=opp,
                    p=p,
                )
            )
    return rows


def worked_example(b_in_v2=0.0, model="m", question="q", task="t", start=0):
    """docs/metrics.md#worked-example / ReFormBench (arXiv:2610.19693) App. A.1: a in v1..v3,
    b in v1,v2, c in v1; other slots aligned."""
    return _rows(
        model,
        question,
        {
            "v1": [
                ("bullets", "forbid", True, 1.0),
                ("headings", "require", True, 1.0),
                ("closing", "forbid", True, 1.0),
            ],
            "v2": [
                ("bullets", "forbid", True, 1.0),
                ("headings", "require", True, b_in_v2),
                ("table", "require", False, 1.0),
            ],
            "v3": [("bullets", "forbid", True, 1.0), ("bold", "forbid", False, 1.0), ("emoji", "forbid", False, 1.0)],
        },
        task=task,
        start=start,
    )


def test_worked_example_reproduces_spec_values():
    t = reform.table2(pd.DataFrame(worked_example())).iloc[0]
    assert t["r1"] == pytest.approx(100 / 2) and t["r2"] == pytest.approx(100 / 3) and t["r3"] == 0
    assert round(t["emcr"], 2) == 27.78
    assert round(t["tcpr"], 2) == 66.67
    assert (t["n1"], t["n2"], t["n3"]) == (2, 3, 1)  # {a},{b}; all pairs; the triple — {c} is not eligible


def test_singleton_with_one_variant_is_ineligible_but_joins_pairs():
    # Only c fails: {c} is not a unit, so R1 is untouched; every pair/triple containing c fails.
    rows = worked_example(b_in_v2=1.0)
    for r in rows:
        if r["feature"] == "closing":
            r["p"] = 0.0
    t = reform.table2(pd.DataFrame(rows)).iloc[0]
    assert t["r1"] == 100 and t["r2"] == pytest.approx(100 / 3) and t["r3"] == 0


def test_worked_example_violation_spread_and_coverage():
    df = pd.DataFrame(worked_example())
    a8 = reform.coverage_table(df).iloc[0]
    # |I|: {a}=3, {b}=2 ; {a,b}=3, {a,c}=3, {b,c}=2 ; {a,b,c}=3
    assert a8["cover1"] == pytest.approx(2.5) and a8["cover2"] == pytest.approx(8 / 3) and a8["cover3"] == 3
    a2 = reform.violation_spread(df).iloc[0]
    # Failed units each have exactly one violating variant (v2).
    assert (a2["c1"], a2["c2"], a2["c3"]) == (1.0, 1.0, 1.0)


def test_task_pooling_is_not_a_mean_of_task_scores():
    rows = worked_example(task="t1")
    rows += _rows(
        "m",
        "q2",
        {
            "w1": [("bullets", "forbid", True, 1.0), ("bold", "forbid", False, 1.0)],
            "w2": [("bullets", "forbid", True, 1.0), ("emoji", "forbid", False, 1.0)],
        },
        task="t2",
        start=100,
    )
    df = pd.DataFrame(rows)
    task = reform.task_table(df)
    overall = task[task["task_type"] == "overall"].iloc[0]
    # pooled by hand: R1 = (1 + 1) / 3, R2 = 1/3, R3 = 0; TCPR = (2 + 2) / 5
    assert overall["r1"] == pytest.approx(200 / 3)
    assert overall["emcr"] == pytest.approx(100 * (2 / 3 + 1 / 3 + 0) / 3)
    assert overall["tcpr"] == pytest.approx(80.0)
    per_task = task[task["task_type"] != "overall"].set_index("task_type")
    assert per_task.loc["t1", "tcpr"] == pytest.approx(200 / 3) and per_task.loc["t2", "tcpr"] == 100
    assert np.isnan(per_task.loc["t2", "emcr"])  # no K=2/3 unit in t2
    t2 = reform.table2(df).iloc[0]
    assert t2["emcr"] == pytest.approx(overall["emcr"]) and t2["tcpr"] == pytest.approx(overall["tcpr"])


def test_condition_filter_and_errors():
    df = pd.DataFrame(worked_example())
    extra = df.assign(condition="prompted", p=0.0, iid=df["iid"] + 100)
    both = pd.concat([df, extra], ignore_index=True)
    assert reform.tcpr(both)["m"] == pytest.approx(200 / 3)
    assert reform.tcpr(both, condition="prompted")["m"] == 0
    with pytest.raises(ValueError, match="'p'"):
        reform.table2(df.assign(p=np.where(df.index == 0, np.nan, df["p"])))
    with pytest.raises(ValueError, match="baseline_opposed"):
        reform.table2(df.drop(columns="baseline_opposed"))
    with pytest.raises(ValueError, match="condition"):
        reform.table2(df, condition="nope")


def test_mark_baseline_opposed():
    inst = pd.DataFrame(
        {
            "model": ["m"] * 4,
            "question": ["q"] * 4,
            "feature": ["a", "a", "b", "b"],
            "mode": ["forbid", "require", "forbid", "require"],
        }
    )
    base = pd.DataFrame({"model": ["m"], "question": ["q"], "feature": ["a"]})
    out = reform.mark_baseline_opposed(inst, base)
    assert out["baseline_opposed"].tolist() == [True, False, False, True]
    with pytest.raises(ValueError, match="mode"):
        reform.mark_baseline_opposed(inst.assign(mode="must"), base)


def test_unknown_opposition_is_left_out_of_emcr_and_counted():
    """Issue 14: a question without baseline annotation has unknown (<NA>) opposition — not
    "absent". Its targets are not in T_q (no unit), its instructions still count for TCPR, and
    the targets are counted. Before, a missing baseline made every require target opposed."""
    rows = worked_example()
    # question q2 (not annotated): three variants sharing two targets, all passing
    rows += _rows(
        "m",
        "q2",
        {
            "w1": [("bullets", "forbid", None, 1.0), ("headings", "require", None, 1.0)],
            "w2": [("bullets", "forbid", None, 1.0), ("headings", "require", None, 1.0)],
            "w3": [("bullets", "forbid", None, 1.0), ("table", "require", None, 1.0)],
        },
        start=100,
    )
    df = pd.DataFrame(rows)
    df["baseline_opposed"] = df["baseline_opposed"].astype("boolean")
    t = reform.table2(df).iloc[0]
    assert (t["n1"], t["n2"], t["n3"]) == (2, 3, 1)  # the worked example's units only
    assert round(t["emcr"], 2) == 27.78 and t["n_instructions"] == 6
    assert t["tcpr"] == pytest.approx(100 * 5 / 6)
    assert reform.unknown_baseline_targets(df).to_dict() == {"m": 3}  # bullets:forbid, headings:require, table:require
    ref = loop_table2(df).iloc[0]  # the literal loop skips unknown targets too
    assert ref["emcr"] == pytest.approx(t["emcr"])
    # the same data as an export's CSV column (empty = unknown) scores the same
    as_csv = df.assign(
        baseline_opposed=df["baseline_opposed"].astype(object).where(df["baseline_opposed"].notna(), np.nan)
    )
    assert reform.table2(as_csv).iloc[0]["emcr"] == pytest.approx(t["emcr"])
    with pytest.raises(ValueError, match="baseline_opposed"):
        reform.table2(df.assign(baseline_opposed="yes"))


def test_mark_baseline_opposed_with_annotated_pairs():
    inst = pd.DataFrame(
        {
            "model": ["m", "m", "m2"],
            "question": ["q", "q", "q"],
            "feature": ["a", "b", "a"],
            "mode": ["require", "require", "require"],
        }
    )
    base = pd.DataFrame({"model": ["m"], "question": ["q"], "feature": ["a"]})
    out = reform.mark_baseline_opposed(inst, base, annotated=pd.DataFrame({"model": ["m"], "question": ["q"]}))
    assert out["baseline_opposed"].tolist()[:2] == [False, True] and pd.isna(out["baseline_opposed"].iloc[2])


# Published Table 2 (ReFormBench §4.2): TCPR and EMCR order two model pairs differently.
TABLE2 = pd.DataFrame(
    {
        "model": [
            "Kimi K3",
            "GPT-5.6 Sol",
            "Gemini 3.5 Flash",
            "Qwen3.6-35B-A3B",
            "GLM-5.2",
            "DeepSeek-V4-Pro",
            "Qwen3.6-27B",
            "Claude Opus 4.6",
            "Qwen3-235B-A22B-Thinking",
            "Qwen3.5-9B",
        ],
        "tcpr": [82.82, 81.99, 78.08, 77.82, 75.76, 66.39, 65.46, 60.09, 56.33, 51.81],
        "emcr": [64.72, 62.31, 60.63, 60.34, 55.50, 44.81, 47.84, 42.33, 34.04, 40.12],
    }
)


def test_rank_comparison_on_published_table2():
    pairs = reform.rank_comparison(TABLE2)
    assert set(zip(pairs["model_1"], pairs["model_2"])) == {
        ("DeepSeek-V4-Pro", "Qwen3.6-27B"),
        ("Qwen3-235B-A22B-Thinking", "Qwen3.5-9B"),
    }
    row = pairs[pairs["model_1"] == "DeepSeek-V4-Pro"].iloc[0]
    assert (row["rank_tcpr_1"], row["rank_tcpr_2"], row["rank_emcr_1"], row["rank_emcr_2"]) == (6, 7, 7, 6)


def test_judge_agreement_reproduces_table_a3_row():
    # Kimi K3 (ReFormBench Table A3): 15,000 judgments, 1,239 disagreements, 576 adjudicated, 568 side with GPT.
    n, n_dis, n_adj, n_gpt = 15000, 1239, 576, 568
    g = np.ones(n)
    m = np.ones(n)
    m[:n_dis] = 0.0
    inst = pd.DataFrame({"iid": np.arange(n), "model": "Kimi K3", "condition": "main", "label_a": g, "label_b": m})
    a = np.r_[np.ones(n_gpt), np.zeros(n_adj - n_gpt)]
    adj = pd.DataFrame({"iid": np.arange(n_adj), "a": a})
    row = reform.judge_agreement(inst, adj).set_index("model").loc["Kimi K3"]
    assert round(row["agreement"], 2) == 91.74
    assert (row["disagreements"], row["adjudicated"], row["agrees_a"], row["agrees_b"]) == (1239, 576, 568, 8)
    assert round(row["agrees_a_pct"], 2) == 98.61 and round(row["agrees_b_pct"], 2) == 1.39
    by_choice = reform.judge_agreement(inst, adj.assign(choice=np.where(a == 1, "A", "B")), choice="choice")
    assert by_choice.set_index("model").loc["Kimi K3", "agrees_a"] == 568


# --------------------------------------------------------------------------- properties


def random_project(seed: int, n_models: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n_models):
        for q in range(int(rng.integers(1, 4))):
            present = {f for f in FEATURES if rng.random() < 0.4}
            for v in range(int(rng.integers(1, 6))):
                feats = rng.choice(FEATURES, size=int(rng.integers(1, 4)), replace=False)
                for pos, f in enumerate(feats, 1):
                    mode = "forbid" if rng.random() < 0.5 else "require"
                    p = float(rng.choice([0.0, 1.0, rng.random()]))
                    rows.append(
                        dict(
                            iid=len(rows),
                            model=f"m{m}",
                            question=f"q{q}",
                            instruction=f"q{q}v{v}",
                            condition="main",
                            pair_group=f"q{q}v{v}",
                            task_type=f"t{q % 2}",
                            position=pos,
                            feature=f,
                            category=f,
                            mode=mode,
                            baseline_opposed=(f in present) == (mode == "forbid"),
                            p=p,
                        )
                    )
    return pd.DataFrame(rows)


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_vectorised_engine_equals_loop_reference(seed):
    df = random_project(seed)
    fast = reform.table2(df).set_index("model")
    spread = reform.violation_spread(df).set_index("model")
    slow = loop_table2(df).set_index("model")
    for col in ["tcpr", "emcr", "r1", "r2", "r3"]:
        np.testing.assert_allclose(fast[col], slow[col], rtol=1e-12, atol=1e-12, equal_nan=True)
    for col in ["n1", "n2", "n3", "n_instructions"]:
        assert (fast[col] == slow[col]).all()
    for col in ["c1", "c2", "c3"]:
        np.testing.assert_allclose(spread[col], slow[col], rtol=1e-9, equal_nan=True)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_scores_stay_in_range(seed):
    t = reform.table2(random_project(seed))
    for col in ["tcpr", "emcr", "r1", "r2", "r3"]:
        v = t[col].dropna()
        assert ((v >= 0) & (v <= 100)).all()


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_adding_passing_aligned_constraint_keeps_emcr(seed):
    df = random_project(seed)
    first = df.drop_duplicates("instruction").iloc[0]
    used = set(df.loc[df["instruction"] == first["instruction"], "feature"])
    extra = first.to_dict() | {
        "iid": 10**6,
        "position": 9,
        "feature": next(f for f in "xyz" if f not in used),
        "baseline_opposed": False,
        "p": 1.0,
    }
    more = pd.concat([df, pd.DataFrame([extra])], ignore_index=True)
    a, b = reform.table2(df), reform.table2(more)
    np.testing.assert_allclose(a["emcr"], b["emcr"], equal_nan=True)
    assert (a[["n1", "n2", "n3"]].to_numpy() == b[["n1", "n2", "n3"]].to_numpy()).all()


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_calibrated_path_equals_binary_path_for_binary_p(seed):
    df = random_project(seed)
    rng = np.random.default_rng(seed)
    label = (rng.random(len(df)) < 0.6).astype(float)
    flip = rng.random(len(df)) < 0.2  # judge B disagrees here; every such case is adjudicated to judge A's label
    inst = df.drop(columns="p").assign(label_a=label, label_b=np.where(flip, 1 - label, label))
    adj = pd.DataFrame({"iid": inst.loc[flip, "iid"], "a": label[flip]})
    cal = calibrate_stratified(inst, adj)
    binary = reform.table2(inst, p="label_a")
    calibrated = reform.table2(cal, p="p")
    pd.testing.assert_frame_equal(binary, calibrated)


def test_reform_tables_bundle_is_consistent():
    df = random_project(7, n_models=3).assign(label_a=1.0, label_b=1.0)
    tabs = reform.reform_tables(df)
    assert set(tabs) == {"table2", "a2", "a3", "a5", "a6_a7", "a8", "ranks"}
    over = tabs["a6_a7"][tabs["a6_a7"]["task_type"] == "overall"].reset_index(drop=True)
    np.testing.assert_allclose(over["emcr"], tabs["table2"]["emcr"], equal_nan=True)
    assert (tabs["a8"][["n1", "n2", "n3"]].to_numpy() == tabs["table2"][["n1", "n2", "n3"]].to_numpy()).all()


def test_task_named_overall_does_not_collide_and_a5_counts_models():
    """Issue 17: task names are free text; a task literally called "overall" keeps its own
    TCPR (the pooled row is marked by ``pooled``), and A5 says how many models each mean covers."""
    rows = worked_example(task="overall")
    rows += _rows(
        "m",
        "q2",
        {
            "w1": [("bullets", "forbid", True, 1.0), ("bold", "forbid", False, 1.0)],
            "w2": [("bullets", "forbid", True, 1.0), ("emoji", "forbid", False, 1.0)],
        },
        task="t2",
        start=100,
    )
    df = pd.DataFrame(rows)
    tabs = reform.reform_tables(df)
    task = tabs["a6_a7"]
    mine = task[(task["task_type"] == "overall") & ~task["pooled"]].iloc[0]
    pooled = task[task["pooled"]].iloc[0]
    assert mine["tcpr"] == pytest.approx(200 / 3) and pooled["tcpr"] == pytest.approx(80.0)
    a5 = tabs["a5"].set_index("task_type")
    assert a5.loc["overall", "tcpr"] == pytest.approx(200 / 3)  # not averaged with the pooled row
    assert a5.loc["overall", "models"] == 1 and a5.loc["overall", "models_tcpr"] == 1
    assert a5.loc["t2", "models_emcr"] == 0 and np.isnan(a5.loc["t2", "emcr"])  # t2 has no defined EMCR


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_restricted_index_scores_its_clusters_like_the_loop_reference(seed):
    """``UnitIndex.restrict`` keeps whole (model, question) clusters: the scores it gives are
    the literal loop's on those clusters' rows, and its derivatives are the full index's."""
    df = random_project(seed, n_models=3)
    index = build_index(df)
    rng = np.random.default_rng(seed)
    keep = rng.random(len(index.models) * len(index.questions)) < 0.5
    sub, rows = index.restrict(keep)
    cluster = pd.Index(index.models).get_indexer(df["model"]) * len(index.questions) + pd.Index(
        index.questions
    ).get_indexer(df["question"])
    kept = df[keep[cluster]]
    assert sorted(index.row_pos[rows]) == sorted(np.flatnonzero(keep[cluster]))
    if kept.empty:
        assert len(rows) == 0 and len(sub.inst_starts) == 0
        return
    fast = reform.table2(df, index=sub).set_index("model")
    slow = loop_table2(kept).set_index("model")
    for col in ["tcpr", "emcr", "r1", "r2", "r3"]:
        np.testing.assert_allclose(fast.loc[slow.index, col], slow[col], rtol=1e-12, atol=1e-12, equal_nan=True)
    for col in ["n1", "n2", "n3", "n_instructions"]:
        assert (fast.loc[slow.index, col] == slow[col]).all()
    pv = df["p"].to_numpy()[index.row_pos]
    full, part = index.gradients(pv), sub.gradients(pv[rows])
    for k in full:
        np.testing.assert_allclose(part[k], full[k][rows], rtol=1e-12, atol=1e-12)
