"""Deep links through single sign-on: the page (and its query parameters) a visitor opened
before signing in is where they land after it.

Password mode signs in on the opened address itself. ``st.login`` instead leaves for the
provider, whose callback lands on the app's home page; so the sign-in page, shown in place of
the opened page, keeps that page's address in a short-lived cookie (``reform_return_to``,
``SameSite=Lax``, 15 minutes), and the first run after sign-in switches to it. Only a page
registered with ``st.navigation`` is opened, with the query parameters parsed as data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, quote, unquote, urlencode

import streamlit as st

COOKIE = "reform_return_to"
MAX_AGE_S = 900
DONE_KEY = "reform_return_done"
FORGOTTEN_KEY = "reform_return_forgotten"
_SAFE = re.compile(r"[0-9A-Za-z._~%-]{1,2000}")  # what quote(..., safe="") produces


def _cookie() -> str | None:
    try:
        return st.context.cookies.get(COOKIE)
    except Exception:  # noqa: BLE001 - no browser request (AppTest, bare mode)
        return None


def _write(value: str, max_age: int) -> None:
    st.html(
        f"<script>document.cookie = '{COOKIE}={value}; Path=/; Max-Age={max_age}; SameSite=Lax';</script>",
        unsafe_allow_javascript=True,
    )


def encode(url_path: str, pairs: list[tuple[str, str]]) -> str | None:
    """The cookie value for a page and its query parameters (percent-encoded: letters, digits
    and ``._~%-`` only), or None when it is the bare home page or too long to keep."""
    if not url_path and not pairs:
        return None
    value = quote(url_path + ("?" + urlencode(pairs) if pairs else ""), safe="")
    return value if _SAFE.fullmatch(value) else None


def decode(value: str | None, known: Mapping) -> tuple[str, list[tuple[str, str]]] | None:
    """The page's URL path and query parameters of a cookie value, or None unless the path is
    one of ``known`` (the registered pages)."""
    if not value or not _SAFE.fullmatch(value):
        return None
    path, _, query = unquote(value).partition("?")
    if path not in known:
        return None
    return path, parse_qsl(query, keep_blank_values=True)[:50]


def remember(url_path: str) -> None:
    """On the sign-in page: keep the opened page (``url_path``) and its query parameters."""
    pairs = [(k, v) for k in st.query_params for v in st.query_params.get_all(k)]
    value = encode(url_path, pairs)
    if value is not None and value != _cookie():
        _write(value, MAX_AGE_S)
    elif value is None and _cookie() is not None:
        _write("", 0)


def resume(pages: Mapping, current: str) -> None:
    """After sign-in: once per session, open the kept page when this run is the bare home page
    (where ``st.login`` lands), and forget it either way."""
    kept = _cookie()
    if kept is None or st.session_state.get(FORGOTTEN_KEY):
        return
    if st.session_state.get(DONE_KEY):  # the switched-to run: the cookie is read once, now drop it
        st.session_state[FORGOTTEN_KEY] = True
        _write("", 0)
        return
    st.session_state[DONE_KEY] = True
    target = decode(kept, pages)
    if target is None or current or len(st.query_params):
        st.session_state[FORGOTTEN_KEY] = True
        _write("", 0)
        return
    path, pairs = target
    query: dict[str, list[str]] = {}
    for k, v in pairs:
        query.setdefault(k, []).append(v)
    st.switch_page(pages[path], query_params=query)
