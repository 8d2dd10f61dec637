"""Benchmark of the judging backend against a loopback fake OpenAI server.

2,000 judge calls (responses, 3 constraints each) answered in 500 ms each at
concurrency 64: the ideal wall time is 2000 / 64 × 0.5 s = 15.6 s; the target is within
1.2× of it, with client CPU ≤ 5 ms per call (``time.process_time`` of this process,
which includes the SDK, parsing and the SQLite commits; the fake server runs in another
process). The same 2,000 items are then run through batch mode (write JSONL, upload,
create, poll, download, ingest). Medians of 3 runs; results go to bench/results/judges.md.

    cd /work/main && python bench/bench_judges.py [--calls 2000] [--runs 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.machine import cpu_model  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "integration"))

from fake_servers import seed_project  # noqa: E402

from reform_core.services.judging import judging as svc  # noqa: E402
from reform_core.services.platform.uow import get_engine  # noqa: E402

DELAY, CONCURRENCY = 0.5, 64


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/integration/fake_servers.py"), "--delay", str(DELAY)],
        stdout=subprocess.PIPE,
        text=True,
    )
    return proc, proc.stdout.readline().strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    proc, url = start_server()
    tmp = tempfile.mkdtemp()
    try:
        engine = get_engine(f"sqlite:///{tmp}/bench.db")
        t = time.perf_counter()
        seed_project(engine, responses=args.calls)
        print(f"seeded {args.calls} responses in {time.perf_counter() - t:.1f} s", flush=True)
        kw = dict(model="gpt-4o-mini", base_url=url + "/v1", api_key="sk-bench")
        walls, cpus = [], []
        for run in range(args.runs):
            c0, w0 = time.process_time(), time.perf_counter()
            out = svc.run_judge(engine, provider="openai", name=f"online{run}", concurrency=CONCURRENCY, **kw)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            assert out["calls"] == args.calls and out["errors"] == 0, out
            walls.append(wall)
            cpus.append(cpu / out["calls"] * 1000)
            print(f"online run {run}: {wall:.2f} s wall, {cpus[-1]:.2f} ms CPU/call", flush=True)
        bwalls, bcpus = [], []
        for run in range(args.runs):
            c0, w0 = time.process_time(), time.perf_counter()
            sub = svc.submit_batch(engine, provider="openai", name=f"batch{run}", **kw)
            written = 0
            while True:
                res = svc.poll_batches(
                    engine, name=f"batch{run}", base_url=url + "/v1", api_key="sk-bench", ingest=True
                )
                written += res["written"]
                if all(b["done"] for b in res["batches"]):
                    break
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            assert sub["items"] == args.calls and written == 3 * args.calls, (sub, written)
            bwalls.append(wall)
            bcpus.append(cpu / args.calls * 1000)
            print(f"batch run {run}: {wall:.2f} s wall, {bcpus[-1]:.2f} ms CPU/item", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
    load = os.getloadavg()
    ideal = args.calls / CONCURRENCY * DELAY
    med_wall, med_cpu = statistics.median(walls), statistics.median(cpus)
    section = f"""## Judging backend (`bench/bench_judges.py`)

- Date: {dt.datetime.now().strftime("%Y-%m-%d %H:%M")}
- Machine: {os.cpu_count()} CPUs (`nproc` {os.cpu_count()}), {cpu_model()}; Python {platform.python_version()};
  shared with other work, so expect noise: load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}
  (1 / 5 / 15 min) on {os.cpu_count()} CPUs. Fake OpenAI server in a separate process
  (`tests/integration/fake_servers.py`, 500 ms per answer); SQLite file database.
- Workload: {args.calls} judge calls (one per response, 3 constraints each → {3 * args.calls} judgments),
  real `openai` SDK, concurrency {CONCURRENCY}, commits in batches of up to 32 results.

| mode | median wall (s) | runs (s) | ideal (s) | ratio to ideal | median client CPU per call (ms) |
|---|---|---|---|---|---|
| online | {med_wall:.2f} | {", ".join(f"{w:.2f}" for w in walls)} | {ideal:.2f} | {med_wall / ideal:.2f} (target ≤ 1.20) | {med_cpu:.2f} (target ≤ 5) |
| batch (write, upload, create, poll ×2, download, ingest) | {statistics.median(bwalls):.2f} | {", ".join(f"{w:.2f}" for w in bwalls)} | — | — | {statistics.median(bcpus):.2f} |
"""
    out_path = ROOT / "bench" / "results" / "judges.md"
    out_path.write_text(section)
    print(section)


if __name__ == "__main__":
    main()
