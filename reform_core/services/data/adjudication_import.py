"""Decisions made elsewhere (``adjudications.jsonl``) written into sample plans.

Called by the bundle importer (:mod:`reform_core.services.data.importer`) inside its one
transaction, after judges and judgments are written; problems are reported through the
importer's located ``err(row, field, message)`` and the importer rolls everything back.

Rules (issue 15 items 3 and 9, issue 13):

* **Names are text, never accounts.** An ``annotator`` that names an existing *annotator*
  account is that account; any other name is recorded on the decision as an outside
  annotator's name (``adjudication.annotator``, no ``user_id``). An import never creates,
  changes, activates or demotes an account. Refused with a located error: an empty name, the
  built-in principals ``local`` and ``cli`` (any case), and the name of a lead or analyst
  account (decisions are attributed only to annotators).
* **Plans.** A plan that does not exist is created for the decisions (``params.source =
  "import"``), one task per decided instance (``kind`` audit where the judges agree,
  ``required`` 1). A plan drawn by ``plan`` (a *live* plan) takes decisions only on its own
  tasks, and each decision counts towards the task's ``required`` distinct annotators: a
  ``required = 2`` task is done only with two. An import never takes a task away from the
  annotator holding its lease: the lease stays, and that annotator's decision is still
  accepted (as one more) if the import completed the task meanwhile.
* **Idempotent.** A decision identical to the annotator's current one on the task (same
  choice and note) is skipped, so re-importing a file changes nothing; a different one
  supersedes it (a correction, kept in the append-only history).
* The decision stores the judgments it was made on (each judge's newest usable judgment at
  import time) and takes its label from the chosen one; ``neither`` has no label.
* **Audits.** A line on an agreement may give the annotator's own ``verdict`` (``pass`` |
  ``fail``) instead of a ``choice``: a verdict equal to the agreed label is stored as ``A``
  (with that label), one against it as ``neither`` (both judges wrong) — the rows a choice
  among the agreeing judgments made, so estimates are the same for the same answers. A
  verdict where the judges disagree is a located error.
* The plan's progress counters change in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Optional

import pandas as pd
from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from db.models import utcnow
from db.repo import adjudication as repo
from db.repo.data import bulk_insert
from reform_core.frames import stratum_key

RESERVED = ("cli", "local")  # the built-in principals (reform_core.services.accounts.users)
IMPORT_SOURCE = "import"
Err = Callable[[pd.Series, str, str], None]


@dataclass
class _Task:
    id: int
    plan_id: int
    stratum: str
    required: int
    status: str
    claimed_by: Optional[int]
    lease_until: Optional[datetime]
    decided0: int = 0
    status0: str = ""
    kind: str = ""
    response_id: int = 0
    constraint_id: int = 0


def _annotators(conn: Connection, adj: pd.DataFrame, err: Err) -> dict[str, tuple[Optional[int], str]]:
    """Name → (user id, '') for annotator accounts, (None, name) for outside annotators."""
    names = sorted(set(adj["annotator"]))
    rows = (
        conn.execute(
            text("SELECT id, username, role FROM app_user WHERE username IN :n").bindparams(
                bindparam("n", expanding=True)
            ),
            {"n": names},
        ).all()
        if names
        else []
    )
    accounts = {r[1]: (int(r[0]), r[2]) for r in rows}
    out = {}
    for name in names:
        if name in accounts and accounts[name][1] == "annotator":
            out[name] = (accounts[name][0], "")
        else:
            out[name] = (None, name)
    for _, r in adj.iterrows():
        problem = name_problem(r["annotator"], accounts.get(r["annotator"], (None, None))[1], "decided")
        if problem:
            err(r, "annotator", problem)
    return out


def name_problem(name: str, role: Optional[str], verb: str = "decided") -> Optional[str]:
    """Why ``name`` cannot stand for the person behind an imported answer, or None: empty, a
    built-in principal, or the name of a lead or analyst account (``role``: the role of the
    account so named, None if there is none). Imports never create or change an account."""
    if not name.strip():
        return f"must name the person who {verb} (empty)"
    if name.strip().lower() in RESERVED:
        return f"{name!r} is reserved for the app's built-in lead; name the person who {verb}"
    if role is not None and role != "annotator":
        return (
            f"{name!r} is the name of a {role} account: imported answers are attributed only to annotator "
            "accounts or recorded under an outside name"
        )
    return None


def _labels(conn: Connection, judge_ids: list[int], response_id: int, constraint_id: int) -> dict[int, tuple]:
    """``{judge_id: (judgment id, label)}``: each judge's newest usable (``ok``) judgment."""
    out = {}
    for j in judge_ids:
        # ORDER BY +id: SQLite would otherwise walk the judge's whole index (id order) to skip a sort of 1–2 rows
        r = conn.execute(
            text(
                "SELECT id, label FROM judgment WHERE judge_id = :j AND response_id = :r "
                "AND constraint_id = :c AND status = 'ok' ORDER BY +id DESC LIMIT 1"
            ),
            {"j": int(j), "r": response_id, "c": constraint_id},
        ).first()
        out[int(j)] = (None, None) if r is None else (int(r[0]), None if r[1] is None else int(r[1]))
    return out


