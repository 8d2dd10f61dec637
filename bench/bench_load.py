"""Load: 16 simulated annotators drain the adjudication queue (issue 9).

Each annotator is its own OS process with its own engine (as separate app processes
would be), looping claim → think → decide until the time is up. A few "ghost"
annotators claim an item under a short lease and vanish (a closed browser tab); their
items must come back to the queue and be decided by others. Afterwards the database is
checked against what the workers were told: zero duplicate decisions, zero lost
decisions (every acknowledged decision is stored, nothing unacknowledged is), task
counters consistent, zero errors surfaced to a worker (e.g. "database is locked").
Latency percentiles of ``claim_next`` and ``decide`` are measured in the workers.

    python bench/bench_load.py [--seconds 300] [--workers 16] [--scale paper]
                               [--pg postgresql://postgres@127.0.0.1:5432/postgres]

Results: bench/results/load.md. Loopback PostgreSQL only; every run is time-bounded.
The CI form (shorter, small project) is tests/integration/test_load_queue.py.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

GHOSTS = 4
GHOST_LEASE_S = 3


def _worker(url, plan_id, user_id, username, seconds, think, seed, start, out) -> None:
    from reform_core.services.accounts.auth import Principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.platform.uow import get_engine

    eng = get_engine(url, migrate=False)
    me = Principal(user_id, username, "annotator")
    rng = random.Random(seed)
    claims, saves, decided, refused, errors = [], [], [], [], []
    start.wait()
    stop = time.monotonic() + seconds
    try:
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            item = S.claim_next(eng, me, plan_id, lease_seconds=600)
            claims.append(time.perf_counter() - t0)
            if item is None:
                time.sleep(0.1)  # the rest is held by others, or nothing is left
                continue
            time.sleep(rng.uniform(*think))
            choice = rng.choice(["A", "A", "B"])
            t0 = time.perf_counter()
            try:
                d = S.decide(eng, me, item.task_id, choice, seconds=think[1])
                saves.append(time.perf_counter() - t0)
                decided.append((item.task_id, d.adjudication_id))
            except S.AdjudicationRefused as exc:
                refused.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, never hidden
        errors.append(f"{type(exc).__name__}: {exc}")
    eng.dispose()
    out.put(
        {"user": username, "claims": claims, "saves": saves, "decided": decided, "refused": refused, "errors": errors}
    )


def _ghost(url, plan_id, users, start, out) -> None:
    from reform_core.services.accounts.auth import Principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.platform.uow import get_engine

    eng = get_engine(url, migrate=False)
    start.wait()
    held = []
    for uid, name in users:
        item = S.claim_next(eng, Principal(uid, name, "annotator"), plan_id, lease_seconds=GHOST_LEASE_S)
        if item is not None:
            held.append(item.task_id)
    eng.dispose()
    out.put({"ghost_tasks": held})


def prepare(url: str, *, scale: str, workers: int, seed: int = 7) -> dict:
    """Simulated project + one plan (10 % double adjudication) + annotator accounts."""
    from db.repo.adjudication import ensure_user, write_tx
    from reform_core.services.accounts.auth import Principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.data.simulated import simulate_into
    from reform_core.services.platform.uow import dispose_engines, get_engine

    eng = get_engine(url)
    simulate_into(eng, seed=seed, scale=scale)
    with write_tx(eng) as conn:
        lead = Principal(ensure_user(conn, username="lead", role="lead"), "lead", "lead")
        users = [(ensure_user(conn, username=f"ann{k:02d}", role="annotator"), f"ann{k:02d}") for k in range(workers)]
        ghosts = [(ensure_user(conn, username=f"ghost{k}", role="annotator"), f"ghost{k}") for k in range(GHOSTS)]
    plan = S.create_plan(eng, lead, judge_a="judge_a", judge_b="judge_b", seed=seed, overlap_fraction=0.1)
    dispose_engines()
    return {"plan_id": plan.plan_id, "tasks": plan.tasks, "users": users, "ghosts": ghosts}


def run_load(url: str, *, seconds: float, workers: int = 16, think=(0.05, 0.25), scale: str = "small") -> dict:
    """Run the load and check the database; returns metrics and the consistency findings."""
    setup = prepare(url, scale=scale, workers=workers)
    ctx = mp.get_context("fork")  # engines are disposed before forking; each child opens its own
    out = ctx.Queue()
    start = ctx.Event()
    procs = [
        ctx.Process(target=_worker, args=(url, setup["plan_id"], uid, name, seconds, think, k, start, out))
        for k, (uid, name) in enumerate(setup["users"])
    ]
    procs.append(ctx.Process(target=_ghost, args=(url, setup["plan_id"], setup["ghosts"], start, out)))
    for p in procs:
        p.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    start.set()
    results = [out.get(timeout=seconds + 120) for _ in procs]
    wall = time.monotonic() - t0
    for p in procs:
        p.join(timeout=30)
    ghost = next(r for r in results if "ghost_tasks" in r)
    res = [r for r in results if "user" in r]
    return {
        **check(url, setup, res, ghost["ghost_tasks"]),
        "wall_s": wall,
        "seconds": seconds,
        "workers": workers,
        "tasks": setup["tasks"],
    }


def _pct(xs, q) -> float:
    return float(np.percentile(xs, q) * 1000) if len(xs) else float("nan")


def check(url: str, setup: dict, res: list[dict], ghost_tasks: list[int]) -> dict:
    from sqlalchemy import text

    from reform_core.services.platform.uow import get_engine

    eng = get_engine(url, migrate=False)
    plan_id = setup["plan_id"]
    with eng.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT t.id, t.required, t.decided, t.status, COUNT(d.id), COUNT(DISTINCT d.user_id) "
                "FROM adjudication_task t LEFT JOIN adjudication d ON d.task_id = t.id "
                "WHERE t.plan_id = :p GROUP BY t.id, t.required, t.decided, t.status"
            ),
            {"p": plan_id},
        ).all()
        stored = sorted(
            r[0]
            for r in conn.execute(
                text(
                    "SELECT d.id FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id WHERE t.plan_id = :p"
                ),
                {"p": plan_id},
            ).all()
        )
        ghost_status = dict(
            conn.execute(text("SELECT id, status FROM adjudication_task WHERE plan_id = :p"), {"p": plan_id}).all()
        )
    acked = sorted(a for r in res for _, a in r["decided"])
    claims = [x for r in res for x in r["claims"]]
    saves = [x for r in res for x in r["saves"]]
    return {
        "decisions": len(acked),
        "duplicates": sum(n_rows - n_users for _, _, _, _, n_rows, n_users in rows) + (len(acked) - len(set(acked))),
        "over_decided": sum(n_rows > required for _, required, _, _, n_rows, _ in rows),
        "lost": len(set(acked) - set(stored)),
        "unacknowledged": len(set(stored) - set(acked)),
        "bad_counters": sum(
            (decided != n_rows) or ((status == "done") != (n_rows >= required))
            for _, required, decided, status, n_rows, _ in rows
        ),
        "errors": [e for r in res for e in r["errors"]],
        "refused": [e for r in res for e in r["refused"]],
        "ghost_tasks": ghost_tasks,
        "ghost_tasks_done": sum(ghost_status.get(t) == "done" for t in ghost_tasks),
        "active_workers": sum(bool(r["decided"]) for r in res),
        "claim_ms": (_pct(claims, 50), _pct(claims, 95), _pct(claims, 99)),
        "save_ms": (_pct(saves, 50), _pct(saves, 95), _pct(saves, 99)),
        "n_claims": len(claims),
    }


# ----------------------------------------------------------------------------- bench


def _pg_database(admin: str) -> tuple[str, callable]:
    import psycopg

    name = f"reform_load_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')

    def drop():
        from reform_core.services.platform.uow import dispose_engines

        dispose_engines()
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return admin.rsplit("/", 1)[0] + f"/{name}", drop


def main() -> None:
    from bench.machine import machine_line

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--scale", default="paper")
    ap.add_argument("--think", type=float, nargs=2, default=(0.5, 1.5), help="think time range per item (s)")
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "load.md"))
    a = ap.parse_args()

    rows = []
    for backend in a.backends.split(","):
        with tempfile.TemporaryDirectory() as d:
            drop = None
            url = f"sqlite:///{d}/load.db" if backend == "sqlite" else None
            if url is None:
                url, drop = _pg_database(a.pg)
            try:
                m = run_load(url, seconds=a.seconds, workers=a.workers, think=tuple(a.think), scale=a.scale)
            finally:
                if drop:
                    drop()
        print(backend, {k: v for k, v in m.items() if k not in ("refused",)}, flush=True)
        rows.append((backend, m))

    lines = [
        "## Adjudication queue under load (bench/bench_load.py)",
        "",
        f"- {machine_line()}",
        f"- {a.workers} annotator processes + {GHOSTS} ghost sessions (claim with a {GHOST_LEASE_S} s lease, then vanish), "
        f"{a.seconds:.0f} s per backend, think time U({a.think[0]}, {a.think[1]}) s per item; simulate(scale={a.scale!r}), "
        "one plan with 10 % double adjudication; loopback PostgreSQL.",
        "- Latencies are per call inside the worker processes (claim_next includes loading the item).",
        "",
        "| backend | tasks | decisions | decisions/s | claim p50/p95/p99 (ms) | save p50/p95/p99 (ms) | duplicates | lost | "
        "unacknowledged | bad counters | errors | refused | ghost items done |",
        "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for backend, m in rows:
        c, s = m["claim_ms"], m["save_ms"]
        lines.append(
            f"| {backend} | {m['tasks']} | {m['decisions']} | {m['decisions'] / m['seconds']:.1f} | "
            f"{c[0]:.1f} / {c[1]:.1f} / {c[2]:.1f} | {s[0]:.1f} / {s[1]:.1f} / {s[2]:.1f} | {m['duplicates']} | "
            f"{m['lost']} | {m['unacknowledged']} | {m['bad_counters']} | {len(m['errors'])} | {len(m['refused'])} | "
            f"{m['ghost_tasks_done']}/{len(m['ghost_tasks'])} |"
        )
    lines.append("")
    lines.append(
        f"Command: `python bench/bench_load.py --seconds {a.seconds:.0f} --workers {a.workers} --scale {a.scale}`"
    )
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
