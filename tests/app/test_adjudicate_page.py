"""The Adjudicate page (AppTest, local mode on the demo project): what the annotator is told
when the queue moves under them (issue 15)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _open(demo_db) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/adjudicate.py").run()
    assert not at.exception, at.exception
    return at


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label.startswith(label))


def _move_lease_to_someone_else(url: str) -> None:
    """Another annotator now holds every claimed task (the local user's lease moved on)."""
    from reform_core.services.uow import get_engine

    eng = get_engine(url)
    with eng.begin() as conn:
        other = conn.execute(text("SELECT id FROM app_user WHERE username = 'someone-else'")).scalar()
        if other is None:
            conn.execute(text("INSERT INTO app_user (username, display_name, role, password_hash, active, created_at) "
                              "VALUES ('someone-else', '', 'annotator', '', TRUE, CURRENT_TIMESTAMP)"))
            other = conn.execute(text("SELECT id FROM app_user WHERE username = 'someone-else'")).scalar()
        conn.execute(text("UPDATE adjudication_task SET claimed_by = :o WHERE status = 'claimed'"), {"o": other})


def test_skip_and_undo_after_the_lease_moved_on_show_one_message(demo_db):
    """Issue 15 item 12: Skip and Undo raised AdjudicationRefused (a traceback) once the item's
    lease had moved to another annotator."""
    at = _open(demo_db)
    _move_lease_to_someone_else(demo_db)
    _button(at, "Skip").click().run()
    assert not at.exception, at.exception
    assert [w.value for w in at.warning if "not held by you" in w.value] == [at.warning[0].value]  # one message
    _move_lease_to_someone_else(demo_db)
    _button(at, "Undo").click().run()
    assert not at.exception, at.exception
    assert [w.value for w in at.warning if "Nothing to undo" in w.value] == [at.warning[0].value]


def test_a_click_acts_on_the_item_on_screen_only(demo_db):
    """A decision click after the lease moved on used to decide the *next* item, claimed in the
    same rerun before the click was handled, which the annotator had never seen. Now it is
    refused with one message and nothing is recorded."""
    from reform_core.services.uow import get_engine

    at = _open(demo_db)
    with get_engine(demo_db).connect() as conn:
        before = conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one()
    _move_lease_to_someone_else(demo_db)
    _button(at, "Judge A is better supported").click().run()
    assert not at.exception, at.exception
    with get_engine(demo_db).connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one() == before
    assert [w.value for w in at.warning if "lease expired" in w.value] == [at.warning[0].value]
