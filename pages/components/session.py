"""The signed-in principal of this browser session."""

from __future__ import annotations

import streamlit as st

from pages.components.state import engine
from reform_core.config import get_settings
from reform_core.services.auth import Principal

PRINCIPAL_KEY = "reform_principal"


def local_mode() -> bool:
    return get_settings().auth_mode == "local"


def oidc_mode() -> bool:
    return get_settings().auth_mode == "oidc"


def remote_client() -> bool:
    """Whether this browser connects from another machine (the TCP peer is not loopback;
    Streamlit reports loopback peers as ``None``, and AppTest has no real peer)."""
    return isinstance(st.context.ip_address, str)


def current_principal() -> Principal | None:
    """The principal for this session: the local lead in local mode (only for a browser on this
    machine), the account matching the OIDC identity (``st.user.email``) in oidc mode, else
    whoever signed in with a password."""
    if local_mode() and remote_client():
        return None  # local mode makes the visitor the lead: never for another machine
    p = st.session_state.get(PRINCIPAL_KEY)
    if p is None and local_mode():
        from reform_core.services.users import local_principal

        p = st.session_state.setdefault(PRINCIPAL_KEY, local_principal(engine()))
    if p is None and oidc_mode() and st.user.is_logged_in:
        from reform_core.services.users import principal_for_identity

        p = principal_for_identity(engine(), str(st.user.get("email") or ""))
        if p is not None:
            st.session_state[PRINCIPAL_KEY] = p
    return p


def sign_in(principal: Principal) -> None:
    st.session_state.clear()  # no state carried across identities (session fixation)
    st.session_state[PRINCIPAL_KEY] = principal


def sign_out() -> None:
    st.session_state.clear()
    if oidc_mode() and st.user.is_logged_in:
        st.logout()


def through_app() -> None:
    """Run page scripts only through ``app.py``'s navigation.

    Because ``pages/`` lies next to ``app.py``, Streamlit starts each process in its old
    multipage mode, in which a direct link (``/users``) runs the page script alone, without
    ``app.py``, until the first session of the process has run ``app.py``. A page script that
    finds itself run that way switches the process to ``st.navigation`` and reruns, so
    ``app.py`` (sign-in, navigation, role checks) decides what this visitor sees.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        import runpy
        from pathlib import Path

        PagesManager.uses_pages_directory = False
        runpy.run_path(str(Path(__file__).resolve().parents[2] / "app.py"), run_name="__main__")
        st.stop()


def require_page(action: str) -> Principal:
    """Stop rendering unless the principal may perform ``action`` (server-side check)."""
    from reform_core.services.auth import AccessDenied, require

    through_app()
    try:
        return require(current_principal(), action)
    except AccessDenied as exc:
        st.error(str(exc))
        st.stop()
        raise
