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
``reform_core.services.adjudication.undo_last``).
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
    rows = conn.execute(text("SELECT name, id FROM judge WHERE name IN :n").bindparams(bindparam("n", expanding=True)),
                        {"n": list(names)}).all()
    return {r[0]: int(r[1]) for r in rows}


def judge_names(conn: Connection) -> list[str]:
    return [r[0] for r in conn.execute(text("SELECT name FROM judge ORDER BY name")).all()]


def ensure_user(conn: Connection, *, username: str, role: str) -> int:
    """Id of user ``username``, created with ``role`` if missing."""
    uid = conn.execute(text("SELECT id FROM app_user WHERE username = :u"), {"u": username}).scalar()
    if uid is None:
        conn.execute(
            text("INSERT INTO app_user (username, display_name, role, password_hash, active, created_at) "
                 "VALUES (:u, :u, :r, '', :a, :c)").bindparams(bindparam("c", type_=DateTime())),
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


def judgment_labels(conn: Connection, *, judge_id: int) -> np.ndarray:
    """``response_id, constraint_id, id, label`` of every judgment of a judge, as a float
    array (label NaN when errored / abstained). Several prompt versions give several rows."""
    rows = _driver_rows(conn, "SELECT response_id, constraint_id, id, label FROM judgment WHERE judge_id = :j",
                        {"j": judge_id})
    return np.array(rows, dtype=float).reshape(-1, 4)


def instance_keys(conn: Connection) -> dict[str, pd.DataFrame]:
    """The lookup tables the judgment rows are decorated with (one small query each)."""
    q = {
        "responses": ("SELECT id, model_id FROM response", ["id", "model_id"]),
        "models": ("SELECT id, name FROM eval_model", ["id", "name"]),
        "constraints": ("SELECT id, instruction_id, position, feature, category, mode FROM constraint_item",
                        ["id", "instruction_id", "position", "feature", "category", "mode"]),
        "instructions": ("SELECT id, key, question_id, condition, pair_group FROM instruction",
                         ["id", "key", "question_id", "condition", "pair_group"]),
        "questions": ("SELECT id, key, task_type, domain FROM question", ["id", "key", "task_type", "domain"]),
        "baseline": ("SELECT r.model_id, r.question_id, f.feature FROM baseline_feature f "
                     "JOIN response r ON r.id = f.response_id WHERE f.present = :t AND r.variant = ''",
                     ["model_id", "question_id", "feature"]),
    }
    return {k: _frame(conn, sql, cols, {"t": True}) for k, (sql, cols) in q.items()}


ADJ_COLUMNS = ["id", "task_id", "user_id", "annotator", "choice", "label", "note", "seconds", "supersedes_id",
               "created_at", "plan_id", "response_id", "constraint_id", "kind", "judge_a_id", "judge_b_id"]


def adjudication_rows(conn: Connection, *, judge_a_id: Optional[int] = None, judge_b_id: Optional[int] = None,
                      plan_id: Optional[int] = None) -> pd.DataFrame:
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
        "SELECT d.id, d.task_id, d.user_id, u.username, d.choice, d.label, d.note, d.seconds, d.supersedes_id, "
        "d.created_at, t.plan_id, t.response_id, t.constraint_id, t.kind, p.judge_a_id, p.judge_b_id "
        "FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id "
        "JOIN sample_plan p ON p.id = t.plan_id LEFT JOIN app_user u ON u.id = d.user_id"
        + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY d.id"
    )
    res = conn.execute(text(sql), params)
    return pd.DataFrame(res.all(), columns=ADJ_COLUMNS)


# ----------------------------------------------------------------------------- plans


def insert_plan(conn: Connection, *, name: str, judge_a_id: int, judge_b_id: int, params: dict,
                created_by: Optional[int]) -> int:
    from db.repo.data import bulk_insert

    if conn.execute(text("SELECT 1 FROM sample_plan WHERE name = :n"), {"n": name}).first():
        raise ValueError(f"a sample plan named {name!r} already exists; choose another name")
    bulk_insert(conn, "sample_plan", [{"name": name, "judge_a_id": judge_a_id, "judge_b_id": judge_b_id,
                                       "params": params, "active": True, "created_at": utcnow(),
                                       "created_by": created_by}])
    return int(conn.execute(text("SELECT id FROM sample_plan WHERE name = :n"), {"n": name}).scalar_one())


def insert_tasks(conn: Connection, *, rows: list[dict]) -> None:
    """Insert tasks; on PostgreSQL refresh the planner statistics so the queue's claim query
    uses its index at once (a fresh bulk load otherwise gets sequential scans + sorts)."""
    from db.repo.data import bulk_insert

    bulk_insert(conn, "adjudication_task", rows)
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("ANALYZE adjudication_task")


