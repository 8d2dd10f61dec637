"""Seeded synthetic ReFormBench-like projects with known ground truth.

``simulate(seed, scale)`` builds a whole project — questions, three-constraint
instruction variants, evaluated models, baseline feature annotations, responses, two
judges' labels and the hidden true pass labels — shaped after the ReFormBench paper (arXiv:2610.19693):

* 910 questions over 7 task types (Table A5 counts) and 10 domains, 543/910 English;
* 5,000 variants whose multiplicity per question follows Table A11 (1..30 variants);
  each has three constraints from distinct categories; targets (question, feature,
  mode) recur across a question's variants (about half of them recur, App. A.7.4);
* the 66-feature catalog (``reform_core.catalog.load_catalog("reformbench")`` when it
  loads, else 66 synthetic features in 8 categories of 7, 9, 4, 6, 11, 12, 8, 9);
* baseline annotations P[m,q] with ~10 features per response (App. A.6: 91,332 rows);
* truth ~ Bernoulli(logistic(ability + target difficulty + instruction and
  model × question × target effects − opposition penalty)), so baseline-opposed targets
  are harder (§4.3) and correction persists across variants;
* two judges with error rates that differ by judge, by direction (false pass / false
  fail) and by model, scaled so that overall agreement is ≈ 87.67 % (App. A.3.1);
  optionally both judges wrong together on a share ``both_wrong`` of instances;
* ``correlated=False`` drops the instruction and model × question × target effects, so
  truths are independent across a question's variants (the stratified rule's assumption).

Everything is vectorised with numpy; the paper scale (150,000 judged pairs per judge)
builds in a few seconds.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import string
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd
from scipy.optimize import brentq
from scipy.special import expit

from reform_core.frames import CONDITION_MAIN, INSTANCE_KEY

TASK_TYPES = {  # ReFormBench Table A5: questions per task type
    "Knowledge QA": 163,
    "Concept Explanation": 105,
    "Information Extraction": 93,
    "Decision Analysis": 133,
    "Solution Design": 167,
    "Creative Writing": 133,
    "Code Generation": 116,
}
DOMAINS = (
    "Technology",
    "Education",
    "Business",
    "Health",
    "Science",
    "Daily Life",
    "Culture",
    "Law",
    "Finance",
    "Environment",
)
ENGLISH_SHARE = 543 / 910  # ReFormBench App. A.7.1
# Table A11: questions with 1, 2, 3, 4–5, 6–10, 11–30 variants.
VARIANT_BUCKETS = ((1, 1, 256), (2, 2, 147), (3, 3, 98), (4, 5, 119), (6, 10, 152), (11, 30, 138))
MAX_VARIANTS = 30
ABILITY_RANGE = (2.4, 4.0)  # logit abilities of the simulated models
FALLBACK_CATEGORIES = {  # category order and sizes of the ReFormBench catalog (docs/metrics.md#catalog)
    "line_layout": 7,
    "document_structure": 9,
    "lists": 4,
    "structured_fields": 6,
    "response_framing": 11,
    "content_organisation": 12,
    "inline_markers": 8,
    "supplementary_blocks": 9,
}
PROMPT_SUFFIX = (
    "Before answering, list every explicit constraint, build the minimal structure that "
    "satisfies them, and check the answer against each constraint."
)


@dataclass(frozen=True)
class SimConfig:
    """Knobs of the simulator; ``simulate(**overrides)`` replaces any of them."""

    n_questions: int = 910
    n_instructions: int = 5000
    n_models: int = 10
    judges: tuple = ("judge_a", "judge_b")
    agreement: float = 0.8767  # ReFormBench App. A.3.1: 131,508 / 150,000
    # base error rates (false pass = label 1 on truth 0, false fail = label 0 on truth 1),
    # rescaled jointly so that the overall agreement hits ``agreement``
    judge_false_pass: tuple = (0.03, 0.05)
    judge_false_fail: tuple = (0.006, 0.14)
    model_error_spread: float = 0.35  # weaker models get higher judge error rates
    baseline_features: float = 91332 / 9100  # mean features per baseline response (App. A.6)
    abilities: Optional[tuple] = None  # per-model logit ability, strongest first
    opposed_penalty: float = 0.45  # logit penalty for baseline-opposed targets
    persistence: float = 1.8  # sd of the model × question × target effect (correction persists)
    target_concentration: float = 5.0  # Dirichlet mass per question: lower = more recurrence
    single_constraint: bool = False
    single_model: Optional[str] = None  # default: the middle model
    single_bonus: float = 0.35  # logit gain when a constraint is answered alone
    prompted: bool = False
    prompted_model: Optional[str] = None  # default: the weakest model
    prompted_bonus: float = 0.4
    extractions: bool = False  # open-ended feature extractions of the baseline responses (Table A4)
    extraction_mix: tuple = (0.78, 0.12, 0.04)  # exact / subtype / composite share of catalog-present features
    extraction_extra: tuple = (0.9, 0.6)  # mean uncovered / not_format extractions per baseline response
    construction_models: int = 2  # the first models build the instructions (Table 4's reference group)
    human_error: float = 0.0  # oracle flip probability
    both_wrong: float = 0.0  # share of instances on which both judges give the wrong label together
    correlated: bool = True  # False: no instruction or model × question × target effects (independent truths)

    def validate(self) -> None:
        for name in ("n_questions", "n_instructions", "n_models"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.n_questions <= self.n_instructions <= MAX_VARIANTS * self.n_questions:
            raise ValueError(
                f"n_instructions must lie in [n_questions, {MAX_VARIANTS}·n_questions], got "
                f"{self.n_instructions} for {self.n_questions} questions"
            )
        if len(self.judges) != 2 or len(set(self.judges)) != 2:
            raise ValueError(f"judges must be two distinct names, got {self.judges!r}")
        if not 0.5 < self.agreement < 1:
            raise ValueError(f"agreement must lie in (0.5, 1), got {self.agreement!r}")
        for name in ("judge_false_pass", "judge_false_fail"):
            rates = getattr(self, name)
            if len(rates) != 2 or not all(0 <= r < 0.5 for r in rates):
                raise ValueError(f"{name} must be two rates in [0, 0.5), got {rates!r}")
        if not 0 <= self.human_error < 0.5:
            raise ValueError(f"human_error must lie in [0, 0.5), got {self.human_error!r}")
        if not 0 <= self.both_wrong < 0.5:
            raise ValueError(f"both_wrong must lie in [0, 0.5), got {self.both_wrong!r}")
        if self.abilities is not None and len(self.abilities) != self.n_models:
            raise ValueError(f"abilities needs {self.n_models} values, got {len(self.abilities)}")
        if self.target_concentration <= 0:
            raise ValueError(f"target_concentration must be > 0, got {self.target_concentration!r}")


SCALES = {
    "paper": SimConfig(),
    "small": SimConfig(n_questions=30, n_instructions=120, n_models=3),
}


@dataclass
class SimProject:
    """A synthetic project: the stored boxes of the data flow plus the hidden truth.

    Frames: ``questions`` (question, task_type, domain, language, text), ``instructions``
    (instruction, question, condition, pair_group, text), ``constraints`` (instruction,
    position, feature, category, mode, text, acceptance, params — a JSON string),
    ``models`` (model, provider), ``responses`` (model, question, instruction — "" for a
    baseline —, kind, text), ``baseline`` (model, question, feature), ``judgments``
    (model, instruction, position, judge, label, rationale), ``truth`` (model,
    instruction, position, truth); ``judges`` names the two judges.

    Single-constraint versions are instructions ``<main>-s<j>`` of condition "single"
    holding one constraint at position ``j`` (its position in the main instruction), so
    they pair with the main instruction by ``(pair_group, position)``. Prompted versions
    are ``<main>-p`` of condition "prompted" with the same three constraints.
    """

    seed: int
    config: SimConfig
    questions: pd.DataFrame
    instructions: pd.DataFrame
    constraints: pd.DataFrame
    models: pd.DataFrame
    responses: pd.DataFrame
    baseline: pd.DataFrame
    judgments: pd.DataFrame
    truth: pd.DataFrame
    judges: list
    _instances: pd.DataFrame = field(repr=False)
    extractions: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["model", "question", "label", "feature", "match"])
    )
    construction_models: list = field(default_factory=list)

    def instances(self) -> pd.DataFrame:
        """INSTANCES frame (frames.py) with ``label_<judge>`` per judge and ``truth``."""
        return self._instances.copy()

    def oracle(self, iids, rng: Optional[np.random.Generator] = None) -> pd.Series:
        """Adjudicated label ``a`` per iid: the truth, flipped with ``config.human_error``.

        Parameters
        ----------
        iids : sequence of int
            Instance ids.
        rng : numpy.random.Generator, optional
            Needed when ``human_error > 0``.

        Returns
        -------
        Series
            Float labels 1.0 / 0.0 named ``a``, indexed by ``iid`` in the given order.
        """
        iids = pd.Index(np.asarray(iids, dtype=np.int64), name=INSTANCE_KEY)
        truth = self._instances.set_index(INSTANCE_KEY)["truth"]
        unknown = iids.difference(truth.index)
        if len(unknown):
            raise ValueError(f"unknown iid(s) for the oracle, e.g. {int(unknown[0])}")
        a = truth.reindex(iids).to_numpy(dtype=float)
        if self.config.human_error > 0:
            if not isinstance(rng, np.random.Generator):
                raise ValueError("oracle with human_error > 0 needs rng=numpy.random.Generator")
            flip = rng.random(len(a)) < self.config.human_error
            a = np.where(flip, 1.0 - a, a)
        return pd.Series(a, index=iids, name="a")


# ----------------------------------------------------------------------------- catalog


def _field(record, name, default=None):
    if isinstance(record, dict):
        return record.get(name, default)
    return getattr(record, name, default)


def _fill(template: str, params) -> str:
    """Fill ``{param}`` placeholders with the params' defaults (leave unknown ones)."""
    values = {_field(p, "name"): _field(p, "default") for p in (params or [])}
    values = {k: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v for k, v in values.items()}
    names = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    return template.format_map({n: values.get(n, "{" + n + "}") for n in names})


