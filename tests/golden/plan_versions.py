"""One stored plan of each past version of the default design, scored on a simulated project.

The dicts below are the parameters as each version of the product stored them (version 1:
uniform audits, every item decided twice; version 2: audits allocated by score gradient;
version 3 before the third opinion: audits by target with Neyman allocation and second
opinions, without ``audit_opinions``; version 3 today). ``tests/unit/test_plan_versions.py``
scores each with the default estimator and compares every number with the values pinned in
``tests/data/golden/plan_versions.json`` (written by the code of the time with
``python -m tests.golden.plan_versions --update``): an old project scores exactly as before.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

from tests.golden.projects import GOLDEN, _clean

SEED = 13


def _base(inst: pd.DataFrame) -> dict:
    model = inst["model"].astype(str)
    dis = inst["label_judge_a"] != inst["label_judge_b"]
    pi = {str(m): round(min(1.0, 18 / max(int(d.sum()), 1)), 6) for m, d in dis.groupby(model)}
    return {"design": "question-cluster", "condition": "main", "cluster_pi": pi, "cluster_pi0": dict(pi)}


def stored_plans(inst: pd.DataFrame) -> dict[str, dict]:
    b = _base(inst)
    v1 = {**b, "version": 1, "audit_pi": 0.1, "double_fraction": 1.0, "folds": 5, "seed": SEED}
    v2 = {
        **b,
        "version": 2,
        "audit_allocation": "gradient",
        "audit_pi": 0.1,
        "double_fraction": 1.0,
        "folds": 5,
        "seed": SEED,
    }
    v3a = {
        **b,
        "version": 3,
        "audit_allocation": "neyman",
        "audit_pi": 0.3,
        "double_fraction": 0.1,
        "second_opinion": "audit",
        "audit_unit": "target",
        "folds": 5,
        "seed": SEED,
    }
    v3b = {**v3a, "second_opinion": "all"}
    v3 = {**v3b, "audit_opinions": 3, "target": {"metric": "tcpr", "half_width": 3.0, "source": "Cochran margin"}}
    return {"v1": v1, "v2": v2, "v3_two_opinions_audit": v3a, "v3_two_opinions_all": v3b, "v3": v3}


def project():
    from reform_core.simulate import simulate

    sim = simulate(SEED, "small", both_wrong=0.02)
    inst = sim.instances()
    return inst[inst["condition"] == "main"].reset_index(drop=True)


def score_version(inst: pd.DataFrame, params: dict) -> dict:
    """Tasks drawn from the stored parameters, simulated decisions (5 % error, the plan's
    opinion rule followed), the default estimator's table, variance components and both-wrong
    rates."""
    from bench.validation import simulated_decisions
    from reform_core.estimators import cluster, draws
    from reform_core.estimators.design import Design

    ja, jb = "label_judge_a", "label_judge_b"
    params = Design.from_stored(params)
    tasks = draws.draw(inst, params, judge_a=ja, judge_b=jb)
    by_iid = inst.set_index("iid")
    at = tasks["iid"].to_numpy()
    reference = pd.Series(
        params.second_opinion_reference(at, tasks["kind"], by_iid[ja].reindex(at).to_numpy(dtype=float)), index=at
    )
    depth = pd.Series(params.opinion_depth(tasks["kind"]), index=at)
    rng = np.random.default_rng(SEED)
    dec = simulated_decisions(by_iid["truth"].astype(float), tasks, 0.05, rng, reference=reference, depth=depth)
    est = cluster.estimate(inst, tasks, dec, params, judge_a=ja, judge_b=jb, rng=rng, error_boot=5)
    return {
        "tasks": int(len(tasks)),
        "decisions": int(len(dec)),
        "table": est.table.to_dict("records"),
        "components": est.components.to_dict("records"),
        "both_wrong": est.both_wrong.to_dict("records"),
        "notes": list(est.notes),
    }


def snapshot() -> dict:
    inst = project()
    return _clean({name: score_version(inst, params) for name, params in stored_plans(inst).items()})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    snap = json.loads(json.dumps(snapshot(), default=float))
    if args.update:
        (GOLDEN / "plan_versions.json").write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print({k: v["tasks"] for k, v in snap.items()})


if __name__ == "__main__":
    main()
