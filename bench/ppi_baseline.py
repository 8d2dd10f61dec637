"""PPI++ on a uniform random human sample of the same size: the comparator of the
estimator validation (issue 13, point 6).

The human budget of each model is the number of decisions the default plan used for it.
PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv 2311.01453; ``ppi_py.ppi_mean_ci`` with its
power-tuned λ) spends that budget on a uniform random sample of the units its estimand
averages, every instance of a sampled unit labelled by one simulated annotator (the
true label flipped with the scenario's adjudicator error):

* TCPR — instructions (3 decisions each): ``Y_i = ∏_j h[i,j]``, prediction
  ``Ŷ_i = ∏_j (g[i,j] + m[i,j]) / 2`` (the judges' mean label);
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


def comparator(human_error: float):
    """A ``bench.validation.run_replicate`` ``extra`` callable for PPI++."""

    def extra(inst: pd.DataFrame, index: UnitIndex, ja: str, jb: str, decisions: pd.DataFrame,
              rng: np.random.Generator) -> pd.DataFrame:
        rows = inst.iloc[index.row_pos]
        truth = rows["truth"].to_numpy(dtype=float)
        human = np.where(rng.random(len(truth)) < human_error, 1 - truth, truth)
        pred = (rows[ja].to_numpy(dtype=float) + rows[jb].to_numpy(dtype=float)) / 2
        nm, nq = len(index.models), len(index.questions)
        budget = decisions.merge(inst[["iid", "model"]], on="iid").groupby("model").size()
        a_h, j_h, _ = index.evaluate(human)
        a_p, j_p, _ = index.evaluate(pred)
        unit_c = index.unit_model * nq + index.unit_question
        row_model = pd.Index(index.models).get_indexer(rows["model"].astype(str).to_numpy())
        row_c = row_model * nq + pd.Index(index.questions).get_indexer(rows["question"].astype(str).to_numpy())
        size_c = np.bincount(row_c, minlength=nm * nq)
        out = []
        for mi, mm in enumerate(index.models):
            b = int(budget.get(mm, 0))
            # TCPR: uniform instructions, 3 decisions each
            ins = np.flatnonzero(index.inst_model == mi)
            lab = rng.permutation(ins)[: max(b // 3, 0)]
            out.append((mm, "tcpr", *[100 * v for v in _ppi(a_h[lab], a_p[lab], a_p[ins])]))
            # R^K and EMCR: uniform question clusters until the budget is spent
            qs = np.flatnonzero(size_c[mi * nq:(mi + 1) * nq] > 0) + mi * nq
            perm = rng.permutation(qs)
            lab_q = perm[np.cumsum(size_c[perm]) <= b]
            ys, yh = {}, {}
            for k in KS:
                sel = (index.unit_k == k) & (index.unit_model == mi)
                u_k = sel.sum()
                if u_k == 0:
                    continue
                jh = np.bincount(unit_c[sel], j_h[sel], minlength=nm * nq)
                jp = np.bincount(unit_c[sel], j_p[sel], minlength=nm * nq)
                ys[k] = 100 * len(qs) * jh / u_k
                yh[k] = 100 * len(qs) * jp / u_k
                out.append((mm, f"r{k}", *_ppi(ys[k][lab_q], yh[k][lab_q], yh[k][qs])))
            if len(ys) == 3:
                y_e = sum(ys.values()) / 3
                p_e = sum(yh.values()) / 3
                out.append((mm, "emcr", *_ppi(y_e[lab_q], p_e[lab_q], p_e[qs])))
        return pd.DataFrame(out, columns=["model", "metric", "estimate", "measurement_lo", "measurement_hi"]).assign(
            estimator="ppi++")

    return extra
