"""Wording studies rated outside the app: rating tasks out, ratings in (issue 33).

A team that rates in a spreadsheet or another tool gets the study's items from
:func:`write_rating_tasks` (``wording-tasks``) and brings its ratings back with
:func:`import_ratings` (``wording-import-ratings``), under the rules of the adjudication
import (:mod:`reform_core.services.data.adjudication_import`):

* **Located errors, all or nothing.** Every problem is reported as ``file:line: field:
  message``, all of them at once, and nothing is written unless every line is valid.
* **Names are text, never accounts.** A rater named like an existing *annotator* account is
  that account (the import then supersedes that annotator's ratings as a save in the app
  would); any other name is recorded on the rating as an outside rater's name
  (``wording_rating.annotator``, no ``user_id``). Refused: an empty name, ``local`` and
  ``cli``, and names of lead or analyst accounts. No account is created or changed.
* **Superseding as in the app.** The lines of one rater on one item are merged onto that
  rater's current rating and stored as one new row superseding it (a field the file does not
  give keeps its current value); a rating the file leaves unchanged is not written again, so
  re-importing a file changes nothing.

Task lines (JSON Lines, one per item, in a stable shuffled order so forms do not come in
runs)::

    {"study", "item", "form", "target", "text", "questions": {"requires_exact": "…? (yes / no)",
     "clarity": "…", "naturalness": "…", "ambiguity": "…", "complexity": "…"}}

Show raters ``text`` and the questions only: ``form`` names the wording form (the app never
shows it) and comes back only to check that each rating belongs to the item it names.

Rating lines (CSV with a header row, or JSON Lines): ``item, form, annotator, question,
value`` — ``question`` a key of ``questions``; ``value`` yes / no (also true / false, 1 / 0)
for ``requires_exact``, an integer 1–5 for the others.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import wording as repo
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.data.adjudication_import import name_problem
from reform_core.services.data.reading import ImportFailed, read_records
from reform_core.services.studies.wording import ANSWER, FIELDS, RATING_HELP, RATINGS

RATING_COLUMNS = ("item", "form", "annotator", "question", "value")
TASK_FIELDS = ("study", "item", "form", "target", "text", "questions")
YES, NO = ("yes", "true", "1"), ("no", "false", "0")
MAX_NAME = 100


def _study(conn, name: str) -> dict:
    s = repo.get_study(conn, name=name)
    if s is None:
        known = ", ".join(repr(x) for x in repo.list_studies(conn)["name"]) or "none"
        raise ValueError(f"--study: no wording study named {name!r} (studies: {known})")
    return s


def questions(question: str, target: str) -> dict[str, str]:
    """The five questions of one item as a rater reads them (the keys are the ``question``
    values of a rating line)."""
    return {
        ANSWER: f"{question.format(target=target)} (yes / no)",
        **{r: f"{r.capitalize()}: {RATING_HELP[r]}" for r in RATINGS},
    }


def write_rating_tasks(engine: Engine, principal: Principal, *, study: str, out) -> int:
    """Write every item of wording study ``study`` as one JSON line (module docstring) to
    ``out`` (a temporary name, then renamed); returns the number of lines. Leads only (the
    lines name the forms)."""
    require(principal, "manage_wording")
    with engine.connect() as conn:
        s = _study(conn, study)
        items = repo.study_items(conn, study_id=s["id"])
    order = np.random.default_rng([int(s["id"]), 33]).permutation(len(items))
    out = Path(out)
    tmp = out.with_name(out.name + ".partial")
    with tmp.open("w", encoding="utf-8") as fh:
        for r in items.iloc[order].itertuples(index=False):
            line = {
                "study": s["name"],
                "item": int(r.item_id),
                "form": r.form,
                "target": r.target,
                "text": r.text,
                "questions": questions(s["question"], r.target),
            }
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    os.replace(tmp, out)
    return len(items)


def _value(question: str, raw) -> object:
    """The stored value of one answer, or a ValueError saying what is expected."""
    if question == ANSWER:
        text = str(raw).strip().lower() if not isinstance(raw, bool) else ("yes" if raw else "no")
        if text in YES or text in NO:
            return text in YES
        raise ValueError(f"yes or no for {ANSWER}, got {raw!r}")
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= 5:
        raise ValueError(f"an integer rating from 1 to 5 for {question}, got {raw!r}")
    return raw


def _line(rec: dict, loc: str, items: pd.DataFrame, errors: list[str]) -> tuple | None:
    """``(item id, rater name, question, value)`` of one rating line, or None after errors."""
    before = len(errors)
    for c in RATING_COLUMNS:
        if rec.get(c) is None or str(rec.get(c)).strip() == "":
            errors.append(f"{loc}: {c}: missing")
    if len(errors) > before:
        return None
    item = str(rec["item"]).strip()
    form = items["form"].get(int(item)) if item.isdigit() else None
    if form is None:
        errors.append(f"{loc}: item: no item {rec['item']!r} in this study (the item ids of wording-tasks)")
    elif str(rec["form"]).strip() != form:
        errors.append(f"{loc}: form: item {item} has form {form!r}, not {rec['form']!r} (a line from another file?)")
    name = str(rec["annotator"]).strip()
    if len(name) > MAX_NAME:
        errors.append(f"{loc}: annotator: longer than {MAX_NAME} characters")
    question = str(rec["question"]).strip()
    value = None
    if question not in FIELDS:
        errors.append(f"{loc}: question: {question!r} is not one of {', '.join(FIELDS)}")
    else:
        try:
            value = _value(question, rec["value"])
        except ValueError as exc:
            errors.append(f"{loc}: value: expected {exc}")
    return (int(item), name, question, value) if len(errors) == before else None


def _read(data: bytes, filename: str, items: pd.DataFrame, conn) -> tuple[dict, dict]:
    """``{(item, rater name): {question: value}}`` in file order and the raters' accounts;
    :class:`ImportFailed` with every located problem."""
    errors: list[str] = []
    answers: dict[tuple, dict] = {}
    where: dict[tuple, tuple] = {}  # (item, name, question) -> (line, value)
    lines = [(n, rec, _line(rec, f"{filename}:{n}", items, errors)) for n, rec in read_records(data, filename)]
    names = sorted({x[1] for _, _, x in lines if x is not None})
    accounts = repo.accounts(conn, names=names)
    for n, rec, x in lines:
        if x is None:
            continue
        item, name, question, value = x
        problem = name_problem(name, accounts.get(name, (None, None))[1], "rated")
        if problem:
            errors.append(f"{filename}:{n}: annotator: {problem}")
        seen = where.setdefault((item, name, question), (n, value))
        if seen[1] != value:
            errors.append(
                f"{filename}:{n}: value: {value!r} for item {item}, {name!r}, {question}; line {seen[0]} "
                f"gives {seen[1]!r}"
            )
        answers.setdefault((item, name), {})[question] = value
    if not lines and not errors:
        errors.append(f"{filename}: no ratings")
    if errors:
        raise ImportFailed(errors)
    return answers, accounts


def import_ratings(engine: Engine, principal: Principal, *, study: str, data: bytes, filename: str) -> dict:
    """Import ratings of wording study ``study`` (module docstring) in one transaction; returns
    ``{"written": rows written, "superseded": of those, rows that replaced a current rating}``.
    Leads only."""
    require(principal, "manage_wording")
    written = superseded = 0
    with engine.begin() as conn:
        s = _study(conn, study)
        items = repo.study_items(conn, study_id=s["id"]).set_index("item_id")
        answers, accounts = _read(data, filename, items, conn)
        for (item, name), given in answers.items():
            user_id = accounts[name][0] if accounts.get(name, (None, ""))[1] == "annotator" else None
            outside = "" if user_id is not None else name
            cur = repo.current_rating(conn, item_id=item, user_id=user_id, annotator=outside)
            before = {k: (cur or {}).get(k) for k in FIELDS}
            after = {**before, **given}
            if cur is not None and after == before:
                continue  # already stored: a re-import changes nothing
            repo.insert_rating(
                conn,
                item_id=item,
                user_id=user_id,
                annotator=outside,
                values=after,
                supersedes_id=None if cur is None else int(cur["id"]),
            )
            written += 1
            superseded += cur is not None
    return {"written": written, "superseded": superseded}
