"""The parts of an adjudication item on screen, top to bottom: what the item asks, the
constraint, the decision bar, the two judgments (disagreements only), the response and the
instruction. At 1280×800 the constraint, the decision bar and the start of both rationales
are in view without scrolling; the long parts (response, instruction) come after.

Every string from data is shown inertly (``show_markdown`` / ``show_raw`` / ``st.text``)."""

from __future__ import annotations

import streamlit as st

from pages.components.render import show_markdown, show_raw
from reform_core.services.adjudication.adjudication import Item

HEADINGS = 3  # a "#" heading inside untrusted text renders as h4: below the page's own headings

ASKS = {
    "disagreement": (
        "**The judges disagree.** Which judgment does the response support better? "
        "(Judge A and Judge B: the two judges in a random order.)"
    ),
    "audit": (
        "**Agreement check:** both judges gave this constraint the same verdict. Is it right? Give **your "
        "own verdict** on the response — theirs is not shown, so that yours is independent."
    ),
}


def asks(item: Item) -> None:
    """What the item asks of the annotator (a disagreement, or a check of an agreement)."""
    st.markdown(ASKS["audit" if item.is_audit else "disagreement"])


def constraint(item: Item) -> None:
    """The constraint under review with its acceptance criteria, in one bordered box."""
    c = item.constraint
    with st.container(border=True, key=f"adj_constraint_{item.task_id}"):
        st.text(f"Constraint under review · {c['mode']} · {c['feature_name']} (#{c['position']})")
        show_markdown(f"{c['text']}\n\n*Acceptance criteria:* {c['acceptance']}", heading_offset=HEADINGS)


def judgments(item: Item) -> None:
    """Both judgments side by side (a disagreement); an audit shows none (see :data:`ASKS`)."""
    if item.is_audit:
        return
    for col, side, j in zip(st.columns(2), ("A", "B"), (item.judge_a, item.judge_b)):
        with col, st.container(border=True, key=f"adj_judge_{side}_{item.task_id}"):
            verdict = {1: "✅ pass", 0: "❌ fail"}.get(j.label, "– no label")
            st.markdown(f"**Judge {side}: {verdict}**")
            show_markdown(j.rationale or "*(no rationale)*", heading_offset=HEADINGS)


def response_and_instruction(item: Item) -> None:
    st.subheader("Response")
    with st.container(border=True, key=f"adj_response_{item.task_id}"):
        rendered, raw = st.tabs(["Rendered", "Raw (line numbers)"])
        with rendered:
            show_markdown(item.response, heading_offset=HEADINGS)  # inert: raw HTML escaped, links not live
        with raw:
            show_raw(item.response)
    with st.container(key=f"adj_instruction_{item.task_id}"):
        st.subheader("Instruction")
        show_markdown(item.instruction, heading_offset=HEADINGS)
        if item.other_constraints:
            with st.expander("The other constraints of this instruction"):
                for o in item.other_constraints:
                    st.text(f"#{o['position']} {o['mode']} · {o['feature_name']}")
                    show_markdown(f"{o['text']}\n\n*Acceptance:* {o['acceptance']}", heading_offset=HEADINGS)
