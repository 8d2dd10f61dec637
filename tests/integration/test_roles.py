"""Roles end to end: each role's navigation, server-side checks in every service the analysis
and admin pages call, and the pages themselves refusing a principal without the right role."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages.components.nav import PAGES
from reform_core.config import get_settings
from reform_core.services.accounts.auth import AccessDenied, Principal
from reform_core.services.accounts.users import create_user, list_users
from reform_core.services.platform.uow import dispose_engines, get_engine
from reform_core.services.project import explore
from reform_core.services.project.export import export
from reform_core.services.project.setup import ensure_demo

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
ANNOTATOR, ANALYST, LEAD = (
    Principal(1001, "ann", "annotator"),
    Principal(1002, "ana", "analyst"),
    Principal(1003, "lee", "lead"),
)

EXPECTED_PAGES = {
    "annotator": {"pages/overview.py"},
    "analyst": {"pages/overview.py", "pages/data.py", "pages/scores.py", "pages/explore.py"},
    "lead": {
        "pages/overview.py",
        "pages/data.py",
        "pages/scores.py",
        "pages/explore.py",
        "pages/export.py",
        "pages/users.py",
    },
}


@pytest.mark.parametrize("principal", [ANNOTATOR, ANALYST, LEAD], ids=lambda p: p.role)
def test_navigation_per_role(principal):
    visible = {spec.path for spec in PAGES if principal.can(spec.action)}
    mine = {p for p in visible if p in EXPECTED_PAGES["lead"]}  # pages of other areas may add entries
    assert mine == EXPECTED_PAGES[principal.role]


def test_every_page_checks_its_action_first():
    for spec in PAGES:
        src = (ROOT / spec.path).read_text(encoding="utf-8")
        assert f'require_page("{spec.action}")' in src, f"{spec.path} must call require_page({spec.action!r})"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('roles') / 'demo.db'}"
    ensure_demo(get_engine(url))
    yield get_engine(url), url
    dispose_engines()


def _calls(engine, tmp):
    result = explore.scores(engine, LEAD)
    frame = explore.explore_frame(LEAD, result)
    return {
        "scores": (lambda p: explore.scores(engine, p), {"analyst", "lead"}),
        "judges": (lambda p: explore.judges(engine, p), {"analyst", "lead"}),
        "intervals": (lambda p: explore.score_intervals(p, result, n_boot=5), {"analyst", "lead"}),
        "condition_tables": (lambda p: explore.condition_tables(p, result), {"analyst", "lead"}),
        "failing_units": (
            lambda p: explore.failing_units(p, result, model="quill-2", task_type="advice"),
            {"analyst", "lead"},
        ),
        "explore_frame": (lambda p: explore.explore_frame(p, result), {"analyst", "lead"}),
        "filter_instances": (lambda p: explore.filter_instances(p, frame, explore.Filters()), {"analyst", "lead"}),
        "example": (lambda p: explore.example(engine, p, model="quill-2", question="q01"), {"analyst", "lead"}),
        "export": (lambda p: export(engine, tmp / (p.role if p else "none"), principal=p, n_boot=5), {"lead"}),
        "export_archive": (lambda p: explore.export_archive(engine, p), {"lead"}),
        "list_users": (lambda p: list_users(engine, p), {"lead"}),
        # principal=None is the documented CLI bootstrap of services/accounts/users.py
        "create_user": (
            lambda p: create_user(
                engine, p, username=f"new-{p.role if p else 'cli'}", password="long-enough-1", role="annotator"
            ),
            {"lead", "anonymous"},
        ),
    }


def test_services_refuse_roles_without_permission(demo, tmp_path):
    engine, _ = demo
    for name, (call, allowed) in _calls(engine, tmp_path).items():
        for principal in (None, ANNOTATOR, ANALYST, LEAD):
            role = principal.role if principal else "anonymous"
            if role in allowed:
                call(principal)
            else:
                with pytest.raises(AccessDenied):
                    call(principal)
                    pytest.fail(f"{name} let {role} through")


# ----------------------------------------------------------------------------- AppTest, password mode


@pytest.fixture
def password_app(demo, monkeypatch):
    import streamlit as st

    _, url = demo
    monkeypatch.setenv("REFORM_DATABASE_URL", url)
    monkeypatch.setenv("REFORM_AUTH_MODE", "password")
    monkeypatch.setenv("REFORM_LOAD_DEMO", "false")
    get_settings.cache_clear()
    st.cache_resource.clear()
    st.cache_data.clear()
    yield url
    get_settings.cache_clear()
    st.cache_resource.clear()


def _sign_in(at: AppTest, username: str, password: str) -> None:
    at.text_input[0].input(username)
    at.text_input[1].input(password)
    at.button[0].click().run()


def test_unsigned_session_sees_only_sign_in(password_app):
    """Any page's address shows the sign-in form in its place and nothing of the page (issue 15
    items 7 and 13: the address resolves, so a shared link survives sign-in)."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Sign in to ReForm"]
    for spec in PAGES:
        at.switch_page(spec.path).run()
        assert not at.exception, (spec.path, at.exception)
        assert [t.value for t in at.title] == ["Sign in to ReForm"], spec.path
        assert not at.dataframe and not at.metric and not at.get("vega_lite_chart"), spec.path


def test_annotator_cannot_open_scores(password_app, demo):
    """Issue 15 item 13: a page the role may not open says "not permitted" (it used to say the
    page "does not seem to exist") and shows nothing of the page."""
    engine, _ = demo
    try:
        create_user(engine, None, username="ann-app", password="annotator-pw-1", role="annotator")
    except ValueError:
        pass  # already created by a previous run of this module
    at = AppTest.from_file(APP, default_timeout=60).run()
    _sign_in(at, "ann-app", "annotator-pw-1")
    assert not at.exception, at.exception
    assert at.session_state["reform_principal"].role == "annotator"
    assert at.metric, "the annotator's overview renders"
    at.switch_page("pages/scores.py").run()
    assert any("Not permitted" in e.value for e in at.error), [e.value for e in at.error]
    assert not at.dataframe and not at.get("vega_lite_chart")


@pytest.mark.parametrize("path, action", [("pages/export.py", "export"), ("pages/users.py", "manage users")])
def test_analyst_cannot_open_lead_pages(password_app, path, action):
    page = AppTest.from_file(str(ROOT / path), default_timeout=60)
    page.session_state["reform_principal"] = ANALYST
    page.run()
    assert any(f"may not {action}" in e.value for e in page.error)
    assert not page.button and not page.dataframe


def test_every_polling_fragment_rechecks_the_session_first():
    """Issue 15 item 13: a fragment's rerun (a click inside it, or its ``run_every`` polling)
    does not pass through app.py, so each one re-checks the session before showing anything:
    a deactivated user's open tab loses access (``tests/e2e/test_walkthrough.py`` in a browser)."""
    import ast

    for path in sorted((ROOT / "pages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef) or not any(
                "fragment" in ast.unparse(d) for d in node.decorator_list
            ):
                continue
            body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            first = ast.unparse(body[0]) if body else ""
            assert first == "leave_if_signed_out()", f"{path.name}:{node.lineno} {node.name}() starts with {first!r}"
