"""AppTest fixtures: a temporary project database with the demo loaded."""

from __future__ import annotations

import pytest

from reform_core.config import get_settings


def _reset_caches() -> None:
    import streamlit as st

    from reform_core.services.uow import dispose_engines

    get_settings.cache_clear()
    st.cache_resource.clear()
    st.cache_data.clear()
    dispose_engines()


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    """A SQLite project with the demo loaded, used by every page of a test module."""
    url = f"sqlite:///{tmp_path_factory.mktemp('app') / 'app.db'}"
    mp = pytest.MonkeyPatch()
    mp.setenv("REFORM_DATABASE_URL", url)
    mp.setenv("REFORM_LOAD_DEMO", "true")
    mp.setenv("REFORM_AUTH_MODE", "local")
    _reset_caches()
    yield url
    _reset_caches()
    mp.undo()
