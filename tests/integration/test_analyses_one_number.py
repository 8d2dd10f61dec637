"""Issue 34 item 5: the Scores page, ``analyses --json`` and ``export`` compute the auxiliary
analyses with one replicate count and seed by default, so they show the same intervals (the
export used 500 replicates and the page 200: Table 3's interval differed by ~1 pp)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from reform_core import display
from reform_core.services.accounts.users import local_principal
from reform_core.services.platform.uow import dispose_engines, get_engine
from reform_core.services.project.export import export
from reform_core.services.scoring.analyses import N_BOOT
from tests.app.conftest import app_database
from tests.integration.analyses_project import write_broken_project

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("table3_composition", "prompting", "table_a4_coverage", "table4_correlation")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("one_number")
    url = f"sqlite:///{root / 'p.db'}"
    write_broken_project(url)
    cli = subprocess.run(
        [sys.executable, "-m", "reform_core", "analyses", "--db", url, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    manifest = export(get_engine(url), root / "out", principal=local_principal(get_engine(url)))  # its defaults
    yield url, json.loads(cli.stdout), manifest, root / "out"
    dispose_engines()


def test_cli_and_export_use_the_same_replicates_and_give_equal_intervals(project):
    _, cli, manifest, out = project
    assert cli["intervals"]["replicates"] == manifest["analyses"]["intervals"]["replicates"] == N_BOOT
    assert cli["intervals"]["seed"] == manifest["analyses"]["intervals"]["seed"] == 0
    for key in TABLES:
        stem = manifest["analyses"]["files"][key]
        exported = pd.DataFrame(json.loads((out / f"{stem}.json").read_text(encoding="utf-8")))
        shown = pd.DataFrame(cli["tables"][key])
        assert list(shown.columns) == list(exported.columns), key
        pd.testing.assert_frame_equal(shown, exported, check_exact=False, rtol=0, atol=1e-9, check_dtype=False)


def test_the_page_shows_the_exports_intervals(project):
    url, cli, manifest, out = project
    with app_database(url, load_demo=False):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240).run()
        at.switch_page("pages/scores.py").run()
    assert not at.exception, at.exception
    assert any(f"({N_BOOT} replicates, seed 0)" in c.value for c in at.caption)
    t3 = next(d.value for d in at.dataframe if "separate %" in d.value.columns)
    exported = pd.DataFrame(
        json.loads((out / f"{manifest['analyses']['files']['table3_composition']}.json").read_text(encoding="utf-8"))
    )
    assert len(t3) == len(exported) > 0
    for (_, page), (_, ref) in zip(t3.iterrows(), exported.iterrows()):
        for col, label in (("separate", "separate"), ("joint", "joint"), ("delta_pp", "Δ")):
            expected = display.show(ref[col], ref[f"{col}_pop_low"], ref[f"{col}_pop_high"], ref["n"])
            assert page[f"{label} pop."] == expected.interval, (ref["model"], ref["measure"], col)