def plan_names(conn: Connection) -> list[str]:
    return [r[0] for r in conn.execute(text("SELECT name FROM sample_plan")).all()]


def plans(conn: Connection) -> pd.DataFrame:
    """Every plan with its judges and task counts."""
    res = conn.execute(text(
        "SELECT p.id, p.name, ja.name AS judge_a, jb.name AS judge_b, p.active, p.created_at, "
        "COUNT(t.id) AS tasks, SUM(CASE WHEN t.status = 'done' THEN 1 ELSE 0 END) AS done "
        "FROM sample_plan p JOIN judge ja ON ja.id = p.judge_a_id JOIN judge jb ON jb.id = p.judge_b_id "
        "LEFT JOIN adjudication_task t ON t.plan_id = p.id "
        "GROUP BY p.id, p.name, ja.name, jb.name, p.active, p.created_at ORDER BY p.id"))
    df = pd.DataFrame(res.all(), columns=list(res.keys()))
    df["done"] = df["done"].fillna(0).astype(int)
    return df


def plan_row(conn: Connection, *, plan_id: int) -> Optional[dict]:
    r = conn.execute(text(
        "SELECT p.id, p.name, p.judge_a_id, p.judge_b_id, ja.name, jb.name, p.params FROM sample_plan p "
        "JOIN judge ja ON ja.id = p.judge_a_id JOIN judge jb ON jb.id = p.judge_b_id WHERE p.id = :p"),
        {"p": plan_id}).first()
    if r is None:
        return None
    out = dict(zip(["id", "name", "judge_a_id", "judge_b_id", "judge_a", "judge_b", "params"], r))
    if isinstance(out["params"], str):  # SQLite hands JSON back as text through text()
        out["params"] = json.loads(out["params"])
    return out


def plan_tasks(conn: Connection, *, plan_id: int) -> pd.DataFrame:
    res = conn.execute(text(
        "SELECT id, response_id, constraint_id, stratum, kind, required, decided, status, claimed_by, a_left "
        "FROM adjudication_task WHERE plan_id = :p ORDER BY id"), {"p": plan_id})
    return pd.DataFrame(res.all(), columns=list(res.keys()))


# ----------------------------------------------------------------------------- the queue

_NOT_DECIDED_BY_USER = (
    "NOT EXISTS (SELECT 1 FROM adjudication d WHERE d.task_id = t.id AND d.user_id = :u "
    "AND d.choice <> 'retracted' AND NOT EXISTS "
    "(SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id))"
)


def held_task(conn: Connection, *, plan_id: int, user_id: int, now: datetime) -> Optional[int]:
    """The task of ``plan_id`` on which ``user_id`` holds a live lease, if any."""
    return conn.execute(_dt(
        "SELECT t.id FROM adjudication_task t WHERE t.plan_id = :p AND t.status = 'claimed' "
        "AND t.claimed_by = :u AND t.lease_until >= :now ORDER BY t.order_key LIMIT 1", "now"),
        {"p": plan_id, "u": user_id, "now": now}).scalar()


def claim(conn: Connection, *, plan_id: int, user_id: int, now: datetime, lease_until: datetime) -> Optional[int]:
    """Atomically claim the first free task (open, or claimed with an expired lease) that
    ``user_id`` has not decided; returns its id or None when nothing is left.

    SQLite: one ``UPDATE … WHERE id = (SELECT … LIMIT 1) RETURNING id`` inside the
    ``BEGIN IMMEDIATE`` transaction. PostgreSQL: ``SELECT … FOR UPDATE SKIP LOCKED`` then
    ``UPDATE`` in the same transaction, so concurrent claimers skip each other's rows.
    """
    params = {"p": plan_id, "u": user_id, "now": now, "lease": lease_until}
    free_open = ("SELECT t.id, t.order_key FROM adjudication_task t WHERE t.plan_id = :p AND t.status = 'open' "
                 f"AND {_NOT_DECIDED_BY_USER} ORDER BY t.order_key LIMIT 1")
    free_expired = ("SELECT t.id, t.order_key FROM adjudication_task t WHERE t.plan_id = :p AND t.status = 'claimed' "
                    f"AND t.lease_until < :now AND {_NOT_DECIDED_BY_USER} ORDER BY t.order_key LIMIT 1")
    set_claim = "SET status = 'claimed', claimed_by = :u, lease_until = :lease"
    if conn.dialect.name == "postgresql":
        for pick in (free_expired, free_open):
            sql = (f"WITH pick AS ({pick} FOR UPDATE SKIP LOCKED) UPDATE adjudication_task {set_claim} "
                   "FROM pick WHERE adjudication_task.id = pick.id RETURNING adjudication_task.id")
            tid = conn.execute(_dt(sql, "now", "lease"), params).scalar()
            if tid is not None:
                return int(tid)
        return None
    sql = (f"UPDATE adjudication_task {set_claim} WHERE id = (SELECT id FROM ("
           f"SELECT * FROM ({free_expired}) UNION ALL SELECT * FROM ({free_open})) ORDER BY order_key LIMIT 1) "
           "RETURNING id")
    tid = conn.execute(_dt(sql, "now", "lease"), params).scalar()
    return None if tid is None else int(tid)


