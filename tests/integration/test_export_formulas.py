"""Issue 34 item 6: exports never carry a live spreadsheet formula. A bundle whose names and
notes are formulas (``=HYPERLINK(…)``, ``+1+1…``, ``-1+1…``, ``@1+1…``) and a WISE study with such
model names are imported and exported; every cell of every CSV is read back: no text cell
starts with ``= + - @``, tab or carriage return (numbers aside), while JSON and Parquet keep
the raw values and ``score-export`` still recomputes the scores under the raw names."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest

from reform_core.services.accounts.users import local_principal
from reform_core.services.data.importer import import_bundle
from reform_core.services.platform.uow import dispose_engines, get_engine
from reform_core.services.project.export import export, recompute
from reform_core.services.scoring import scoring
from reform_core.services.studies import generations
from tests.hostile_names import FORMULA_NOTE, write_formula_bundle

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
DEMO_MODELS = ("helix-pro", "quill-2", "pixel-mini")


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("formulas")
    names = write_formula_bundle(root / "bundle")
    url = f"sqlite:///{root / 'x.db'}"
    eng = get_engine(url)
    import_bundle(eng, root / "bundle")
    lead = local_principal(eng)
    scoring.set_pair(eng, lead, names[("judge", "gpt-judge")], names[("judge", "gemini-judge")])
    gens = pd.DataFrame(
        [
            {
                "item": f"@item{t}",
                "model": m,
                "provider": "-p",
                "form": f,
                "target": t,
                "repetition": 0,
                "output": " ".join(["w"] * t),
            }
            for t in (5, 8)
            for m in ("=cmd|' /C calc'!A0", "+m2")
            for f in ("POS", "NEG")
        ]
    )
    generations.import_generations(eng, lead, data=gens.to_csv(index=False).encode(), filename="g.csv", study="=study")
    out = root / "out"
    export(eng, out, principal=lead, calibration="stratified", n_boot=50, seed=0)
    yield out, names
    dispose_engines()


def test_no_csv_cell_starts_a_formula(exported):
    out, _ = exported
    files = sorted(out.glob("*.csv"))
    assert len(files) > 20
    neutralised = 0
    for path in files:
        with path.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        header, body = rows[0], rows[1:]
        assert not [h for h in header if h.startswith(TRIGGERS)], path.name
        for j, name in enumerate(header):
            cells = [r[j] for r in body if r[j] != ""]
            if cells and all(_number(c) for c in cells):
                continue  # a numeric column: "-3.5" is a number, not a formula
            bad = [c for c in cells if c.startswith(TRIGGERS)]
            assert bad == [], f"{path.name}: column {name}: {bad[:3]}"
            neutralised += sum(c.startswith("'") and c[1:2] in "=+-@" for c in cells)
    assert neutralised > 1000, "the hostile names reached many cells, each neutralised"
    with (out / "adjudications.csv").open(newline="", encoding="utf-8") as fh:
        notes = [r["note"] for r in csv.DictReader(fh)]
    assert notes and set(notes) == {"'" + FORMULA_NOTE}
    with (out / "wise_outputs.csv").open(newline="", encoding="utf-8") as fh:
        models = {r["model"] for r in csv.DictReader(fh)}
    assert models == {"'=cmd|' /C calc'!A0", "'+m2"}, "study exports are neutralised too"


def test_json_and_parquet_keep_the_raw_values(exported):
    out, names = exported
    notes = {r["note"] for r in json.loads((out / "adjudications.json").read_text(encoding="utf-8"))}
    assert notes == {FORMULA_NOTE}
    assert set(pd.read_parquet(out / "adjudications.parquet")["note"]) == {FORMULA_NOTE}
    raw_models = {names[("model", m)] for m in DEMO_MODELS}
    assert set(pd.read_parquet(out / "instances.parquet")["model"]) == raw_models
    assert set(pd.read_parquet(out / "wise_outputs.parquet")["model"]) == {"=cmd|' /C calc'!A0", "+m2"}


def test_score_export_reads_its_neutralised_csv_back_under_the_raw_names(exported):
    out, names = exported
    raw_models = {names[("model", m)] for m in DEMO_MODELS}
    assert set(recompute(out)["models"]) == raw_models
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["models"]) == raw_models
