"""PPI++ on a uniform random human sample of the same size: the comparator of the
estimator validation (issue 13, point 6).

The human budget of each model is the number of decisions the default plan used for it.
PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv 2311.01453; ``ppi_py.ppi_mean_ci`` with its
power-tuned λ) spends that budget on a uniform random sample of the units its estimand
averages, every instance of a sampled unit labelled by one simulated annotator (the
true label flipped with the scenario's adjudicator error):

* TCPR — instructions, every constraint of a sampled one decided (``k_i`` decisions for an
  instruction with ``k_i`` constraints; uniform instructions until the budget is spent):
  ``Y_i = ∏_j h[i,j]``, prediction ``Ŷ_i = ∏_j (g[i,j] + m[i,j]) / 2`` (the judges' mean label);
* the constraint level (only with ``constraint_level=True``; without it the random draws, and
  so every number, are those of the three-constraint comparator the ReFormBench family ran
  before) — constraints, one decision each: ``Y_r = h_r``, ``Ŷ_r = (g_r + m_r) / 2``;
* R^(K), EMCR — question clusters (every instance of a sampled question): with ``N`` the
  model's questions and ``U_K`` its eligible units, ``Y_q = N · Σ_{units of q} J(h) / U_K``
  (so that the mean over questions is R^(K)), EMCR the mean of the three.

The PPI++ point estimate is ``ppi_mean_pointestimate`` and its interval ``ppi_mean_ci``
at α = 0.05. Like the other estimators it is compared with the truth of the fixed
benchmark (its interval is a measurement interval: the questions are held fixed).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from reform_core.unit_index import KS, UnitIndex


def _ppi(Y: np.ndarray, Yhat: np.ndarray, Yhat_unlabeled: np.ndarray) -> tuple[float, float, float]:
    if len(Y) < 2:
        return np.nan, np.nan, np.nan
    lo, hi = ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05)
    pt = ppi_mean_pointestimate(Y, Yhat, Yhat_unlabeled)
    return float(np.ravel(pt)[0]), float(np.ravel(lo)[0]), float(np.ravel(hi)[0])


def _tcpr(index: UnitIndex, mi: int, budget: int, a_h, a_p, rng: np.random.Generator) -> tuple:
    """PPI++ TCPR of model ``mi``: uniform instructions, all their constraints decided, until
    ``budget`` decisions are spent."""
    size = np.diff(np.r_[index.inst_starts, len(index.inst_rows)])
    ins = np.flatnonzero(index.inst_model == mi)
    perm = rng.permutation(ins)
    lab = perm[np.cumsum(size[perm]) <= budget]
    return tuple(100 * v for v in _ppi(a_h[lab], a_p[lab], a_p[ins]))


def _joint(index: UnitIndex, mi: int, budget: int, j_h, j_p, row_c, rng: np.random.Generator) -> list[tuple]:
    """PPI++ R^(K) and EMCR of model ``mi`` (module docstring): ``(metric, estimate, lo, hi)``
    rows, none for a K without eligible units (EMCR only when every K has some)."""
    nm, nq = len(index.models), len(index.questions)
    unit_c = index.unit_model * nq + index.unit_question
    size_c = np.bincount(row_c, minlength=nm * nq)
    qs = np.flatnonzero(size_c[mi * nq : (mi + 1) * nq] > 0) + mi * nq
    perm = rng.permutation(qs)
    lab_q = perm[np.cumsum(size_c[perm]) <= budget]
    ys, yh, out = {}, {}, []
    for k in KS:
        sel = (index.unit_k == k) & (index.unit_model == mi)
        u_k = sel.sum()
        if u_k == 0:
            continue
        ys[k] = 100 * len(qs) * np.bincount(unit_c[sel], j_h[sel], minlength=nm * nq) / u_k
        yh[k] = 100 * len(qs) * np.bincount(unit_c[sel], j_p[sel], minlength=nm * nq) / u_k
        out.append((f"r{k}", *_ppi(ys[k][lab_q], yh[k][lab_q], yh[k][qs])))
    if len(ys) == 3:
        y_e, p_e = sum(ys.values()) / 3, sum(yh.values()) / 3
        out.append(("emcr", *_ppi(y_e[lab_q], p_e[lab_q], p_e[qs])))
    return out


def comparator(human_error: float, *, constraint_level: bool = False):
    """A ``bench.validation.run_replicate`` ``extra`` callable for PPI++ (TCPR, R^(K),
    EMCR; the constraint level too with ``constraint_level=True``)."""

    def extra(
        inst: pd.DataFrame, index: UnitIndex, ja: str, jb: str, decisions: pd.DataFrame, rng: np.random.Generator
    ) -> pd.DataFrame:
        rows = inst.iloc[index.row_pos]
        truth = rows["truth"].to_numpy(dtype=float)
        human = np.where(rng.random(len(truth)) < human_error, 1 - truth, truth)
        pred = (rows[ja].to_numpy(dtype=float) + rows[jb].to_numpy(dtype=float)) / 2
        nq = len(index.questions)
        budget = decisions.merge(inst[["iid", "model"]], on="iid").groupby("model").size()
        a_h, j_h, _ = index.evaluate(human)
        a_p, j_p, _ = index.evaluate(pred)
        row_model = pd.Index(index.models).get_indexer(rows["model"].astype(str).to_numpy())
        row_c = row_model * nq + pd.Index(index.questions).get_indexer(rows["question"].astype(str).to_numpy())
        out = []
        for mi, mm in enumerate(index.models):
            b = int(budget.get(mm, 0))
            out.append((mm, "tcpr", *_tcpr(index, mi, b, a_h, a_p, rng)))
            out += [(mm, *r) for r in _joint(index, mi, b, j_h, j_p, row_c, rng)]
            if constraint_level:  # uniform constraints, one decision each
                mine = np.flatnonzero(row_model == mi)
                lab = rng.permutation(mine)[:b]
                out.append((mm, "constraint_level", *[100 * v for v in _ppi(human[lab], pred[lab], pred[mine])]))
        return pd.DataFrame(out, columns=["model", "metric", "estimate", "measurement_lo", "measurement_hi"]).assign(
            estimator="ppi++"
        )

    return extra
