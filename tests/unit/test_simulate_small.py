"""Synthetic project simulator at small scale: contract, reproducibility, options."""

import json

import numpy as np
import pandas as pd
import pytest

from reform_core.simulate import _fallback_features, catalog_features, simulate

FRAMES = ("questions", "instructions", "constraints", "models", "responses", "baseline", "judgments", "truth")


@pytest.fixture(scope="module")
def sp():
    return simulate(11, "small")


def test_same_seed_same_frames(sp):
    again = simulate(11, "small")
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(sp, name), getattr(again, name))
    pd.testing.assert_frame_equal(sp.instances(), again.instances())
    other = simulate(12, "small")
    assert not sp.instances()["truth"].equals(other.instances()["truth"])


def test_small_shape(sp):
    assert len(sp.questions) == 30
    assert len(sp.instructions) == 120
    assert len(sp.models) == 3
    assert len(sp.constraints) == 360
    assert len(sp.truth) == 3 * 360
    assert len(sp.judgments) == 2 * 3 * 360
    assert sp.judges == ["judge_a", "judge_b"]
    kinds = sp.responses["kind"].value_counts()
    assert kinds["baseline"] == 90 and kinds["constrained"] == 360
    assert (sp.responses.loc[sp.responses.kind == "baseline", "instruction"] == "").all()
    assert set(sp.judgments["label"].unique()) <= {0, 1}


def test_columns(sp):
    assert list(sp.questions.columns) == ["question", "task_type", "domain", "language", "text"]
    assert list(sp.instructions.columns) == ["instruction", "question", "condition", "pair_group", "text"]
    assert list(sp.constraints.columns) == [
        "instruction",
        "position",
        "feature",
        "category",
        "mode",
        "text",
        "acceptance",
        "params",
    ]
    assert list(sp.models.columns) == ["model", "provider"]
    assert list(sp.baseline.columns) == ["model", "question", "feature"]
    assert list(sp.judgments.columns) == ["model", "instruction", "position", "judge", "label", "rationale"]
    assert list(sp.truth.columns) == ["model", "instruction", "position", "truth"]
    for params in sp.constraints["params"]:
        assert isinstance(json.loads(params), dict)


def test_instances_contract(sp):
    inst = sp.instances()
    for col in (
        "iid",
        "model",
        "question",
        "instruction",
        "condition",
        "pair_group",
        "task_type",
        "domain",
        "position",
        "feature",
        "category",
        "mode",
        "baseline_opposed",
        "label_judge_a",
        "label_judge_b",
        "truth",
    ):
        assert col in inst.columns, col
    assert inst["iid"].is_unique
    assert set(inst["position"]) == {1, 2, 3}
    assert set(inst["mode"]) <= {"require", "forbid"}
    # labels agree with the judgments frame
    j = sp.judgments[sp.judgments.judge == "judge_b"].merge(inst, on=["model", "instruction", "position"])
    assert (j["label"] == j["label_judge_b"]).all()
    # baseline_opposed follows docs/metrics.md#targets-and-baseline-opposition from the baseline frame
    present = inst.merge(sp.baseline.assign(present=True), on=["model", "question", "feature"], how="left")
    present["present"] = present["present"].fillna(False).astype(bool)
    expected = np.where(present["mode"] == "forbid", present["present"], ~present["present"])
    assert (present["baseline_opposed"].to_numpy() == expected).all()


def test_distinct_categories_per_instruction(sp):
    per = sp.constraints.groupby("instruction")["category"].nunique()
    assert (per == 3).all()


def test_oracle(sp):
    inst = sp.instances()
    iids = inst["iid"].to_numpy()[::7]
    a = sp.oracle(iids)
    assert (a.index.to_numpy() == iids).all()
    assert (a.to_numpy() == inst.set_index("iid").loc[iids, "truth"].to_numpy()).all()
    with pytest.raises(ValueError, match="unknown iid"):
        sp.oracle([-5])


def test_oracle_human_error():
    noisy = simulate(1, "small", human_error=0.2)
    inst = noisy.instances()
    with pytest.raises(ValueError, match="rng"):
        noisy.oracle(inst["iid"])
    a = noisy.oracle(inst["iid"], rng=np.random.default_rng(0))
    flipped = (a.to_numpy() != inst["truth"].to_numpy()).mean()
    # 1,080 Bernoulli(0.2) flips: sd 0.012
    assert 0.15 < flipped < 0.25


def test_single_and_prompted_conditions():
    sp = simulate(2, "small", single_constraint=True, prompted=True)
    inst = sp.instances()
    assert set(inst["condition"]) == {"main", "single", "prompted"}
    single = inst[inst.condition == "single"]
    assert single["model"].nunique() == 1 and len(single) == 360
    assert (single.groupby("instruction").size() == 1).all()
    main = inst[(inst.condition == "main") & (inst.model == single.model.iloc[0])]
    paired = single.merge(main, on=["pair_group", "position"], suffixes=("_s", "_m"))
    assert len(paired) == 360
    assert (paired.feature_s == paired.feature_m).all() and (paired.mode_s == paired.mode_m).all()
    assert (paired.baseline_opposed_s == paired.baseline_opposed_m).all()
    prompted = inst[inst.condition == "prompted"]
    assert prompted["model"].nunique() == 1 and len(prompted) == 360
    assert set(sp.instructions.loc[sp.instructions.condition == "single", "pair_group"]) == set(
        sp.instructions.loc[sp.instructions.condition == "main", "instruction"]
    )
    assert inst["iid"].is_unique


def test_overrides_and_validation():
    sp = simulate(0, "small", n_models=2, judges=["gpt", "gemini"])
    assert sp.judges == ["gpt", "gemini"] and "label_gemini" in sp.instances().columns
    assert len(sp.models) == 2
    with pytest.raises(ValueError, match="scale"):
        simulate(0, "huge")
    with pytest.raises(ValueError, match="unknown simulate option"):
        simulate(0, "small", n_judges=3)
    with pytest.raises(ValueError, match="n_instructions"):
        simulate(0, "small", n_instructions=10)
    with pytest.raises(ValueError, match="judges"):
        simulate(0, "small", judges=["a", "a"])
    with pytest.raises(ValueError, match="single_model"):
        simulate(0, "small", single_constraint=True, single_model="nope")


def test_fallback_catalog_shape():
    f = _fallback_features(np.random.default_rng(0))
    assert len(f) == 66 and f["feature"].is_unique
    assert f.groupby("category", sort=False).size().tolist() == [7, 9, 4, 6, 11, 12, 8, 9]


def test_catalog_features_from_records():
    records = [
        {
            "key": "bullet_list",
            "name": "Bullet list",
            "category": "lists",
            "require_template": "Use {n} bullets.",
            "forbid_template": "No bullets.",
            "params": [{"name": "n", "default": 4}],
            "acceptance": {"require": "{n} bullets", "forbid": "none"},
            "paper_counts": {"require": 242, "forbid": 135},
        },
        {"key": "t", "name": "T", "category": {"key": "c2"}, "modes": ["require"]},
    ]
    f = catalog_features(records)
    assert f.loc[0, "require_text"] == "Use 4 bullets." and f.loc[0, "require_acceptance"] == "4 bullets"
    assert (f.loc[0, "require_weight"], f.loc[0, "forbid_weight"]) == (243.0, 136.0)
    assert json.loads(f.loc[0, "params"]) == {"n": 4}
    assert f.loc[1, "category"] == "c2" and f.loc[1, "forbid_weight"] == 0.0
    with pytest.raises(ValueError, match="key or category"):
        catalog_features([{"name": "x"}])
