"""Project data use cases: initialise, demo, status, simulate, IFEval import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import data as repo
from reform_core.services.importer import (
    Bundle,
    ImportFailed,
    Progress,
    ensure_catalog,
    field_label,
    frames_bundle,
    import_bundle,
    import_bundle_obj,
    one_line,
    read_lines,
)
from reform_core.records import storage_problem
from reform_core.safe_csv import write_csv
from reform_core.services.status import status  # noqa: F401 - re-exported (`status`, docs/cli.md)

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
    from reform_core.services.study_demo import load_demo_studies

    from reform_core.services.scoring import PAIR_META

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
    from reform_core.services import adjudication
    from reform_core.services.planning import create_cluster_plan
    from reform_core.services.users import local_principal

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
    from reform_core.services import adjudication
    from reform_core.demo.build import _u
    from reform_core.services.instances import instance_id, load_instances
    from reform_core.services.users import local_principal

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
            truth = m if _u("which", *unit) < 0.5 else g  # the bundle's erring judge (build.py)
        first = int(_u("demo-annotator", *unit) * len(names))
        need, k, said_so_far = int(t.required), 0, []
        while k < need:
            who = names[(first + k) % len(names)]
            said = 1 - truth if _u("demo-error", who, *unit) < DEMO_ANNOTATORS[who] else truth
            if g == m:
                choice, note = ("A", "") if said == g else ("neither", "Both judges are wrong here.")
            else:
                choice, note = ("A" if said == g else "B"), ""
            said_so_far.append(choice)
            need = required_annotators(params, t.kind, int(instance_id(t.response_id, t.constraint_id)),
                                       said_so_far) or need
            k += 1
            lines.append({"judge_a": DEMO_PAIR[0], "judge_b": DEMO_PAIR[1], "model": r["model"],
                          "instruction": r["instruction"], "position": int(r["position"]), "choice": choice,
                          "note": note, "annotator": who, "seconds": round(20 + 90 * _u("demo-seconds", who, *unit), 1),
                          "plan": DEMO_PLAN})
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


SIM_CONDITIONS = ("main", "single", "prompted")


def simulate_into(engine: Engine, *, seed: int = 0, scale: str = "paper", truth: Optional[str | Path] = None,
                  progress: Progress = None, adjudicate: int = 0, conditions: tuple[str, ...] = ("main",),
                  extractions: bool = False) -> dict:
    """Write a synthetic project (``reform_core.simulate``); optionally the hidden truth as CSV.

    ``adjudicate``: number of disagreements per model and condition the simulator's oracle
    decides, recorded as imported adjudications so calibration has reviewed strata.
    ``conditions``: ``main`` plus optionally ``single`` (single-constraint versions) and
    ``prompted``; ``extractions``: open-ended feature extractions (Table A4).
    """
    from reform_core.simulate import simulate

    unknown = [c for c in conditions if c not in SIM_CONDITIONS]
    if unknown or "main" not in conditions:
        raise ValueError(f"conditions: expected main plus any of single, prompted; got {', '.join(conditions)}")
    sim = simulate(seed=seed, scale=scale, single_constraint="single" in conditions, prompted="prompted" in conditions,
                   extractions=extractions)
    frames = simulation_frames(sim, adjudicate=adjudicate, seed=seed)
    counts = import_bundle_obj(engine, frames_bundle(frames, source=f"simulate(seed={seed})",
                                                     construction_models=tuple(sim.construction_models)),
                               progress=progress)
    with engine.begin() as conn:
        repo.set_meta(conn, {"project_name": f"simulated ({scale}, seed {seed})"})
    if truth:
        t = sim.truth.copy()
        Path(truth).parent.mkdir(parents=True, exist_ok=True)
        write_csv(t, truth)
    return counts


def simulation_frames(sim, *, adjudicate: int = 0, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The simulator's frames in the importer's shape."""
    import numpy as np

    q = sim.questions.rename(columns={"question": "key"})
    ins = sim.instructions.rename(columns={"instruction": "key"})
    cons = sim.constraints.copy()
    cons["params"] = [json.loads(p) if isinstance(p, str) and p else (p if isinstance(p, dict) else {}) for p in cons["params"]]
    models = sim.models.rename(columns={"model": "name"})
    resp = sim.responses.copy()
    resp["kind"] = np.where(resp["instruction"] == "", "baseline", "constrained")
    base = sim.baseline.copy()
    judges = pd.DataFrame({"name": list(sim.judges), "provider": "replay"})
    jd = sim.judgments.copy()
    frames = {"questions": q, "instructions": ins, "constraints": cons, "models": models,
              "responses": resp, "baseline": base, "judges": judges, "judgments": jd,
              "extractions": sim.extractions.assign(source="simulate")}
    if adjudicate:
        inst = sim.instances()
        ja, jb = sim.judges[0], sim.judges[1]
        la, lb = inst[f"label_{ja}"], inst[f"label_{jb}"]
        dis = inst[(la != lb) & la.notna() & lb.notna()]
        rng = np.random.default_rng(seed)
        picks = []
        for _, g in dis.groupby(["model", "condition"]):  # every condition has its own strata
            picks.append(g.sample(n=min(adjudicate, len(g)), random_state=rng.integers(2**31)))
        if picks:
            sel = pd.concat(picks)
            a = sim.oracle(sel["iid"].to_numpy(), rng=rng)
            a = np.asarray(a)
            choice = np.where(a == sel[f"label_{ja}"].to_numpy(), "A", "B")
            frames["adjudications"] = pd.DataFrame({
                "judge_a": ja, "judge_b": jb, "model": sel["model"].to_numpy(),
                "instruction": sel["instruction"].to_numpy(), "position": sel["position"].to_numpy(),
                "choice": choice, "annotator": "oracle", "plan": "simulated-oracle",
            })
    return frames


