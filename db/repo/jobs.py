"""Queries of the job table (background work, progress, run locks). Keyword-only
functions taking a ``Session``; they return plain dicts, never live ORM objects."""

from __future__ import annotations

from datetime import datetime
from typing import Optional, Sequence

from sqlalchemy import func, select, update
from sqlmodel import Session

from db.models import Job, utcnow

COLUMNS = [
    "id",
    "kind",
    "lock_key",
    "params",
    "status",
    "done",
    "total",
    "result",
    "error",
    "owner",
    "created_by",
    "cancel_requested",
    "started_at",
    "heartbeat_at",
    "finished_at",
]


def _row(job: Job) -> dict:
    return {c: getattr(job, c) for c in COLUMNS}


def insert_running(session: Session, *, kind: str, lock_key: str, params: dict, owner: str, created_by: str) -> int:
    """A new running job; raises ``IntegrityError`` (at flush) when ``lock_key`` already has one."""
    now = utcnow()
    job = Job(
        kind=kind,
        lock_key=lock_key,
        params=params,
        status="running",
        owner=owner,
        created_by=created_by,
        started_at=now,
        heartbeat_at=now,
    )
    session.add(job)
    session.flush()
    return int(job.id)


def running_with_key(session: Session, *, lock_key: str) -> Optional[dict]:
    job = session.execute(select(Job).where(Job.lock_key == lock_key, Job.status == "running")).scalars().first()
    return None if job is None else _row(job)


def get(session: Session, *, job_id: int) -> Optional[dict]:
    job = session.get(Job, job_id)
    return None if job is None else _row(job)


def recent(session: Session, *, kinds: Optional[Sequence[str]] = None, limit: int = 20) -> list[dict]:
    """The newest jobs first (of ``kinds`` only, when given)."""
    q = select(Job).order_by(Job.id.desc()).limit(limit)
    if kinds is not None:
        q = q.where(Job.kind.in_(list(kinds)))
    return [_row(j) for j in session.execute(q).scalars()]


def beat(session: Session, *, job_id: int, done: int, total: Optional[int], result: dict) -> Optional[bool]:
    """Record progress and a heartbeat on a running job. Returns its ``cancel_requested``
    flag, or None when the job is no longer running (finished, or taken over as stale)."""
    res = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == "running")
        .values(done=done, total=total, result=result, heartbeat_at=utcnow())
    )
    if res.rowcount == 0:
        return None
    return bool(session.execute(select(Job.cancel_requested).where(Job.id == job_id)).scalar())


def finish(
    session: Session,
    *,
    job_id: int,
    status: str,
    result: dict,
    error: str = "",
    done: Optional[int] = None,
    total: Optional[int] = None,
) -> bool:
    """Close a running job (done | failed | cancelled); False if it was no longer running."""
    values = {"status": status, "result": result, "error": error, "finished_at": utcnow(), "heartbeat_at": utcnow()}
    if done is not None:
        values.update(done=done, total=total)
    res = session.execute(update(Job).where(Job.id == job_id, Job.status == "running").values(**values))
    return res.rowcount == 1


def take_over(session: Session, *, job_id: int, heartbeat_at: datetime, error: str) -> bool:
    """Mark a stale running job failed, only if nobody has beaten since ``heartbeat_at``
    was read (two processes taking over the same job: one wins)."""
    res = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == "running", Job.heartbeat_at == heartbeat_at)
        .values(status="failed", error=error, finished_at=utcnow())
    )
    return res.rowcount == 1


def request_cancel(session: Session, *, job_id: int) -> bool:
    """Ask a running job to stop; False if it is not running."""
    res = session.execute(update(Job).where(Job.id == job_id, Job.status == "running").values(cancel_requested=True))
    return res.rowcount == 1


def version(session: Session) -> tuple:
    """``(max id, newest heartbeat)``: changes whenever a job starts, beats or finishes."""
    row = session.execute(select(func.max(Job.id), func.max(Job.heartbeat_at))).one()
    return int(row[0] or 0), str(row[1] or "")
