"""Load, CI form (issue 9): 16 annotator processes on one queue, SQLite and PostgreSQL.

A shortened run of ``bench/bench_load.py`` (20 s of load per backend on the small
simulated project, short think times so the queue is hammered): zero duplicate and zero
lost decisions, consistent task counters, no error surfaced to any worker (no
"database is locked"), and the items of vanished sessions come back when their lease
expires and get decided. The full 5-minute runs are the benchmark.
"""

from __future__ import annotations

import pytest

from bench.bench_load import GHOST_LEASE_S, run_load

SECONDS = 20


def _assert_clean(m: dict) -> None:
    assert m["errors"] == [], m["errors"][:5]
    assert m["refused"] == [], m["refused"][:5]  # leases of live workers (600 s) never expire here
    assert (m["duplicates"], m["over_decided"], m["lost"], m["unacknowledged"], m["bad_counters"]) == (0, 0, 0, 0, 0), m
    assert m["decisions"] > 50 and m["active_workers"] >= 12, m  # the 16 processes really shared the work
    assert m["ghost_tasks"] and m["ghost_tasks_done"] == len(m["ghost_tasks"]), m  # expired leases went back
    assert SECONDS > GHOST_LEASE_S


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sixteen_annotators(backend, request, tmp_path):
    url = f"sqlite:///{tmp_path / 'load.db'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    _assert_clean(run_load(url, seconds=SECONDS, workers=16, think=(0.02, 0.1), scale="small"))
