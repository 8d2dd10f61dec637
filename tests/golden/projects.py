"""Three simulated projects taken through the product's command line, and every number they produce.

Used by ``tests/integration/test_golden.py`` to pin the estimates, intervals and export files
of the default estimator and the paper's rules across a restructuring (equal to 1e-12), and by
``python -m tests.golden.projects --update`` to rewrite the pinned values (only when a change of
the numbers is intended; the commit says why).

Projects (small simulator scale, so each takes seconds):

* ``finished``: seed 5; the default plan; every task decided by simulated outside annotators who
  err on 5 % of decisions, second and third opinions included, until no task is left;
* ``in_progress``: seed 11; the default plan; the first round of decisions on every other task
  only (second opinions pending, questions partly decided);
* ``paper``: seed 7 with the single-constraint and prompted conditions and open-ended
  extractions; a stratified plan decided in full (the paper's rules, every paper table).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "data" / "golden"
PAIR = "judge_a,judge_b"
ANNOTATORS = ("ext1", "ext2", "ext3", "ext4", "ext5")
ERROR = 0.05
# values that differ between two runs on the same inputs (clock, durations, environment)
VOLATILE_KEYS = {
    "exported_at",
    "dataset_sha256",
    "app_version",
    "created_at",
    "decided_at",
    "seconds_elapsed",
    "elapsed",
    "duration_s",
    "python",
    "platform",
    "versions",
    "sha256",
    "files",
    "out",
}
VOLATILE_COLUMNS = {"created_at", "decided_at", "seconds", "claimed_at", "updated_at"}


def cli(*args) -> dict | str:
    r = subprocess.run(
        [sys.executable, "-m", "reform_core", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "REFORM_DEBUG": "1"},
    )
    if r.returncode != 0:
        raise RuntimeError(f"reform_core {' '.join(map(str, args))} failed:\n{r.stderr}")
    return json.loads(r.stdout) if "--json" in args else r.stdout


def _flip(key: tuple, round_: int) -> bool:
    """A simulated annotator's error, fixed by the item and the round (no global random state)."""
    h = hashlib.sha256(repr((key, round_)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64 < ERROR


def _decide(db: str, work: Path, labels: pd.DataFrame, truth: pd.Series, round_: int, *, keep=None) -> int:
    """Write the plan's open tasks, decide them (round ``round_``) and import the decisions."""
    path = work / f"tasks-{round_}.jsonl"
    cli("tasks", "--db", db, "--out", path, "--json")
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    if keep is not None:
        lines = [x for i, x in enumerate(lines) if keep(i)]
    rows = []
    for x in lines:
        key = (x["model"], x["instruction"], x["position"])
        y, la = int(truth.loc[key]), int(labels.loc[key])
        names = ANNOTATORS[: x["required"]] if round_ == 0 else (ANNOTATORS[round_ + 1],)
        for slot, who in enumerate(names):
            h = 1 - y if _flip(key, round_ * 10 + slot) else y
            if x["kind"] == "audit":
                choice = "neither" if h != la else "A"
            else:
                choice = "A" if h == la else "B"
            rows.append(
                {k: x[k] for k in ("plan", "judge_a", "judge_b", "model", "instruction", "position")}
                | {
                    "annotator": who,
                    "choice": choice,
                    "seconds": 10.0,
                    "note": "both judges are wrong" if choice == "neither" else "",
                }
            )
    if not rows:
        return 0
    bundle = work / f"decisions-{round_}"
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "questions.jsonl").write_text("", encoding="utf-8")
    (bundle / "adjudications.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cli("import", bundle, "--db", db, "--json")
    return len(rows)


def _simulated(db: str, work: Path, seed: int, *extra) -> tuple[pd.Series, pd.Series]:
    cli("simulate", "--db", db, "--seed", seed, "--scale", "small", "--truth", work / "truth.csv", *extra, "--json")
    truth = pd.read_csv(work / "truth.csv", dtype={"instruction": str})
    from reform_core.simulate import simulate

    conditions = ("single" in " ".join(map(str, extra)), "prompted" in " ".join(map(str, extra)))
    inst = simulate(
        seed=seed,
        scale="small",
        single_constraint=conditions[0],
        prompted=conditions[1],
        extractions="--extractions" in extra,
    ).instances()
    labels = inst.set_index(["model", "instruction", "position"])["label_judge_a"]
    return labels, truth.set_index(["model", "instruction", "position"])["truth"]


def build(name: str, work: Path) -> str:
    """Build project ``name`` in a fresh SQLite file under ``work``; returns its URL."""
    work.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{work / 'golden.db'}"
    if name == "finished":
        labels, truth = _simulated(db, work, 5)
        cli("plan", "--db", db, "--judges", PAIR, "--seed", 3, "--json")
        for round_ in range(4):
            if not _decide(db, work, labels, truth, round_):
                break
    elif name == "in_progress":
        labels, truth = _simulated(db, work, 11)
        cli("plan", "--db", db, "--judges", PAIR, "--seed", 4, "--json")
        _decide(db, work, labels, truth, 0, keep=lambda i: i % 2 == 0)
    elif name == "paper":
        labels, truth = _simulated(
            db, work, 7, "--conditions", "main,single,prompted", "--extractions", "--adjudicate", 15
        )
        cli("plan", "--db", db, "--judges", PAIR, "--design", "stratified", "--seed", 2, "--json")
        for round_ in range(3):
            if not _decide(db, work, labels, truth, round_):
                break
    else:
        raise ValueError(f"unknown golden project {name!r}")
    return db


def _clean(value):
    """JSON-able value without the keys that change from run to run; NaN as None."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _csv(path: Path) -> dict:
    df = pd.read_csv(path, dtype=object, keep_default_na=False)
    df = df[[c for c in df.columns if c not in VOLATILE_COLUMNS]]

    def cell(v: str):
        try:
            return float(v) if v not in ("", "True", "False") else v
        except ValueError:
            return v

    return {"columns": list(df.columns), "rows": [[cell(v) for v in row] for row in df.itertuples(index=False)]}


def snapshot(name: str, db: str, work: Path) -> dict:
    """Every number the project gives: scores with intervals (default estimator and the paper's
    rules), the export's CSV and JSON files, the export's own recomputation."""
    out: dict = {}
    reps = ("--intervals", "--reps", 200, "--seed", 1)
    if name == "paper":
        for rule in ("stratified", "pooled"):
            out[f"score_{rule}"] = cli("score", "--db", db, "--calibration", rule, *reps, "--json")
        out["analyses"] = cli("analyses", "--db", db, "--n-boot", 100, "--seed", 1, "--json")
    else:
        out["score_default"] = cli("score", "--db", db, *reps, "--json")
        out["score_stratified"] = cli("score", "--db", db, "--calibration", "stratified", *reps, "--json")
    exp = work / "export"
    cli("export", "--db", db, "--out", exp, "--json")
    out["export"] = {
        p.name: (_csv(p) if p.suffix == ".csv" else json.loads(p.read_text(encoding="utf-8")))
        for p in sorted(exp.iterdir())
        if p.suffix in (".csv", ".json")
    }
    out["score_export"] = cli("score-export", exp, "--json")
    return _clean(out)


NAMES = ("finished", "in_progress", "paper")


def main() -> None:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true", help="rewrite tests/data/golden/*.json")
    ap.add_argument("names", nargs="*", default=list(NAMES))
    args = ap.parse_args()
    for name in args.names:
        with tempfile.TemporaryDirectory() as tmp:
            snap = snapshot(name, build(name, Path(tmp)), Path(tmp))
        if args.update:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            (GOLDEN / f"{name}.json").write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(name, len(json.dumps(snap)))


if __name__ == "__main__":
    main()