MAX_IFEVAL_KEY = 200 - len("ifeval-")  # question/instruction keys are at most 200 characters


def _json_objects(path: Path, errors: list[str]) -> list[tuple[int, dict]]:
    """The ``(line number, object)`` lines of a JSON Lines file; problems go to ``errors``."""
    from reform_core.records import DuplicateKeyError, loads_unique

    out = []
    for lineno, line in read_lines(path, errors):
        try:
            d = loads_unique(line)
        except DuplicateKeyError as exc:
            errors += [one_line(f"{path.name}:{lineno}: {field_label(k)}: given twice in this line (JSON would keep "
                                "only the last value)") for k in exc.keys]
            continue
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, too many digits, too deep
            errors.append(one_line(f"{path.name}:{lineno}: (line): invalid JSON: {getattr(exc, 'msg', None) or exc}"))
            continue
        if not isinstance(d, dict):
            errors.append(f"{path.name}:{lineno}: (line): expected a JSON object, got {type(d).__name__}")
            continue
        bad = [(k, p) for k, p in ((k, storage_problem(v)) for k, v in d.items()) if p]
        errors += [one_line(f"{path.name}:{lineno}: {field_label(k)}: {p}") for k, p in bad]
        if not bad:
            out.append((lineno, d))
    return out


def param_problems(feature, kw: dict, *, ifeval: bool = True) -> list[str]:
    """Problems of one constraint's params (IFEval: kwargs) against its catalog feature: names
    (IFEval: also the required ones, from the reference checker), types and choices."""
    from reform_core.catalog.loader import BOOL_OK, PARAM_TYPES
    from reform_core.verifiers import ifeval as ifeval_verifiers

    given = {k: v for k, v in kw.items() if v is not None}
    if ifeval:
        try:
            ifeval_verifiers.clean_kwargs(feature.key, given)
        except ValueError as exc:
            return [str(exc)]
    else:
        declared = {p.name for p in feature.params}
        unknown = sorted(set(given) - declared)
        if unknown:
            return [f"{feature.key}: unknown param(s) {unknown}; declared: {sorted(declared)}"]
    out = []
    for p in feature.params:
        v = given.get(p.name)
        if v is not None and (not isinstance(v, PARAM_TYPES[p.type]) or isinstance(v, bool) and p.type not in BOOL_OK):
            out.append(f"{feature.key}: {p.name} must be of type {p.type}, got {type(v).__name__}")
        elif p.choices and v is not None and v not in p.choices:
            out.append(f"{feature.key}: {p.name} must be one of {list(p.choices)}, got {v!r}")
    return out


def _ifeval_problems(d: dict, cat) -> list[tuple[str, str]]:
    """``(field, message)`` for each problem of one IFEval input record."""
    missing = [(f, "field required") for f in ("key", "prompt", "instruction_id_list", "kwargs") if f not in d]
    if missing:
        return missing
    key, ids, kwargs = d["key"], d["instruction_id_list"], d["kwargs"]
    out = []
    if isinstance(key, bool) or not isinstance(key, (int, str)) or not str(key).strip() or len(str(key)) > MAX_IFEVAL_KEY:
        out.append(("key", f"must be an integer or a non-empty string of at most {MAX_IFEVAL_KEY} characters"))
    if not isinstance(d["prompt"], str):
        out.append(("prompt", f"must be a string, got {type(d['prompt']).__name__}"))
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return out + [("instruction_id_list", "must be a list of strings")]
    if not isinstance(kwargs, list) or not all(isinstance(k, dict) for k in kwargs):
        return out + [("kwargs", "must be a list of objects")]
    if len(kwargs) != len(ids):
        out.append(("kwargs", f"{len(kwargs)} entries for {len(ids)} instruction ids"))
    out += [("instruction_id_list", f"unknown IFEval instruction id {i!r}") for i in ids if i not in cat]
    if not out:
        out += [("kwargs", msg) for i, kw in zip(ids, kwargs) for msg in param_problems(cat[i], kw)]
    return out


