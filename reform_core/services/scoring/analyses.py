"""Auxiliary analyses of a project (issue 17): Table 3 (composition) and the per-target rates
behind Figure 4, the prompting comparison, catalog coverage (Table A4) and Table 4 (feature
frequencies and Spearman ρ), each with a population and a measurement interval.

Rules, stated with every result (``rule_text``):

* the main scores (``services.scoring.score``) use main-condition judgments and main
  adjudications only;
* the auxiliary analyses use the paper's **pooled** rule by default (docs/metrics.md#pooled-calibration;
  ReFormBench, arXiv:2610.19693, App. A.3.2:
  ``p = g`` where the judges agree, else ``W_A·g + (1 − W_A)·m`` with ``W_A`` the share of
  the main adjudication pool siding with judge A), or the **stratified** rule per condition
  (each condition calibrated from its own strata and its own adjudications) on request, or
  one judge's raw labels.

Only complete, consistent pairs are compared; what is left out is counted per reason and
listed (:mod:`reform_core.metrics.analyses`).

Intervals (percentile, ``level``):

* population — cluster bootstrap over questions (multinomial question weights, shared by
  both conditions and every model); percentile intervals, except Table 4's ρ (Fisher-z
  interval with the bootstrap standard error of atanh ρ*: it always contains ρ̂, where the
  percentile and basic intervals left it out because resampled ρ* is biased low);
* measurement — questions fixed, the calibration's adjudications resampled: the pooled
  weight ``W_A* ~ Binomial(n_pool, W_A)/n_pool`` (pooled), or each reviewed stratum's
  ``π̂*_h ~ Binomial(n_h, π̂_h)/n_h`` (stratified); none for raw labels; for Table A4 the
  extracted instances are resampled within each (model, question); Table 4 has no
  measurement model (baseline annotations enter as observed), so its measurement interval
  is empty and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from reform_core.calibration import calibrate_pooled, calibrate_stratified, pooled_weights, stratum_rates
from reform_core.metrics import analyses as A
from reform_core.metrics.composition import composition_table, prompting_comparison
from reform_core.metrics.coverage import catalog_coverage, feature_frequency, frequency_correlation
from reform_core.services.accounts.auth import Principal, require

RULES = ("pooled", "stratified")
RULE_TEXT = {
    "pooled": (
        "auxiliary analyses: the ReFormBench paper's pooled rule (its App. A.3.2) — p = agreed label, else "
        "W_A·label_A + (1 − W_A)·label_B with W_A from the main adjudication pool; main scores use main "
        "judgments and main adjudications only"
    ),
    "stratified": (
        "auxiliary analyses: the stratified rule per condition — each condition calibrated from its own "
        "strata and its own adjudications; main scores use main judgments and main adjudications only"
    ),
}
INTERVAL_TEXT = {
    "population": "cluster bootstrap over questions",
    "measurement": {
        "pooled": "questions fixed; W_A resampled from the adjudication pool (Binomial(n_pool, W_A)/n_pool)",
        "stratified": "questions fixed; each reviewed stratum's π̂_h resampled (Binomial(n_h, π̂_h)/n_h)",
        "raw": "none: one judge's raw labels have no calibration to resample",
        "coverage": "extracted instances resampled within each (model, question)",
        "table4": "none: baseline annotations enter as observed (no measurement model); the population interval of ρ "
        "is a Fisher-z interval, tanh(atanh ρ̂ ± z·sd(atanh ρ*)) with the standard deviation over the "
        "bootstrap replicates: it always contains ρ̂ (resampled ρ* are biased low, so percentile intervals "
        "would sit beside it)",
    },
}
CONSTRUCTION_META = "construction_models"
# Bootstrap replicates of every auxiliary-analysis interval, by default everywhere: the Scores page,
# `analyses` and `export` (which uses min(--reps, N_BOOT)) draw the same replicates with the same
# seed, so the page, `analyses --json` and the export show equal intervals.
N_BOOT = 500


class AnalysisError(ValueError):
    """The analyses cannot be run (no pair, unknown rule, …)."""


@dataclass
class AnalysesResult:
    rule: str
    rule_text: str
    tables: dict[str, pd.DataFrame] = field(
        default_factory=dict
    )  # table3_composition, composition_targets, prompting, table_a4_coverage, table4_frequency, table4_correlation
    exclusions: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=A.EXCLUSION_COLUMNS))
    notes: dict[str, list[str]] = field(default_factory=dict)  # per analysis: why it is missing or partial
    errors: dict[str, str] = field(default_factory=dict)  # per analysis: what failed (the others still run)
    intervals: dict = field(default_factory=dict)
    n_boot: int = 0
    seed: int = 0
    p_auxiliary: Optional[pd.Series] = None  # p under the auxiliary rule, by iid (every condition)


# ============================================================================= calibration


@dataclass
class _Calibrated:
    inst: pd.DataFrame  # every condition, with p (NaN = no usable label)
    sampler: Optional[callable]  # rng -> replicate p vector (aligned with inst rows), or None
    method: str


def _calibrate(frames, rule: str, judge: Optional[str]) -> _Calibrated:
    from reform_core.services.data.instances import label_column
    from reform_core.services.scoring.scoring import main_adjudications

    inst = frames.instances
    if judge is not None:
        col = label_column(judge)
        if col not in inst.columns:
            raise AnalysisError(f"judge {judge!r} has no labels")
        return _Calibrated(inst.assign(p=inst[col]), None, f"judge:{judge}")
    if rule not in RULES:
        raise AnalysisError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    if frames.judge_a is None:
        raise AnalysisError(frames.pair.message if frames.pair else "no scoring pair")
    g = pd.to_numeric(inst["label_a"], errors="coerce").to_numpy(float)
    m = pd.to_numeric(inst["label_b"], errors="coerce").to_numpy(float)
    if rule == "pooled":
        pool = main_adjudications(frames)
        if pool.empty:
            raise AnalysisError("the pooled rule needs adjudications of the main condition (the pool that fixes W_A)")
        w = float(pooled_weights(pool, choice="choice").get("A", 0.0))
        out = calibrate_pooled(inst, w)
        dis = np.flatnonzero(~np.isnan(g) & ~np.isnan(m) & (g != m))
        gd, md, base = g[dis], m[dis], out["p"].to_numpy(float)
        n = len(pool)

        def sample(rng):
            w_star = rng.binomial(n, w) / n
            p = base.copy()
            p[dis] = w_star * gd + (1 - w_star) * md
            return p

        return _Calibrated(out, sample, "pooled")
    adj = frames.adjudications[["iid", "a"]]
    rates = stratum_rates(inst, adj)
    out = calibrate_stratified(inst, adj, rates=rates)
    rev = rates[rates["n_reviewed"] > 0]
    code = pd.Index(rev["stratum"].astype(str)).get_indexer(out["stratum"].astype(str))
    var = np.flatnonzero((out["source"].to_numpy() == "stratum") & (code >= 0))
    code_var, base = code[var], out["p"].to_numpy(float)
    n_rev, pi_hat = rev["n_reviewed"].to_numpy(int), rev["pi_hat"].to_numpy(float)

    def sample(rng):
        pi = rng.binomial(n_rev, pi_hat) / n_rev
        p = base.copy()
        p[var] = pi[code_var]
        return p

    return _Calibrated(out, sample, "stratified")


# ============================================================================= analyses


def _interval_rows(point: np.ndarray, pop: np.ndarray, meas: Optional[np.ndarray], level: float) -> dict:
    plo, phi = A.percentile_interval(pop, level)
    if meas is None:
        mlo = mhi = np.full(point.shape, np.nan)
    else:
        mlo, mhi = A.percentile_interval(meas, level)
    return {"pop_low": plo, "pop_high": phi, "meas_low": mlo, "meas_high": mhi}


def _composition(cal: _Calibrated, n_boot: int, rng, level: float):
    clean, excl = A.composition_pairs(cal.inst)
    if clean.empty:
        return None, None, excl, ["no complete, consistent single-constraint group to compare"]
    table = composition_table(clean)
    data = A.CompositionData(clean)
    pos = pd.Index(cal.inst.index)
    s_rows, j_rows = pos.get_indexer(data.s_label), pos.get_indexer(data.j_label)
    nq = len(data.questions)
    W = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=n_boot)
    pop = A.composition_replicates(data, W)
    meas = None
    if cal.sampler is not None:
        ps, pj = np.empty((n_boot, len(s_rows))), np.empty((n_boot, len(j_rows)))
        for b in range(n_boot):  # only the paired rows of each replicate are kept
            p = cal.sampler(rng)
            ps[b], pj[b] = p[s_rows], p[j_rows]
        meas = A.composition_replicates(data, np.ones((n_boot, nq)), ps=ps, pj=pj)
    models = list(data.models)
    cols = {"separate": "separate", "joint": "joint", "delta_pp": "delta"}
    out = []
    for r in table.itertuples(index=False):
        i = models.index(r.model)
        row = r._asdict()
        for col, side in cols.items():
            key = f"{r.measure}_{side}"
            iv = _interval_rows(np.zeros(1), pop[key][:, [i]], None if meas is None else meas[key][:, [i]], level)
            for k, v in iv.items():
                row[f"{col}_{k}"] = float(v[0])
        out.append(row)
    return pd.DataFrame(out), A.per_target_rates(data), excl, []


def _prompting(cal: _Calibrated, n_boot: int, rng, level: float):
    from reform_core.metrics.intervals import replicate_scores
    from reform_core.metrics.reform import group_sums, rates_from_sums
    from reform_core.unit_index import build_index

    clean, excl = A.prompting_pairs(cal.inst)
    if clean.empty or not (clean["condition"] == "prompted").any():
        return None, excl, ["no complete, consistent prompted pair to compare"]
    table = prompting_comparison(clean)
    index = build_index(clean)
    o = clean[clean["condition"] == "prompted"]
    b = clean.iloc[index.row_pos]
    b_key = pd.MultiIndex.from_arrays([b["model"].astype(str), A.pair_key(b), b["position"]])
    o_key = pd.MultiIndex.from_arrays([o["model"].astype(str), A.pair_key(o), o["position"]])
    o_pos = o_key.get_indexer(b_key)
    pos = pd.Index(cal.inst.index)
    base_rows, other_rows = pos.get_indexer(b.index), pos.get_indexer(o.index[o_pos])
    pv_b = cal.inst["p"].to_numpy(float)[base_rows]
    pv_o = cal.inst["p"].to_numpy(float)[other_rows]
    nq = len(index.questions)
    W = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=n_boot)
    rb, ro = replicate_scores(index, pv_b, W), replicate_scores(index, pv_o, W)
    meas_b = meas_o = None
    if cal.sampler is not None:
        mb, mo = {k: [] for k in A_METRICS}, {k: [] for k in A_METRICS}
        for _ in range(n_boot):
            p = cal.sampler(rng)
            for store, rows in ((mb, base_rows), (mo, other_rows)):
                r = rates_from_sums(group_sums(index, p[rows]))
                for k in A_METRICS:
                    store[k].append(r[k])
        meas_b = {k: np.array(v) for k, v in mb.items()}
        meas_o = {k: np.array(v) for k, v in mo.items()}
    models = list(index.models)
    out = []
    for r in table.itertuples(index=False):
        i, k = models.index(r.model), r.metric
        row = r._asdict()
        for col, pop, meas in (
            ("base", rb[k], None if meas_b is None else meas_b[k]),
            ("other", ro[k], None if meas_o is None else meas_o[k]),
            ("diff_pp", ro[k] - rb[k], None if meas_b is None else meas_o[k] - meas_b[k]),
        ):
            iv = _interval_rows(np.zeros(1), pop[:, [i]], None if meas is None else meas[:, [i]], level)
            for name, v in iv.items():
                row[f"{col}_{name}"] = float(v[0])
        out.append(row)
    return pd.DataFrame(out), excl, []


A_METRICS = ("tcpr", "emcr", "r1", "r2", "r3")


def _coverage(extracted: pd.DataFrame, n_boot: int, rng, level: float):
    if extracted.empty:
        return None, [
            "no feature extractions (import extractions.jsonl, or `simulate --extractions`, or "
            "`extract-features --open-ended`)"
        ]
    table = catalog_coverage(extracted)
    models = sorted(extracted["model"].astype(str).unique())
    questions = sorted(extracted["question"].astype(str).unique())
    nq = len(questions)
    W = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=n_boot)
    groups = A.CoverageGroups(extracted, questions=questions, models=models)
    pop = A.coverage_replicates(groups, W)
    cov_star, unc_star = groups.resample_within(n_boot, rng)
    meas = A.coverage_replicates(groups, np.ones((n_boot, nq)), cov_star, unc_star)
    order = models + [table["model"].iloc[-1]]
    iv = _interval_rows(np.zeros(len(order)), pop, meas, level)
    table = table.set_index("model").loc[order].reset_index()
    for k, v in iv.items():
        table[f"coverage_{k}"] = v
    return table, []


def _table4(
    baseline: pd.DataFrame,
    features: list[str],
    common: list[str],
    models: list[str],
    reference: list[str],
    n_boot: int,
    rng,
    level: float,
):
    notes: list[str] = []
    if baseline.empty or not common:
        return None, None, ["no baseline annotations on a question every model answered"]
    ann = baseline[baseline["question"].astype(str).isin(set(common))]
    left = len(baseline) - len(ann)
    if left:
        notes.append(f"{left} baseline annotation(s) of questions outside the common question set are left out")
    unknown = sorted(set(ann["feature"].astype(str).unique()) - set(features))
    if unknown:
        notes.append(f"{len(unknown)} annotated feature(s) outside the catalog are left out (e.g. {unknown[0]!r})")
        ann = ann[ann["feature"].astype(str).isin(set(features))]
    freq = feature_frequency(ann, features=features, n_questions=len(common))
    freq = freq.reindex(columns=models, fill_value=0.0)
    long = freq.reset_index().melt(id_vars="feature", var_name="model", value_name="frequency")
    long["questions"] = len(common)
    ref = [m for m in reference if m in models]
    others = [m for m in models if m not in ref]
    # replicate indicator array over the common questions
    qi = pd.Index(common).get_indexer(ann["question"].astype(str))
    mi = pd.Index(models).get_indexer(ann["model"].astype(str))
    fi = pd.Index(features).get_indexer(ann["feature"].astype(str))
    ind = np.zeros((len(models), len(common), len(features)))
    ind[mi, qi, fi] = 1.0
    nq = len(common)
    W = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=n_boot)
    reps = A.frequency_replicates(ind, W)
    if ref and others:
        corr = frequency_correlation(freq, ref, others=others)
        rho = A.correlation_replicates(reps, [models.index(m) for m in ref], [models.index(m) for m in others])
        corr["reference"] = ", ".join(ref)
    elif len(models) >= 2:
        notes.append(
            "no construction models recorded (`bundle.json` construction_models): each model is compared "
            "with the mean of the other models; no pooled row"
        )
        rows = []
        rho = np.full((n_boot, len(models)), np.nan)
        for i, m in enumerate(models):
            rest = [x for x in models if x != m]
            c = frequency_correlation(freq, rest, others=[m])
            rows.append({**c.iloc[0].to_dict(), "reference": "mean of the other models"})
            rho[:, i] = A.correlation_replicates(reps, [models.index(x) for x in rest], [i])[:, 0]
        corr = pd.DataFrame(rows)
    else:
        return long, None, notes + ["Table 4 needs at least two models"]
    # Fisher-z interval with the bootstrap standard error: resampling questions adds noise to every
    # frequency and pulls ρ* below ρ̂ (attenuation), so the percentile interval sits beside ρ̂ and the
    # basic one (2ρ̂ − percentiles) above it; symmetric on the z scale, this one always contains ρ̂
    lo, hi = A.fisher_z_interval(corr["rho"].to_numpy(float), rho[:, : len(corr)], level=level)
    corr["rho_pop_low"], corr["rho_pop_high"] = lo, hi
    corr["rho_meas_low"] = corr["rho_meas_high"] = np.nan
    return long, corr, notes


def _check_arguments(n_boot, rule: str, judge: Optional[str]) -> None:
    """Refuse a replicate count that is not a positive integer, or an unknown calibration rule."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise AnalysisError(f"n_boot must be a positive integer, got {n_boot!r}")
    if judge is None and rule not in RULES:
        raise AnalysisError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")


