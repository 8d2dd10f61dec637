"""Literal per-unit loop implementation of TCPR, EMCR and violation spread.

Written straight from the formulas of ReFormBench (arXiv:2610.19693) §3.4, eqs. 1–5, 9, 11, 12
(docs/metrics.md#benchmark-scores) with
dicts, sets and ``itertools.combinations`` over every K-subset of T_q. It is slow on
purpose: it serves only as the cross-check of :mod:`reform_core.metrics.reform` in the
tests and as the baseline of ``bench/bench_scoring.py``.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from math import prod

import pandas as pd


def loop_table2(instances: pd.DataFrame, *, p: str = "p", condition: str | None = "main") -> pd.DataFrame:
    """Per model ``tcpr, emcr, r1..r3`` (%), ``n1..n3`` and spread ``c1..c3``.

    Same frame contract as :func:`reform_core.metrics.reform.table2`.
    """
    df = instances if condition is None else instances[instances["condition"] == condition]
    rows = []
    for model, mdf in df.groupby("model", sort=True):
        # TCPR: mean over instructions of the product of their constraints' p.
        products = defaultdict(lambda: 1.0)
        for instr, value in zip(mdf["instruction"], mdf[p]):
            products[instr] *= float(value)
        tcpr = 100 * sum(products.values()) / len(products)

        joint = {1: 0.0, 2: 0.0, 3: 0.0}
        units = {1: 0, 2: 0, 3: 0}
        spread = {1: 0.0, 2: 0.0, 3: 0.0}
        for _, qdf in mdf.groupby("question", sort=True):
            occ = defaultdict(list)  # target -> [(variant, p), ...]
            for r in qdf.itertuples(index=False):
                opposed = getattr(r, "baseline_opposed")
                if opposed is not None and not pd.isna(opposed) and bool(opposed):  # unknown: not a target
                    occ[(r.feature, r.mode)].append((r.instruction, float(getattr(r, p))))
            targets = sorted(occ)
            for k in (1, 2, 3):
                for subset in combinations(targets, k):
                    variant_sets = [{v for v, _ in occ[t]} for t in subset]
                    if not set.intersection(*variant_sets) or len(set.union(*variant_sets)) < 2:
                        continue
                    units[k] += 1
                    j = prod(pv for t in subset for _, pv in occ[t])
                    joint[k] += j
                    # Ŵ = Σ_{i ∈ I} (1 − ∏_{t ∈ S_i} p[i,t])
                    per_variant = defaultdict(lambda: 1.0)
                    for t in subset:
                        for v, pv in occ[t]:
                            per_variant[v] *= pv
                    spread[k] += sum(1.0 - x for x in per_variant.values())
                    spread[f"fail{k}"] = spread.get(f"fail{k}", 0.0) + (1.0 - j)
        r = {k: 100 * joint[k] / units[k] if units[k] else float("nan") for k in (1, 2, 3)}
        c = {k: spread[k] / spread[f"fail{k}"] if spread.get(f"fail{k}", 0.0) > 0 else float("nan") for k in (1, 2, 3)}
        rows.append(
            {
                "model": model,
                "tcpr": tcpr,
                "emcr": (r[1] + r[2] + r[3]) / 3,
                "r1": r[1],
                "r2": r[2],
                "r3": r[3],
                "n_instructions": len(products),
                "n1": units[1],
                "n2": units[2],
                "n3": units[3],
                "c1": c[1],
                "c2": c[2],
                "c3": c[3],
            }
        )
    return pd.DataFrame(rows)
