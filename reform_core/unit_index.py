"""The unit index: where every instruction and eligible unit of a benchmark lies among its rows.

The eligible-unit structure of a benchmark (which targets occur in which variants, hence which
sets of targets form units; ``docs/metrics.md``) depends only on the rows, never on the pass
values. :func:`build_index` determines it once — instructions and eligible units as index
arrays into the scored rows — and :meth:`UnitIndex.evaluate` scores any pass vector with
vectorised products (``np.multiply.reduceat``); :meth:`UnitIndex.gradients` gives every row's
exact derivative of the sums. The metrics (:mod:`reform_core.metrics.reform`) and the
estimators (:mod:`reform_core.estimators`) both build on it. Also here: small array helpers
for memo keys and binary searches over sorted ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from reform_core.frames import CONDITION_MAIN
from reform_core.frames import require_columns as _require

KS = (1, 2, 3)


def opposition(values) -> tuple[np.ndarray, np.ndarray]:
    """``(known, opposed)`` boolean arrays of a three-state ``baseline_opposed`` column.

    True / False / 1 / 0 are known; ``<NA>`` / NaN / None mean unknown (no baseline
    annotation). ValueError on any other value.
    """
    s = pd.Series(values, copy=False)
    if s.dtype == bool:
        return np.ones(len(s), dtype=bool), s.to_numpy()
    if isinstance(s.dtype, pd.BooleanDtype):
        return s.notna().to_numpy(), s.fillna(False).to_numpy(dtype=bool)
    known = s.notna().to_numpy()
    vals = s[known].to_numpy(dtype=object)
    if not np.isin(vals, (True, False, 0, 1)).all():
        raise ValueError("column 'baseline_opposed' must be boolean (True / False, or empty when unknown)")
    opposed = np.zeros(len(s), dtype=bool)
    opposed[known] = vals.astype(bool)
    return known, opposed


def _starts(sorted_codes: np.ndarray) -> np.ndarray:
    """Start offsets of the runs of equal values in a sorted array."""
    if len(sorted_codes) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])


def _reduce(ufunc: np.ufunc, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return ufunc.reduceat(values, starts) if len(starts) else np.zeros(0)


@dataclass(frozen=True)
class UnitIndex:
    """Instructions and eligible EMCR units of one condition, as index arrays.

    Row indices (``inst_rows``, ``mem_rows``) point into the pass vector
    ``instances[p].to_numpy()[row_pos]``. Codes index ``models``, ``tasks``,
    ``questions``.
    """

    row_pos: np.ndarray
    models: np.ndarray
    tasks: np.ndarray
    questions: np.ndarray
    inst_rows: np.ndarray
    inst_starts: np.ndarray
    inst_model: np.ndarray
    inst_task: np.ndarray
    inst_question: np.ndarray
    unit_k: np.ndarray
    unit_model: np.ndarray
    unit_task: np.ndarray
    unit_question: np.ndarray
    unit_cover: np.ndarray
    mem_rows: np.ndarray
    uv_starts: np.ndarray
    unit_uv_starts: np.ndarray
    # what callers derive from these rows alone (labels and decisions aside), kept with the index
    # so that a caller holding it reuses it (e.g. the estimator's design arrays after a new decision)
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    def pass_vector(self, instances: pd.DataFrame, p: str) -> np.ndarray:
        """The pass values of the indexed rows; ValueError on NaN or values outside [0, 1]."""
        _require(instances, [p], "instances")
        x = pd.to_numeric(instances[p], errors="coerce").to_numpy(dtype=float)[self.row_pos]
        bad = np.isnan(x) | (x < 0) | (x > 1)
        if bad.any():
            raise ValueError(
                f"column {p!r} must hold pass probabilities in [0, 1]; {int(bad.sum())} scored row(s) are "
                f"missing or out of range (drop unlabelled rows before scoring)"
            )
        return x

    def evaluate(self, pv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-instruction all-pass products, per-unit Ĵ and Ŵ (ReFormBench, arXiv:2610.19693, eqs. 9, 11;
        docs/metrics.md#joint-correction, #violation-spread).

        ``A_i = ∏_j p[i,j]``; ``Ĵ_{q,S} = ∏_{t∈S} ∏_{i∈V(q,t)} p[i,t]``;
        ``Ŵ_{q,S} = Σ_{i∈I_{q,S}} (1 − ∏_{t∈S_i} p[i,t])``.
        """
        allpass = _reduce(np.multiply, pv[self.inst_rows], self.inst_starts)
        uv = _reduce(np.multiply, pv[self.mem_rows], self.uv_starts)
        joint = _reduce(np.multiply, uv, self.unit_uv_starts)
        spread = self.unit_cover - _reduce(np.add, uv, self.unit_uv_starts)
        return allpass, joint, spread

    def gradients(self, pv: np.ndarray) -> dict[str, np.ndarray]:
        """Partial derivatives of the score numerators with respect to each row's pass value.

        ``allpass``: ∂/∂p_r Σ_i ∏_j p[i,j] = ∏ of the other rows of r's instruction;
        ``joint{K}``: ∂/∂p_r Σ_{units of size K} Ĵ = Σ over the units holding r of the product
        of their other member rows. Every score is multilinear in the rows (a row occurs at
        most once in an instruction or a unit), so these are exact first derivatives; a zero
        among the other members is handled without division.

        Returns
        -------
        dict
            ``allpass, joint1, joint2, joint3`` → arrays of ``len(pv)``.
        """
        n = len(pv)
        out = {"allpass": leave_one_out(pv, self.inst_rows, self.inst_starts, n)}
        for k, (rows, starts) in zip(KS, self._unit_groups()):
            out[f"joint{k}"] = leave_one_out(pv, rows, starts, n) if len(self.unit_k) else np.zeros(n)
        return out

    def restrict(self, cluster_keep: np.ndarray) -> tuple["UnitIndex", np.ndarray]:
        """The index of the instructions and units of the kept (model, question) clusters
        (``cluster_keep``: bool per code ``model * len(questions) + question``) over their rows
        alone, and those rows' positions in this index's row space (its pass vectors are
        ``pv[rows]``). Instructions and units never span clusters, so every product and
        derivative of a kept cluster is the same in both indexes; codes and name arrays are
        shared."""
        nq, n = len(self.questions), len(self.row_pos)
        size_i = np.diff(np.r_[self.inst_starts, len(self.inst_rows)])
        keep_i = np.asarray(cluster_keep, dtype=bool)[self.inst_model * nq + self.inst_question]
        member = np.repeat(keep_i, size_i)
        rows = np.sort(self.inst_rows[member])  # every row is in exactly one instruction
        remap = np.full(n, -1, dtype=np.int64)
        remap[rows] = np.arange(len(rows))
        keep_u = np.asarray(cluster_keep, dtype=bool)[self.unit_model * nq + self.unit_question]
        uv_per_unit = np.diff(np.r_[self.unit_uv_starts, len(self.uv_starts)])
        keep_uv = np.repeat(keep_u, uv_per_unit)
        mem_per_uv = np.diff(np.r_[self.uv_starts, len(self.mem_rows)])
        keep_mem = np.repeat(keep_uv, mem_per_uv)

        def offsets(sizes: np.ndarray) -> np.ndarray:
            return np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64) if len(sizes) else np.zeros(0, dtype=np.int64)

        sub = UnitIndex(
            row_pos=self.row_pos[rows],
            models=self.models,
            tasks=self.tasks,
            questions=self.questions,
            inst_rows=remap[self.inst_rows[member]],
            inst_starts=offsets(size_i[keep_i]),
            inst_model=self.inst_model[keep_i],
            inst_task=self.inst_task[keep_i],
            inst_question=self.inst_question[keep_i],
            unit_k=self.unit_k[keep_u],
            unit_model=self.unit_model[keep_u],
            unit_task=self.unit_task[keep_u],
            unit_question=self.unit_question[keep_u],
            unit_cover=self.unit_cover[keep_u],
            mem_rows=remap[self.mem_rows[keep_mem]],
            uv_starts=offsets(mem_per_uv[keep_uv]),
            unit_uv_starts=offsets(uv_per_unit[keep_u]),
        )
        return sub, rows

    def _unit_groups(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per K: the member rows of the units of size K and the start of each unit's run
        (fixed by the index: computed once, kept in ``memo``)."""
        got = self.memo.get("unit-groups")
        if got is None:
            got = []
            if len(self.unit_k):
                unit_mem_starts = self.uv_starts[self.unit_uv_starts]
                mem_unit = np.repeat(np.arange(len(self.unit_k)), np.diff(np.r_[unit_mem_starts, len(self.mem_rows)]))
                mem_k = self.unit_k[mem_unit]
            for k in KS:
                if not len(self.unit_k):
                    got.append((np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))
                    continue
                sel = np.flatnonzero(mem_k == k)
                got.append((self.mem_rows[sel].astype(np.int32), _starts(mem_unit[sel])))
            self.memo["unit-groups"] = got
        return got


def leave_one_out(pv: np.ndarray, rows: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
    """Σ over groups holding row r of the product of the group's other rows, per row.

    Groups are the runs ``rows[starts[g]:starts[g+1]]``. Zeros are counted instead of
    divided by: a member's leave-one-out product is ``prod_nonzero / p_r`` when the group
    has no zero, ``prod_nonzero`` for the single zero member of a group with one zero, else 0.
    """
    if len(rows) == 0:
        return np.zeros(n)
    vals = pv[rows]
    zero = vals == 0
    prod_nz = _reduce(np.multiply, np.where(zero, 1.0, vals), starts)
    n_zero = _reduce(np.add, zero.astype(np.int64), starts)
    size = np.diff(np.r_[starts, len(rows)])
    g_prod, g_zero = np.repeat(prod_nz, size), np.repeat(n_zero, size)
    with np.errstate(divide="ignore", invalid="ignore"):
        loo = np.where(
            zero, np.where(g_zero == 1, g_prod, 0.0), np.where(g_zero == 0, g_prod / np.where(zero, 1.0, vals), 0.0)
        )
    return np.bincount(rows, loo, minlength=n)


def _codes(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    codes, names = pd.factorize(series.astype(str), sort=True)
    return codes.astype(np.int64), np.asarray(names, dtype=object)


def _dense(key: np.ndarray) -> np.ndarray:
    """Dense 0..n-1 ids of an integer key, in sorted key order."""
    return pd.factorize(key, sort=True)[0].astype(np.int64)


def _combine(*pairs: tuple[np.ndarray, int]) -> np.ndarray:
    """Mixed-radix key of several code arrays (each with its number of values)."""
    key = np.zeros(len(pairs[0][0]), dtype=np.int64)
    for codes, n in pairs:
        key = key * max(n, 1) + codes
    return key


def _candidate_units(pair_inst: np.ndarray, pair_target: np.ndarray, k: int) -> np.ndarray:
    """All K-subsets of the targets co-occurring in some variant, deduplicated (n, K).

    A set of targets has a non-empty common variant iff it is a subset of one variant's
    target set, so candidates are the K-subsets of each variant's targets.
    ``pair_inst``/``pair_target`` are unique (variant, target) pairs sorted by both.
    """
    starts = _starts(pair_inst)
    sizes = np.diff(np.r_[starts, len(pair_inst)])
    blocks = []
    for s in np.unique(sizes[sizes >= k]):
        rows = starts[sizes == s][:, None] + np.arange(s)
        targets = pair_target[rows]
        blocks.extend(targets[:, list(c)] for c in combinations(range(s), k))
    if not blocks:
        return np.zeros((0, k), dtype=np.int64)
    cand = np.concatenate(blocks)
    n = int(pair_target.max()) + 1
    if n**k >= 2**62:  # codes would overflow: fall back to the row-wise unique
        return np.unique(cand, axis=0)
    code = np.zeros(len(cand), dtype=np.int64)
    for col in range(k):
        code = code * n + cand[:, col]
    code = np.unique(code)
    out = np.empty((len(code), k), dtype=np.int64)
    for col in range(k - 1, -1, -1):
        code, out[:, col] = np.divmod(code, n)
    return out


@dataclass(frozen=True)
class _Codes:
    """The scored rows' column roles as integer codes (sorted names for models, tasks, questions)."""

    model: np.ndarray
    question: np.ndarray
    task: np.ndarray
    instruction: np.ndarray
    feature: np.ndarray
    mode: np.ndarray
    models: np.ndarray
    questions: np.ndarray
    tasks: np.ndarray


@dataclass(frozen=True)
class _Targets:
    """Targets (model, question, feature, mode) among the baseline-opposed rows.

    ``t_rows[t_start[t] : t_start[t] + t_count[t]]`` are target t's rows, sorted by variant;
    ``pairs`` the distinct (variant, target) pairs, sorted; ``n_variants`` per target."""

    t_rows: np.ndarray
    t_start: np.ndarray
    t_count: np.ndarray
    t_first: np.ndarray
    pairs: np.ndarray
    n_variants: np.ndarray


def build_index(
    instances: pd.DataFrame,
    *,
    condition: str | None = CONDITION_MAIN,
    model: str = "model",
    question: str = "question",
    instruction: str = "instruction",
    feature: str = "feature",
    mode: str = "mode",
    opposed: str = "baseline_opposed",
    task_type: str = "task_type",
    condition_col: str = "condition",
) -> UnitIndex:
    """Determine instructions and eligible units once (ReFormBench, arXiv:2610.19693, eq. 2;
    docs/metrics.md#eligible-units).

    Target t = (feature, mode) of question q; V(q,t) = variants (instructions) of q that
    contain t; T_q = baseline-opposed targets of q for the model (targets whose opposition
    is unknown, ``<NA>``, are not in T_q: see :func:`unknown_baseline_targets`). Eligible units at K are
    sets S ⊆ T_q, |S| = K, with ``∩ V(q,t) ≠ ∅`` and ``|∪ V(q,t)| ≥ 2``. Given a
    non-empty intersection, the union has ≥ 2 variants iff some member recurs.

    Steps: the scored rows, their codes, the instructions, the targets, the eligible units
    and their member rows (one function each below).

    Parameters
    ----------
    instances : DataFrame
        INSTANCES frame (see module docstring).
    condition : str or None
        Only rows with this condition are scored (default ``"main"``); None keeps all.
    model, question, instruction, feature, mode, opposed, task_type, condition_col : str
        Column roles.

    Returns
    -------
    UnitIndex
    """
    need = [model, question, instruction, feature, mode, opposed, task_type]
    row_pos, df = _scored_rows(instances, need, condition, condition_col, opposed)
    _, opp = opposition(df[opposed])  # unknown opposition (no baseline annotation): not a target
    c = _row_codes(df, model, question, task_type, instruction, feature, mode)
    inst_id, inst_rows, inst_starts = _instructions(c, question, task_type)
    first = inst_rows[inst_starts]
    tg = _targets(c, opp, inst_id)
    unit_sets, unit_k = _eligible_units(tg)
    mem_rows, uv_starts, unit_uv_starts = _memberships(unit_sets, tg, inst_id, len(unit_k))
    unit_first_target = np.concatenate([s[:, 0] for s in unit_sets])
    unit_row = tg.t_first[unit_first_target] if len(unit_k) else np.zeros(0, dtype=np.int64)
    return UnitIndex(
        row_pos=row_pos,
        models=c.models,
        tasks=c.tasks,
        questions=c.questions,
        inst_rows=inst_rows,
        inst_starts=inst_starts,
        inst_model=c.model[first],
        inst_task=c.task[first],
        inst_question=c.question[first],
        unit_k=unit_k,
        unit_model=c.model[unit_row],
        unit_task=c.task[unit_row],
        unit_question=c.question[unit_row],
        unit_cover=np.diff(np.r_[unit_uv_starts, len(uv_starts)]).astype(float),
        mem_rows=mem_rows,
        uv_starts=uv_starts,
        unit_uv_starts=unit_uv_starts,
    )


def _scored_rows(
    instances: pd.DataFrame, need: list[str], condition: str | None, condition_col: str, opposed: str
) -> tuple[np.ndarray, pd.DataFrame]:
    """The positions of the scored rows (those of ``condition``; all when None) and their
    ``need`` columns; ValueError when a column is missing, no row has the condition, or a
    column other than ``opposed`` has a missing value there."""
    _require(instances, need + ([condition_col] if condition is not None else []), "instances")
    if condition is not None:
        row_pos = np.flatnonzero(instances[condition_col].to_numpy() == condition)
        if len(row_pos) == 0:
            raise ValueError(f"no instance has {condition_col} == {condition!r}")
    else:
        row_pos = np.arange(len(instances))
    df = instances[need].iloc[row_pos]
    nan = df.drop(columns=[opposed]).isna().any()
    if nan.any():
        raise ValueError(f"column {nan.index[nan][0]!r} has missing values in the scored rows")
    return row_pos, df


def _row_codes(
    df: pd.DataFrame, model: str, question: str, task_type: str, instruction: str, feature: str, mode: str
) -> _Codes:
    """Integer codes of the scored rows' column roles."""
    m_c, models = _codes(df[model])
    q_c, questions = _codes(df[question])
    t_c, tasks = _codes(df[task_type])
    i_c, _ = _codes(df[instruction])
    f_c, _ = _codes(df[feature])
    o_c, _ = _codes(df[mode])
    return _Codes(
        model=m_c,
        question=q_c,
        task=t_c,
        instruction=i_c,
        feature=f_c,
        mode=o_c,
        models=models,
        questions=questions,
        tasks=tasks,
    )


def _instructions(c: _Codes, question: str, task_type: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Instructions (variants) are (model, instruction) pairs: each row's dense instruction id,
    the rows sorted by it and the start of each instruction's run. ValueError when an
    instruction spans several questions or task types."""
    inst_key = _combine((c.model, len(c.models)), (c.instruction, int(c.instruction.max()) + 1))
    inst_id = _dense(inst_key)
    inst_rows = np.argsort(inst_id, kind="stable")
    inst_starts = _starts(inst_id[inst_rows])
    for codes, col in ((c.question, question), (c.task, task_type)):
        lo = _reduce(np.minimum, codes[inst_rows], inst_starts)
        if (lo != _reduce(np.maximum, codes[inst_rows], inst_starts)).any():
            raise ValueError(f"an instruction spans several values of {col!r}")
    return inst_id, inst_rows, inst_starts


def _targets(c: _Codes, opp: np.ndarray, inst_id: np.ndarray) -> _Targets:
    """Targets (model, question, feature, mode) among the opposed rows, with their rows and
    the variants they occur in."""
    opp_rows = np.flatnonzero(opp)
    tkey = _combine(
        (c.model[opp_rows], len(c.models)),
        (c.question[opp_rows], len(c.questions)),
        (c.feature[opp_rows], int(c.feature.max()) + 1),
        (c.mode[opp_rows], 2),
    )
    target = _dense(tkey)
    n_targets = int(target.max()) + 1 if len(target) else 0
    order = np.lexsort((inst_id[opp_rows], target))
    t_rows = opp_rows[order]
    t_start = np.searchsorted(target[order], np.arange(n_targets))
    pair_code = np.unique(inst_id[opp_rows] * max(n_targets, 1) + target)  # (variant, target), sorted
    pairs = np.c_[np.divmod(pair_code, max(n_targets, 1))]
    return _Targets(
        t_rows=t_rows,
        t_start=t_start,
        t_count=np.bincount(target, minlength=n_targets),
        t_first=t_rows[t_start] if n_targets else np.zeros(0, dtype=np.int64),
        pairs=pairs,
        n_variants=np.bincount(pairs[:, 1], minlength=n_targets),
    )


def _eligible_units(tg: _Targets) -> tuple[list[np.ndarray], np.ndarray]:
    """Per K in :data:`KS` the eligible units as (n, K) target sets (co-occurring in a variant,
    some member recurring), and every unit's K in that order."""
    unit_sets, unit_k = [], []
    for k in KS:
        cand = _candidate_units(tg.pairs[:, 0], tg.pairs[:, 1], k)
        cand = cand[tg.n_variants[cand].max(axis=1) >= 2] if len(cand) else cand
        unit_sets.append(cand)
        unit_k.append(np.full(len(cand), k, dtype=np.int64))
    return unit_sets, np.concatenate(unit_k)


def _memberships(
    unit_sets: list[np.ndarray], tg: _Targets, inst_id: np.ndarray, n_units: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every row of every target of every unit, sorted by (unit, variant): the member rows,
    the start of each (unit, variant) run and the first run of each unit."""
    mem_unit, mem_idx = [], []
    offset = 0
    for cand in unit_sets:
        ids = np.arange(offset, offset + len(cand))
        offset += len(cand)
        for slot in range(cand.shape[1]):
            t = cand[:, slot]
            cnt = tg.t_count[t]
            total = int(cnt.sum())
            within = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            mem_unit.append(np.repeat(ids, cnt))
            mem_idx.append(np.repeat(tg.t_start[t], cnt) + within)
    mem_unit = np.concatenate(mem_unit) if mem_unit else np.zeros(0, dtype=np.int64)
    mem_rows = tg.t_rows[np.concatenate(mem_idx)] if mem_idx else np.zeros(0, dtype=np.int64)
    uv_key = mem_unit * (int(inst_id.max()) + 1) + inst_id[mem_rows]
    order = np.argsort(uv_key, kind="stable")
    mem_rows, uv_key = mem_rows[order], uv_key[order]
    uv_starts = _starts(uv_key)
    uv_unit = mem_unit[order][uv_starts]
    unit_uv_starts = np.searchsorted(uv_unit, np.arange(n_units))
    return mem_rows, uv_starts, unit_uv_starts


# --------------------------------------------------------------------------- sums and rates


def sorted_slots(sorted_ids: np.ndarray, query) -> np.ndarray:
    """Where each of ``query`` stands in ``sorted_ids`` (ascending, distinct), -1 where absent:
    a binary search (no hash table over the long side)."""
    query = np.asarray(query)
    if not len(sorted_ids):
        return np.full(len(query), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_ids, query), len(sorted_ids) - 1)
    return np.where(sorted_ids[at] == query, at, -1)


def snapshot(*arrays) -> tuple:
    """Compact copies of arrays, for :func:`same_as_snapshot` to tell later whether arrays hold
    the same values: an exact memo key that costs a comparison pass instead of hashing every byte.
    Float arrays of 0 / 1 / NaN labels are kept as int8 codes (2 = NaN)."""
    out = []
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind == "f":
            nan = np.isnan(a)
            if bool(((a == 0) | (a == 1) | nan).all()):
                out.append(("labels", a.dtype, a.shape, np.where(nan, 2, a).astype(np.int8)))
                continue
        out.append(("raw", a.dtype, a.shape, a.copy()))
    return tuple(out)


def same_as_snapshot(snap: tuple | None, *arrays) -> bool:
    """Whether ``arrays`` hold exactly the values :func:`snapshot` copied (same dtypes and shapes)."""
    if snap is None or len(snap) != len(arrays):
        return False
    for (kind, dtype, shape, data), a in zip(snap, arrays):
        a = np.asarray(a)
        if a.dtype != dtype or a.shape != shape:
            return False
        if kind == "labels":
            # NaN read as 2; a genuine 2.0 must not pass for a NaN of the copy
            if bool((a == 2).any()) or not np.array_equal(np.where(np.isnan(a), 2.0, a), data):
                return False
        elif not np.array_equal(a, data):
            return False
    return True


def fingerprint(*arrays) -> str:
    """A digest of arrays' contents (a memo key that changes when any value does)."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.data if a.dtype != object else repr(a.tolist()).encode())  # the buffer itself: no copy
    return h.hexdigest()
