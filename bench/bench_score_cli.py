"""Benchmark: `python -m reform_core score` and `export` end to end on a paper-scale SQLite
database (issues 3 and 7).

Builds the database once (simulator, seed 0, paper scale, 300 oracle adjudications per
model), then times whole CLI processes: `score` 5 times (target ≤ 4 s wall) and a full
`export` (every table as CSV/Parquet/JSON, instances, 2,000-replicate intervals, manifest)
3 times (target ≤ 15 s): wall clock, CPU (user+sys) and peak RSS (≤ 1 GB).
Results: bench/results/score_cli.md.

    python bench/bench_score_cli.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import machine_line  # noqa: E402


def timed(cmd: list[str], runs: int) -> tuple[list[float], list[float], list[float]]:
    """Wall, CPU (user+sys) and peak RSS (MB) of ``runs`` runs of ``cmd`` in a child process."""
    walls, cpus, rss = [], [], []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(proc.pid, 0)  # this child's own usage
        walls.append(time.perf_counter() - t)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{cmd} failed: {proc.stderr.read().decode()[-2000:]}")
        cpus.append(ru.ru_utime + ru.ru_stime)
        rss.append(ru.ru_maxrss / 1024)
    return walls, cpus, rss


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="reform-bench-score-"))
    db = f"sqlite:///{tmp / 'paper.db'}"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "reform_core", "simulate", "--db", db, "--seed", "0", "--scale", "paper",
                    "--adjudicate", "300", "--json"], check=True, cwd=ROOT, capture_output=True)
    build = time.perf_counter() - t
    walls, cpus, rss = timed([sys.executable, "-m", "reform_core", "score", "--db", db, "--json"], 5)
    ewalls, ecpus, erss = timed([sys.executable, "-m", "reform_core", "export", "--db", db, "--out", str(tmp / "export")], 3)
    load = os.getloadavg()[0]
    lines = [
        "## `python -m reform_core score` and `export` end to end, paper scale, SQLite (issues 3, 7)",
        "",
        machine_line(),
        "",
        f"Database: simulator seed 0, paper scale (150,000 instances, 10 models), 3,000 oracle adjudications; built in {build:.0f} s.",
        "",
        "| measure | runs | median | target |",
        "|---|---|---|---|",
        f"| wall (s) | {', '.join(f'{w:.2f}' for w in walls)} | {statistics.median(walls):.2f} | ≤ 4 |",
        f"| CPU user+sys (s) | {', '.join(f'{c:.2f}' for c in cpus)} | {statistics.median(cpus):.2f} | |",
        f"| peak RSS (MB) | | {max(rss):.0f} (max) | ≤ 1024 |",
        "",
        "Full `export` (every file + manifest, 2,000 bootstrap replicates):",
        "",
        "| measure | runs | median | target |",
        "|---|---|---|---|",
        f"| wall (s) | {', '.join(f'{w:.2f}' for w in ewalls)} | {statistics.median(ewalls):.2f} | ≤ 15 |",
        f"| CPU user+sys (s) | {', '.join(f'{c:.2f}' for c in ecpus)} | {statistics.median(ecpus):.2f} | |",
        f"| peak RSS (MB) | | {max(erss):.0f} (max) | ≤ 1024 |",
        "",
        f"Load average at the end: {load:.1f} (2 cores; wall time above CPU time is waiting for a core).",
        "",
        "Command: `python bench/bench_score_cli.py`",
        "",
    ]
    out = ROOT / "bench" / "results" / "score_cli.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
