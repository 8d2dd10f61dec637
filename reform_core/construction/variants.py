"""ReFormBench instruction variants (ReFormBench, arXiv:2610.19693, §3.3, App. A.7.4, A.7.5;
docs/metrics.md#catalog and #targets-and-baseline-opposition).

A *variant* is a question plus ``k`` (default 3) constraints from ``k`` distinct catalog
categories. A constraint is one catalog feature in one mode (``require`` / ``forbid``)
with concrete parameters; its text and acceptance criteria are the catalog's templates
filled with those parameters. A *target* is (question, feature, mode): occurrences in
different variants are linked by it, while their parameters may differ (App. A.7.4).

Frames (the importer's columns, :mod:`reform_core.services.data.importer`):

INSTRUCTIONS  ``key, question, condition, pair_group, text``
CONSTRAINTS   ``instruction, position, feature, category, mode, text, acceptance, params``
QUESTIONS     ``key, text`` (+ anything else)

Everything is deterministic given the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import string
from itertools import combinations

import numpy as np
import pandas as pd

from reform_core.catalog import Catalog, Feature

INSTRUCTION_COLUMNS = ["key", "question", "condition", "pair_group", "text"]
CONSTRAINT_COLUMNS = ["instruction", "position", "feature", "category", "mode", "text", "acceptance", "params"]
MULTIPLICITY_BINS = (("1", 1, 1), ("2", 2, 2), ("3", 3, 3), ("4–5", 4, 5), ("6–10", 6, 10), (">10", 11, None))
ISSUE_COLUMNS = ["instruction", "position", "field", "message"]


def _require(df: pd.DataFrame, columns, what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; has {list(df.columns)}")


# --- parameters ----------------------------------------------------------------------


def validate_params(feature: Feature, params: dict | None) -> dict:
    """The complete parameter values of a constraint on ``feature`` (defaults filled in).

    Raises ValueError naming the feature, the parameter and the value when a parameter is
    unknown, missing (no default), of the wrong type, outside ``[min, max]`` or not among
    the declared ``choices`` (App. A.7.5: "automated checks validate constraint parameters").
    """
    params = dict(params or {})
    declared = {p.name: p for p in feature.params}
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ValueError(f"feature {feature.key!r}: unknown param(s) {unknown}; declared: {sorted(declared)}")
    out = {}
    for name, p in declared.items():
        value = params.get(name, p.default)
        where = f"feature {feature.key!r}: param {name!r}"
        if value is None:
            raise ValueError(f"{where}: no value and no default")
        if p.type == "int" and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise ValueError(f"{where}: expected an integer, got {value!r}")
        if p.type == "float" and (isinstance(value, bool) or not isinstance(value, (int, float, np.number))):
            raise ValueError(f"{where}: expected a number, got {value!r}")
        if p.type == "str" and not isinstance(value, str):
            raise ValueError(f"{where}: expected a string, got {value!r}")
        if p.type == "list" and not isinstance(value, (list, tuple)):
            raise ValueError(f"{where}: expected a list, got {value!r}")
        if p.type in ("int", "float"):
            if (p.min is not None and value < p.min) or (p.max is not None and value > p.max):
                raise ValueError(f"{where}: value {value} outside [{p.min}, {p.max}]")
            value = int(value) if p.type == "int" else float(value)
        if p.choices and value not in p.choices:
            raise ValueError(f"{where}: value {value!r} not among {list(p.choices)}")
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def sample_params(feature: Feature, rng: np.random.Generator) -> dict:
    """Random valid parameters: an integer uniformly in ``[min, max]`` (default when the
    range is open), one of the ``choices``, otherwise the default."""
    out = {}
    for p in feature.params:
        if p.choices:
            out[p.name] = p.choices[int(rng.integers(len(p.choices)))]
        elif p.type == "int" and p.min is not None and p.max is not None:
            out[p.name] = int(rng.integers(int(p.min), int(p.max) + 1))
        else:
            out[p.name] = p.default
    return validate_params(feature, out)


def used_params(feature: Feature, mode: str) -> set[str]:
    """The parameter names that the ``mode`` template or acceptance text of ``feature`` uses."""
    texts = (feature.template(mode), feature.acceptance[mode])
    return {name for t in texts for _, name, _, _ in string.Formatter().parse(t) if name}


def make_constraint(
    catalog: Catalog, feature: str, mode: str, params: dict | None = None, *, position: int = 1
) -> dict:
    """One constraint row: the catalog templates of ``feature`` × ``mode`` filled with
    ``params``; ``params`` of the row keeps the values the mode's texts use."""
    f = catalog.feature(feature)
    values = validate_params(f, params)
    kept = {k: v for k, v in values.items() if k in used_params(f, mode)}
    return {
        "position": int(position),
        "feature": f.key,
        "category": f.category,
        "mode": mode,
        "text": f.render(mode, **values),
        "acceptance": f.render_acceptance(mode, **values),
        "params": kept,
    }


