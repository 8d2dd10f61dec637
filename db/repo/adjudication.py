"""Queries of the adjudication area: the instance/adjudication loads, sample-plan rows and the
multi-annotator queue (atomic claims with leases).

Functions take a SQLAlchemy ``Connection`` and keyword arguments and return plain values,
dicts or DataFrames. Write use cases run inside :func:`write_tx`, which on SQLite starts the
transaction with ``BEGIN IMMEDIATE`` (the write lock is taken up front, so a read-then-write
use case can never fail with ``SQLITE_BUSY_SNAPSHOT`` / "database is locked"; concurrent
writers wait on the busy timeout) and on PostgreSQL is an ordinary transaction whose row
locks come from ``FOR UPDATE [SKIP LOCKED]``.

Append-only adjudications: a row is *current* when no other row supersedes it; a current
row with ``choice = 'retracted'`` means its author withdrew the decision (see
``reform_core.services.adjudication.adjudication.undo_last``).
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from datetime import datetime
from typing import Iterator, Optional

import numpy as np
import pandas as pd
from sqlalchemy import DateTime, bindparam, text
from sqlalchemy.engine import Connection, Engine

from db.models import utcnow

RETRACTED = "retracted"
WITHDRAWN = "withdrawn"  # a task of a closed plan that still lacked decisions (never served again)

# ----------------------------------------------------------------------------- transactions


@contextmanager
def write_tx(engine: Engine) -> Iterator[Connection]:
    """One write transaction: ``BEGIN IMMEDIATE`` on SQLite, a plain transaction elsewhere."""
    if engine.dialect.name != "sqlite":
        with engine.begin() as conn:
            yield conn
        return
    with engine.connect() as conn:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.commit()
        except BaseException:
            conn.rollback()
            raise


def _dt(sql: str, *names: str):
    """``text(sql)`` with the named parameters typed as DateTime (same storage as the ORM)."""
    return text(sql).bindparams(*[bindparam(n, type_=DateTime()) for n in names if f":{n}" in sql])


# ----------------------------------------------------------------------------- lookups


def judge_ids(conn: Connection, *, names: list[str]) -> dict[str, int]:
    rows = conn.execute(
        text("SELECT name, id FROM judge WHERE name IN :n").bindparams(bindparam("n", expanding=True)),
        {"n": list(names)},
    ).all()
    return {r[0]: int(r[1]) for r in rows}


def judge_names(conn: Connection) -> list[str]:
    return [r[0] for r in conn.execute(text("SELECT name FROM judge ORDER BY name")).all()]


def ensure_user(conn: Connection, *, username: str, role: str) -> int:
    """Id of user ``username``, created with ``role`` if missing."""
    uid = conn.execute(text("SELECT id FROM app_user WHERE username = :u"), {"u": username}).scalar()
    if uid is None:
        conn.execute(
            text(
                "INSERT INTO app_user (username, display_name, role, password_hash, active, created_at) "
                "VALUES (:u, :u, :r, '', :a, :c)"
            ).bindparams(bindparam("c", type_=DateTime())),
            {"u": username, "r": role, "a": True, "c": utcnow()},
        )
        uid = conn.execute(text("SELECT id FROM app_user WHERE username = :u"), {"u": username}).scalar()
    return int(uid)


# ----------------------------------------------------------------------------- instances


def _driver_rows(conn: Connection, sql: str, params: dict | None = None) -> list[tuple]:
    """Run ``sql`` on the DBAPI cursor (plain tuples: 10⁵ rows without Row overhead)."""
    params = params or {}
    names = re.findall(r":(\w+)", sql)
    if conn.dialect.paramstyle == "qmark":
        sql, args = re.sub(r":(\w+)", "?", sql), tuple(params[n] for n in names)
    else:
        sql, args = re.sub(r":(\w+)", r"%(\1)s", sql), params
    cur = conn.connection.driver_connection.cursor()
    try:
        cur.execute(sql, args)
        return cur.fetchall()
    finally:
        cur.close()


def _frame(conn: Connection, sql: str, columns: list[str], params: dict | None = None) -> pd.DataFrame:
    rows = _driver_rows(conn, sql, params)
    if not rows:
        return pd.DataFrame({c: [] for c in columns})
    arr = np.array(rows, dtype=object).reshape(len(rows), len(columns))
    return pd.DataFrame({c: arr[:, k] for k, c in enumerate(columns)}).infer_objects()


def judgment_labels(conn: Connection, *, judge_id: int, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """``(iid, label)`` of every pair a judge labelled, sorted by ``iid`` = ``response_id ·
    shift + constraint_id`` (label NaN when errored / abstained). With several prompt versions
    of a pair the newest judgment (highest id) is kept. The instance id is computed by the
    database and the rows come in id order (the judge's index), so two values per row cross the
    driver and "newest" is the last occurrence."""
    rows = _driver_rows(
        conn,
        f"SELECT CAST(response_id AS BIGINT) * {int(shift)} + constraint_id, label FROM judgment "
        "WHERE judge_id = :j ORDER BY id",
        {"j": judge_id},
    )
    ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    labels = np.array([r[1] for r in rows], dtype=float)
    iid, last = np.unique(ids[::-1], return_index=True)
    return iid, labels[::-1][last]


def instance_keys(conn: Connection) -> dict[str, pd.DataFrame]:
    """The lookup tables the judgment rows are decorated with (one small query each)."""
    q = {
        "responses": ("SELECT id, model_id, instruction_id FROM response", ["id", "model_id", "instruction_id"]),
        "models": ("SELECT id, name FROM eval_model", ["id", "name"]),
        "constraints": (
            "SELECT id, instruction_id, position, feature, category, mode FROM constraint_item",
            ["id", "instruction_id", "position", "feature", "category", "mode"],
        ),
        "instructions": (
            "SELECT id, key, question_id, condition, pair_group FROM instruction",
            ["id", "key", "question_id", "condition", "pair_group"],
        ),
        "questions": ("SELECT id, key, task_type, domain FROM question", ["id", "key", "task_type", "domain"]),
        "baseline": (
            "SELECT r.model_id, r.question_id, f.feature, f.present FROM baseline_feature f "
            "JOIN response r ON r.id = f.response_id WHERE r.variant = ''",
            ["model_id", "question_id", "feature", "present"],
        ),
    }
    return {k: _frame(conn, sql, cols, {}) for k, (sql, cols) in q.items()}


ADJ_COLUMNS = [
    "id",
    "task_id",
    "user_id",
    "annotator",
    "choice",
    "label",
    "note",
    "seconds",
    "supersedes_id",
    "created_at",
    "plan_id",
    "response_id",
    "constraint_id",
    "kind",
    "judge_a_id",
    "judge_b_id",
]


def adjudication_rows(
    conn: Connection,
    *,
    judge_a_id: Optional[int] = None,
    judge_b_id: Optional[int] = None,
    plan_id: Optional[int] = None,
) -> pd.DataFrame:
    """Every adjudication row (history included) of the plans of a judge pair (either order)
    or of one plan."""
    where, params = [], {}
    if plan_id is not None:
        where.append("t.plan_id = :p")
        params["p"] = plan_id
    if judge_a_id is not None:
        where.append("((p.judge_a_id = :a AND p.judge_b_id = :b) OR (p.judge_a_id = :b AND p.judge_b_id = :a))")
        params.update(a=judge_a_id, b=judge_b_id)
    sql = (
        "SELECT d.id, d.task_id, d.user_id, COALESCE(u.username, d.annotator), d.choice, d.label, d.note, d.seconds, d.supersedes_id, "
        "d.created_at, t.plan_id, t.response_id, t.constraint_id, t.kind, p.judge_a_id, p.judge_b_id "
        "FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id "
        "JOIN sample_plan p ON p.id = t.plan_id LEFT JOIN app_user u ON u.id = d.user_id"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY d.id"
    )
    res = conn.execute(text(sql), params)
    return pd.DataFrame([tuple(r) for r in res.all()], columns=ADJ_COLUMNS)


def current_decision_count(conn: Connection, *, judge_a_id: int, judge_b_id: int, except_plan: int) -> int:
    """Current decisions (not superseded, not retracted) of the plans of a judge pair (either
    order) other than ``except_plan`` — :func:`reform_core.services.data.instances.current_decisions`
    over :func:`adjudication_rows`, counted in SQL."""
    return int(
        conn.execute(
            text(
                "SELECT COUNT(*) FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id "
                "JOIN sample_plan p ON p.id = t.plan_id "
                "WHERE t.plan_id <> :x AND ((p.judge_a_id = :a AND p.judge_b_id = :b) OR (p.judge_a_id = :b AND p.judge_b_id = :a)) "
                f"AND d.choice <> '{RETRACTED}' AND NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.supersedes_id = d.id)"
            ),
            {"x": except_plan, "a": judge_a_id, "b": judge_b_id},
        ).scalar_one()
    )


# ----------------------------------------------------------------------------- plans


def insert_plan(
    conn: Connection, *, name: str, judge_a_id: int, judge_b_id: int, params: dict, created_by: Optional[int]
) -> int:
    from db.repo.data import bulk_insert

    if conn.execute(text("SELECT 1 FROM sample_plan WHERE name = :n"), {"n": name}).first():
        raise ValueError(f"a sample plan named {name!r} already exists; choose another name")
    bulk_insert(
        conn,
        "sample_plan",
        [
            {
                "name": name,
                "judge_a_id": judge_a_id,
                "judge_b_id": judge_b_id,
                "params": params,
                "active": True,
                "created_at": utcnow(),
                "created_by": created_by,
            }
        ],
    )
    return int(conn.execute(text("SELECT id FROM sample_plan WHERE name = :n"), {"n": name}).scalar_one())


def insert_tasks(conn: Connection, *, rows: list[dict]) -> None:
    """Insert tasks and add them to their plans' progress counters; on PostgreSQL refresh the
    planner statistics so the queue's claim query uses its index at once (a fresh bulk load
    otherwise gets sequential scans + sorts)."""
    from db.repo.data import bulk_insert

    bulk_insert(conn, "adjudication_task", rows)
    deltas: dict[int, dict[str, list[int]]] = {}
    for r in rows:
        required, decided = int(r.get("required", 1)), int(r.get("decided", 0))
        d = deltas.setdefault(int(r["plan_id"]), {}).setdefault(r.get("stratum", ""), [0, 0, 0, 0])
        d[0] += 1
        d[1] += required
        d[2] += r.get("status", "open") == "done"
        d[3] += min(decided, required)
    for plan_id, by_stratum in deltas.items():
        add_stratum_counts(conn, plan_id=plan_id, deltas=by_stratum)
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("ANALYZE adjudication_task")


def plan_names(conn: Connection) -> list[str]:
    return [r[0] for r in conn.execute(text("SELECT name FROM sample_plan")).all()]


def plans(conn: Connection) -> pd.DataFrame:
    """Every plan with its judges and task counts (from the progress counters)."""
    res = conn.execute(
        text(
            "SELECT p.id, p.name, ja.name AS judge_a, jb.name AS judge_b, p.active, p.created_at, "
            "COALESCE(c.tasks, 0) AS tasks, COALESCE(c.done, 0) AS done "
            "FROM sample_plan p JOIN judge ja ON ja.id = p.judge_a_id JOIN judge jb ON jb.id = p.judge_b_id "
            "LEFT JOIN (SELECT plan_id, SUM(tasks) AS tasks, SUM(done) AS done FROM plan_stratum_count "
            "GROUP BY plan_id) c ON c.plan_id = p.id ORDER BY p.id"
        )
    )
    df = pd.DataFrame(res.all(), columns=list(res.keys()))
    df[["tasks", "done"]] = df[["tasks", "done"]].astype(int)
    return df


def work_under_way(conn: Connection, *, user_id: int) -> bool:
    """Whether ``user_id`` has current decisions in an active plan that still needs decisions
    (read from the progress counters)."""
    r = conn.execute(
        text(
            "SELECT EXISTS (SELECT 1 FROM plan_annotator_count a JOIN sample_plan p ON p.id = a.plan_id "
            "WHERE p.active AND a.user_id = :u AND a.annotator = '' AND a.decided > 0 AND EXISTS "
            "(SELECT 1 FROM plan_stratum_count s WHERE s.plan_id = a.plan_id AND s.filled < s.needed))"
        ),
        {"u": user_id},
    ).scalar()
    return bool(r)


def plan_row(conn: Connection, *, plan_id: int) -> Optional[dict]:
    r = conn.execute(
        text(
            "SELECT p.id, p.name, p.judge_a_id, p.judge_b_id, ja.name, jb.name, p.params FROM sample_plan p "
            "JOIN judge ja ON ja.id = p.judge_a_id JOIN judge jb ON jb.id = p.judge_b_id WHERE p.id = :p"
        ),
        {"p": plan_id},
    ).first()
    if r is None:
        return None
    out = dict(zip(["id", "name", "judge_a_id", "judge_b_id", "judge_a", "judge_b", "params"], r))
    if isinstance(out["params"], str):  # SQLite hands JSON back as text through text()
        out["params"] = json.loads(out["params"])
    return out


def plan_id_by_name(conn: Connection, *, name: str) -> Optional[int]:
    v = conn.execute(text("SELECT id FROM sample_plan WHERE name = :n"), {"n": name}).scalar()
    return None if v is None else int(v)


def lock_plan(conn: Connection, *, plan_id: int) -> None:
    """Lock a plan's row until the transaction ends (PostgreSQL; SQLite's write transaction
    already serialises writers): a close and an extension of one plan never interleave."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT id FROM sample_plan WHERE id = :p FOR UPDATE"), {"p": plan_id})


