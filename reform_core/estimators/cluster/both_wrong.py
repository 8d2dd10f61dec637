"""The audit's report: how often both judges are wrong together on each model's agreements."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


def wrong_rates(keys: np.ndarray, wrong: np.ndarray, weight: np.ndarray, noise: np.ndarray) -> pd.DataFrame:
    """Both-wrong rate per audit stratum with its variance.

    ``rate`` = Hájek mean of the audited agreements' debiased "wrong" indicators
    (``1 − ỹ`` on an agreed pass, ``ỹ`` on an agreed fail; weights 1/π, equal within a
    stratum by design); ``var`` = its linearised
    variance plus the decisions' noise, at least the Bernoulli variance of the
    Jeffreys-smoothed rate ``(k + ½)/(n + 1)`` over ``n`` (k = audited agreements that the
    majority of their decisions judged wrong): a stratum audited with no error found still
    reports the uncertainty that ``n`` clean audits leave, never zero.
    """
    df = pd.DataFrame({"s": keys, "w": wrong, "wt": weight, "v": noise})
    rows = []
    for s_, d in df.groupby("s", sort=True):
        n = len(d)
        wt = d["wt"].to_numpy() / d["wt"].sum()
        r = float(np.sum(wt * d["w"].to_numpy()))
        v_design = float(np.sum(wt**2 * (d["w"].to_numpy() - r) ** 2)) * n / max(n - 1, 1)
        k = int((d["w"].to_numpy() > 0.5).sum())
        jeff = (k + 0.5) / (n + 1.0)
        var = max(v_design, jeff * (1 - jeff) / n) + float(np.sum(wt**2 * d["v"].to_numpy()))
        rows.append({"stratum": s_, "rate": r, "var": var, "n": n, "k": k})
    return pd.DataFrame(rows, columns=["stratum", "rate", "var", "n", "k"]).set_index("stratum")


def both_wrong(models, agreement_sizes: list, rates: pd.DataFrame, level: float) -> pd.DataFrame:
    """Per model: share of its agreements on which both judges are wrong (audit strata
    pooled with weights = stratum sizes: ``agreement_sizes``, per model a Series of
    agreements by audit stratum), with a normal interval clipped at 0."""
    z = stats.norm.ppf(0.5 + level / 2)
    rows = []
    for mm, sizes in zip(models, agreement_sizes):
        got = rates.reindex(sizes.index)
        ok = got["n"].notna().to_numpy()
        if not ok.any():
            rows.append(
                {
                    "model": mm,
                    "agreements": int(sizes.sum()),
                    "audited": 0,
                    "both_wrong": np.nan,
                    "lo": np.nan,
                    "hi": np.nan,
                }
            )
            continue
        w = (sizes[ok] / sizes[ok].sum()).to_numpy()
        est = float((w * got["rate"].to_numpy()[ok]).sum())
        se = float(np.sqrt((w**2 * got["var"].to_numpy()[ok]).sum()))
        rows.append(
            {
                "model": mm,
                "agreements": int(sizes.sum()),
                "audited": int(got["n"].to_numpy()[ok].sum()),
                "both_wrong": 100 * est,
                "lo": 100 * max(est - z * se, 0.0),
                "hi": 100 * (est + z * se),
            }
        )
    return pd.DataFrame(rows)
