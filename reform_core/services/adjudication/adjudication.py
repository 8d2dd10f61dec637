"""Adjudication use cases: sample plans, the multi-annotator queue, live calibration.

Plans (docs/metrics.md#adjudication; the ReFormBench paper, section 3.5 and appendix A.3.1). For a judge pair the disagreements are
stratified by evaluated model × direction × feature category × mode; each model's sample
size follows Cochran's formula with finite-population correction; it is allocated across
the model's strata and drawn with a seeded generator (:mod:`reform_core.sampling`). A plan
is stored as one ``sample_plan`` row (``params``: every parameter, the seed, and the
population / planned sizes per model and stratum) plus one ``adjudication_task`` per item.

Queue. :func:`claim_next` hands out an item nobody else holds through an atomic claim
with an expiring lease (SQLite: one ``UPDATE … RETURNING`` under ``BEGIN IMMEDIATE``;
PostgreSQL: ``FOR UPDATE SKIP LOCKED``). :func:`decide` appends an ``adjudication`` row for
the signed-in principal; a task is done when ``required`` distinct annotators decided it.

Append-only history and undo. Rows are never updated or deleted. The *current* decision
of a user on a task is their latest row that no other row supersedes. :func:`undo_last`
appends a ``choice = 'retracted'`` row superseding the user's last decision, so the history
keeps both the decision and its withdrawal (who, when) while every reader simply skips
retracted rows; the task goes back to the user under a fresh lease so the page can show it
again, and a new decision supersedes the retraction. (Re-opening the task while merely
marking the old row superseded by the *next* decision would leave the withdrawn decision
current until then, so scores would count a decision the annotator took back.)

Blinding. Items returned to annotators carry the instruction, the constraints, the
response and the two judgments as "Judge A" (left) / "Judge B" (right) in the task's stored
random order — never judge names, the evaluated model or the stratum key.

Live calibration. :class:`LiveScores` keeps the instances, the per-model scoring index
(:func:`reform_core.unit_index.build_index`) and the calibrated ``p``; a new decision
updates ``p`` of that instance and of its stratum's unreviewed instances, then rescores only
the affected model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Iterable, NamedTuple, Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import adjudication as repo
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.data.instances import instance_id, load_adjudications, load_instances
from reform_core.verdicts import VERDICTS, verdict_choice, verdict_of

CHOICES = ("A", "B", "neither")
PLAN_ACTION = "plan_sampling"  # lead only (no role but "lead" lists it)
SUMMARY_ACTION = "view_scores"
ADJUDICATE_ACTION = "adjudicate"
DEFAULT_LEASE_SECONDS = 600
MAX_OPINIONS = 3  # the most decisions a plan's second-opinion rule asks of a task (design.required_annotators)


class AdjudicationRefused(ValueError):
    """A queue action that is not allowed in the task's current state (message says why)."""