def _plans(conn: Connection, adj: pd.DataFrame, jid: dict, err: Err) -> dict[str, tuple[int, bool]]:
    """Plan name → (id, live): existing plans checked against the file's judge pair, missing
    ones created (not live)."""
    out = {}
    for (plan, ja, jb), rows in adj.groupby(["plan", "judge_a", "judge_b"], sort=True):
        r = conn.execute(
            text("SELECT id, judge_a_id, judge_b_id, params FROM sample_plan WHERE name = :n"), {"n": plan}
        ).first()
        if r is None:
            bulk_insert(
                conn,
                "sample_plan",
                [
                    {
                        "name": plan,
                        "judge_a_id": int(jid[ja]),
                        "judge_b_id": int(jid[jb]),
                        "params": {"source": IMPORT_SOURCE},
                        "active": True,
                        "created_at": utcnow(),
                    }
                ],
            )
            pid = int(conn.execute(text("SELECT id FROM sample_plan WHERE name = :n"), {"n": plan}).scalar_one())
            out[plan] = (pid, False)
            continue
        if (int(r[1]), int(r[2])) != (int(jid[ja]), int(jid[jb])):
            for _, row in rows.iterrows():
                err(row, "plan", f"plan {plan!r} exists with another judge pair")
            continue
        params = r[3]
        if isinstance(params, str):
            import json

            params = json.loads(params or "{}")
        closed = (params or {}).get("closed")
        if isinstance(closed, dict):
            for _, row in rows.iterrows():
                err(
                    row,
                    "plan",
                    f"plan {plan!r} was closed on {str(closed.get('at', ''))[:10]}: its decisions are "
                    "final and it takes no more (create another plan for more decisions)",
                )
            continue
        out[plan] = (int(r[0]), (params or {}).get("source") != IMPORT_SOURCE)
    return out


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass(frozen=True)
class _Batch:
    """The lines of one import with their task keys, and what they are checked and written with."""

    conn: Connection
    adj: pd.DataFrame
    keys: list  # per line: (plan id, response id, constraint id), the key of its task
    jid: dict  # judge name → id
    err: Err

    def lines(self):
        """Each line (a row of ``adj``) with its task key, in file order."""
        return zip((r for _, r in self.adj.iterrows()), self.keys)

    def labels(self, r: pd.Series, key: tuple) -> tuple[tuple, tuple]:
        """``((judgment id, label), (judgment id, label))`` of the line's judges A and B (:func:`_labels`)."""
        ja, jb = int(self.jid[r["judge_a"]]), int(self.jid[r["judge_b"]])
        lab = _labels(self.conn, [ja, jb], key[1], key[2])
        return lab[ja], lab[jb]