def _empty_result(rule: str, judge: Optional[str], n_boot: int, seed: int, level: float) -> AnalysesResult:
    """The result before any analysis runs: its rule, the rule's wording and the interval methods."""
    rule_key = f"judge:{judge}" if judge else rule
    text = (
        f"auxiliary analyses: judge {judge}'s raw labels; main scores use main judgments only"
        if judge
        else RULE_TEXT.get(rule, rule)
    )
    res = AnalysesResult(rule=rule_key, rule_text=text, n_boot=int(n_boot), seed=int(seed))
    res.intervals = {
        "level": level,
        "replicates": int(n_boot),
        "seed": int(seed),
        "population": INTERVAL_TEXT["population"],
        "measurement": INTERVAL_TEXT["measurement"]["raw" if judge else rule] if (judge or rule in RULES) else "",
        "measurement_coverage": INTERVAL_TEXT["measurement"]["coverage"],
        "measurement_table4": INTERVAL_TEXT["measurement"]["table4"],
    }
    return res


def _load_calibrated(
    engine: Engine,
    res: AnalysesResult,
    frames,
    judges: Optional[tuple[str, str]],
    rule: str,
    judge: Optional[str],
) -> tuple[object, Optional[_Calibrated]]:
    """The project's frames (loaded unless given) and their calibration (None, noted in ``res``, if it fails)."""
    from reform_core.services.scoring.scoring import ScoringError, load_project

    cal = None
    try:
        frames = frames or load_project(engine, judges=judges, need_pair=judge is None)
        cal = _calibrate(frames, rule, judge)
        res.p_auxiliary = pd.Series(cal.inst["p"].to_numpy(float), index=cal.inst["iid"].to_numpy())
    except (ScoringError, AnalysisError) as exc:
        for key in ("composition", "prompting"):
            res.notes[key] = [str(exc)]
    return frames, cal


