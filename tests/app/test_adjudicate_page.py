"""The Adjudicate page (AppTest, local mode on the demo project): what the annotator is told
when the queue moves under them (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest
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


def _has(at: AppTest, label: str) -> bool:
    return any(b.label.startswith(label) for b in at.button)


def _to_a_disagreement(at: AppTest) -> None:
    """Skip audit items until a disagreement is on screen."""
    for _ in range(50):
        if _has(at, "Judge A is better supported"):
            return
        _button(at, "Skip").click().run()
        assert not at.exception, at.exception
    raise AssertionError("no disagreement in the queue")


def _decide_any(at: AppTest, steps=None) -> None:
    """Decide the item on screen: judge B on a disagreement, "passes" (with an empty note) on an
    audit; ``steps`` (a :class:`_VmSteps`) is reset before the rerun that saves."""
    if not _has(at, "Judge B is better supported"):
        _button(at, "✓ Passes").click().run()  # opens the note field (nothing is written)
    if steps is not None:
        steps.calls = 0
    if _has(at, "Judge B is better supported"):
        _button(at, "Judge B is better supported").click().run()
    else:
        _button(at, "Save “Passes”").click().run()


def _move_lease_to_someone_else(url: str) -> None:
    """Another annotator now holds every claimed task (the local user's lease moved on)."""
    from reform_core.services.platform.uow import get_engine

    eng = get_engine(url)
    with eng.begin() as conn:
        other = conn.execute(text("SELECT id FROM app_user WHERE username = 'someone-else'")).scalar()
        if other is None:
            conn.execute(
                text(
                    "INSERT INTO app_user (username, display_name, role, password_hash, active, created_at) "
                    "VALUES ('someone-else', '', 'annotator', '', TRUE, CURRENT_TIMESTAMP)"
                )
            )
            other = conn.execute(text("SELECT id FROM app_user WHERE username = 'someone-else'")).scalar()
        # single-annotator tasks (a second annotator may still decide a task that needs two)
        conn.execute(
            text("UPDATE adjudication_task SET claimed_by = :o, required = 1 WHERE status = 'claimed'"), {"o": other}
        )


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
    from reform_core.services.platform.uow import get_engine

    at = _open(demo_db)
    _to_a_disagreement(at)
    with get_engine(demo_db).connect() as conn:
        before = conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one()
    _move_lease_to_someone_else(demo_db)
    _button(at, "Judge A is better supported").click().run()
    assert not at.exception, at.exception
    with get_engine(demo_db).connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one() == before
    assert [w.value for w in at.warning if "lease expired" in w.value] == [at.warning[0].value]


@pytest.fixture(scope="module")
def sim_db(tmp_path_factory):
    """A simulated project (no demo) with one small plan; the test adds a big one."""
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.data.simulated import simulate_into
    from reform_core.services.platform.uow import get_engine
    from tests.app.conftest import app_database

    with app_database(f"sqlite:///{tmp_path_factory.mktemp('adj') / 'adj.db'}", load_demo=False) as url:
        eng = get_engine(url)
        simulate_into(eng, seed=3, scale="small")
        small = S.create_plan(eng, local_principal(eng), judge_a="judge_a", judge_b="judge_b", margin=0.3, name="small")
        yield url, small


class _VmSteps:
    """SQLite virtual-machine instructions run on the app's engine (deterministic, unlike time):
    a query that reads a plan's whole task list costs instructions in proportion to it."""

    def __init__(self, engine):
        from sqlalchemy import event

        self.calls = 0
        event.listen(engine, "checkout", lambda dbapi, *_: dbapi.set_progress_handler(self._tick, 100))

    def _tick(self) -> int:
        self.calls += 1
        return 0


def test_a_decision_costs_the_same_in_a_plan_of_any_size(sim_db):
    """Issue 16: the page read the plan's whole task list on every rerun (``my_progress`` and the
    plan list counted tasks): 415 ms at 51k tasks. Now a decision's rerun reads counters, so its
    database work does not grow with the plan, nor with other plans."""
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.adjudication import adjudication as S
    from reform_core.services.platform.uow import get_engine

    url, small = sim_db
    eng = get_engine(url)
    steps = _VmSteps(eng)

    def decision_cost(plan_id: int) -> int:
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.switch_page("pages/adjudicate.py").run()
        at.selectbox(key="adj_plan").set_value(plan_id).run()
        assert not at.exception, at.exception
        with eng.connect() as conn:
            before = conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one()
        costs = []
        for _ in range(3):
            _decide_any(at, steps)
            assert not at.exception, at.exception
            costs.append(steps.calls)
        with eng.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM adjudication")).scalar_one() == before + 3
        return sorted(costs)[1]

    base = decision_cost(small.plan_id)
    big = S.create_plan(
        eng, local_principal(eng), judge_a="judge_a", judge_b="judge_b", margin=0.001, audit=900, name="big"
    )
    assert big.tasks > 20 * small.tasks
    assert decision_cost(small.plan_id) < 1.5 * base  # other plans' size does not matter
    assert decision_cost(big.plan_id) < 1.5 * base  # nor this plan's


# ----------------------------------------------------------------------------- issue 33 item 5: landing


def _page_title(at: AppTest) -> str:
    """The page on screen: Adjudicate shows its item counter, Overview its project title."""
    if [h for h in at.subheader if h.value == "Adjudicate"]:
        return "Adjudicate"
    return "Overview" if at.title and at.title[0].value == "ReForm demo" else "?"


def test_annotators_land_on_their_queue_after_sign_in(team):
    """Annotators landed on Overview; now sign-in (password mode) opens Adjudicate for them,
    and Overview for a lead."""
    for user, password, landing in (("ann-a", "annotator-pw", "Adjudicate"), ("lead-a", "lead-password", "Overview")):
        at = AppTest.from_file(APP, default_timeout=60).run()
        [t for t in at.text_input if t.label == "Username"][0].input(user)
        [t for t in at.text_input if t.label == "Password"][0].input(password)
        [b for b in at.button if b.label == "Sign in"][0].click().run()
        assert not at.exception, at.exception
        assert _page_title(at) == landing, (user, [h.value for h in at.subheader], [t.value for t in at.title])


def test_local_mode_lands_on_the_queue_once_adjudication_is_under_way(tmp_path):
    """Local mode: the demo opens on Overview; once the local user has decided an item in a plan
    with items left, the next session opens on Adjudicate."""
    from tests.app.conftest import app_database

    with app_database(f"sqlite:///{tmp_path / 'local.db'}", load_demo=True) as url:
        at = AppTest.from_file(APP, default_timeout=60).run()
        assert _page_title(at) == "Overview"
        at.switch_page("pages/adjudicate.py").run()
        _decide_any(at)
        assert not at.exception, at.exception
        again = AppTest.from_file(APP, default_timeout=60).run()
        assert not again.exception, again.exception
        assert _page_title(again) == "Adjudicate"
        assert url
