"""Unexpected errors on a page: a short message with an error id for the reader, the traceback
with the same id in the server log — never a traceback on the page.

``app.py`` runs every page through :func:`run_page`; a fragment (which Streamlit reruns on its
own, outside the page) is wrapped with :func:`guard`. The test suite sets
``REFORM_RAISE_PAGE_ERRORS=true`` so that a failing page fails its test as an exception. Streamlit's own control flow
(``st.stop``, ``st.rerun``, ``st.switch_page``) derives from ``BaseException`` and passes
through untouched. ``client.showErrorDetails = "none"`` (``.streamlit/config.toml``) is the
backstop for anything that escapes both.
"""

from __future__ import annotations

import functools
import logging
import uuid
from typing import Callable

import streamlit as st

from reform_core.config import get_settings

log = logging.getLogger("reform.pages")


def report(exc: BaseException) -> str:
    """Log ``exc`` with its traceback under a new error id, show the short message; the id.
    Re-raises instead where the settings ask for it (``REFORM_RAISE_PAGE_ERRORS``: the tests)."""
    if get_settings().raise_page_errors:
        raise exc
    error_id = uuid.uuid4().hex[:10]
    log.error("page error %s: %s", error_id, type(exc).__name__, exc_info=exc)
    st.error(
        f"Something went wrong on this page (error id {error_id}). The rest of the app still works; "
        "reload the page to try again, and give the error id to whoever runs ReForm — the server log "
        "has the details under that id."
    )
    return error_id


def run_page(page) -> None:
    """``page.run()`` with any unexpected error reported (:func:`report`) instead of raised."""
    try:
        page.run()
    except Exception as exc:  # noqa: BLE001 - the page's last line of defence
        report(exc)


def guard(fn: Callable) -> Callable:
    """``fn`` (a fragment's body) with any unexpected error reported instead of raised."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - see run_page
            report(exc)
            return None

    return wrapped
