"""The project generated elsewhere (:mod:`bench.independent_project`), run through the product
the way a lead with an outside annotation team would (issue 13, "Done when"):

1. the generator's project is written into a fresh SQLite database as a bundle (questions,
   three-constraint variants, responses, baseline features, two judges' labels; its 40
   features mapped one-to-one onto catalog features that offer both modes);
2. ``python -m reform_core plan --judges judge-a,judge-b --seed S`` — the default plan;
3. for each adjudicator error level (a copy of the planned database each):
   ``tasks --out`` → the generator's heterogeneous adjudicators decide every line
   (``required`` distinct annotators, none who already decided the item) → their decisions
   as ``adjudications.jsonl`` → ``import DIR``; repeated while ``tasks`` still writes lines
   (second opinions asked by the plan's rule come back as tasks);
4. ``score --json --intervals`` → each model's point estimates and measurement intervals,
   compared with the scores computed from the generator's hidden truth.

:func:`replicate` returns one row per (error level, model, metric).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
JUDGES = ("judge-a", "judge-b")
METRICS = ("tcpr", "emcr", "r1", "r2", "r3")
MAX_ROUNDS = 4


def _features() -> pd.DataFrame:
    """40 catalog features offering both modes (the generator's 40 own features map onto
    them in order)."""
    from reform_core.simulate import _catalog_features

    cat = _catalog_features()
    both = cat[(cat["require_weight"] > 0) & (cat["forbid_weight"] > 0)].reset_index(drop=True)
    if len(both) < 40:
        raise RuntimeError("the reformbench catalog offers fewer than 40 features with both modes")
    return both.iloc[:40]


def bundle_frames(inst: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The generator's INSTANCES (with ``label_a``, ``label_b``) as the importer's frames."""
    feats = _features()
    own = sorted(inst["feature"].unique())
    fmap = dict(zip(own, feats["feature"]))
    cmap = dict(zip(feats["feature"], feats["category"]))
    d = inst.assign(feature=inst["feature"].map(fmap))
    d["category"] = d["feature"].map(cmap)
    questions = pd.DataFrame({"key": d["question"].unique()})
    questions["task_type"] = questions["key"].map(d.drop_duplicates("question").set_index("question")["task_type"])
    first = d.drop_duplicates("instruction")
    instructions = pd.DataFrame(
        {
            "key": first["instruction"],
            "question": first["question"],
            "condition": "main",
            "pair_group": first["instruction"],
            "text": "Instruction " + first["instruction"],
        }
    )
    c1 = d.drop_duplicates(["instruction", "position"])
    constraints = pd.DataFrame(
        {
            "instruction": c1["instruction"],
            "position": c1["position"],
            "feature": c1["feature"],
            "category": c1["category"],
            "mode": c1["mode"],
            "text": c1["mode"] + " " + c1["feature"],
            "params": [{}] * len(c1),
        }
    )
    models = pd.DataFrame({"name": sorted(d["model"].unique())})
    mq = d.drop_duplicates(["model", "question"])
    mi = d.drop_duplicates(["model", "instruction"])
    responses = pd.concat(
        [
            pd.DataFrame(
                {
                    "model": mq["model"],
                    "question": mq["question"],
                    "instruction": "",
                    "kind": "baseline",
                    "text": "baseline of " + mq["model"] + " for " + mq["question"],
                }
            ),
            pd.DataFrame(
                {
                    "model": mi["model"],
                    "question": mi["question"],
                    "instruction": mi["instruction"],
                    "kind": "constrained",
                    "text": "response of " + mi["model"] + " to " + mi["instruction"],
                }
            ),
        ],
        ignore_index=True,
    )
    # A required feature is opposed iff absent from the baseline, a forbidden one iff present
    # (docs/metrics.md#targets-and-baseline-opposition). Absent features are written as such (present = false):
    # a (model, question) with no baseline row at all would be "unknown", never "absent"
    # (docs/metrics.md#missing-data), and its targets left out of EMCR
    opposed = d["baseline_opposed"].astype(bool).to_numpy()
    present = np.where(d["mode"].to_numpy() == "forbid", opposed, ~opposed)
    base = d[["model", "question", "feature"]].assign(present=present).drop_duplicates(["model", "question", "feature"])
    judgments = pd.concat(
        [
            pd.DataFrame(
                {
                    "judge": j,
                    "model": d["model"],
                    "instruction": d["instruction"],
                    "position": d["position"],
                    "label": d[col].astype(int),
                }
            )
            for j, col in zip(JUDGES, ("label_a", "label_b"))
        ],
        ignore_index=True,
    )
    return {
        "questions": questions,
        "instructions": instructions,
        "constraints": constraints,
        "models": models,
        "responses": responses,
        "baseline": base.assign(source="generator"),
        "judges": pd.DataFrame({"name": list(JUDGES), "provider": "replay"}),
        "judgments": judgments,
    }


