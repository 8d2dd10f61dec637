"""Metric texts follow the catalog's metric set and the data's shape (issue 32 item 4)."""

from __future__ import annotations

import pytest

from reform_core.metrics.descriptions import DataShape, describe_metrics

REFORMBENCH = ("tcpr", "emcr", "r1", "r2", "r3", "constraint_level")
IFEVAL = ("tcpr", "constraint_level", "prompt_level", "instruction_level", "strict", "loose")


def test_three_constraints_everywhere_with_baseline_reads_as_the_paper():
    d = describe_metrics(REFORMBENCH, DataShape.of([3, 3, 3], has_baseline=True))
    assert d.emcr and d.note == ""
    assert [t.metric for t in d.texts] == ["tcpr", "r1", "r2", "r3", "emcr", "constraint_level"]
    assert d.get("tcpr").name == "three-constraint pass rate"
    assert "meets all three of its constraints" in d.get("tcpr").definition
    assert [t.label for t in d.display()] == ["TCPR", "R¹, R², R³", "EMCR", "constraint level"]


@pytest.mark.parametrize(
    "counts, phrase",
    [
        ([1, 2, 3], "all of the prompt's constraints (1–3 per prompt here"),
        ([2, 2], "all of the prompt's constraints (each prompt has two here"),
        ([4, 6], "all of the prompt's constraints (4–6 per prompt here"),
        ([1], "meets the prompt's constraint (each prompt has one here"),
    ],
)
def test_tcpr_never_says_three_where_counts_differ(counts, phrase):
    d = describe_metrics(REFORMBENCH, DataShape.of(counts, has_baseline=True))
    tcpr = d.get("tcpr").sentence()
    assert phrase in tcpr and "three" not in tcpr


def test_ifeval_has_no_emcr_text_and_names_its_accuracies():
    d = describe_metrics(IFEVAL, DataShape.of([1, 2, 3], has_baseline=False))
    assert not d.emcr and not d.emcr_declared and d.note == ""
    assert set(d.as_dict()) == {"tcpr", "constraint_level", "strict", "loose"}
    assert "= IFEval's prompt-level accuracy" in d.as_dict()["tcpr"]
    assert "= IFEval's instruction-level accuracy" in d.as_dict()["constraint_level"]
    assert not any("EMCR" in s or "R1" in s for s in d.as_dict().values())


def test_emcr_declared_without_baseline_data_is_not_described_but_explained_once():
    d = describe_metrics(REFORMBENCH, DataShape.of([3], has_baseline=False))
    assert not d.emcr and d.emcr_declared
    assert set(d.as_dict()) == {"tcpr", "constraint_level"}
    assert "need baseline annotations" in d.note and "not computed" in d.note


def test_baseline_data_without_declared_emcr_describes_no_emcr():
    d = describe_metrics(("tcpr", "constraint_level"), DataShape.of([2, 3], has_baseline=True))
    assert not d.emcr and d.note == "" and set(d.as_dict()) == {"tcpr", "constraint_level"}