def set_plan(conn: Connection, *, plan_id: int, params: dict, active: Optional[bool] = None) -> None:
    """Replace a plan's stored parameters (and its ``active`` flag when given)."""
    from db.repo.data import table

    values = {"params": params, **({} if active is None else {"active": bool(active)})}
    t = table("sample_plan")
    conn.execute(t.update().where(t.c.id == plan_id).values(**values))


def withdraw_open_tasks(conn: Connection, *, plan_id: int) -> int:
    """Withdraw every task of a plan still short of decisions (``open`` or ``claimed``: status
    ``withdrawn``, lease dropped, so no queue serves it again) and drop the leases left on its
    complete tasks; returns how many were withdrawn. Their decisions stay."""
    n = conn.execute(
        text(
            "UPDATE adjudication_task SET status = :w, claimed_by = NULL, lease_until = NULL "
            "WHERE plan_id = :p AND status IN ('open', 'claimed')"
        ),
        {"p": plan_id, "w": WITHDRAWN},
    ).rowcount
    conn.execute(
        text(
            "UPDATE adjudication_task SET claimed_by = NULL, lease_until = NULL "
            "WHERE plan_id = :p AND status = 'done' AND claimed_by IS NOT NULL"
        ),
        {"p": plan_id},
    )
    return int(n or 0)


