"""The default adjudication design: a two-stage sample of question clusters (docs/estimator.md#the-design).

Per evaluated model, a **cluster** is one of its questions (every instruction and eligible
unit, docs/metrics.md#eligible-units, lies inside one). The design is a stratified two-stage sample:

1. **Clusters.** Each cluster is sampled independently (Poisson sampling) with probability
   ``π_D`` if it holds a judge disagreement, ``π_0`` otherwise.
2. **Within a sampled cluster** every disagreement is adjudicated, and the judge
   *agreements* are audited (a decision "neither" on an audited agreement means both judges
   are wrong). Version 3 plans audit by **target**: the agreed rows of one target (feature,
   mode) with one agreed label form an audit group (:func:`audit_groups`), audited
   together with probability ``π_A,g``, independently across groups — a model's passes and
   the judges' joint errors on one target are correlated across the question's variants, and
   a group audited whole observes those products instead of predicting them. The model's
   mean audit rate is spread by **Neyman allocation** (:func:`audit_row_probabilities`): in
   proportion to how much an error moves TCPR and EMCR times the standard deviation of the
   audit's outcome under a planning guess of the both-wrong rate (:func:`prior_wrong_rates`)
   and the decisions' noise (:func:`second_opinion_noise`) — agreed fails, usually far rarer
   than agreed passes, are the likelier wrong and are audited far more. Version 2 plans
   audited row by row by score gradient, version 1 uniformly.
3. **Decisions.** A share ``double_fraction`` of the tasks is double-adjudicated from the
   start (:func:`doubled`); every other task is decided once, and a second, different
   annotator is asked only where that first decision goes against the task's reference
   label (:func:`second_opinion_reference`, :func:`required_annotators`): on an audit when
   the annotator finds both judges wrong, on a disagreement (``second_opinion = "all"``, the
   default) when the annotator sides with judge B; and on an audit whose second annotator
   finds both judges wrong too, a third (``audit_opinions = 3``, the default). Most first
   decisions confirm the reference, so the rule costs a few per cent more decisions and
   gives the contested items the precision of two or three (an item estimate's noise near
   that of two decisions for about 1.05–1.2 decisions: :mod:`reform_core.estimators.adjudicator_error`);
   the pairs of decisions identify adjudicator error. The third opinion is there because
   both judges are wrong on about 1 % of agreements while a fallible annotator wrongly says
   so on ``e`` of them: with two opinions at most, two wrong "neither" (``e²``, 1 % at
   ``e`` = 10 %) are as frequent as real double errors, and the audit's decision noise
   (:func:`second_opinion_noise`: 0.0177 per audit at ``e`` = 0.1 and 1 % wrong) outweighs
   the errors it measures (0.0099); a third opinion cuts it to 0.0054 for 1.6 % more audit
   decisions (measured on the simulator at 10 % adjudicator error, 100 paper-scale
   replicates: R3's measurement interval 12.45 → 9.18 pp wide, bench/RESULTS.md). Each step of the rule depends only on the
   decisions before it, so the stopping is ignorable for the error model's likelihood and
   the item estimates are unbiased over the rule's outcomes.

Sampling is independent across clusters and across audit groups, which makes the
estimator of :mod:`reform_core.estimators.cluster` exactly unbiased with cross-fitted
predictions (Särndal, Swensson & Wretman 1992, *Model Assisted Survey Sampling*, §4.3
two-stage sampling, §3.7 Neyman allocation, §6.3 difference estimators; Zrnic & Candès 2024
cross-prediction). Auditing inside sampled clusters (rather than anywhere) keeps each audit
group's weight at ``1/π_A`` within its cluster, so a both-wrong error found in a long
product moves the estimate by a bounded amount.

The draws are **hashed**: cluster c is sampled iff ``U(seed, model, question) < π``, an
audit group iff ``U(seed + 7, group key) < π_A`` (version 1–2: row u iff ``U(seed + 7, iid) < π_A``),
with ``U`` a uniform number from BLAKE2b / SplitMix64 and each kind of draw on its own named
stream (:class:`Stream`). A plan is therefore reproducible from
its seed and probabilities alone, and the estimator can tell which clusters were sampled even
when a sampled cluster received no task.

The queue is ordered by cluster (clusters in a random order, a cluster's tasks
consecutive), so at any time the completed clusters are a random subset of the sample
and interim estimates stay valid ("stop when precise enough").

Default sizes: ``π_D = π_0 = n_m / N_m`` with ``n_m`` Cochran's size for the model's
``N_m`` disagreements (docs/metrics.md#sample-size: the paper's expected number of disagreement decisions; a
model on which the judges never disagree: its ``N_m`` questions, so its agreements are audited),
mean ``π_A = 0.3`` (Neyman-allocated over audit groups), ``double_fraction = 0.1`` and
second opinions on every kind of task. Measured on the simulator (bench/RESULTS.md) this
spends its decisions where the variance is: with the previous defaults (mean ``π_A = 0.1``
row by row, every item decided twice) the audit of agreements carried over 90 % of the
TCPR variance and half the decisions went to second decisions that infallible adjudicators
do not need.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from reform_core.frames import INSTANCE_KEY, require_columns

DESIGN_NAME = "question-cluster"
# 3: audit probabilities by Neyman allocation and second opinions (a third on audits where ``audit_opinions``
# = 3, the default since 2026-12-04; plans without the key ask two at most); 2: by score gradient, every
# task double-adjudicated; 1: uniform within a model
DESIGN_VERSION = 3
DEFAULT_ALLOCATION = "neyman"
ALLOCATIONS = ("neyman", "gradient", "uniform")
DEFAULT_AUDIT = 0.3
DEFAULT_DOUBLE = 0.1
DEFAULT_SECOND_OPINION = "all"
DEFAULT_AUDIT_OPINIONS = 3  # an audit's opinions at most: a third where the first two both find the judges wrong
SECOND_OPINIONS = ("audit", "all", "none")
DEFAULT_AUDIT_UNIT = "target"
AUDIT_UNITS = ("target", "row")
DEFAULT_FOLDS = 5
ASSUMED_BOTH_WRONG = 0.01  # share of instances on which both judges are wrong together (planning assumption)
ASSUMED_HUMAN_ERROR = 0.05  # adjudicators' error rate (planning assumption)
TASK_COLUMNS = ["iid", "model", "question", "kind", "stratum", "inclusion", "required", "queue_order"]


class Stream(IntEnum):
    """The plan's named random streams: each hashed draw uses ``seed + stream`` (the numbers are
    those every stored plan was drawn with, so they never change)."""

    CLUSTERS = 0  # which (model, question) clusters are sampled
    FOLDS = 1  # each cluster's cross-fitting fold
    DOUBLED = 2  # tasks decided by two annotators from the start
    QUEUE = 3  # the queue's order of the clusters
    AUDITS = 7  # which audit groups (or rows) are audited
    SIDES = 11  # which judge each task shows on the left


# the keys a stored plan of the design may carry beyond the fields of Design (kept as they are)
_FIELDS = (
    "design",
    "version",
    "condition",
    "audit_allocation",
    "cluster_pi",
    "cluster_pi0",
    "audit_pi",
    "double_fraction",
    "second_opinion",
    "audit_unit",
    "audit_opinions",
    "folds",
    "seed",
)


@dataclass(frozen=True)
class Design:
    """A question-cluster plan's design: the only reader of a plan's stored parameters.

    :meth:`from_stored` reads the JSON stored with a plan of any past version and fills what
    an older version did not store with what that version did (version 1: uniform audits;
    before version 3: audits row by row, no second opinions; before the third opinion: two
    opinions at most on an audit). :meth:`to_stored` writes the current version's JSON.
    ``extra`` keeps the other keys stored with the plan (its target, the sizing inputs, the
    judges, the per-model table) untouched.
    """

    cluster_pi: Mapping[str, float]
    seed: int = 0
    cluster_pi0: Optional[Mapping[str, float]] = None  # None: as cluster_pi
    audit_pi: float | Mapping[str, float] = 0.0
    double_fraction: float = 0.0
    audit_allocation: str = "uniform"
    second_opinion: str = "none"
    audit_unit: str = "row"
    audit_opinions: int = 2
    folds: int = DEFAULT_FOLDS
    condition: str = "main"
    version: int = DESIGN_VERSION
    assumed_both_wrong: float = ASSUMED_BOTH_WRONG
    assumed_human_error: float = ASSUMED_HUMAN_ERROR
    extra: Mapping[str, Any] = field(default_factory=dict)

    # ----------------------------------------------------------------- stored form
    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> "Design":
        """The design of a stored plan (any version); ValueError if it is not a question-cluster plan."""
        if not is_stored_design(stored):
            raise ValueError("not a question-cluster plan (its stored parameters name another design)")
        s = dict(stored)
        pi = {str(k): float(v) for k, v in (s.get("cluster_pi") or {}).items()}
        pa = s.get("audit_pi", 0.0)
        extra = {k: v for k, v in s.items() if k not in _FIELDS}
        for k in ("assumed_both_wrong", "assumed_human_error"):
            extra.pop(k, None)
        return cls(
            cluster_pi=pi,
            seed=int(s.get("seed", 0)),
            cluster_pi0={str(k): float(v) for k, v in s["cluster_pi0"].items()} if "cluster_pi0" in s else None,
            audit_pi={str(k): float(v) for k, v in pa.items()} if isinstance(pa, dict) else float(pa),
            double_fraction=float(s.get("double_fraction", 0.0)),
            audit_allocation=str(s.get("audit_allocation", "uniform")),
            second_opinion=str(s.get("second_opinion", "none")),
            audit_unit="target" if s.get("audit_unit") == "target" else "row",
            audit_opinions=int(s.get("audit_opinions", 2)),
            folds=int(s.get("folds", DEFAULT_FOLDS)),
            condition=str(s.get("condition", "main")),
            version=int(s.get("version", 1)),
            assumed_both_wrong=float(s.get("assumed_both_wrong", ASSUMED_BOTH_WRONG)),
            assumed_human_error=float(s.get("assumed_human_error", ASSUMED_HUMAN_ERROR)),
            extra=extra,
        )

    def to_stored(self) -> dict:
        """The JSON stored with the plan (current version's keys, then ``extra``)."""
        pi0 = self.cluster_pi if self.cluster_pi0 is None else self.cluster_pi0
        pa = self.audit_pi
        return {
            "design": DESIGN_NAME,
            "version": self.version,
            "condition": self.condition,
            "audit_allocation": self.audit_allocation,
            "cluster_pi": {str(k): float(v) for k, v in self.cluster_pi.items()},
            "cluster_pi0": {str(k): float(v) for k, v in pi0.items()},
            "audit_pi": {str(k): float(v) for k, v in pa.items()} if isinstance(pa, Mapping) else float(pa),
            "double_fraction": float(self.double_fraction),
            "second_opinion": self.second_opinion,
            "audit_unit": self.audit_unit,
            "audit_opinions": int(self.audit_opinions),
            "folds": int(self.folds),
            "seed": int(self.seed),
            **dict(self.extra),
        }

    def key(self) -> str:
        """A canonical string of the design (a cache key)."""
        return json.dumps({**asdict(self), "extra": dict(self.extra)}, sort_keys=True, default=str)

    def with_extra(self, **extra) -> "Design":
        return Design(**{**asdict(self), "extra": {**dict(self.extra), **extra}})

    @property
    def target(self) -> Optional[dict]:
        t = self.extra.get("target")
        return dict(t) if isinstance(t, Mapping) else None

    # ----------------------------------------------------------------- draws
    def uniform(self, stream: Stream, keys) -> np.ndarray:
        """The plan's reproducible uniform number per key on one of its named streams."""
        return uniform(int(self.seed) + int(stream), keys)

    def cluster_probability(self, model, has_disagreement) -> np.ndarray:
        """π of each cluster (``cluster_pi`` for clusters with a disagreement, ``cluster_pi0`` for the others)."""
        pd_ = self.cluster_pi
        p0 = pd_ if self.cluster_pi0 is None else self.cluster_pi0
        model = np.asarray(model, dtype=object)
        has = np.asarray(has_disagreement, dtype=bool)
        return np.array([float((pd_ if h else p0).get(str(mm), 0.0)) for mm, h in zip(model, has)])

    def sampled_clusters(self, model, question, has_disagreement) -> np.ndarray:
        """Whether each cluster (given by model, question) is in the plan's first-stage sample."""
        return self.uniform(Stream.CLUSTERS, cluster_key(model, question)) < self.cluster_probability(
            model, has_disagreement
        )

    def audit_probability(self, model) -> np.ndarray:
        """π_A of each row's model (``audit_pi``: one number, or one per model)."""
        model = np.asarray(model, dtype=object)
        if isinstance(self.audit_pi, Mapping):
            return np.array([float(self.audit_pi.get(str(mm), 0.0)) for mm in model])
        return np.full(len(model), float(self.audit_pi))

    def audited_rows(self, iid, model, probability=None, group=None) -> np.ndarray:
        """Whether each agreement row (by iid, of a sampled cluster) is audited; ``probability``
        = each row's π_A (default: the model's mean rate). Plans that audit by target draw once
        per audit group (``group``: each row's ``(codes, keys)``, :func:`audit_groups`; its rows
        share one π_A), the others once per row."""
        pa = self.audit_probability(model) if probability is None else np.asarray(probability, dtype=float)
        if self.audit_unit == "target":
            if group is None:
                raise ValueError("a plan that audits by target needs each row's audit group")
            codes, keys = group
            return self.uniform(Stream.AUDITS, keys)[codes] < pa
        return self.uniform(Stream.AUDITS, np.asarray(iid, dtype=np.int64)) < pa

    def doubled(self, iid) -> np.ndarray:
        """Whether each task (by iid) is double-adjudicated from the start (``double_fraction``, hashed)."""
        return self.uniform(Stream.DOUBLED, np.asarray(iid, dtype=np.int64)) < float(self.double_fraction)

    def fold_of(self, model, question) -> np.ndarray:
        """Cross-fitting fold of each row's (model, question) cluster: fixed by the seed and
        independent of which clusters were sampled."""
        keys = cluster_key(model, question)
        uniq, inv = np.unique(keys.astype(str), return_inverse=True)
        return np.minimum((self.uniform(Stream.FOLDS, uniq) * self.folds).astype(np.int64), self.folds - 1)[inv]

    # ----------------------------------------------------------------- the opinion rule
    def second_opinion_reference(self, iid, kind, agreed_label) -> np.ndarray:
        """The reference label of each task under the plan's second-opinion rule, NaN where none.

        With ``second_opinion = "audit"`` an audited agreement that is not double-adjudicated from
        the start (:meth:`doubled`) is decided once, and a second, different annotator is asked
        only when that first decision differs from the reference — the judges' agreed label, i.e.
        when the first annotator says both judges are wrong; ``"all"`` asks it on a disagreement
        too when the first annotator sides with judge B (reference: judge A's label). Almost
        every first decision confirms the reference, so a second opinion costs a few per cent more
        decisions, yet it gives a contested item the precision of two decisions where it matters.
        The rule depends only on the decisions before it, so the stopping is ignorable for the error
        model's likelihood and the item estimates are unbiased over the rule's outcomes.
        """
        iid = np.asarray(iid, dtype=np.int64)
        kind = np.asarray(kind, dtype=object)
        out = np.full(len(iid), np.nan)
        if self.second_opinion not in ("audit", "all"):
            return out
        sel = ((kind == "audit") | (self.second_opinion == "all")) & ~self.doubled(iid)
        out[sel] = np.asarray(agreed_label, dtype=float)[sel]
        return out

    def opinion_depth(self, kind) -> np.ndarray:
        """The most decisions the rule asks of each task (by ``kind``), one after another while
        each goes against the task's reference: ``audit_opinions`` on an audit, 2 on a disagreement."""
        kind = np.asarray(kind, dtype=object)
        return np.where(kind == "audit", int(self.audit_opinions), 2).astype(np.int64)

    def required_annotators(self, kind: str, iid: int, choices) -> Optional[int]:
        """Distinct annotators a task needs given the decisions made on it so far (``choices``:
        "A" / "B" / "neither" relative to the plan's judges, in order; a single choice stands for
        the first; None or empty before any): 2 for a task doubled from the start; else one more
        than the number of leading opinions against the task's reference ("neither" on an audit
        — both judges wrong —, or, under ``second_opinion = "all"``, "B" on a disagreement), at
        most :meth:`opinion_depth`. None without the second-opinion rule (tasks keep their count)."""
        if self.second_opinion not in ("audit", "all"):
            return None
        if bool(self.doubled([int(iid)])[0]):
            return 2
        if kind == "audit":
            against, depth = "neither", int(self.audit_opinions)
        elif kind == "disagreement" and self.second_opinion == "all":
            against, depth = "B", 2
        else:
            return 1
        choices = [] if choices is None else [choices] if isinstance(choices, str) else list(choices)
        need = 1
        for c in choices[: depth - 1]:
            if c != against:
                break
            need += 1
        return need


def is_stored_design(stored) -> bool:
    """Whether a plan's stored parameters are a question-cluster design (of any version)."""
    return isinstance(stored, Mapping) and stored.get("design") == DESIGN_NAME


def as_design(stored) -> Optional[Design]:
    """A :class:`Design` as it is, a stored question-cluster design read, anything else None
    (a stratified or an import plan)."""
    if isinstance(stored, Design):
        return stored
    return Design.from_stored(stored) if is_stored_design(stored) else None


def required_annotators(stored, kind: str, iid: int, choices) -> Optional[int]:
    """:meth:`Design.required_annotators` of a plan given its stored parameters (the queue's
    entry point); None for a plan that is not a question-cluster design."""
    design = as_design(stored)
    return None if design is None else design.required_annotators(kind, iid, choices)


def create(
    cluster_pi: dict,
    cluster_pi0: dict,
    *,
    audit_pi,
    double_fraction: float,
    seed: int,
    folds: int = DEFAULT_FOLDS,
    condition: str = "main",
    audit_allocation: str = DEFAULT_ALLOCATION,
    second_opinion: str = DEFAULT_SECOND_OPINION,
    audit_unit: str = DEFAULT_AUDIT_UNIT,
    audit_opinions: int = DEFAULT_AUDIT_OPINIONS,
    **extra,
) -> Design:
    """A new plan's design (current version), validated; ``extra``: what is stored with it too
    (its ``target``, the sizing inputs). ``audit_allocation``: "neyman" (default), "gradient" or
    "uniform" (:func:`reform_core.estimators.allocation.audit_row_probabilities`); ``second_opinion``:
    "all" (default), "audit" or "none"; ``audit_opinions``: the most opinions asked on an audit (2 or 3)."""
    if second_opinion not in SECOND_OPINIONS:
        raise ValueError(f"second_opinion must be one of {SECOND_OPINIONS}, got {second_opinion!r}")
    if isinstance(audit_opinions, bool) or audit_opinions not in (2, 3):
        raise ValueError(f"audit_opinions must be 2 or 3, got {audit_opinions!r}")
    if audit_unit not in AUDIT_UNITS:
        raise ValueError(f"audit_unit must be one of {AUDIT_UNITS}, got {audit_unit!r}")
    if audit_allocation not in ALLOCATIONS:
        raise ValueError(f"audit_allocation must be 'neyman', 'gradient' or 'uniform', got {audit_allocation!r}")
    for name, probs in (("cluster_pi", cluster_pi), ("cluster_pi0", cluster_pi0)):
        bad = [k for k, v in probs.items() if not 0 <= float(v) <= 1]
        if bad:
            raise ValueError(f"{name}[{bad[0]!r}] must lie in [0, 1]")
    for v in audit_pi.values() if isinstance(audit_pi, dict) else [audit_pi]:
        if not 0 <= float(v) <= 1:
            raise ValueError(f"audit_pi must lie in [0, 1], got {v!r}")
    if not 0 <= float(double_fraction) <= 1:
        raise ValueError(f"double_fraction must lie in [0, 1], got {double_fraction!r}")
    return Design(
        cluster_pi={str(k): float(v) for k, v in cluster_pi.items()},
        seed=int(seed),
        cluster_pi0={str(k): float(v) for k, v in cluster_pi0.items()},
        audit_pi={str(k): float(v) for k, v in audit_pi.items()} if isinstance(audit_pi, dict) else float(audit_pi),
        double_fraction=float(double_fraction),
        audit_allocation=audit_allocation,
        second_opinion=second_opinion,
        audit_unit=audit_unit,
        audit_opinions=int(audit_opinions),
        folds=int(folds),
        condition=condition,
        extra=extra,
    )


def judge_labels(instances: pd.DataFrame, judge_a: str, judge_b: str) -> tuple[np.ndarray, np.ndarray]:
    """The two judges' labels as float arrays (instances checked for the columns a design reads)."""
    require_columns(
        instances, [INSTANCE_KEY, "model", "question", "feature", "category", "mode", judge_a, judge_b], "instances"
    )
    g = pd.to_numeric(instances[judge_a], errors="coerce").to_numpy(dtype=float)
    m = pd.to_numeric(instances[judge_b], errors="coerce").to_numpy(dtype=float)
    return g, m


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mix."""
    with np.errstate(over="ignore"):
        x = (x + _GOLDEN).astype(np.uint64)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def uniform(seed: int, keys) -> np.ndarray:
    """A reproducible uniform number in [0, 1) per key.

    Integer keys are mixed directly; other keys go through BLAKE2b (8 bytes) first. The
    key's 64-bit code is combined with the seed and passed twice through the SplitMix64
    finaliser; the top 53 bits give the uniform.
    """
    keys = np.asarray(keys)
    if keys.dtype.kind in "iu":
        code = keys.astype(np.int64).view(np.uint64)
    else:
        code = np.fromiter(
            (int.from_bytes(hashlib.blake2b(str(k).encode(), digest_size=8).digest(), "big") for k in keys.tolist()),
            dtype=np.uint64,
            count=len(keys),
        )
    with np.errstate(over="ignore"):
        mixed = _splitmix64(
            _splitmix64(code ^ _splitmix64(np.full(len(code), int(seed) & (2**64 - 1), dtype=np.uint64)))
        )
    return (mixed >> np.uint64(11)).astype(np.float64) / 2.0**53


def cluster_key(model, question) -> np.ndarray:
    """The string key ``model␟question`` of each row's cluster."""
    return (
        pd.Series(np.asarray(model, dtype=object)).astype(str)
        + "\x1f"
        + pd.Series(np.asarray(question, dtype=object)).astype(str)
    ).to_numpy(dtype=object)


def agreement_stratum(model, label) -> np.ndarray:
    """Audit stratum key ``model|agree<label>`` of agreements."""
    return (
        pd.Series(np.asarray(model, dtype=object)).astype(str)
        + "|agree"
        + pd.Series(np.asarray(label, dtype=float)).astype(int).astype(str)
    ).to_numpy(dtype=object)


def audit_groups(
    model, question, feature, mode, label, *, keys: bool = True
) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Audit group of each agreement row: ``(codes, keys)`` with ``keys[codes]`` each row's key
    ``model␟question␟feature␟mode␟label`` — its (model, question) cluster, target (feature,
    mode) and agreed label. The key string is built once per group (a hashed draw needs it), not
    once per row: at 10× the paper's scale per-row strings held over a gigabyte.

    A model's passes on one target are correlated across the question's variants
    (docs/metrics.md#default-estimator),
    and so are the judges' joint errors there: both judges wrong on one variant of a target
    makes them likelier wrong on its others. Auditing a target's agreed rows together puts
    every such product of errors inside one draw, where it is observed, instead of leaving
    it to a prediction (:mod:`reform_core.estimators.cluster`, "Long products")."""
    # factorised column by column (a pandas column's strings are never turned into per-row Python objects)
    factors = [
        pd.factorize(c if isinstance(c, pd.Series) else np.asarray(c, dtype=object))
        for c in (model, question, feature, mode)
    ]
    combined = np.zeros(len(factors[0][0]), dtype=np.int64)
    for codes, uniq in factors:
        combined = combined * (len(uniq) + 1) + codes
    combined = combined * 2 + (np.asarray(label, dtype=float) > 0.5)
    _, first, codes = np.unique(combined, return_index=True, return_inverse=True)
    if not keys:
        return codes.reshape(-1), None
    lab = (np.asarray(label, dtype=float)[first] > 0.5).astype(int).tolist()
    parts = [np.asarray(uniq, dtype=object)[c[first]].tolist() for c, uniq in factors]
    # one string per group, built in one pass (pandas' column concatenation held several copies)
    out = np.empty(len(first), dtype=object)
    out[:] = [f"{a}\x1f{b}\x1f{c}\x1f{d}\x1f{e}" for a, b, c, d, e in zip(*parts, lab)]
    return codes.reshape(-1), out
