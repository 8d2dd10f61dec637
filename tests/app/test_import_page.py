"""The Import page (issue 14, point 4): a CSV mapped column by column, imported all or nothing."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from reform_core.services.platform.uow import get_engine
from tests.app.conftest import app_database

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TABLE = (
    b"llm,pid,prompt,feature,mode,answer,gpt says,why\n"
    b"m1,p1,Describe tides.,bullet_list,require,- a\\n- b,1,two bullets\n"
    b"m1,p1,Describe tides.,checklist,forbid,- a\\n- b,0,\n"
)


def _page(url: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/import_data.py").run()
    assert not at.exception, at.exception
    return at


def _map(at: AppTest, mapping: dict[str, str]) -> None:
    for box in at.text_input:
        column = box.label.removeprefix("Column ").replace("\\", "")
        if column in mapping:
            box.set_value(mapping[column])


def test_import_page_maps_columns_and_writes_all_or_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'p.db'}"
    with app_database(url, load_demo=False):
        at = _page(url)
        at.file_uploader[0].set_value(("bad.csv", TABLE.replace(b",0,\n", b",maybe,\n"), "text/csv")).run()
        # columns named like a field are preset; the others are mapped by hand
        assert {b.label: b.value for b in at.text_input}["Column prompt"] == "prompt"
        _map(
            at,
            {"llm": "model", "pid": "question", "answer": "response", "gpt says": "label:gpt", "why": "rationale:gpt"},
        )
        at.button(key="import_go").click().run()
        assert not at.exception, at.exception
        assert any("Nothing was written" in e.value for e in at.error)
        assert any("bad.csv:3: 'gpt says' (label:gpt): expected 1, 0" in c.value for c in at.code)
        with get_engine(url).connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM question")).scalar() == 0

        at.file_uploader[0].set_value(("good.csv", TABLE, "text/csv")).run()
        _map(
            at,
            {"llm": "model", "pid": "question", "answer": "response", "gpt says": "label:gpt", "why": "rationale:gpt"},
        )
        at.button(key="import_go").click().run()
        assert not at.exception, at.exception
        assert any("Imported 2 row(s) against catalog reformbench" in s.value for s in at.success), [
            e.value for e in at.error
        ]
        with get_engine(url).connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT g.label, g.rationale, r.text FROM judgment g JOIN response r "
                    "ON r.id = g.response_id ORDER BY g.id"
                )
            ).all()
        assert rows == [(1, "two bullets", "- a\\n- b"), (0, "", "- a\\n- b")]


def test_annotators_cannot_open_the_import_page(demo_db):
    from pages.components.session import PRINCIPAL_KEY
    from reform_core.services.accounts.auth import Principal

    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state[PRINCIPAL_KEY] = Principal(user_id=999, username="ann", role="annotator")
    at.run()
    at.switch_page("pages/import_data.py").run()
    assert not at.file_uploader
    assert any("annotator" in e.value for e in at.error), [e.value for e in at.error]


OWN_TABLE = (
    b"model,question,prompt,feature,mode,gpt\n"
    b"m1,p1,Describe tides.,numbered_steps,require,1\n"
    b"m1,p1,Describe tides.,plain_words,forbid,0\n"
)
OWN_CATALOG = """\
name: tides
version: "1"
categories:
  - {key: layout, name: Layout}
features:
  - key: numbered_steps
    name: Numbered steps
    category: layout
    definition: Numbered steps.
    modes: [require]
    require_template: "Number the steps."
    acceptance: {require: "Steps are numbered."}
  - key: plain_words
    name: Plain words
    category: layout
    definition: Only everyday words.
    modes: [forbid]
    forbid_template: "Do not use jargon."
    acceptance: {forbid: "No jargon."}
"""


def test_import_page_takes_an_own_catalog_file_checked_with_located_errors(tmp_path):
    """Issue 32 item 3: a lead uploads their own catalog; a broken one is refused with
    file:line: field: message, a good one is used and stored with the project."""
    url = f"sqlite:///{tmp_path / 'p.db'}"
    with app_database(url, load_demo=False):
        at = _page(url)
        at.file_uploader[0].set_value(("own.csv", OWN_TABLE, "text/csv")).run()
        _map(at, {"gpt": "label:gpt"})
        at.selectbox(key="import_catalog").set_value("your own catalog file…").run()
        assert not at.exception, at.exception
        broken = OWN_CATALOG.replace("category: layout\n    definition: Only", "category: style\n    definition: Only")
        at.file_uploader(key="import_catalog_file").set_value(("tides.yaml", broken.encode(), "text/yaml")).run()
        assert any("This catalog cannot be used" in e.value for e in at.error)
        line = broken.splitlines().index("    category: style") + 1
        assert any(
            f"tides.yaml:{line}: features.1.category: feature 'plain_words': unknown category 'style'" in c.value
            for c in at.code
        ), [c.value for c in at.code]
        assert not any(b.key == "import_go" for b in at.button)  # nothing to import with a broken catalog

        at.file_uploader(key="import_catalog_file").set_value(("tides.yaml", OWN_CATALOG.encode(), "text/yaml")).run()
        _map(at, {"gpt": "label:gpt"})
        at.button(key="import_go").click().run()
        assert not at.exception, at.exception
        assert any("Imported 2 row(s) against catalog tides" in s.value for s in at.success), [
            e.value for e in at.error
        ]
        with get_engine(url).connect() as conn:
            assert conn.execute(text("SELECT name, filename FROM catalog_document")).all() == [("tides", "tides.yaml")]
            assert conn.execute(text("SELECT text FROM constraint_item ORDER BY position")).scalars().all() == [
                "Number the steps.",
                "Do not use jargon.",
            ]
