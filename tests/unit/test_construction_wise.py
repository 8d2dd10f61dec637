"""WISE matched items and manifests."""

from __future__ import annotations

import numpy as np
import pytest

from reform_core.construction import wise_gen as W
from reform_core.verifiers import get

TASKS = [f"Name a fact about topic {i}." for i in range(100)]


def test_task_manifest_balances_targets():
    m = W.task_manifest(TASKS, [5, 8, 10, 12], np.random.default_rng(0))
    assert m["target"].value_counts().to_dict() == {"5": 25, "8": 25, "10": 25, "12": 25}
    assert m["item"].iloc[0] == "item-001" and m["item"].is_unique


def test_matched_items_cover_task_form_repetition():
    m = W.task_manifest(TASKS, [5, 8, 10, 12], np.random.default_rng(0))
    forms = W.form_manifest("exact_count")
    items = W.matched_items(m, forms, repetitions=3)
    assert len(items) == 100 * 6 * 3
    # Table 1 of the WISE paper, instantiated
    row = items[(items["target"] == "10") & (items["form"] == "AVOID1")].iloc[0]
    assert row["wording"] == "Avoid using any number of words other than 10."
    assert row["prompt"] == f"{row['task']} {row['wording']}"
    # within a task, only the wording varies
    g = items[items["item"] == "item-001"]
    assert g["task"].nunique() == 1 and g["target"].nunique() == 1 and g["wording"].nunique() == 6
    ok = " ".join(["word"] * 10)
    assert get(row["checker"])(ok, **row["params"]).passed
    assert not get(row["checker"])(ok + " more", **row["params"]).passed


def test_other_targets_and_panels():
    tasks = W.task_manifest(["Describe a port."], ["keyword:harbor"], np.random.default_rng(0))
    items = W.matched_items(tasks, W.form_manifest("keyword"), repetitions=1)
    assert items["wording"].iloc[0] == 'Use the word "harbor" exactly once.'
    assert get("wise:keyword_once")("The harbor is calm.", **items["params"].iloc[0]).passed
    assert W.render("Answer using between {L} and {H} words.", "8-12") == "Answer using between 8 and 12 words."
    assert W.parse_target("keys:name, year") == ("wise:json_keys", {"keys": ["name", "year"]})


def test_errors_are_specific():
    with pytest.raises(ValueError, match="keyword:WORD"):
        W.parse_target("ten")
    with pytest.raises(ValueError, match="form 'X'"):
        W.form_manifest(forms={"X": "Use {K} once."}, checker="wise:exact_words")
    tasks = W.task_manifest(["Q?"], ["8-12"], np.random.default_rng(0))
    with pytest.raises(ValueError, match="needs wise:word_range"):
        W.matched_items(tasks, W.form_manifest("exact_count"))
    with pytest.raises(ValueError, match="unknown panel"):
        W.form_manifest("nope")
