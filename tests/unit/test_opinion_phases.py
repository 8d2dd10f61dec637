"""Item estimates while items await another opinion (``reform_core.estimators.opinion_phases``).

Checked against independent computations: with every opinion in, the phased estimate is the
full rule's (``ItemLayout``); with only first decisions it is each decision's classical
correction, whose expectation is the truth for every annotator (literal sum over the decision's
two outcomes); in between, a literal loop applies the documented weights to ``f_k`` values
computed one item at a time with ``item_estimates`` on the item's first ``k`` decisions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reform_core.estimators import adjudicator_error as ae
from reform_core.estimators.opinion_phases import PhasedLayout

RATES = pd.Series({"a": 0.92, "b": 0.85, "c": 0.97})
SPECIFICITY = pd.Series({"a": 0.9, "b": 0.95, "c": 0.8})
MODEL = ae.ErrorModel(
    RATES, SPECIFICITY, (0.9, 0.9), pd.Series(dtype=float), True, pd.Series(dtype=int), pd.Series(dtype=int)
)


def _items():
    """Rule items (reference 1, depth 3; two against the reference get more opinions) and two
    items doubled from the start, one model × kind stratum each."""
    rows = [  # iid, annotator, h
        (1, "a", 1),
        (2, "b", 0),
        (2, "c", 1),
        (3, "c", 0),
        (3, "a", 0),
        (3, "b", 1),
        (4, "a", 0),
        (5, "b", 0),
        (6, "b", 1),
        (6, "c", 1),
        (7, "a", 0),
    ]
    dec = pd.DataFrame(rows, columns=["iid", "annotator", "h"])
    ref = pd.Series({1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0, 5: 1.0, 6: np.nan, 7: np.nan})
    depth = pd.Series(3, index=ref.index)
    required = pd.Series({1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 2, 7: 2})
    stratum = pd.Series("m|dis", index=ref.index)
    prior = pd.Series(0.6, index=ref.index)
    return dec, prior, ref, depth, required, stratum


def test_complete_items_give_the_full_rules_estimate():
    dec, prior, ref, depth, required, stratum = _items()
    done = dec[dec["iid"].isin([1, 2, 3, 6])]
    got = PhasedLayout(done, prior, ref, depth, required, stratum).estimate(MODEL)
    want = ae.ItemLayout(done, prior, ref.dropna().reindex([1, 2, 3]).combine_first(ref), depth=depth).estimate(MODEL)
    assert got.index.tolist() == [1, 2, 3, 6]
    np.testing.assert_allclose(got["y_tilde"], want.loc[got.index, "y_tilde"], atol=1e-12)
    np.testing.assert_allclose(got["var"], want.loc[got.index, "var"], atol=1e-12)


def test_first_decisions_alone_are_each_decisions_classical_correction_and_unbiased():
    dec, prior, ref, depth, required, stratum = _items()
    first = dec.groupby("iid").head(1)
    got = PhasedLayout(first, prior, ref, depth, required, stratum).estimate(MODEL)
    for iid, row in first.set_index("iid").iterrows():
        a, b = RATES[row["annotator"]], SPECIFICITY[row["annotator"]]
        assert got.loc[iid, "y_tilde"] == pytest.approx((row["h"] - (1 - b)) / (a + b - 1), abs=1e-12)
        for y in (0, 1):  # E over the decision's two outcomes: the truth
            p1 = a if y else 1 - b
            mean = p1 * (1 - (1 - b)) / (a + b - 1) + (1 - p1) * (0 - (1 - b)) / (a + b - 1)
            assert mean == pytest.approx(y, abs=1e-12)


def test_later_opinions_of_part_of_the_items_enter_with_horvitz_thompson_weights():
    """Items 2 and 3 went against the reference and got their later opinions; item 4 did too but
    its second opinion is not in yet; item 5 likewise; 1 confirmed the reference at once. Phase 2:
    needed by 2, 3, 4, 5 (π = 2/4, weight 2); phase 3: among the items whose second outcome is
    known, needed by 3 only (its second also against), present (weight 1); a later increment's
    weight is the product along the item's path."""
    dec, prior, ref, depth, required, stratum = _items()
    rule = dec[dec["iid"].isin([1, 2, 3, 4, 5])]
    got = PhasedLayout(rule, prior, ref, depth, required, stratum).estimate(MODEL)

    n_dec = rule.groupby("iid").size()
    stop = {1: 1, 2: 2, 3: 3, 4: 3, 5: 3}  # decisions the rule asks: 1 stopped at once, 2 at its second

    def f(iid, k):
        """``f_k`` of an item: the rule cut at k, as ItemLayout makes it from the decisions of every
        item whose cut outcome is known, each cut to its first k."""
        known = [i for i in n_dec.index if n_dec[i] >= min(k, stop[i])]
        d = rule[rule["iid"].isin(known)].groupby("iid").head(k)
        return ae.item_estimates(d, MODEL, prior, reference=ref.loc[known], depth=depth.loc[known].clip(upper=k)).loc[
            iid, "y_tilde"
        ]

    want = {
        1: f(1, 1) + (f(1, 2) - f(1, 1)) + (f(1, 3) - f(1, 2)),
        2: f(2, 1) + (f(2, 2) - f(2, 1)) * 2 + (f(2, 3) - f(2, 2)) * 2 * 1,
        3: f(3, 1) + (f(3, 2) - f(3, 1)) * 2 + (f(3, 3) - f(3, 2)) * 2 * 1,
        4: f(4, 1),
        5: f(5, 1),
    }
    for iid, v in want.items():
        assert got.loc[iid, "y_tilde"] == pytest.approx(v, abs=1e-12), iid


def test_a_stratum_without_any_later_opinion_keeps_first_decisions_for_all_its_items():
    """No item needing a second opinion has it: every increment of the stratum is left out, even
    those of items that stopped at once (keeping theirs alone would select on the answers)."""
    dec, prior, ref, depth, required, stratum = _items()
    held = dec[dec["iid"].isin([1, 4, 5])]
    got = PhasedLayout(held, prior, ref, depth, required, stratum).estimate(MODEL)
    first = PhasedLayout(held.groupby("iid").head(1), prior, ref, depth, required, stratum).estimate(MODEL)
    np.testing.assert_allclose(got["y_tilde"], first["y_tilde"], atol=1e-12)
    one = ae.item_estimates(held[held["iid"] == 1], MODEL, prior, reference=ref.loc[[1]], depth=depth.loc[[1]])
    assert got.loc[1, "y_tilde"] != pytest.approx(one.loc[1, "y_tilde"])  # the full rule's value is not used
