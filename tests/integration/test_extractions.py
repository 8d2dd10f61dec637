"""Issue 17: feature extractions in the bundle (extractions.jsonl): validated with located
errors, stored, written back by export-bundle, and read by the coverage analysis."""

from __future__ import annotations

import json

import pytest

from reform_core.services.data.bundle_export import export_bundle
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.reading import ImportFailed
from reform_core.services.platform.uow import get_engine
from tests.integration.scoring_project import MODELS, QUESTIONS, write_bundle

M, Q = MODELS[0], next(iter(QUESTIONS))


def _with_extractions(root, rows):
    write_bundle(root)
    (root / "extractions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def test_bad_extractions_are_refused_with_file_line_and_field(tmp_path):
    root = _with_extractions(
        tmp_path / "b",
        [
            {"model": M, "question": Q, "label": "steps", "match": "exact"},  # exact without its feature
            {"model": M, "question": Q, "label": "odd", "feature": "no_such_feature", "match": "subtype"},
            {"model": "ghost", "question": Q, "label": "x", "match": "uncovered"},
            {"model": M, "question": Q, "label": "y", "feature": "bullet_list", "match": "sideways"},
        ],
    )
    url = f"sqlite:///{tmp_path / 'p.db'}"
    with pytest.raises(ImportFailed) as exc:
        import_bundle(get_engine(url), root)
    text = "\n".join(exc.value.errors)
    assert "extractions.jsonl:1:" in text and "required when match is 'exact'" in text
    assert "extractions.jsonl:4: match" in text
    root = _with_extractions(
        tmp_path / "c",
        [
            {"model": M, "question": Q, "label": "odd", "feature": "no_such_feature", "match": "subtype"},
            {"model": "ghost", "question": Q, "label": "x", "match": "uncovered"},
        ],
    )
    with pytest.raises(ImportFailed) as exc:
        import_bundle(get_engine(url), root)
    text = "\n".join(exc.value.errors)
    assert "extractions.jsonl:1: feature: unknown catalog feature 'no_such_feature'" in text
    assert "extractions.jsonl:2: question: no baseline response of model 'ghost'" in text


def test_extractions_round_trip_and_feed_coverage(tmp_path, any_db_url):
    from reform_core.services.accounts.users import cli_principal
    from reform_core.services.scoring.analyses import analyses

    rows = [
        {"model": M, "question": Q, "label": "bullets", "feature": "bullet_list", "match": "exact"},
        {"model": M, "question": Q, "label": "bullets and bold", "feature": "bullet_list", "match": "composite"},
        {"model": M, "question": Q, "label": "custom layout", "match": "uncovered"},
        {"model": M, "question": Q, "label": "friendly tone", "match": "not_format"},
    ]
    root = _with_extractions(tmp_path / "b", rows)
    eng = get_engine(any_db_url)
    counts = import_bundle(eng, root)
    assert counts["extractions"] == 4
    assert import_bundle(eng, root)["extractions"] == 0  # idempotent
    out = tmp_path / "out"
    export_bundle(eng, out)
    back = [json.loads(line) for line in (out / "extractions.jsonl").read_text().splitlines()]
    assert [(r["label"], r["feature"], r["match"]) for r in back] == [
        (r["label"], r.get("feature", ""), r["match"]) for r in rows
    ]
    eng2 = get_engine(f"sqlite:///{tmp_path / 'p2.db'}")
    assert import_bundle(eng2, out)["extractions"] == 4
    res = analyses(eng2, cli_principal(eng2), n_boot=10)
    cov = res.tables["table_a4_coverage"].set_index("model")
    assert cov.loc[M, "valid"] == 3 and cov.loc[M, "covered"] == 2
    assert cov.loc[M, "coverage"] == pytest.approx(200 / 3)
