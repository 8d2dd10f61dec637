"""The estimation seam: adding an estimator is one module plus one registry line.

A toy estimator — each model's scores from judge A's raw labels, with no interval — is
registered from this test and then scored through the product's ordinary path (``score``,
``score --json``, the export): its numbers equal judge A's raw table, computed independently
by the literal loop reference. The built-in estimators are found by name, an unknown name is
refused naming the known ones, and a non-estimator cannot be registered.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.loop_reference import loop_table2
from reform_core.estimators import base
from reform_core.services.accounts.users import cli_principal
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.services.scoring.scoring import ScoringError, score, score_json


class JudgeA:
    """The toy: every row's truth estimated by judge A's label."""

    name = "toy-judge-a"
    needs_plan = False
    label = "judge A's raw labels (a toy estimator of the seam's test)"
    interval_method = "none"

    def estimate(self, data: base.EstimationData, options: base.Options) -> base.Estimate:
        from reform_core.metrics.reform import table2

        inst = data.instances.assign(p=data.instances[data.judge_a].astype(float))
        t2 = table2(inst, p="p", index=data.index)
        level = inst.groupby("model")["p"].mean() * 100
        table = t2[["model", "tcpr", "emcr", "r1", "r2", "r3"]].assign(
            constraint_level=t2["model"].map(level).to_numpy()
        )
        long = table.melt(id_vars="model", var_name="metric", value_name="estimate")
        for col in base.INTERVAL_COLUMNS[3:]:
            long[col] = np.nan
        return base.Estimate(
            estimator=self.name,
            table=table,
            intervals=long[base.INTERVAL_COLUMNS],
            components=pd.DataFrame(columns=["model", "metric"]),
            rows=pd.Series(inst["p"].to_numpy(), index=inst["iid"].to_numpy()),
            notes=["toy estimator: judge A taken as truth"],
        )


@pytest.fixture
def toy():
    base.register(JudgeA())
    yield JudgeA.name
    base.unregister(JudgeA.name)


def test_the_built_in_estimators_are_found_by_name_and_the_default_is_named_once():
    assert base.DEFAULT == "cluster"
    assert [base.get(n).name for n in ("cluster", "stratified", "pooled")] == ["cluster", "stratified", "pooled"]
    assert base.get("cluster").needs_plan and not base.get("stratified").needs_plan
    with pytest.raises(ValueError, match="unknown estimator 'nope' .*cluster, stratified, pooled"):
        base.get("nope")
    with pytest.raises(TypeError):
        base.register(object())


def test_a_registered_toy_estimator_scores_through_the_product(toy, sqlite_url, tmp_path):
    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=3, scale="small")
    lead = cli_principal(eng)
    assert toy in base.names()
    result = score(eng, lead, calibration=toy, with_intervals=True, reps=50)
    doc = score_json(result)
    assert doc["estimator"] == toy and any("toy estimator" in n for n in doc["notes"])
    from reform_core.simulate import simulate

    inst = simulate(seed=3, scale="small").instances()
    main = inst[inst["condition"] == "main"]
    want = loop_table2(main.assign(p=main["label_judge_a"].astype(float))).set_index("model")
    for m, r in doc["models"].items():
        for metric in ("tcpr", "emcr", "r1", "r2", "r3"):
            assert r[metric] == pytest.approx(want.loc[m, metric], abs=1e-6), (m, metric)
        assert r["intervals"]["measurement"]["tcpr"] is None  # the toy gives none, and none is invented
    with pytest.raises(ScoringError, match="unknown estimator"):
        score(eng, lead, calibration="not-registered")
