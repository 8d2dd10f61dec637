"""Users (leads): list accounts and create new ones with a role."""

import pandas as pd
import streamlit as st

from pages.components import state
from pages.components.session import require_page
from reform_core.services.auth import ROLES
from reform_core.services.users import MIN_PASSWORD, create_user, list_users

principal = require_page("manage_users")
st.title("Users")
st.caption("Annotators adjudicate and rate wordings; analysts see scores, data and the explorer; leads do everything.")

with st.form("users_create", clear_on_submit=True):
    st.markdown("**New account**")
    c1, c2, c3 = st.columns(3)
    username = c1.text_input("Username")
    display = c2.text_input("Display name (optional)")
    role = c3.selectbox("Role", ROLES)
    c1, c2 = st.columns(2)
    password = c1.text_input(f"Password (at least {MIN_PASSWORD} characters)", type="password")
    again = c2.text_input("Repeat password", type="password")
    submitted = st.form_submit_button("Create account", type="primary")
if submitted:
    if password != again:
        st.error("password: the two entries differ")
    else:
        try:
            created = create_user(state.engine(), principal, username=username.strip(), password=password, role=role,
                                  display_name=display.strip())
        except ValueError as exc:
            st.error(str(exc))
        else:
            st.success(f"Created {created.role} {created.username!r}.")

users = pd.DataFrame(list_users(state.engine(), principal))
st.dataframe(users, hide_index=True)
