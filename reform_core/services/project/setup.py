"""Project set-up use cases: initialise a project and load the demo."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.engine import Engine

from db.repo import data as repo
from reform_core.services.data.importer import Progress, ensure_catalog, import_bundle

DEMO_FLAG = "demo_loaded"


def init_project(engine: Engine, *, catalog: str = "reformbench") -> dict:
    """Make sure the schema is current (done by ``get_engine``) and the catalog loaded."""
    with engine.begin() as conn:
        n = ensure_catalog(conn, catalog)
    return {"catalog": catalog, "features_loaded": n}


def project_meta(engine: Engine) -> dict[str, str]:
    with engine.connect() as conn:
        return repo.get_meta(conn)


def load_demo(engine: Engine, *, progress: Progress = None) -> dict:
    """Import the bundled demo project (idempotent) and return the ``demo`` counts
    (docs/formats.md#project-data)."""
    from reform_core.demo import bundle_dir
    from reform_core.services.scoring.scoring import PAIR_META
    from reform_core.services.studies.study_demo import load_demo_studies

    import_bundle(engine, bundle_dir(), progress=progress)
    _demo_queue(engine)
    load_demo_studies(engine)
    with engine.begin() as conn:
        meta = {DEMO_FLAG: "1"}
        if PAIR_META not in repo.get_meta(conn):  # the demo lead's choice; `pair A B` changes it
            meta[PAIR_META] = json.dumps(list(DEMO_PAIR))
        repo.set_meta(conn, meta)
        c = repo.status_counts(conn)
    return {k: c[k] for k in ("questions", "instructions", "responses", "judgments")}


DEMO_PLAN = "demo queue"
DEMO_PAIR = ("gpt-judge", "gemini-judge")


def _demo_queue(engine: Engine) -> None:
    """The demo's default plan (the question-cluster design of ``plan``, seed 0) with the
    first 90 % of its queue decided (its TCPR measurement intervals about ±4 pp: informative
    on first start), so the Scores page shows the default estimator, its
    two intervals, the audit's both-wrong rates, the annotators' accuracy and the planner's
    verdict on first start, and the Adjudicate page still has work (the bundle's own
    decisions live in the imported plan 'demo')."""
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication import adjudication
    from reform_core.services.adjudication.planning import create_cluster_plan

    lead = local_principal(engine)
    if DEMO_PLAN not in set(adjudication.list_plans(engine, lead)["name"]):
        create_cluster_plan(engine, lead, judge_a=DEMO_PAIR[0], judge_b=DEMO_PAIR[1], seed=0, name=DEMO_PLAN)
        _demo_decisions(engine)


DEMO_DECIDED_SHARE = 0.9
DEMO_ANNOTATORS = {"alice": 0.0, "bob": 0.04, "carol": 0.12}  # outside annotators and how often each errs


def _demo_decisions(engine: Engine) -> None:
    """Decisions on the demo queue's first tasks by three outside annotators who report the
    demo's ground truth (on a disagreement the judge the bundle did not make err; on an
    agreement the agreed label, both demo judges being right there) and err at the rates of
    :data:`DEMO_ANNOTATORS` (hash-seeded: the demo is the same on every load). A task gets the
    decisions its plan asks for: two where doubled, and another opinion while those so far go
    against the plan's reference (:func:`reform_core.estimators.design.required_annotators`).
    Written through the ordinary ``import`` path (``adjudications.jsonl``)."""
    import tempfile

    from db.repo import adjudication as adj_repo
    from reform_core.demo.build import stable_uniform
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication import adjudication
    from reform_core.services.data.instances import instance_id, load_instances

    inst = load_instances(engine, *DEMO_PAIR)
    la, lb = inst.attrs["judge_a"], inst.attrs["judge_b"]
    plans = adjudication.list_plans(engine, local_principal(engine))
    from reform_core.estimators.design import required_annotators

    plan_id = int(plans.set_index("name").loc[DEMO_PLAN, "id"])
    with engine.connect() as conn:
        tasks = adj_repo.plan_tasks(conn, plan_id=plan_id)
        params = adj_repo.plan_params(conn, plan_id=plan_id)
    tasks = tasks.sort_values("order_key").head(int(round(DEMO_DECIDED_SHARE * len(tasks))))
    info = inst.set_index("iid").loc[instance_id(tasks["response_id"], tasks["constraint_id"])]
    names = list(DEMO_ANNOTATORS)
    lines = []
    for t, (_, r) in zip(tasks.itertuples(index=False), info.iterrows()):
        unit = (r["model"], r["instruction"], int(r["position"]))
        g, m = int(r[la]), int(r[lb])
        if g == m:
            truth = g
        else:
            truth = m if stable_uniform("which", *unit) < 0.5 else g  # the bundle's erring judge (build.py)
        first = int(stable_uniform("demo-annotator", *unit) * len(names))
        need, k, said_so_far = int(t.required), 0, []
        while k < need:
            who = names[(first + k) % len(names)]
            said = 1 - truth if stable_uniform("demo-error", who, *unit) < DEMO_ANNOTATORS[who] else truth
            if g == m:
                choice, note = ("A", "") if said == g else ("neither", "Both judges are wrong here.")
            else:
                choice, note = ("A" if said == g else "B"), ""
            said_so_far.append(choice)
            need = (
                required_annotators(params, t.kind, int(instance_id(t.response_id, t.constraint_id)), said_so_far)
                or need
            )
            k += 1
            lines.append(
                {
                    "judge_a": DEMO_PAIR[0],
                    "judge_b": DEMO_PAIR[1],
                    "model": r["model"],
                    "instruction": r["instruction"],
                    "position": int(r["position"]),
                    "choice": choice,
                    "note": note,
                    "annotator": who,
                    "seconds": round(20 + 90 * stable_uniform("demo-seconds", who, *unit), 1),
                    "plan": DEMO_PLAN,
                }
            )
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "questions.jsonl").write_text("", encoding="utf-8")  # a bundle of decisions only
        path = Path(tmp) / "adjudications.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        import_bundle(engine, tmp)


def ensure_demo(engine: Engine) -> bool:
    """Load the demo into an empty database (first app start). True if it was loaded."""
    with engine.connect() as conn:
        empty = repo.count_rows(conn, "question") == 0
    if empty:
        load_demo(engine)
    return empty
