"""Scoring use case: load frames from the database, calibrate, compute every table.

``load_project`` reads the INSTANCES frame (frames.py, via ``services/instances.py``) with
every judge's labels, the baseline features and the current adjudications; ``score``
calibrates (stratified or pooled) or takes one judge's raw labels, then runs the pure
engine (``reform_core.metrics``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import scoring as judge_repo
from reform_core.calibration import calibrate_pooled, calibrate_stratified, pooled_weights, stratum_rates
from reform_core.metrics.reform import build_index, reform_tables
from reform_core.services.auth import Principal, require
from reform_core.services.instances import label_column, load_adjudications, load_judged

CALIBRATIONS = ("stratified", "pooled")


class ScoringError(ValueError):
    """The request cannot be scored (unknown judge, no labels, …)."""


@dataclass
class ProjectFrames:
    """Everything the scoring engine needs, loaded once."""

    instances: pd.DataFrame  # INSTANCES with label_a / label_b (and label_<judge> for every judge)
    baseline: pd.DataFrame
    adjudications: pd.DataFrame  # iid, a, choice (relative to judge_a), annotator
    judge_a: str
    judge_b: str
    judges: list[str] = field(default_factory=list)


def judge_names(engine: Engine) -> list[str]:
    """Every judge of the project, in creation order."""
    with engine.connect() as conn:
        return judge_repo.judge_names_in_order(conn)


def load_project(engine: Engine, *, judges: Optional[tuple[str, str]] = None) -> ProjectFrames:
    """Instances with every judge's labels (``label_<name>``; the calibration pair also as
    ``label_a`` / ``label_b``), the baseline features and the pair's current decisions.

    ``judges``: the calibration pair; default the first two judges of the project.
    """
    names = judge_names(engine)
    if not names:
        raise ScoringError("the project has no judged constrained responses to score")
    if judges is None:
        pair = (names[0], names[1]) if len(names) >= 2 else (names[0], names[0])
    else:
        for n in judges:
            if n not in names:
                raise ScoringError(f"unknown judge {n!r} (known: {', '.join(names)})")
        if judges[0] == judges[1]:
            raise ScoringError("the two judges of a pair must differ")
        pair = judges
    inst = load_judged(engine, names)
    inst["label_a"] = inst[label_column(pair[0])]
    inst["label_b"] = inst[label_column(pair[1])]
    with engine.connect() as conn:
        base = judge_repo.baseline_present(conn)
    if pair[0] != pair[1]:
        adj = load_adjudications(engine, pair[0], pair[1])[["iid", "a", "choice", "annotator"]]
    else:
        adj = pd.DataFrame({"iid": pd.Series(dtype="int64"), "a": pd.Series(dtype=float),
                            "choice": pd.Series(dtype=object), "annotator": pd.Series(dtype=object)})
    return ProjectFrames(inst, base, adj, pair[0], pair[1], names)


@dataclass
class ScoreResult:
    tables: dict[str, pd.DataFrame]
    instances: pd.DataFrame  # with p (and source / provisional when calibrated)
    method: str  # "stratified" | "pooled" | "judge:<name>"
    provisional: bool
    rates: Optional[pd.DataFrame] = None
    frames: Optional[ProjectFrames] = None


def calibrated_instances(frames: ProjectFrames, calibration: str = "stratified") -> tuple[pd.DataFrame, Optional[pd.DataFrame]]:
    """INSTANCES with ``p`` by the chosen calibration rule, and π̂_h (stratified only)."""
    inst, adj = frames.instances, frames.adjudications
    if calibration == "stratified":
        rates = stratum_rates(inst, adj[["iid", "a"]])
        return calibrate_stratified(inst, adj[["iid", "a"]], rates=rates), rates
    if calibration == "pooled":
        if adj.empty:
            raise ScoringError("pooled calibration needs adjudications to fix the judge weights")
        w = pooled_weights(adj, choice="choice")
        out = calibrate_pooled(inst, float(w.get("A", 0.0)))
        out["provisional"] = False
        return out, None
    raise ScoringError(f"calibration must be one of {', '.join(CALIBRATIONS)}, got {calibration!r}")


def score(engine: Engine, principal: Principal, *, judge: Optional[str] = None, calibration: str = "stratified",
          judges: Optional[tuple[str, str]] = None, frames: Optional[ProjectFrames] = None) -> ScoreResult:
    """Every table of SPEC §3 from one judge's raw labels or calibrated probabilities."""
    require(principal, "view_scores")
    frames = frames or load_project(engine, judges=judges)
    if frames.instances.empty:
        raise ScoringError("the project has no judged constrained responses to score")
    if judge is not None:
        col = f"label_{judge}"
        if col not in frames.instances:
            raise ScoringError(f"unknown judge {judge!r} (known: {', '.join(frames.judges) or 'none'})")
        inst = frames.instances.copy()
        inst["p"] = inst[col]
        missing = inst["p"].isna().groupby([inst["model"], inst["instruction"]]).transform("any")
        inst = inst[~missing]
        if inst.empty:
            raise ScoringError(f"judge {judge!r} has no complete instruction to score")
        method, provisional, rates = f"judge:{judge}", False, None
    else:
        inst, rates = calibrated_instances(frames, calibration)
        inst = inst[inst["p"].notna()]
        method, provisional = calibration, bool(inst.get("provisional", pd.Series(False)).any())
    main = inst["condition"] == "main"
    if not main.any():
        raise ScoringError("no judged instruction of the main condition to score yet")
    index = build_index(inst[main])
    tables = reform_tables(inst[main], baseline=frames.baseline, adjudications=frames.adjudications,
                           choice="choice", index=index)
    return ScoreResult(tables=tables, instances=inst, method=method, provisional=provisional, rates=rates, frames=frames)


def score_json(result: ScoreResult) -> dict:
    """The SPEC §8 ``score --json`` shape (percentages)."""
    t2 = result.tables["table2"]
    models = {}
    for _, r in t2.iterrows():
        models[str(r["model"])] = {
            "tcpr": _num(r["tcpr"]), "emcr": _num(r["emcr"]),
            "r1": _num(r["r1"]), "r2": _num(r["r2"]), "r3": _num(r["r3"]),
            "units": [int(r["n1"]), int(r["n2"]), int(r["n3"])],
        }
    return {"models": models, "method": result.method, "provisional": result.provisional}


def _num(v) -> Optional[float]:
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else round(float(v), 6)


def intervals(result: ScoreResult, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """95 % intervals (question bootstrap; also resampling adjudications when stratified)."""
    from reform_core.metrics.intervals import bootstrap_intervals

    inst = result.instances[result.instances["condition"] == "main"]
    return bootstrap_intervals(inst, n_boot=n_boot, rng=np.random.default_rng(seed),
                               rates=result.rates if result.method == "stratified" else None)
