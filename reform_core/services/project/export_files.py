"""The files an export writes: each table in CSV (formula cells neutralised), Parquet and JSON,
their digests, and the digest of the project's data (computed beside the scoring, in a child
process)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

import pandas as pd
from sqlalchemy.engine import Engine

from reform_core.safe_csv import write_csv


def write_table(df: pd.DataFrame, out: Path, stem: str, files: list[str]) -> None:
    df = df.reset_index(drop=True)
    write_csv(df, out / f"{stem}.csv")  # formula-neutralised text cells; Parquet and JSON keep the raw values
    df.to_parquet(out / f"{stem}.parquet", index=False)
    (out / f"{stem}.json").write_text(df.to_json(orient="records", indent=1, force_ascii=False), encoding="utf-8")
    files += [f"{stem}.csv", f"{stem}.parquet", f"{stem}.json"]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dataset_hash(engine: Engine) -> str:
    """A hash of the project's inputs (questions, constraints, responses, judgments, decisions)."""
    h = hashlib.sha256()
    queries = [
        "SELECT key, text FROM question ORDER BY key",
        "SELECT i.key, c.position, c.feature, c.mode, c.text FROM constraint_item c JOIN instruction i ON i.id = c.instruction_id ORDER BY i.key, c.position",
        "SELECT m.name, r.variant, r.text FROM response r JOIN eval_model m ON m.id = r.model_id ORDER BY m.name, r.variant, r.question_id",
        "SELECT j.name, g.response_id, g.constraint_id, g.prompt_version, g.label FROM judgment g JOIN judge j ON j.id = g.judge_id ORDER BY j.name, g.response_id, g.constraint_id, g.prompt_version",
        "SELECT task_id, user_id, choice, label FROM adjudication ORDER BY id",
    ]
    raw = engine.raw_connection()  # the driver's own cursor: SQLAlchemy's row objects cost 3 µs each here
    try:
        cur = raw.cursor()
        for q in queries:
            cur.execute(q)
            while rows := cur.fetchmany(20_000):
                # the same bytes as one update per row (SHA-256 is a stream): repr of each row's tuple
                # (the drivers' rows are tuples already: mapped straight through repr)
                rows = rows if type(rows[0]) is tuple else [tuple(r) for r in rows]
                h.update("".join(map(repr, rows)).encode("utf-8"))
        cur.close()
    finally:
        raw.close()
    return h.hexdigest()


def dataset_hash_started(engine: Engine) -> Callable[[], str]:
    """Start :func:`dataset_hash` beside the caller's own work and return the function that
    waits for it.

    The hash reads every input row once (about a tenth of a paper-scale export) and depends
    on nothing the export computes, so in a single-threaded process (the CLI) it runs in a
    forked child on its own connection while the parent scores — on a machine with a free
    core the export finishes that much sooner (the CPU time is the same). Anywhere else (a
    process with other threads, such as the app, where forking is unsafe; no ``fork`` start
    method; the child failing) it is computed in the caller, as before."""
    import multiprocessing
    import threading

    if threading.active_count() > 1 or "fork" not in multiprocessing.get_all_start_methods():
        return lambda: dataset_hash(engine)
    url = engine.url.render_as_string(hide_password=False)  # stays in this process's memory (fork)
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child() -> None:
        from sqlalchemy import create_engine

        try:
            engine.dispose(close=False)  # the inherited pool is the parent's: never use or close its sockets here
            own = create_engine(url)
            send.send(("ok", dataset_hash(own)))
            own.dispose()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which computes it itself
            send.send(("error", type(exc).__name__))

    proc = ctx.Process(target=child, daemon=True)
    try:
        proc.start()
    except OSError:
        return lambda: dataset_hash(engine)
    send.close()

    def wait() -> str:
        try:
            status, value = receive.recv()
        except (EOFError, OSError):
            status, value = "error", ""
        finally:
            receive.close()
            proc.join()
        return value if status == "ok" else dataset_hash(engine)

    return wait
