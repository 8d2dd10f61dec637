"""Auxiliary analyses on complete, consistent pairs only, with their intervals (issue 17).

Table 3 (composition, ReFormBench, arXiv:2610.19693, §4.3, App. A.8) and the prompting
comparison (§4.4) compare
the same constraints under two conditions. A comparison is only meaningful on pairs that
are complete and consistent, so :func:`composition_pairs` and :func:`prompting_pairs` keep
those and list every group they leave out, with one of :data:`REASONS`:

``incomplete group``
    a main instruction whose single-constraint versions cover only some of its positions
    (or a single / prompted version without its main instruction);
``missing prompted version``
    a main instruction of a prompted model with no prompted version (or not for every
    position);
``feature mismatch``
    a single / prompted version whose constraint (feature or mode) differs from the main
    instruction's constraint at the same position;
``judge error``
    a row of the group has no usable label (both judges errored or abstained), so ``p`` is
    missing.

Intervals (:func:`composition_replicates`, :func:`coverage_replicates`,
:func:`frequency_replicates`) take question multiplicities ``w`` (B × questions): a
cluster bootstrap over questions gives the population interval; for the measurement
interval the caller passes all-one weights and replicate pass probabilities (recalibrated
from resampled adjudications), or, for coverage, instance weights resampled within each
question.

Pure: pandas / numpy / scipy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from reform_core.frames import CONDITION_MAIN
from reform_core.frames import require_columns as _require
from reform_core.metrics.coverage import COVERED, spearman_rows

REASONS = ("incomplete group", "missing prompted version", "feature mismatch", "judge error")
EXCLUSION_COLUMNS = ["analysis", "model", "pair_group", "instruction", "reason", "detail"]


def pair_key(df: pd.DataFrame, pair_group: str = "pair_group", instruction: str = "instruction") -> pd.Series:
    """The pairing key: ``pair_group``, or the instruction key where it is empty."""
    group = df[pair_group].astype(str)
    return group.where(df[pair_group].notna() & (group != "") & (group != "nan"), df[instruction].astype(str))


def _exclusion(analysis, model, group, instruction, reason, detail) -> dict:
    return {
        "analysis": analysis,
        "model": str(model),
        "pair_group": str(group),
        "instruction": str(instruction),
        "reason": reason,
        "detail": detail,
    }


def _signature(rows: pd.DataFrame) -> dict:
    return {
        int(r.position): (str(r.feature), str(r.mode))
        for r in rows[["position", "feature", "mode"]].itertuples(index=False)
    }


def _check_group(
    analysis: str,
    other_name: str,
    model,
    key,
    main_rows: pd.DataFrame,
    other_rows: pd.DataFrame,
    p: str,
    missing_reason: str,
) -> dict | None:
    """Why one (model, pair group) cannot be compared, or None when it is complete and consistent."""
    main_instr = ", ".join(sorted(main_rows["instruction"].astype(str).unique())) if len(main_rows) else ""
    if main_rows.empty:
        return _exclusion(
            analysis,
            model,
            key,
            ", ".join(sorted(other_rows["instruction"].astype(str).unique())),
            "incomplete group",
            f"{other_name} version(s) without their main instruction",
        )
    if main_rows["instruction"].nunique() > 1:
        return _exclusion(
            analysis, model, key, main_instr, "incomplete group", "several main instructions share this pair group"
        )
    if other_rows.empty:
        return _exclusion(analysis, model, key, main_instr, missing_reason, f"no {other_name} version")
    if other_rows["position"].duplicated().any():
        dup = sorted(other_rows.loc[other_rows["position"].duplicated(), "position"].astype(int).unique())
        return _exclusion(
            analysis,
            model,
            key,
            main_instr,
            "incomplete group",
            f"more than one {other_name} version for position(s) {dup}",
        )
    sig_m, sig_o = _signature(main_rows), _signature(other_rows)
    if set(sig_m) != set(sig_o):
        return _exclusion(
            analysis,
            model,
            key,
            main_instr,
            missing_reason,
            f"{other_name} versions for position(s) {sorted(sig_o)} of {sorted(sig_m)}",
        )
    bad = [pos for pos in sorted(sig_m) if sig_m[pos] != sig_o[pos]]
    if bad:
        pos = bad[0]
        return _exclusion(
            analysis,
            model,
            key,
            main_instr,
            "feature mismatch",
            f"position {pos}: main {sig_m[pos][0]}:{sig_m[pos][1]}, {other_name} {sig_o[pos][0]}:{sig_o[pos][1]}",
        )
    pv = pd.to_numeric(pd.concat([main_rows[p], other_rows[p]]), errors="coerce")
    if pv.isna().any():
        return _exclusion(
            analysis,
            model,
            key,
            main_instr,
            "judge error",
            f"{int(pv.isna().sum())} constraint(s) without a usable label from either judge",
        )
    return None


def _pairs(
    instances: pd.DataFrame, other: str, analysis: str, missing_reason: str, *, p: str, main: str, all_main: bool
) -> tuple[pd.DataFrame, pd.DataFrame]:
    _require(
        instances, ["model", "instruction", "pair_group", "position", "feature", "mode", "condition", p], "instances"
    )
    cond = instances["condition"].astype(str)
    o = instances[cond == other]
    keep_model = instances["model"].astype(str).isin(set(o["model"].astype(str)))
    m = instances[(cond == main) & keep_model]
    go = o["model"].astype(str) + "\x1f" + pair_key(o)
    gm = m["model"].astype(str) + "\x1f" + pair_key(m)
    candidates = set(go) | (set(gm) if all_main else set())
    # vectorised screen: a group is suspect if anything about it may be wrong; only suspects
    # go through the per-group check that names the reason (paper scale: 5,000 groups)
    cols = ["position", "feature", "mode", p]
    mg = pd.DataFrame({"_g": gm.to_numpy(), **{c: m[c].to_numpy() for c in cols}}).merge(
        pd.DataFrame({"_g": go.to_numpy(), **{c: o[c].to_numpy() for c in cols}}),
        on=["_g", "position"],
        how="outer",
        suffixes=("_m", "_o"),
        indicator=True,
    )
    bad = (
        (mg["_merge"] != "both")
        | (mg["feature_m"].astype(str) != mg["feature_o"].astype(str))
        | (mg["mode_m"].astype(str) != mg["mode_o"].astype(str))
        | pd.to_numeric(mg[f"{p}_m"], errors="coerce").isna()
        | pd.to_numeric(mg[f"{p}_o"], errors="coerce").isna()
    )
    suspects = set(mg.loc[bad.to_numpy(), "_g"])
    suspects |= set(go[o.assign(_g=go.to_numpy()).duplicated(["_g", "position"]).to_numpy()])
    n_inst = m.groupby(gm.to_numpy())["instruction"].nunique()
    suspects |= set(n_inst.index[n_inst.to_numpy() > 1])
    suspects |= candidates - (set(gm) & set(go))  # a group with one side only
    suspects &= candidates
    excluded, bad_groups = [], set()
    gm_s, go_s = pd.Series(m.index, index=gm.to_numpy()), pd.Series(o.index, index=go.to_numpy())
    for g in sorted(suspects):
        mr = m.loc[gm_s.loc[[g]].to_numpy()] if g in gm_s.index else m.iloc[0:0]
        orows = o.loc[go_s.loc[[g]].to_numpy()] if g in go_s.index else o.iloc[0:0]
        model, key = g.split("\x1f", 1)
        why = _check_group(analysis, other, model, key, mr, orows, p, missing_reason)
        if why is not None:
            excluded.append(why)
            bad_groups.add(g)
    good = candidates - bad_groups
    key_all = (instances["model"].astype(str) + "\x1f" + pair_key(instances)).to_numpy()
    keep = (((cond == main).to_numpy() & keep_model.to_numpy()) | (cond == other).to_numpy()) & pd.Series(key_all).isin(
        good
    ).to_numpy()
    return instances[keep], pd.DataFrame(excluded, columns=EXCLUSION_COLUMNS)


def composition_pairs(
    instances: pd.DataFrame, *, p: str = "p", single: str = "single", main: str = CONDITION_MAIN
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The complete, consistent (main instruction, single-constraint versions) groups of
    the models with a single-constraint condition, and the groups left out (module doc).

    Only main instructions with at least one single version are candidates (the design
    may pair a subset of instructions); one whose single versions miss a position is an
    ``incomplete group``.

    Returns
    -------
    (DataFrame, DataFrame)
        The kept rows (both conditions) and the exclusions (:data:`EXCLUSION_COLUMNS`).
    """
    return _pairs(instances, single, "composition", "incomplete group", p=p, main=main, all_main=False)


