"""Scoring use case: the project's scoring pair, the frames, calibration, every table.

``score`` is the one place that produces the scored state of a project (the CLI ``score``
and ``export``, every page): it resolves the **judge pair** (:func:`resolve_pair`: an
explicit ``judges`` override, else the pair stored in the project with ``pair A B`` or on
the Judges page, else the only two judges that have labels — never a guess among more),
loads the INSTANCES frame (``services/data/instances.py``) with every labelled judge's labels,
the baseline features and the pair's current decisions, calibrates (stratified or pooled)
or takes one judge's raw labels, then runs the pure engine (``reform_core.metrics``).

Missing data is left out and counted, never a pass (docs/metrics.md#missing-data):

* an instruction with a constraint that has no usable label under the method (neither judge
  of the pair labelled it; for a raw judge, that judge did not) is left out of every score
  of that method — counted per model as ``excluded["unlabelled_instructions"]``;
* a target whose (model, question) has no baseline annotation has unknown opposition and is
  left out of EMCR — counted as ``excluded["no_baseline_targets"]`` where EMCR applies;
* a metric with no eligible data is ``None`` with a note that says why; one the project's
  catalog does not declare (IFEval has no EMCR), or EMCR without baseline data (never claimed),
  is ``None`` and not described: the texts of the metrics — ``metric_definitions``, the notes,
  the pages' definitions — follow the catalog's metric set and the data's shape
  (:mod:`reform_core.metrics.descriptions`); a catalog that declares EMCR in a project without
  baseline data gets one project note saying why it is not computed.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import data as data_repo
from db.repo import scoring as judge_repo
from db.repo import status as status_repo
from reform_core.calibration import calibrate_pooled, calibrate_stratified, pooled_weights, stratum_rates
from reform_core.estimators import base
from reform_core.metrics.descriptions import DataShape, MetricDescriptions, describe_metrics
from reform_core.metrics.reform import reform_tables, unknown_baseline_targets
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.data.instances import label_column, load_adjudications, load_judged_with_baseline
from reform_core.services.scoring.numbers import json_number
from reform_core.unit_index import KS, build_index

DEFAULT_CALIBRATION = base.DEFAULT  # the default estimator (reform_core.estimators.base)
PAPER_RULES = ("stratified", "pooled")  # the paper's calibration rules: every row's p, the tables by plug-in
PAIR_META = status_repo.PAIR_META
SET_PAIR_ACTION = "set_pair"  # lead only
EMCR_METRICS = ("emcr", "r1", "r2", "r3")
SMALL_SHARE = 0.5  # Table 2 from fewer than this share of a model's instructions gets a warning
PAIR_HOWTO = "choose it with `python -m reform_core pair A B` or on the Judges page (or pass --judges A,B)"


class ScoringError(ValueError):
    """The request cannot be scored (unknown judge, no labels, no pair chosen, …)."""


# ============================================================================= the judge pair


def judge_names(engine: Engine) -> list[str]:
    """Every judge of the project, in creation order."""
    with engine.connect() as conn:
        return judge_repo.judge_names_in_order(conn)


def _judge_state(engine: Engine) -> pd.DataFrame:
    with engine.connect() as conn:
        return judge_repo.judge_label_state(conn)


def scoreable_judges(engine: Engine) -> list[str]:
    """Judges with at least one label, in creation order (the order of the CLI and every
    page). A judge whose judgments are all errors or abstentions is never scoreable."""
    state = _judge_state(engine)
    return state.loc[state["has_labels"], "name"].tolist()


def project_pair(engine: Engine) -> Optional[tuple[str, str]]:
    """The scoring pair stored in the project (``pair A B``), or None."""
    with engine.connect() as conn:
        pair = status_repo.stored_pair(conn)
    return (pair[0], pair[1]) if pair else None


def _check_pair(state: pd.DataFrame, pair: tuple[str, str], what: str) -> tuple[str, str]:
    names = state["name"].tolist()
    for n in pair:
        if n not in names:
            raise ScoringError(f"unknown judge {n!r} (known: {', '.join(names) or 'none'})")
    if pair[0] == pair[1]:
        raise ScoringError("the two judges of a pair must differ")
    for n in pair:
        if not bool(state.loc[state["name"] == n, "has_labels"].iloc[0]):
            raise ScoringError(
                f"{what}: judge {n!r} has no labels (its judgments are all errors or abstentions); it cannot be scored"
            )
    return pair[0], pair[1]


def set_pair(engine: Engine, principal: Principal, judge_a: str, judge_b: str) -> tuple[str, str]:
    """Store the project's scoring pair (lead only); both judges must exist and have labels."""
    require(principal, SET_PAIR_ACTION)
    pair = _check_pair(_judge_state(engine), (judge_a, judge_b), "pair")
    with engine.begin() as conn:
        data_repo.set_meta(conn, {PAIR_META: json.dumps(list(pair))})
    return pair


@dataclass(frozen=True)
class PairChoice:
    """Which two judges calibrate, and why.

    ``pair`` None when none can be chosen (``message`` says why and how to choose);
    ``source``: ``"--judges"``, ``"project"`` (stored with ``pair``), ``"only two judges"``,
    ``"single judge"`` (one labelled judge: raw scores only) or ``"none"``.
    """

    pair: Optional[tuple[str, str]]
    source: str
    scoreable: tuple[str, ...]
    message: str = ""

    def describe(self) -> str:
        if self.pair is None:
            return self.message
        how = {
            "--judges": "given with --judges",
            "project": "the project's pair",
            "only two judges": "the only two judges with labels; set it with `pair A B`",
        }[self.source]
        return f"{self.pair[0]} (A) and {self.pair[1]} (B) — {how}"


def resolve_pair(engine: Engine, judges: Optional[tuple[str, str]] = None) -> PairChoice:
    """The calibration pair: ``judges`` if given, else the project's pair, else the only two
    judges with labels. With more than two and none chosen there is no pair (never a guess)."""
    state = _judge_state(engine)
    scoreable = tuple(state.loc[state["has_labels"], "name"])
    if judges is not None:
        return PairChoice(_check_pair(state, tuple(judges), "--judges"), "--judges", scoreable)
    stored = project_pair(engine)
    if stored is not None:
        return PairChoice(_check_pair(state, stored, "the project's pair"), "project", scoreable)
    if len(scoreable) == 2:
        return PairChoice((scoreable[0], scoreable[1]), "only two judges", scoreable)
    if len(scoreable) == 1:
        return PairChoice(
            None, "single judge", scoreable, f"only one judge has labels ({scoreable[0]}): calibration needs two"
        )
    unlabelled = [n for n in state["name"] if n not in scoreable]
    if not scoreable:
        extra = f" (judges without labels: {', '.join(unlabelled)})" if unlabelled else ""
        return PairChoice(None, "none", scoreable, f"the project has no judged constrained responses to score{extra}")
    return PairChoice(
        None,
        "none",
        scoreable,
        f"no scoring pair chosen and {len(scoreable)} judges have labels ({', '.join(scoreable)}): " + PAIR_HOWTO,
    )