def lock_task(conn: Connection, *, task_id: int) -> Optional[dict]:
    """The task row (locked ``FOR UPDATE`` on PostgreSQL) with its plan's judges."""
    sql = ("SELECT t.id, t.plan_id, t.response_id, t.constraint_id, t.stratum, t.kind, t.required, t.decided, "
           "t.status, t.claimed_by, t.lease_until, t.a_left, t.order_key, p.judge_a_id, p.judge_b_id "
           "FROM adjudication_task t JOIN sample_plan p ON p.id = t.plan_id WHERE t.id = :t")
    if conn.dialect.name == "postgresql":
        sql += " FOR UPDATE OF t"
    r = conn.execute(text(sql).columns(lease_until=DateTime()), {"t": task_id}).first()
    if r is None:
        return None
    return dict(r._mapping)


def current_decision(conn: Connection, *, task_id: int, user_id: int) -> Optional[dict]:
    """The user's current (not superseded) row on a task, retractions included."""
    r = conn.execute(text(
        "SELECT d.id, d.choice, d.label FROM adjudication d WHERE d.task_id = :t AND d.user_id = :u "
        "AND NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id) "
        "ORDER BY d.id DESC LIMIT 1"), {"t": task_id, "u": user_id}).first()
    return None if r is None else dict(r._mapping)


def judge_label(conn: Connection, *, judge_id: int, response_id: int, constraint_id: int) -> Optional[int]:
    v = conn.execute(text(
        "SELECT label FROM judgment WHERE judge_id = :j AND response_id = :r AND constraint_id = :c "
        "ORDER BY id DESC LIMIT 1"), {"j": judge_id, "r": response_id, "c": constraint_id}).first()
    return None if v is None or v[0] is None else int(v[0])


def insert_adjudication(conn: Connection, *, task_id: int, user_id: int, choice: str, label: Optional[int],
                        note: str, seconds: float, supersedes_id: Optional[int]) -> int:
    res = conn.execute(_dt(
        "INSERT INTO adjudication (task_id, user_id, choice, label, note, seconds, supersedes_id, created_at) "
        "VALUES (:t, :u, :ch, :l, :n, :s, :sup, :c) RETURNING id", "c"),
        {"t": task_id, "u": user_id, "ch": choice, "l": label, "n": note, "s": float(seconds),
         "sup": supersedes_id, "c": utcnow()})
    return int(res.scalar_one())


def count_decided(conn: Connection, *, task_id: int) -> int:
    """Distinct users with a current, non-retracted decision on the task."""
    return int(conn.execute(text(
        "SELECT COUNT(DISTINCT d.user_id) FROM adjudication d WHERE d.task_id = :t AND d.choice <> 'retracted' "
        "AND NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id)"),
        {"t": task_id}).scalar_one())


def update_task(conn: Connection, *, task_id: int, **values) -> None:
    """Set columns of one task (``status, claimed_by, lease_until, decided, order_key``)."""
    allowed = {"status", "claimed_by", "lease_until", "decided", "order_key"}
    bad = set(values) - allowed
    if bad:
        raise ValueError(f"cannot update task column(s) {sorted(bad)}")
    sets = ", ".join(f"{k} = :{k}" for k in values)
    conn.execute(_dt(f"UPDATE adjudication_task SET {sets} WHERE id = :id", *(["lease_until"] if "lease_until" in values else [])),
                 {**values, "id": task_id})


def max_order_key(conn: Connection, *, plan_id: int) -> float:
    v = conn.execute(text("SELECT MAX(order_key) FROM adjudication_task WHERE plan_id = :p"), {"p": plan_id}).scalar()
    return float(v or 0.0)


