"""The export (docs/formats.md#exports): every file plus the manifest, hashes, instances.csv columns, and an export
recomputed from its own files by the CLI (``score-export``) equals ``score``."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from reform_core.services.accounts.users import local_principal
from reform_core.services.platform.uow import dispose_engines, get_engine
from reform_core.services.project.explore import export_archive
from reform_core.services.project.export import export
from reform_core.services.project.setup import ensure_demo

ROOT = Path(__file__).resolve().parents[2]
SPEC_COLUMNS = [
    "model",
    "question",
    "instruction",
    "condition",
    "pair_group",
    "task_type",
    "position",
    "feature",
    "category",
    "mode",
    "baseline_opposed",
    "p",
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('export') / 'demo.db'}"
    ensure_demo(get_engine(url))
    yield url
    dispose_engines()


def _cli(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "reform_core", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def exported(demo, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    listed = _cli("export", "--db", demo, "--out", str(out), "--json")
    return out, listed


def test_manifest_lists_every_file_and_hashes_match(exported):
    out, listed = exported
    manifest = json.loads((out / "manifest.json").read_text())
    on_disk = {p.name for p in out.iterdir()}
    assert on_disk == set(manifest["files"]) | {"manifest.json"}
    assert sorted(listed["files"]) == sorted(on_disk)
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name
    assert {
        "table2.csv",
        "table_a8_units.csv",
        "intervals.csv",
        "instances.csv",
        "estimator_clusters.csv",
        "both_wrong.csv",
        "annotators.csv",
    } <= on_disk
    assert manifest["calibration"]["rule"] == manifest["estimator"] == "cluster"  # the demo opens a default plan
    assert manifest["estimator_plan"] == "demo queue" and manifest["verdict"]["metric"] == "tcpr"
    assert set(manifest["intervals"]) >= {"measurement", "population", "replicates", "seed", "level"}
    ci = pd.read_csv(out / "intervals.csv")
    assert list(ci.columns) == [
        "model",
        "metric",
        "estimate",
        "measurement_lo",
        "measurement_hi",
        "population_lo",
        "population_hi",
    ]
    for m, r in manifest["models"].items():
        assert set(r["intervals"]) == {"measurement", "population"} and "both_wrong" in r, m
    assert {a["annotator"] for a in manifest["annotators"]} == {"alice", "bob", "carol"}


def test_stratified_export_keeps_the_paper_files(demo, tmp_path):
    eng = get_engine(demo)
    manifest = export(eng, tmp_path, principal=local_principal(eng), calibration="stratified", n_boot=200)
    assert manifest["estimator"] == "stratified" and "strata.csv" in manifest["files"]
    assert "estimator_clusters.csv" not in manifest["files"]
    ci = pd.read_csv(tmp_path / "intervals.csv")
    assert (ci["measurement_lo"] <= ci["estimate"] + 1e-9).all() and (
        ci["estimate"] <= ci["population_hi"] + 1e-9
    ).all()
    recomputed = _cli("score-export", str(tmp_path), "--json")["models"]
    t2 = pd.read_csv(tmp_path / "table2.csv").set_index("model")
    for model, r in recomputed.items():
        assert r["tcpr"] == pytest.approx(t2.loc[model, "tcpr"], abs=1e-6)
    assert len(manifest["dataset_sha256"]) == 64


def test_instances_csv_has_exactly_the_spec_columns(exported, demo):
    out, _ = exported
    inst = pd.read_csv(out / "instances.csv")
    judges = json.loads((out / "manifest.json").read_text())["judge_pair"]
    assert len(judges) == 2
    assert list(inst.columns) == (
        SPEC_COLUMNS + [f"label_{j}" for j in judges] + ["source", "provisional", "stratum", "p_auxiliary"]
    )
    assert inst["p"].between(0, 1).all()
    status = _cli("status", "--db", demo, "--json")
    assert len(inst) * 2 == status["judgments"], "one row per judged (response, constraint) pair, two judges each"


def test_score_export_recomputes_score(exported, demo):
    out, _ = exported
    scored = _cli("score", "--db", demo, "--json")["models"]
    recomputed = _cli("score-export", str(out), "--json")["models"]
    assert set(scored) == set(recomputed)
    for model, s in scored.items():
        r = recomputed[model]
        assert r["units"] == s["units"]
        for k in ("tcpr", "emcr", "r1", "r2", "r3"):
            assert r[k] == pytest.approx(s[k], abs=1e-6), (model, k)


def test_page_archive_holds_the_same_files_as_the_cli(exported, demo):
    out, _ = exported
    eng = get_engine(demo)
    data, manifest = export_archive(eng, local_principal(eng))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert set(zf.namelist()) == {p.name for p in out.iterdir()}
        cli_inst = (out / "instances.csv").read_bytes()
        assert zf.read("instances.csv") == cli_inst, "same calibration, same data: identical instances.csv"
    assert manifest["files"]["instances.csv"] == hashlib.sha256(cli_inst).hexdigest()


def test_export_checks_role(demo, tmp_path):
    from reform_core.services.accounts.auth import AccessDenied, Principal

    with pytest.raises(AccessDenied):
        export(get_engine(demo), tmp_path, principal=Principal(999, "ana", "analyst"))
    assert not any(tmp_path.iterdir()), "nothing written when access is denied"
