"""The manifest's ``dataset_sha256``: SHA-256 over ``repr`` of every row of the input queries,
one row at a time (the definition every export so far has used). The export reads the rows in
batches through the driver's cursor; the hash must stay the one this literal loop gives, on
SQLite and PostgreSQL alike, and change when a judgment does."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import text

from reform_core.services.data.importer import import_bundle
from reform_core.services.platform.uow import get_engine
from reform_core.services.project.export_files import dataset_hash

BUNDLE = Path(__file__).resolve().parents[2] / "reform_core" / "demo" / "bundle"
QUERIES = [
    "SELECT key, text FROM question ORDER BY key",
    "SELECT i.key, c.position, c.feature, c.mode, c.text FROM constraint_item c JOIN instruction i ON i.id = c.instruction_id "
    "ORDER BY i.key, c.position",
    "SELECT m.name, r.variant, r.text FROM response r JOIN eval_model m ON m.id = r.model_id ORDER BY m.name, r.variant, "
    "r.question_id",
    "SELECT j.name, g.response_id, g.constraint_id, g.prompt_version, g.label FROM judgment g JOIN judge j ON j.id = g.judge_id "
    "ORDER BY j.name, g.response_id, g.constraint_id, g.prompt_version",
    "SELECT task_id, user_id, choice, label FROM adjudication ORDER BY id",
]


def _literal(engine) -> str:
    h = hashlib.sha256()
    with engine.connect() as conn:
        for q in QUERIES:
            for row in conn.execute(text(q)):
                h.update(repr(tuple(row)).encode("utf-8"))
    return h.hexdigest()


def test_dataset_hash_is_the_row_by_row_hash(any_db_url):
    eng = get_engine(any_db_url)
    import_bundle(eng, BUNDLE)
    first = dataset_hash(eng)
    assert first == _literal(eng)
    with eng.begin() as conn:
        conn.execute(
            text(
                "UPDATE judgment SET label = 1 - label WHERE id = (SELECT MIN(id) FROM judgment WHERE label IS NOT NULL)"
            )
        )
    assert dataset_hash(eng) == _literal(eng) != first


def test_the_hash_started_beside_the_export_is_the_same_hash(any_db_url, monkeypatch):
    """The CLI's export computes the hash in a forked child on its own connection while it
    scores; the app (other threads running) computes it in place. Both give the literal hash;
    a child that fails leaves the parent to compute it."""
    import threading

    from reform_core.services.project import export_files as X

    eng = get_engine(any_db_url)
    import_bundle(eng, BUNDLE)
    want = _literal(eng)
    assert threading.active_count() == 1
    assert X.dataset_hash_started(eng)() == want  # forked
    with eng.connect() as conn:  # the parent's pooled connection survives the child's exit
        assert conn.execute(text("SELECT COUNT(*) FROM judgment")).scalar() > 0
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        calls = []
        monkeypatch.setattr(X, "dataset_hash", lambda e: calls.append(e) or want)
        assert X.dataset_hash_started(eng)() == want and calls == [
            eng
        ]  # in place: forking a threaded process is unsafe
    finally:
        stop.set()
        other.join()
    monkeypatch.undo()

    def broken(engine):
        raise RuntimeError("the child cannot read")

    monkeypatch.setattr(X, "dataset_hash", broken)  # the forked child inherits the broken function …
    wait = X.dataset_hash_started(eng)
    monkeypatch.setattr(X, "dataset_hash", lambda e: want)  # … the parent's own computation answers
    assert wait() == want
