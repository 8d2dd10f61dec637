"""Benchmark of the adjudication queue and live calibration (issue 5).

* next-item claim latency — from the ``claim_next`` call to the ``Item`` ready to show —
  with 8 concurrent annotator processes (spawn) on a queue of 20,000 open tasks, on SQLite
  and on PostgreSQL (a fresh database) — target p95 ≤ 20 ms. Two workloads:
  - *no think time*: each annotator loops claim → decide back to back (a stress test:
    8 busy processes + the database share the machine's cores);
  - *think time*: the annotator reads the item for U(0.5, 1.5) s before deciding (as in
    ``bench/bench_load.py``; real annotators spend seconds per item).
  Claim and decide are timed separately; p50 / p95 / p99 per run, 1-minute load average at
  the end of each run;
* one annotator alone: claim wall time, client CPU time and (PostgreSQL) round trips per claim;
* loading the INSTANCES frame of a paper-scale project (150,000 instances) — target ≤ 1.5 s;
* rescoring after one new adjudication at paper scale (``LiveScores.apply``) — target ≤ 300 ms.

Every figure is the median over 3 runs. Run:

    cd /work/main && python bench/bench_queue.py

PostgreSQL comes from ``REFORM_BENCH_POSTGRES_URL`` (else ``REFORM_TEST_POSTGRES_URL``, else
``postgresql://postgres@127.0.0.1:5432/postgres``); it is skipped when unreachable. Results go
to ``bench/results/queue.md``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import platform
import random
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
RUNS = 3
# (label, mean think time in s, claims per annotator per run)
WORKLOADS = [("no think time", 0.0, 100), ("think U(0.5, 1.5) s", 1.0, 30)]


def _worker(url, plan_id, user_id, username, think, n_claims, ready, start, out) -> None:
    from reform_core.services.accounts.auth import Principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.platform.uow import get_engine

    eng = get_engine(url, migrate=False)
    me = Principal(user_id, username, "annotator")
    rng = random.Random(user_id)
    item = S.claim_next(eng, me, plan_id)  # warm the pool and the statement caches (not timed)
    S.decide(eng, me, item.task_id, "A", seconds=1.0)
    ready.put(username)
    start.wait()
    claims, decides = [], []
    for k in range(n_claims):
        t0 = time.perf_counter()
        item = S.claim_next(eng, me, plan_id)
        claims.append(time.perf_counter() - t0)
        if item is None:
            break
        if think:
            time.sleep(rng.uniform(0.5 * think, 1.5 * think))
        t0 = time.perf_counter()
        S.decide(eng, me, item.task_id, "A" if k % 2 else "B", seconds=1.0)
        decides.append(time.perf_counter() - t0)
    out.put((claims, decides))


def _setup(url: str) -> tuple[int, list[tuple[int, str]]]:
    """Paper-scale project + a plan of exactly N_TASKS open tasks + 8 annotators."""
    from db.repo.adjudication import ensure_user, write_tx
    from reform_core.services.accounts.auth import Principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.data.simulated import simulate_into
    from reform_core.services.platform.uow import get_engine

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
    if eng.dialect.name == "postgresql":
        # settle the fresh bulk load first (as a deployment has long before annotators arrive),
        # so autovacuum does not compete with the annotators for the cores during the runs
        with eng.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
    return made.plan_id, users


def _queue_run(url: str, plan_id: int, users, think: float, n_claims: int) -> dict:
    ctx = mp.get_context("spawn")
    ready, start, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(url, plan_id, uid, name, think, n_claims, ready, start, out))
        for uid, name in users
    ]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=300)
    time.sleep(1.0)  # let the start-up burst leave the load average a little
    start.set()
    results = [out.get(timeout=900) for _ in procs]
    load = os.getloadavg()[0]
    for p in procs:
        p.join()
    claims = np.array([c for r in results for c in r[0]]) * 1000
    decides = np.array([d for r in results for d in r[1]]) * 1000
    c50, c95, c99 = np.percentile(claims, [50, 95, 99])
    return {
        "claims": len(claims),
        "p50": float(c50),
        "p95": float(c95),
        "p99": float(c99),
        "decide_p50": float(np.percentile(decides, 50)),
        "decide_p95": float(np.percentile(decides, 95)),
        "load": load,
    }


def _round_trips(eng, claim) -> int:
    """Client → server round trips of ``claim()`` on PostgreSQL (libpq trace: simple-protocol
    ``Query`` and extended-protocol ``Sync`` messages, each answered by ReadyForQuery)."""
    raw = eng.raw_connection()
    pgconn = raw.driver_connection.pgconn  # the one pooled connection of this single-threaded process
    raw.close()
    with tempfile.TemporaryFile("w+") as f:
        pgconn.trace(f.fileno())
        try:
            claim()
        finally:
            pgconn.untrace()
        f.seek(0)
        fields = [line.split("\t") for line in f.read().splitlines()]
    return sum(1 for x in fields if len(x) > 3 and x[1] == "F" and x[3].split()[:1] in (["Query"], ["Sync"]))


def bench_alone(url: str, plan_id: int, user: tuple[int, str], n: int = 50) -> dict:
    """One annotator alone: claim wall time vs this process's CPU time, and round trips."""
    from db.engine import make_engine
    from reform_core.services.accounts.auth import Principal
    from reform_core.services.adjudication import adjudication as S

    eng = make_engine(url)  # a pool of its own: one connection, the one traced below
    me = Principal(user[0], user[1], "annotator")
    wall, cpu = [], []
    for k in range(n + 5):
        t0, c0 = time.perf_counter(), time.process_time()
        item = S.claim_next(eng, me, plan_id)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        S.decide(eng, me, item.task_id, "A", seconds=1.0)
    out = {"wall_ms": 1000 * statistics.median(wall[5:]), "cpu_ms": 1000 * statistics.median(cpu[5:]), "trips": None}
    if eng.dialect.name == "postgresql":
        held = []
        out["trips"] = _round_trips(eng, lambda: held.append(S.claim_next(eng, me, plan_id)))
        S.decide(eng, me, held[0].task_id, "A", seconds=1.0)
    eng.dispose()
    return out


