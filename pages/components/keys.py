"""Keyboard work on the annotation pages (Adjudicate, Rate wordings).

Every action is a button with Streamlit's own ``shortcut`` (shown on the button; Streamlit
ignores single-key shortcuts while a text field has the focus, but not Escape). Two things
Streamlit has no API for are done by constant scripts in a one-pixel ``st.iframe`` of the
same origin, placed at the end of the page so it takes no room where the item is read: no
string from data is ever part of them, and every ``st.html`` on the page stays inert:

* :func:`scroll_to_top` — a new item starts at the top of the page (Streamlit keeps the
  scroll position across reruns);
* :func:`focus_input` — a key that opens a note puts the cursor in it, so the note can be
  typed at once, Enter saves it and Escape leaves it.
"""

from __future__ import annotations

import streamlit as st


def _script(body: str) -> None:
    """Run the constant ``body`` once in a frame of its own (``window.parent`` is the page)."""
    st.iframe(f"<script>{body}</script>", height=1, tab_index=-1, alt="keyboard helper (no content)")


def scroll_to_top(marker: str) -> None:
    """Scroll the main area to the top once per distinct ``marker`` (letters, digits, spaces:
    e.g. ``"item 12"``)."""
    if not marker.replace(" ", "").isalnum():
        raise ValueError(f"marker must be letters, digits and spaces, got {marker!r}")
    _script(
        f"/* {marker} */ for (const el of [window.parent.document.querySelector("
        "'[data-testid=\"stMain\"]'), window.parent.document.scrollingElement]) "
        "{ if (el) el.scrollTo({top: 0}); }"
    )


def focus_input(widget_key: str, nonce: int) -> None:
    """Put the cursor in the text input of widget ``widget_key`` (a key this app chose: letters,
    digits, '_'), retrying for two seconds while the page renders; ``nonce`` makes each
    request a new element (an unchanged one would not run its script again)."""
    if not widget_key.replace("_", "").isalnum():
        raise ValueError(f"widget key must be letters, digits and '_', got {widget_key!r}")
    _script(
        f"/* {nonce} */ const doc = window.parent.document; let tries = 0; const t = setInterval(() => {{ "
        f"const el = doc.querySelector('.st-key-{widget_key} input'); "
        "if (el) { el.focus(); clearInterval(t); } else if (++tries > 40) clearInterval(t); }, 50);"
    )


def legend(pairs: list[tuple[str, str]]) -> None:
    """One caption line naming every key of the page: ``[("A / B", "choose a judge"), …]``."""
    st.caption("Keys: " + " · ".join(f"**{k}** {what}" for k, what in pairs))
