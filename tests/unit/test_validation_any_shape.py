"""The any-shape validation family (bench/scenarios_any_shape.py, bench/validation_any_shape.py):
the generator makes the intended shape, and one replicate runs end to end quickly.

Expected values come from literal computations on the generated frame (loops over prompts),
not from the bench's own scoring code.
"""

import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from bench import scenarios_any_shape as gen
from bench import validation_any_shape as vas
from bench.bench_validation import REVISION
from bench.ppi_baseline import comparator
from bench.validation import REPLICATE_COLUMNS
from reform_core.unit_index import build_index

CONTRACT = [
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
]


@pytest.fixture(scope="module")
def inst():
    return gen.generate(11)


def literal_scores(frame: pd.DataFrame, column: str) -> dict:
    """Per model: TCPR (share of prompts whose every constraint passes) and the constraint level, in %."""
    out = {}
    for model, d in frame.groupby("model"):
        prompts = [all(v == 1 for v in g[column]) for _, g in d.groupby("instruction")]
        out[model] = {"tcpr": 100 * sum(prompts) / len(prompts), "constraint_level": 100 * d[column].mean()}
    return out


def test_the_generator_fills_the_instances_contract(inst):
    assert list(inst.columns[: len(CONTRACT)]) == CONTRACT
    assert inst["iid"].is_unique
    assert set(inst["mode"]) == {"require", "forbid"}
    assert set(inst["condition"]) == {"main"}
    assert inst["model"].nunique() == gen.N_MODELS and inst["question"].nunique() == gen.N_QUESTIONS
    assert set(inst["label_judge_a"]) <= {0.0, 1.0} and set(inst["label_judge_b"]) <= {0.0, 1.0}


def test_prompts_have_one_to_six_constraints_and_no_variants(inst):
    assert (inst.groupby("question")["instruction"].nunique() == 1).all()  # one instruction per question
    per_prompt = inst.groupby(["model", "instruction"]).agg(
        k=("position", "size"), top=("position", "max"), feats=("feature", "nunique")
    )
    assert set(per_prompt["k"]) == {1, 2, 3, 4, 5, 6}
    assert (per_prompt["top"] == per_prompt["k"]).all()  # positions 1..k
    assert (per_prompt["feats"] == per_prompt["k"]).all()  # distinct features within a prompt
    # every model answers the same prompts with the same constraints
    shape = inst.groupby("model")[["instruction", "position", "feature", "mode"]].apply(
        lambda d: tuple(map(tuple, d.sort_values(["instruction", "position"]).to_numpy()))
    )
    assert shape.nunique() == 1


def test_no_baseline_so_no_emcr_unit(inst):
    assert inst["baseline_opposed"].isna().all()
    index = build_index(inst)
    assert len(index.unit_k) == 0  # no eligible unit: EMCR and R^K cannot apply


def test_judges_are_lenient_on_some_features_and_harsh_on_others(inst):
    wrong_a = inst["label_judge_a"] != inst["truth"]
    both = wrong_a & (inst["label_judge_a"] == inst["label_judge_b"])
    rates = {}
    for kind, d in inst.assign(wrong_a=wrong_a, both=both).groupby("leniency"):
        fails, passes = d[d["truth"] == 0], d[d["truth"] == 1]
        rates[kind] = {
            "false_pass": fails["wrong_a"].mean(),
            "false_fail": passes["wrong_a"].mean(),
            "both": d["both"].sum(),
            "both_passes": (d["both"] & (d["truth"] == 0)).sum(),
        }
    assert rates["lenient"]["false_pass"] > 0.1 and rates["lenient"]["false_fail"] < 0.03
    assert rates["harsh"]["false_fail"] > 0.05 and rates["harsh"]["false_pass"] < 0.03
    # both judges wrong together: concentrated on lenient (a false pass) and harsh (a false fail) features
    total = sum(r["both"] for r in rates.values())
    assert 0.005 < total / len(inst) < 0.02
    assert rates["neutral"]["both"] < 0.1 * total
    assert rates["lenient"]["both_passes"] > 0.9 * rates["lenient"]["both"]  # in the feature's direction
    assert rates["harsh"]["both_passes"] < 0.1 * rates["harsh"]["both"]
    # disagreements concentrate on some features
    dis = (inst["label_judge_a"] != inst["label_judge_b"]).groupby(inst["feature"]).mean()
    assert dis.max() > 3 * dis.min()


