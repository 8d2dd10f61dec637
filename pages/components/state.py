"""The app's cached resources and session-state keys (the only st.cache_* wrappers)."""

from __future__ import annotations

import streamlit as st

from reform_core.config import get_settings

USER_KEY = "reform_user"


@st.cache_resource(show_spinner="Opening the project database…")
def engine():
    """One engine per process; upgrades the schema and loads the demo on first start."""
    from reform_core.services.platform.uow import get_engine
    from reform_core.services.project.setup import ensure_demo

    s = get_settings()
    eng = get_engine(s.database_url)
    if s.load_demo:
        ensure_demo(eng)
    return eng


@st.cache_resource
def score_cache():
    """The process's scored states (one per labelling, bounded; see
    ``reform_core.services.scoring.score_state``)."""
    from reform_core.services.scoring.score_state import ScoreCache

    return ScoreCache(max_states=2)


def clear_data_caches() -> None:
    """Call after a write so cached reads are recomputed."""
    st.cache_data.clear()


def auth_settings() -> dict:
    """The ``[auth]`` section of ``.streamlit/secrets.toml`` as a plain dict ({} without one)."""
    try:
        auth = st.secrets.get("auth")
    except FileNotFoundError:  # no secrets file, or one that cannot be parsed (its text is never shown)
        return {}
    if auth is None:
        return {}
    return auth.to_dict() if hasattr(auth, "to_dict") else dict(auth)


@st.cache_resource(show_spinner="Checking the identity provider…")
def oidc_provider():
    """The identity provider of ``REFORM_AUTH_MODE=oidc``, its ``[auth]`` configuration and
    metadata checked once per process (``OidcConfigError`` is not cached: the next run checks
    again, so a provider that was down at start is picked up once it answers)."""
    from reform_core.services.accounts.oidc_provider import check_auth_config

    return check_auth_config(auth_settings())