def plan_params(conn: Connection, *, plan_id: int) -> dict:
    """A plan's stored parameters (``{}`` when it has none)."""
    v = conn.execute(text("SELECT params FROM sample_plan WHERE id = :p"), {"p": plan_id}).scalar()
    if isinstance(v, str):  # SQLite hands JSON back as text through text()
        v = json.loads(v or "{}")
    return v or {}


def choices(conn: Connection, *, task_id: int, limit: int = 3) -> list[str]:
    """The choices of the earliest ``limit`` current decisions on a task that carry a label or
    say "neither" on an audit (unsure decisions on a disagreement and retractions skipped), in
    the order they were made; empty when there is none. Run it after :func:`lock_task`."""
    rows = conn.execute(
        text(
            f"SELECT d.choice FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id WHERE d.task_id = :t "
            f"AND d.choice <> 'retracted' AND {_CURRENT} AND (d.label IS NOT NULL OR t.kind = 'audit') "
            "ORDER BY d.id LIMIT :n"
        ),
        {"t": task_id, "n": int(limit)},
    ).all()
    return [str(r[0]) for r in rows]


def plan_task_keys(conn: Connection, *, plan_id: int) -> pd.DataFrame:
    """``response_id, constraint_id, kind`` of every task of a plan in id order (what the
    estimator needs of them; none of these changes once the task is made)."""
    res = conn.execute(
        text("SELECT response_id, constraint_id, kind FROM adjudication_task WHERE plan_id = :p ORDER BY id"),
        {"p": plan_id},
    )
    return pd.DataFrame([tuple(r) for r in res.all()], columns=["response_id", "constraint_id", "kind"])