def catalog_features(records) -> pd.DataFrame:
    """Normalise catalog features (``reform_core.catalog`` Feature objects or dicts).

    A record has ``key, name, category`` and optionally ``modes``,
    ``require_template / forbid_template``, ``acceptance {mode: text}``,
    ``params [{name, default}]`` and the paper's counts (``paper_require /
    paper_forbid`` or ``paper_counts {require, forbid}``, ReFormBench Table A12), which
    become the targeting weights (count + 1; 0 for a mode the feature does not offer).

    Returns
    -------
    DataFrame
        ``feature, name, category, params`` (JSON of the param defaults),
        ``require_text, forbid_text, require_acceptance, forbid_acceptance,
        require_weight, forbid_weight``.
    """
    rows = []
    for r in records:
        key, category = _field(r, "key"), _field(r, "category")
        if not key or not category:
            raise ValueError(f"catalog record without key or category: {r!r}")
        name = str(_field(r, "name") or key)
        params = _field(r, "params") or []
        acceptance = _field(r, "acceptance") or {}
        counts = _field(r, "paper_counts") or {}
        modes = tuple(_field(r, "modes") or ("require", "forbid"))
        defaults = {_field(p, "name"): _field(p, "default") for p in params}
        row = {
            "feature": str(key),
            "name": name,
            "category": str(_field(category, "key", category)),
            "params": json.dumps(defaults, sort_keys=True, default=str),
        }
        for mode, verb in (("require", "Use"), ("forbid", "Do not use")):
            template = _field(r, f"{mode}_template") or f"{verb} {name.lower()}."
            accept = _field(acceptance, mode) or f"The response {mode}s {name.lower()} as asked."
            count = _field(r, f"paper_{mode}") or _field(counts, mode) or 0
            row[f"{mode}_text"] = _fill(str(template), params)
            row[f"{mode}_acceptance"] = _fill(str(accept), params)
            row[f"{mode}_weight"] = float(count) + 1.0 if mode in modes else 0.0
        rows.append(row)
    return pd.DataFrame(rows)


