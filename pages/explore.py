"""Explore: filter judged examples, open one model's answers to a question side by side
(baseline and every variant) with per-constraint labels, rationales and p_u.

Every filter and the open example live in the URL (``f_<filter>``, ``model``, ``question``,
``instruction``), so any view can be shared as a link.
"""

import pandas as pd
import streamlit as st

from pages.components import render
from pages.components.session import require_page
from reform_core.services.project import explore
from reform_core.services.scoring.scoring import ScoringError

PAGE_SIZE = 50
principal = require_page("explore")
st.title("Explore examples")

try:
    frame, p_by_iid = render.explore_frame(principal)
except ScoringError as exc:
    st.info(f"Nothing to explore yet: {render.md(exc)}")
    st.stop()

params = st.query_params.to_dict()
try:
    from_url = explore.Filters.from_params(params)
except ValueError as exc:
    st.error(f"Ignoring the link's filters: {render.md(exc)}")
    from_url = explore.Filters()

# Widgets start from the URL when they have no state yet (first visit, or after another page).
if "explore_p" not in st.session_state:
    for name, value in vars(from_url).items():
        st.session_state[f"explore_{name}"] = value
    st.session_state["explore_p"] = (from_url.p_min, from_url.p_max)
    raw_page = str(params.get("page", "1"))
    st.session_state["explore_page"] = int(raw_page) if raw_page.isdigit() and int(raw_page) >= 1 else 1


def options(col: str) -> list[str]:
    return [""] + sorted(map(str, frame[col].cat.categories))


def pick(container, label: str, name: str, choices: list[str]) -> str:
    key = f"explore_{name}"
    if st.session_state.get(key, "") not in choices:  # a value from an old link
        st.session_state[key] = ""
    return container.selectbox(label, choices, key=key, format_func=lambda v: v or "any")


with st.container(border=True):
    c = st.columns(6)
    model = pick(c[0], "Model", "model", options("model"))
    task = pick(c[1], "Task type", "task", options("task_type"))
    domain = pick(c[2], "Domain", "domain", options("domain"))
    category = pick(c[3], "Category", "category", options("category"))
    feature = pick(c[4], "Feature", "feature", options("feature"))
    mode = pick(c[5], "Mode", "mode", ["", "require", "forbid"])
    c = st.columns([1, 1, 1, 3])
    opposed = pick(c[0], "Baseline", "opposed", ["", "opposed", "aligned", "unknown"])
    agree = pick(c[1], "Judges", "agree", ["", "agree", "disagree"])
    adjudicated = pick(c[2], "Adjudicated", "adjudicated", ["", "yes", "no"])
    p_min, p_max = c[3].slider("Calibrated p", 0.0, 1.0, step=0.01, key="explore_p")

filters = explore.Filters(
    model=model,
    task=task,
    domain=domain,
    feature=feature,
    category=category,
    mode=mode,
    opposed=opposed,
    agree=agree,
    adjudicated=adjudicated,
    p_min=p_min,
    p_max=p_max,
)
if filters != from_url:
    st.session_state["explore_page"] = 1  # new filters: back to the first page

page = st.session_state.get("explore_page", 1)
rows, total = explore.filter_instances(principal, frame, filters, page=page - 1, page_size=PAGE_SIZE)
pages = max(1, -(-total // PAGE_SIZE))
if page > pages:
    page = st.session_state["explore_page"] = pages
    rows, total = explore.filter_instances(principal, frame, filters, page=page - 1, page_size=PAGE_SIZE)
st.number_input(f"Page (of {pages:,}; {total:,} matching instances)", min_value=1, max_value=pages, key="explore_page")

shown, columns = render.explore_table(rows, explore.pair(render.state.engine(), principal).pair)
event = st.dataframe(
    shown, hide_index=True, on_select="rerun", selection_mode="single-row", key="explore_rows", column_config=columns
)
selected = event.selection.rows if event and event.selection else []
if selected:
    row = rows.iloc[selected[0]]
    ex_model, ex_question, ex_instruction = str(row["model"]), str(row["question"]), str(row["instruction"])
else:
    ex_model, ex_question, ex_instruction = (
        params.get("model", ""),
        params.get("question", ""),
        params.get("instruction", ""),
    )

link = {**filters.to_params(), **({"page": str(page)} if page > 1 else {})}
if ex_question:
    link.update(
        {
            "model": ex_model or model,
            "question": ex_question,
            **({"instruction": ex_instruction} if ex_instruction else {}),
        }
    )
if link != params:
    st.query_params.from_dict(link)

if not ex_question:
    st.caption("Select a row to open its example; the page URL is a shareable link to what you see.")
    st.stop()

ex_model = ex_model or model or str(frame["model"].cat.categories[0])
ex = explore.example(render.state.engine(), principal, model=ex_model, question=ex_question, p=p_by_iid)
if ex is None:
    st.error(f"No example for model “{render.md(ex_model)}” and question “{render.md(ex_question)}”.")
    st.stop()

q = ex["question"]
st.subheader(" · ".join(render.md(q[k]) for k in ("key", "task_type", "domain")) + f" — {render.md(ex_model)}")
render.show_markdown(q["text"])
judges = ex["judges"]
cons = ex["constraints"]
resp = ex["responses"]
base = resp[resp["kind"] == "baseline"]
variants = resp[resp["kind"] != "baseline"].copy()
variants["_first"] = variants["instruction"] != ex_instruction  # the linked variant first
variants = variants.sort_values(["_first", "instruction"])


raw_view = st.toggle("Show raw text with line numbers (what the judges saw)", key="explore_raw")


def show_response(text: str) -> None:
    if raw_view:  # statements, not an expression: Streamlit's magic would write its value (None)
        render.show_raw(text)
    else:
        render.show_markdown(text, box=True)


def show_constraints(c: pd.DataFrame) -> None:
    lines, details = [], []
    for _, r in c.iterrows():  # judge names are column suffixes: item access, not attributes
        labels = " · ".join(f"{render.md(j)}: {render.label_text(r.get(f'label_{j}'))}" for j in judges)
        human = f" · human: **{render.label_text(r['decision'])}**" if pd.notna(r["decision"]) else ""
        lines.append(
            f"{render.p_badge(r['p'])} **{r['position']}. {render.md(r['feature'])}** ({render.md(r['mode'])}) — {labels}{human}"
        )
        details.append(f"{r['position']}. {r['constraint_text']}\n   acceptance: {r['acceptance'] or '—'}")
        details += [f"   {j}: {r.get(f'rationale_{j}') or '—'}" for j in judges]
        if pd.notna(r["decision"]):
            details.append(f"   decided by {r['decided_by'] or '?'}")
    st.markdown("  \n".join(lines))
    with st.expander("constraints, acceptance criteria and rationales"):
        st.text("\n".join(details))


panels = [("baseline (no formatting constraints)", base.iloc[0] if len(base) else None, None)]
panels += [
    (
        f"{'⭐ ' if v.instruction == ex_instruction else ''}{render.md(v.instruction)} · {render.md(v.condition)}",
        v,
        cons[cons["instruction"] == v.instruction],
    )
    for v in variants.itertuples()
]
for start in range(0, len(panels), 3):
    for col, (title, r, c) in zip(st.columns(3), panels[start : start + 3]):
        with col, st.container(border=True):
            st.markdown(f"**{title}**")
            if r is None:
                st.caption("No baseline response.")
                continue
            if c is not None:
                with st.expander("instruction"):
                    st.text(r.instruction_text or "")
                show_constraints(c)
            show_response(r.text)
