"""backup / restore / doctor on SQLite and PostgreSQL, and built-in accounts."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from db.engine import make_engine
from reform_core.services.accounts.auth import AccessDenied, Principal
from reform_core.services.accounts.users import SignInError, create_user, sign_in, unlock
from reform_core.services.data.importer import import_bundle
from reform_core.services.data.status import status
from reform_core.services.platform.uow import dispose_engines, get_engine
from reform_core.services.project.operations import OperationFailed, backup, doctor, restore
from tests.integration.test_import import make_bundle


def test_backup_restore_round_trip(tmp_path, any_db_url):
    eng = get_engine(any_db_url)
    import_bundle(eng, make_bundle(tmp_path / "b"))
    before = status(eng)
    bak = tmp_path / "snap.bak"
    backup(any_db_url, bak)
    with eng.begin() as conn:  # a change after the snapshot
        conn.execute(text("DELETE FROM adjudication"))
        conn.execute(
            text(
                "INSERT INTO question (key, text, task_type, domain, language, source) "
                "VALUES ('late', 'x', '', '', '', '')"
            )
        )
    assert status(eng) != before
    restore(any_db_url, bak)
    dispose_engines()
    assert status(get_engine(any_db_url)) == before
    assert doctor(get_engine(any_db_url))["ok"]


def test_restore_rejects_a_non_backup(tmp_path, sqlite_url):
    junk = tmp_path / "junk.bak"
    junk.write_bytes(b"this is not a database")
    with pytest.raises(OperationFailed, match="not a ReForm SQLite backup"):
        restore(sqlite_url, junk)
    with pytest.raises(OperationFailed, match="no such backup file"):
        restore(sqlite_url, tmp_path / "missing.bak")


def test_doctor_flags_old_schema_and_orphans(tmp_path, any_db_url):
    raw = make_engine(any_db_url)  # not migrated
    with raw.begin() as conn:
        conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
    eng = get_engine(any_db_url)  # upgrades
    report = doctor(eng)
    assert report["ok"], report
    if eng.dialect.name == "sqlite":
        import sqlite3

        path = eng.url.database
        con = sqlite3.connect(path)  # foreign keys off: simulate a corrupted/hand-edited file
        con.execute(
            "INSERT INTO adjudication (task_id, choice, note, seconds, created_at) VALUES (999, 'A', '', 0, '2026-01-01')"
        )
        con.commit()
        con.close()
        report = doctor(eng)
        assert not report["ok"]
        bad = [c for c in report["checks"] if not c["ok"]]
        assert bad[0]["check"] == "orphans: adjudications without task" and bad[0]["detail"] == "1 row(s)"
    raw.dispose()


def test_accounts_hashing_and_throttle(sqlite_url):
    eng = get_engine(sqlite_url)
    lead = create_user(eng, None, username="lead1", password="correct horse", role="lead")
    ann = create_user(eng, lead, username="ann", password="annotator-pw", role="annotator")
    with eng.connect() as conn:
        h = conn.execute(text("SELECT password_hash FROM app_user WHERE username='ann'")).scalar_one()
    assert h.startswith("$argon2id$") and "annotator-pw" not in h
    assert sign_in(eng, "ann", "annotator-pw") == ann
    with pytest.raises(AccessDenied):
        create_user(eng, ann, username="x", password="12345678", role="lead")
    with pytest.raises(SignInError, match="Wrong username or password"):
        sign_in(eng, "nobody", "whatever1")
    for _ in range(5):
        with pytest.raises(SignInError):
            sign_in(eng, "ann", "wrong-password")
    with pytest.raises(SignInError, match="Too many failed attempts"):
        sign_in(eng, "ann", "annotator-pw")  # even the right password is refused while throttled
    unlock(eng, lead, username="ann")
    assert isinstance(sign_in(eng, "ann", "annotator-pw"), Principal)