def bench_queue(url: str, label: str) -> dict:
    plan_id, users = _setup(url)
    alone = bench_alone(url, plan_id, users[0])
    print(f"  {label}, one annotator: {alone}", flush=True)
    out = {"alone": alone}
    for name, think, n_claims in WORKLOADS:
        runs = []
        for _ in range(RUNS):
            r = _queue_run(url, plan_id, users, think, n_claims)
            print(
                f"  {label}, {name}: {r['claims']} claims, p50 {r['p50']:.1f} ms, p95 {r['p95']:.1f} ms, "
                f"p99 {r['p99']:.1f} ms, decide p95 {r['decide_p95']:.1f} ms, load {r['load']:.1f}",
                flush=True,
            )
            runs.append(r)
        out[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    return out


def bench_live(url: str) -> dict:
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.data.instances import load_instances
    from reform_core.services.platform.uow import get_engine

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
    return {
        "instances": len(inst),
        "load_s": statistics.median(load),
        "build_s": build,
        "apply_ms": 1000 * statistics.median(apply),
        "apply_max_ms": 1000 * max(apply),
        "n_apply": len(apply),
    }


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
        from reform_core.services.platform.uow import dispose_engines

        dispose_engines()
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return url, drop


def _machine() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    load = os.getloadavg()[0]
    return f"{nproc} cores ({model}), load average {load:.1f} at the start, Python {platform.python_version()}"


def main() -> None:
    """``--only-postgres`` skips SQLite and live calibration (quick PostgreSQL check, no results file)."""
    if "--only-postgres" in sys.argv:
        pg_url, drop = _pg_database(
            os.environ.get("REFORM_BENCH_POSTGRES_URL")
            or os.environ.get("REFORM_TEST_POSTGRES_URL")
            or "postgresql://postgres@127.0.0.1:5432/postgres"
        )
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
    pg_admin = (
        os.environ.get("REFORM_BENCH_POSTGRES_URL")
        or os.environ.get("REFORM_TEST_POSTGRES_URL")
        or "postgresql://postgres@127.0.0.1:5432/postgres"
    )
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
        f"Claim latency = from the `claim_next` call to the item ready to show (claim + item content). "
        f"{N_WORKERS} annotator processes (spawn) on a plan of {N_TASKS:,} open tasks in a paper-scale project "
        "(each run drains a few hundred of them). *No think time*: claim → decide back to back (a stress test: "
        f"{N_WORKERS} busy processes + the database on the machine's cores). *Think time*: the annotator reads the "
        "item U(0.5, 1.5) s before deciding. Load = 1-minute load average at the end of a run.",
        "",
        "| database | workload | claims per run | claim p50 (ms) | claim p95 (ms) | claim p99 (ms) | target p95 "
        "| decide p50 (ms) | decide p95 (ms) | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows:
        for w, _, _ in WORKLOADS:
            x = r[w]
            lines.append(
                f"| {name} | {w} | {x['claims']:.0f} | {x['p50']:.1f} | {x['p95']:.1f} | {x['p99']:.1f} "
                f"| ≤ 20 | {x['decide_p50']:.1f} | {x['decide_p95']:.1f} | {x['load']:.1f} |"
            )
    lines += [
        "",
        "One annotator alone (median of 50 claims): wall time, this process's CPU time, and round trips "
        "to the server per claim (PostgreSQL, libpq trace):",
        "",
        "| database | claim wall (ms) | client CPU (ms) | round trips |",
        "|---|---|---|---|",
    ]
    for name, r in rows:
        a = r["alone"]
        lines.append(f"| {name} | {a['wall_ms']:.2f} | {a['cpu_ms']:.2f} | {a['trips'] if a['trips'] else '—'} |")
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