def _run_calibrated_analyses(res: AnalysesResult, cal: Optional[_Calibrated], n_boot: int, rng, level: float) -> None:
    """Table 3's composition and the prompting comparison into ``res``, each guarded, with their exclusions."""
    exclusions = []
    conditions = set(cal.inst["condition"].astype(str).unique()) if cal is not None else set()
    for key, cond, run in (("composition", "single", _composition), ("prompting", "prompted", _prompting)):
        if cal is None:
            continue
        if cond not in conditions:
            res.notes[key] = [f"the project has no {cond!r} condition"]
            continue
        try:
            out = run(cal, int(n_boot), rng, level)
        except Exception as exc:  # noqa: BLE001 - a guarded analysis: report it, keep the others
            res.errors[key] = f"{type(exc).__name__}: {exc}"
            continue
        if key == "composition":
            table, targets, excl, notes = out
            if table is not None:
                res.tables["table3_composition"], res.tables["composition_targets"] = table, targets
        else:
            table, excl, notes = out
            if table is not None:
                res.tables["prompting"] = table
        exclusions.append(excl)
        res.notes[key] = notes + [
            f"{n} group(s) left out: {reason}" for reason, n in A.exclusion_counts(excl).items() if n
        ]
    if exclusions:
        res.exclusions = pd.concat(exclusions, ignore_index=True)