def plan_task_stamp(conn: Connection, *, plan_id: int) -> tuple[int, int]:
    """``(count, max id)`` of a plan's tasks: changes when a task is added or removed (tasks are
    never rewritten), so a caller holding :func:`plan_task_keys` knows when to reread them."""
    n, top = conn.execute(
        text("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM adjudication_task WHERE plan_id = :p"), {"p": plan_id}
    ).one()
    return int(n), int(top)


TASK_COLUMNS = [
    "id",
    "response_id",
    "constraint_id",
    "stratum",
    "kind",
    "required",
    "decided",
    "status",
    "claimed_by",
    "a_left",
    "order_key",
]


def plan_tasks(conn: Connection, *, plan_id: int) -> pd.DataFrame:
    """Every task of a plan in id order. (Read through SQLAlchemy's rows: the driver's own cursor
    here, 10 ms faster per Scores rerun, made the app's memory grow ~100 MB per decide → Scores
    cycle at 10×, measured by bench/bench_scores.py; the cause was not found.)"""
    res = conn.execute(
        text(f"SELECT {', '.join(TASK_COLUMNS)} FROM adjudication_task WHERE plan_id = :p ORDER BY id"), {"p": plan_id}
    )
    return pd.DataFrame([tuple(r) for r in res.all()], columns=TASK_COLUMNS)


# ----------------------------------------------------------------------------- the queue

_NOT_DECIDED_BY_USER = (
    "NOT EXISTS (SELECT 1 FROM adjudication d WHERE d.task_id = t.id AND d.user_id = :u "
    "AND d.choice <> 'retracted' AND NOT EXISTS "
    "(SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id))"
)
# the task of plan :p on which user :u holds a live lease
_HELD = (
    "SELECT t.id, t.lease_until FROM adjudication_task t WHERE t.plan_id = :p AND t.status = 'claimed' "
    "AND t.claimed_by = :u AND t.lease_until >= :now ORDER BY t.order_key LIMIT 1"
)


def _free(status: str, guard: str = "TRUE") -> str:
    """The first task of plan :p in queue order that is ``open`` or (``claimed``) has a lease
    expired before :now, that user :u has not decided, and for which ``guard`` holds."""
    expired = " AND t.lease_until < :now" if status == "claimed" else ""
    return (
        f"SELECT t.id, t.order_key FROM adjudication_task t WHERE {guard} AND t.plan_id = :p "
        f"AND t.status = '{status}'{expired} AND {_NOT_DECIDED_BY_USER} ORDER BY t.order_key LIMIT 1"
    )


@contextmanager
def claim_connection(engine: Engine) -> Iterator[Connection]:
    """The connection :func:`claim_item` runs on.

    PostgreSQL: ``AUTOCOMMIT`` — the claim is one statement, hence its own transaction, and
    needs no ``BEGIN`` / ``COMMIT`` round trips. (No transaction also means the pool's
    reset-on-return sends no ``ROLLBACK``, which would empty psycopg's prepared-statement
    cache and re-plan every statement.) SQLite: an ordinary connection; :func:`claim_item`
    opens and commits its own ``BEGIN IMMEDIATE`` transaction.
    """
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn.execution_options(isolation_level="AUTOCOMMIT")
        yield conn


def claim_item(conn: Connection, *, plan_id: int, user_id: int, now: datetime, lease_until: datetime) -> Optional[dict]:
    """Claim the task ``user_id`` gets next in ``plan_id`` and return its content (as
    :func:`item_content`); None when nothing is left. Run on a :func:`claim_connection`.

    The task on which the user already holds a live lease comes back unchanged (a page
    refresh never loses or doubles work); otherwise the first task in queue order whose
    lease expired, else the first open one, that the user has not decided, is claimed
    atomically until ``lease_until``.

    PostgreSQL: one statement — the held lookup, the ``FOR UPDATE SKIP LOCKED`` picks (so
    concurrent claimers skip each other's rows) and the ``UPDATE`` as CTEs, the item's
    content selected from their result — hence one round trip and one transaction. SQLite:
    the held lookup and one ``UPDATE … WHERE id = (SELECT … LIMIT 1) RETURNING id`` inside
    ``BEGIN IMMEDIATE``, committed here; the content is read after the write lock is released.
    """
    params = {"p": plan_id, "u": user_id, "now": now, "lease": lease_until}
    set_claim = "SET status = 'claimed', claimed_by = :u, lease_until = :lease"
    if conn.dialect.name == "postgresql":
        none_held = "NOT EXISTS (SELECT 1 FROM held)"
        sql = (
            f"WITH held AS MATERIALIZED ({_HELD}), "
            f"expired AS MATERIALIZED ({_free('claimed', none_held)} FOR UPDATE OF t SKIP LOCKED), "
            f"fresh AS MATERIALIZED ({_free('open', none_held + ' AND NOT EXISTS (SELECT 1 FROM expired)')} "
            "FOR UPDATE OF t SKIP LOCKED), "
            f"claimed AS (UPDATE adjudication_task {set_claim} "
            "WHERE id IN (SELECT id FROM expired UNION ALL SELECT id FROM fresh) RETURNING id, lease_until), "
            "got AS (SELECT id, lease_until FROM held UNION ALL SELECT id, lease_until FROM claimed) "
            + _item_select("postgresql")
        )
        return _item_rows(conn.execute(_dt(sql, "now", "lease").columns(lease_until=DateTime()), params).all())
    conn.exec_driver_sql("BEGIN IMMEDIATE")
    try:
        tid = conn.execute(_dt(_HELD, "now"), params).scalar()
        if tid is None:
            tid = conn.execute(
                _dt(
                    f"UPDATE adjudication_task {set_claim} WHERE id = (SELECT id FROM ("
                    f"SELECT * FROM ({_free('claimed')}) UNION ALL SELECT * FROM ({_free('open')})) "
                    "ORDER BY order_key LIMIT 1) RETURNING id",
                    "now",
                    "lease",
                ),
                params,
            ).scalar()
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return None if tid is None else item_content(conn, task_id=int(tid))