def _fallback_features(rng: np.random.Generator) -> pd.DataFrame:
    """66 synthetic features in 8 categories (the catalog's sizes, docs/metrics.md#catalog) with
    skewed weights."""
    cats = np.repeat(list(FALLBACK_CATEGORIES), list(FALLBACK_CATEGORIES.values()))
    index = np.concatenate([np.arange(1, n + 1) for n in FALLBACK_CATEGORIES.values()])
    keys = [f"{c}_{i:02d}" for c, i in zip(cats, index)]
    names = [f"{c.replace('_', ' ').capitalize()} feature {i}" for c, i in zip(cats, index)]
    require = np.exp(rng.normal(4.5, 1.5, len(keys)))
    forbid = require * rng.beta(2, 6, len(keys))
    return pd.DataFrame(
        {
            "feature": keys,
            "name": names,
            "category": cats,
            "params": "{}",
            "require_text": [f"Use {n.lower()}." for n in names],
            "forbid_text": [f"Do not use {n.lower()}." for n in names],
            "require_acceptance": [f"Pass if the response uses {n.lower()} as asked." for n in names],
            "forbid_acceptance": [f"Pass if the response contains no {n.lower()}." for n in names],
            "require_weight": require,
            "forbid_weight": forbid,
        }
    )


@functools.lru_cache(maxsize=1)
def _catalog_features() -> Optional[pd.DataFrame]:
    """The ReFormBench catalog as :func:`catalog_features` rows, or None if it does not load
    (read once per process: parsing the YAML costs about a second)."""
    try:
        from reform_core.catalog import load_catalog  # written by another area

        cat = load_catalog("reformbench")
        records = cat if isinstance(cat, (list, tuple)) else _field(cat, "features", cat)
        if isinstance(records, pd.DataFrame):
            records = records.to_dict("records")
        elif isinstance(records, dict):
            records = list(records.values())
        features = catalog_features(records)
        if len(features) == 66 and features["feature"].is_unique and features["category"].nunique() == 8:
            return features
    except Exception:  # noqa: BLE001 - any catalog problem means: use the synthetic one
        pass
    return None


def _load_features(rng: np.random.Generator) -> pd.DataFrame:
    """The ReFormBench catalog when ``reform_core.catalog.load_catalog`` works, else synthetic."""
    features = _catalog_features()
    return features.copy() if features is not None else _fallback_features(rng)


# --------------------------------------------------------------------------- structure


def _largest_remainder(weights, total: int) -> np.ndarray:
    quota = np.asarray(weights, dtype=float) / np.sum(weights) * total
    out = np.floor(quota).astype(np.int64)
    order = np.argsort(-(quota - out), kind="stable")
    out[order[: total - out.sum()]] += 1
    return out