def prompting_pairs(
    instances: pd.DataFrame, *, p: str = "p", other: str = "prompted", main: str = CONDITION_MAIN
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The complete, consistent (main, prompted) instruction pairs of the models with a
    prompted condition; every main instruction of such a model is a candidate, so one
    without a prompted version is left out as ``missing prompted version``."""
    return _pairs(instances, other, "prompting", "missing prompted version", p=p, main=main, all_main=True)


def exclusion_counts(excluded: pd.DataFrame) -> dict[str, int]:
    """``{reason: groups}`` for every reason of :data:`REASONS` (zeros included)."""
    counts = excluded["reason"].value_counts() if len(excluded) else pd.Series(dtype=int)
    return {r: int(counts.get(r, 0)) for r in REASONS}


# ----------------------------------------------------------------------------- composition


class CompositionData:
    """The kept composition pairs as arrays (one row per (model, group, position))."""

    def __init__(self, clean: pd.DataFrame, *, p: str = "p", single: str = "single", main: str = CONDITION_MAIN):
        from reform_core.unit_index import opposition

        s = clean[clean["condition"] == single].assign(_key=lambda d: pair_key(d), _label=lambda d: d.index)
        j = clean[clean["condition"] == main].assign(_key=lambda d: pair_key(d), _label=lambda d: d.index)
        keys = ["model", "_key", "position"]
        mg = s[keys + ["question", "feature", "mode", "baseline_opposed", p, "_label"]].merge(
            j[keys + [p, "_label"]], on=keys, suffixes=("_s", "_j")
        )
        mg = mg.sort_values(keys, kind="stable").reset_index(drop=True)
        self.frame = mg
        self.s_label, self.j_label = mg["_label_s"].to_numpy(), mg["_label_j"].to_numpy()
        self.models = np.array(sorted(mg["model"].astype(str).unique()), dtype=object)
        self.model = pd.Index(self.models).get_indexer(mg["model"].astype(str))
        self.questions = np.array(sorted(clean["question"].astype(str).unique()), dtype=object)
        self.question = pd.Index(self.questions).get_indexer(mg["question"].astype(str))
        grp = mg["model"].astype(str) + "\x1f" + mg["_key"].astype(str)
        self.group, self.group_keys = pd.factorize(grp, sort=True)
        self.group_question = np.zeros(len(self.group_keys), dtype=np.int64)
        self.group_question[self.group] = self.question
        self.group_model = np.zeros(len(self.group_keys), dtype=np.int64)
        self.group_model[self.group] = self.model
        known, opp = opposition(mg["baseline_opposed"])
        self.opposed = known & opp
        self.aligned = known & ~opp
        self.ps = mg[f"{p}_s"].to_numpy(dtype=float)
        self.pj = mg[f"{p}_j"].to_numpy(dtype=float)


def composition_replicates(
    data: CompositionData, weights: np.ndarray, ps: np.ndarray | None = None, pj: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Table 3 measures (%) per replicate: ``weights`` (B × questions of ``data``) and
    optionally replicate pass probabilities ``ps``/``pj`` (B × rows). Returns
    ``{measure_side: (B, models)}`` for measures all_pass / opposed / aligned / gap and
    sides separate / joint (plus ``delta_*``)."""
    w = np.asarray(weights, dtype=float)
    B = w.shape[0]
    ps = np.broadcast_to(data.ps, (B, len(data.ps))) if ps is None else ps
    pj = np.broadcast_to(data.pj, (B, len(data.pj))) if pj is None else pj
    nm, ng = len(data.models), len(data.group_keys)
    out = {}
    wg = w[:, data.group_question]  # (B, groups)
    wr = w[:, data.question]  # (B, rows)
    onehot_g = np.zeros((ng, nm))
    onehot_g[np.arange(ng), data.group_model] = 1.0
    for side, pv in (("separate", ps), ("joint", pj)):
        with np.errstate(divide="ignore"):
            logp = np.log(np.asarray(pv, dtype=float))
        prod = np.zeros((B, ng))
        np.add.at(prod.T, data.group, logp.T)
        prod = np.exp(prod)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"all_pass_{side}"] = 100 * (prod * wg) @ onehot_g / (wg @ onehot_g)
        for name, mask in (("opposed", data.opposed), ("aligned", data.aligned)):
            oh = np.zeros((len(mask), nm))
            oh[np.flatnonzero(mask), data.model[mask]] = 1.0
            with np.errstate(invalid="ignore", divide="ignore"):
                out[f"{name}_{side}"] = 100 * (pv * wr) @ oh / (wr @ oh)
        out[f"gap_{side}"] = out[f"opposed_{side}"] - out[f"aligned_{side}"]
    for measure in ("all_pass", "opposed", "aligned", "gap"):
        out[f"{measure}_delta"] = out[f"{measure}_joint"] - out[f"{measure}_separate"]
    return out


