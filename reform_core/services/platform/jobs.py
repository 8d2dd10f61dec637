"""Long work as jobs (DESIGN "Long work is a job"): progress in the database, a run lock,
cancel from anywhere, dead processes detected.

A job is a row of the ``job`` table. :func:`run` does the work in the calling thread (the
CLI); :func:`start` claims the job at once and does the work in a background thread of
this process (the app: the page returns, the work goes on across navigation and reloads,
and any session can watch it through :func:`recent` / :func:`get`). Either way:

* **Run lock.** At most one *running* job per ``lock_key`` (a partial unique index). A
  second claim of a live key raises :class:`JobBusy` (one line naming the running job).
* **Heartbeat.** A thread records progress and a heartbeat every
  ``REFORM_JOB_HEARTBEAT_SECONDS``; it also reads ``cancel_requested`` (set by
  :func:`cancel`, from any process) and then sets the work's cancel flag.
* **Dead processes.** A running job whose heartbeat is older than
  ``REFORM_JOB_STALE_SECONDS``, or whose process on this host has exited, is *stale*: shown
  as such, and the next claim of its key marks it failed and takes over (resumable work,
  such as judging keyed by unique constraints, then continues where it stopped).

``params`` and results are stored as given: never pass a secret (keys stay in memory).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Optional

import pandas as pd
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from db.repo import jobs as repo
from reform_core.config import get_settings, redact
from reform_core.services.platform.uow import unit_of_work

HOST = socket.gethostname()
_ACTIVE: set[int] = set()  # ids of the jobs this process is working on
_ACTIVE_LOCK = threading.Lock()


class JobBusy(ValueError):
    """The work's lock key already has a live running job."""


@dataclass
class JobHandle:
    """What the work function receives: its job id, the cancel flag to honour (set when
    someone cancels the job, or when it was taken over), and progress setters. Thread-safe."""

    id: int
    cancel: threading.Event = field(default_factory=threading.Event)
    done: int = 0
    total: Optional[int] = None
    error: str = ""  # set by fail(): the work ended without raising, but failed
    _counters: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def progress(self, done: int, total: Optional[int]) -> None:
        with self._lock:
            self.done, self.total = int(done), (None if total is None else int(total))

    def count(self, **increments: int) -> None:
        """Add to the live counters shown while the job runs."""
        with self._lock:
            for k, v in increments.items():
                self._counters[k] = self._counters.get(k, 0) + int(v)

    def counters(self) -> dict:
        with self._lock:
            return dict(self._counters)

    def fail(self, message: str) -> None:
        """Mark the job failed when the work returns (it did run, but achieved nothing)."""
        self.error = message


@dataclass(frozen=True)
class JobView:
    """A job as pages and the CLI see it; ``state`` is ``stale`` for a running job whose
    process is gone."""

    id: int
    kind: str
    lock_key: str
    params: dict
    status: str
    state: str
    done: int
    total: Optional[int]
    result: dict
    error: str
    owner: str
    created_by: str
    cancel_requested: bool
    started_at: datetime
    heartbeat_at: datetime
    finished_at: Optional[datetime]
    stale_reason: str = ""

    @property
    def active(self) -> bool:
        return self.state == "running"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _owner() -> str:
    return f"{HOST}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    return True


def active_snapshot() -> frozenset[int]:
    """The jobs this process is working on *now*. Take it before reading job rows: a job ends
    by committing its final status and only then leaving the set, so a row read after the
    snapshot that still says ``running`` while its id is not in the snapshot really has no
    worker (checking the set after the read would call a job that just finished stale)."""
    with _ACTIVE_LOCK:
        return frozenset(_ACTIVE)


