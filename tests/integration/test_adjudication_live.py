"""Live calibration: incremental updates equal a from-scratch stratified calibration + scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from db.repo.adjudication import ensure_user, write_tx
from reform_core.calibration import calibrate_stratified
from reform_core.metrics.reform import table2
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.simulate import simulate

LA, LB = "label_judge_a", "label_judge_b"


def _scratch(inst: pd.DataFrame, current: dict) -> pd.DataFrame:
    adj = pd.DataFrame({"iid": list(current), "a": list(current.values())})
    cal = calibrate_stratified(inst, adj, judge_a=LA, judge_b=LB)
    return table2(cal[cal["p"].notna()], p="p").set_index("model")


def _check(live: S.LiveScores, inst: pd.DataFrame, current: dict) -> None:
    ref = _scratch(inst, current)
    got = live.scores.set_index("model")
    for col in ("tcpr", "emcr", "r1", "r2", "r3", "n1", "n2", "n3"):
        np.testing.assert_allclose(
            got.loc[ref.index, col].to_numpy(float), ref[col].to_numpy(float), rtol=1e-12, err_msg=col
        )
    adj = pd.DataFrame({"iid": list(current), "a": list(current.values())})
    p = calibrate_stratified(inst, adj, judge_a=LA, judge_b=LB)["p"].to_numpy()
    np.testing.assert_allclose(live.p, p, rtol=0, atol=1e-12)


def test_incremental_updates_match_recomputation():
    inst = simulate(seed=5, scale="small").instances()
    dis = inst[inst[LA] != inst[LB]]
    rng = np.random.default_rng(0)
    first = dis.groupby("model").head(2)
    current = {int(i): float(rng.integers(0, 2)) for i in first["iid"]}
    live = S.LiveScores(inst, pd.DataFrame({"iid": list(current), "a": list(current.values())}), judge_a=LA, judge_b=LB)
    _check(live, inst, current)
    assert live.scores["provisional"].all()  # most strata still lack a review
    for iid in rng.choice(dis["iid"].to_numpy(), size=25, replace=False):
        a = float(rng.integers(0, 2))
        changed = live.apply({int(iid): a})
        current[int(iid)] = a
        assert changed in ([], [dis.set_index("iid").loc[iid, "model"]])
        _check(live, inst, current)
    gone = next(iter(current))
    live.apply({gone: None})  # a withdrawn decision
    del current[gone]
    _check(live, inst, current)
    agreed = int(inst.loc[inst[LA] == inst[LB], "iid"].iloc[0])
    assert live.apply({agreed: 1.0 - inst.set_index("iid").loc[agreed, LA]}) == []  # audits don't move p
    with pytest.raises(ValueError, match="unknown instance id"):
        live.apply({-1: 1.0})
    with pytest.raises(ValueError, match="0, 1 or None"):
        live.apply({gone: 0.5})


def test_sync_follows_decisions_in_the_database(sqlite_url):
    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=9, scale="small")
    with write_tx(eng) as conn:
        lead = Principal(ensure_user(conn, username="lead", role="lead"), "lead", "lead")
        ann = Principal(ensure_user(conn, username="ann", role="annotator"), "ann", "annotator")
    plan = S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=2).plan_id
    live = S.LiveScores.from_engine(eng, "judge_a", "judge_b")
    before = live.scores.copy()
    decided = {}
    for k in range(8):
        item = S.claim_next(eng, ann, plan)
        d = S.decide(eng, ann, item.task_id, "AB"[k % 2], seconds=1)
        decided[d.iid] = float(d.label)
    assert live.sync(eng)  # some model changed
    _check(live, live.instances, decided)
    assert not live.scores[["tcpr", "emcr"]].equals(before[["tcpr", "emcr"]])
    S.undo_last(eng, ann, plan)
    live.sync(eng)
    last = list(decided)[-1]
    del decided[last]
    _check(live, live.instances, decided)
