"""Sign in with a built-in account (or OIDC through st.login when configured)."""

import streamlit as st

from pages.components import session, state
from reform_core.services.users import SignInError, sign_in

st.title("Sign in to ReForm")
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
