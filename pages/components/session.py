"""The signed-in principal of this browser session.

Password mode keeps the session in a signed session token (``reform_core.services.accounts.users``):
in this Streamlit session's state, and in a cookie (``reform_session``, ``SameSite=Strict``)
so that a reload, a typed address or a link opened in a new tab (each a new Streamlit
session) is still signed in. The token is checked against the database on every run, so
sign-out, deactivation and a role change end it at once, in every open tab.

Single sign-on (``REFORM_AUTH_MODE=oidc``) signs in through ``st.login``; the identity in
Streamlit's signed login cookie (``st.user``) is checked against its account on every run
(``reform_core.services.accounts.sso``), with the same 12-hour limit and the same revocations.
"""

from __future__ import annotations

import logging

import streamlit as st

from pages.components.state import engine
from reform_core.config import get_settings
from reform_core.services.accounts.auth import Principal

PRINCIPAL_KEY = "reform_principal"
TOKEN_KEY = "reform_token"
ENDED_KEY = "reform_session_ended"
REFUSAL_KEY = "reform_sso_refusal"
COOKIE = "reform_session"
_log = logging.getLogger("reform.sso")
_logged: set[str] = set()


def local_mode() -> bool:
    return get_settings().auth_mode == "local"


def oidc_mode() -> bool:
    return get_settings().auth_mode == "oidc"


def remote_client() -> bool:
    """Whether this browser connects from another machine (the TCP peer is not loopback;
    Streamlit reports loopback peers as ``None``, and AppTest has no real peer)."""
    return isinstance(st.context.ip_address, str)


def _cookie_token() -> str | None:
    try:
        return st.context.cookies.get(COOKIE)
    except Exception:  # noqa: BLE001 - no browser request (AppTest, bare mode)
        return None


def _password_principal() -> Principal | None:
    """The principal of this session's token (from a sign-in in this tab, else the cookie of
    an earlier one), checked against the database now; None (and the tab signed out) once
    it is expired or revoked."""
    from reform_core.services.accounts.users import session_principal

    token = st.session_state.get(TOKEN_KEY)
    if token is None:
        if PRINCIPAL_KEY in st.session_state:  # set by server code only (tests), never by a browser
            return st.session_state[PRINCIPAL_KEY]
        token = None if st.session_state.get(ENDED_KEY) else _cookie_token()
        if token is None:
            return None
        p = session_principal(engine(), token)
        if p is not None:
            st.session_state[TOKEN_KEY], st.session_state[PRINCIPAL_KEY] = token, p
        return p
    p = session_principal(engine(), token)
    if p is None:  # signed out elsewhere, deactivated, role changed, or expired
        st.session_state.clear()
        st.session_state[ENDED_KEY] = True
    else:
        st.session_state[PRINCIPAL_KEY] = p
    return p


def oidc_ready() -> bool:
    """Whether single sign-on is configured and its provider answers (checked once per process);
    otherwise show the one-line reason (also logged once) and return False."""
    from pages.components.render import md
    from pages.components.state import oidc_provider
    from reform_core.services.accounts.oidc_provider import OidcConfigError

    try:
        oidc_provider()
    except OidcConfigError as exc:
        if str(exc) not in _logged:
            _logged.add(str(exc))
            _log.error("single sign-on cannot start: %s", exc)
        st.error(f"Single sign-on cannot start: {md(exc)}")
        return False
    return True


def _userinfo() -> dict:
    """The provider's userinfo claims for the signed-in identity (asked with its access token)."""
    from pages.components.state import oidc_provider
    from reform_core.services.accounts.oidc_provider import UserinfoError, fetch_userinfo
    from reform_core.services.accounts.sso import SignInRefused

    try:
        return fetch_userinfo(oidc_provider().userinfo_endpoint, st.user.tokens.to_dict().get("access"))
    except UserinfoError as exc:
        _log.warning("single sign-on: %s", exc)
        raise SignInRefused(
            "userinfo", f"ReForm could not read your e-mail address from your identity provider ({exc}); sign in again."
        ) from None


def _oidc_principal() -> Principal | None:
    """The account of the identity Streamlit signed in (``st.user``), checked now; None, with the
    reason kept for the sign-in page, when it may not use ReForm."""
    from reform_core.services.accounts.sso import SignInRefused, sso_principal

    st.session_state.pop(REFUSAL_KEY, None)
    if not st.user.is_logged_in:
        return None
    try:
        return sso_principal(engine(), st.user.to_dict(), userinfo=_userinfo)
    except SignInRefused as exc:
        st.session_state[REFUSAL_KEY] = exc
        return None


def sso_refusal():
    """Why the signed-in SSO identity may not use ReForm now (``SignInRefused``), or None."""
    return st.session_state.get(REFUSAL_KEY)