def _variant_counts(n_questions: int, n_instructions: int, rng: np.random.Generator) -> np.ndarray:
    """Variants per question after Table A11, summing exactly to ``n_instructions``."""
    per_bucket = _largest_remainder([b[2] for b in VARIANT_BUCKETS], n_questions)
    lo = np.repeat([b[0] for b in VARIANT_BUCKETS], per_bucket)
    hi = np.repeat([b[1] for b in VARIANT_BUCKETS], per_bucket)
    top = np.arange(11, MAX_VARIANTS + 1)
    top_p = np.exp(-(top - 11) / 12.0)  # mean ≈ 17.8, near Table A11's ≈ 17.4
    counts = rng.integers(lo, hi + 1)
    tail = lo == 11
    counts[tail] = rng.choice(top, size=tail.sum(), p=top_p / top_p.sum())
    counts = rng.permutation(counts)
    single = counts == 1  # keep single-variant questions apart from multi-variant ones
    lo, hi = np.where(single, 1, 2), np.where(single, 1, MAX_VARIANTS)
    for _ in range(10_000):
        diff = n_instructions - counts.sum()
        if diff == 0:
            return counts
        room = np.flatnonzero(counts < hi) if diff > 0 else np.flatnonzero(counts > lo)
        if len(room) == 0:
            lo[:], hi[:] = 1, MAX_VARIANTS
            continue
        pick = rng.choice(room, size=min(abs(diff), len(room)), replace=False)
        counts[pick] += np.sign(diff)
    raise RuntimeError("could not match the instruction total")  # pragma: no cover


def _pick_rows(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of a non-negative weight matrix."""
    cdf = np.cumsum(weights, axis=1)
    u = rng.random(len(weights)) * cdf[:, -1]
    return np.minimum((cdf < u[:, None]).sum(axis=1), weights.shape[1] - 1)


def _slots(features: pd.DataFrame, question_of: np.ndarray, n_questions: int, cfg: SimConfig, rng):
    """Feature, mode per (instruction, position): three distinct categories per instruction.

    Each question has its own target weights ~ Dirichlet(concentration · global weights),
    so a question's variants reuse some targets (recurring targets, App. A.7.4).
    """
    n_feat = len(features)
    cats, cat_idx = np.unique(features["category"].to_numpy(), return_inverse=True)
    glob = np.concatenate([features["require_weight"].to_numpy(), features["forbid_weight"].to_numpy()])
    glob = glob / glob.sum()
    target_cat = np.concatenate([cat_idx, cat_idx])
    w = rng.gamma(cfg.target_concentration * glob, size=(n_questions, len(glob)))
    w = w + 1e-9 * glob  # keep every category reachable
    cat_onehot = np.eye(len(cats))[target_cat]  # targets × categories
    cat_w = w @ cat_onehot
    n_instr = len(question_of)
    gumbel = -np.log(-np.log(rng.random((n_instr, len(cats)))))
    chosen = np.argsort(-(np.log(cat_w[question_of]) + gumbel), axis=1)[:, :3]
    chosen = chosen.ravel()  # random category order across positions
    slot_q = np.repeat(question_of, 3)
    slot_w = w[slot_q] * (target_cat[None, :] == chosen[:, None])
    target = _pick_rows(slot_w, rng)
    return target % n_feat, (target >= n_feat)


# ---------------------------------------------------------------------------- simulate


@dataclass(frozen=True)
class _Questions:
    """The simulated questions: keys, task types and domains (one per question) and their frame."""

    keys: np.ndarray
    tasks: np.ndarray
    domains: np.ndarray
    frame: pd.DataFrame


@dataclass(frozen=True)
class _Slots:
    """The main instructions and their three constraint slots each.

    ``slot_*`` arrays have one entry per (instruction, position), instruction-major:
    ``slot_i`` indexes ``i_keys``, ``slot_q`` the questions, ``feat`` the features."""

    i_keys: np.ndarray
    question_of: np.ndarray  # question index per main instruction
    i_text: np.ndarray
    slot_i: np.ndarray
    slot_pos: np.ndarray
    slot_q: np.ndarray
    feat: np.ndarray
    forbid: np.ndarray
    feat_key: np.ndarray
    feat_cat: np.ndarray
    mode: np.ndarray
    c_text: np.ndarray
    constraints: pd.DataFrame
    instructions: pd.DataFrame


@dataclass(frozen=True)
class _Baseline:
    """The simulated models (strongest first) and the features of their baseline responses."""

    m_keys: np.ndarray
    models: pd.DataFrame
    abilities: np.ndarray
    present: np.ndarray  # models × questions × features
    frame: pd.DataFrame


@dataclass(frozen=True)
class _Conditions:
    """Every condition's instructions and constraints, and per judged instance its model index
    ``m``, main slot ``s``, condition and logit bonus."""

    instructions: pd.DataFrame
    constraints: pd.DataFrame
    m: np.ndarray
    s: np.ndarray
    cond: np.ndarray
    bonus: np.ndarray


def simulate(seed: int = 0, scale: str = "paper", **overrides) -> SimProject:
    """Generate a seeded synthetic project with known ground truth.

    Parameters
    ----------
    seed : int
        Seed of the ``numpy.random.Generator``; the same seed gives identical frames.
    scale : {"paper", "small"}
        "paper": 910 questions, 5,000 instructions, 10 models (ReFormBench §4, App. A.3,
        A.6, A.7); "small": 30 questions, 120 instructions, 3 models.
    **overrides
        Any :class:`SimConfig` field, e.g. ``single_constraint=True``, ``prompted=True``,
        ``n_models=4``, ``human_error=0.05``.

    Returns
    -------
    SimProject
    """
    cfg = _config(scale, overrides)
    rng = np.random.default_rng(seed)  # one stream, drawn from in the order of the steps below
    features = _load_features(rng)
    qs = _questions(cfg.n_questions, rng)
    slots = _main_slots(features, qs, cfg, rng)
    base = _baseline(features, qs.keys, cfg, rng)
    conds = _conditions(slots, qs, base.m_keys, cfg)
    truth, opposed = _truth(slots, base, conds, len(features), cfg, rng)
    labels = _judge_labels(truth, base.abilities, conds, cfg, rng)
    instances = _instances(slots, qs, base.m_keys, conds, opposed, labels, truth, cfg)
    extractions = (
        _extractions(base.frame, base.m_keys, qs.keys, cfg, np.random.default_rng([seed, 17]))
        if cfg.extractions
        else None
    )
    return SimProject(
        seed=seed,
        config=cfg,
        questions=qs.frame,
        instructions=conds.instructions,
        constraints=conds.constraints,
        models=base.models,
        responses=_responses(instances, base.m_keys, qs.keys),
        baseline=base.frame,
        judgments=_judgments(instances, list(cfg.judges), labels),
        truth=instances[["model", "instruction", "position", "truth"]].copy(),
        judges=list(cfg.judges),
        _instances=instances,
        **({"extractions": extractions} if extractions is not None else {}),
        construction_models=list(base.m_keys[: min(cfg.construction_models, cfg.n_models)]),
    )


def _config(scale: str, overrides: dict) -> SimConfig:
    """The scale's :class:`SimConfig` with ``overrides`` applied, validated (ValueError on an
    unknown scale or option)."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {sorted(SCALES)}, got {scale!r}")
    unknown = set(overrides) - {f.name for f in dataclasses.fields(SimConfig)}
    if unknown:
        raise ValueError(f"unknown simulate option(s): {sorted(unknown)}")
    if "judges" in overrides:
        overrides["judges"] = tuple(overrides["judges"])
    cfg = dataclasses.replace(SCALES[scale], **overrides)
    cfg.validate()
    return cfg