# ============================================================================= frames


@dataclass
class ProjectFrames:
    """Everything the scoring engine needs, loaded once."""

    instances: pd.DataFrame  # INSTANCES with label_<judge> for every labelled judge (label_a / label_b: the pair)
    baseline: pd.DataFrame
    adjudications: pd.DataFrame  # iid, a, choice (relative to judge_a), annotator
    judge_a: Optional[str]
    judge_b: Optional[str]
    judges: list[str] = field(default_factory=list)
    pair: Optional[PairChoice] = None


def _empty_adjudications() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "iid": pd.Series(dtype="int64"),
            "a": pd.Series(dtype=float),
            "choice": pd.Series(dtype=object),
            "annotator": pd.Series(dtype=object),
        }
    )


def load_project(engine: Engine, *, judges: Optional[tuple[str, str]] = None, need_pair: bool = True) -> ProjectFrames:
    """Instances with every labelled judge's labels (``label_<name>``; the calibration pair
    also as ``label_a`` / ``label_b``), the baseline features and the pair's current decisions.

    ``judges``: the calibration pair (default: :func:`resolve_pair`). ``need_pair=False``
    (raw-judge scoring) loads the frames even when no pair can be chosen.
    """
    choice = resolve_pair(engine, judges)
    if not choice.scoreable:
        raise ScoringError(choice.message)
    if choice.pair is None and need_pair:
        raise ScoringError(choice.message)
    inst, base = load_judged_with_baseline(engine, list(choice.scoreable))
    adj = _empty_adjudications()
    ja = jb = None
    if choice.pair is not None:
        ja, jb = choice.pair
        inst["label_a"] = inst[label_column(ja)]
        inst["label_b"] = inst[label_column(jb)]
        adj = load_adjudications(engine, ja, jb)[["iid", "a", "choice", "annotator"]]
    return ProjectFrames(inst, base, adj, ja, jb, list(choice.scoreable), choice)


# ============================================================================= scoring


@dataclass
class ScoreResult:
    tables: dict[str, pd.DataFrame]
    instances: pd.DataFrame  # the scored rows, with p (and source / provisional when calibrated)
    method: str  # "stratified" | "pooled" | "judge:<name>"
    provisional: bool
    rates: Optional[pd.DataFrame] = None
    frames: Optional[ProjectFrames] = None
    pair: Optional[tuple[str, str]] = None
    pair_source: str = ""
    catalogs: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)  # the scores that apply to this project
    models: pd.DataFrame = field(default_factory=pd.DataFrame)  # per model: coverage, exclusions, extra metrics
    notes: dict[str, list[str]] = field(default_factory=dict)  # per model: why a number is missing or partial
    messages: list[str] = field(default_factory=list)  # project-level notes (how the pair was chosen, …)
    other_pair_decisions: int = 0  # current decisions of plans over other judge pairs (not used here)
    index: Optional[object] = None  # UnitIndex of the main rows (reused by rescore)
    facts: Optional[dict] = None  # label-independent project facts (reused by rescore)
    unlabelled: pd.Series = field(default_factory=lambda: pd.Series(dtype=int))  # dropped instructions per model
    estimator: str = (
        ""  # an estimator's name (reform_core.estimators.base) or "judge:<name>" (score --json "estimator")
    )
    estimate: Optional[object] = None  # services.estimates.PlanEstimate when an estimator scored the main rows
    intervals: Optional[pd.DataFrame] = None  # model, metric, estimate, measurement_lo/_hi, population_lo/_hi
    interval_reps: int = 0
    interval_seed: int = 0
    # the default estimator's stratified calibration of every row (p, stratum, source, provisional)
    # and its rates: rescore updates them for new decisions instead of recalibrating the project
    stratified: Optional[tuple[pd.DataFrame, pd.DataFrame]] = None
    # what each reported metric means here (reform_core.metrics.descriptions): pages, score, exports
    descriptions: Optional[MetricDescriptions] = None


def drop_unlabelled(inst: pd.DataFrame, p: str = "p") -> tuple[pd.DataFrame, pd.Series]:
    """Drop every instruction (model × instruction) with a constraint whose ``p`` is missing:
    a product over the remaining constraints would score a different, easier instruction.
    Returns the kept rows and the dropped main-condition instructions per model."""
    missing = inst[p].isna().groupby([inst["model"], inst["instruction"]]).transform("any").to_numpy()
    dropped = inst[missing & (inst["condition"] == "main").to_numpy()]
    per_model = dropped.groupby("model")["instruction"].nunique()
    return (inst[~missing] if missing.any() else inst), per_model  # nothing dropped: no copy of the frame


def main_adjudications(frames: ProjectFrames) -> pd.DataFrame:
    """The current decisions on main-condition instances (the main scores' only adjudications;
    decisions on a single-constraint or prompted condition calibrate that condition alone)."""
    inst, adj = frames.instances, frames.adjudications
    idx = _main_iids(inst)
    if not idx.is_unique:
        return adj[adj["iid"].isin(idx)]
    return adj[idx.get_indexer(adj["iid"].to_numpy()) >= 0]  # the Index's own hash table, built once


_FRAME_FACTS: dict[tuple, tuple] = {}  # (id(frame), what) -> (weak reference to the frame, the fact)


def _frame_fact(frame: pd.DataFrame, what: str, compute: Callable[[], object]):
    """``compute()`` of a frame, kept while the frame lives (frames are never modified once made);
    rescoring after each decision asks the same frames the same questions several times. The fact
    must not refer to the frame itself (it would keep it alive)."""
    key = (id(frame), what)
    hit = _FRAME_FACTS.get(key)
    if hit is not None and hit[0]() is frame:
        return hit[1]
    value = compute()
    for k in [k for k, (ref, _) in list(_FRAME_FACTS.items()) if ref() is None]:
        _FRAME_FACTS.pop(k, None)
    _FRAME_FACTS[key] = (weakref.ref(frame), value)
    return value


