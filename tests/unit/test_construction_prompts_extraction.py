"""Construction prompts (integration, extraction, meta-prompt) and the extraction merge/mapping."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from reform_core.catalog import load_catalog
from reform_core.construction import extraction as X
from reform_core.construction import prompts as P
from reform_core.metrics.coverage import catalog_coverage

CAT = load_catalog("reformbench")


def test_meta_prompt_is_appended_only_for_the_prompted_condition():
    assert P.user_message("Do X.", "main") == "Do X."
    out = P.user_message("Do X.", "prompted")
    assert out.startswith("Do X.\n\n")
    # ReFormBench (arXiv:2610.19693) §4.4: four areas of guidance
    for phrase in (
        "Identify all explicit constraints",
        "minimal output structure",
        "Avoid unrequested content",
        "revise any violations",
    ):
        assert phrase in out


def test_integration_prompt_and_parser():
    msgs = P.integration_messages("Explain tides.", [{"text": "Use 3 bullets.", "acceptance": "3 bullet items"}])
    assert msgs[0]["role"] == "system" and "Use 3 bullets." in msgs[1]["content"]
    assert (
        P.parse_integration('```json\n{"instruction": "Explain tides in 3 bullets."}\n```')
        == "Explain tides in 3 bullets."
    )
    with pytest.raises(ValueError, match="instruction"):
        P.parse_integration('{"instruction": ""}')
    with pytest.raises(ValueError, match="JSON"):
        P.parse_integration("no json here")


def test_extraction_parser_validates_mappings():
    good = {
        "features": [{"name": "Bullets", "description": "d", "mapping": "exact", "catalog_features": ["bullet_list"]}]
    }
    assert P.parse_extraction(json.dumps(good))[0]["catalog_features"] == ["bullet_list"]
    bad = {"features": [{"name": "x", "mapping": "maybe"}]}
    with pytest.raises(ValueError, match=r"features\[1\]\.mapping"):
        P.parse_extraction(json.dumps(bad))


def test_merge_prefers_rules_for_rule_features_and_llm_otherwise():
    rule = pd.DataFrame({"model": "m", "question": "q", "feature": ["bullet_list", "tone_x"], "present": [True, True]})
    llm = pd.DataFrame(
        {"model": "m", "question": "q", "feature": ["bullet_list", "tone_x", "extra"], "present": [False, False, True]}
    )
    out = X.merge_detections(rule, llm, rule_keys={"bullet_list"}).set_index("feature")
    assert out.loc["bullet_list", "present"] and out.loc["bullet_list", "source"] == "rule"
    assert not out.loc["tone_x", "present"] and out.loc["tone_x", "source"] == "llm"
    assert out.loc["extra", "source"] == "llm" and len(out) == 3
    with pytest.raises(ValueError, match="duplicate"):
        X.merge_detections(pd.concat([rule, rule]), llm, rule_keys=set())


def test_mapping_rules_and_coverage():
    rows = [
        ("Bullet list", "subtype", []),  # a catalog name -> exact
        ("Numbered steps with bold", "composite", ["numbered_enumeration", "typographic_emphasis"]),
        ("Short bullets", "subtype", ["bullet_list"]),
        ("Inline code spans", "uncovered", []),
        ("Friendly tone", "not_format", ["direct_address"]),
        ("Odd thing", "exact", ["not_a_key"]),  # only an unknown key -> uncovered, key dropped
    ]
    ext = pd.DataFrame(
        [{"model": "m", "question": "q", "name": n, "mapping": m, "catalog_features": k} for n, m, k in rows]
    )
    mapped = X.map_extracted(ext, CAT)
    assert mapped["mapping"].tolist() == ["exact", "composite", "subtype", "uncovered", "not_format", "uncovered"]
    assert mapped["features"].iloc[0] == ("bullet_list",) and mapped["dropped"].iloc[5] == ("not_a_key",)
    cov = catalog_coverage(mapped).set_index("model")
    # 5 valid instances (not_format excluded), 3 covered -> 60 %
    assert cov.loc["m", "valid"] == 5 and cov.loc["m", "coverage"] == pytest.approx(60.0)
    ann = X.catalog_annotations(mapped)
    assert ann["feature"].tolist() == ["bullet_list", "numbered_enumeration", "typographic_emphasis"]
