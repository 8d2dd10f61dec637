"""MOSAIC generator: pool composition, placeholder filling, balance of the 4,000-prompt subset."""

from __future__ import annotations

import numpy as np
import pytest

from reform_core.construction import mosaic_gen as M
from reform_core.verifiers import get


@pytest.fixture(scope="module")
def sample():
    return M.generate(4000, np.random.default_rng(7))


def test_table_sizes_follow_the_paper():
    # MOSAIC (arXiv:2601.18554) Tables 2-4: 4 tasks, 8 products, 21 constraints in 5 categories
    assert len(M.TASKS) == 4 and len(M.PRODUCTS) == 8 and len(M.CONSTRAINTS) == 21
    cats = [c.category for c in M.CONSTRAINTS]
    assert {k: cats.count(k) for k in set(cats)} == {
        "formatting": 6,
        "lexical": 5,
        "syntactic": 2,
        "semantic": 5,
        "business_legal": 3,
    }


def test_balance_within_20_percent_of_uniform(sample):
    counts = M.balance_counts(sample)
    for kind in ("size", "rank"):
        tab = counts[kind]
        assert tab.shape == (21, 20)
        expected = tab.sum(axis=0) / 21  # uniform over constraints in each column
        ratio = tab / expected
        assert ratio.min().min() >= 0.8 and ratio.max().max() <= 1.2, kind
    sizes = np.bincount([p["size"] for p in sample])[1:]
    assert sizes.min() == sizes.max() == 200


def test_lists_are_distinct_and_strata_balanced(sample):
    assert all(len(set(p["constraints"])) == p["size"] for p in sample)
    assert len({p["id"] for p in sample}) == 4000
    from collections import Counter

    pairs = Counter((p["task"], p["product"]) for p in sample)
    assert len(pairs) == 32 and max(pairs.values()) - min(pairs.values()) <= 2


def test_comprehensive_pool_permutations_and_shuffles():
    rng = np.random.default_rng(0)
    small = list(M.comprehensive_pool(rng, sizes=[1, 2, 3]))
    # all permutations: 21 + 21*20 + 21*20*19 per task x product pairing
    assert len(small) == 32 * (21 + 420 + 7980) == M.pool_size(sizes=[1, 2, 3])
    assert len(set(small)) == len(small)
    large = list(M.comprehensive_pool(rng, sizes=[12], combos=4, shuffles=3))
    assert len(large) == 32 * 12
    first = large[:3]  # one combination, three orders
    assert len({frozenset(c) for _, _, c in first}) == 1 and len({c for _, _, c in first}) > 1


def test_assembly_fills_placeholders_and_names_checkers():
    rng = np.random.default_rng(1)
    keys = ("boc_token", "use_keywords", "tone", "custom_variable", "json")
    p = M.assemble("marketing_email", "credit_card", keys, rng, prompt_id="x")
    assert p["system"].startswith("You are a writing assistant. Your task is to write a marketing email")
    assert p["user"] == f"Product/Service: {M.PRODUCTS['credit_card']}."
    assert "{{FirstName}}" in p["system"] and '{"response": <your response>}' in p["system"]
    assert "{tone}" not in p["system"] and "{keywords}" not in p["system"]
    checks = {c["constraint"]: c for c in p["checks"]}
    assert [c["position"] for c in p["checks"]] == [1, 2, 3, 4, 5]
    assert checks["tone"]["verifier"] == "judge" and checks["tone"]["params"]["tone"] in checks["tone"]["rubric"]
    kw = checks["use_keywords"]["params"]["keywords"]
    good = f"<BOC> Hi {{{{FirstName}}}}, {' '.join(kw)} rewards."
    assert get("mosaic:boc_token")(good, **checks["boc_token"]["params"]).passed
    assert get("mosaic:keywords_use")(good, **checks["use_keywords"]["params"]).passed
    assert get("mosaic:variable")(good, **checks["custom_variable"]["params"]).passed
    assert not get("mosaic:keywords_use")("nothing relevant", **checks["use_keywords"]["params"]).passed


def test_seeded_and_validated():
    a = M.generate(50, np.random.default_rng(3))
    b = M.generate(50, np.random.default_rng(3))
    assert a == b
    with pytest.raises(ValueError, match="sizes"):
        M.balanced_sample(10, np.random.default_rng(0), sizes=[0, 3])
    with pytest.raises(ValueError, match="unknown MOSAIC constraint 'nope'"):
        M.fill("nope", "smartphone", np.random.default_rng(0))
    with pytest.raises(ValueError, match="duplicates"):
        M.assemble("faq_entry", "smartphone", ("json", "json"), np.random.default_rng(0))