def stale_reason(job: dict, now: Optional[datetime] = None, active: Optional[frozenset[int]] = None) -> str:
    """Why a running job's process is gone ('' when it looks alive); ``active``: the
    :func:`active_snapshot` taken before ``job`` was read (default: one taken now)."""
    if job["status"] != "running":
        return ""
    host, _, pid = job["owner"].rpartition(":")
    if host == HOST and pid.isdigit():
        if int(pid) == os.getpid():
            if job["id"] not in (active if active is not None else active_snapshot()):
                return f"this process ({job['owner']}) is no longer working on it"
        elif not _pid_alive(int(pid)):
            return f"its process {job['owner']} has exited"
    age = ((now or _now()) - job["heartbeat_at"]).total_seconds()
    if age > get_settings().job_stale_seconds:
        return f"no heartbeat for {age:.0f} s (process {job['owner']})"
    return ""


def _view(job: dict, now: Optional[datetime] = None, active: Optional[frozenset[int]] = None) -> JobView:
    reason = stale_reason(job, now, active)
    return JobView(**job, state="stale" if reason else job["status"], stale_reason=reason)


def _busy_message(job: dict) -> str:
    beat = (_now() - job["heartbeat_at"]).total_seconds()
    who = f" by {job['created_by']}" if job["created_by"] else ""
    return (
        f"{job['lock_key']} is already running as job {job['id']} (started{who} on {job['owner']}, "
        f"{job['done']:,} of {job['total'] if job['total'] is not None else '?'} done, last heartbeat "
        f"{beat:.0f} s ago): wait for it to finish or cancel it"
    )


def claim(engine: Engine, *, kind: str, lock_key: str, params: dict, created_by: str = "") -> int:
    """A new running job holding ``lock_key``; a stale holder is marked failed and taken
    over; a live one raises :class:`JobBusy`."""
    for _ in range(5):
        job_id = None
        try:
            with unit_of_work(engine) as s:
                job_id = repo.insert_running(
                    s, kind=kind, lock_key=lock_key, params=params, owner=_owner(), created_by=created_by
                )
                with _ACTIVE_LOCK:  # before the commit makes the row visible to other threads
                    _ACTIVE.add(job_id)
            return job_id
        except BaseException as exc:
            with _ACTIVE_LOCK:
                _ACTIVE.discard(job_id)
            if not isinstance(exc, IntegrityError):
                raise
        # the key is held: look at the holder
        active = active_snapshot()
        with unit_of_work(engine) as s:
            holder = repo.running_with_key(s, lock_key=lock_key)
            if holder is None:
                continue  # it finished meanwhile
            reason = stale_reason(holder, active=active)
            if not reason:
                raise JobBusy(_busy_message(holder))
            repo.take_over(
                s,
                job_id=holder["id"],
                heartbeat_at=holder["heartbeat_at"],
                error=f"stale: {reason}; taken over by {_owner()}",
            )
    raise JobBusy(f"{lock_key}: could not start (other runs kept claiming it); try again")


class _Heartbeat:
    def __init__(self, engine: Engine, handle: JobHandle):
        self.engine, self.handle = engine, handle
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"job-{handle.id}-heartbeat", daemon=True)

    def _loop(self) -> None:
        interval = get_settings().job_heartbeat_seconds
        while not self.stopped.wait(interval):
            self.beat()

    def beat(self) -> None:
        h = self.handle
        with h._lock:
            done, total = h.done, h.total
        try:
            with unit_of_work(self.engine) as s:
                flag = repo.beat(s, job_id=h.id, done=done, total=total, result=h.counters())
        except Exception:  # noqa: BLE001 - a missed beat is retried at the next interval
            return
        if flag is None or flag:  # cancelled, or taken over as stale: stop starting new work
            h.cancel.set()

    def __enter__(self) -> "_Heartbeat":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()


def _execute(engine: Engine, handle: JobHandle, fn: Callable[[JobHandle], Any]) -> Any:
    """Run ``fn(handle)`` under heartbeats and record how it ended."""
    try:
        with _Heartbeat(engine, handle):
            try:
                result = fn(handle)
            except BaseException as exc:
                message = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
                _finish(engine, handle, "failed", {"counters": handle.counters()}, redact(message)[:2000])
                raise
        summary = result if isinstance(result, dict) else {}
        if handle.error:
            status = "failed"
        else:
            status = "cancelled" if summary.get("cancelled", handle.cancel.is_set()) else "done"
        _finish(engine, handle, status, summary, redact(handle.error)[:2000])
        return result
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(handle.id)