def compose_text(question_text: str, constraint_texts: list[str]) -> str:
    """The template instruction: the question, then the numbered formatting requirements."""
    lines = [f"{n}. {t}" for n, t in enumerate(constraint_texts, 1)]
    return f"{question_text.rstrip()}\n\nFormatting requirements:\n" + "\n".join(lines)


# --- candidate generation ------------------------------------------------------------


def _target_pool(catalog: Catalog, size: int, k: int, rng: np.random.Generator, features) -> list[tuple[str, str]]:
    keys = list(features) if features is not None else catalog.keys()
    cats = {catalog.feature(x).category for x in keys}
    if len(cats) < k:
        raise ValueError(f"features: need features from at least {k} categories, got {len(cats)}")
    size = min(max(size, k), len(keys))
    for _ in range(1000):
        chosen = [keys[i] for i in rng.choice(len(keys), size=size, replace=False)]
        if len({catalog.feature(x).category for x in chosen}) >= k:
            break
    else:  # pragma: no cover - only with a pathological feature list
        raise ValueError(f"could not draw a target pool covering {k} categories")
    pool = []
    for key in chosen:
        modes = catalog.feature(key).modes
        pool.append((key, modes[int(rng.integers(len(modes)))]))
    return pool


def propose_variants(
    questions: pd.DataFrame,
    catalog: Catalog,
    *,
    per_question: int,
    rng: np.random.Generator,
    k: int = 3,
    pool_size: int = 6,
    features: list[str] | None = None,
    start: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Candidate variants: ``per_question`` combinations of ``k`` targets from distinct
    categories for every question (ReFormBench App. A.7.4).

    Each question gets a pool of ``pool_size`` targets (feature with a random mode, drawn
    without replacement from ``features`` or the whole catalog); its variants are distinct
    ``k``-subsets of that pool with distinct categories, in random order, so targets recur
    across a question's variants (the links EMCR needs). Parameters are drawn per
    occurrence (:func:`sample_params`). Keys are ``{question}-v{n:03d}`` from ``start``.
    Fewer than ``per_question`` variants come out when the pool admits fewer combinations.

    Returns
    -------
    (INSTRUCTIONS, CONSTRAINTS) frames; the instruction text is :func:`compose_text`.
    """
    _require(questions, ["key", "text"], "questions")
    if per_question < 1 or k < 1:
        raise ValueError(f"per_question and k must be >= 1, got {per_question}, {k}")
    if features is not None:
        for key in features:
            catalog.feature(key)
    ins_rows, con_rows = [], []
    for q in questions.itertuples(index=False):
        pool = _target_pool(catalog, pool_size, k, rng, features)
        combos = [
            c for c in combinations(range(len(pool)), k) if len({catalog.feature(pool[i][0]).category for i in c}) == k
        ]
        order = rng.permutation(len(combos))[:per_question]
        for n, ci in enumerate(order, start):
            key = f"{q.key}-v{n:03d}"
            members = [pool[i] for i in np.asarray(combos[ci])[rng.permutation(k)]]
            cons = [
                make_constraint(catalog, f, m, sample_params(catalog.feature(f), rng), position=j)
                for j, (f, m) in enumerate(members, 1)
            ]
            ins_rows.append(
                {
                    "key": key,
                    "question": q.key,
                    "condition": "main",
                    "pair_group": key,
                    "text": compose_text(q.text, [c["text"] for c in cons]),
                }
            )
            con_rows += [{"instruction": key, **c} for c in cons]
    return (pd.DataFrame(ins_rows, columns=INSTRUCTION_COLUMNS), pd.DataFrame(con_rows, columns=CONSTRAINT_COLUMNS))


# --- automated checks ----------------------------------------------------------------


def check_variants(
    instructions: pd.DataFrame, constraints: pd.DataFrame, catalog: Catalog, *, k: int = 3, verbatim: bool = False
) -> pd.DataFrame:
    """Automated validity checks of variants (ReFormBench App. A.7.5).

    Per instruction: exactly ``k`` constraints at positions 1..k; every feature in the
    catalog and offered in its mode; the recorded category is the feature's category; the
    ``k`` categories are distinct; parameters valid against the catalog; the recorded
    text and acceptance equal the filled templates; with ``verbatim``, every constraint
    text appears in the instruction text (template composition; an LLM-integrated text
    rewords the constraints and is reviewed by a person or a model instead).

    Returns
    -------
    DataFrame ``instruction, position, field, message`` — one row per problem, empty when
    every variant passes.
    """
    _require(instructions, ["key", "text"], "instructions")
    _require(constraints, CONSTRAINT_COLUMNS, "constraints")
    issues = []

    def bad(ins, pos, fld, msg):
        issues.append({"instruction": ins, "position": pos, "field": fld, "message": msg})

    texts = dict(zip(instructions["key"], instructions["text"]))
    for key in sorted(set(constraints["instruction"]) - set(texts)):
        bad(key, None, "instruction", "constraints refer to an unknown instruction")
    groups = {key: g for key, g in constraints.groupby("instruction", sort=False)}
    for key in instructions["key"]:
        g = groups.get(key)
        if g is None or len(g) != k:
            bad(key, None, "constraints", f"expected {k} constraints, found {0 if g is None else len(g)}")
            if g is None:
                continue
        if sorted(g["position"].astype(int)) != list(range(1, len(g) + 1)):
            bad(key, None, "position", f"positions must be 1..{len(g)}, got {sorted(g['position'].tolist())}")
        cats = []
        for r in g.itertuples(index=False):
            if r.feature not in catalog:
                bad(key, r.position, "feature", f"unknown feature {r.feature!r}")
                continue
            f = catalog.feature(r.feature)
            cats.append(f.category)
            if r.mode not in f.modes:
                bad(key, r.position, "mode", f"feature {r.feature!r} has no mode {r.mode!r}")
                continue
            if r.category and r.category != f.category:
                bad(key, r.position, "category", f"{r.category!r} is not {r.feature!r}'s category {f.category!r}")
            try:
                values = validate_params(f, r.params if isinstance(r.params, dict) else {})
            except ValueError as exc:
                bad(key, r.position, "params", str(exc))
                continue
            if r.text != f.render(r.mode, **values):
                bad(key, r.position, "text", "does not match the catalog template with these params")
            if r.acceptance != f.render_acceptance(r.mode, **values):
                bad(key, r.position, "acceptance", "does not match the catalog acceptance with these params")
            if verbatim and r.text not in str(texts[key]):
                bad(key, r.position, "text", "constraint text missing from the instruction text")
        if len(set(cats)) != len(cats):
            bad(key, None, "category", f"categories are not distinct: {sorted(cats)}")
    return pd.DataFrame(issues, columns=ISSUE_COLUMNS)


# --- target links and multiplicities ---------------------------------------------------


def target_links(instructions: pd.DataFrame, constraints: pd.DataFrame) -> pd.DataFrame:
    """Targets (question, feature, mode) with the variants they occur in (App. A.7.4).

    Returns
    -------
    DataFrame ``question, feature, mode, variants`` (sorted tuple of instruction keys),
    ``n_variants``; sorted by question, feature, mode.
    """
    _require(instructions, ["key", "question"], "instructions")
    _require(constraints, ["instruction", "feature", "mode"], "constraints")
    df = constraints.merge(instructions[["key", "question"]], left_on="instruction", right_on="key", how="left")
    if df["question"].isna().any():
        raise ValueError(
            f"constraints refer to unknown instruction {df.loc[df['question'].isna(), 'instruction'].iloc[0]!r}"
        )
    out = (
        df.groupby(["question", "feature", "mode"])["instruction"]
        .agg(lambda s: tuple(sorted(set(s))))
        .rename("variants")
        .reset_index()
    )
    out["n_variants"] = out["variants"].map(len)
    return out


def _bin(n: int) -> str:
    for label, lo, hi in MULTIPLICITY_BINS:
        if n >= lo and (hi is None or n <= hi):
            return label
    raise ValueError(f"count {n} < 1")


def multiplicity_table(instructions: pd.DataFrame, constraints: pd.DataFrame) -> pd.DataFrame:
    """Table A11 of ReFormBench (arXiv:2610.19693): questions by number of variants, targets by number of variants.

    Returns
    -------
    DataFrame ``variants`` (bin label 1, 2, 3, 4–5, 6–10, >10, Total), ``questions``,
    ``targets``; plus attribute ``attrs["recurring"]`` (targets in ≥ 2 variants) and
    ``attrs["max_per_question"]``, ``attrs["max_per_target"]``.
    """
    links = target_links(instructions, constraints)
    per_q = instructions.groupby("question")["key"].nunique()
    labels = [b[0] for b in MULTIPLICITY_BINS]
    q = per_q.map(_bin).value_counts().reindex(labels, fill_value=0)
    t = links["n_variants"].map(_bin).value_counts().reindex(labels, fill_value=0)
    out = pd.DataFrame(
        {
            "variants": labels + ["Total"],
            "questions": [*q.tolist(), int(q.sum())],
            "targets": [*t.tolist(), int(t.sum())],
        }
    )
    out.attrs.update(
        recurring=int((links["n_variants"] >= 2).sum()),
        max_per_question=int(per_q.max()) if len(per_q) else 0,
        max_per_target=int(links["n_variants"].max()) if len(links) else 0,
    )
    return out


# --- difficulty screening ------------------------------------------------------------


def screen_difficulty(
    instances: pd.DataFrame, *, keep: int, model: str = "model", instruction: str = "instruction", p: str = "p"
) -> pd.DataFrame:
    """Rank candidates by calibrated all-pass probability and keep the ``keep`` hardest
    (ReFormBench §3.3, App. A.7.5).

    score_i = mean over screening models m of ∏_j p[m, i, j]; candidates are sorted by
    ascending score with ties broken by instruction key, the first ``keep`` are retained
    (the highest-scoring ones are discarded). Every candidate must have probabilities
    from the same set of screening models.

    Returns
    -------
    DataFrame ``instruction, score, n_models, rank`` (1 = hardest), ``kept``.
    """
    _require(instances, [model, instruction, p], "instances")
    if keep < 0:
        raise ValueError(f"keep: must be >= 0, got {keep}")
    x = pd.to_numeric(instances[p], errors="coerce")
    if x.isna().any() or ((x < 0) | (x > 1)).any():
        raise ValueError(f"column {p!r} must hold probabilities in [0, 1] with no missing value")
    df = instances.assign(_p=x.to_numpy())
    allpass = df.groupby([instruction, model])["_p"].prod().rename("allpass").reset_index()
    models = set(allpass[model])
    seen = allpass.groupby(instruction)[model].agg(set)
    partial = seen[seen.map(lambda s: s != models)]
    if len(partial):
        ins = partial.index[0]
        raise ValueError(f"instruction {ins!r} lacks screening model(s) {sorted(models - partial.iloc[0])}")
    out = allpass.groupby(instruction).agg(score=("allpass", "mean"), n_models=(model, "nunique")).reset_index()
    out = out.rename(columns={instruction: "instruction"})
    out["instruction"] = out["instruction"].astype(str)
    out = out.sort_values(["score", "instruction"], kind="mergesort").reset_index(drop=True)
    out["rank"] = np.arange(1, len(out) + 1)
    out["kept"] = out["rank"] <= keep
    return out


# --- derived conditions ----------------------------------------------------------------


def derive_conditions(
    instructions: pd.DataFrame,
    constraints: pd.DataFrame,
    questions: pd.DataFrame,
    *,
    single: bool = True,
    prompted: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Single-constraint and prompted copies of the main instructions (ReFormBench §4.3, §4.4).

    * single: one instruction per constraint, key ``{key}-s{position}``, condition
      ``single``, the question with that one constraint (:func:`compose_text`); the
      constraint keeps its position so it pairs with the joint instruction.
    * prompted: key ``{key}-p``, condition ``prompted``, the same text and constraints;
      the meta-prompt is appended to the user message at collection time
      (:func:`reform_core.construction.prompts.user_message`).

    Both share ``pair_group`` = the main key. Returns the new (INSTRUCTIONS, CONSTRAINTS).
    """
    _require(instructions, INSTRUCTION_COLUMNS, "instructions")
    _require(questions, ["key", "text"], "questions")
    qtext = dict(zip(questions["key"], questions["text"]))
    main = instructions[instructions["condition"] == "main"]
    by_ins = {k: g for k, g in constraints.groupby("instruction", sort=False)}
    ins_rows, con_rows = [], []
    for r in main.itertuples(index=False):
        g = by_ins.get(r.key)
        if g is None:
            raise ValueError(f"instruction {r.key!r} has no constraints")
        if r.question not in qtext:
            raise ValueError(f"instruction {r.key!r}: unknown question {r.question!r}")
        if single:
            for c in g.itertuples(index=False):
                key = f"{r.key}-s{int(c.position)}"
                ins_rows.append(
                    {
                        "key": key,
                        "question": r.question,
                        "condition": "single",
                        "pair_group": r.key,
                        "text": compose_text(qtext[r.question], [c.text]),
                    }
                )
                con_rows.append({**c._asdict(), "instruction": key})
        if prompted:
            key = f"{r.key}-p"
            ins_rows.append(
                {"key": key, "question": r.question, "condition": "prompted", "pair_group": r.key, "text": r.text}
            )
            con_rows += [{**c._asdict(), "instruction": key} for c in g.itertuples(index=False)]
    return (pd.DataFrame(ins_rows, columns=INSTRUCTION_COLUMNS), pd.DataFrame(con_rows, columns=CONSTRAINT_COLUMNS))