def _questions(nq: int, rng: np.random.Generator) -> _Questions:
    """``nq`` questions: task types in Table A5's proportions, domains from a random mix, the
    English share of App. A.7.1."""
    q_keys = np.array([f"q{i:04d}" for i in range(1, nq + 1)], dtype=object)
    tasks = np.repeat(list(TASK_TYPES), _largest_remainder(list(TASK_TYPES.values()), nq))
    tasks = rng.permutation(tasks)
    dom_w = rng.dirichlet(np.full(len(DOMAINS), 4.0))
    domains = np.array(DOMAINS, dtype=object)[rng.choice(len(DOMAINS), size=nq, p=dom_w)]
    language = np.where(rng.random(nq) < ENGLISH_SHARE, "en", "zh").astype(object)
    q_text = pd.Series(tasks).str.cat([pd.Series(domains), pd.Series(q_keys)], sep=" / ")
    questions = pd.DataFrame(
        {
            "question": q_keys,
            "task_type": tasks.astype(object),
            "domain": domains,
            "language": language,
            "text": ("Synthetic question (" + q_text + ")").to_numpy(dtype=object),
        }
    )
    return _Questions(keys=q_keys, tasks=tasks, domains=domains, frame=questions)


def _main_slots(features: pd.DataFrame, qs: _Questions, cfg: SimConfig, rng: np.random.Generator) -> _Slots:
    """The main instructions (variants per question after Table A11) with their three
    constraints each, drawn by :func:`_slots`."""
    nq = len(qs.keys)
    counts = _variant_counts(nq, cfg.n_instructions, rng)
    question_of = np.repeat(np.arange(nq), counts)
    ni = len(question_of)
    i_keys = np.array([f"i{i:05d}" for i in range(1, ni + 1)], dtype=object)
    feat, forbid = _slots(features, question_of, nq, cfg, rng)
    slot_i = np.repeat(np.arange(ni), 3)
    slot_pos = np.tile(np.arange(1, 4), ni)
    feat_key = features["feature"].to_numpy(dtype=object)
    feat_cat = features["category"].to_numpy(dtype=object)
    mode = np.where(forbid, "forbid", "require").astype(object)
    c_text = np.where(
        forbid,
        features["forbid_text"].to_numpy(dtype=object)[feat],
        features["require_text"].to_numpy(dtype=object)[feat],
    )
    c_accept = np.where(
        forbid,
        features["forbid_acceptance"].to_numpy(dtype=object)[feat],
        features["require_acceptance"].to_numpy(dtype=object)[feat],
    )
    params = features["params"].to_numpy(dtype=object)[feat]
    constraints = pd.DataFrame(
        {
            "instruction": i_keys[slot_i],
            "position": slot_pos,
            "feature": feat_key[feat],
            "category": feat_cat[feat],
            "mode": mode,
            "text": c_text,
            "acceptance": c_accept,
            "params": params,
        }
    )
    joined = pd.Series(c_text).to_numpy().reshape(ni, 3)
    i_text = (
        pd.Series(qs.frame["text"].to_numpy()[question_of])
        + "\n1. "
        + joined[:, 0]
        + "\n2. "
        + joined[:, 1]
        + "\n3. "
        + joined[:, 2]
    ).to_numpy(dtype=object)
    instructions = pd.DataFrame(
        {
            "instruction": i_keys,
            "question": qs.keys[question_of],
            "condition": CONDITION_MAIN,
            "pair_group": i_keys,
            "text": i_text,
        }
    )
    return _Slots(
        i_keys=i_keys,
        question_of=question_of,
        i_text=i_text,
        slot_i=slot_i,
        slot_pos=slot_pos,
        slot_q=question_of[slot_i],
        feat=feat,
        forbid=forbid,
        feat_key=feat_key,
        feat_cat=feat_cat,
        mode=mode,
        c_text=c_text,
        constraints=constraints,
        instructions=instructions,
    )