@dataclass
class _Progress:
    """What writing the decisions changed: the tasks touched (locked), the plans' annotator counters, the rows."""

    touched: dict[int, _Task] = field(default_factory=dict)
    annotator_deltas: dict[int, dict[tuple, list[float]]] = field(default_factory=dict)
    written: int = 0

    def count(self, task: _Task, who: tuple, seconds: float, prev: Optional[dict]) -> None:
        """One more decision on ``task`` by ``who``; one that supersedes a current (not retracted) one adds none."""
        user_id, outside = who
        per_plan = self.annotator_deltas.setdefault(task.plan_id, {})
        delta = per_plan.setdefault((user_id or 0, outside, task.stratum), [0, 0.0])
        delta[0] += 1
        delta[1] += seconds
        if prev is not None and prev["choice"] != repo.RETRACTED:
            delta[0] -= 1
            delta[1] -= prev["seconds"]


def write_adjudications(
    conn: Connection, adj: pd.DataFrame, *, jid: dict, rid: dict, cid: dict, inst_q: dict, err: Err
) -> int:
    """Write the decisions of ``adj`` (the ``adjudications`` frame of a bundle, validated
    against judges, responses and constraints); return how many rows were written.

    ``jid``: judge name → id; ``rid``: (model, question, instruction) → response id; ``cid``:
    (instruction, position) → constraint id; ``inst_q``: instruction key → question key.
    """
    who_of = _annotators(conn, adj, err)
    plans = _plans(conn, adj, jid, err)
    if any(p not in plans for p in adj["plan"]):
        return 0
    plan_ids = sorted({pid for pid, _ in plans.values()})
    keys = [
        (
            plans[r.plan][0],
            int(rid[(r.model, inst_q[r.instruction], r.instruction)]),
            int(cid[(r.instruction, r.position)]),
        )
        for r in adj.itertuples()
    ]
    batch = _Batch(conn, adj, keys, jid, err)
    tasks = _load_tasks(conn, plan_ids)
    new_rows = _new_tasks(batch, tasks, plans)
    if new_rows:
        repo.insert_tasks(conn, rows=list(new_rows.values()))
        tasks = _load_tasks(conn, plan_ids)
    if any(k not in tasks for k in keys):
        return 0
    current = _current_decisions(conn, plan_ids)
    progress = _record_decisions(batch, tasks, current, who_of)
    stratum_deltas = _settle_tasks(conn, progress.touched, current, plan_ids)
    for plan_id in sorted(
        set(stratum_deltas) | set(progress.annotator_deltas)
    ):  # counters last (lock order: tasks first)
        repo.add_stratum_counts(conn, plan_id=plan_id, deltas=stratum_deltas.get(plan_id, {}))
        repo.add_annotator_counts(conn, plan_id=plan_id, deltas=progress.annotator_deltas.get(plan_id, {}))
    return progress.written


def _new_tasks(b: _Batch, tasks: dict[tuple, _Task], plans: dict[str, tuple[int, bool]]) -> dict[tuple, dict]:
    """Rows (key → row) of the tasks lines need in import-made plans; none in a live plan is an error."""
    new_rows: dict[tuple, dict] = {}
    for r, key in b.lines():
        if key in tasks or key in new_rows:
            continue
        if plans[r["plan"]][1]:
            b.err(
                r,
                "plan",
                f"plan {r['plan']!r} has no item for model {r['model']!r}, instruction "
                f"{r['instruction']!r}, position {r['position']}: a plan drawn by `plan` takes decisions "
                "only on its own items (`tasks` writes them)",
            )
            continue
        (_, la), (_, lb) = b.labels(r, key)
        agree = la is not None and la == lb
        if agree:
            stratum = f"{r['model']}|audit"
        else:
            cat, mode, cond = b.conn.execute(
                text(
                    "SELECT c.category, c.mode, i.condition FROM constraint_item c JOIN instruction i ON i.id = c.instruction_id "
                    "WHERE c.id = :c"
                ),
                {"c": key[2]},
            ).one()
            stratum = stratum_key(r["model"], "A1B0" if la == 1 else "A0B1", cat, mode, cond or "main")
        new_rows[key] = {
            "plan_id": key[0],
            "response_id": key[1],
            "constraint_id": key[2],
            "stratum": stratum,
            "kind": "audit" if agree else "disagreement",
            "required": 1,
            "decided": 0,
            "status": "open",
            "claimed_by": None,
            "lease_until": None,
            "order_key": 0.0,
            "a_left": "A",
        }
    return new_rows