def test_ppi_with_every_constraint_decided_by_infallible_humans_is_the_literal_score(inst):
    index = build_index(inst)
    everything = pd.DataFrame({"iid": inst["iid"], "annotator": "a", "h": inst["truth"]})  # budget = every row
    got = comparator(0.0, constraint_level=True)(
        inst, index, "label_judge_a", "label_judge_b", everything, np.random.default_rng(0)
    ).set_index(["model", "metric"])
    for model, scores in literal_scores(inst, "truth").items():
        for metric, value in scores.items():
            assert got.loc[(model, metric), "estimate"] == pytest.approx(value, abs=1e-9)
    assert set(got.index.get_level_values("metric")) == {"tcpr", "constraint_level"}


def test_one_replicate_runs_end_to_end_quickly(inst):
    t0 = time.perf_counter()
    rep = vas.replicate(11, inst, 0.05, n_boot=50, error_boot=3)
    seconds = time.perf_counter() - t0
    assert seconds < 60, seconds  # about 1-2 s on a quiet machine
    assert list(rep.columns) == REPLICATE_COLUMNS
    assert set(rep["estimator"]) == {"cluster", "stratified", "pooled", "judge_a", "judge_b", "ppi++"}
    applied = rep[rep["metric"].isin(vas.METRICS)]
    assert len(applied) == 6 * gen.N_MODELS * 2 and applied["estimate"].notna().all()
    assert rep.loc[rep["metric"].isin(vas.ABSENT), "estimate"].isna().all()
    truth = literal_scores(inst, "truth")
    for r in applied.itertuples():
        assert r.truth == pytest.approx(truth[r.model][r.metric], abs=1e-9)
    ours = applied[applied["estimator"].isin(["cluster", "stratified", "pooled", "ppi++"])]
    assert ((ours["lo"] <= ours["estimate"]) & (ours["estimate"] <= ours["hi"])).all()
    assert (applied["decisions"] > 0).all()
    # the default estimator lands near the truth (a loose sanity bound; the bench measures it properly)
    cl = applied[applied["estimator"] == "cluster"]
    assert (cl["estimate"] - cl["truth"]).abs().max() < 5


def test_the_run_caches_records_failures_and_reports(tmp_path, monkeypatch):
    monkeypatch.setattr(vas, "RAW", tmp_path / "raw")
    monkeypatch.setattr(vas, "OUT", tmp_path / "report.md")
    real = vas.replicate

    def flaky(seed, instances, human_error, **kw):
        if human_error == 0.10:
            raise RuntimeError("boom")
        return real(seed, instances, human_error, **kw)

    monkeypatch.setattr(vas, "replicate", flaky)
    args = SimpleNamespace(replicates=1, first_seed=4, n_boot=20, error_boot=0, jobs=1, collect=False)
    vas.run(args, None)
    tag = vas.cache_tag(20, 0, REVISION)
    assert vas.raw_path(tag, 0.0, 5).exists() and vas.raw_path(tag, 0.05, 5).exists()
    assert "boom" in vas.raw_path(tag, 0.10, 5).with_suffix(".err").read_text()
    text = (tmp_path / "report.md").read_text()
    assert "1 replicate(s) raised" in text
    assert "| anyshape_err00 | TCPR |" in text and "| anyshape_err05 | constraint level |" in text
    assert "Target: 0 everywhere (met)" in text
    # a later invocation retries the failed replicate and clears its record
    monkeypatch.setattr(vas, "replicate", real)
    vas.run(args, None)
    assert vas.raw_path(tag, 0.10, 5).exists() and not vas.raw_path(tag, 0.10, 5).with_suffix(".err").exists()
    assert "none raised" in (tmp_path / "report.md").read_text()


def test_the_uniform_control_spreads_both_wrong_errors_over_every_feature():
    inst = gen.generate(11, judge="uniform")
    both = (inst["label_judge_a"] == inst["label_judge_b"]) & (inst["label_judge_a"] != inst["truth"])
    share = both.groupby(inst["leniency"]).mean()
    assert 0.005 < both.mean() < 0.02
    assert share.min() > 0.5 * share.max()  # no longer concentrated: neutral features too
    with pytest.raises(ValueError, match="judge must be"):
        gen.generate(11, judge="strict")
