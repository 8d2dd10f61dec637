"""Users (leads): list accounts, create new ones with a role, and manage them (role change,
deactivate / activate, password reset, unlock after too many failed sign-ins). With single
sign-on an account needs no password: its e-mail address finds it at its first sign-in."""

import pandas as pd
import streamlit as st

from pages.components import state
from pages.components.render import md, tidy
from pages.components.session import oidc_mode, require_page
from reform_core.services.accounts.auth import ROLES
from reform_core.services.accounts.users import MIN_PASSWORD, create_user, list_users, set_password, update_user

principal = require_page("manage_users")
st.title("Users")
st.caption("Annotators adjudicate and rate wordings; analysts see scores, data and the explorer; leads do everything.")

with st.form("users_create", clear_on_submit=True):
    st.markdown("**New account**")
    c1, c2, c3 = st.columns(3)
    username = c1.text_input("Username")
    display = c2.text_input("Display name (optional)")
    role = c3.selectbox("Role", ROLES)
    c1, c2, c3 = st.columns(3)
    email = c1.text_input("E-mail (finds the account at its first single sign-on)")
    optional = " (optional with single sign-on)" if oidc_mode() else ""
    password = c2.text_input(f"Password (at least {MIN_PASSWORD} characters){optional}", type="password")
    again = c3.text_input("Repeat password", type="password")
    submitted = st.form_submit_button("Create account", type="primary")
if submitted:
    if password != again:
        st.error("password: the two entries differ")
    else:
        try:
            created = create_user(
                state.engine(),
                principal,
                username=username.strip(),
                role=role,
                password=password if password or not oidc_mode() else None,
                display_name=display.strip(),
                email=email.strip() or None,
            )
        except ValueError as exc:
            st.error(str(exc))
        else:
            st.success(f"Created {created.role} {created.username!r}.")

accounts = list_users(state.engine(), principal)
others = [u["username"] for u in accounts if u["username"] != principal.username]
with st.form("users_manage", clear_on_submit=True):
    st.markdown("**Change an account**")
    st.caption(
        "A role change, a deactivation or a password reset ends that person's open sessions at once. "
        "You cannot change your own account here (use the CLI: `user-set`)."
    )
    c1, c2, c3 = st.columns(3)
    who = c1.selectbox("Account", others, index=None, placeholder="Choose an account")
    new_role = c2.selectbox("New role", ["(unchanged)", *ROLES])
    activity = c3.selectbox("Access", ["(unchanged)", "Deactivate", "Activate"])
    c1, c2, c3 = st.columns(3)
    new_password = c1.text_input(f"New password (optional, at least {MIN_PASSWORD} characters)", type="password")
    new_again = c2.text_input("Repeat new password", type="password")
    do_unlock = c3.checkbox("Unlock (forget failed sign-ins)")
    changed = st.form_submit_button("Apply changes")
if changed:
    if who is None:
        st.error("account: choose an account")
    elif new_password != new_again:
        st.error("password: the two entries differ")
    else:
        try:
            if new_password:
                set_password(state.engine(), principal, username=who, password=new_password)
            after = update_user(
                state.engine(),
                principal,
                username=who,
                role=None if new_role == "(unchanged)" else new_role,
                active={"Deactivate": False, "Activate": True}.get(activity),
                unlock=do_unlock,
            )
        except ValueError as exc:
            st.error(str(exc))
        else:
            done = [f"role {after['role']}", "active" if after["active"] else "deactivated"]
            if new_password:
                done.append("password reset")
            if do_unlock:
                done.append("unlocked")
            st.success(f"{md(who)}: " + ", ".join(done) + ".")
            accounts = list_users(state.engine(), principal)

table = pd.DataFrame(
    accounts, columns=["username", "display_name", "email", "role", "active", "locked", "sso_bound", "created_at"]
)
st.dataframe(tidy(table, flags=("active", "locked", "sso_bound")), hide_index=True)
st.caption(
    "sso_bound: the account is bound to a single sign-on identity (issuer, subject); "
    "`python -m reform_core user-bind NAME --clear` unbinds it, and its next sign-in binds it anew."
)
