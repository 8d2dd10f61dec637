"""AppTest fixtures: a temporary project database with the demo loaded."""

from __future__ import annotations

import contextlib

import pytest

from reform_core.config import get_settings


def _reset_caches() -> None:
    import streamlit as st

    from reform_core.services.platform.uow import dispose_engines

    get_settings.cache_clear()
    st.cache_resource.clear()
    st.cache_data.clear()
    dispose_engines()


@contextlib.contextmanager
def app_database(url: str, *, load_demo: bool):
    """The app (local mode) pointed at ``url`` for the duration (settings and caches reset)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("REFORM_DATABASE_URL", url)
    mp.setenv("REFORM_LOAD_DEMO", "true" if load_demo else "false")
    mp.setenv("REFORM_AUTH_MODE", "local")
    _reset_caches()
    try:
        yield url
    finally:
        _reset_caches()
        mp.undo()


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    """A SQLite project with the demo loaded, used by every page of a test module."""
    with app_database(f"sqlite:///{tmp_path_factory.mktemp('app') / 'app.db'}", load_demo=True) as url:
        yield url


@pytest.fixture
def team(tmp_path, monkeypatch):
    """Password mode on a demo project with the accounts ``lead-a`` (password ``lead-password``)
    and ``ann-a`` (annotator, ``annotator-pw``)."""
    from reform_core.services.accounts.users import create_user
    from reform_core.services.platform.uow import get_engine
    from reform_core.services.project.setup import ensure_demo

    url = f"sqlite:///{tmp_path / 'team.db'}"
    monkeypatch.setenv("REFORM_DATABASE_URL", url)
    monkeypatch.setenv("REFORM_AUTH_MODE", "password")
    monkeypatch.setenv("REFORM_LOAD_DEMO", "false")
    _reset_caches()
    eng = get_engine(url)
    ensure_demo(eng)  # creates the built-in 'local' principal's row
    create_user(eng, None, username="lead-a", password="lead-password", role="lead")
    create_user(eng, None, username="ann-a", password="annotator-pw", role="annotator")
    yield eng
    _reset_caches()
