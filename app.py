"""ReForm — Streamlit entry point: settings, sign-in, role-based navigation.

Run with ``streamlit run app.py``. The database comes from ``REFORM_DATABASE_URL``
(default: a SQLite file under ./data); an empty database gets the demo project.

Every page is registered with ``st.navigation`` for everybody, so a typed or shared address
always resolves: a visitor who is not signed in gets the sign-in form in its place (the
address and its query parameters are kept for after sign-in, through the identity provider
too), a role that may not open a page gets "not permitted", and the menu lists only the pages
the role may open. Single sign-on (``REFORM_AUTH_MODE=oidc``) first checks its ``[auth]``
configuration and the provider's metadata, and refuses every page with one line until they
are usable.

Annotators land on their queue (Adjudicate) after sign-in; in local mode the app opens on it
once the local user has adjudication under way (``session.landing_page``); everyone else on
the Overview.
"""

import streamlit as st

from pages.components import errors, return_to, session, signin, state
from pages.components.nav import PAGES
from pages.components.render import MARKDOWN_CSS, md

st.set_page_config(page_title="ReForm", page_icon="✅", layout="wide")
st.html(MARKDOWN_CSS)  # a constant stylesheet: untrusted Markdown's headings stay below the page's, responses boxed

state.engine()  # open / migrate / seed once per process
if session.oidc_mode() and not session.oidc_ready():  # [auth] and the provider, checked once per process
    st.stop()
principal = session.current_principal()

sections: dict[str, list] = {}
by_page = {}
page_of = {}
hidden = []
landing, just_signed_in = session.landing_page(principal, PAGES[0].path)  # annotators: their queue
for spec in PAGES:
    allowed = principal is not None and principal.can(spec.action)
    page = st.Page(
        spec.path,
        title=spec.title,
        icon=spec.icon,
        default=spec.path == landing,
        visibility="visible" if allowed else "hidden",
    )
    by_page[page.url_path], page_of[page.url_path] = spec, page
    if allowed:
        sections.setdefault(spec.section, []).append(page)
    else:
        hidden.append(page)
if sections:
    next(iter(sections.values())).extend(hidden)  # registered (addresses resolve) but not listed
else:
    sections = {"": hidden}
pg = st.navigation(sections, position="sidebar" if principal else "hidden", expanded=True)

if principal is None:
    if session.local_mode():
        st.error(
            "ReForm runs in local single-user mode, which serves only a browser on the machine it runs on. "
            "A team sets REFORM_AUTH_MODE=password (or oidc) and creates accounts; see "
            "docs/operations.md."
        )
    else:
        session.persist()  # deletes the cookie of an ended session
        signin.render(pg.url_path)
    st.stop()
if session.oidc_mode():
    return_to.resume(page_of, pg.url_path)  # the page opened before single sign-on

with st.sidebar:
    if session.local_mode():
        st.caption(
            "Local single-user mode: you act as the lead **local**. "
            "Set `REFORM_AUTH_MODE=password` for accounts and roles."
        )
    else:
        st.caption(f"Signed in as {md(principal.username)} ({principal.role})")
        st.button("Sign out", on_click=session.sign_out)  # a callback: st.logout's redirect is not cut by a rerun
        session.persist()  # the session cookie: a reload or a new tab stays signed in

spec = by_page[pg.url_path]
if just_signed_in and spec.path == PAGES[0].path != landing:  # the sign-in form stood on "/", the Overview's
    st.switch_page(next(p for u, p in page_of.items() if by_page[u].path == landing))  # place while signed out
if not principal.can(spec.action):
    st.title(spec.title)
    st.error(f"Not permitted: your role ({principal.role}) may not open this page.")
    st.stop()
errors.run_page(pg)  # an unexpected error: a short message with an error id, never a traceback