def _key_order(key: str):
    """Numeric keys in numeric order, then the others."""
    return (not key.isdecimal(), len(key) if key.isdecimal() else 0, key)


def import_ifeval(engine: Engine, *, input_path: str | Path, responses: dict[str, str | Path],
                  replace: bool = False, progress: Progress = None) -> dict:
    """Import IFEval-format data: prompts with instruction ids/kwargs and per-model responses.

    Each prompt becomes a question and one main instruction whose constraints are its
    instruction ids (catalog ``ifeval``), each with its text and acceptance criteria rendered
    from the catalog template with the prompt's kwargs (judges and annotators read "Answer
    with at least 300 words.", never a bare id). Responses join on exact prompt text; prompts
    without a response are reported by key in ``missing_responses`` and response lines
    whose prompt matches no input prompt in ``unmatched_responses`` (neither is an error).
    Problems are reported against the given files, ``file:line: field: message``.
    """
    from reform_core.catalog import load_catalog

    cat = load_catalog("ifeval")
    errors: list[str] = []
    input_path = Path(input_path)
    src = input_path.name
    prompts = []
    for lineno, d in _json_objects(input_path, errors):
        problems = _ifeval_problems(d, cat)
        errors += [one_line(f"{src}:{lineno}: {fld}: {msg}") for fld, msg in problems]
        if not problems:
            prompts.append((lineno, d))
    by_prompt = {d["prompt"]: str(d["key"]) for _, d in prompts}
    resp_rows, missing, unmatched = [], {}, []
    for model, path in responses.items():
        path = Path(path)
        seen = set()
        if not 0 < len(model) <= 200:
            errors.append(f"{path.name}:0: model: the model name must have 1 to 200 characters")
        for lineno, d in _json_objects(path, errors):
            bad = [fld for fld in ("prompt", "response") if not isinstance(d.get(fld), str)]
            errors += [f"{path.name}:{lineno}: {fld}: field required (a string)" for fld in bad]
            if bad:
                continue
            key = by_prompt.get(d["prompt"])
            if key is None:
                unmatched.append(f"{path.name}:{lineno}: prompt: matches no prompt of {src}")
                continue
            if key in seen:
                continue
            seen.add(key)
            resp_rows.append({"model": model, "question": f"ifeval-{key}", "instruction": f"ifeval-{key}",
                              "text": d["response"], "_line": lineno, "_file": path.name})
        missing[model] = sorted((k for k in by_prompt.values() if k not in seen), key=_key_order)
    if errors:
        raise ImportFailed(errors)
    questions = pd.DataFrame([{"key": f"ifeval-{d['key']}", "text": d["prompt"], "task_type": "ifeval",
                               "source": "IFEval", "_line": n, "_file": src} for n, d in prompts])
    instructions = pd.DataFrame([{"key": f"ifeval-{d['key']}", "question": f"ifeval-{d['key']}",
                                  "condition": "main", "pair_group": f"ifeval-{d['key']}", "text": d["prompt"],
                                  "_line": n, "_file": src} for n, d in prompts])
    cons = []
    for n, d in prompts:
        for pos, (iid, kw) in enumerate(zip(d["instruction_id_list"], d["kwargs"]), start=1):
            kw = {k: v for k, v in kw.items() if v is not None}
            feat = cat[iid]
            mode = feat.modes[0]
            cons.append({"instruction": f"ifeval-{d['key']}", "position": pos, "feature": iid, "mode": mode,
                         "text": feat.render(mode, **kw), "acceptance": feat.render_acceptance(mode, **kw),
                         "params": kw, "_line": n, "_file": src})
    frames = {"questions": questions, "instructions": instructions, "constraints": pd.DataFrame(cons),
              "responses": pd.DataFrame(resp_rows)}
    bundle = frames_bundle(frames, source=str(input_path), catalog="ifeval")
    counts = import_bundle_obj(engine, bundle, replace=replace, progress=progress)
    return {**counts, "missing_responses": missing, "unmatched_responses": unmatched}


__all__ = ["Bundle", "ImportFailed", "init_project", "status", "load_demo", "ensure_demo", "simulate_into",
           "import_ifeval", "import_bundle", "project_meta"]
