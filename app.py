"""ReForm — Streamlit entry point: settings, sign-in, role-based navigation.

Run with ``streamlit run app.py``. The database comes from ``REFORM_DATABASE_URL``
(default: a SQLite file under ./data); an empty database gets the demo project.
"""

import streamlit as st

from pages.components import session, state
from pages.components.nav import PAGES

st.set_page_config(page_title="ReForm", page_icon="✅", layout="wide")

state.engine()  # open / migrate / seed once per process
principal = session.current_principal()

if principal is None:
    pg = st.navigation([st.Page("pages/signin.py", title="Sign in", icon="🔑")])
else:
    sections: dict[str, list] = {}
    for spec in PAGES:
        if principal.can(spec.action):
            sections.setdefault(spec.section, []).append(
                st.Page(spec.path, title=spec.title, icon=spec.icon, default=not sections)
            )
    with st.sidebar:
        if session.local_mode():
            st.caption("Local single-user mode: you act as the lead **local**. "
                       "Set `REFORM_AUTH_MODE=password` for accounts and roles.")
        else:
            st.caption(f"Signed in as **{principal.username}** ({principal.role})")
            if st.button("Sign out"):
                session.sign_out()
                st.rerun()
    pg = st.navigation(sections, expanded=True)
pg.run()
