"""Issue 16: on PostgreSQL a first import into empty tables drops their foreign keys for the
load and adds them back after it (db.repo.data.bulk_load). The keys must be there afterwards,
exactly as the migrations made them; a reference the importer would have missed must still fail
(the re-added key validates the whole table); a failed import must leave keys and rows as they
were; a role that does not own the table keeps the per-row checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from db.repo import data as repo
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.reading import ImportFailed
from reform_core.services.platform.uow import get_engine

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "reform_core" / "demo" / "bundle"
KEYS_SQL = (
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE contype = 'f' ORDER BY 1, 2"
)


def _keys(engine) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(KEYS_SQL))]


@pytest.fixture
def every_load_bulk(monkeypatch):
    # the demo bundle is small: take the bulk path for every table, as a paper-scale import does
    monkeypatch.setattr(repo, "BULK_LOAD_MIN_ROWS", 1)


def test_import_keeps_every_foreign_key(postgres_url, every_load_bulk):
    eng = get_engine(postgres_url)
    before = _keys(eng)
    assert any(t == "judgment" for t, _, _ in before)
    counts = import_bundle(eng, BUNDLE)
    assert counts["judgments"] > 0
    assert _keys(eng) == before
    with eng.connect() as conn:  # the keys are enforced again: an unknown response is refused
        judge, cons = conn.execute(text("SELECT judge_id, constraint_id FROM judgment LIMIT 1")).one()
        with pytest.raises(Exception, match="foreign key"):
            conn.execute(
                text(
                    "INSERT INTO judgment (judge_id, response_id, constraint_id, prompt_version, label, "
                    "rationale, status, error, raw, input_tokens, output_tokens, cost_usd, created_at) "
                    "VALUES (:j, 999999, :c, 'x', 1, '', 'ok', '', '', 0, 0, 0, now())"
                ),
                {"j": judge, "c": cons},
            )


def test_a_bad_reference_fails_the_revalidation(postgres_url, every_load_bulk):
    eng = get_engine(postgres_url)
    before = _keys(eng)
    with pytest.raises(Exception, match="foreign key"):
        with eng.begin() as conn:
            with repo.bulk_load(conn, "baseline_feature", 1):
                repo.bulk_insert(
                    conn,
                    "baseline_feature",
                    [{"response_id": 424242, "feature": "bullet_list", "present": True, "source": "t", "evidence": ""}],
                )
    assert _keys(eng) == before
    with eng.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM baseline_feature")).scalar_one() == 0


def test_a_failed_import_leaves_keys_and_rows(postgres_url, every_load_bulk, tmp_path, monkeypatch):
    eng = get_engine(postgres_url)
    before = _keys(eng)
    bad = tmp_path / "bundle"
    bad.mkdir()
    for f in BUNDLE.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    # an adjudication with an empty annotator: found when the decisions are written, after every
    # other table (judgments included) has been loaded with its keys dropped
    lines = (bad / "adjudications.jsonl").read_text().splitlines()
    lines[0] = lines[0].replace('"annotator": "bob"', '"annotator": ""', 1)
    assert '"annotator": ""' in lines[0]
    (bad / "adjudications.jsonl").write_text("\n".join(lines) + "\n")
    loaded = []
    real = repo.bulk_load

    def spy(conn, name, n_rows):
        loaded.append(name)
        return real(conn, name, n_rows)

    monkeypatch.setattr(repo, "bulk_load", spy)
    with pytest.raises(ImportFailed, match="adjudications.jsonl:1: annotator"):
        import_bundle(eng, bad)
    assert "judgment" in loaded  # the failure came after the judgments' bulk load
    assert _keys(eng) == before
    with eng.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM judgment")).scalar_one() == 0


def test_a_role_that_does_not_own_the_table_keeps_the_row_checks(postgres_url, every_load_bulk):
    eng = get_engine(postgres_url)
    role = "reform_t_not_owner"
    with eng.begin() as conn:
        conn.execute(text(f"DROP ROLE IF EXISTS {role}"))
        conn.execute(text(f"CREATE ROLE {role}"))
        conn.execute(text(f"GRANT SELECT, INSERT ON baseline_feature TO {role}"))
        conn.execute(text(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}"))
    try:
        with pytest.raises(Exception, match="foreign key"):
            with eng.begin() as conn:
                conn.execute(text(f"SET LOCAL ROLE {role}"))
                with repo.bulk_load(conn, "baseline_feature", 1):  # not the owner: nothing dropped
                    repo.bulk_insert(
                        conn,
                        "baseline_feature",
                        [
                            {
                                "response_id": 424242,
                                "feature": "bullet_list",
                                "present": True,
                                "source": "t",
                                "evidence": "",
                            }
                        ],
                    )
    finally:
        with eng.begin() as conn:
            conn.execute(text(f"REVOKE ALL ON baseline_feature FROM {role}"))
            conn.execute(text(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {role}"))
            conn.execute(text(f"DROP ROLE {role}"))