def _baseline(features: pd.DataFrame, q_keys: np.ndarray, cfg: SimConfig, rng: np.random.Generator) -> _Baseline:
    """The models with their abilities, and which catalog features each model's baseline
    response to each question shows (``cfg.baseline_features`` per response on average)."""
    nm, nq, n_feat = cfg.n_models, len(q_keys), len(features)
    m_keys = np.array([f"model-{i:02d}" for i in range(1, nm + 1)], dtype=object)
    models = pd.DataFrame({"model": m_keys, "provider": "synthetic"})
    abilities = (
        np.asarray(cfg.abilities, dtype=float)
        if cfg.abilities is not None
        else np.sort(rng.uniform(ABILITY_RANGE[0], ABILITY_RANGE[1], nm))[::-1]
    )
    feat_w = np.log(features["require_weight"].to_numpy() + features["forbid_weight"].to_numpy())
    feat_z = (feat_w - feat_w.mean()) / feat_w.std()
    verbosity = rng.normal(0, 0.3, nm)
    q_effect = rng.normal(0, 0.8, (nq, n_feat))
    raw = 1.6 * feat_z[None, None, :] + verbosity[:, None, None] + q_effect[None, :, :]
    shift = brentq(lambda s: expit(raw + s).mean() * n_feat - cfg.baseline_features, -30, 30)
    present = rng.random(raw.shape) < expit(raw + shift)  # models × questions × features
    bm, bq, bf = np.nonzero(present)
    feat_key = features["feature"].to_numpy(dtype=object)
    baseline = pd.DataFrame({"model": m_keys[bm], "question": q_keys[bq], "feature": feat_key[bf]})
    return _Baseline(m_keys=m_keys, models=models, abilities=abilities, present=present, frame=baseline)


