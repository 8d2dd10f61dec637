"""Benchmark: import a paper-scale bundle on SQLite and PostgreSQL (issue 2).

Writes a paper-scale bundle (5,000 instructions, 15,000 constraints, 59,100 responses,
~91,000 baseline annotations, 300,000 judgments from two judges) from the simulator, then
imports it into a fresh database 3 times per backend, each in its own process, timing
the import and reading the child's peak RSS. Results: bench/results/import.md.

    python bench/bench_import.py [--runs 3] [--pg postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import machine_line  # noqa: E402

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from reform_core.services.uow import get_engine
from reform_core.services.importer import import_bundle
eng = get_engine({url!r})
t = time.perf_counter()
counts = import_bundle(eng, {bundle!r})
dt = time.perf_counter() - t
print(json.dumps({{"seconds": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "counts": counts}}))
"""


def write_bundle(out: Path) -> dict:
    from reform_core.services.data import simulation_frames
    from reform_core.simulate import simulate

    frames = simulation_frames(simulate(seed=0, scale="paper"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "bundle.json").write_text(json.dumps({"format": "reform-bundle", "version": 1, "name": "paper-scale", "catalog": "reformbench"}))
    sizes = {}

    def dump(name, records):
        with (out / name).open("w") as fh:
            for r in records:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        sizes[name] = len(records)

    dump("questions.jsonl", frames["questions"].to_dict("records"))
    cons = frames["constraints"]
    by_i = {k: g.drop(columns=["instruction"]).to_dict("records") for k, g in cons.groupby("instruction", sort=False)}
    ins = frames["instructions"].to_dict("records")
    for r in ins:
        r["constraints"] = by_i[r["key"]]
    dump("instructions.jsonl", ins)
    dump("models.jsonl", frames["models"].to_dict("records"))
    resp = frames["responses"].drop(columns=["kind"]).to_dict("records")
    for r in resp:
        if not r["instruction"]:
            del r["instruction"]
    dump("responses.jsonl", resp)
    dump("baseline_features.jsonl", frames["baseline"].to_dict("records"))
    dump("judges.jsonl", frames["judges"].to_dict("records"))
    jd = frames["judgments"].to_dict("records")
    for r in jd:
        r["label"] = int(r["label"])
        r["position"] = int(r["position"])
    dump("judgments.jsonl", jd)
    return sizes


def run_child(url: str, bundle: Path) -> dict:
    code = CHILD.format(root=str(ROOT), url=url, bundle=str(bundle))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def pg_database(admin: str):
    import psycopg

    name = f"reform_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    base = admin.rsplit("/", 1)[0]
    return name, f"postgresql+psycopg://{base.split('://', 1)[1]}/{name}"


def drop_pg(admin: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="reform-bench-import-"))
    bundle = tmp / "bundle"
    t = time.perf_counter()
    sizes = write_bundle(bundle)
    print(f"bundle written in {time.perf_counter() - t:.1f}s: {sizes}")
    results = {"sqlite": [], "postgresql": []}
    for i in range(args.runs):
        url = f"sqlite:///{tmp / f'run{i}.db'}"
        results["sqlite"].append(run_child(url, bundle))
        print("sqlite", i, results["sqlite"][-1]["seconds"])
        if args.pg:
            name, url = pg_database(args.pg)
            try:
                results["postgresql"].append(run_child(url, bundle))
                print("postgresql", i, results["postgresql"][-1]["seconds"])
            finally:
                drop_pg(args.pg, name)
    lines = [
        "## Import of a paper-scale bundle (issue 2)",
        "",
        machine_line(),
        "",
        f"Bundle: {sizes['instructions.jsonl']:,} instructions (3 constraints each), "
        f"{sizes['responses.jsonl']:,} responses, {sizes['baseline_features.jsonl']:,} baseline annotations, "
        f"{sizes['judgments.jsonl']:,} judgments (2 judges). Each run imports into a fresh database in a new process.",
        "",
        "| backend | runs (s) | median (s) | target | peak RSS median (MB) |",
        "|---|---|---|---|---|",
    ]
    for backend, target in (("sqlite", 20), ("postgresql", 30)):
        rs = results[backend]
        if not rs:
            continue
        secs = [r["seconds"] for r in rs]
        rss = [r["rss_mb"] for r in rs]
        lines.append(f"| {backend} | {', '.join(f'{s:.1f}' for s in secs)} | {statistics.median(secs):.1f} | ≤ {target} s | {statistics.median(rss):.0f} (≤ 1024) |")
    lines += ["", "Command: `python bench/bench_import.py`", ""]
    out = ROOT / "bench" / "results" / "import.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