def per_target_rates(data: CompositionData) -> pd.DataFrame:
    """The per-target rates behind Figure 4: separate and joint mean pass (%) per model,
    feature, mode and baseline group (opposed / aligned / unknown)."""
    mg = data.frame
    group = np.where(data.opposed, "opposed", np.where(data.aligned, "aligned", "unknown"))
    d = pd.DataFrame(
        {
            "model": mg["model"].astype(str),
            "feature": mg["feature"].astype(str),
            "mode": mg["mode"].astype(str),
            "baseline": group,
            "separate": 100 * data.ps,
            "joint": 100 * data.pj,
        }
    )
    out = (
        d.groupby(["model", "feature", "mode", "baseline"], sort=True)
        .agg(separate=("separate", "mean"), joint=("joint", "mean"), n=("separate", "size"))
        .reset_index()
    )
    out["delta_pp"] = out["joint"] - out["separate"]
    return out


# ----------------------------------------------------------------------------- coverage, Table 4


class CoverageGroups:
    """Extracted instances counted per (model, question): ``n`` (all), ``covered`` (exact,
    subtype, composite) and ``uncovered``; ``not_format`` = n − covered − uncovered."""

    def __init__(self, extracted: pd.DataFrame, *, questions: Sequence[str], models: Sequence[str]):
        mapping = extracted["mapping"].astype(str)
        d = pd.DataFrame(
            {
                "model": extracted["model"].astype(str),
                "question": extracted["question"].astype(str),
                "covered": mapping.isin(COVERED).to_numpy(),
                "uncovered": (mapping == "uncovered").to_numpy(),
            }
        )
        g = (
            d.groupby(["model", "question"], sort=True)
            .agg(n=("covered", "size"), covered=("covered", "sum"), uncovered=("uncovered", "sum"))
            .reset_index()
        )
        self.models = list(models)
        self.model = pd.Index(self.models).get_indexer(g["model"])
        self.question = pd.Index(list(questions)).get_indexer(g["question"])
        self.n = g["n"].to_numpy(np.int64)
        self.covered = g["covered"].to_numpy(float)
        self.uncovered = g["uncovered"].to_numpy(float)

    def resample_within(self, n_boot: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(covered*, uncovered*) per replicate and group: the group's instances drawn again with
        replacement (a multinomial over covered / uncovered / not_format)."""
        pc = self.covered / self.n
        rest_n = self.n - self.covered
        pu = np.divide(
            self.uncovered, rest_n, out=np.zeros(len(self.n)), where=rest_n > 0
        )  # P(uncovered | not covered)
        cov = rng.binomial(self.n, pc, size=(n_boot, len(self.n)))
        unc = rng.binomial(self.n - cov, pu, size=(n_boot, len(self.n)))
        return cov.astype(float), unc.astype(float)


def coverage_replicates(
    groups: CoverageGroups,
    question_weights: np.ndarray | None = None,
    covered: np.ndarray | None = None,
    uncovered: np.ndarray | None = None,
) -> np.ndarray:
    """Instance coverage (%) per replicate and model (last column: pooled) of Table A4:
    ``Σ_g w_q(g)·covered_g / Σ_g w_q(g)·valid_g`` (valid = covered + uncovered)."""
    w = (
        np.ones((1, groups.question.max() + 1 if len(groups.question) else 1))
        if question_weights is None
        else np.asarray(question_weights, dtype=float)
    )
    wg = w[:, groups.question]
    cov = groups.covered[None, :] if covered is None else covered
    unc = groups.uncovered[None, :] if uncovered is None else uncovered
    nm = len(groups.models)
    oh = np.zeros((len(groups.n), nm + 1))
    oh[np.arange(len(groups.n)), groups.model] = 1.0
    oh[:, nm] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100 * ((wg * cov) @ oh) / ((wg * (cov + unc)) @ oh)


def frequency_replicates(indicator: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Feature frequencies per replicate: ``indicator`` (models × questions × features, 0/1
    over the common question set) and question weights (B × questions) → (B, models,
    features) = ``Σ_q w_q 1{c ∈ F_m(q)} / Σ_q w_q``."""
    w = np.asarray(weights, dtype=float)
    ind = np.asarray(indicator, dtype=float)
    m, q, f = ind.shape
    # the einsum "bq,mqf->bmf" as one matrix product (BLAS): (B × q) @ (q × m·f)
    num = (w @ ind.transpose(1, 0, 2).reshape(q, m * f)).reshape(len(w), m, f)
    return num / w.sum(axis=1)[:, None, None]


def correlation_replicates(freq: np.ndarray, reference: Sequence[int], others: Sequence[int]) -> np.ndarray:
    """ρ per replicate for each model of ``others`` and the pooled row (last column):
    ``freq`` (B, models, features) → (B, len(others) + 1)."""
    freq = np.asarray(freq, dtype=float)
    ref = freq[:, list(reference)].mean(axis=1)
    out = np.empty((freq.shape[0], len(others) + 1))
    for i, m in enumerate(others):
        out[:, i] = spearman_rows(freq[:, m], ref)
    out[:, -1] = spearman_rows(freq[:, list(others)].mean(axis=1), ref)
    return out


def percentile_interval(reps: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column of ``reps`` (B × k); NaN where no replicate is defined."""
    reps = np.asarray(reps, dtype=float)
    alpha = 100 * (1 - level) / 2
    lo = np.full(reps.shape[1:], np.nan)
    hi = np.full(reps.shape[1:], np.nan)
    ok = (~np.isnan(reps)).any(axis=0)
    if ok.any():
        lo[ok], hi[ok] = np.nanpercentile(reps[:, ok], [alpha, 100 - alpha], axis=0)
    return lo, hi


RHO_CLIP = 1 - 1e-12  # |ρ| = 1 has no Fisher z: replicates and points are clipped to ±RHO_CLIP first


def fisher_z_interval(
    point: np.ndarray, replicates: np.ndarray | None = None, *, se: np.ndarray | None = None, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    r"""Interval for a correlation on Fisher's z scale, per column: ``tanh(atanh(ρ̂) ± z_{1−α/2} · se_z)``.

    The interval is symmetric in z around ``atanh(ρ̂)``, so it always contains ``ρ̂`` and stays
    inside (−1, 1) — unlike the basic bootstrap interval, which left the estimate out when the
    resampled ρ* are shifted (attenuated by noisier resampled frequencies), or the percentile
    interval, which then sits beside it.

    Parameters
    ----------
    point : array (k,)
        The estimates ρ̂.
    replicates : array (B, k), optional
        Bootstrap replicates ρ*; ``se_z`` is then their standard deviation on the z scale
        (``ddof=1``, over the finite replicates of each column): the normal-theory interval with
        a bootstrap standard error, computed on a variance-stabilised scale (Efron & Tibshirani,
        *An Introduction to the Bootstrap*, 1993, ch. 12, the correlation coefficient on Fisher's
        z scale).
    se : array (k,), optional
        A standard error of z given directly instead, e.g. ``1/sqrt(n − 3)`` (Fisher 1915), the
        textbook interval of Pearson's r (as ``scipy.stats.pearsonr(...).confidence_interval``).
    level : float
        Confidence level.

    Returns
    -------
    (lo, hi) : arrays (k,); NaN where ``ρ̂`` is missing or no standard error can be formed
    (fewer than two finite replicates).
    """
    from scipy import stats

    rho = np.clip(np.atleast_1d(np.asarray(point, dtype=float)), -RHO_CLIP, RHO_CLIP)
    if se is None:
        if replicates is None:
            raise ValueError("fisher_z_interval: give the bootstrap replicates or the standard error of z")
        z_reps = np.arctanh(np.clip(np.asarray(replicates, dtype=float).reshape(-1, rho.size), -RHO_CLIP, RHO_CLIP))
        finite = np.isfinite(z_reps)
        se = np.full(rho.size, np.nan)
        for j in range(rho.size):
            if finite[:, j].sum() >= 2:
                se[j] = np.std(z_reps[finite[:, j], j], ddof=1)
    q = stats.norm.ppf(0.5 + level / 2)
    z = np.arctanh(rho)
    half = q * np.asarray(se, dtype=float)
    exact = np.atleast_1d(np.asarray(point, dtype=float))  # |ρ̂| = 1: the interval reaches it exactly
    return np.fmin(np.tanh(z - half), exact), np.fmax(np.tanh(z + half), exact)