def _conditions(slots: _Slots, qs: _Questions, m_keys: np.ndarray, cfg: SimConfig) -> _Conditions:
    """The main condition for every model plus the optional single-constraint and prompted
    versions (one model each): their instructions, constraints and judged instances."""
    nm, n_slots = len(m_keys), len(slots.feat)
    # blocks: (model index, slot index, condition, logit bonus)
    blocks = [(np.repeat(np.arange(nm), n_slots), np.tile(np.arange(n_slots), nm), CONDITION_MAIN, 0.0)]
    extra_instr = []
    if cfg.single_constraint:
        m = _model_index(cfg.single_model, m_keys, nm // 2, "single_model")
        blocks.append((np.full(n_slots, m), np.arange(n_slots), "single", cfg.single_bonus))
        s_keys = slots.i_keys[slots.slot_i] + "-s" + slots.slot_pos.astype(str).astype(object)
        extra_instr.append(
            pd.DataFrame(
                {
                    "instruction": s_keys,
                    "question": qs.keys[slots.slot_q],
                    "condition": "single",
                    "pair_group": slots.i_keys[slots.slot_i],
                    "text": (pd.Series(qs.frame["text"].to_numpy()[slots.slot_q]) + "\n1. " + slots.c_text).to_numpy(
                        dtype=object
                    ),
                }
            )
        )
    if cfg.prompted:
        m = _model_index(cfg.prompted_model, m_keys, nm - 1, "prompted_model")
        blocks.append((np.full(n_slots, m), np.arange(n_slots), "prompted", cfg.prompted_bonus))
        extra_instr.append(
            pd.DataFrame(
                {
                    "instruction": slots.i_keys + "-p",
                    "question": qs.keys[slots.question_of],
                    "condition": "prompted",
                    "pair_group": slots.i_keys,
                    "text": slots.i_text + "\n\n" + PROMPT_SUFFIX,
                }
            )
        )
    instructions = pd.concat([slots.instructions, *extra_instr], ignore_index=True)
    extra_cons = []
    for b in blocks[1:]:
        c = slots.constraints.copy()
        c["instruction"] = (
            (c["instruction"] + "-s" + c["position"].astype(str)) if b[2] == "single" else c["instruction"] + "-p"
        )
        extra_cons.append(c)
    return _Conditions(
        instructions=instructions,
        constraints=pd.concat([slots.constraints, *extra_cons], ignore_index=True),
        m=np.concatenate([b[0] for b in blocks]),
        s=np.concatenate([b[1] for b in blocks]),
        cond=np.concatenate([np.full(len(b[0]), b[2], dtype=object) for b in blocks]),
        bonus=np.concatenate([np.full(len(b[0]), b[3]) for b in blocks]),
    )


def _truth(
    slots: _Slots, base: _Baseline, conds: _Conditions, n_feat: int, cfg: SimConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Per judged instance the hidden true label (0/1) and whether its target is
    baseline-opposed: latent pass propensities shared across conditions (module docstring)."""
    slot_q, feat, forbid = slots.slot_q, slots.feat, slots.forbid
    inst_m, inst_s = conds.m, conds.s
    _, group = np.unique(slot_q * (2 * n_feat) + feat * 2 + forbid, return_inverse=True)
    target_effect = rng.normal(0, 0.6, 2 * n_feat)[feat * 2 + forbid]
    within = 1.0 if cfg.correlated else 0.0  # the effects that make a question's truths correlated
    instr_effect = within * rng.normal(0, 0.4, len(slots.i_keys))[slots.slot_i]
    persist = within * rng.normal(0, cfg.persistence, (cfg.n_models, group.max() + 1))
    opposed = base.present[inst_m, slot_q[inst_s], feat[inst_s]] == forbid[inst_s]
    model_instr = rng.normal(0, 0.3, len(inst_m))
    lat = (
        base.abilities[inst_m]
        + target_effect[inst_s]
        + instr_effect[inst_s]
        + persist[inst_m, group[inst_s]]
        + model_instr
        + conds.bonus
        - cfg.opposed_penalty * opposed
    )
    truth = (rng.random(len(lat)) < expit(lat)).astype(np.int8)
    return truth, opposed


def _judge_labels(
    truth: np.ndarray, abilities: np.ndarray, conds: _Conditions, cfg: SimConfig, rng: np.random.Generator
) -> list[np.ndarray]:
    """The two judges' labels: an error rate per (judge, truth, model), jointly rescaled so
    that the main condition's agreement hits ``cfg.agreement``; both wrong together on a share
    ``cfg.both_wrong`` of instances."""
    skill = (abilities - abilities.mean()) / (abilities.std() or 1.0)
    model_mult = np.exp(-cfg.model_error_spread * skill + rng.normal(0, 0.1, cfg.n_models))[conds.m]
    rates = [np.where(truth == 1, cfg.judge_false_fail[j], cfg.judge_false_pass[j]) * model_mult for j in (0, 1)]
    main = conds.cond == CONDITION_MAIN
    ea, eb = rates[0][main], rates[1][main]
    cap = 0.49 / max(rates[0].max(), rates[1].max())
    # both judges wrong together on a share ``both_wrong`` of instances (an agreement), independent errors elsewhere
    gap = lambda s: (1 - cfg.both_wrong) * np.mean(s * ea + s * eb - 2 * s * s * ea * eb) - (1 - cfg.agreement)  # noqa: E731
    if gap(cap) < 0:
        raise ValueError(f"agreement {cfg.agreement} is out of reach of the judge error rates")
    scale_err = brentq(gap, 0.0, cap)
    labels = [np.where(rng.random(len(truth)) < e * scale_err, 1 - truth, truth).astype(np.int8) for e in rates]
    if cfg.both_wrong > 0:
        together = rng.random(len(truth)) < cfg.both_wrong
        labels = [np.where(together, 1 - truth, lab).astype(np.int8) for lab in labels]
    return labels


def _instances(
    slots: _Slots,
    qs: _Questions,
    m_keys: np.ndarray,
    conds: _Conditions,
    opposed: np.ndarray,
    labels: list[np.ndarray],
    truth: np.ndarray,
    cfg: SimConfig,
) -> pd.DataFrame:
    """The INSTANCES frame (frames.py): one row per judged (model, instruction, position) with
    both judges' labels and the truth; ``iid`` = model · 3·rows + instruction row · 3 + position − 1."""
    inst_m, inst_s, inst_cond = conds.m, conds.s, conds.cond
    n_rows = len(conds.instructions)
    instr_row = pd.Series(np.arange(n_rows), index=conds.instructions["instruction"].to_numpy())
    inst_instr = slots.i_keys[slots.slot_i[inst_s]].copy()
    single, prompted = inst_cond == "single", inst_cond == "prompted"
    inst_instr[single] = inst_instr[single] + "-s" + slots.slot_pos[inst_s][single].astype(str).astype(object)
    inst_instr[prompted] = inst_instr[prompted] + "-p"
    pos = slots.slot_pos[inst_s]
    iid = inst_m.astype(np.int64) * (3 * n_rows) + instr_row.reindex(inst_instr).to_numpy() * 3 + pos - 1
    judge_names = list(cfg.judges)
    qrow = slots.slot_q[inst_s]
    feat = slots.feat[inst_s]
    return pd.DataFrame(
        {
            INSTANCE_KEY: iid,
            "model": m_keys[inst_m],
            "question": qs.keys[qrow],
            "instruction": inst_instr,
            "condition": inst_cond,
            "pair_group": slots.i_keys[slots.slot_i[inst_s]],
            "task_type": qs.tasks.astype(object)[qrow],
            "domain": qs.domains[qrow],
            "position": pos,
            "feature": slots.feat_key[feat],
            "category": slots.feat_cat[feat],
            "mode": slots.mode[inst_s],
            "baseline_opposed": opposed,
            f"label_{judge_names[0]}": labels[0].astype(float),
            f"label_{judge_names[1]}": labels[1].astype(float),
            "truth": truth,
        }
    )


def _judgments(instances: pd.DataFrame, judge_names: list, labels: list[np.ndarray]) -> pd.DataFrame:
    """Both judges' judgments of every instance, with a one-line rationale."""
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "model": instances["model"].to_numpy(),
                    "instruction": instances["instruction"].to_numpy(),
                    "position": instances["position"].to_numpy(),
                    "judge": judge,
                    "label": lab,
                    "rationale": np.where(
                        lab == 1, "Meets the acceptance criteria.", "Violates the acceptance criteria."
                    ),
                }
            )
            for judge, lab in zip(judge_names, labels)
        ],
        ignore_index=True,
    )


