"""Benchmark: import a bundle on SQLite and PostgreSQL (issues 2 and 16).

Writes a paper-scale bundle (5,000 instructions, 15,000 constraints, 59,100 responses,
~91,000 baseline annotations, 300,000 judgments from two judges) from the simulator, then
imports it into a fresh database 3 times per backend (interleaved), each in its own process,
timing the import and reading the child's peak RSS. Then the same at 4× and 10× the paper's
size (questions and instructions × k; 10× = 1,500,000 instances, 3,000,000 judgments) on
SQLite, once each: RAM per instance (peak RSS of the importing process / instances) and time
per instance across sizes (linear time: the exponent of time against size stays ≈ 1).
With ``--old COMMIT`` the importer of that commit imports the paper-scale bundle too, in the
same run, for a before/after comparison. Results: bench/results/import.md.

    flock /work/bench.lock nice -n 5 python bench/bench_import.py [--runs 3] [--scales 1 4 10] [--old COMMIT]
        [--pg postgresql://postgres@127.0.0.1:5432/postgres]
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
sys.path.insert(0, {code_root!r})
from reform_core.services.platform.uow import get_engine
from reform_core.services.data.importer import import_bundle
eng = get_engine({url!r})
t = time.perf_counter()
counts = import_bundle(eng, {bundle!r})
dt = time.perf_counter() - t
print(json.dumps({{"seconds": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "counts": counts}}))
"""


def cached_bundle(mult: int) -> tuple[Path, dict]:
    """The bundle of size ``mult`` under bench/out (written once, then reused)."""
    out = ROOT / "bench" / "out" / f"bundle-{mult}x"
    done = out.with_name(out.name + ".sizes.json")
    if not done.exists():
        import shutil

        shutil.rmtree(out, ignore_errors=True)
        sizes = write_bundle(out, mult)
        done.write_text(json.dumps(sizes))
    return out, json.loads(done.read_text())


def write_bundle(out: Path, mult: int = 1) -> dict:
    from reform_core.services.data.simulated import simulation_frames
    from reform_core.simulate import simulate

    frames = simulation_frames(simulate(seed=0, scale="paper", n_questions=910 * mult, n_instructions=5000 * mult))
    out.mkdir(parents=True, exist_ok=True)
    (out / "bundle.json").write_text(
        json.dumps({"format": "reform-bundle", "version": 1, "name": "paper-scale", "catalog": "reformbench"})
    )
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


def run_child(url: str, bundle: Path, code_root: Path = ROOT) -> dict:
    code = CHILD.format(code_root=str(code_root), url=url, bundle=str(bundle))
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


