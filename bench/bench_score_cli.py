"""Benchmark: `python -m reform_core score` and `export` end to end on a paper-scale SQLite
database (issues 3 and 7).

Builds the database once (simulator, seed 0, paper scale, 300 oracle adjudications per
model), then times whole CLI processes: `score` 5 times (target ≤ 4 s wall) and a full
`export` (every table as CSV/Parquet/JSON, instances, 2,000-replicate intervals, manifest)
3 times (target ≤ 15 s): wall clock, CPU (user+sys) and peak RSS (≤ 1 GB).

With ``--baseline COMMIT`` the code of that commit (extracted with ``git archive``; default
648d4ff, the code when issue 16 was filed and its "already holds: score 2.0 s, export 4.2 s"
line was measured) builds its own database from the same simulator seed and runs the same
commands in the same run, interleaved with this code's runs (new, old, new, old, …): the ratio
new / old per pair of runs, then the median, is the regression check of issue 16.
Results: bench/results/score_cli.md.

    python bench/bench_score_cli.py [--baseline COMMIT] [--runs 5] [--export-runs 3]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_import import old_tree  # noqa: E402  (the commit's tree, extracted)
from bench.machine import machine_line  # noqa: E402

# byte-code caches written and used (a machine may set PYTHONDONTWRITEBYTECODE, which would make every
# run compile every module of the tree again: a cost that grows with the code, not with the work)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], runs: int, cwd: Path = ROOT) -> tuple[list[float], list[float], list[float]]:
    """Wall, CPU (user+sys) and peak RSS (MB) of ``runs`` runs of ``cmd`` in a child process."""
    walls, cpus, rss = [], [], []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        _, status, ru = os.wait4(proc.pid, 0)  # this child's own usage
        walls.append(time.perf_counter() - t)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{cmd} failed: {proc.stderr.read().decode()[-2000:]}")
        cpus.append(ru.ru_utime + ru.ru_stime)
        rss.append(ru.ru_maxrss / 1024)
    return walls, cpus, rss


def build_db(code: Path, db: str) -> float:
    t = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "reform_core",
            "simulate",
            "--db",
            db,
            "--seed",
            "0",
            "--scale",
            "paper",
            "--adjudicate",
            "300",
            "--json",
        ],
        check=True,
        cwd=code,
        capture_output=True,
        env=ENV,
    )
    return time.perf_counter() - t


def interleaved(cmds: dict[str, tuple[list[str], Path]], runs: int) -> dict[str, tuple[list, list, list]]:
    """``runs`` rounds, each running every command once in turn (same load for all), after one
    untimed run of each (it writes the byte-code caches, as a checkout run before has them)."""
    got = {k: ([], [], []) for k in cmds}
    for cmd, cwd in cmds.values():
        timed(cmd, 1, cwd)
    for _ in range(runs):
        for k, (cmd, cwd) in cmds.items():
            w, c, r = timed(cmd, 1, cwd)
            for acc, v in zip(got[k], (w, c, r)):
                acc += v
    return got


def _row(label: str, vals: list[float], target: str = "") -> str:
    return f"| {label} | {', '.join(f'{v:.2f}' for v in vals)} | {statistics.median(vals):.2f} | {target} |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="648d4ff", help="commit to compare with in the same run ('' = none)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--export-runs", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="reform-bench-score-"))
    db = f"sqlite:///{tmp / 'paper.db'}"
    build = build_db(ROOT, db)
    load0 = os.getloadavg()[0]
    py = sys.executable
    score = {"new": ([py, "-m", "reform_core", "score", "--db", db, "--json"], ROOT)}
    export = {"new": ([py, "-m", "reform_core", "export", "--db", db, "--out", str(tmp / "export")], ROOT)}
    if args.baseline:
        old = old_tree(args.baseline, tmp)
        old_db = f"sqlite:///{tmp / 'paper-old.db'}"
        build_db(old, old_db)
        score["old"] = ([py, "-m", "reform_core", "score", "--db", old_db, "--json"], old)
        export["old"] = ([py, "-m", "reform_core", "export", "--db", old_db, "--out", str(tmp / "export-old")], old)
    s_got = interleaved(score, args.runs)
    e_got = interleaved(export, args.export_runs)
    load = os.getloadavg()[0]
    walls, cpus, rss = s_got["new"]
    ewalls, ecpus, erss = e_got["new"]
    lines = [
        "## `python -m reform_core score` and `export` end to end, paper scale, SQLite (issues 3, 7, 16)",
        "",
        machine_line(),
        "",
        f"Database: simulator seed 0, paper scale (150,000 instances, 10 models), 3,000 oracle adjudications; built in {build:.0f} s. "
        "No cluster plan: both `score` and `export` use the paper's stratified rules (what the older code computes too); "
        "this code adds the measurement and population intervals and the dataset hash to what it writes.",
        "",
        "`score --json`:",
        "",
        "| measure | runs | median | target |",
        "|---|---|---|---|",
        _row("wall (s)", walls, "≤ 4"),
        _row("CPU user+sys (s)", cpus),
        f"| peak RSS (MB) | | {max(rss):.0f} (max) | ≤ 1024 |",
        "",
        "Full `export` (every file + manifest, 2,000 bootstrap replicates):",
        "",
        "| measure | runs | median | target |",
        "|---|---|---|---|",
        _row("wall (s)", ewalls, "≤ 15"),
        _row("CPU user+sys (s)", ecpus),
        f"| peak RSS (MB) | | {max(erss):.0f} (max) | ≤ 1024 |",
        "",
    ]
    if args.baseline:
        ow, oc, _ = s_got["old"]
        eow, eoc, _ = e_got["old"]
        rs = [a / b for a, b in zip(walls, ow)]
        rc = [a / b for a, b in zip(cpus, oc)]
        ers = [a / b for a, b in zip(ewalls, eow)]
        erc = [a / b for a, b in zip(ecpus, eoc)]

        def slower(ratios: list[float]) -> str:
            # one-sided sign test: how likely this many slower pairs are if neither code is faster
            k, n = sum(r > 1.0 for r in ratios), len(ratios)
            p = sum(math.comb(n, j) for j in range(k, n + 1)) / 2**n
            return f"{k} of {n} (p = {p:.2f})"

        lines += [
            f'Same run, interleaved with the code of `{args.baseline}` (issue 16: "nothing in the already-holds line regresses"; '
            "ratio = this code / that code per pair of runs, then the median; ≤ 1.00 holds; *slower pairs*: pairs whose "
            "ratio exceeds 1, with the one-sided sign-test probability of at least that many if neither code were faster):",
            "",
            "| command | this code, wall (s, median) | old code, wall (s, median) | ratio wall (per pair) | median | slower pairs | "
            "ratio CPU (median) | holds (median ≤ 1.00) |",
            "|---|---:|---:|---|---:|---|---:|---|",
            f"| score | {statistics.median(walls):.2f} | {statistics.median(ow):.2f} | {', '.join(f'{r:.2f}' for r in rs)} | "
            f"{statistics.median(rs):.2f} | {slower(rs)} | {statistics.median(rc):.2f} | "
            f"{'yes' if statistics.median(rs) <= 1.0 else 'no'} |",
            f"| export | {statistics.median(ewalls):.2f} | {statistics.median(eow):.2f} | {', '.join(f'{r:.2f}' for r in ers)} | "
            f"{statistics.median(ers):.2f} | {slower(ers)} | {statistics.median(erc):.2f} | "
            f"{'yes' if statistics.median(ers) <= 1.0 else 'no'} |",
            "",
        ]
    lines += [
        f"Load average: {load0:.1f} at the start, {load:.1f} at the end (2 cores; wall time above CPU time is waiting for a core).",
        "",
        f"Command: `python bench/bench_score_cli.py{' --baseline ' + args.baseline if args.baseline else ''}`",
        "",
    ]
    out = ROOT / "bench" / "results" / "score_cli.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
