"""Sign in with a built-in account (or OIDC through st.login when configured)."""

import streamlit as st

from pages.components import session, state
from reform_core.services.users import SignInError, sign_in

st.title("Sign in to ReForm")
if session.oidc_mode():
    if st.user.is_logged_in:
        st.error(f"No active ReForm account for {st.user.get('email')!s}; ask a lead to create one (user-add).")
        st.button("Log out", on_click=st.logout)
    else:
        st.button("Log in with your identity provider", type="primary", on_click=st.login)
    st.stop()
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
