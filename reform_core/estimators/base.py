"""The estimation seam: what every estimator takes, what it returns, and the registry by name.

An estimator turns a benchmark's scored rows, the judges' labels and the humans' decisions into
the scores of ``docs/metrics.md`` with two intervals (measurement: this fixed benchmark;
population: new questions drawn the same way). It implements :class:`Estimator` and is found by
name through :func:`get`; the CLI, the export, the pages, the planner's verdict and the bench all
reach estimators this way only. :data:`DEFAULT` names the default, once.

Adding an estimator is one module with an object implementing :class:`Estimator` plus one line in
:data:`BUILTIN` (or a :func:`register` call, e.g. from a test).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, runtime_checkable

import pandas as pd

DEFAULT = "cluster"
# name -> "module:attribute" of a built-in estimator (imported on first use: start-up stays light)
BUILTIN = {
    "cluster": "reform_core.estimators.cluster.estimator:ESTIMATOR",
    "stratified": "reform_core.estimators.paper:STRATIFIED",
    "pooled": "reform_core.estimators.paper:POOLED",
}
METRICS = ("tcpr", "emcr", "r1", "r2", "r3", "constraint_level")
INTERVAL_COLUMNS = ["model", "metric", "estimate", "measurement_lo", "measurement_hi", "population_lo", "population_hi"]


@dataclass(frozen=True)
class EstimationData:
    """What an estimator takes.

    ``instances``: the scored rows (``reform_core.frames`` INSTANCES of one condition, every
    constraint of an instruction labelled by both judges) with the judges' label columns
    ``judge_a`` / ``judge_b``; ``decisions``: the humans' decisions, in the order they were made
    (``iid, annotator, h``: the truth the annotator reported); ``design`` and ``tasks``: the plan's
    design and tasks (estimators that need a plan); ``index``: the rows' unit index when the
    caller holds it; ``memo``: a dict the caller keeps between calls on the same rows (an
    estimator may keep decision-independent arrays there); ``hints``: estimator-specific inputs the
    caller has already computed (e.g. the stratified rule's calibrated rows)."""

    instances: pd.DataFrame
    decisions: pd.DataFrame
    judge_a: str = "label_a"
    judge_b: str = "label_b"
    design: Any = None
    tasks: Optional[pd.DataFrame] = None
    index: Any = None
    memo: Optional[dict] = None
    hints: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Options:
    """``intervals``: compute the population interval and every variance source (the measurement
    interval is always given when the estimator has an analytic one); ``reps``: bootstrap
    replicates; ``seed``: the random stream; ``level``: the intervals' level; ``refits``: refits
    of a fitted nuisance model for its variance term (the default estimator's adjudicator-error
    model; None: the estimator's own default)."""

    intervals: bool = False
    reps: int = 2000
    seed: int = 0
    level: float = 0.95
    refits: Optional[int] = None


@dataclass
class Estimate:
    """What every estimator returns.

    ``table``: per model the point estimate of each metric (%); ``intervals``: long frame
    :data:`INTERVAL_COLUMNS` (NaN where not computed); ``components``: the measurement variance
    by source per model and metric (``model, metric`` and one column per source, %²; empty when
    the estimator does not split it); ``notes``: what was assumed or left out; ``rows``: each
    scored row's point estimate of its truth, by iid (for the plug-in breakdown tables); ``reports``:
    the estimator's further tables by name (the default estimator: ``both_wrong``,
    ``annotators``, ``progress``, ``totals``); ``evaluation``: the unit index's evaluation of
    ``rows`` when the estimator has it (the tables then need not evaluate it again)."""

    estimator: str
    table: pd.DataFrame
    intervals: pd.DataFrame
    components: pd.DataFrame
    notes: list = field(default_factory=list)
    rows: Optional[pd.Series] = None
    reports: dict = field(default_factory=dict)
    evaluation: Optional[tuple] = field(default=None, repr=False)
    provisional: bool = False


@runtime_checkable
class Estimator(Protocol):
    """An estimator (module docstring). ``needs_plan``: it needs a plan's design and tasks."""

    name: str
    label: str  # one line naming it for people
    interval_method: str  # one sentence: how its intervals are computed
    needs_plan: bool

    def estimate(self, data: EstimationData, options: Options) -> Estimate: ...


_REGISTRY: dict[str, Estimator] = {}


def register(estimator: Estimator) -> None:
    """Register an estimator under its ``name`` (replacing one of the same name)."""
    if not isinstance(estimator, Estimator):
        raise TypeError(f"{estimator!r} does not implement the Estimator protocol")
    _REGISTRY[estimator.name] = estimator


def get(name: str) -> Estimator:
    """The estimator registered (or built in) under ``name``; ValueError naming the known ones."""
    if name not in _REGISTRY and name in BUILTIN:
        module, attr = BUILTIN[name].split(":")
        register(getattr(importlib.import_module(module), attr))
    if name not in _REGISTRY:
        raise ValueError(f"unknown estimator {name!r} (known: {', '.join(names())})")
    return _REGISTRY[name]


def names() -> list[str]:
    """Every estimator name: the built-in ones, then the registered others."""
    return list(BUILTIN) + [n for n in _REGISTRY if n not in BUILTIN]


def unregister(name: str) -> None:
    """Remove a registered estimator (a test's toy); built-in names come back on their next use."""
    _REGISTRY.pop(name, None)