def analyses(
    engine: Engine,
    principal: Optional[Principal],
    *,
    rule: str = "pooled",
    judge: Optional[str] = None,
    judges: Optional[tuple[str, str]] = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
    frames=None,
    reference: Optional[list[str]] = None,
    static: Optional["StaticAnalyses"] = None,
) -> AnalysesResult:
    """Every auxiliary analysis of the project (module docstring). An analysis that cannot run
    says why in ``notes`` / ``errors``; it never stops the others. ``static``: the result of
    :func:`static_analyses` for the same inputs (the Scores page keeps it across decisions)."""
    require(principal, "view_scores")
    _check_arguments(n_boot, rule, judge)
    res = _empty_result(rule, judge, n_boot, seed, level)
    rng = np.random.default_rng(seed)
    frames, cal = _load_calibrated(engine, res, frames, judges, rule, judge)
    _run_calibrated_analyses(res, cal, n_boot, rng, level)
    part = (
        static
        if static is not None
        else static_analyses(
            engine,
            principal,
            n_boot=n_boot,
            seed=seed,
            level=level,
            reference=reference,
            baseline=frames.baseline if frames is not None else None,
        )
    )
    return with_static(res, part)


def with_static(res: AnalysesResult, part: "StaticAnalyses") -> AnalysesResult:
    """``res`` (a copy) with the tables, notes and errors of ``part`` added."""
    return replace(
        res,
        tables={**res.tables, **part.tables},
        notes={**res.notes, **part.notes},
        errors={**res.errors, **part.errors},
    )