def lock_task(conn: Connection, *, task_id: int) -> Optional[dict]:
    """The task row (locked ``FOR UPDATE`` on PostgreSQL) with its plan's judges."""
    sql = (
        "SELECT t.id, t.plan_id, t.response_id, t.constraint_id, t.stratum, t.kind, t.required, t.decided, "
        "t.status, t.claimed_by, t.lease_until, t.a_left, t.order_key, p.judge_a_id, p.judge_b_id "
        "FROM adjudication_task t JOIN sample_plan p ON p.id = t.plan_id WHERE t.id = :t"
    )
    if conn.dialect.name == "postgresql":
        sql += " FOR UPDATE OF t"
    r = conn.execute(text(sql).columns(lease_until=DateTime()), {"t": task_id}).first()
    if r is None:
        return None
    return dict(r._mapping)


def newest_judgments(
    conn: Connection, *, judge_ids: list[int], response_id: int, constraint_id: int
) -> dict[int, tuple[int, Optional[int]]]:
    """``{judge_id: (judgment id, label)}``: each judge's newest judgment of one instance
    (judges without one are missing) — one query."""
    cols, params = [], {"r": response_id, "c": constraint_id}
    for k, j in enumerate(judge_ids):
        params[f"j{k}"] = j
        for col in ("id", "label"):
            # ORDER BY +id: SQLite would otherwise walk the judge's whole index (id order) to skip a sort of 1–2 rows
            cols.append(
                f"(SELECT {col} FROM judgment WHERE judge_id = :j{k} AND response_id = :r "
                "AND constraint_id = :c ORDER BY +id DESC LIMIT 1)"
            )
    r = conn.execute(text("SELECT " + ", ".join(cols)), params).one()
    return {
        j: (int(r[2 * k]), None if r[2 * k + 1] is None else int(r[2 * k + 1]))
        for k, j in enumerate(judge_ids)
        if r[2 * k] is not None
    }


def judgment_rows(conn: Connection, *, ids: list[int]) -> dict[int, dict]:
    """``{id: {judge_id, response_id, constraint_id, label}}`` of the given judgments."""
    if not ids:
        return {}
    rows = conn.execute(
        text("SELECT id, judge_id, response_id, constraint_id, label FROM judgment WHERE id IN :ids").bindparams(
            bindparam("ids", expanding=True)
        ),
        {"ids": list(ids)},
    ).all()
    return {int(r[0]): dict(zip(("judge_id", "response_id", "constraint_id", "label"), r[1:])) for r in rows}


_CURRENT = "NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id)"


# Distinct annotators among rows ``d``: accounts by id, outside annotators (no account) by name.
_DISTINCT_ANNOTATORS = "COUNT(DISTINCT d.user_id) + COUNT(DISTINCT CASE WHEN d.user_id IS NULL THEN d.annotator END)"


def decision_state(conn: Connection, *, task_id: int, user_id: int) -> tuple[Optional[dict], int]:
    """The user's current (not superseded) row on a task, retractions included (``id``,
    ``choice``, ``seconds``; None when none), and the number of distinct annotators with a
    current, non-retracted decision on it — one query. Run it after :func:`lock_task` (on
    PostgreSQL a statement's snapshot is taken when it starts, so it must start once the lock
    is held)."""
    mine = (
        "(SELECT d.{col} FROM adjudication d WHERE d.task_id = :t AND d.user_id = :u "
        f"AND {_CURRENT} ORDER BY d.id DESC LIMIT 1)"
    )
    r = conn.execute(
        text(
            f"SELECT {mine.format(col='id')}, {mine.format(col='choice')}, {mine.format(col='seconds')}, "
            f"(SELECT {_DISTINCT_ANNOTATORS} FROM adjudication d WHERE d.task_id = :t AND d.choice <> 'retracted' "
            f"AND {_CURRENT})"
        ),
        {"t": task_id, "u": user_id},
    ).one()
    return (None if r[0] is None else {"id": int(r[0]), "choice": r[1], "seconds": float(r[2])}), int(r[3])


