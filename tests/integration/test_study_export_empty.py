"""An export of a project without MOSAIC or WISE studies writes the study files without loading
the study services (issue 16: export start-up); the files must be byte for byte the ones the
services write for no study, and the column lists kept in study_export the services' own."""

from __future__ import annotations

from pathlib import Path

from reform_core.services.accounts.users import cli_principal
from reform_core.services.data.importer import import_bundle
from reform_core.services.platform.uow import get_engine
from reform_core.services.project import study_export
from reform_core.services.project.export_files import write_table

BUNDLE = Path(__file__).resolve().parents[2] / "reform_core" / "demo" / "bundle"


def test_no_study_files_are_the_services_files(sqlite_url, tmp_path, monkeypatch):
    eng = get_engine(sqlite_url)
    import_bundle(eng, BUNDLE)
    who = cli_principal(eng)
    assert not study_export.has_studies(eng)
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    fast.mkdir()
    slow.mkdir()
    files_fast: list[str] = []
    got_fast = study_export.write_study_tables(eng, who, fast, files_fast, write=write_table, n_boot=50)
    monkeypatch.setattr(study_export, "has_studies", lambda engine: True)  # through the services
    files_slow: list[str] = []
    got_slow = study_export.write_study_tables(eng, who, slow, files_slow, write=write_table, n_boot=50)
    assert files_fast == files_slow and len(files_fast) == 3 * 9  # 9 tables, CSV + Parquet + JSON each
    for name in files_fast:
        assert (fast / name).read_bytes() == (slow / name).read_bytes(), name
    assert got_fast == got_slow

    from reform_core.services.studies import mosaic, wise

    assert list(mosaic.check_rows(eng, who).columns) == study_export.CHECK_COLUMNS
    assert list(wise.outputs(eng, who).columns) == study_export.OUTPUT_COLUMNS
