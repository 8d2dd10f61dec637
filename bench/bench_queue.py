"""Benchmark of the adjudication queue and live calibration (issue 5).

* next-item claim latency with 8 concurrent annotator processes (spawn) on a queue of
  20,000 open tasks, on SQLite and on PostgreSQL (a fresh database) — target p95 ≤ 20 ms;
* loading the INSTANCES frame of a paper-scale project (150,000 instances) — target ≤ 1.5 s;
* rescoring after one new adjudication at paper scale (``LiveScores.apply``) — target ≤ 300 ms.

Each annotator loops claim → decide with no think time (a worst case: real annotators spend
seconds per item). Every figure is the median over 3 runs. Run:

    cd /work/main && python bench/bench_queue.py

PostgreSQL comes from ``REFORM_BENCH_POSTGRES_URL`` (else ``REFORM_TEST_POSTGRES_URL``, else
``postgresql://postgres@127.0.0.1:5432/postgres``); it is skipped when unreachable. Results go
to ``bench/results/queue.md``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_WORKERS = 8
N_TASKS = 20_000
CLAIMS_PER_WORKER = 100
RUNS = 3


def _worker(url, plan_id, user_id, username, start, out) -> None:
    from reform_core.services import adjudication as S
    from reform_core.services.auth import Principal
    from reform_core.services.uow import get_engine

    eng = get_engine(url, migrate=False)
    me = Principal(user_id, username, "annotator")
    S.claim_next(eng, me, plan_id)  # warm the connection pool; this claim is decided first below
    start.wait()
    claims, decides = [], []
    for k in range(CLAIMS_PER_WORKER):
        t0 = time.perf_counter()
        item = S.claim_next(eng, me, plan_id)
        t1 = time.perf_counter()
        if item is None:
            break
        S.decide(eng, me, item.task_id, "A" if k % 2 else "B", seconds=1.0)
        t2 = time.perf_counter()
        claims.append(t1 - t0)
        decides.append(t2 - t1)
    out.put((claims, decides))


def _setup(url: str) -> tuple[int, list[tuple[int, str]]]:
    """Paper-scale project + a plan of exactly N_TASKS open tasks + 8 annotators."""
    from db.repo.adjudication import ensure_user, write_tx
    from reform_core.services import adjudication as S
    from reform_core.services.auth import Principal
    from reform_core.services.data import simulate_into
    from reform_core.services.uow import get_engine

    eng = get_engine(url)
    simulate_into(eng, seed=0, scale="paper")
    with write_tx(eng) as conn:
        lead = Principal(ensure_user(conn, username="lead", role="lead"), "lead", "lead")
        users = [(ensure_user(conn, username=f"ann{k}", role="annotator"), f"ann{k}") for k in range(N_WORKERS)]
    # margin 0.001: n = N, i.e. every disagreement; agreements top the queue up to N_TASKS
    preview = S.preview_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", margin=0.001)
    audit = N_TASKS - int(preview["planned"].sum())
    made = S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", margin=0.001, audit=audit, seed=1)
    assert made.tasks == N_TASKS, made.tasks
    return made.plan_id, users


def _queue_run(url: str, plan_id: int, users) -> dict:
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, plan_id, uid, name, start, out)) for uid, name in users]
    for p in procs:
        p.start()
    time.sleep(2.0)
    while not all(p.is_alive() for p in procs):
        time.sleep(0.1)
    time.sleep(8.0)  # let every worker finish importing and claim once
    start.set()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    claims = np.array([c for r in results for c in r[0]]) * 1000
    decides = np.array([d for r in results for d in r[1]]) * 1000
    return {"claims": len(claims), "p50": float(np.percentile(claims, 50)), "p95": float(np.percentile(claims, 95)),
            "decide_p95": float(np.percentile(decides, 95))}


def bench_queue(url: str, label: str) -> dict:
    plan_id, users = _setup(url)
    runs = []
    for _ in range(RUNS):
        r = _queue_run(url, plan_id, users)
        print(f"  {label}: {r['claims']} claims, p50 {r['p50']:.1f} ms, p95 {r['p95']:.1f} ms, "
              f"decide p95 {r['decide_p95']:.1f} ms", flush=True)
        runs.append(r)
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def bench_live(url: str) -> dict:
    from reform_core.services import adjudication as S
    from reform_core.services.instances import load_instances
    from reform_core.services.uow import get_engine

    eng = get_engine(url)
    load = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        inst = load_instances(eng, "judge_a", "judge_b")
        load.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    live = S.LiveScores.from_engine(eng, "judge_a", "judge_b")
    build = time.perf_counter() - t0
    dis = inst.loc[inst["label_judge_a"] != inst["label_judge_b"], "iid"].to_numpy()
    rng = np.random.default_rng(0)
    apply = []
    for iid in rng.choice(dis, size=max(RUNS, 20), replace=False):
        t0 = time.perf_counter()
        live.apply({int(iid): float(rng.integers(0, 2))})
        apply.append(time.perf_counter() - t0)
    return {"instances": len(inst), "load_s": statistics.median(load), "build_s": build,
            "apply_ms": 1000 * statistics.median(apply), "apply_max_ms": 1000 * max(apply), "n_apply": len(apply)}


def _pg_database(admin_url: str):
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(admin_url.replace("postgresql+psycopg://", "postgresql://"))
    conninfo = u.set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"reform_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = u.set(drivername="postgresql+psycopg", database=name).render_as_string(hide_password=False)

    def drop():
        from reform_core.services.uow import dispose_engines

        dispose_engines()
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return url, drop


def _machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    load = os.getloadavg()[0]
    return f"{nproc} cores ({model}), load average {load:.1f} at the start, Python {platform.python_version()}"


def main() -> None:
    """``--only-postgres`` skips SQLite and live calibration (quick PostgreSQL check, no results file)."""
    if "--only-postgres" in sys.argv:
        pg_url, drop = _pg_database(os.environ.get("REFORM_BENCH_POSTGRES_URL") or os.environ.get(
            "REFORM_TEST_POSTGRES_URL") or "postgresql://postgres@127.0.0.1:5432/postgres")
        try:
            print(bench_queue(pg_url, "PostgreSQL"))
        finally:
            drop()
        return
    machine = _machine()
    print(machine, flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        print("SQLite: building a paper-scale project and a 20,000-task plan…", flush=True)
        rows.append(("SQLite", bench_queue(url, "SQLite")))
        print("SQLite: live calibration…", flush=True)
        live = bench_live(url)
        print(f"  {live}", flush=True)
    pg_admin = (os.environ.get("REFORM_BENCH_POSTGRES_URL") or os.environ.get("REFORM_TEST_POSTGRES_URL")
                or "postgresql://postgres@127.0.0.1:5432/postgres")
    try:
        pg_url, drop = _pg_database(pg_admin)
    except Exception as exc:  # noqa: BLE001 - PostgreSQL is optional for the bench
        print(f"PostgreSQL skipped: {exc}")
    else:
        try:
            print("PostgreSQL: building a paper-scale project and a 20,000-task plan…", flush=True)
            rows.append(("PostgreSQL", bench_queue(pg_url, "PostgreSQL")))
        finally:
            drop()

    lines = [
        "## Adjudication queue and live calibration (bench/bench_queue.py)",
        "",
        f"Date: {date.today().isoformat()}. Machine: {machine}. Shared with other jobs: expect noise; "
        f"every figure is the median of {RUNS} runs.",
        "",
        f"Claim latency: {N_WORKERS} annotator processes (spawn) each loop claim → decide "
        f"{CLAIMS_PER_WORKER} times with no think time, on a plan of {N_TASKS:,} open tasks in a paper-scale project.",
        "",
        "| database | claims per run | claim p50 (ms) | claim p95 (ms) | target p95 | decide p95 (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in rows:
        lines.append(f"| {name} | {r['claims']:.0f} | {r['p50']:.1f} | {r['p95']:.1f} | ≤ 20 | {r['decide_p95']:.1f} |")
    lines += [
        "",
        f"Live calibration on SQLite, paper scale ({live['instances']:,} instances):",
        "",
        "| step | time | target |",
        "|---|---|---|",
        f"| load INSTANCES (`load_instances`) | {live['load_s']:.2f} s | ≤ 1.5 s |",
        f"| build `LiveScores` (load + calibrate + per-model unit index) | {live['build_s']:.2f} s | — |",
        f"| rescoring after one new adjudication (`LiveScores.apply`, median of {live['n_apply']}) | "
        f"{live['apply_ms']:.1f} ms (max {live['apply_max_ms']:.1f} ms) | ≤ 300 ms |",
        "",
    ]
    out = ROOT / "bench" / "results" / "queue.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
