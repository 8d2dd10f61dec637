"""Run every benchmark and collect their sections into bench/RESULTS.md.

    python bench/run_all.py            # all benchmarks (tens of minutes on 2 cores)
    python bench/run_all.py --only import scoring
    python bench/run_all.py --collect  # only rebuild RESULTS.md from bench/results/*.md

Each bench_<area>.py writes bench/results/<area>.md (machine, date, medians); this script
concatenates them, so RESULTS.md always shows the latest run of each benchmark.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def collect() -> Path:
    parts = [
        "# Benchmark results",
        "",
        "Each section is written by `bench/bench_<area>.py` (medians of several runs, with the machine and date "
        "of that run); `python bench/run_all.py` reruns them all and rebuilds this file. The machine is shared "
        "and noisy: compare ratios measured within one run.",
        "",
    ]
    for f in sorted((BENCH / "results").glob("*.md")):
        parts += [f.read_text(encoding="utf-8").strip(), ""]
    out = BENCH / "RESULTS.md"
    out.write_text("\n".join(parts), encoding="utf-8")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", help="areas to run (bench_<area>.py)")
    ap.add_argument("--collect", action="store_true")
    args = ap.parse_args()
    if not args.collect:
        scripts = sorted(BENCH.glob("bench_*.py"))
        if args.only:
            scripts = [s for s in scripts if s.stem.removeprefix("bench_") in args.only]
        for s in scripts:
            print(f"== {s.name}", flush=True)
            r = subprocess.run([sys.executable, str(s)], cwd=ROOT)
            if r.returncode != 0:
                print(f"!! {s.name} exited {r.returncode}", flush=True)
    print(collect())


if __name__ == "__main__":
    main()