def decision_labels(conn: Connection, *, adjudication_id: int) -> tuple[Optional[int], Optional[int]]:
    """A decision's label and the label of the judgment it stored as judge A's (the agreed label
    on an audit); None where there is none."""
    r = conn.execute(
        text(
            "SELECT d.label, (SELECT j.label FROM judgment j WHERE j.id = d.judgment_a_id) "
            "FROM adjudication d WHERE d.id = :d"
        ),
        {"d": adjudication_id},
    ).first()
    return (None, None) if r is None else tuple(None if v is None else int(v) for v in r)


def insert_adjudication(
    conn: Connection,
    *,
    task_id: int,
    user_id: Optional[int],
    choice: str,
    label: Optional[int],
    note: str,
    seconds: float,
    supersedes_id: Optional[int],
    judgment_a_id: Optional[int] = None,
    judgment_b_id: Optional[int] = None,
    annotator: str = "",
) -> int:
    """Append one adjudication row (``annotator``: an outside annotator's name, ``user_id`` None)."""
    res = conn.execute(
        _dt(
            "INSERT INTO adjudication (task_id, user_id, annotator, choice, label, note, seconds, supersedes_id, "
            "judgment_a_id, judgment_b_id, created_at) "
            "VALUES (:t, :u, :an, :ch, :l, :n, :s, :sup, :ja, :jb, :c) RETURNING id",
            "c",
        ),
        {
            "t": task_id,
            "u": user_id,
            "an": annotator,
            "ch": choice,
            "l": label,
            "n": note,
            "s": float(seconds),
            "sup": supersedes_id,
            "ja": judgment_a_id,
            "jb": judgment_b_id,
            "c": utcnow(),
        },
    )
    return int(res.scalar_one())


def count_decided(conn: Connection, *, task_id: int) -> int:
    """Distinct annotators with a current, non-retracted decision on the task."""
    return int(
        conn.execute(
            text(
                f"SELECT {_DISTINCT_ANNOTATORS} FROM adjudication d WHERE d.task_id = :t AND d.choice <> 'retracted' "
                f"AND {_CURRENT}"
            ),
            {"t": task_id},
        ).scalar_one()
    )


def update_task(conn: Connection, *, task_id: int, **values) -> None:
    """Set columns of one task (``status, claimed_by, lease_until, decided, order_key, required``)."""
    allowed = {"status", "claimed_by", "lease_until", "decided", "order_key", "required"}
    bad = set(values) - allowed
    if bad:
        raise ValueError(f"cannot update task column(s) {sorted(bad)}")
    sets = ", ".join(f"{k} = :{k}" for k in values)
    conn.execute(
        _dt(
            f"UPDATE adjudication_task SET {sets} WHERE id = :id", *(["lease_until"] if "lease_until" in values else [])
        ),
        {**values, "id": task_id},
    )


def max_order_key(conn: Connection, *, plan_id: int) -> float:
    v = conn.execute(text("SELECT MAX(order_key) FROM adjudication_task WHERE plan_id = :p"), {"p": plan_id}).scalar()
    return float(v or 0.0)


def last_decision(conn: Connection, *, user_id: int, plan_id: Optional[int] = None) -> Optional[dict]:
    """The user's most recent current, non-retracted decision (optionally within a plan)."""
    sql = (
        "SELECT d.id, d.task_id FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id "
        "WHERE d.user_id = :u AND d.choice <> 'retracted' "
        "AND NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id)"
    )
    params: dict = {"u": user_id}
    if plan_id is not None:
        sql += " AND t.plan_id = :p"
        params["p"] = plan_id
    r = conn.execute(text(sql + " ORDER BY d.id DESC LIMIT 1"), params).first()
    return None if r is None else dict(r._mapping)


_ITEM_HEAD = [
    "task_id",
    "plan_id",
    "response_id",
    "constraint_id",
    "a_left",
    "lease_until",
    "kind",
    "instruction_text",
    "response_text",
    "a_id",
    "a_label",
    "a_rationale",
    "b_id",
    "b_label",
    "b_rationale",
    "a_name",
    "a_model",
    "a_provider",
    "b_name",
    "b_model",
    "b_provider",
]
_ITEM_CONSTRAINT = ["id", "position", "feature", "mode", "text", "acceptance", "feature_name"]


_NAMES = ", ".join(
    f"(SELECT {col} FROM judge WHERE id = p.{j})"
    for j in ("judge_a_id", "judge_b_id")
    for col in ("name", "model", "provider")
)