def is_main(inst: pd.DataFrame) -> np.ndarray:
    """Whether each row of an INSTANCES frame is of the main condition (read-only; kept with the frame)."""

    def compute():
        mask = (inst["condition"] == "main").to_numpy(dtype=bool)
        mask.setflags(write=False)
        return mask

    return _frame_fact(inst, "main", compute)


def _main_iids(inst: pd.DataFrame) -> pd.Index:
    """The main-condition iids of an INSTANCES frame, as an Index kept while the frame lives (its
    hash table is built once: rescoring after each decision looks the new decisions up in it)."""
    return _frame_fact(inst, "main-iids", lambda: pd.Index(inst.loc[is_main(inst), "iid"].to_numpy()))


def disagreement_decisions(inst: pd.DataFrame, adj: pd.DataFrame) -> pd.DataFrame:
    """The decisions on instances where the pair's judges disagree. A decision on an audited
    agreement picks between two equal labels, so it says nothing about which judge to trust
    and must not enter the pooled weights (issue 13 point 7)."""
    g = pd.to_numeric(inst["label_a"], errors="coerce").to_numpy(dtype=float)
    m = pd.to_numeric(inst["label_b"], errors="coerce").to_numpy(dtype=float)
    dis = inst["iid"].to_numpy()[~np.isnan(g) & ~np.isnan(m) & (g != m)]
    return adj[adj["iid"].isin(dis)]


def calibrated_instances(
    frames: ProjectFrames, calibration: str = "stratified"
) -> tuple[pd.DataFrame, Optional[pd.DataFrame]]:
    """INSTANCES with ``p`` by the chosen calibration rule, and π̂_h (stratified only)."""
    if frames.judge_a is None:
        raise ScoringError(frames.pair.message if frames.pair else "no scoring pair")
    inst, adj = frames.instances, frames.adjudications
    if calibration == "stratified":
        rates = stratum_rates(inst, adj[["iid", "a"]])
        return calibrate_stratified(inst, adj[["iid", "a"]], rates=rates), rates
    if calibration == "pooled":
        # the paper's fixed pool: decisions on main-condition instances where the judges disagree
        inst_main = inst[inst["condition"] == "main"]
        pool = disagreement_decisions(inst_main, main_adjudications(frames))
        g, m = inst_main["label_a"].to_numpy(dtype=float), inst_main["label_b"].to_numpy(dtype=float)
        if pool.empty and (g != m)[~np.isnan(g) & ~np.isnan(m)].any():
            raise ScoringError(
                "pooled calibration needs decisions on disagreements of the main condition to fix the "
                "judge weights (decisions on audited agreements do not count)"
            )
        w = pooled_weights(pool, choice="choice") if len(pool) else pd.Series({"A": 0.5})  # no disagreement: unused
        out = calibrate_pooled(inst, float(w.get("A", 0.0)))
        out["provisional"] = False
        out.attrs.update(w_a=float(w.get("A", 0.0)), n_pool=int(len(pool)))
        return out, None
    raise ScoringError(f"calibration must be one of {', '.join(PAPER_RULES)}, got {calibration!r}")


def _project_facts(engine: Engine, *, decisions_only: bool = False) -> dict:
    from reform_core.catalog.loader import DEFAULT_METRICS
    from reform_core.services.data.catalogs import catalog_named

    if decisions_only:
        with engine.connect() as conn:
            return {"decisions": judge_repo.decisions_by_pair(conn)}
    with engine.connect() as conn:
        catalogs = data_repo.project_catalogs(conn)
        answered = judge_repo.answered_instructions(conn)
        coverage = judge_repo.baseline_coverage(conn)
        decisions = judge_repo.decisions_by_pair(conn)
        metrics: list[str] = []
        for name in catalogs or ["reformbench"]:
            try:
                declared = catalog_named(conn, name).metrics  # bundled, or stored with the project
            except ValueError:  # loaded before catalogs were stored with projects: the generic scores
                declared = DEFAULT_METRICS
            metrics += [m for m in declared if m not in metrics]
    return {
        "catalogs": catalogs,
        "metrics": metrics,
        "answered": answered.set_index("model")["instructions"],
        "baseline_annotated": coverage["annotated"],
        "decisions": decisions,
    }


def _other_pair_decisions(decisions: pd.DataFrame, pair: Optional[tuple[str, str]]) -> int:
    if decisions.empty:
        return 0
    mine = pd.Series(
        [pair is not None and {a, b} == set(pair) for a, b in zip(decisions["judge_a"], decisions["judge_b"])],
        dtype=bool,
        index=decisions.index,
    )
    return int(decisions.loc[~mine, "decisions"].sum())


def _rules_judges(engine: Engine, scoreable: list[str]) -> dict[str, str]:
    """``{mode: judge}`` of the labelled rules judges that ran in IFEval's strict / loose mode
    (the first of each, in creation order)."""
    state = _judge_state(engine)
    out: dict[str, str] = {}
    for r in state.itertuples(index=False):
        mode = (r.config or {}).get("mode") if r.provider == "rules" else None
        if mode in ("strict", "loose") and r.name in scoreable and mode not in out:
            out[mode] = r.name
    return out


def _verifier_accuracy(main: pd.DataFrame, judge: str) -> tuple[dict, int]:
    """IFEval's prompt- and instruction-level accuracy (%) of one rules judge's labels over the
    scored instructions it labelled completely; and the number it could not."""
    lab = main[label_column(judge)]
    complete = ~lab.isna().groupby([main["model"], main["instruction"]]).transform("any")
    d = main[complete.to_numpy()]
    prompts = d.groupby(["model", "instruction"])[label_column(judge)].min().groupby("model")
    out = {}
    for model, g in prompts:
        rows = d[d["model"] == model]
        out[model] = {
            "prompt_level": 100 * float(g.mean()),
            "instruction_level": 100 * float(rows[label_column(judge)].mean()),
            "judge": judge,
            "prompts": int(len(g)),
        }
    missing = int(main[~complete.to_numpy()].groupby(["model", "instruction"]).ngroups)
    return out, missing


def _coverage_notes(method: str, n_scored: int, n_answered: int, n_unlab: int) -> list[str]:
    """What a model's scores leave out: instructions without every label, or not judged yet."""
    note = []
    if n_scored == 0:
        note.append("no instruction of this model has a label for every constraint: nothing to score")
    if n_unlab:
        who = (
            f"judge {method[6:]} did not label"
            if method.startswith("judge:")
            else "a judge of the pair did not label"
            if _runs_estimator(method)
            else "neither judge of the pair labelled"
        )
        note.append(f"{n_unlab} instruction(s) with a constraint {who} are left out of every score")
    elif n_answered > n_scored:
        note.append(f"{n_answered - n_scored} answered instruction(s) are not judged yet and are left out")
    return note