def old_tree(commit: str, tmp: Path) -> Path:
    """The repository at ``commit``, extracted (for a before/after run; bench_score_cli uses it too)."""
    out = tmp / f"old-{commit[:10]}"
    out.mkdir()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def main() -> None:
    import os
    import shutil

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scales", type=int, nargs="*", default=[1, 4, 10])
    ap.add_argument("--old", help="also import the paper-scale bundle with the importer of this commit")
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="reform-bench-import-"))
    load0 = os.getloadavg()[0]
    t = time.perf_counter()
    bundle, sizes = cached_bundle(1)
    print(f"bundle ready in {time.perf_counter() - t:.1f}s: {sizes}")
    instances = {1: sizes["judgments.jsonl"] // 2}
    results = {"sqlite": [], "postgresql": [], "old": []}
    old = old_tree(args.old, tmp) if args.old else None
    for i in range(args.runs):
        url = f"sqlite:///{tmp / f'run{i}.db'}"
        results["sqlite"].append(run_child(url, bundle))
        print("sqlite", i, results["sqlite"][-1]["seconds"], flush=True)
        if args.pg:
            name, url = pg_database(args.pg)
            try:
                results["postgresql"].append(run_child(url, bundle))
                print("postgresql", i, results["postgresql"][-1]["seconds"], flush=True)
            finally:
                drop_pg(args.pg, name)
        if old is not None and i == 0:
            results["old"].append(run_child(f"sqlite:///{tmp / 'old.db'}", bundle, old))
            print("old sqlite", results["old"][-1]["seconds"], flush=True)
    scaled = {
        1: {
            "seconds": statistics.median(r["seconds"] for r in results["sqlite"]),
            "rss_mb": statistics.median(r["rss_mb"] for r in results["sqlite"]),
        }
    }
    for mult in [m for m in args.scales if m != 1]:
        for f in tmp.glob("*.db*"):
            f.unlink()
        bundle, sz = cached_bundle(mult)
        instances[mult] = sz["judgments.jsonl"] // 2
        scaled[mult] = run_child(f"sqlite:///{tmp / f'x{mult}.db'}", bundle)
        print(f"sqlite {mult}x", scaled[mult]["seconds"], scaled[mult]["rss_mb"], flush=True)
    load1 = os.getloadavg()[0]
    shutil.rmtree(tmp, ignore_errors=True)
    kb = {m: scaled[m]["rss_mb"] * 1024 / instances[m] for m in scaled}
    lines = [
        "## Import of a bundle: paper scale on both backends, 4× and 10× on SQLite (issues 2, 16)",
        "",
        f"{machine_line()} 1-min load average {load0:.1f} at the start, {load1:.1f} at the end (shared machine).",
        "",
        f"Bundle: {sizes['instructions.jsonl']:,} instructions (3 constraints each), "
        f"{sizes['responses.jsonl']:,} responses, {sizes['baseline_features.jsonl']:,} baseline annotations, "
        f"{sizes['judgments.jsonl']:,} judgments (2 judges). Each run imports into a fresh database in a new process "
        "(read and validate every JSONL record one at a time into column frames, check every reference, write in "
        "batches in one transaction; PostgreSQL: COPY). Paper scale: backends interleaved.",
        "",
        "| backend | runs (s) | median (s) | target | peak RSS median (MB) | RAM per instance (KB) |",
        "|---|---|---|---|---|---|",
    ]
    for backend, target in (("sqlite", 20), ("postgresql", 30)):
        rs = results[backend]
        if not rs:
            continue
        secs = [r["seconds"] for r in rs]
        rss = statistics.median(r["rss_mb"] for r in rs)
        lines.append(
            f"| {backend} | {', '.join(f'{s:.1f}' for s in secs)} | {statistics.median(secs):.1f} | ≤ {target} s | "
            f"{rss:.0f} (≤ 1024) | {rss * 1024 / instances[1]:.2f} |"
        )
    if results["old"]:
        r = results["old"][0]
        lines.append(
            f"| sqlite, importer of {args.old[:10]} (before issue 16), same run | {r['seconds']:.1f} | — | — | "
            f"{r['rss_mb']:.0f} | {r['rss_mb'] * 1024 / instances[1]:.2f} |"
        )
    if results["postgresql"]:
        ratios = [p["seconds"] / q["seconds"] for p, q in zip(results["postgresql"], results["sqlite"])]
        med = statistics.median(ratios)
        lines += [
            "",
            f"PostgreSQL / SQLite, per run then the median: {', '.join(f'{x:.2f}' for x in ratios)} → "
            f"**{med:.2f} ×** (target ≤ 1.2: {'yes' if med <= 1.2 else 'no'}).",
        ]
    if len(scaled) > 1:
        import math

        lines += [
            "",
            "SQLite by size (4× and 10×: one run each):",
            "",
            "| size | instances | import (s) | µs per instance | peak RSS (MB) | RAM per instance (KB, target ≤ 2.5) |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for m in sorted(scaled):
            r = scaled[m]
            lines.append(
                f"| {m}× | {instances[m]:,} | {r['seconds']:.1f} | {1e6 * r['seconds'] / instances[m]:.0f} | "
                f"{r['rss_mb']:.0f} | {kb[m]:.2f} ({'yes' if kb[m] <= 2.5 else 'no'}) |"
            )
        ms = sorted(scaled)
        exps = [
            f"{a}×→{b}×: {math.log(scaled[b]['seconds'] / scaled[a]['seconds']) / math.log(instances[b] / instances[a]):.2f}"
            for a, b in zip(ms, ms[1:])
        ]
        lines += ["", f"Exponent of import time against size (1 = linear): {', '.join(exps)}."]
    lines += [
        "",
        f"Command: `flock /work/bench.lock nice -n 5 python bench/bench_import.py --scales "
        f"{' '.join(map(str, args.scales))}{' --old ' + args.old[:10] if args.old else ''}`",
        "",
    ]
    out = ROOT / "bench" / "results" / "import.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