def _item_select(dialect: str) -> str:
    """What an annotator sees for the task named by a CTE ``got (id, lease_until)``: one row
    per constraint of the instruction, with the task, the instruction, the response and the
    newest judgment of each judge (columns ``_ITEM_HEAD + _ITEM_CONSTRAINT``); the judges' names,
    models and providers are for the blinding filter, never shown."""
    # ORDER BY +id: SQLite would otherwise walk the judge's whole index (id order) to skip a sort of 1–2 rows
    newest = (
        "SELECT {col} FROM judgment WHERE judge_id = p.{j} AND response_id = t.response_id "
        "AND constraint_id = t.constraint_id ORDER BY +id DESC LIMIT 1"
    )
    if dialect == "postgresql":
        judgments = (
            "ja.id, ja.label, ja.rationale, jb.id, jb.label, jb.rationale",
            f"LEFT JOIN LATERAL ({newest.format(col='id, label, rationale', j='judge_a_id')}) ja ON TRUE "
            f"LEFT JOIN LATERAL ({newest.format(col='id, label, rationale', j='judge_b_id')}) jb ON TRUE ",
        )
    else:
        judgments = (
            ", ".join(
                f"({newest.format(col=col, j=j)})"
                for j in ("judge_a_id", "judge_b_id")
                for col in ("id", "label", "rationale")
            ),
            "",
        )
    return (
        "SELECT t.id, t.plan_id, t.response_id, t.constraint_id, t.a_left, g.lease_until, t.kind, i.text, r.text, "
        f"{judgments[0]}, {_NAMES}, "
        "c.id, c.position, c.feature, c.mode, c.text, c.acceptance, "
        "(SELECT MIN(f.name) FROM catalog_feature f WHERE f.key = c.feature) "
        "FROM got g JOIN adjudication_task t ON t.id = g.id JOIN sample_plan p ON p.id = t.plan_id "
        "JOIN constraint_item ct ON ct.id = t.constraint_id JOIN instruction i ON i.id = ct.instruction_id "
        "JOIN response r ON r.id = t.response_id "
        f"{judgments[1]}"
        "JOIN constraint_item c ON c.instruction_id = ct.instruction_id ORDER BY c.position"
    )


def _item_rows(rows) -> Optional[dict]:
    if not rows:
        return None
    head = dict(zip(_ITEM_HEAD, rows[0][: len(_ITEM_HEAD)]))
    return {
        "task": head,
        "instruction_text": head["instruction_text"],
        "response_text": head["response_text"],
        "constraints": [dict(zip(_ITEM_CONSTRAINT, r[len(_ITEM_HEAD) :])) for r in rows],
        "judgments": {
            s: (head[f"{p}_id"], head[f"{p}_label"], head[f"{p}_rationale"]) for s, p in (("A", "a"), ("B", "b"))
        },
        "judge_names": [head[f"{s}_{k}"] for s in "ab" for k in ("name", "model", "provider")],
    }


def item_content(conn: Connection, *, task_id: int) -> Optional[dict]:
    """What an annotator sees for one task (one query): ``task`` (ids, ``a_left``,
    ``lease_until``, ``kind``), instruction, constraints, response and both judgments (newest
    of each judge: ``{"A"|"B": (judgment id, label, rationale)}`` by the plan's sides). None
    when there is no such task."""
    sql = "WITH got AS (SELECT id, lease_until FROM adjudication_task WHERE id = :t) " + _item_select(conn.dialect.name)
    return _item_rows(conn.execute(text(sql).columns(lease_until=DateTime()), {"t": task_id}).all())


# ----------------------------------------------------------------------------- progress counters
# Kept in the transaction of every change (task creation, decide, undo, import): reading a
# plan's progress costs a few rows per stratum, whatever the plan's size.


def add_stratum_counts(conn: Connection, *, plan_id: int, deltas: dict[str, "list[int] | tuple[int, ...]"]) -> None:
    """Add ``{stratum: (tasks, needed, done, filled)}`` to a plan's stratum counters."""
    rows = [
        {"p": plan_id, "s": s, "t": int(d[0]), "n": int(d[1]), "d": int(d[2]), "f": int(d[3])}
        for s, d in sorted(deltas.items())
        if any(d)
    ]
    if rows:
        conn.execute(
            text(
                "INSERT INTO plan_stratum_count (plan_id, stratum, tasks, needed, done, filled) "
                "VALUES (:p, :s, :t, :n, :d, :f) ON CONFLICT (plan_id, stratum) DO UPDATE SET "
                "tasks = plan_stratum_count.tasks + excluded.tasks, needed = plan_stratum_count.needed + excluded.needed, "
                "done = plan_stratum_count.done + excluded.done, filled = plan_stratum_count.filled + excluded.filled"
            ),
            rows,
        )


def add_annotator_counts(
    conn: Connection, *, plan_id: int, deltas: dict[tuple[int, str, str], "list[float] | tuple[float, float]"]
) -> None:
    """Add ``{(user_id or 0, outside name or '', stratum): (decisions, seconds)}`` to a plan's
    annotator counters."""
    rows = [
        {"p": plan_id, "u": int(u), "a": a, "s": s, "d": int(d[0]), "sec": float(d[1])}
        for (u, a, s), d in sorted(deltas.items())
        if d[0] or d[1]
    ]
    if rows:
        conn.execute(
            text(
                "INSERT INTO plan_annotator_count (plan_id, user_id, annotator, stratum, decided, seconds) "
                "VALUES (:p, :u, :a, :s, :d, :sec) ON CONFLICT (plan_id, user_id, annotator, stratum) DO UPDATE SET "
                "decided = plan_annotator_count.decided + excluded.decided, "
                "seconds = plan_annotator_count.seconds + excluded.seconds"
            ),
            rows,
        )


def count_change(
    conn: Connection,
    *,
    task: dict,
    before: int,
    after: int,
    status_before: str,
    status_after: str,
    annotator: tuple[int, str],
    decisions: int,
    seconds: float,
) -> None:
    """Apply one task's change to the counters: its distinct deciders went ``before`` → ``after``
    and its status ``status_before`` → ``status_after``; ``annotator`` (user id or 0, outside
    name or '') gained ``decisions`` (±1) taking ``seconds``."""
    req = int(task["required"])
    done = int(status_after == "done") - int(status_before == "done")
    filled = min(after, req) - min(before, req)
    add_stratum_counts(conn, plan_id=task["plan_id"], deltas={task["stratum"]: (0, 0, done, filled)})
    add_annotator_counts(
        conn, plan_id=task["plan_id"], deltas={(annotator[0], annotator[1], task["stratum"]): (decisions, seconds)}
    )