@dataclass
class StaticAnalyses:
    """The analyses that read neither judgments nor decisions (A4 coverage of the extractions,
    Table 4 feature frequencies of the baseline annotations): computed once per version of
    those inputs, not again after every decision."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


STATIC_STREAM = 4  # their bootstrap draws: np.random.default_rng([seed, STATIC_STREAM]), apart from the others'


def static_analyses(
    engine: Engine,
    principal: Optional[Principal],
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
    reference: Optional[list[str]] = None,
    baseline: Optional[pd.DataFrame] = None,
) -> StaticAnalyses:
    """A4 coverage and Table 4 (:class:`StaticAnalyses`), with their own random stream so that
    they do not depend on how many draws the decision-dependent analyses took. ``baseline``:
    the present baseline features (``model, question, feature``) when the caller has read them
    (the scoring run's ``ProjectFrames.baseline``, the same query)."""
    from db.repo import analyses as repo

    require(principal, "view_scores")
    rng = np.random.default_rng([int(seed), STATIC_STREAM])
    out = StaticAnalyses()
    with engine.connect() as conn:
        extracted = repo.extractions(conn)
        baseline = repo.baseline_annotations(conn) if baseline is None else baseline
        features = repo.catalog_features(conn)
        common, models = repo.common_questions(conn)
        construction = repo.construction_models(conn, CONSTRUCTION_META)
    try:
        cov, notes = _coverage(extracted, int(n_boot), rng, level)
        if cov is not None:
            out.tables["table_a4_coverage"] = cov
        out.notes["coverage"] = notes
    except Exception as exc:  # noqa: BLE001
        out.errors["coverage"] = f"{type(exc).__name__}: {exc}"
    try:
        ref = list(reference) if reference else construction
        unknown = [m for m in ref if m not in models]
        if unknown:
            raise AnalysisError(f"reference model(s) not in the project: {', '.join(unknown)}")
        freq, corr, notes = _table4(baseline, features, common, models, ref, int(n_boot), rng, level)
        if freq is not None:
            out.tables["table4_frequency"] = freq
        if corr is not None:
            out.tables["table4_correlation"] = corr
        out.notes["table4"] = notes
    except AnalysisError as exc:
        out.errors["table4"] = str(exc)
    except Exception as exc:  # noqa: BLE001
        out.errors["table4"] = f"{type(exc).__name__}: {exc}"
    return out


STATIC_INPUTS = ("question", "instruction", "constraint_item", "response", "baseline_feature")


def static_version(version: tuple, inputs: tuple) -> tuple:
    """The cache key of :func:`static_analyses`: of the data version (``explore.data_version``:
    (count, max id) per table of ``VERSIONED_TABLES``, the in-place revision, the pair) the
    stamps of the tables they read (no judge, judgment or adjudication), the revision, and the
    analyses' own inputs."""
    from db.repo.explore import VERSIONED_TABLES

    at = [2 * VERSIONED_TABLES.index(t) for t in STATIC_INPUTS]
    return (*(v for i in at for v in version[i : i + 2]), version[2 * len(VERSIONED_TABLES)], *inputs)


def inputs_version(engine: Engine) -> tuple:
    """A cheap stamp of the analyses' inputs beyond the scored tables (extractions, baseline
    annotations, construction models), for cache keys."""
    from db.repo import analyses as repo

    with engine.connect() as conn:
        return repo.inputs_version(conn)


def analyses_json(res: AnalysesResult) -> dict:
    """The ``analyses --json`` shape: rule, interval methods, tables as records, exclusions
    (counts per analysis and reason, and the list), notes and errors."""

    def records(df: pd.DataFrame) -> list[dict]:
        return json.loads(df.to_json(orient="records", double_precision=10))

    counts = {}
    for analysis in ("composition", "prompting"):
        ex = res.exclusions[res.exclusions["analysis"] == analysis] if len(res.exclusions) else res.exclusions
        counts[analysis] = A.exclusion_counts(ex)
    return {
        "rule": res.rule,
        "rule_text": res.rule_text,
        "intervals": res.intervals,
        "tables": {k: records(v) for k, v in res.tables.items()},
        "excluded": counts,
        "exclusions": records(res.exclusions),
        "notes": res.notes,
        "errors": res.errors,
    }
