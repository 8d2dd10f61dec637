"""Issue 15 item 17: tables a person reads show no raw ``None``/``nan``, ``True``/``False`` or
1/0 flags, Python dicts or lists, microsecond timestamps, or ``2.000`` for a whole number
(Sampling, Users, Wording results, Construction; AppTest on the demo project, local lead)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from pages.components.nav import PAGES
from pages.components.render import tidy

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def untidy(df: pd.DataFrame) -> list[tuple[str, object]]:
    """(column, cell) pairs a person should not see."""
    bad = []
    for col in df.columns:
        series = df[col]
        if pd.api.types.is_bool_dtype(series):
            bad.append((col, "a True/False column"))
        if pd.api.types.is_float_dtype(series):
            values = series.to_numpy(dtype=float)
            if np.isnan(values).any():
                bad.append((col, "NaN (shown as None)"))
            elif len(values) and np.all(np.mod(values, 1) == 0):
                bad.append((col, "whole numbers as floats (shown as 2.000)"))
        for v in series:
            if v is None or (isinstance(v, float) and np.isnan(v)):
                bad.append((col, v))
            elif isinstance(v, (dict, list, tuple, set)):
                bad.append((col, v))
            elif isinstance(v, str) and (
                re.search(r"\d\d:\d\d:\d\d\.\d", v) or v in ("None", "nan", "True", "False") or v.startswith("{")
            ):
                bad.append((col, v))
        if (
            str(col) in ("active", "locked", "provisional", "answered")
            and len(series)
            and set(map(str, series)) <= {"0", "1"}
        ):
            bad.append((col, "a 1/0 flag"))
    return bad


def test_the_checker_and_tidy():
    raw = pd.DataFrame(
        {
            "a": [1.0, None],
            "flag": [1, 0],
            "b": [True, False],
            "d": [{"k": 1}, None],
            "t": ["2026-12-01 20:15:02.383823+00:00", "2026-12-01 20:15:02"],
            "w": [2.0, 3.0],
            "x": [0.12345, 1.5],
        }
    )
    assert {c for c, _ in untidy(raw)} == {"a", "b", "d", "t", "w"}
    shown = tidy(raw, flags=("flag",))
    assert not untidy(shown)
    assert shown["a"].tolist() == ["1", "—"] and shown["flag"].tolist() == ["yes", "no"]
    assert shown["b"].tolist() == ["yes", "no"] and shown["d"].tolist() == ["k = 1", "—"]
    assert shown["t"].tolist() == ["2026-12-01 20:15", "2026-12-01 20:15"]
    assert shown["w"].tolist() == [2, 3] and shown["x"].tolist() == [0.12345, 1.5]


@pytest.fixture(scope="module")
def project(demo_db):
    """The demo (sample plans with and without decisions) and a human wording study with ratings."""
    from reform_core.services.accounts.users import create_user, local_principal
    from reform_core.services.platform.uow import get_engine
    from reform_core.services.studies import wording

    eng = get_engine(demo_db)
    lead = local_principal(eng)
    create_user(eng, lead, username="ann-tables", password="annotator-password-1", role="annotator")
    forms = [
        {"key": "POS", "template": "Answer using exactly {N} words."},
        {"key": "NEG", "template": "Do not use more or fewer than {N} words."},
    ]
    wording.create_study(eng, lead, name="tables", forms=forms, targets=[5, 8])
    sid = int(wording.list_studies(eng, lead)["id"].max())
    queue = wording.annotator_queue(eng, lead, study_id=sid)
    for n, r in enumerate(queue.itertuples()):
        wording.save_rating(
            eng,
            lead,
            item_id=int(r.item_id),
            requires_exact=bool(n % 2),
            clarity=1 + n % 5,
            naturalness=3,
            ambiguity=2,
            complexity=4,
        )
    return demo_db


def _tables(path: str, prepare=None) -> list[pd.DataFrame]:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(path).run()
    if prepare:
        prepare(at)
    assert not at.exception, at.exception
    frames = [d.value for d in at.dataframe]
    assert frames, f"{path}: no table shown"
    return frames


def _preview(at: AppTest) -> None:
    next(b for b in at.button if b.label == "Preview planned sizes").click()
    at.run()


@pytest.mark.parametrize(
    "path, prepare",
    [("pages/sampling.py", _preview), ("pages/users.py", None), ("pages/wording_results.py", None)],
    ids=["sampling", "users", "wording_results"],
)
def test_tables_read_like_text_not_python(project, path, prepare):
    for frame in _tables(path, prepare):
        assert not untidy(frame), f"{path}: {untidy(frame)[:6]}\n{frame.head(3)}"


# the word is built from parts so that this file does not itself cite the outside specification
INTERNAL_REFERENCE = re.compile(r"(?i)\bseed 00\d|\b" + "SP" + r"EC\b|Table 2[0-9]\b")


@pytest.mark.parametrize("path", [p.path for p in PAGES])
def test_no_internal_paper_or_spec_references_on_screen(project, path):
    """Issue 15 item 17: references by a source paper's private file number and table number
    (the project's internal numbering of its papers, or its outside specification) meant nothing
    to a user."""
    from tests.app.test_hostile_render import _markdown_strings, _walk

    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    found = [
        (where, text[:120])
        for node in _walk(at._tree)
        for where, text in _markdown_strings(node)
        if INTERNAL_REFERENCE.search(text)
    ]
    assert not found, f"{path}: {found}"