def _cli(*args: str) -> dict | str:
    r = subprocess.run([sys.executable, "-m", "reform_core", *args], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"reform_core {args[0]} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout) if "--json" in args else r.stdout


def _decide_round(
    lines: list[dict], inst: pd.DataFrame, rates: pd.DataFrame, used: dict, rng: np.random.Generator, round_no: int
) -> list[dict]:
    """The generator's adjudicators decide each task line (``required`` distinct annotators
    who have not decided the item yet); choices relative to the plan's judges."""
    key = inst.set_index(["model", "instruction", "position"])
    out = []
    for x in lines:
        k = (x["model"], x["instruction"], x["position"])
        r = key.loc[k]
        y, la, lb = float(r["truth"]), float(r["label_a"]), float(r["label_b"])
        free = [a for a in range(len(rates)) if a not in used.setdefault(k, set())]
        for a in rng.choice(free, size=int(x["required"]), replace=False):
            used[k].add(int(a))
            err = rates["false_fail"].iloc[a] if y == 1 else rates["false_pass"].iloc[a]
            h = (1 - y) if rng.random() < err else y
            if la == lb:
                choice, note = ("A", "") if h == la else ("neither", "both judges are wrong")
            else:
                choice, note = ("A" if h == la else "B"), ""
            out.append(
                {
                    "judge_a": x["judge_a"],
                    "judge_b": x["judge_b"],
                    "model": x["model"],
                    "instruction": x["instruction"],
                    "position": int(x["position"]),
                    "choice": choice,
                    "note": note,
                    "annotator": str(rates["annotator"].iloc[a]),
                    "plan": x["plan"],
                    "seconds": float(30 + round_no),
                }
            )
    return out


def replicate(seed: int, errors=(0.0, 0.05), *, reps: int = 200, workdir: str | None = None) -> pd.DataFrame:
    """One seed of the generator through plan / tasks / import / score (module docstring)."""
    from bench.independent_project import annotator_rates, generate
    from reform_core.metrics import reform
    from reform_core.services.data.importer import frames_bundle, import_bundle_obj
    from reform_core.services.platform.uow import get_engine

    inst = generate(seed)
    truth = reform.table2(inst, p="truth").set_index("model")
    tmp = Path(workdir or tempfile.mkdtemp(prefix="reform-elsewhere-"))
    try:
        base_db = tmp / "planned.db"
        url = f"sqlite:///{base_db}"
        import_bundle_obj(get_engine(url), frames_bundle(bundle_frames(inst), source=f"elsewhere(seed={seed})"))
        get_engine(url).dispose()
        made = _cli("plan", "--db", url, "--judges", ",".join(JUDGES), "--seed", str(seed), "--json")
        rows = []
        for e in errors:
            db = tmp / f"err{int(round(100 * e)):02d}.db"
            shutil.copyfile(base_db, db)
            dburl = f"sqlite:///{db}"
            rates = annotator_rates(e, seed)
            rng = np.random.default_rng([seed, 7016, int(round(1000 * e))])
            used: dict = {}
            n_dec, rounds = 0, 0
            for rounds in range(1, MAX_ROUNDS + 1):
                out = tmp / f"tasks-{rounds}.jsonl"
                _cli("tasks", "--db", dburl, "--plan", made["plan"], "--out", str(out))
                lines = [json.loads(s) for s in out.read_text(encoding="utf-8").splitlines() if s.strip()]
                if not lines:
                    break
                dec = _decide_round(lines, inst, rates, used, rng, rounds)
                n_dec += len(dec)
                bdir = tmp / f"decisions-{rounds}"
                bdir.mkdir(exist_ok=True)
                (bdir / "questions.jsonl").write_text("", encoding="utf-8")
                (bdir / "adjudications.jsonl").write_text("".join(json.dumps(x) + "\n" for x in dec), encoding="utf-8")
                _cli("import", str(bdir), "--db", dburl)
            got = _cli("score", "--db", dburl, "--json", "--intervals", "--reps", str(reps), "--seed", str(seed))
            if got.get("estimator") != "cluster":
                raise RuntimeError(f"score used {got.get('estimator')!r}, not the default estimator")
            for m, r in got["models"].items():
                for metric in METRICS:
                    lo, hi = r["intervals"]["measurement"][metric]
                    rows.append(
                        {
                            "seed": seed,
                            "error": e,
                            "model": m,
                            "metric": metric,
                            "estimate": r[metric],
                            "lo": lo,
                            "hi": hi,
                            "truth": float(truth.loc[m, metric]),
                            "rounds": rounds,
                            "decisions": n_dec / max(len(got["models"]), 1),
                        }
                    )
        return pd.DataFrame(rows)
    finally:
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)
