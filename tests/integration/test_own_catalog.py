"""A team's own catalog (issue 32 item 3): the documented format, ``catalog-init``, import with
``--catalog``, the catalog kept with the project for later commands, and exports naming it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from sqlalchemy import text

from reform_core.catalog import load_catalog
from reform_core.services.data.bundle_export import export_bundle
from reform_core.services.data.catalogs import parse_catalog_file
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.reading import ImportFailed
from reform_core.services.data.table_import import import_table
from reform_core.services.platform.uow import get_engine

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "catalog.md"


def _cli(*args, cwd=REPO):
    return subprocess.run(
        [sys.executable, "-m", "reform_core", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def _doc_blocks() -> dict[str, str]:
    """The fenced ``yaml`` and ``csv`` blocks of docs/catalog.md (the complete example)."""
    blocks = re.findall(r"```(yaml|csv)\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    out = dict(blocks)
    assert set(out) == {"yaml", "csv"}, "docs/catalog.md must hold one yaml and one csv example"
    return out


def test_the_documented_example_loads_and_imports(tmp_path, sqlite_url):
    blocks = _doc_blocks()
    (tmp_path / "recipes.yaml").write_text(blocks["yaml"], encoding="utf-8")
    cat = load_catalog(tmp_path / "recipes.yaml")
    assert cat.name == "recipes" and cat.keys() == ["numbered_steps", "ingredient_table", "tone:imperative"]
    assert cat.metrics == ("tcpr", "constraint_level")
    assert cat["numbered_steps"].render("require", steps=4) == "Write the method as 4 numbered steps."
    eng = get_engine(sqlite_url)
    out = import_table(eng, blocks["csv"].encode(), "recipes.csv", {}, catalog=str(tmp_path / "recipes.yaml"))
    assert out["catalog"] == "recipes" and out["constraints"] == 5 and out["judgments"] == 10
    with eng.connect() as conn:
        texts = (
            conn.execute(
                text(
                    "SELECT c.text FROM constraint_item c JOIN instruction i ON i.id = c.instruction_id "
                    "WHERE i.key = 'r1' ORDER BY c.position"
                )
            )
            .scalars()
            .all()
        )
    assert texts[0] == "Write the method as 4 numbered steps."


TABLE = pd.DataFrame(
    {
        "model": ["m1", "m1", "m1", "m2", "m2", "m2", "m1", "m2"],
        "question": ["p1", "p1", "p2", "p1", "p1", "p2", "p3", "p3"],
        "prompt": ["Write a recipe."] * 2
        + ["Describe tides."]
        + ["Write a recipe."] * 2
        + ["Describe tides."]
        + ["Say no commas."] * 2,
        "feature": [
            "numbered_steps",
            "emoji_free",
            "numbered_steps",
            "numbered_steps",
            "emoji_free",
            "numbered_steps",
            "punctuation:no_comma",
            "punctuation:no_comma",
        ],
        "mode": ["require", "forbid", "", "require", "forbid", "", "require", "require"],
        "params": ['{"n": 3}', "", '{"n": 5}', '{"n": 3}', "", '{"n": 5}', "", ""],
        "response": [
            "1. a\n2. b\n3. c",
            "1. a\n2. b\n3. c",
            "Tides rise.",
            "a, b",
            "a, b",
            "Tides, rise.",
            "no commas here",
            "one, two",
        ],
        "gpt": ["1", "1", "0", "0", "1", "1", "1", "0"],
        "gem": ["1", "0", "0", "0", "1", "1", "1", "0"],
    }
)
MAP = ["gpt=label:gpt", "gem=label:gem"]


def test_catalog_init_writes_a_starter_that_imports_the_same_table(tmp_path):
    TABLE.to_csv(tmp_path / "bench.csv", index=False)
    db = f"sqlite:///{tmp_path / 'p.db'}"
    r = _cli(
        "catalog-init",
        tmp_path / "bench.csv",
        "--out",
        tmp_path / "catalog.yaml",
        *sum((["--map", m] for m in MAP), []),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"features": 3, "out": str(tmp_path / "catalog.yaml")}
    cat = load_catalog(tmp_path / "catalog.yaml")
    assert cat.name == "bench" and cat.keys() == ["numbered_steps", "emoji_free", "punctuation:no_comma"]
    assert cat["numbered_steps"].modes == ("require",) and cat["emoji_free"].modes == ("forbid",)
    assert [(p.name, p.type) for p in cat["numbered_steps"].params] == [("n", "int")]
    assert cat["punctuation:no_comma"].category == "punctuation" and cat["numbered_steps"].category == "custom"
    assert "{n}" in cat["numbered_steps"].require_template  # every row gives n: the template shows it
    again = _cli("catalog-init", tmp_path / "bench.csv", "--out", tmp_path / "catalog.yaml")
    assert again.returncode == 1 and "exists" in again.stderr  # never overwritten without --force

    imported = _cli(
        "import-table",
        tmp_path / "bench.csv",
        "--db",
        db,
        "--catalog",
        tmp_path / "catalog.yaml",
        *sum((["--map", m] for m in MAP), []),
        "--json",
    )
    assert imported.returncode == 0, imported.stderr
    out = json.loads(imported.stdout)
    assert out["catalog"] == "bench" and out["constraints"] == 4 and out["judgments"] == 16
    eng = get_engine(db)
    with eng.connect() as conn:
        stored = conn.execute(text("SELECT name, filename, sha256, content FROM catalog_document")).one()
        cons = conn.execute(text("SELECT feature, text FROM constraint_item ORDER BY id")).all()
    body = (tmp_path / "catalog.yaml").read_text(encoding="utf-8")
    assert stored == ("bench", "catalog.yaml", hashlib.sha256(body.encode()).hexdigest(), body)
    assert cons[0] == ("numbered_steps", "Your response must have this feature: Numbered steps (n: 3).")


def test_the_stored_catalog_serves_later_commands_without_the_file(tmp_path):
    """The rules judge runs the custom catalog's verifier, score and export describe its
    metrics, another table picks it without --catalog: all after the file is gone."""
    TABLE.to_csv(tmp_path / "bench.csv", index=False)
    db = f"sqlite:///{tmp_path / 'p.db'}"
    assert (
        _cli(
            "catalog-init", tmp_path / "bench.csv", "--out", tmp_path / "own.yaml", "--map", MAP[0], "--map", MAP[1]
        ).returncode
        == 0
    )
    data = yaml.safe_load((tmp_path / "own.yaml").read_text())
    data["features"][2]["verifier"] = "ifeval:punctuation:no_comma"  # checked by the rules judge
    data["version"] = "2"
    (tmp_path / "own.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert (
        _cli(
            "import-table",
            tmp_path / "bench.csv",
            "--db",
            db,
            "--catalog",
            tmp_path / "own.yaml",
            "--map",
            MAP[0],
            "--map",
            MAP[1],
        ).returncode
        == 0
    )
    content = (tmp_path / "own.yaml").read_text()
    (tmp_path / "own.yaml").unlink()

    r = _cli("judge", "--db", db, "--provider", "rules", "--name", "rules", "--json")
    assert r.returncode == 0, r.stderr
    with get_engine(db).connect() as conn:
        verdicts = dict(
            conn.execute(
                text(
                    "SELECT m.name, g.label FROM judgment g JOIN judge j ON j.id = g.judge_id JOIN response r ON "
                    "r.id = g.response_id JOIN eval_model m ON m.id = r.model_id JOIN constraint_item c ON "
                    "c.id = g.constraint_id WHERE j.name = 'rules' AND c.feature = 'punctuation:no_comma'"
                )
            ).all()
        )
    assert verdicts == {"m1": 1, "m2": 0}  # "no commas here" passes, "one, two" fails

    scored = json.loads(_cli("score", "--db", db, "--judge", "gpt", "--json").stdout)
    assert scored["catalogs"] == ["bench"] and scored["metrics"] == ["tcpr", "constraint_level"]
    assert "all of the prompt's constraints (1–2 per prompt here" in scored["metric_definitions"]["tcpr"]
    assert all("no_baseline_targets" not in m["excluded"] for m in scored["models"].values())

    assert _cli("pair", "--db", db, "gpt", "gem").returncode == 0
    r = _cli(
        "export", "--db", db, "--out", tmp_path / "export", "--calibration", "stratified", "--reps", "20", "--json"
    )
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "export" / "manifest.json").read_text())
    (entry,) = [c for c in manifest["catalogs"] if c["name"] == "bench"]
    assert entry["version"] == "2" and entry["features"] == 3 and entry["used"] is True
    assert entry["source"] == "own.yaml" and entry["sha256"] == hashlib.sha256(content.encode()).hexdigest()
    assert (tmp_path / "export" / entry["file"]).read_text() == content and entry["file"] in manifest["files"]
    assert set(manifest["metric_definitions"]) == {"tcpr", "constraint_level"}

    more = TABLE.assign(question=TABLE["question"] + "-b")
    out = import_table(
        get_engine(db), more.to_csv(index=False).encode(), "more.csv", {"gpt": "label:gpt", "gem": "label:gem"}
    )
    assert out["catalog"] == "bench" and out["constraints"] == 4


def test_a_changed_catalog_needs_replace_and_a_bundled_name_is_refused(tmp_path, sqlite_url):
    blocks = _doc_blocks()
    eng = get_engine(sqlite_url)
    import_table(
        eng, blocks["csv"].encode(), "t.csv", {}, catalog=parse_catalog_file(blocks["yaml"].encode(), "c.yaml")
    )
    edited = blocks["yaml"].replace("The method is written as numbered steps.", "Steps are numbered.")
    with pytest.raises(ImportFailed) as exc:
        import_table(eng, blocks["csv"].encode(), "t.csv", {}, catalog=parse_catalog_file(edited.encode(), "c2.yaml"))
    assert exc.value.errors == [
        "c2.yaml:1: name: catalog 'recipes' is stored with this project with other content (from c.yaml, sha256 "
        f"{hashlib.sha256(blocks['yaml'].encode()).hexdigest()[:12]}…); import with --replace to replace it"
    ]
    import_table(
        eng, blocks["csv"].encode(), "t.csv", {}, catalog=parse_catalog_file(edited.encode(), "c2.yaml"), replace=True
    )
    with eng.connect() as conn:
        assert (
            conn.execute(text("SELECT definition FROM catalog_feature WHERE key = 'numbered_steps'")).scalar()
            == "Steps are numbered."
        )
    with pytest.raises(ImportFailed, match=r"c.yaml:1: name: 'ifeval' is the name of a bundled catalog"):
        parse_catalog_file(blocks["yaml"].replace("name: recipes", "name: ifeval").encode(), "c.yaml")


def test_catalog_problems_are_located(tmp_path):
    body = _doc_blocks()["yaml"]
    broken = body.replace("    name: Ingredient table\n", "").replace("category: style", "category: voice")
    broken = broken.replace("  - key: numbered_steps\n", "  - key: numbered_steps\n    key: again\n")
    with pytest.raises(ImportFailed) as exc:
        parse_catalog_file(broken.encode(), "mine.yaml")
    lines = broken.splitlines()
    at = {
        key: next(n for n, line in enumerate(lines, 1) if needle in line)
        for key, needle in (("dup", "key: again"), ("table", "key: ingredient_table"), ("voice", "category: voice"))
    }
    assert exc.value.errors == [
        f"mine.yaml:{at['dup']}: key: given twice in one mapping (the file would keep only the last value)",
        f"mine.yaml:{at['table']}: features.1.name: feature 'ingredient_table': missing field 'name'",
        f"mine.yaml:{at['voice']}: features.2.category: feature 'tone:imperative': unknown category 'voice' "
        "(known: ['structure', 'style'])",
    ]


def test_a_bundle_carries_its_own_catalog(tmp_path, sqlite_url):
    blocks = _doc_blocks()
    eng = get_engine(sqlite_url)
    import_table(
        eng, blocks["csv"].encode(), "t.csv", {}, catalog=parse_catalog_file(blocks["yaml"].encode(), "c.yaml")
    )
    counts = export_bundle(eng, tmp_path / "b")
    assert counts["catalog.yaml"] == 1 and (tmp_path / "b" / "catalog.yaml").read_text() == blocks["yaml"]
    assert json.loads((tmp_path / "b" / "bundle.json").read_text())["catalog"] == "recipes"
    fresh = get_engine(f"sqlite:///{tmp_path / 'fresh.db'}")
    assert import_bundle(fresh, tmp_path / "b")["constraints"] == 5
    with fresh.connect() as conn:
        assert conn.execute(text("SELECT name FROM catalog_document")).scalars().all() == ["recipes"]


def test_unknown_features_are_one_message_with_the_way_out(tmp_path, sqlite_url):
    rows = "\n".join(
        f"m1,q{i},{f}"
        for i, f in enumerate(["bullet_list", "numbered_steps", "zz_one", "numbered_steps", "zz_two"] * 3)
    )
    with pytest.raises(ImportFailed) as exc:
        import_table(get_engine(sqlite_url), f"model,question,feature\n{rows}\n".encode(), "own.csv", {})
    assert exc.value.errors == [
        "own.csv:3: feature: 3 unknown features: 'numbered_steps' (lines 3, 5, 8, 10, 13, …), 'zz_one' (lines 4, 9, "
        "14), 'zz_two' (lines 6, 11, 16) of catalog reformbench; for your own features, write a starter catalog with "
        "`python -m reform_core catalog-init own.csv --out catalog.yaml`, edit its texts and import with --catalog "
        "catalog.yaml"
    ]


def test_a_bundle_catalog_linked_out_of_the_bundle_is_refused_unread(tmp_path, sqlite_url):
    blocks = _doc_blocks()
    eng = get_engine(sqlite_url)
    import_table(
        eng, blocks["csv"].encode(), "t.csv", {}, catalog=parse_catalog_file(blocks["yaml"].encode(), "c.yaml")
    )
    export_bundle(eng, tmp_path / "b")
    (tmp_path / "outside.yaml").write_text(blocks["yaml"])
    (tmp_path / "b" / "catalog.yaml").unlink()
    (tmp_path / "b" / "catalog.yaml").symlink_to(tmp_path / "outside.yaml")
    with pytest.raises(ImportFailed) as exc:
        import_bundle(get_engine(f"sqlite:///{tmp_path / 'fresh.db'}"), tmp_path / "b")
    assert any(
        e.startswith("catalog.yaml:0: (file): cannot read: is a symbolic link to") and "outside the bundle" in e
        for e in exc.value.errors
    ), exc.value.errors


def test_catalog_init_on_a_table_nobody_shaped_for_reform(tmp_path):
    """IFEval's own verdict file (every instruction id, kwargs of every JSON type, an instruction
    asked twice in one prompt): the starter catalog imports the whole table as it is."""
    from tests.integration.test_import_table import MAP as IFEVAL_MAP
    from tests.integration.test_import_table import _ifeval_table

    df = _ifeval_table()
    df.to_csv(tmp_path / "verdicts.csv", index=False)
    maps = sum((["--map", m] for m in IFEVAL_MAP), [])
    r = _cli(
        "catalog-init", tmp_path / "verdicts.csv", "--out", tmp_path / "c.yaml", "--name", "my-ifeval", *maps, "--json"
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["features"] == df["instruction_id"].nunique()
    cat = load_catalog(tmp_path / "c.yaml")
    assert cat.name == "my-ifeval" and {c.key for c in cat.categories} == {
        k.split(":")[0] for k in df["instruction_id"]
    }
    out = import_table(
        get_engine(f"sqlite:///{tmp_path / 'p.db'}"),
        (tmp_path / "verdicts.csv").read_bytes(),
        "verdicts.csv",
        dict(m.split("=") for m in IFEVAL_MAP),
        catalog=str(tmp_path / "c.yaml"),
    )
    assert out["catalog"] == "my-ifeval" and out["constraints"] == len(df) and out["judgments"] == 2 * len(df)