def current_principal() -> Principal | None:
    """The principal for this session: the local lead in local mode (only for a browser on this
    machine), the account bound to the signed-in SSO identity in oidc mode, else the owner of
    this session's token (password mode)."""
    if local_mode():
        if remote_client():
            return None  # local mode makes the visitor the lead: never for another machine
        p = st.session_state.get(PRINCIPAL_KEY)
        if p is None:
            from reform_core.services.accounts.users import local_principal

            p = st.session_state.setdefault(PRINCIPAL_KEY, local_principal(engine()))
        return p
    if oidc_mode():
        return _oidc_principal()  # checked on every run
    return _password_principal()


LANDING_KEY = "reform_landing"
QUEUE_PAGE = "pages/adjudicate.py"


def landing_page(principal: Principal | None, default: str) -> tuple[str, bool]:
    """The page this session opens on (``/``) and whether it was decided just now (the first
    signed-in run of the session): an annotator's queue (Adjudicate) after sign-in; in local
    mode the queue when the local user has adjudication under way (decisions in a plan that
    still needs some); else ``default`` (the Overview). Decided once per session, so
    the address of the page on screen never changes under the user."""
    if principal is None:
        return default, False
    if LANDING_KEY in st.session_state:
        return st.session_state[LANDING_KEY], False
    if principal.role == "annotator" and not local_mode():
        landing = QUEUE_PAGE
    elif local_mode() and principal.can("adjudicate"):
        from reform_core.services.adjudication.adjudication import has_queue_to_resume

        landing = QUEUE_PAGE if has_queue_to_resume(engine(), principal) else default
    else:
        landing = default
    st.session_state[LANDING_KEY] = landing
    return landing, True


def still_signed_in() -> bool:
    """Re-check the session now (for fragments and callbacks, which do not rerun ``app.py``):
    False once it was revoked (deactivation, role change, sign-out in another tab)."""
    return current_principal() is not None


def leave_if_signed_out() -> None:
    """For the top of a fragment (a fragment's rerun, and its ``run_every`` polling, does not
    pass through ``app.py``): once the session is revoked, rerun the whole app, which then
    shows the sign-in form instead of the page."""
    if not still_signed_in():
        st.rerun(scope="app")


def session_ended() -> bool:
    """Whether this tab's session ended without a sign-out here (revoked or expired)."""
    return bool(st.session_state.get(ENDED_KEY)) and not st.session_state.get("reform_signed_out")


def sign_in(principal: Principal) -> None:
    """Start a session for ``principal`` (after a password sign-in): a new token, kept in this
    tab's state and written to the cookie by :func:`persist`."""
    from reform_core.services.accounts.users import issue_session

    st.session_state.clear()  # no state carried across identities (session fixation)
    st.session_state[TOKEN_KEY] = issue_session(engine(), principal)


def persist() -> None:
    """Write this tab's session token to the cookie, so a reload or a new tab stays signed in,
    and delete a cookie that signs nobody in (after a sign-out, a revocation or expiry). The
    script holds only a token this server issued, checked to be letters, digits, '.', '-', '_'."""
    import re

    from reform_core.services.accounts.users import SESSION_HOURS

    token = st.session_state.get(TOKEN_KEY)
    if token is not None and _cookie_token() != token and re.fullmatch(r"[0-9A-Za-z._-]{1,400}", token):
        st.html(
            f"<script>document.cookie = '{COOKIE}={token}; Path=/; Max-Age={int(SESSION_HOURS * 3600)}; "
            "SameSite=Strict' + (location.protocol === 'https:' ? '; Secure' : '');</script>",
            unsafe_allow_javascript=True,
        )
    elif token is None and _cookie_token() is not None:  # signed out, revoked or expired: forget it
        st.html(
            f"<script>document.cookie = '{COOKIE}=; Path=/; Max-Age=0; SameSite=Strict';</script>",
            unsafe_allow_javascript=True,
        )


def sign_out() -> None:
    """End this session: its token (password mode), or this sign-in's session and Streamlit's
    login cookie, and the provider's session where it offers RP-initiated logout (oidc)."""
    if oidc_mode():
        from reform_core.services.accounts.sso import end_sso_session

        st.session_state.clear()
        if st.user.is_logged_in:
            end_sso_session(engine(), st.user.to_dict())
            st.logout()
        return
    from reform_core.services.accounts.users import end_session

    end_session(engine(), st.session_state.get(TOKEN_KEY) or _cookie_token())
    st.session_state.clear()
    st.session_state[ENDED_KEY] = True
    st.session_state["reform_signed_out"] = True


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
    from reform_core.services.accounts.auth import AccessDenied, require

    through_app()
    try:
        return require(current_principal(), action)
    except AccessDenied as exc:
        st.error(str(exc))
        st.stop()
        raise