def _emcr_notes(m: str, t2i: pd.DataFrame, known_models: set, n_unknown: int) -> list[str]:
    """Why a model's EMCR or R^K is missing or partial (where EMCR applies)."""
    note = []
    if m not in known_models:
        note.append(
            "emcr, r1, r2, r3: no baseline annotation for this model's questions, so no target is "
            "known to be baseline-opposed"
        )
    else:
        empty = [k for k in KS if int(t2i.loc[m, f"n{k}"]) == 0]
        note += [f"r{k}: no eligible units at K={k}" for k in empty]
        if empty:
            note.append(f"emcr: needs eligible units at every K (none at K={', '.join(map(str, empty))})")
    if n_unknown:
        note.append(
            f"{n_unknown} target(s) whose question has no baseline annotation for this model are left "
            "out of EMCR (opposition unknown)"
        )
    return note


def _model_facts(
    result_inst: pd.DataFrame,
    t2: pd.DataFrame,
    facts: dict,
    unlabelled: pd.Series,
    metrics: list[str],
    emcr: bool,
    verifier: dict[str, tuple[dict, int]],
    method: str,
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Per model: instructions answered / scored, exclusions, constraint level, notes (EMCR's
    only where it applies: ``emcr``, declared by the catalog and baseline data exists)."""
    main_rows = is_main(result_inst)
    main = result_inst if main_rows.all() else result_inst[main_rows]
    models = sorted(set(t2["model"].astype(str)) | set(facts["answered"].index.astype(str)) | set(unlabelled.index))
    unknown = facts["unknown_targets"]
    # per model through integer codes of the model column (no per-row iteration of its strings)
    m_codes, m_names = pd.factorize(main["model"])
    m_names = [str(x) for x in m_names]
    if len(main):
        p = main["p"].to_numpy(dtype=float)
        ok = ~np.isnan(p)
        total = np.bincount(m_codes[ok], p[ok], minlength=len(m_names))
        count = np.bincount(m_codes[ok], minlength=len(m_names))
        with np.errstate(invalid="ignore", divide="ignore"):
            level = pd.Series(100 * total / count, index=m_names)
    else:
        level = pd.Series(dtype=float)
    if "known_target_models" not in facts:  # label-independent: kept in the facts rescore reuses
        known = np.unique(m_codes[main["baseline_opposed"].notna().to_numpy()])
        facts["known_target_models"] = {m_names[k] for k in known}
    t2i = t2.set_index("model")
    rows, notes = [], {}
    for m in models:
        n_scored = int(t2i.loc[m, "n_instructions"]) if m in t2i.index else 0
        n_answered = int(facts["answered"].get(m, 0))
        n_unlab = int(unlabelled.get(m, 0))
        n_unknown = int(unknown.get(m, 0))
        note = _coverage_notes(method, n_scored, n_answered, n_unlab)
        if emcr and n_scored:  # EMCR's notes only where it applies (metrics.descriptions)
            note += _emcr_notes(m, t2i, facts["known_target_models"], n_unknown)
        for mode in ("strict", "loose"):
            if mode in metrics and mode not in verifier:
                note.append(
                    f"{mode}: no rules judge ran in {mode} mode "
                    f"(`python -m reform_core judge --provider rules --mode {mode}`)"
                )
            elif mode in metrics and verifier[mode][1]:
                note.append(
                    f"{mode}: {verifier[mode][1]} scored instruction(s) without a {mode} verifier label are "
                    "left out of it"
                )
        rows.append(
            {
                "model": m,
                "answered": n_answered,
                "scored": n_scored,
                "share_scored": (n_scored / n_answered) if n_answered else float("nan"),
                "unlabelled_instructions": n_unlab,
                "no_baseline_targets": n_unknown,
                "constraint_level": float(level.get(m, np.nan)),
            }
        )
        notes[m] = note
    return pd.DataFrame(rows), notes


def score(
    engine: Engine,
    principal: Principal,
    *,
    judge: Optional[str] = None,
    calibration: str = DEFAULT_CALIBRATION,
    judges: Optional[tuple[str, str]] = None,
    frames: Optional[ProjectFrames] = None,
    with_intervals: bool = False,
    reps: int = 2000,
    seed: int = 0,
) -> ScoreResult:
    """Every table of docs/metrics.md#reporting-tables from one judge's raw labels, the default estimator or a paper
    rule, with the pair, exclusions, applicable metrics and notes (module docstring).

    ``calibration``: ``cluster`` (default: the question-cluster estimator of the pair's newest
    question-cluster plan, :mod:`reform_core.services.scoring.estimates`; Table 2 and the constraint
    level are its estimates, the breakdown tables plug in each instance's point estimate; a
    pair without such a plan is scored with ``stratified`` and a note), ``stratified`` or
    ``pooled`` (the paper's rules). ``with_intervals`` adds the measurement and population
    intervals (``reps`` bootstrap replicates, ``seed``) as ``result.intervals``."""
    require(principal, "view_scores")
    frames = frames or load_project(engine, judges=judges, need_pair=judge is None)
    if frames.instances.empty:
        raise ScoringError("the project has no judged constrained responses to score")
    messages = []
    choice = frames.pair
    if judge is None and frames.judge_a is None and choice is not None and choice.source == "single judge":
        judge = choice.scoreable[0]
        messages.append(f"{choice.message}; scored from judge {judge}'s raw labels")
    if judge is not None:
        col = label_column(judge)
        if col not in frames.instances:
            known = judge_names(engine)
            if judge in known:
                raise ScoringError(f"judge {judge!r} has no labels (its judgments are all errors or abstentions)")
            raise ScoringError(f"unknown judge {judge!r} (known: {', '.join(known) or 'none'})")
        inst = frames.instances.assign(p=frames.instances[col])  # copy-on-write: the frames' columns are shared
        method, rates = f"judge:{judge}", None
    else:
        method, plan = _estimator_and_plan(engine, frames, calibration, messages)
        inst, rates = calibrated_instances(frames, method if method in PAPER_RULES else "stratified")
        if method not in PAPER_RULES:
            stratified = (inst, rates)
            inst, rates = _both_labels_required(inst), None
    inst, unlabelled = drop_unlabelled(inst)
    if inst.empty:
        raise ScoringError(
            f"nothing to score: every one of the {int(unlabelled.sum())} "
            "instruction(s) has a constraint a judge of the pair did not label (judge the missing "
            "pairs, or import their labels)"
        )
    main = is_main(inst)
    if not main.any():
        raise ScoringError("no judged instruction of the main condition to score yet")
    est, index = None, None
    if _runs_estimator(method):
        index = build_index(inst[main] if not main.all() else inst)
        inst, est = _estimator_scored(
            engine, frames, inst, main, method, plan, index=index, with_intervals=with_intervals, reps=reps, seed=seed
        )
    result = _assemble(engine, frames, inst, rates, method, unlabelled, messages, estimate=est, index=index)
    if _runs_estimator(method):
        result.stratified = stratified
    if with_intervals:
        add_intervals(result, reps=reps, seed=seed)
    return result


def _is_provisional(method: str, inst: pd.DataFrame, estimate) -> bool:
    """Whether scores by ``method`` are provisional (work still to come)."""
    if method.startswith("judge:"):
        return False
    if _runs_estimator(method):  # work the plan asks for is still to come (tasks undecided, opinions owed)
        return bool(estimate is not None and estimate.estimate.provisional)
    return bool(inst.get("provisional", pd.Series(False)).any())


def _fresh_facts(engine: Engine, fixed: dict) -> dict:
    """The project facts: read anew, with the label-independent ones of an earlier result kept."""
    facts = _project_facts(engine, decisions_only=bool(fixed))
    facts.update({k: v for k, v in fixed.items() if k != "decisions"})
    return facts


def _main_tables(
    frames: ProjectFrames,
    main_rows: pd.DataFrame,
    index,
    method: str,
    estimate,
    metrics: list[str],
    messages: list[str],
) -> dict:
    """The reform tables of the main rows (the estimator's Table 2 where it runs; no EMCR without a baseline)."""
    evaluation = None
    if estimate is not None and estimate.index is index and _runs_estimator(method):
        # the main rows' p is the estimator's smooth: its evaluation is the tables' (computed with it)
        evaluation = estimate.take_evaluation()
    tables = reform_tables(
        main_rows,
        baseline=frames.baseline,
        adjudications=main_adjudications(frames),
        choice="choice",
        index=index,
        evaluation=evaluation,
    )
    if estimate is not None:
        _estimator_table2(tables, estimate)
        messages += [f"default estimator (plan {estimate.plan!r}): {n}" for n in estimate.notes]
    if "emcr" not in metrics:
        tables["table2"][list(EMCR_METRICS)] = np.nan
    return tables


def _complete_facts(
    engine: Engine, frames: ProjectFrames, facts: dict, metrics: list[str], main_rows: pd.DataFrame
) -> None:
    """Add the rule judges, unknown baseline targets and constraint counts to ``facts`` where missing."""
    if "rules" not in facts:
        facts["rules"] = _rules_judges(engine, frames.judges) if {"strict", "loose"} & set(metrics) else {}
    if "unknown_targets" not in facts:
        facts["unknown_targets"] = unknown_baseline_targets(main_rows) if len(main_rows) else pd.Series(dtype=int)
    if "constraint_counts" not in facts:  # label-independent: kept in the facts rescore reuses
        facts["constraint_counts"] = constraint_counts(main_rows)


def _model_table(
    inst: pd.DataFrame,
    main_rows: pd.DataFrame,
    table2: pd.DataFrame,
    facts: dict,
    unlabelled: pd.Series,
    metrics: list[str],
    emcr_description: bool,
    method: str,
    estimate,
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The per-model facts and notes, with the rule verifiers' accuracy and judge and the estimator's level."""
    rules = facts["rules"]
    verifier = {mode: _verifier_accuracy(main_rows, j) for mode, j in rules.items()}
    models, notes = _model_facts(inst, table2, facts, unlabelled, metrics, emcr_description, verifier, method)
    for mode, (acc, _) in verifier.items():
        for key in ("prompt_level", "instruction_level"):
            models[f"{mode}_{key}"] = models["model"].map({m: a[key] for m, a in acc.items()})
        models[f"{mode}_judge"] = rules[mode]
    if estimate is not None:
        level = models["model"].map(estimate.table.set_index("model")["constraint_level"]).to_numpy(dtype=float)
        models["constraint_level"] = _within_range(models["model"], level, "constraint_level", estimate.notes)
    return models, notes


def _assemble(
    engine: Engine,
    frames: ProjectFrames,
    inst: pd.DataFrame,
    rates: Optional[pd.DataFrame],
    method: str,
    unlabelled: pd.Series,
    messages: list[str],
    *,
    index=None,
    facts: Optional[dict] = None,
    estimate=None,
) -> ScoreResult:
    """The tables, per-model facts and notes of scored rows ``inst``. ``index`` (the unit index
    of the main rows) and ``facts`` (the label-independent project facts) may come from an
    earlier result of the same instances (:func:`rescore`)."""
    choice = frames.pair
    provisional = _is_provisional(method, inst, estimate)
    main = is_main(inst)
    facts = _fresh_facts(engine, dict(facts or {}))
    has_baseline = facts["baseline_annotated"] > 0
    metrics = [m for m in facts["metrics"] if has_baseline or m not in EMCR_METRICS]
    main_rows = inst if main.all() else inst[main]  # all main (the usual case): no copy of the rows
    index = index if index is not None else build_index(main_rows)
    tables = _main_tables(frames, main_rows, index, method, estimate, metrics, messages)
    _complete_facts(engine, frames, facts, metrics, main_rows)
    descriptions = describe_metrics(
        facts["metrics"], DataShape.of(facts["constraint_counts"], has_baseline=has_baseline)
    )
    if descriptions.note and descriptions.note not in messages:
        messages.append(descriptions.note)
    models, notes = _model_table(
        inst, main_rows, tables["table2"], facts, unlabelled, metrics, descriptions.emcr, method, estimate
    )
    if frames.judge_a is not None and choice is not None:
        messages.insert(0, f"scoring pair: {choice.describe()}")
    return ScoreResult(
        tables=tables,
        instances=inst,
        method=method,
        provisional=provisional,
        rates=rates,
        frames=frames,
        pair=(frames.judge_a, frames.judge_b) if frames.judge_a else None,
        pair_source=choice.source if choice and frames.judge_a else "",
        catalogs=facts["catalogs"],
        metrics=metrics,
        models=models,
        notes=notes,
        messages=messages,
        other_pair_decisions=_other_pair_decisions(
            facts["decisions"], frames.judge_a and (frames.judge_a, frames.judge_b)
        ),
        index=index,
        facts={k: v for k, v in facts.items() if k != "decisions"},
        unlabelled=unlabelled,
        estimator=method,
        estimate=estimate,
        descriptions=descriptions,
    )


def constraint_counts(main_rows: pd.DataFrame) -> list[int]:
    """The distinct numbers of constraints of the scored prompts (the data's shape that the
    metric texts follow: TCPR says "all three" only where every prompt has three)."""
    if main_rows.empty:
        return []
    pairs = main_rows[["instruction", "position"]].drop_duplicates()
    return sorted(set(pairs.groupby("instruction", sort=False).size().tolist()))


def _both_labels_required(inst: pd.DataFrame) -> pd.DataFrame:
    """The default estimator needs both judges' labels on every scored main row: a main row
    with one label only gets ``p`` NaN, so its instruction is left out and counted."""
    one = _frame_fact(
        inst, "main-one-label", lambda: is_main(inst) & (inst["label_a"].isna() | inst["label_b"].isna()).to_numpy()
    )
    if not one.any():
        return inst
    p = inst["p"].to_numpy(dtype=float, copy=True)
    p[one] = np.nan
    return inst.assign(p=p)  # copy-on-write: the other columns stay shared


def _runs_estimator(method: str) -> bool:
    """Whether ``method`` scores the main rows with an estimator of the seam (the default one or a
    registered other), rather than a paper rule's plug-in or one judge's raw labels."""
    return not method.startswith("judge:") and method not in PAPER_RULES


def _estimator_and_plan(engine: Engine, frames: ProjectFrames, name: str, messages: list) -> tuple[str, Optional[dict]]:
    """The method that will score (``name``, or the stratified rule when a plan-based estimator
    has no plan yet, with a note) and the plan it runs on."""
    try:
        estimator = base.get(name)
    except ValueError as exc:
        raise ScoringError(f"calibration: {exc}") from None
    if not estimator.needs_plan:
        return name, None
    from reform_core.services.scoring import estimates

    plan = estimates.design_plan(engine, frames.judge_a, frames.judge_b)
    if plan is None:
        messages.append(
            "no question-cluster plan for the scoring pair yet, so the default estimator cannot run: "
            "scored with the paper's stratified rule — create one with `python -m reform_core plan "
            f"--judges {frames.judge_a},{frames.judge_b}` or on the Sampling page"
        )
        return "stratified", None
    return name, plan


def _estimator_scored(
    engine: Engine,
    frames: ProjectFrames,
    inst: pd.DataFrame,
    main: np.ndarray,
    method: str,
    plan: Optional[dict],
    *,
    index,
    with_intervals: bool,
    reps: int,
    seed: int,
    known_inputs=None,
    known_source: Optional[pd.Series] = None,
):
    """Run the estimator ``method`` on the scored main rows (``index``: their unit index); ``p``
    of those rows becomes each instance's point estimate (``source`` = the estimator's name) for
    the plug-in breakdown tables. ``known_inputs``: the plan inputs of the result being rescored
    (its tasks are reused while the plan's tasks are the same); ``known_source``: that result's
    ``source`` column (reused when it is the same all-estimator column)."""
    from reform_core.services.scoring import estimates

    rows = inst[main] if not main.all() else inst
    if plan is None:
        est = estimates.plain_estimate(
            rows, method, frames.adjudications, intervals=with_intervals, reps=reps, seed=seed, index=index
        )
    else:
        inputs = estimates.plan_inputs(engine, plan, frames.instances, known=known_inputs)
        est = estimates.cluster_estimate(
            rows, plan, inputs, intervals=with_intervals, reps=reps, seed=seed, index=index
        )
        other = estimates.other_plan_decisions(engine, plan)
        if other:
            est.notes.append(
                f"{other} decision(s) of the pair's other plans are not used by this estimator (it needs "
                "the design of its own plan); the paper's rules use them"
            )
    p = inst["p"].to_numpy(dtype=float, copy=True)
    smooth, rid = est.smooth, rows["iid"].to_numpy()
    aligned = len(smooth) == len(rid) and np.array_equal(smooth.index.to_numpy(), rid)  # the usual case: same rows
    p[main] = smooth.to_numpy(dtype=float) if aligned else smooth.reindex(rid).to_numpy(dtype=float)
    cols = {"p": p}
    if "source" in inst.columns:
        if main.all():  # every row is the estimator's: one value, no per-row copy of the strings
            kept = (
                known_source is not None
                and len(known_source) == len(inst)
                and known_source.index.equals(inst.index)
                and str(known_source.dtype) == "str"
                and bool((known_source == method).all())
            )
            cols["source"] = known_source if kept else pd.Series(method, index=inst.index, dtype="str")
        else:
            src = inst["source"].to_numpy(dtype=object, copy=True)
            src[main] = method
            cols["source"] = src
    if "provisional" in inst.columns:  # the estimator's rows are never the stratified rule's fallback
        cols["provisional"] = np.where(main, False, inst["provisional"].to_numpy(dtype=bool))
    return inst.assign(**cols), est  # copy-on-write: the other columns stay shared


def _estimator_table2(tables: dict, est) -> None:
    """Table 2's rates from the estimator (the plug-in of point estimates is biased for
    products); the TCPR / EMCR rank comparison follows them."""
    from reform_core.metrics.reform import rank_comparison

    t2 = tables["table2"]
    e = est.table.set_index("model")
    for col in ("tcpr", "emcr", "r1", "r2", "r3"):
        t2[col] = _within_range(t2["model"], t2["model"].map(e[col]).to_numpy(dtype=float), col, est.notes)
    tables["ranks"] = rank_comparison(t2)


def _within_range(models, raw: np.ndarray, metric: str, notes: list) -> np.ndarray:
    """An estimator's values clipped to a score's range [0, 100], with a note for each one that
    was outside it (the unbiased value is reported in the note, never silently)."""
    for m, v in zip(models, raw):
        if not np.isnan(v) and not 0.0 <= v <= 100.0:
            notes.append(
                f"{m}: {metric}: the estimator's unbiased value {v:.2f} lies outside [0, 100] (a few "
                "decisions carry large design weights); shown clipped — adjudicate more to steady it"
            )
    return np.clip(raw, 0.0, 100.0)


def add_intervals(result: ScoreResult, *, reps: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Fill ``result.intervals`` (and, for the default estimator, replace ``result.estimate``
    by the run with the adjudicator-error refits) from :func:`compute_intervals`."""
    ci, est = compute_intervals(result, reps=reps, seed=seed)
    result.intervals, result.interval_reps, result.interval_seed = ci, int(reps), int(seed)
    if est is not None:
        result.estimate = est
    return ci


def compute_intervals(result: ScoreResult, *, reps: int = 2000, seed: int = 0):
    """Measurement and population 95 % intervals for the result's method, without changing
    ``result``: the default estimator (rerun with the adjudicator-error refits and the
    population bootstrap), the paper's stratified / pooled rules
    (:mod:`reform_core.estimators.paper`) or one judge's raw labels (population only).
    Bounds are clipped to [0, 100] (a score's range: clipping never loses coverage).

    Returns ``(frame, estimate)``: ``model, metric, estimate, measurement_lo/_hi,
    population_lo/_hi`` and the rerun :class:`~reform_core.services.scoring.estimates.Estimate`
    (None unless the default estimator scored)."""
    from reform_core.services.scoring import estimates

    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise ScoringError(f"--reps must be a positive integer, got {reps!r}")
    main = result.instances[result.instances["condition"] == "main"]
    est = result.estimate
    if est is not None:
        if not est.with_population or est.reps != reps or est.seed != seed:
            # the same rows as the scoring run: its unit index and the design arrays it keeps are reused
            if est.design is None:
                full = estimates.plain_estimate(
                    main,
                    result.method,
                    result.frames.adjudications,
                    intervals=True,
                    reps=reps,
                    seed=seed,
                    index=est.index,
                )
            else:
                plan = {"id": None, "name": est.plan, "params": est.design.to_stored()}
                full = estimates.cluster_estimate(
                    main, plan, est.inputs, intervals=True, reps=reps, seed=seed, index=est.index
                )
            full.estimate.notes = est.notes
            est = full
        ci = est.scores
    elif result.method in ("stratified", "pooled"):
        ci = estimates.paper_intervals(
            main,
            result.frames.adjudications,
            result.method,
            reps=reps,
            seed=seed,
            rates=result.rates if result.method == "stratified" else None,
            index=result.index if result.method == "stratified" else None,
        )
    else:
        ci = estimates.raw_intervals(main, reps=reps, seed=seed)
    t2 = result.tables["table2"].set_index("model")
    ci = ci[ci["metric"].isin((*estimates.INTERVAL_METRICS, "constraint_level"))].reset_index(drop=True)
    bounds = ["measurement_lo", "measurement_hi", "population_lo", "population_hi"]
    if "emcr" not in result.metrics:
        ci.loc[ci["metric"].isin(EMCR_METRICS), bounds] = np.nan
    level = result.models.set_index("model")["constraint_level"]
    ci["estimate"] = [
        (level.get(m, np.nan) if k == "constraint_level" else t2.loc[m, k] if m in t2.index else np.nan)
        for m, k in zip(ci["model"], ci["metric"])
    ]
    ci[bounds] = ci[bounds].clip(0.0, 100.0)
    return ci[["model", "metric", "estimate", *bounds]], est


def rescore(engine: Engine, principal: Principal, previous: ScoreResult, adjudications: pd.DataFrame) -> ScoreResult:
    """``previous`` with the pair's current decisions replaced by ``adjudications`` (the
    :func:`~reform_core.services.data.instances.load_adjudications` frame), everything else of the
    project unchanged (issue 16: the Scores page after a new decision).

    Only what decisions change is recomputed: the stratified rule recalibrates the models whose
    decisions changed (strata and their fallback are per model) and keeps every other row's p;
    the pooled rule reweights every disagreement; a raw judge's labels do not change. The tables
    are rebuilt from the kept unit index, the label-independent facts are kept. The result
    equals :func:`score` on the same data (tests/integration/test_score_state.py).
    """
    require(principal, "view_scores")
    if previous.frames is None or previous.index is None:
        raise ValueError("rescore needs a result of score() (with its frames and unit index)")
    from dataclasses import replace

    adj = adjudications[["iid", "a", "choice", "annotator"]].reset_index(drop=True)
    frames = replace(previous.frames, adjudications=adj)
    if _runs_estimator(previous.method):
        if previous.estimate is None or previous.estimate.design is None:  # a plan-less estimator: run it again
            return score(engine, principal, calibration=previous.method, frames=frames)
        return _rescore_cluster(engine, principal, previous, frames)
    old, inst, rates = previous.instances, previous.instances, previous.rates
    if previous.method == "pooled":
        full, rates = calibrated_instances(frames, "pooled")
        kept = full["iid"].isin(old["iid"]).to_numpy()
        inst = old.assign(p=full["p"].to_numpy()[kept], source=full["source"].to_numpy()[kept])
    elif previous.method == "stratified":
        inst, rates = _stratified_update(old, rates, previous.frames.adjudications, frames)
    messages = [m for m in previous.messages if not m.startswith("scoring pair: ")]
    return _assemble(
        engine,
        frames,
        inst,
        rates,
        previous.method,
        previous.unlabelled,
        messages,
        index=previous.index,
        facts=previous.facts,
    )


def _stratified_update(
    old: pd.DataFrame, rates: pd.DataFrame, before_adj: pd.DataFrame, frames: ProjectFrames
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows ``old`` (stratified-calibrated under ``before_adj``) and their ``rates`` under the
    decisions of ``frames``: only the models whose decisions changed are recalibrated (strata
    and their fallback are per model); every other row keeps its p, stratum, source and
    provisional flag."""
    adj = frames.adjudications
    before = pd.Series(before_adj["a"].to_numpy(float), index=before_adj["iid"].to_numpy())
    now = pd.Series(adj["a"].to_numpy(float), index=adj["iid"].to_numpy())
    both = before.index.union(now.index)
    changed = both[before.reindex(both).fillna(-1).to_numpy() != now.reindex(both).fillna(-1).to_numpy()]
    rows = frames.instances
    touched = pd.unique(rows.loc[rows["iid"].isin(changed), "model"])
    if not len(touched):
        return old, rates
    sub = rows[rows["model"].isin(touched)]
    sub_adj = adj[adj["iid"].isin(sub["iid"])]
    sub_rates = stratum_rates(sub, sub_adj[["iid", "a"]])
    cal = calibrate_stratified(sub, sub_adj[["iid", "a"]], rates=sub_rates)
    pos = pd.Index(old["iid"]).get_indexer(cal["iid"])
    hit = pos >= 0
    cols = {}
    for c in ("p", "stratum", "source", "provisional"):
        v = old[c].to_numpy().copy()
        v[pos[hit]] = cal[c].to_numpy()[hit]
        cols[c] = v
    keep = ~rates["model"].isin(touched) if rates is not None else None
    rates = pd.concat([rates[keep], sub_rates], ignore_index=True) if rates is not None else sub_rates
    return old.assign(**cols), rates


def _rescore_cluster(engine: Engine, principal: Principal, previous: ScoreResult, frames: ProjectFrames) -> ScoreResult:
    """:func:`rescore` for the default estimator: the kept stratified calibration is updated
    for the new decisions (its non-main rows are what the tables use; main rows are scored by
    the estimator), the kept rows, unit index, the estimator's design arrays (in the index) and
    the project facts are reused; the estimator itself reruns on the plan's current decisions."""
    from reform_core.services.scoring import estimates

    plan = estimates.design_plan(engine, frames.judge_a, frames.judge_b)
    if (
        previous.stratified is None
        or previous.estimate is None
        or plan is None
        or plan["name"] != previous.estimate.plan
    ):
        return score(engine, principal, calibration=previous.method, frames=frames)
    s_inst, s_rates = previous.stratified
    if not is_main(s_inst).all():
        # the stratified rule scores the other conditions: apply the new decisions to it (its main rows'
        # p, source and provisional flag are the estimator's; their stratum does not depend on decisions)
        s_inst, s_rates = _stratified_update(s_inst, s_rates, previous.frames.adjudications, frames)
    inst = _both_labels_required(s_inst)
    kept = previous.instances
    if len(kept) != len(inst):  # the rows drop_unlabelled kept (labels did not change: the same rows)
        inst = inst.iloc[pd.Index(inst["iid"]).get_indexer(kept["iid"])]
    main = is_main(inst)
    messages = [m for m in previous.messages if not m.startswith(("scoring pair: ", "default estimator (plan "))]
    inst, est = _estimator_scored(
        engine,
        frames,
        inst,
        main,
        previous.method,
        plan,
        index=previous.index,
        with_intervals=False,
        reps=2000,
        seed=0,  # score()'s defaults
        known_inputs=previous.estimate.inputs,
        known_source=kept["source"] if "source" in kept.columns else None,
    )
    result = _assemble(
        engine,
        frames,
        inst,
        None,
        previous.method,
        previous.unlabelled,
        messages,
        index=previous.index,
        facts=previous.facts,
        estimate=est,
    )
    result.stratified = (s_inst, s_rates)
    return result


def score_json(result: ScoreResult) -> dict:
    """The ``score --json`` shape (docs/formats.md#adjudication-and-scores) (percentages; ``None`` plus a note where a metric does
    not apply or has no eligible data)."""
    t2 = result.tables["table2"].set_index("model")
    emcr = "emcr" in result.metrics
    models = {}
    for r in result.models.itertuples(index=False):
        m = str(r.model)
        row = t2.loc[m] if m in t2.index else None
        out = {k: json_number(row[k]) if row is not None else None for k in ("tcpr", "emcr", "r1", "r2", "r3")}
        out["units"] = [int(row[f"n{k}"]) if row is not None else 0 for k in KS]
        out["constraint_level"] = json_number(r.constraint_level)
        if "prompt_level" in result.metrics:
            out["prompt_level"], out["instruction_level"] = out["tcpr"], out["constraint_level"]
        for mode in ("strict", "loose"):
            if mode in result.metrics:
                pl = getattr(r, f"{mode}_prompt_level", None)
                out[mode] = (
                    None
                    if pl is None or pd.isna(pl)
                    else {
                        "prompt_level": json_number(pl),
                        "instruction_level": json_number(getattr(r, f"{mode}_instruction_level")),
                        "judge": getattr(r, f"{mode}_judge"),
                    }
                )
        out["instructions"] = {"answered": int(r.answered), "scored": int(r.scored)}
        out["excluded"] = {"unlabelled_instructions": int(r.unlabelled_instructions)}
        if emcr:  # EMCR's exclusions only where EMCR applies (declared and baseline data exists)
            out["excluded"] = {"no_baseline_targets": int(r.no_baseline_targets), **out["excluded"]}
        out["notes"] = list(result.notes.get(m, []))
        if result.intervals is not None:
            from reform_core.services.scoring.estimates import intervals_json

            out["intervals"] = intervals_json(result.intervals, m)
        models[m] = out
    doc = {
        "models": models,
        "method": result.method,
        "estimator": result.estimator or result.method,
        "provisional": result.provisional,
        "pair": list(result.pair) if result.pair else None,
        "pair_source": result.pair_source or None,
        "catalogs": result.catalogs,
        "metrics": result.metrics,
        "metric_definitions": result.descriptions.as_dict() if result.descriptions else {},
        "notes": result.messages,
        "other_pair_decisions": result.other_pair_decisions,
    }
    if result.intervals is not None:
        doc["intervals"] = {"level": 0.95, "reps": result.interval_reps, "seed": result.interval_seed}
    if result.estimate is not None:
        from reform_core.services.scoring.estimates import estimate_json

        estimate_json(result.estimate, doc, verdict_estimate(result))
    return doc


def verdict_estimate(result: ScoreResult):
    """The estimate the planner's verdict reads (:func:`reform_core.services.scoring.estimates.verdict`):
    the result's own when it was made with intervals, else the default estimator rerun with the
    adjudicator-error refits on the same rows (seed 0, as the Scores page's intervals); None
    without a plan-based estimate."""
    from reform_core.services.scoring import estimates

    est = result.estimate
    if est is None or est.design is None:
        return None
    if est.with_population and est.forward is not None:
        return est
    main = result.instances[result.instances["condition"] == "main"]
    plan = {"id": None, "name": est.plan, "params": est.design.to_stored()}
    return estimates.verdict_run(main, plan, est.inputs, index=est.index, seed=est.seed)


def intervals(result: ScoreResult, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """95 % intervals (question bootstrap; also resampling adjudications when stratified)."""
    from reform_core.metrics.intervals import bootstrap_intervals

    inst = result.instances[result.instances["condition"] == "main"]
    return bootstrap_intervals(
        inst,
        n_boot=n_boot,
        rng=np.random.default_rng(seed),
        rates=result.rates if result.method == "stratified" else None,
    )