def last_decision(conn: Connection, *, user_id: int, plan_id: Optional[int] = None) -> Optional[dict]:
    """The user's most recent current, non-retracted decision (optionally within a plan)."""
    sql = ("SELECT d.id, d.task_id FROM adjudication d JOIN adjudication_task t ON t.id = d.task_id "
           "WHERE d.user_id = :u AND d.choice <> 'retracted' "
           "AND NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id)")
    params: dict = {"u": user_id}
    if plan_id is not None:
        sql += " AND t.plan_id = :p"
        params["p"] = plan_id
    r = conn.execute(text(sql + " ORDER BY d.id DESC LIMIT 1"), params).first()
    return None if r is None else dict(r._mapping)


def item_content(conn: Connection, *, task_id: int) -> dict:
    """What an annotator sees for one task (two queries): instruction, constraints, response
    and both judgments (newest of each judge)."""
    newest = ("(SELECT label, rationale FROM judgment WHERE judge_id = p.{j} AND response_id = t.response_id "
              "AND constraint_id = t.constraint_id ORDER BY id DESC LIMIT 1)")
    head = conn.execute(text(
        "SELECT t.id, t.plan_id, t.response_id, t.constraint_id, t.a_left, t.lease_until, t.kind, "
        "i.text AS instruction_text, r.text AS response_text, c.instruction_id, "
        "ja.label AS a_label, ja.rationale AS a_rationale, jb.label AS b_label, jb.rationale AS b_rationale "
        "FROM adjudication_task t JOIN sample_plan p ON p.id = t.plan_id "
        "JOIN constraint_item c ON c.id = t.constraint_id JOIN instruction i ON i.id = c.instruction_id "
        "JOIN response r ON r.id = t.response_id "
        f"LEFT JOIN LATERAL {newest.format(j='judge_a_id')} ja ON TRUE "
        f"LEFT JOIN LATERAL {newest.format(j='judge_b_id')} jb ON TRUE WHERE t.id = :t"
        if conn.dialect.name == "postgresql" else
        "SELECT t.id, t.plan_id, t.response_id, t.constraint_id, t.a_left, t.lease_until, t.kind, "
        "i.text AS instruction_text, r.text AS response_text, c.instruction_id, "
        "(SELECT label FROM judgment WHERE judge_id = p.judge_a_id AND response_id = t.response_id "
        "AND constraint_id = t.constraint_id ORDER BY id DESC LIMIT 1) AS a_label, "
        "(SELECT rationale FROM judgment WHERE judge_id = p.judge_a_id AND response_id = t.response_id "
        "AND constraint_id = t.constraint_id ORDER BY id DESC LIMIT 1) AS a_rationale, "
        "(SELECT label FROM judgment WHERE judge_id = p.judge_b_id AND response_id = t.response_id "
        "AND constraint_id = t.constraint_id ORDER BY id DESC LIMIT 1) AS b_label, "
        "(SELECT rationale FROM judgment WHERE judge_id = p.judge_b_id AND response_id = t.response_id "
        "AND constraint_id = t.constraint_id ORDER BY id DESC LIMIT 1) AS b_rationale "
        "FROM adjudication_task t JOIN sample_plan p ON p.id = t.plan_id "
        "JOIN constraint_item c ON c.id = t.constraint_id JOIN instruction i ON i.id = c.instruction_id "
        "JOIN response r ON r.id = t.response_id WHERE t.id = :t"
    ).columns(lease_until=DateTime()), {"t": task_id}).mappings().first()
    cons = conn.execute(text(
        "SELECT c.id, c.position, c.feature, c.mode, c.text, c.acceptance, "
        "(SELECT MIN(f.name) FROM catalog_feature f WHERE f.key = c.feature) AS feature_name "
        "FROM constraint_item c WHERE c.instruction_id = :i ORDER BY c.position"),
        {"i": head["instruction_id"]}).mappings().all()
    return {
        "task": dict(head),
        "instruction_text": head["instruction_text"],
        "response_text": head["response_text"],
        "constraints": [dict(c) for c in cons],
        "judgments": {"A": (head["a_label"], head["a_rationale"]), "B": (head["b_label"], head["b_rationale"])},
    }


def user_decisions(conn: Connection, *, plan_id: int, user_id: int) -> pd.DataFrame:
    """The user's current, non-retracted decisions in a plan (seconds, created_at, stratum)."""
    res = conn.execute(text(
        "SELECT d.id, d.seconds, d.created_at, t.stratum FROM adjudication d "
        "JOIN adjudication_task t ON t.id = d.task_id WHERE t.plan_id = :p AND d.user_id = :u "
        "AND d.choice <> 'retracted' "
        "AND NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id) "
        "ORDER BY d.id"), {"p": plan_id, "u": user_id})
    return pd.DataFrame(res.all(), columns=list(res.keys()))