def _record_decisions(b: _Batch, tasks: dict[tuple, _Task], current: "_Current", who_of: dict) -> _Progress:
    """Write each line's decision (task locked at its first line) unless already the current one."""
    progress = _Progress()
    for r, key in b.lines():
        if r["annotator"] not in who_of:
            continue
        who = who_of[r["annotator"]]
        task = tasks[key]
        if task.id not in progress.touched:
            _lock(b.conn, task, current)
            progress.touched[task.id] = task
        (ida, la), (idb, lb) = b.labels(r, key)
        choice, label = _answer(r, la, lb, b.err)
        if choice is None:
            continue
        prev = current.get((task.id, who))
        note = r["note"] or ""
        if prev is not None and prev["choice"] == choice and prev["note"] == note:
            continue  # already recorded: a re-import changes nothing
        seconds = float(r["seconds"])
        new_id = repo.insert_adjudication(
            b.conn,
            task_id=task.id,
            user_id=who[0],
            annotator=who[1],
            choice=choice,
            label=label,
            note=note,
            seconds=seconds,
            supersedes_id=None if prev is None else prev["id"],
            judgment_a_id=ida,
            judgment_b_id=idb,
        )
        progress.count(task, who, seconds, prev)
        current[(task.id, who)] = {"id": new_id, "choice": choice, "note": note, "seconds": seconds}
        progress.written += 1
    return progress


def _lock(conn: Connection, task: _Task, current: "_Current") -> None:
    """Lock the task's row (PostgreSQL) against a decision made in the app meanwhile; note its state."""
    locked = repo.lock_task(conn, task_id=task.id)
    task.status, task.claimed_by, task.lease_until = locked["status"], locked["claimed_by"], locked["lease_until"]
    task.decided0 = current.decided(task.id)
    task.status0 = task.status


def _settle_tasks(
    conn: Connection, touched: dict[int, _Task], current: "_Current", plan_ids: list[int]
) -> dict[int, dict[str, list[int]]]:
    """Update each touched task (required, decided, status, lease); return the stratum counter deltas."""
    stratum_deltas: dict[int, dict[str, list[int]]] = {}
    now = _now()
    params_of = {pid: repo.plan_params(conn, plan_id=pid) for pid in plan_ids}
    for task in touched.values():
        decided = current.decided(task.id)
        required0 = task.required
        need = _second_opinion(conn, task, params_of[task.plan_id])
        if need is not None and need > task.required:  # the opinions so far ask for another (design rule)
            repo.update_task(conn, task_id=task.id, required=need)
            stratum_deltas.setdefault(task.plan_id, {}).setdefault(task.stratum, [0, 0, 0, 0])[1] += (
                need - task.required
            )
            task.required = need
        status, claimed_by, lease_until = _next_state(task, decided >= task.required, now)
        repo.update_task(
            conn, task_id=task.id, decided=decided, status=status, claimed_by=claimed_by, lease_until=lease_until
        )
        d = stratum_deltas.setdefault(task.plan_id, {}).setdefault(task.stratum, [0, 0, 0, 0])
        d[2] += int(status == "done") - int(task.status0 == "done")
        d[3] += min(decided, task.required) - min(task.decided0, required0)
    return stratum_deltas


def _next_state(task: _Task, done: bool, now: datetime) -> tuple[str, Optional[int], Optional[datetime]]:
    """A task's ``(status, claimed_by, lease_until)`` after the import; a live lease is kept, even if done."""
    lease = task.lease_until
    if isinstance(lease, str):
        lease = datetime.fromisoformat(lease)
    live = task.claimed_by is not None and lease is not None and lease.replace(tzinfo=None) >= now
    if done:
        return "done", task.claimed_by if live else None, lease if live else None
    if task.status == "claimed":
        return "claimed", task.claimed_by, lease
    return "open", None, None