def _finish(engine: Engine, handle: JobHandle, status: str, result: dict, error: str) -> None:
    with handle._lock:
        done, total = handle.done, handle.total
    with unit_of_work(engine) as s:
        repo.finish(s, job_id=handle.id, status=status, result=result, error=error, done=done, total=total)


def run(
    engine: Engine, *, kind: str, lock_key: str, params: dict, fn: Callable[[JobHandle], Any], created_by: str = ""
) -> Any:
    """Claim ``lock_key`` and run ``fn(handle)`` in this thread; return its result."""
    handle = JobHandle(claim(engine, kind=kind, lock_key=lock_key, params=params, created_by=created_by))
    return _execute(engine, handle, fn)


def start(
    engine: Engine, *, kind: str, lock_key: str, params: dict, fn: Callable[[JobHandle], Any], created_by: str = ""
) -> int:
    """Claim ``lock_key`` now (:class:`JobBusy` if held) and run ``fn(handle)`` in a
    background thread of this process; return the job id at once."""
    handle = JobHandle(claim(engine, kind=kind, lock_key=lock_key, params=params, created_by=created_by))

    def main() -> None:
        try:
            _execute(engine, handle, fn)
        except BaseException as exc:  # noqa: BLE001 - recorded on the job row; no traceback to the log
            print(f"job {handle.id} failed: {redact(type(exc).__name__)}", file=sys.stderr)

    threading.Thread(target=main, name=f"job-{handle.id}", daemon=True).start()
    return handle.id


def cancel(engine: Engine, job_id: int) -> bool:
    """Ask running job ``job_id`` to stop (its process notices at the next heartbeat);
    False when it is not running."""
    with unit_of_work(engine) as s:
        return repo.request_cancel(s, job_id=job_id)


def get(engine: Engine, job_id: int) -> Optional[JobView]:
    active = active_snapshot()
    with unit_of_work(engine) as s:
        job = repo.get(s, job_id=job_id)
    return None if job is None else _view(job, active=active)


def recent(
    engine: Engine, *, kind: Optional[str] = None, kinds: Optional[tuple[str, ...]] = None, limit: int = 20
) -> list[JobView]:
    """The newest jobs first (of ``kind`` or ``kinds`` only, when given)."""
    active = active_snapshot()
    with unit_of_work(engine) as s:
        rows = repo.recent(s, kinds=(kind,) if kind is not None else kinds, limit=limit)
    now = _now()
    return [_view(r, now, active) for r in rows]


def version(engine: Engine) -> tuple:
    """Changes whenever any job starts, beats or ends (a cache key for pages that show
    what jobs wrote)."""
    with unit_of_work(engine) as s:
        return repo.version(s)


def when(ts: Optional[datetime]) -> str:
    """A timestamp for display: ``2026-01-31 14:05:09 UTC`` (no microseconds), or ''."""
    return "" if ts is None else ts.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def frame(views: list[JobView]) -> pd.DataFrame:
    """Jobs as a display table: no raw None, dicts or microsecond timestamps."""
    rows = []
    for v in views:
        progress = f"{v.done:,} / {v.total:,}" if v.total is not None else f"{v.done:,}"
        rows.append(
            {
                "job": v.id,
                "kind": v.kind,
                "what": v.lock_key,
                "state": v.state,
                "progress": progress,
                "started": when(v.started_at),
                "by": v.created_by or "—",
                "finished": when(v.finished_at) or "—",
                "note": v.stale_reason or v.error or ("cancel requested" if v.cancel_requested and v.active else ""),
            }
        )
    return pd.DataFrame(rows, columns=["job", "kind", "what", "state", "progress", "started", "by", "finished", "note"])
