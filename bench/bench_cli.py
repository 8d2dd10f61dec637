"""CLI start-up (issue 16): ``plan-size``, ``--help`` and ``status`` against ``python -c "import
pandas"`` in the same run, each a fresh interpreter, runs interleaved.

Target: each command no slower than importing pandas alone (a command imports only what it
uses: ``plan-size`` and ``--help`` no numpy / pandas / scipy / SQLAlchemy; ``status`` only
SQLAlchemy). ``status`` reads the demo project and a paper-scale project (simulate seed 0, 150,000 instances,
300 oracle adjudications per model), built once into ``bench/out/paper.db`` and reused.

    flock /work/bench.lock nice -n 5 python bench/bench_cli.py [--runs 9]

Results: ``bench/results/cli.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.machine import machine_line  # noqa: E402

PAPER = ROOT / "bench" / "out" / "paper.db"
DEMO = ROOT / "bench" / "out" / "demo.db"


def demo_db() -> str:
    url = f"sqlite:///{DEMO}"
    if not DEMO.with_suffix(".done").exists():
        DEMO.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, "-m", "reform_core", "demo", "--db", url], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
        )
        DEMO.with_suffix(".done").write_text("ok\n")
    return url


def paper_db() -> str:
    url = f"sqlite:///{PAPER}"
    done = PAPER.with_suffix(".done")
    if not done.exists():
        PAPER.parent.mkdir(parents=True, exist_ok=True)
        PAPER.unlink(missing_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "reform_core",
                "simulate",
                "--db",
                url,
                "--seed",
                "0",
                "--scale",
                "paper",
                "--adjudicate",
                "300",
            ],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        done.write_text("ok\n")
    return url


def wall(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    url = paper_db()
    env = {**os.environ, "REFORM_DATABASE_URL": url}
    demo = demo_db()
    py = sys.executable
    cases = {
        'python -c "import pandas"': [py, "-c", "import pandas"],
        "plan-size --population 1308": [py, "-m", "reform_core", "plan-size", "--population", "1308"],
        "--help": [py, "-m", "reform_core", "--help"],
        "status (demo project)": [py, "-m", "reform_core", "status", "--db", demo],
        "status (paper-scale project)": [py, "-m", "reform_core", "status"],
    }
    for cmd in cases.values():  # warm the file cache
        wall(cmd, env)
    load0 = os.getloadavg()[0]
    times: dict[str, list[float]] = {k: [] for k in cases}
    ratios: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(a.runs):
        got = {k: wall(cmd, env) for k, cmd in cases.items()}
        for k, v in got.items():
            times[k].append(v)
            ratios[k].append(v / got['python -c "import pandas"'])
    load1 = os.getloadavg()[0]
    med = {k: statistics.median(v) for k, v in times.items()}
    lines = [
        "## CLI start-up (bench/bench_cli.py)",
        "",
        f"- {machine_line()} 1-min load average {load0:.1f} at the start, {load1:.1f} at the end (shared machine: "
        "compare the ratios, measured in the same round)",
        f"- {a.runs} interleaved rounds, each command a fresh interpreter (wall time of the process, output discarded); "
        "ratio = the command / `import pandas` of the same round, then the median",
        "- `status` reads the demo project (start-up cost) and a paper-scale SQLite project (150,000 instances, "
        "300,000 judgments, via REFORM_DATABASE_URL), where the disagreement count (a GROUP BY over every judgment) "
        "is part of the time",
        "",
        "| command | median wall (s) | min (s) | max (s) | / `import pandas` (median of rounds) | target ≤ 1.0 |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for k in cases:
        r = statistics.median(ratios[k])
        ok = "" if k.startswith("python") else ("yes" if r <= 1.0 else "no")
        lines.append(f"| `{k}` | {med[k]:.3f} | {min(times[k]):.3f} | {max(times[k]):.3f} | {r:.2f} | {ok} |")
    lines += ["", "Command: `flock /work/bench.lock nice -n 5 python bench/bench_cli.py`", ""]
    out = ROOT / "bench" / "results" / "cli.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