def _responses(instances: pd.DataFrame, m_keys: np.ndarray, q_keys: np.ndarray) -> pd.DataFrame:
    """A baseline response of every model to every question, then one constrained response
    per judged (model, instruction)."""
    nm, nq = len(m_keys), len(q_keys)
    resp = instances.drop_duplicates(["model", "instruction"])[["model", "question", "instruction"]]
    constrained = resp.assign(
        kind="constrained", text="Synthetic response of " + resp["model"] + " to " + resp["instruction"] + "."
    )
    base_resp = pd.DataFrame({"model": np.repeat(m_keys, nq), "question": np.tile(q_keys, nm), "instruction": ""})
    base_resp = base_resp.assign(
        kind="baseline", text="Synthetic baseline of " + base_resp["model"] + " for " + base_resp["question"] + "."
    )
    return pd.concat([base_resp, constrained], ignore_index=True)


def _extractions(baseline: pd.DataFrame, m_keys, q_keys, cfg: SimConfig, rng: np.random.Generator) -> pd.DataFrame:
    """Open-ended extractions of each baseline response (ReFormBench App. A.4): every present
    catalog feature is extracted as an exact, subtype or composite match (else missed), and
    each response adds uncovered formats and non-format features (Poisson counts)."""
    exact, subtype, composite = cfg.extraction_mix
    u = rng.random(len(baseline))
    kind = np.select(
        [u < exact, u < exact + subtype, u < exact + subtype + composite], ["exact", "subtype", "composite"], ""
    )
    feat = baseline["feature"].to_numpy(dtype=object)
    label = np.where(kind == "exact", feat, np.where(kind == "subtype", feat + " (variant)", feat + " + emphasis"))
    hit = kind != ""
    covered = pd.DataFrame(
        {
            "model": baseline["model"].to_numpy()[hit],
            "question": baseline["question"].to_numpy()[hit],
            "label": label[hit],
            "feature": feat[hit],
            "match": kind[hit],
        }
    )
    nm, nq = len(m_keys), len(q_keys)
    extra = []
    for match, mean in zip(("uncovered", "not_format"), cfg.extraction_extra):
        n = rng.poisson(mean, size=(nm, nq))
        mi, qi = np.nonzero(n)
        reps = n[mi, qi]
        k = np.concatenate([np.arange(r) for r in reps]) if len(reps) else np.zeros(0, dtype=int)
        prefix = "custom layout" if match == "uncovered" else "tone"
        extra.append(
            pd.DataFrame(
                {
                    "model": np.repeat(m_keys[mi], reps),
                    "question": np.repeat(q_keys[qi], reps),
                    "label": [f"{prefix} {j + 1}" for j in k],
                    "feature": "",
                    "match": match,
                }
            )
        )
    return pd.concat([covered, *extra], ignore_index=True)


def _model_index(name: Optional[str], m_keys: np.ndarray, default: int, option: str) -> int:
    if name is None:
        return default
    hits = np.flatnonzero(m_keys == name)
    if len(hits) == 0:
        raise ValueError(f"{option} {name!r} is not a simulated model; models are {list(m_keys)}")
    return int(hits[0])