def plan_progress(conn: Connection, *, plan_id: int, user_id: int) -> tuple[int, int, int, int, int]:
    """``tasks, done, needed, filled`` of a plan and the user's current decisions in it (one query)."""
    r = conn.execute(
        text(
            "SELECT SUM(tasks), SUM(done), SUM(needed), SUM(filled), "
            "(SELECT SUM(decided) FROM plan_annotator_count WHERE plan_id = :p AND user_id = :u AND annotator = '') "
            "FROM plan_stratum_count WHERE plan_id = :p"
        ),
        {"p": plan_id, "u": user_id},
    ).one()
    return tuple(int(v or 0) for v in r)


def stratum_counts(conn: Connection, *, plan_id: int, user_id: int) -> pd.DataFrame:
    """Per stratum of a plan: ``stratum, tasks, done, mine, seconds`` (the user's decisions and
    their seconds)."""
    res = conn.execute(
        text(
            "SELECT c.stratum, c.tasks, c.done, COALESCE(a.decided, 0) AS mine, COALESCE(a.seconds, 0) AS seconds "
            "FROM plan_stratum_count c LEFT JOIN plan_annotator_count a ON a.plan_id = c.plan_id "
            "AND a.stratum = c.stratum AND a.user_id = :u AND a.annotator = '' WHERE c.plan_id = :p ORDER BY c.stratum"
        ),
        {"p": plan_id, "u": user_id},
    )
    return pd.DataFrame(res.all(), columns=list(res.keys()))


def counter_mismatches(conn: Connection) -> int:
    """Stratum and annotator counters that differ from a recount of tasks and decisions (doctor)."""
    recount_strata = (
        "SELECT plan_id, stratum, COUNT(*) AS tasks, SUM(required) AS needed, "
        "SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END) AS done, "
        "SUM(CASE WHEN decided < required THEN decided ELSE required END) AS filled "
        "FROM adjudication_task GROUP BY plan_id, stratum"
    )
    recount_annotators = (
        "SELECT t.plan_id, COALESCE(d.user_id, 0) AS user_id, "
        "CASE WHEN d.user_id IS NULL THEN d.annotator ELSE '' END AS annotator, t.stratum, COUNT(*) AS decided "
        "FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id "
        f"WHERE d.choice <> 'retracted' AND {_CURRENT} "
        "GROUP BY t.plan_id, COALESCE(d.user_id, 0), CASE WHEN d.user_id IS NULL THEN d.annotator ELSE '' END, t.stratum"
    )
    stored_strata = "SELECT plan_id, stratum, tasks, needed, done, filled FROM plan_stratum_count"
    stored_annotators = (
        "SELECT plan_id, user_id, annotator, stratum, decided FROM plan_annotator_count WHERE decided <> 0"
    )
    bad = 0
    for x, y in (
        (recount_strata, stored_strata),
        (stored_strata, recount_strata),
        (recount_annotators, stored_annotators),
        (stored_annotators, recount_annotators),
    ):
        bad += int(conn.execute(text(f"SELECT COUNT(*) FROM ({x} EXCEPT {y}) z")).scalar_one())
    return bad


def task_counter_mismatches(conn: Connection) -> int:
    """Tasks whose ``decided`` differs from the distinct annotators of their current decisions,
    or whose status disagrees with it (doctor)."""
    return int(
        conn.execute(
            text(
                "SELECT COUNT(*) FROM adjudication_task t WHERE t.decided <> "
                f"(SELECT {_DISTINCT_ANNOTATORS} FROM adjudication d WHERE d.task_id = t.id AND d.choice <> 'retracted' "
                f"AND {_CURRENT}) OR (t.status = 'done') <> (t.decided >= t.required)"
            )
        ).scalar_one()
    )


def undecided_tasks(conn: Connection, *, plan_name: Optional[str] = None) -> list[dict]:
    """The tasks still short of decisions, of one plan (by name) or of every active plan, in
    queue order: ``plan, kind, required`` (distinct annotators still needed = required −
    decided), ``judge_a, judge_b, model, instruction, position``."""
    where = "t.status IN ('open', 'claimed') AND " + ("p.name = :n" if plan_name is not None else "p.active = :a")
    res = conn.execute(
        text(
            "SELECT p.name AS plan, t.kind, t.required - t.decided AS required, ja.name AS judge_a, jb.name AS judge_b, "
            "m.name AS model, i.key AS instruction, c.position FROM adjudication_task t "
            "JOIN sample_plan p ON p.id = t.plan_id JOIN judge ja ON ja.id = p.judge_a_id "
            "JOIN judge jb ON jb.id = p.judge_b_id JOIN response r ON r.id = t.response_id "
            "JOIN eval_model m ON m.id = r.model_id JOIN constraint_item c ON c.id = t.constraint_id "
            f"JOIN instruction i ON i.id = c.instruction_id WHERE {where} ORDER BY p.id, t.order_key, t.id"
        ),
        {"n": plan_name, "a": True},
    )
    return [dict(r._mapping) for r in res]