def _answer(r: pd.Series, la: Optional[int], lb: Optional[int], err: Err) -> tuple[Optional[str], Optional[int]]:
    """The stored ``(choice, label)`` of one line given the judges' labels ``la``, ``lb``: its
    ``choice`` with the chosen judgment's label, or its audit ``verdict`` stored as the same
    choices would be (:func:`reform_core.verdicts.verdict_choice`); ``(None, None)``
    after a located error."""
    from reform_core.verdicts import verdict_choice

    verdict = r.get("verdict") or None
    if verdict is not None:
        if la is None or la != lb:
            err(
                r,
                "verdict",
                "a verdict answers an audit of an agreement, but the judges do not agree on this "
                "instance: give choice (A | B | neither)",
            )
            return None, None
        return verdict_choice(str(verdict), la)
    if r["choice"] == "neither":
        return "neither", None
    label = la if r["choice"] == "A" else lb
    if label is None:
        err(r, "choice", f"judge {r['judge_' + r['choice'].lower()]!r} has no label for this instance")
        return None, None
    return str(r["choice"]), label


def _second_opinion(conn: Connection, task: _Task, params: dict) -> Optional[int]:
    """Annotators the plan's second-opinion rule asks of the task after the import
    (:func:`reform_core.estimators.design.required_annotators` on its decisions so far, in the
    order they were made); None for plans without the rule."""
    if not isinstance(params, dict) or not params.get("second_opinion"):
        return None
    from reform_core.estimators.design import required_annotators
    from reform_core.services.data.instances import instance_id

    return required_annotators(
        params, task.kind, int(instance_id(task.response_id, task.constraint_id)), repo.choices(conn, task_id=task.id)
    )


def _load_tasks(conn: Connection, plan_ids: list[int]) -> dict[tuple, _Task]:
    rows = (
        conn.execute(
            text(
                "SELECT id, plan_id, response_id, constraint_id, stratum, required, status, claimed_by, lease_until, kind "
                "FROM adjudication_task WHERE plan_id IN :p"
            ).bindparams(bindparam("p", expanding=True)),
            {"p": plan_ids},
        ).all()
        if plan_ids
        else []
    )
    return {
        (int(r[1]), int(r[2]), int(r[3])): _Task(
            int(r[0]),
            int(r[1]),
            r[4],
            int(r[5]),
            r[6],
            r[7],
            r[8],
            kind=r[9],
            response_id=int(r[2]),
            constraint_id=int(r[3]),
        )
        for r in rows
    }


def _current_decisions(conn: Connection, plan_ids: list[int]) -> "_Current":
    """``{(task id, (user id or None, outside name)): row}``: each annotator's current row
    (retractions included) on the tasks of the plans."""
    rows = (
        conn.execute(
            text(
                "SELECT d.id, d.task_id, d.user_id, d.annotator, d.choice, d.note, d.seconds FROM adjudication d "
                "JOIN adjudication_task t ON t.id = d.task_id WHERE t.plan_id IN :p AND NOT EXISTS "
                "(SELECT 1 FROM adjudication s WHERE s.task_id = d.task_id AND s.supersedes_id = d.id) ORDER BY d.id"
            ).bindparams(bindparam("p", expanding=True)),
            {"p": plan_ids},
        ).all()
        if plan_ids
        else []
    )
    out = {}
    for r in rows:
        who = (None if r[2] is None else int(r[2]), "" if r[2] is not None else r[3])
        out[(int(r[1]), who)] = {"id": int(r[0]), "choice": r[4], "note": r[5] or "", "seconds": float(r[6])}
    return _Current(out)


class _Current(dict):
    """``{(task id, who): current row}`` that also counts each task's distinct annotators with a
    current, non-retracted decision (``decided``)."""

    def __init__(self, rows: dict):
        super().__init__()
        self._deciders: dict[int, set] = {}
        for key, row in rows.items():
            self[key] = row

    def __setitem__(self, key, row) -> None:
        super().__setitem__(key, row)
        deciders = self._deciders.setdefault(key[0], set())
        if row["choice"] == repo.RETRACTED:
            deciders.discard(key[1])
        else:
            deciders.add(key[1])

    def decided(self, task_id: int) -> int:
        return len(self._deciders.get(task_id, ()))
