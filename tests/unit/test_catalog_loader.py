"""Catalog data (docs/metrics.md#catalog; ReFormBench, arXiv:2610.19693, Table A12) and the loader's validation."""

import json
from pathlib import Path

import pytest
import yaml

from reform_core.catalog import load_catalog
from reform_core.verifiers import base

# docs/metrics.md#catalog: the eight categories in table order with their feature counts.
EXPECTED = [
    ("line_layout", 7),
    ("document_structure", 9),
    ("lists", 4),
    ("structured_fields", 6),
    ("response_framing", 11),
    ("content_organisation", 12),
    ("inline_markers", 8),
    ("supplementary_blocks", 9),
]


@pytest.fixture(scope="module")
def rb():
    return load_catalog("reformbench")


def test_reformbench_has_66_features_in_8_categories_in_table_order(rb):
    assert rb.name == "reformbench" and rb.version
    assert len(rb) == 66
    assert [(c.key, len(rb.in_category(c.key))) for c in rb.categories] == EXPECTED
    # features are grouped by category in table order
    order = [f.category for f in rb]
    assert order == sorted(order, key=[k for k, _ in EXPECTED].index)


def test_keys_unique_snake_case_and_both_templates_present(rb):
    keys = rb.keys()
    assert len(set(keys)) == len(keys)
    for f in rb:
        assert f.key.isidentifier() and f.key == f.key.lower(), f.key
        assert f.modes == ("require", "forbid")
        assert f.require_template and f.forbid_template and f.definition
        assert f.acceptance["require"] and f.acceptance["forbid"]


def test_table_a12_names_and_counts(rb):
    # restored names (the ReFormBench catalog's) and a few legible counts of Table A12
    names = {f.name for f in rb}
    for restored in (
        "Checklist",
        "Status panel",
        "Call to action",
        "Rationale and evidence",
        "Direct address",
        "Emoji and symbols",
        "Captioned content",
    ):
        assert restored in names
    assert (rb["line_breaks_and_spacing"].paper_require, rb["line_breaks_and_spacing"].paper_forbid) == (1110, 63)
    assert (rb["call_to_action"].paper_require, rb["call_to_action"].paper_forbid) == (193, 377)
    assert (rb["files_and_modules"].paper_require, rb["files_and_modules"].paper_forbid) == (0, 1)
    # the 15,000 constraint slots of the retained benchmark (ReFormBench App. A.7.3)
    assert sum(f.paper_require + f.paper_forbid for f in rb) == 15_000


def test_rule_detectable_set_equals_registered_feature_detectors(rb):
    # only the product's detectors (other tests register throwaway ones in the same registry)
    registered = {
        i.split(":", 1)[1] for i in base.registered_ids("feature:") if base.get(i).__module__.startswith("reform_core.")
    }
    assert registered == set(rb.rule_detectable_keys())


def test_render_fills_params_and_defaults(rb):
    f = rb["section_headings"]
    assert f.render("require", n=4) == "Use exactly 4 section headings."
    assert "3" in f.render("require")  # default n
    assert "{" not in f.render_acceptance("require")
    with pytest.raises(ValueError, match="unknown param"):
        f.render("require", m=2)


def test_to_frame_columns(rb):
    df = rb.to_frame()
    assert len(df) == 66
    for col in (
        "key",
        "name",
        "category",
        "category_name",
        "definition",
        "require_template",
        "forbid_template",
        "rule_detectable",
    ):
        assert col in df.columns
    assert df.loc[df.key == "bullet_list", "category_name"].item() == "Lists"


IFEVAL_INPUT = Path(__file__).resolve().parents[1] / "data" / "ifeval" / "input_data.jsonl"  # vendored copy


def test_ifeval_catalog_matches_the_input_data():
    cat = load_catalog("ifeval")
    ids, kwargs = set(), {}
    with open(IFEVAL_INPUT, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            for iid, kw in zip(row["instruction_id_list"], row["kwargs"]):
                ids.add(iid)
                kwargs.setdefault(iid, set()).update(k for k, v in kw.items() if v is not None)
    assert set(cat.keys()) == ids and len(ids) == 25
    for f in cat:
        assert f.category == f.key.split(":")[0]
        assert {p.name for p in f.params} == kwargs[f.key], f.key
    # every IFEval instruction is a requirement: "require: refrain from any commas", never the
    # double negative "forbid: no comma" (issue 14)
    assert {f.modes for f in cat} == {("require",)}
    assert (
        cat["keywords:forbidden_words"].render("require", forbidden_words=["a", "b"]).endswith("a, b in the response.")
    )
    with pytest.raises(ValueError, match="no 'forbid' mode"):
        cat["punctuation:no_comma"].render("forbid")
    assert set(cat.metrics) == {"tcpr", "constraint_level", "prompt_level", "instruction_level", "strict", "loose"}
    assert "emcr" not in cat.metrics and "emcr" in load_catalog("reformbench").metrics


def _write(tmp_path, data, suffix=".yaml"):
    path = tmp_path / f"custom{suffix}"
    path.write_text(json.dumps(data) if suffix == ".json" else yaml.safe_dump(data))
    return path


def _custom():
    return {
        "name": "mini",
        "version": "0.1",
        "categories": [{"key": "lists", "name": "Lists"}],
        "features": [
            {
                "key": "bullet_list",
                "name": "Bullet list",
                "category": "lists",
                "definition": "Bullets.",
                "require_template": "Use {n} bullets.",
                "forbid_template": "No bullets.",
                "params": [{"name": "n", "type": "int", "default": 3}],
                "acceptance": {"require": "{n} bullets.", "forbid": "None."},
                "rule_detectable": True,
            }
        ],
    }


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_custom_catalog_loads(tmp_path, suffix):
    cat = load_catalog(_write(tmp_path, _custom(), suffix))
    assert cat.name == "mini" and cat.keys() == ["bullet_list"]
    assert cat["bullet_list"].render("require", n=5) == "Use 5 bullets."


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["features"].append(dict(d["features"][0])), "duplicate feature key 'bullet_list'"),
        (lambda d: d["features"][0].update(category="tables"), "feature 'bullet_list': unknown category 'tables'"),
        (lambda d: d["features"][0].pop("forbid_template"), "feature 'bullet_list': missing field 'forbid_template'"),
        (lambda d: d["features"][0].update(require_template="Use {k} bullets."), r"placeholder\(s\) \['k'\]"),
        (lambda d: d["features"][0].update(rule_detectable="yes"), "'rule_detectable' must be true or false"),
        (lambda d: d.pop("version"), "missing or empty field 'version'"),
        (lambda d: d["features"][0]["params"][0].update(default="x"), "param 'n': default 'x' is not of type int"),
    ],
)
def test_broken_catalog_errors_name_file_feature_and_field(tmp_path, mutate, message):
    data = _custom()
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(ValueError, match=message) as err:
        load_catalog(path)
    assert str(path) in str(err.value)


def test_unknown_catalog_name_and_unparsable_file(tmp_path):
    with pytest.raises(ValueError, match="neither a bundled catalog"):
        load_catalog("nope")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match=r"bad.json:1: \(file\): cannot parse"):
        load_catalog(bad)