def _now() -> datetime:
    """Naive UTC (how lease times are stored)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _naive(value) -> Optional[datetime]:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=None) if value.tzinfo else value


# ============================================================================= plans


# The statistical modules (scipy via sampling) load lazily: an annotator process that only
# claims and decides starts in half the time.


def _check_params(confidence: float, p: float, margin: float, seed: int, audit: int, overlap_fraction: float) -> None:
    from reform_core import sampling

    sampling.cochran_size(1, confidence=confidence, p=p, margin=margin)  # validates the three
    for name, value in (("seed", seed), ("audit", audit)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if not 0.0 <= float(overlap_fraction) <= 1.0:
        raise ValueError(f"overlap_fraction must lie in [0, 1], got {overlap_fraction!r}")


def _disagreements(instances: pd.DataFrame) -> pd.DataFrame:
    from reform_core import sampling

    return sampling.disagreements(instances, judge_a=instances.attrs["judge_a"], judge_b=instances.attrs["judge_b"])


def model_sizes(strata: pd.DataFrame) -> pd.DataFrame:
    """Per model: disagreements (N), planned (n) and number of strata of a stratum plan."""
    if strata.empty:
        return pd.DataFrame({"model": [], "disagreements": [], "planned": [], "strata": []})
    return (
        strata.groupby("model", sort=True)
        .agg(disagreements=("size", "sum"), planned=("planned", "sum"), strata=("stratum", "size"))
        .reset_index()
    )


def preview_plan(
    engine: Engine,
    principal: Principal,
    *,
    judge_a: str,
    judge_b: str,
    confidence: float = 0.95,
    p: float = 0.5,
    margin: float = 0.03,
) -> pd.DataFrame:
    """The per-stratum plan (``sampling.plan``) a :func:`create_plan` call would store; writes nothing."""
    from reform_core import sampling

    require(principal, PLAN_ACTION)
    _check_params(confidence, p, margin, 0, 0, 0.0)
    return sampling.plan(
        _disagreements(load_instances(engine, judge_a, judge_b)), confidence=confidence, p=p, margin=margin
    )


@dataclass(frozen=True)
class PlanCreated:
    plan_id: int
    name: str
    models: pd.DataFrame  # model, disagreements, planned, strata
    tasks: int


def create_plan(
    engine: Engine,
    principal: Principal,
    *,
    judge_a: str,
    judge_b: str,
    confidence: float = 0.95,
    p: float = 0.5,
    margin: float = 0.03,
    seed: int = 0,
    audit: int = 0,
    overlap_fraction: float = 0.0,
    name: Optional[str] = None,
) -> PlanCreated:
    """Draw and store a sample plan for a judge pair (docs/metrics.md#sample-size, #allocation).

    Parameters
    ----------
    judge_a, judge_b : str
        The judge pair; direction ``A1B0`` means ``judge_a`` passes and ``judge_b`` fails.
    confidence, p, margin : float
        Cochran parameters, applied per evaluated model with N = its disagreements.
    seed : int
        Seed of the one ``numpy.random.Generator`` behind the draw, the audit sample, the
        double-adjudication flags, the queue order and the left/right order of the judges.
    audit : int
        Size of an extra random sample of judge *agreements* (``kind = 'audit'``), spread
        over models in proportion to their agreements.
    overlap_fraction : float
        Share of items that two distinct annotators must decide (``required = 2``).
    name : str, optional
        Unique plan name (default ``"<A> vs <B> #k"``).
    """
    actor = require(principal, PLAN_ACTION)
    _check_params(confidence, p, margin, seed, audit, overlap_fraction)
    inst = load_instances(engine, judge_a, judge_b)
    strata, sample, order_key, a_left = _draw_plan(
        inst, judge_a, judge_b, confidence, p, margin, seed, audit, overlap_fraction
    )
    sizes = model_sizes(strata)
    params = {
        "judge_a": judge_a,
        "judge_b": judge_b,
        "confidence": confidence,
        "p": p,
        "margin": margin,
        "seed": int(seed),
        "audit": int(audit),
        "overlap_fraction": float(overlap_fraction),
        **_plan_sizes(sizes, strata),
    }
    with repo.write_tx(engine) as conn:
        plan_id, name = insert_named_plan(conn, judge_a, judge_b, name, params, actor.user_id)
        repo.insert_tasks(conn, rows=_task_rows(plan_id, inst, sample, order_key, a_left))
    return PlanCreated(plan_id=plan_id, name=name, models=sizes, tasks=len(sample))


class _DrawnPlan(NamedTuple):
    """A plan's stratum sizes, its drawn items and each item's queue order key and left/right order."""

    strata: pd.DataFrame
    sample: pd.DataFrame
    order_key: np.ndarray
    a_left: np.ndarray


def _draw_plan(
    inst: pd.DataFrame,
    judge_a: str,
    judge_b: str,
    confidence: float,
    p: float,
    margin: float,
    seed: int,
    audit: int,
    overlap_fraction: float,
) -> _DrawnPlan:
    """Plan the strata and make every draw of a plan from one generator seeded ``seed``, in a fixed order."""
    from reform_core import sampling

    dis = _disagreements(inst)
    if dis.empty:
        raise ValueError(f"judges {judge_a!r} and {judge_b!r} disagree on no instance: nothing to sample")
    strata = sampling.plan(dis, confidence=confidence, p=p, margin=margin)
    rng = np.random.default_rng(seed)
    sample = sampling.draw(dis, strata, rng=rng)[["iid", "stratum"]].assign(kind="disagreement")
    if audit:
        sample = _with_audit(sample, inst, int(audit), rng)
    sample = sampling.double_adjudication(sample, float(overlap_fraction), rng)
    order_key = rng.random(len(sample))
    a_left = np.where(rng.random(len(sample)) < 0.5, "A", "B")
    return _DrawnPlan(strata, sample, order_key, a_left)


def _with_audit(sample: pd.DataFrame, inst: pd.DataFrame, audit: int, rng: np.random.Generator) -> pd.DataFrame:
    """Append an audit sample of ``audit`` judge agreements (stratum ``"<model>|audit"``) to ``sample``."""
    from reform_core import sampling

    la, lb = inst.attrs["judge_a"], inst.attrs["judge_b"]
    agreed = inst[inst[la].notna() & (inst[la] == inst[lb])][["iid", "model"]]
    extra = sampling.audit_sample(agreed, audit, rng)
    return pd.concat(
        [
            sample,
            extra.assign(stratum=extra["model"].astype(str) + "|audit", kind="audit")[["iid", "stratum", "kind"]],
        ],
        ignore_index=True,
    )


def _plan_sizes(sizes: pd.DataFrame, strata: pd.DataFrame) -> dict:
    """The ``models`` and ``strata`` entries of a plan's ``params``: population and planned sizes."""
    return {
        "models": {
            r.model: {"disagreements": int(r.disagreements), "planned": int(r.planned), "strata": int(r.strata)}
            for r in sizes.itertuples()
        },
        "strata": {r.stratum: {"size": int(r.size), "planned": int(r.planned)} for r in strata.itertuples()},
    }


def _task_rows(
    plan_id: int, inst: pd.DataFrame, sample: pd.DataFrame, order_key: np.ndarray, a_left: np.ndarray
) -> list[dict]:
    """The ``adjudication_task`` rows of a plan's drawn items, all open and undecided."""
    row = pd.Index(inst["iid"]).get_indexer(sample["iid"])
    return [
        {
            "plan_id": plan_id,
            "response_id": int(inst["response_id"].iat[r]),
            "constraint_id": int(inst["constraint_id"].iat[r]),
            "stratum": st,
            "kind": kind,
            "required": 2 if double else 1,
            "decided": 0,
            "status": "open",
            "claimed_by": None,
            "lease_until": None,
            "order_key": float(ok),
            "a_left": str(left),
        }
        for r, st, kind, double, ok, left in zip(
            row, sample["stratum"], sample["kind"], sample["double"], order_key, a_left
        )
    ]


def insert_named_plan(
    conn, judge_a: str, judge_b: str, name: Optional[str], params: dict, created_by: Optional[int]
) -> tuple[int, str]:
    """Insert a ``sample_plan`` row (default name ``"<A> vs <B> #k"``, the first k free);
    returns its id and name."""
    ids = repo.judge_ids(conn, names=[judge_a, judge_b])
    if name is None:
        taken = set(repo.plan_names(conn))
        k = 1
        while f"{judge_a} vs {judge_b} #{k}" in taken:
            k += 1
        name = f"{judge_a} vs {judge_b} #{k}"
    plan_id = repo.insert_plan(
        conn, name=name, judge_a_id=ids[judge_a], judge_b_id=ids[judge_b], params=params, created_by=created_by
    )
    return plan_id, name


def list_plans(engine: Engine, principal: Principal) -> pd.DataFrame:
    """Plans with judges, task counts and done counts.

    Annotators see id, a neutral name (``Plan <id>``) and progress: plan names are chosen by
    leads and default to ``"<A> vs <B> #k"``, which would name the judges (blinding)."""
    require(principal, ADJUDICATE_ACTION)
    with engine.connect() as conn:
        df = repo.plans(conn)
    if not principal.can(SUMMARY_ACTION):
        df = df[["id", "name", "active", "tasks", "done"]].assign(name=blind_plan_names(df["id"]))
    return df


def queue_plans(engine: Engine, principal: Principal) -> pd.DataFrame:
    """The active plans as the Adjudicate page offers them, to every role: ``id, label
    (Plan <id>), tasks, done``, plans with work left first, newest first. Plan names are never
    part of it — a lead's default name ``"<A> vs <B> #k"`` names the judges."""
    require(principal, ADJUDICATE_ACTION)
    with engine.connect() as conn:
        df = repo.plans(conn)
    df = df[df["active"].astype(bool)]
    df = df.assign(label=blind_plan_names(df["id"]), _finished=df["done"] >= df["tasks"])
    df = df.sort_values(["_finished", "id"], ascending=[True, False])
    return df[["id", "label", "tasks", "done"]].reset_index(drop=True)


def has_queue_to_resume(engine: Engine, principal: Principal) -> bool:
    """Whether the signed-in user has adjudication under way: decisions in an active plan that
    still needs decisions (where the app opens for a single local user who has started
    adjudicating; a look at the Adjudicate page, which holds an item, does not count)."""
    user = require(principal, ADJUDICATE_ACTION)
    if user.user_id is None:
        return False
    with engine.connect() as conn:
        return repo.work_under_way(conn, user_id=user.user_id)


def blind_plan_names(ids: pd.Series) -> pd.Series:
    """What annotators see instead of plan names: ``Plan <id>``."""
    return "Plan " + ids.astype(int).astype(str)


def judges(engine: Engine) -> list[str]:
    """Judges with labels, in creation order (the CLI's order; a judge with only error rows
    cannot be planned on)."""
    from reform_core.services.scoring.scoring import scoreable_judges

    return scoreable_judges(engine)


def default_pair(engine: Engine) -> Optional[tuple[str, str]]:
    """The project's scoring pair, or the only two judges with labels (the plan a lead most
    likely wants), else None."""
    from reform_core.services.scoring.scoring import resolve_pair

    return resolve_pair(engine).pair


def write_tasks(engine: Engine, principal: Principal, out, plan: Optional[str] = None) -> int:
    """Write the undecided tasks of plan ``plan`` (default: every active plan) to ``out`` as
    JSON Lines, one task per line, for an outside annotation team (issue 13)::

        {"plan", "kind", "required", "judge_a", "judge_b", "model", "instruction", "position", "answer"}

    ``kind`` is ``disagreement`` or ``audit`` (the judges agree); ``answer`` names the field a
    decision gives: ``choice`` (A | B | neither) on a disagreement, ``verdict`` (pass | fail, the
    annotator's own verdict on the constraint) on an audit — ``choice`` stays accepted there
    (``neither`` = both judges wrong). ``required`` is the number of *distinct annotators still
    needed* on the task (its required count minus the decisions already made). Each
    annotator's decision comes back as one line of ``adjudications.jsonl`` in a bundle for
    ``import`` (same ``plan``, judges and item, plus the answer, ``annotator``, ``note``,
    ``seconds``). The file is
    written to a temporary name and renamed. Returns the number of lines. Leads only (the
    lines name the judges and the evaluated model).
    """
    import json
    import os
    from pathlib import Path

    require(principal, PLAN_ACTION)
    with engine.connect() as conn:
        if plan is not None and plan not in set(repo.plan_names(conn)):
            known = ", ".join(repr(n) for n in sorted(repo.plan_names(conn))) or "none"
            raise ValueError(f"--plan: no sample plan named {plan!r} (plans: {known})")
        rows = repo.undecided_tasks(conn, plan_name=plan)
    out = Path(out)
    tmp = out.with_name(out.name + ".partial")
    with tmp.open("w", encoding="utf-8") as fh:
        for r in rows:
            line = {k: r[k] for k in TASK_FIELDS if k != "answer"}
            line["answer"] = "verdict" if r["kind"] == "audit" else "choice"
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    os.replace(tmp, out)
    return len(rows)


TASK_FIELDS = ("plan", "kind", "required", "judge_a", "judge_b", "model", "instruction", "position", "answer")


@dataclass(frozen=True)
class PlanSummary:
    name: str
    judge_a: str
    judge_b: str
    params: dict
    models: pd.DataFrame  # Table A3-like, plus planned / reviewed
    strata: pd.DataFrame  # stratum, size, planned, reviewed, pi_hat, provisional


def _plan_adjudications(rows: pd.DataFrame) -> pd.DataFrame:
    """Current usable decisions of one plan, the earliest per task (iid, a, choice)."""
    from reform_core.services.data.instances import current_decisions

    cur = current_decisions(rows)
    cur = cur[cur["label"].notna()].sort_values("id").drop_duplicates("task_id")
    return pd.DataFrame(
        {
            "iid": instance_id(cur["response_id"], cur["constraint_id"]),
            "a": cur["label"].astype(float).to_numpy(),
            "choice": cur["choice"].to_numpy(dtype=object),
        }
    )


def plan_summary(engine: Engine, principal: Principal, plan_id: int) -> PlanSummary:
    """Per model (like the ReFormBench paper's Table A3): judgments, agreement %, disagreements, planned,
    reviewed, agrees with judge A / B (counts and % of reviewed); per stratum: size,
    planned, reviewed, π̂_h (docs/metrics.md#stratified-calibration) and whether it is still provisional."""
    from reform_core.calibration import stratum_rates
    from reform_core.metrics.reform import judge_agreement

    require(principal, SUMMARY_ACTION)
    with engine.connect() as conn:
        plan = repo.plan_row(conn, plan_id=plan_id)
        if plan is None:
            raise ValueError(f"no sample plan with id {plan_id}")
        rows = repo.adjudication_rows(conn, plan_id=plan_id)
        tasks = repo.plan_tasks(conn, plan_id=plan_id)
    inst = load_instances(engine, plan["judge_a"], plan["judge_b"])
    la, lb = inst.attrs["judge_a"], inst.attrs["judge_b"]
    adj = _plan_adjudications(rows)
    a3 = judge_agreement(inst, adj, judge_a=la, judge_b=lb, choice="choice", condition=None)
    dis_tasks = tasks[tasks["kind"] == "disagreement"]
    task_iid = instance_id(dis_tasks["response_id"], dis_tasks["constraint_id"])
    model_of = pd.Series(inst["model"].to_numpy(), index=inst["iid"].to_numpy())
    planned = pd.Series(model_of.reindex(task_iid).to_numpy()).value_counts()
    planned.loc["Total"] = planned.sum()
    a3.insert(4, "planned", a3["model"].map(planned).fillna(0).astype(int).to_numpy())
    a3 = a3.rename(columns={"adjudicated": "reviewed"})

    rates = stratum_rates(inst, adj, judge_a=la, judge_b=lb)
    stored = plan["params"].get("strata", {}) if isinstance(plan["params"], dict) else {}
    st = rates[
        ["stratum", "model", "direction", "category", "mode", "n_disagreements", "n_reviewed", "pi_hat", "provisional"]
    ].rename(columns={"n_disagreements": "size", "n_reviewed": "reviewed"})
    st.insert(6, "planned", st["stratum"].map(lambda s: stored.get(s, {}).get("planned", 0)).astype(int))
    return PlanSummary(
        name=plan["name"], judge_a=plan["judge_a"], judge_b=plan["judge_b"], params=plan["params"], models=a3, strata=st
    )


# ============================================================================= the queue


@dataclass(frozen=True)
class Judgement:
    label: Optional[int]  # 1 pass / 0 fail / None
    rationale: str
    id: Optional[int] = None  # the judgment row shown (never rendered: ids follow import order)


@dataclass(frozen=True)
class Item:
    """One task as an annotator sees it (blinded: no judge or model names, rationales passed
    through :func:`reform_core.judges.blinding.blind_rationale`).

    ``kind``: ``disagreement`` (the judges differ: the annotator chooses the better-supported
    judgment) or ``audit`` (the judges agree: the annotator gives their own verdict,
    :func:`give_verdict`, and is shown neither the agreed label nor the rationales)."""

    task_id: int
    instruction: str
    constraint: dict  # position, feature, feature_name, mode, text, acceptance
    other_constraints: list
    response: str
    judge_a: Judgement  # shown as "Judge A", on the left
    judge_b: Judgement  # shown as "Judge B", on the right
    lease_until: datetime
    kind: str = "disagreement"

    @property
    def shown(self) -> tuple[Optional[int], Optional[int]]:
        """The judgment ids as shown (left, right): pass them to :func:`decide`."""
        return self.judge_a.id, self.judge_b.id

    @property
    def is_audit(self) -> bool:
        return self.kind == "audit"


def _item(c: dict) -> Item:
    """The blinded :class:`Item` of a task's content (``repo.item_content``)."""
    from reform_core.judges.blinding import blind_rationale

    t = c["task"]
    cons = [
        {k: v for k, v in x.items() if k != "id"} | {"feature_name": x["feature_name"] or x["feature"]}
        for x in c["constraints"]
    ]
    target = next(i for i, x in enumerate(c["constraints"]) if x["id"] == t["constraint_id"])
    left, right = ("A", "B") if t["a_left"] == "A" else ("B", "A")
    names = [n for n in c.get("judge_names", ()) if n]
    j = {
        s: Judgement(
            None if lab is None else int(lab), blind_rationale(rat or "", names), None if jid is None else int(jid)
        )
        for s, (jid, lab, rat) in c["judgments"].items()
    }
    return Item(
        task_id=int(t["task_id"]),
        instruction=c["instruction_text"],
        constraint=cons[target],
        other_constraints=[x for i, x in enumerate(cons) if i != target],
        response=c["response_text"],
        judge_a=j[left],
        judge_b=j[right],
        lease_until=_naive(t["lease_until"]),
        kind=str(t["kind"]),
    )


def claim_next(
    engine: Engine, principal: Principal, plan_id: int, lease_seconds: int = DEFAULT_LEASE_SECONDS
) -> Optional[Item]:
    """The next item of ``plan_id`` for the signed-in annotator, claimed under a lease.

    A user who already holds a live lease in the plan gets that item back (a page refresh
    never loses or doubles work). Otherwise the first task in queue order that is open, or
    whose lease expired, and that this user has not decided, is claimed atomically; None
    when nothing is left.
    """
    user = require(principal, ADJUDICATE_ACTION)
    if lease_seconds <= 0:
        raise ValueError(f"lease_seconds must be > 0, got {lease_seconds!r}")
    now = _now()
    with repo.claim_connection(engine) as conn:  # PostgreSQL: claim + content in one statement
        content = repo.claim_item(
            conn, plan_id=plan_id, user_id=user.user_id, now=now, lease_until=now + timedelta(seconds=lease_seconds)
        )
    return None if content is None else _item(content)


@dataclass(frozen=True)
class Decision:
    adjudication_id: int
    task_id: int
    iid: int
    label: Optional[int]  # the chosen judgment's label (None for neither / unsure)
    task_done: bool


def _plan_side(shown: str, a_left: str) -> str:
    """Map the side as shown ("A" = left) to the plan's judge ("A" = the plan's judge_a)."""
    if shown == "neither":
        return shown
    return shown if a_left == "A" else ("B" if shown == "A" else "A")


def _shown_judgments(conn, t: dict, shown: Optional[tuple[Optional[int], Optional[int]]]) -> dict[str, tuple]:
    """``{"A": (judgment id, label), "B": …}`` by the plan's sides: the judgments shown
    (``shown`` = ids as shown, left then right), else each judge's newest."""
    judge = {"A": int(t["judge_a_id"]), "B": int(t["judge_b_id"])}
    if shown is None:
        newest = repo.newest_judgments(
            conn, judge_ids=list(judge.values()), response_id=t["response_id"], constraint_id=t["constraint_id"]
        )
        return {side: newest.get(j, (None, None)) for side, j in judge.items()}
    if len(shown) != 2:
        raise ValueError(f"shown must be the two judgment ids (left, right), got {shown!r}")
    by_side = dict(zip(("A", "B") if t["a_left"] == "A" else ("B", "A"), shown))
    rows = repo.judgment_rows(conn, ids=[int(i) for i in by_side.values() if i is not None])
    out = {}
    for side, jid in by_side.items():
        if jid is None:
            out[side] = (None, None)
            continue
        r = rows.get(int(jid))
        if r is None or (int(r["judge_id"]), int(r["response_id"]), int(r["constraint_id"])) != (
            judge[side],
            int(t["response_id"]),
            int(t["constraint_id"]),
        ):
            raise ValueError(f"task {t['id']}: judgment {jid} is not one of this item's judgments")
        out[side] = (int(jid), None if r["label"] is None else int(r["label"]))
    return out


def decide(
    engine: Engine,
    principal: Principal,
    task_id: int,
    choice: str,
    note: str = "",
    seconds: float = 0.0,
    shown: Optional[tuple[Optional[int], Optional[int]]] = None,
) -> Decision:
    """Record the signed-in annotator's decision on a task (append-only).

    Parameters
    ----------
    choice : {"A", "B", "neither"}
        The judgment the annotator found better supported, *as shown*: "A" is the one shown
        as Judge A (left). It is stored relative to the plan's judges. "neither" (unsure /
        both wrong) needs a ``note`` and yields no label. (An audit is asked as a verdict,
        :func:`give_verdict`, which stores the same choices.)
    seconds : float
        Time the annotator spent on the item.
    shown : (int | None, int | None), optional
        The judgment ids the annotator was shown, left then right (:attr:`Item.shown`). The
        decision stores them and takes its label from the chosen one, so a judge re-run while
        the item was on screen cannot change what the decision means. Without it, each
        judge's newest judgment (for callers that never showed an item).

    Refused (:class:`AdjudicationRefused`) when the user already decided the task, when the
    task is complete, or when the user's lease expired and another annotator now holds the
    task — except on a task that needs several annotators and that this user has not decided.
    A task completed meanwhile by an import is not refused to the annotator holding its lease
    (the decision is recorded as one more).
    """
    user = require(principal, ADJUDICATE_ACTION)
    if choice not in CHOICES:
        raise ValueError(f"choice must be one of {CHOICES}, got {choice!r}")
    note = (note or "").strip()
    if choice == "neither" and not note:
        raise ValueError("a note is required when choosing 'neither / unsure'")

    def resolve(t: dict, judgments: dict) -> tuple[str, Optional[int]]:
        side = _plan_side(choice, t["a_left"])
        if side == "neither":
            return side, None
        label = judgments[side][1]
        if label is None:
            raise ValueError(f"task {task_id}: the chosen judgment has no label; choose the other one or 'neither'")
        return side, label

    return _record(engine, user, task_id, resolve, note=note, seconds=seconds, shown=shown)


def give_verdict(
    engine: Engine,
    principal: Principal,
    task_id: int,
    verdict: str,
    note: str = "",
    seconds: float = 0.0,
    shown: Optional[tuple[Optional[int], Optional[int]]] = None,
) -> Decision:
    """Record the signed-in annotator's own verdict on an audit item (the judges agree).

    ``verdict``: "pass" or "fail" — does the response satisfy the constraint? Stored by
    :func:`verdict_choice` against the agreed label of the judgments ``shown`` (as in
    :func:`decide`); the ``note`` is optional (the verdict itself is the answer). Refused with
    a ``ValueError`` on a disagreement, or when the judgments shown no longer agree. Other
    refusals as :func:`decide`.
    """
    user = require(principal, ADJUDICATE_ACTION)
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")

    def resolve(t: dict, judgments: dict) -> tuple[str, Optional[int]]:
        la, lb = judgments["A"][1], judgments["B"][1]
        if t["kind"] != "audit" or la is None or la != lb:
            raise ValueError(
                f"task {task_id}: a verdict answers an audit of an agreement; the judges do not agree "
                "here — choose the better-supported judgment"
            )
        return verdict_choice(verdict, la)

    return _record(engine, user, task_id, resolve, note=(note or "").strip(), seconds=seconds, shown=shown)


def _record(
    engine: Engine,
    user: Principal,
    task_id: int,
    resolve,
    *,
    note: str,
    seconds: float,
    shown: Optional[tuple[Optional[int], Optional[int]]],
) -> Decision:
    """Append the decision ``resolve(task, judgments shown) -> (plan side, label)`` of ``user``
    on a task under its lock, with the queue's refusals (:func:`_decidable`), second-opinion
    rule and counters."""
    if not np.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds must be a finite number >= 0, got {seconds!r}")
    now = _now()
    with repo.write_tx(engine) as conn:
        t, mine, decided = _decidable(conn, task_id, user, now)
        lease = _naive(t["lease_until"])
        held_by_other = t["claimed_by"] is not None and t["claimed_by"] != user.user_id
        judgments = _shown_judgments(conn, t, shown)
        side, label = resolve(t, judgments)
        adj_id = repo.insert_adjudication(
            conn,
            task_id=task_id,
            user_id=user.user_id,
            choice=side,
            label=label,
            note=note,
            seconds=float(seconds),
            supersedes_id=None if mine is None else mine["id"],
            judgment_a_id=judgments["A"][0],
            judgment_b_id=judgments["B"][0],
        )
        before, decided = decided, decided + 1  # the user had no current decision (checked under the task's lock)
        if before == 0:  # the first opinion: the plan's rule may ask for a second one
            t = _second_opinion(conn, t, [side])
        elif side == "neither" and t["kind"] == "audit" and before < MAX_OPINIONS:
            # another finding of both judges wrong: the rule may ask for a third opinion
            t = _second_opinion(conn, t, repo.choices(conn, task_id=task_id))
        done = decided >= t["required"]
        repo.count_change(
            conn,
            task=t,
            before=before,
            after=decided,
            status_before=t["status"],
            status_after="done" if done else t["status"],
            annotator=(user.user_id, ""),
            decisions=1,
            seconds=float(seconds),
        )
        _settle(conn, task_id, decided, done=done, kept_by_other=held_by_other and lease is not None and lease >= now)
    return Decision(
        adjudication_id=adj_id,
        task_id=task_id,
        iid=int(instance_id(t["response_id"], t["constraint_id"])),
        label=label,
        task_done=done,
    )


def _settle(conn, task_id: int, decided: int, *, done: bool, kept_by_other: bool) -> None:
    """A decided task's new state: complete, still held by the annotator with a live lease, or open."""
    if done:
        repo.update_task(conn, task_id=task_id, decided=decided, status="done", claimed_by=None, lease_until=None)
    elif kept_by_other:
        repo.update_task(conn, task_id=task_id, decided=decided)  # the other annotator keeps it
    else:
        repo.update_task(conn, task_id=task_id, decided=decided, status="open", claimed_by=None, lease_until=None)


def _decidable(conn, task_id: int, user: Principal, now: datetime) -> tuple[dict, Optional[dict], int]:
    """The task locked, the user's current decision on it and its distinct deciders; refused
    (:class:`AdjudicationRefused`) when the task was withdrawn (its plan closed), the user already
    decided it, it is complete (unless the user still holds its lease) or the user's lease expired
    and another annotator holds a task that needs one annotator."""
    t = repo.lock_task(conn, task_id=task_id)
    if t is None:
        raise ValueError(f"no adjudication task with id {task_id}")
    if t["status"] == repo.WITHDRAWN:
        raise AdjudicationRefused(f"task {task_id} was withdrawn: its plan was closed, the decision was not recorded")
    mine, decided = repo.decision_state(conn, task_id=task_id, user_id=user.user_id)
    if mine is not None and mine["choice"] != repo.RETRACTED:
        raise AdjudicationRefused(f"task {task_id}: you already decided it (undo your last decision to change it)")
    lease = _naive(t["lease_until"])
    holds = t["claimed_by"] == user.user_id and lease is not None and lease >= now
    if t["status"] == "done" and not holds:
        raise AdjudicationRefused(f"task {task_id} is already complete")
    held_by_other = t["claimed_by"] is not None and t["claimed_by"] != user.user_id
    if t["status"] == "claimed" and held_by_other and t["required"] <= 1:
        raise AdjudicationRefused(
            f"task {task_id}: your lease expired and the item was handed to another annotator; "
            "your decision was not recorded — take the next item"
        )
    return t, mine, decided


def _second_opinion(conn, t: dict, choices: list) -> dict:
    """The locked task ``t`` with the number of annotators its plan's second-opinion rule asks
    for, given its current decisions' choices in order (:func:`reform_core.estimators.design.required_annotators`):
    an audit whose first annotator says both judges are wrong (or, under ``second_opinion =
    "all"``, a disagreement decided for judge B) goes back to the queue for a second, different
    annotator, and an audit whose first two both say so for a third (``audit_opinions = 3``). The
    task row and the plan's "needed" counter change in the caller's transaction."""
    from reform_core.estimators.design import required_annotators  # only plans of the default design need it

    params = repo.plan_params(conn, plan_id=t["plan_id"])
    need = required_annotators(params, t["kind"], int(instance_id(t["response_id"], t["constraint_id"])), choices)
    if need is None or need == int(t["required"]):
        return t
    repo.update_task(conn, task_id=t["id"], required=need)
    repo.add_stratum_counts(conn, plan_id=t["plan_id"], deltas={t["stratum"]: (0, need - int(t["required"]), 0, 0)})
    return {**t, "required": need}


def _held(conn, user: Principal, task_id: int) -> dict:
    t = repo.lock_task(conn, task_id=task_id)
    if t is None:
        raise ValueError(f"no adjudication task with id {task_id}")
    if t["status"] != "claimed" or t["claimed_by"] != user.user_id:
        raise AdjudicationRefused(f"task {task_id} is not held by you")
    return t


def release(engine: Engine, principal: Principal, task_id: int) -> None:
    """Give a held task back to the queue at its place."""
    user = require(principal, ADJUDICATE_ACTION)
    with repo.write_tx(engine) as conn:
        _held(conn, user, task_id)
        repo.update_task(conn, task_id=task_id, status="open", claimed_by=None, lease_until=None)


def skip(engine: Engine, principal: Principal, task_id: int) -> None:
    """Give a held task back and move it to the end of the queue (new order key)."""
    user = require(principal, ADJUDICATE_ACTION)
    with repo.write_tx(engine) as conn:
        t = _held(conn, user, task_id)
        key = repo.max_order_key(conn, plan_id=t["plan_id"]) + 1.0
        repo.update_task(conn, task_id=task_id, status="open", claimed_by=None, lease_until=None, order_key=key)


@dataclass(frozen=True)
class Undone:
    """What :func:`undo_last` withdrew: the task and the decision *as it was shown* ("A" = the
    judgment shown as Judge A, "B", or "neither"); on an audit also the ``verdict`` it stands
    for ("pass" / "fail"; None where the agreed label is no longer known)."""

    task_id: int
    choice: str
    verdict: Optional[str] = None


def undo_last(
    engine: Engine, principal: Principal, plan_id: Optional[int] = None, lease_seconds: int = DEFAULT_LEASE_SECONDS
) -> Optional[Undone]:
    """Withdraw the signed-in user's most recent decision (see the module docstring).

    Appends a ``retracted`` row superseding it, recounts the task and hands the task back
    to this user under a fresh lease (unless another annotator holds a live lease on it, or
    it still has all the decisions it needs). The task row is locked first and the decision
    checked again under the lock, so two undos at once withdraw it once (the second finds
    nothing left and returns None). Returns what was undone, or None when the user has no
    decision to undo.
    """
    user = require(principal, ADJUDICATE_ACTION)
    now = _now()
    with repo.write_tx(engine) as conn:
        last = repo.last_decision(conn, user_id=user.user_id, plan_id=plan_id)
        if last is None:
            return None
        t = repo.lock_task(conn, task_id=last["task_id"])
        if "closed" in repo.plan_params(conn, plan_id=t["plan_id"]):
            raise AdjudicationRefused("your last decision belongs to a closed plan: its decisions are final")
        mine, _ = repo.decision_state(conn, task_id=t["id"], user_id=user.user_id)  # read under the lock
        if mine is None or mine["id"] != last["id"] or mine["choice"] == repo.RETRACTED:
            return None  # withdrawn (or changed) by a concurrent call since we looked
        repo.insert_adjudication(
            conn,
            task_id=t["id"],
            user_id=user.user_id,
            choice=repo.RETRACTED,
            label=None,
            note="undo",
            seconds=0.0,
            supersedes_id=last["id"],
        )
        decided = repo.count_decided(conn, task_id=t["id"])  # one fewer than before: this user's decision is gone
        before = decided + 1
        if decided < MAX_OPINIONS:  # an opinion withdrawn: one it asked for may no longer be needed
            t = _second_opinion(conn, t, repo.choices(conn, task_id=t["id"]) if decided else [])
        repo.count_change(
            conn,
            task=t,
            before=before,
            after=decided,
            status_before=t["status"],
            status_after="done" if decided >= t["required"] else "claimed",
            annotator=(user.user_id, ""),
            decisions=-1,
            seconds=-float(mine["seconds"]),
        )
        lease = _naive(t["lease_until"])
        if decided >= t["required"]:
            repo.update_task(conn, task_id=t["id"], decided=decided)  # still complete (an extra decision)
        elif t["status"] == "claimed" and t["claimed_by"] != user.user_id and lease is not None and lease >= now:
            repo.update_task(conn, task_id=t["id"], decided=decided)
        else:
            repo.update_task(
                conn,
                task_id=t["id"],
                decided=decided,
                status="claimed",
                claimed_by=user.user_id,
                lease_until=now + timedelta(seconds=lease_seconds),
            )
        shown = mine["choice"] if mine["choice"] == "neither" else _plan_side(mine["choice"], t["a_left"])
        verdict = verdict_of(*repo.decision_labels(conn, adjudication_id=mine["id"])) if t["kind"] == "audit" else None
        return Undone(task_id=int(t["id"]), choice=shown, verdict=verdict)


@dataclass(frozen=True)
class PlanProgress:
    """Where a plan stands, for the annotator's header ("item n of N")."""

    tasks: int  # items in the plan
    done: int  # items with all the decisions they need
    needed: int  # decisions the plan needs (sum of each item's required annotators)
    filled: int  # of those, made (extra decisions beyond an item's requirement not counted)
    mine: int  # the signed-in user's current decisions in the plan

    @property
    def item_no(self) -> int:
        """The number of the decision being made now (1-based, at most ``needed``)."""
        return max(1, min(self.filled + 1, self.needed))


def plan_progress(engine: Engine, principal: Principal, plan_id: int) -> PlanProgress:
    """The plan's counts and the signed-in user's number of decisions in it (one query over
    the progress counters: as fast for a plan of 10⁵ items as for 10)."""
    user = require(principal, ADJUDICATE_ACTION)
    with engine.connect() as conn:
        tasks, done, needed, filled, mine = repo.plan_progress(conn, plan_id=plan_id, user_id=user.user_id)
    return PlanProgress(tasks=tasks, done=done, needed=needed, filled=filled, mine=mine)


@dataclass(frozen=True)
class Progress:
    strata: pd.DataFrame  # stratum (blinded label), tasks, done, mine
    decided: int
    mean_seconds: float
    items_per_hour: float


def _stratum_alias(keys) -> dict[str, str]:
    """Blinded labels of stratum keys: ``S01 · category · mode`` (no model, no direction), audit
    strata ``S07 · audit``."""
    alias = {}
    for k, s in enumerate(sorted(keys), start=1):
        parts = s.split("|")
        alias[s] = f"S{k:02d} · {parts[2]} · {parts[3]}" if len(parts) == 4 else f"S{k:02d} · audit"
    return alias


def my_progress(engine: Engine, principal: Principal, plan_id: int) -> Progress:
    """Progress per stratum (blinded: category and mode only, no model) and the user's pace,
    read from the progress counters (a few rows per stratum, never the plan's task list).

    ``items_per_hour`` = 3600 / ``mean_seconds``, the mean time spent per decided item (NaN
    before the first decision).
    """
    user = require(principal, ADJUDICATE_ACTION)
    with engine.connect() as conn:
        counts = repo.stratum_counts(conn, plan_id=plan_id, user_id=user.user_id)
    if counts.empty:
        return Progress(pd.DataFrame(columns=["stratum", "tasks", "done", "mine"]), 0, float("nan"), float("nan"))
    decided = int(counts["mine"].sum())
    seconds = float(counts["seconds"].sum())
    mean = seconds / decided if decided else float("nan")
    rate = 3600.0 / mean if decided and mean > 0 else float("nan")
    out = counts[["stratum", "tasks", "done", "mine"]].astype({"tasks": int, "done": int, "mine": int})
    out["stratum"] = out["stratum"].map(_stratum_alias(out["stratum"]))
    return Progress(
        strata=out.sort_values("stratum").reset_index(drop=True),
        decided=decided,
        mean_seconds=mean,
        items_per_hour=rate,
    )


# ============================================================================= live calibration


class LiveScores:
    """Stratified calibration and TCPR/EMCR kept current one adjudication at a time.

    Built once from the INSTANCES and ADJUDICATIONS frames (the same rules as
    :func:`reform_core.calibration.calibrate_stratified`, docs/metrics.md#stratified-calibration); then
    :meth:`apply` changes one instance's adjudicated label: p of that instance and of the
    unreviewed instances of its stratum (and, while some of the model's strata have no
    review, of those strata, whose fallback is the model's pooled share) is updated, and
    only that model is rescored through its prebuilt unit index (docs/metrics.md#benchmark-scores).
    """

    def __init__(
        self,
        instances: pd.DataFrame,
        adjudications: pd.DataFrame,
        *,
        judge_a: str,
        judge_b: str,
        condition: Optional[str] = "main",
    ):
        from reform_core.calibration import calibrate_stratified
        from reform_core.unit_index import build_index

        self.instances, self.judge_a, self.judge_b, self.condition = instances, judge_a, judge_b, condition
        self._names: Optional[tuple[str, str]] = None  # judge names, for sync()
        cal = calibrate_stratified(instances, adjudications, judge_a=judge_a, judge_b=judge_b)
        self.p = cal["p"].to_numpy(dtype=float).copy()
        self._row = pd.Index(instances["iid"].to_numpy())
        self._g = pd.to_numeric(instances[judge_a], errors="coerce").to_numpy(float)
        m = pd.to_numeric(instances[judge_b], errors="coerce").to_numpy(float)
        dis = ~np.isnan(self._g) & ~np.isnan(m) & (self._g != m)
        amap = pd.Series(adjudications["a"].to_numpy(float), index=adjudications["iid"].to_numpy())
        self._adj = instances["iid"].map(amap).to_numpy(dtype=float).copy()
        self._adj[~dis] = np.nan  # only disagreements are calibrated by adjudications
        self._current = {int(i): float(a) for i, a in zip(adjudications["iid"], adjudications["a"])}

        codes = np.full(len(instances), -1, dtype=np.int64)
        codes[dis], names = pd.factorize(cal["stratum"].to_numpy()[dis], sort=True)
        self._stratum = codes
        order = np.argsort(codes, kind="stable")
        starts = np.searchsorted(codes[order], np.arange(len(names) + 1))
        self._s_rows = [order[starts[h] : starts[h + 1]] for h in range(len(names))]
        first = np.array([rows[0] for rows in self._s_rows], dtype=np.int64)
        self._s_model = instances["model"].astype(str).to_numpy(dtype=object)[first]
        self._s_a1b0 = self._g[first] == 1  # direction A1B0: judge A passes
        rev = dis & ~np.isnan(self._adj)
        self._n_rev = np.bincount(codes[rev], minlength=len(names)).astype(float)
        self._sum_a = np.bincount(codes[rev], self._adj[rev], minlength=len(names))
        self._with_a = np.bincount(codes[rev], (self._adj[rev] == self._g[rev]).astype(float), minlength=len(names))
        self._model_strata = {mdl: np.flatnonzero(self._s_model == mdl) for mdl in np.unique(self._s_model)}
        # the fallback of a stratum without review is the pooled share of its model *and condition*
        cond = (
            instances["condition"].astype(str).to_numpy(dtype=object)[first]
            if "condition" in instances.columns
            else np.full(len(first), "main", dtype=object)
        )
        self._s_group = list(zip(self._s_model.tolist(), cond.tolist()))
        self._group_strata: dict[tuple, list[int]] = {}
        for h, grp in enumerate(self._s_group):
            self._group_strata.setdefault(grp, []).append(h)

        # an instruction with a constraint nobody labelled is left out whole (as in scoring.score)
        missing = pd.Series(np.isnan(self.p)).groupby(
            [instances["model"].to_numpy(), instances["instruction"].to_numpy()]
        )
        scored = ~missing.transform("any").to_numpy()
        if condition is not None:
            scored &= instances["condition"].to_numpy() == condition
        self._index = {}
        models = instances["model"].to_numpy()
        for mdl in pd.unique(models[scored]):
            rows = np.flatnonzero(scored & (models == mdl))
            idx = build_index(instances.iloc[rows], condition=None)
            self._index[str(mdl)] = (rows[idx.row_pos], idx)
        self.scores = pd.DataFrame([self._score(mdl) for mdl in sorted(self._index)])

    @classmethod
    def from_engine(cls, engine: Engine, judge_a: str, judge_b: str, condition: Optional[str] = "main") -> "LiveScores":
        inst = load_instances(engine, judge_a, judge_b)
        live = cls(
            inst,
            load_adjudications(engine, judge_a, judge_b),
            judge_a=inst.attrs["judge_a"],
            judge_b=inst.attrs["judge_b"],
            condition=condition,
        )
        live._names = (judge_a, judge_b)
        return live

    def _score(self, model: str) -> dict:
        from reform_core.metrics.reform import group_sums, rates_from_sums

        rows, idx = self._index[model]
        s = group_sums(idx, self.p[rows])
        r = rates_from_sums(s)
        empty = np.zeros(0, dtype=np.int64)
        strata = (
            self._model_strata.get(model, empty)
            if self.condition is None
            else np.asarray(self._group_strata.get((model, self.condition), empty), dtype=np.int64)
        )
        out = {"model": model}
        out.update({k: float(r[k][0]) for k in ("tcpr", "emcr", "r1", "r2", "r3")})
        out.update(
            {
                "n_instructions": int(s["n_inst"][0]),
                "n1": int(s["units1"][0]),
                "n2": int(s["units2"][0]),
                "n3": int(s["units3"][0]),
                "provisional": bool((self._n_rev[strata] == 0).any()),
            }
        )
        return out

    def _refresh_group(self, group: tuple) -> None:
        strata = self._group_strata[group]
        n = self._n_rev[strata].sum()
        w = self._with_a[strata].sum() / n if n else 0.5
        for h in strata:
            if self._n_rev[h]:
                value = self._sum_a[h] / self._n_rev[h]
            else:
                value = w if self._s_a1b0[h] else 1.0 - w
            rows = self._s_rows[h]
            a = self._adj[rows]
            self.p[rows] = np.where(np.isnan(a), value, a)

    def apply(self, changes: dict[int, Optional[float]] | Iterable[tuple[int, Optional[float]]]) -> list[str]:
        """Apply new current labels ``{iid: a}`` (``None`` = decision withdrawn).

        Returns the models whose scores changed (their rows in :attr:`scores` are updated).
        """
        items = changes.items() if isinstance(changes, dict) else changes
        touched = set()
        for iid, a in items:
            a = np.nan if a is None else float(a)
            if not (np.isnan(a) or a in (0.0, 1.0)):
                raise ValueError(f"adjudicated label must be 0, 1 or None, got {a!r}")
            pos = self._row.get_indexer([iid])[0]
            if pos < 0:
                raise ValueError(f"unknown instance id {iid}")
            if np.isnan(a):
                self._current.pop(int(iid), None)
            else:
                self._current[int(iid)] = a
            h = self._stratum[pos]
            old = self._adj[pos]
            if h < 0 or (np.isnan(old) and np.isnan(a)) or old == a:
                continue
            g = self._g[pos]
            if not np.isnan(old):
                self._n_rev[h] -= 1
                self._sum_a[h] -= old
                self._with_a[h] -= float(old == g)
            if not np.isnan(a):
                self._n_rev[h] += 1
                self._sum_a[h] += a
                self._with_a[h] += float(a == g)
            self._adj[pos] = a
            touched.add(self._s_group[h])
        for grp in touched:
            self._refresh_group(grp)
        touched = {grp[0] for grp in touched}
        changed = sorted(m for m in touched if m in self._index)
        for mdl in changed:
            row = self._score(mdl)
            self.scores.loc[self.scores["model"] == mdl, list(row)] = list(row.values())
        return changed

    def sync(self, engine: Engine) -> list[str]:
        """Catch up with decisions recorded since (by anyone): reload the current decisions
        of the pair (a small query) and apply the differences."""
        if self._names is None:
            raise ValueError("sync() needs a LiveScores built with LiveScores.from_engine")
        judge_a, judge_b = self._names
        adj = load_adjudications(engine, judge_a, judge_b)
        new = {int(i): float(a) for i, a in zip(adj["iid"], adj["a"])}
        diff = [(i, a) for i, a in new.items() if self._current.get(i) != a]
        diff += [(i, None) for i in self._current if i not in new]
        return self.apply(diff) if diff else []
