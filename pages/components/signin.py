"""The sign-in form (password accounts, or OIDC through st.login when configured).

``app.py`` shows it in place of any page while nobody is signed in, so the address the
visitor opened (a shared Explore link with its query parameters) is still the address
after sign-in.
"""

from __future__ import annotations

import streamlit as st

from pages.components import session, state


def render() -> None:
    st.title("Sign in to ReForm")
    if session.oidc_mode():
        if st.user.is_logged_in:
            st.error("No active ReForm account for this identity; ask a lead to create one (user-add).")
            st.text(str(st.user.get("email") or ""))
            st.button("Log out", on_click=st.logout)
        else:
            st.button("Log in with your identity provider", type="primary", on_click=st.login)
        return
    from reform_core.services.users import SignInError, prepare_sign_in, sign_in

    prepare_sign_in()

    if session.session_ended():
        st.info("Your session has ended (signed out elsewhere, expired, or your account was changed by a lead). "
                "Sign in again.")
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
