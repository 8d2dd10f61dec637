"""The sign-in form (password accounts, or OIDC through st.login when configured).

``app.py`` shows it in place of any page while nobody is signed in, so the address the
visitor opened (a shared Explore link with its query parameters) is still the address
after sign-in (with single sign-on, through ``return_to``).
"""

from __future__ import annotations

import streamlit as st

from pages.components import return_to, session, state
from pages.components.render import md


def _render_sso(url_path: str) -> None:
    """Single sign-on: the provider's button, or why the signed-in identity may not use ReForm
    (every claim shown as plain text)."""
    return_to.remember(url_path)
    refusal = session.sso_refusal()
    if refusal is None or refusal.reason in ("ended", "userinfo", "invalid"):  # a new sign-in may do
        if refusal is not None:
            (st.info if refusal.reason == "ended" else st.error)(md(refusal))
        st.button("Sign in with your identity provider", type="primary", on_click=st.login)
        st.caption(
            "Back here after signing in at the provider? It refused ReForm's request: "
            "a lead finds the reason in the app's log."
        )
        return
    st.error(md(refusal))
    if refusal.reason in ("no_email", "not_verified"):
        st.caption("Your sign-in identity, for a lead who binds your account (issuer, subject):")
        st.code(f"--issuer {st.user.get('iss')} --subject {st.user.get('sub')}", language=None, wrap_lines=True)
    c1, c2 = st.columns(2)
    c1.button("Try again", help="After a lead has invited, reactivated or bound your account.")
    c2.button("Sign out", on_click=session.sign_out)


def render(url_path: str = "") -> None:
    st.title("Sign in to ReForm")
    if session.oidc_mode():
        _render_sso(url_path)
        return
    from reform_core.services.accounts.users import SignInError, prepare_sign_in, sign_in

    prepare_sign_in()

    if session.session_ended():
        st.info(
            "Your session has ended (signed out elsewhere, expired, or your account was changed by a lead). "
            "Sign in again."
        )
    with st.form("signin"):
        username = st.text_input("Username")
        password = st.text_input("Password", type="password")
        submitted = st.form_submit_button("Sign in", type="primary")
    if submitted:
        try:
            principal = sign_in(state.engine(), username, password)
        except SignInError as exc:
            st.error(str(exc))
        else:
            session.sign_in(principal)
            st.rerun()
