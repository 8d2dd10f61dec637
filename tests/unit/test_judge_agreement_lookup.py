"""Table A3 (judge agreement) against a literal loop over the rows, for every way its decisions
are looked up: integer ids (binary search over the disagreements, kept in the memo), string ids
and duplicated ids (the general ``isin`` path), decisions on agreements and on unknown ids
(ignored), a decision superseded by a later one (the last counts), and a memo reused after
new decisions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reform_core.metrics import reform


def literal_a3(inst: pd.DataFrame, adj: pd.DataFrame, *, choice: str | None) -> dict:
    """Per model: judged by both, agreements, disagreements, adjudicated, with A, with B."""
    last = {}
    for r in adj.itertuples(index=False):  # the last decision of an id counts
        last[r.iid] = r
    out = {}
    for r in inst.itertuples(index=False):
        c = out.setdefault(r.model, [0, 0, 0, 0, 0, 0])
        both = not (np.isnan(r.label_a) or np.isnan(r.label_b))
        if not both:
            continue
        c[0] += 1
        if r.label_a == r.label_b:
            c[1] += 1
            continue
        c[2] += 1
        if r.iid in last:
            c[3] += 1
            d = last[r.iid]
            side_a = (d.choice == "A") if choice else (d.a == r.label_a)
            c[4 if side_a else 5] += 1
    return out


def random_case(seed: int, ids: str):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 200))
    g = rng.choice([0.0, 1.0, np.nan], size=n, p=[0.45, 0.45, 0.1])
    m = np.where(rng.random(n) < 0.3, 1 - np.nan_to_num(g), g)
    iid = rng.permutation(10 * n)[:n].astype(np.int64)
    if ids == "duplicated":
        iid[: n // 4] = iid[n // 4 : 2 * (n // 4)]  # some ids occur twice
    key = iid.astype(str) if ids == "string" else iid
    inst = pd.DataFrame(
        {"iid": key, "model": rng.choice(["m1", "m2", "m3"], size=n), "condition": "main", "label_a": g, "label_b": m}
    )
    k = int(rng.integers(0, n))
    picked = rng.choice(n, size=k)  # repeats: a later decision supersedes
    unknown = (10 * n + np.arange(3)).astype(np.int64)
    adj_iid = np.r_[iid[picked], unknown]
    a = rng.choice([0.0, 1.0], size=len(adj_iid))
    adj = pd.DataFrame(
        {
            "iid": adj_iid.astype(str) if ids == "string" else adj_iid,
            "a": a,
            "choice": rng.choice(["A", "B"], size=len(adj_iid)),
        }
    )
    return inst, adj


@pytest.mark.parametrize("ids", ["integer", "string", "duplicated"])
@pytest.mark.parametrize("choice", [None, "choice"])
@pytest.mark.parametrize("seed", range(15))
def test_judge_agreement_equals_a_literal_loop(seed, ids, choice):
    inst, adj = random_case(seed, ids)
    memo: dict = {}
    for rows in (adj.iloc[: len(adj) // 2], adj):  # the second call reuses the memo with more decisions
        got = reform.judge_agreement(inst, rows, choice=choice, memo=memo).set_index("model")
        want = literal_a3(inst, rows, choice=choice)
        for model, (both, agree, dis, n_adj, with_a, with_b) in want.items():
            r = got.loc[model]
            assert (r["judgments"], r["disagreements"], r["adjudicated"], r["agrees_a"], r["agrees_b"]) == (
                both,
                dis,
                n_adj,
                with_a,
                with_b,
            ), (model, ids, choice)
            assert r["agreement"] == pytest.approx(100 * agree / both if both else np.nan, nan_ok=True)
        total = got.loc["Total"]
        assert total["adjudicated"] == sum(v[3] for v in want.values())
    assert "a3" in memo
