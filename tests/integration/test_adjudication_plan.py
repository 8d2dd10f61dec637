"""Stored sample plans, the instance / adjudication loaders, the plan summary and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from sqlalchemy import text

from db.repo.adjudication import ensure_user, write_tx
from reform_core.services.accounts.auth import Principal
from reform_core.services.adjudication import adjudication as S
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.instances import load_adjudications, load_instances
from reform_core.services.data.simulated import simulate_into
from reform_core.services.platform.uow import get_engine
from reform_core.simulate import simulate

REPO = Path(__file__).resolve().parents[2]


def _cochran(n_pop: int, confidence=0.95, p=0.5, e=0.03) -> int:
    """Independent reference: Cochran (1977) eqs. 4.2–4.3 with FPC."""
    z = norm.ppf(0.5 + confidence / 2)
    n0 = z * z * p * (1 - p) / (e * e)
    return min(n_pop, math.ceil(n0 / (1 + (n0 - 1) / n_pop) - 1e-9))


@pytest.fixture
def project(sqlite_url):
    eng = get_engine(sqlite_url)
    simulate_into(eng, seed=7, scale="small")
    with write_tx(eng) as conn:
        lead = Principal(ensure_user(conn, username="lead", role="lead"), "lead", "lead")
        ann = Principal(ensure_user(conn, username="ann", role="annotator"), "ann", "annotator")
    return eng, lead, ann


def _tasks(eng, plan_id):
    with eng.connect() as conn:
        res = conn.execute(text("SELECT * FROM adjudication_task WHERE plan_id = :p ORDER BY id"), {"p": plan_id})
        return pd.DataFrame(res.all(), columns=list(res.keys()))


def test_instances_match_the_simulated_truth(project):
    eng, _, _ = project
    inst = load_instances(eng, "judge_a", "judge_b")
    ref = simulate(seed=7, scale="small").instances()
    key = ["model", "instruction", "position"]
    got = inst.sort_values(key).reset_index(drop=True)
    ref = ref.sort_values(key).reset_index(drop=True)
    assert len(got) == len(ref)
    for col in ("question", "task_type", "feature", "category", "mode", "condition", "label_judge_a", "label_judge_b"):
        assert (got[col].astype(str).to_numpy() == ref[col].astype(str).to_numpy()).all(), col
    assert (got["baseline_opposed"].to_numpy() == ref["baseline_opposed"].to_numpy()).all()
    assert inst["iid"].is_unique and inst["iid"].is_monotonic_increasing
    with pytest.raises(ValueError, match="unknown judge 'nobody'"):
        load_instances(eng, "judge_a", "nobody")
    with pytest.raises(ValueError, match="must differ"):
        load_instances(eng, "judge_a", "judge_a")


def test_tiny_bundle_baseline_opposition_and_imported_adjudication(tmp_path, any_db_url):
    from tests.integration.test_import import make_bundle

    eng = get_engine(any_db_url)
    import_bundle(eng, make_bundle(tmp_path / "b"))
    inst = load_instances(eng, "ja", "jb").set_index(["model", "instruction", "position"])
    # m1's baseline for q1 has bullet_list: "forbid bullet_list" opposes it, "require headings" too
    assert inst.loc[("m1", "q1-v1", 2), "baseline_opposed"]
    assert inst.loc[("m1", "q1-v1", 1), "baseline_opposed"]
    # m2 has no baseline annotation for q1: opposition is unknown, never "absent" (issue 14)
    assert pd.isna(inst.loc[("m2", "q1-v1", 2), "baseline_opposed"])
    # m2's q2 baseline has numbered_enumeration: requiring it is aligned
    assert not inst.loc[("m2", "q2-v1", 1), "baseline_opposed"]
    assert inst.loc[("m1", "q1-v1", 2), "label_jb"] == 0 and inst.loc[("m1", "q1-v1", 2), "label_ja"] == 1
    adj = load_adjudications(eng, "ja", "jb")
    assert len(adj) == 1 and adj["a"].iloc[0] == 0.0 and adj["choice"].iloc[0] == "B"
    assert adj["iid"].iloc[0] == inst.loc[("m1", "q1-v1", 2), "iid"]
    swapped = load_adjudications(eng, "jb", "ja")  # same decision, seen from the other side
    assert swapped["choice"].iloc[0] == "A" and swapped["a"].iloc[0] == 0.0


def test_stored_plan_sizes_allocation_and_reproducibility(project):
    eng, lead, _ = project
    made = S.create_plan(
        eng, lead, judge_a="judge_a", judge_b="judge_b", seed=3, margin=0.05, audit=6, overlap_fraction=0.25
    )
    inst = load_instances(eng, "judge_a", "judge_b")
    dis = inst[inst["label_judge_a"] != inst["label_judge_b"]].copy()
    dis["direction"] = np.where(dis["label_judge_a"] == 1, "A1B0", "A0B1")
    dis["stratum"] = dis["model"] + "|" + dis["direction"] + "|" + dis["category"] + "|" + dis["mode"]
    tasks = _tasks(eng, made.plan_id)
    work = tasks[tasks["kind"] == "disagreement"]
    tiid = work["response_id"].to_numpy(np.int64) * (1 << 32) + work["constraint_id"].to_numpy(np.int64)
    assert set(tiid) <= set(dis["iid"])  # every planned item is a disagreement
    per_model = dis.groupby("model").size()
    planned = dis.set_index("iid").loc[tiid].groupby("model").size()
    for model, n_pop in per_model.items():
        assert planned[model] == _cochran(n_pop, e=0.05), model
        row = made.models.set_index("model").loc[model]
        assert (row["disagreements"], row["planned"]) == (n_pop, planned[model])
    sizes = dis.groupby("stratum").size()
    drawn = work.groupby("stratum").size()
    assert set(drawn.index) == set(sizes.index)  # every non-empty stratum is covered
    assert (drawn <= sizes.reindex(drawn.index)).all()
    audit = tasks[tasks["kind"] == "audit"]
    aiid = audit["response_id"].to_numpy(np.int64) * (1 << 32) + audit["constraint_id"].to_numpy(np.int64)
    agreed = inst.set_index("iid").loc[aiid]
    assert len(audit) == 6 and (agreed["label_judge_a"] == agreed["label_judge_b"]).all()
    assert (tasks["required"] == 2).sum() == round(0.25 * len(tasks))
    with eng.connect() as conn:
        params = conn.execute(text("SELECT params FROM sample_plan WHERE id = :p"), {"p": made.plan_id}).scalar()
    params = json.loads(params) if isinstance(params, str) else params
    for k, v in {
        "judge_a": "judge_a",
        "judge_b": "judge_b",
        "confidence": 0.95,
        "p": 0.5,
        "margin": 0.05,
        "seed": 3,
        "audit": 6,
        "overlap_fraction": 0.25,
    }.items():
        assert params[k] == v, k
    # the same seed draws the same items in the same order with the same sides; another seed does not
    again = _tasks(
        eng,
        S.create_plan(
            eng, lead, judge_a="judge_a", judge_b="judge_b", seed=3, margin=0.05, audit=6, overlap_fraction=0.25
        ).plan_id,
    )
    cols = ["response_id", "constraint_id", "stratum", "kind", "required", "order_key", "a_left"]
    assert tasks[cols].equals(again[cols])
    other = _tasks(eng, S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=4, margin=0.05).plan_id)
    assert not other["order_key"].equals(tasks["order_key"].iloc[: len(other)])
    with pytest.raises(ValueError, match="already exists"):
        S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", name=made.name)
    with pytest.raises(ValueError, match="margin"):
        S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", margin=0)


def test_plan_summary_counts(project):
    eng, lead, ann = project
    made = S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=1)
    chosen = []
    for k in range(6):
        item = S.claim_next(eng, ann, made.plan_id)
        d = S.decide(eng, ann, item.task_id, "A" if k % 2 else "B", seconds=1)
        chosen.append(d)
    summary = S.plan_summary(eng, lead, made.plan_id)
    inst = load_instances(eng, "judge_a", "judge_b")
    both = inst[["label_judge_a", "label_judge_b"]].notna().all(axis=1)
    agree = (inst["label_judge_a"] == inst["label_judge_b"])[both].groupby(inst["model"]).mean() * 100
    m = summary.models.set_index("model")
    for model, value in agree.items():
        assert m.loc[model, "agreement"] == pytest.approx(value)
    assert m.loc["Total", "reviewed"] == 6 and m.loc["Total", "planned"] == made.tasks
    by_iid = inst.set_index("iid")
    with_a = sum(d.label == by_iid.loc[d.iid, "label_judge_a"] for d in chosen)
    assert (m.loc["Total", "agrees_a"], m.loc["Total", "agrees_b"]) == (with_a, 6 - with_a)
    st = summary.strata
    assert st["reviewed"].sum() == 6 and st["planned"].sum() == made.tasks

    def stratum(r):
        return f"{r['model']}|{'A1B0' if r['label_judge_a'] == 1 else 'A0B1'}|{r['category']}|{r['mode']}"

    expected = pd.Series([d.label for d in chosen], index=[stratum(by_iid.loc[d.iid]) for d in chosen])
    expected = expected.groupby(level=0).mean()
    got = st[st["reviewed"] > 0].set_index("stratum")["pi_hat"]
    assert got.sort_index().to_dict() == pytest.approx(expected.sort_index().to_dict())
    assert st.loc[st["reviewed"] == 0, "provisional"].all()


def test_cli_plan_size_and_plan(tmp_path):
    for n, expected in ((1308, "588"), (1416, "609")):
        r = subprocess.run(
            [sys.executable, "-m", "reform_core", "plan-size", "--population", str(n)],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        assert r.returncode == 0 and r.stdout.strip() == expected, r.stderr
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    simulate_into(get_engine(db), seed=2, scale="small")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "reform_core",
            "plan",
            "--db",
            db,
            "--judges",
            "judge_a,judge_b",
            "--design",
            "stratified",
            "--seed",
            "1",
            "--margin",
            "0.1",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["models"]
    inst = load_instances(get_engine(db), "judge_a", "judge_b")
    n_pop = (inst["label_judge_a"] != inst["label_judge_b"]).groupby(inst["model"]).sum()
    assert set(out) == set(n_pop.index)
    for model, d in out.items():
        assert set(d) == {"disagreements", "planned", "strata"}
        assert d["disagreements"] == n_pop[model] and d["planned"] == _cochran(int(n_pop[model]), e=0.1)
    r = subprocess.run(
        [sys.executable, "-m", "reform_core", "plan", "--db", db, "--judges", "judge_a", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert r.returncode != 0 and "expected two judge names" in r.stderr
