"""WISE generations: model outputs under each wording form, imported and checked.

A generation's ``target`` names its checker (stored as is, so the database alone
decides compliance):

==================  =====================  ==============================
target              checker                example
==================  =====================  ==============================
``N``               ``wise:exact_words``   ``10``
``L-H``             ``wise:word_range``    ``8-12``
``keyword:WORD``    ``wise:keyword_once``  ``keyword:harbor``
``keys:K1,K2,…``    ``wise:json_keys``     ``keys:name,year``
==================  =====================  ==============================

An import file may instead give a ``checker`` column (``exact_words``,
``word_range``, ``keyword_once``, ``json_keys`` or the ``wise:`` id) with a bare
target (``harbor``, ``name,year`` or a JSON list of keys); the target is stored in the
canonical form above. A study's ``params["checker"]`` (default ``wise:exact_words``)
selects the generations compared with its human judgments, matched by form key.

Background: the WISE paper (section 3 and 5.7); definitions in docs/metrics.md.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Optional

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import wording as repo
from reform_core.metrics import wise as W
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.data.reading import ImportFailed, read_records
from reform_core.verifiers.base import get as get_verifier

DEFAULT_CHECKER = "wise:exact_words"
DEFAULT_REFERENCE = "POS"
CHECKERS = ("wise:exact_words", "wise:word_range", "wise:keyword_once", "wise:json_keys")
GENERATION_REQUIRED = ("item", "model", "form", "target", "repetition", "output")
MAX_LEN = {"item": 200, "model": 200, "provider": 100, "form": 100, "target": 200, "study": 200}


def checker_id(name: str | None) -> str | None:
    """The ``wise:`` id of a checker named with or without the prefix; None if unknown."""
    if name is None:
        return None
    name = str(name).strip()
    full = name if name.startswith("wise:") else f"wise:{name}"
    return full if full in CHECKERS else None


@lru_cache(maxsize=4096)
def parse_target(target: str) -> tuple[str, tuple]:
    """The checker and its parameters named by a canonical generation target (module doc)."""
    t = str(target).strip()
    if re.fullmatch(r"\d+", t):
        return "wise:exact_words", (("n", int(t)),)
    m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", t)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo > hi:
            raise ValueError(f"target: range {t!r} has low > high")
        return "wise:word_range", (("low", lo), ("high", hi))
    if t.startswith("keyword:") and t[len("keyword:") :].strip():
        return "wise:keyword_once", (("keyword", t[len("keyword:") :].strip()),)
    if t.startswith("keys:"):
        keys = tuple(k.strip() for k in t[len("keys:") :].split(","))
        if keys and all(keys) and len(set(keys)) == len(keys):
            return "wise:json_keys", (("keys", keys),)
    raise ValueError(
        f"target: {t!r} names no checker; use N, L-H, keyword:WORD or keys:K1,K2 (or give a checker column)"
    )


def _canonical_target(target: str, checker: str | None) -> str:
    t = target.strip()
    if checker == "wise:keyword_once" and not t.startswith("keyword:"):
        t = f"keyword:{t}"
    elif checker == "wise:json_keys" and not t.startswith("keys:"):
        if t.startswith("["):
            try:
                keys = json.loads(t)
            except json.JSONDecodeError as exc:
                raise ValueError(f"target: not a JSON list of keys: {exc}") from None
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise ValueError("target: a JSON target must be a list of key names")
            t = ",".join(keys)
        t = f"keys:{t}"
    found, _ = parse_target(t)
    if checker is not None and found != checker:
        raise ValueError(f"target: {target!r} is not a valid target for checker {checker}")
    return t


def check_generations(gens: pd.DataFrame) -> pd.DataFrame:
    """Add ``checker, passed, direction, words`` to generations by running the WISE checkers."""
    checkers, passed, directions, words = [], [], [], []
    for target, output in zip(gens["target"], gens["output"]):
        vid, params = parse_target(target)
        res = get_verifier(vid)(output, **dict(params))
        checkers.append(vid)
        passed.append(bool(res.passed))
        directions.append(res.detail.get("direction", ""))
        words.append(len((output or "").strip().split()))
    return gens.assign(checker=checkers, passed=passed, direction=directions, words=words)


def generation_compliance(
    gens: pd.DataFrame,
    *,
    checker: str = DEFAULT_CHECKER,
    forms: list[str] | None = None,
    reference: str = DEFAULT_REFERENCE,
) -> dict:
    """Compliance summaries of stored generations under one checker (the WISE paper, sections 3 and 5.7).

    Returns ``{"outputs", "compliance", "pooled", "model_gaps", "directions", "notes"}``:
    checked outputs; the model × form table (models lacking a form dropped, with a note);
    pooled compliance and Δ vs ``reference`` per form (columns ``compliance, delta``);
    per-model ``reference, c_worst, worst_form, gap`` (gap = reference − worst); failure
    direction shares per form. Parts are None / empty without generations.
    """
    empty = {
        "outputs": gens.iloc[0:0],
        "compliance": None,
        "pooled": None,
        "model_gaps": pd.DataFrame(),
        "directions": pd.DataFrame(),
        "notes": [],
    }
    if gens.empty:
        return empty
    out = check_generations(gens)
    out = out[out["checker"] == checker]
    if forms is not None:
        out = out[out["form"].isin(forms)]
    if out.empty:
        return {**empty, "notes": [f"no stored generation of these forms is checked by {checker}"]}
    notes = []
    comp = W.model_compliance(out)
    if forms is not None:
        comp = comp[[f for f in forms if f in comp.columns]]
    lacking = comp.index[comp.isna().any(axis=1)]
    if len(lacking):
        notes.append(
            f"model(s) without outputs under every form left out of pooled compliance: {', '.join(map(str, lacking))}"
        )
        comp = comp.drop(index=lacking)
    pooled, gaps = None, pd.DataFrame()
    if not comp.empty:
        if reference in comp.columns:
            pooled = W.wording_contrasts(comp, reference=reference)
            r = W.model_robustness(comp, reference=reference)
            gaps = r[["reference", "c_worst", "worst_form"]].assign(gap=r["reference"] - r["c_worst"])
            gaps.index.name = "model"
        else:
            pooled = W.pooled_compliance(comp).to_frame("compliance")
            notes.append(f"reference form {reference!r} has no generations; no Δ or per-model gaps")
    directions = W.failure_directions(out[out["model"].isin(comp.index)]) if not comp.empty else pd.DataFrame()
    return {
        "outputs": out,
        "compliance": comp,
        "pooled": pooled,
        "model_gaps": gaps,
        "directions": directions,
        "notes": notes,
    }


def _generation_row(rec: dict, loc: str, errors: list[str]) -> dict | None:
    n_errors = len(errors)
    missing = [c for c in GENERATION_REQUIRED if c not in rec]
    for c in missing:
        errors.append(f"{loc}: {c}: missing")
    if missing:
        return None
    row = {}
    for c in ("item", "model", "provider", "form"):
        v = rec.get(c)
        v = "" if v is None else str(v).strip()
        if not v and c != "provider":
            errors.append(f"{loc}: {c}: empty")
        elif len(v) > MAX_LEN[c]:
            errors.append(f"{loc}: {c}: longer than {MAX_LEN[c]} characters")
        row[c] = v
    rep = rec.get("repetition")
    if isinstance(rep, str) and re.fullmatch(r"\s*\d+\s*", rep):
        rep = int(rep)
    if isinstance(rep, bool) or not isinstance(rep, int) or rep < 0:
        errors.append(f"{loc}: repetition: must be a non-negative integer, got {rec.get('repetition')!r}")
    row["repetition"] = rep
    out = rec.get("output")
    if out is not None and not isinstance(out, str):
        errors.append(f"{loc}: output: must be text, got {type(out).__name__}")
    row["output"] = out or ""
    checker = None
    if rec.get("checker") not in (None, ""):
        checker = checker_id(rec["checker"])
        if checker is None:
            errors.append(f"{loc}: checker: {rec['checker']!r} is not one of {', '.join(CHECKERS)}")
    target = rec.get("target")
    target = "" if target is None else str(target).strip()
    try:
        row["target"] = _canonical_target(target, checker) if target else ""
        if not target:
            errors.append(f"{loc}: target: empty")
        elif len(row["target"]) > MAX_LEN["target"]:
            errors.append(f"{loc}: target: longer than {MAX_LEN['target']} characters")
    except ValueError as exc:
        errors.append(f"{loc}: {exc}")
    return row if len(errors) == n_errors else None


def import_generations(engine: Engine, principal: Principal, *, data: bytes, filename: str, study: str = "") -> dict:
    """Import WISE generations from CSV or JSONL (leads), into WISE study ``study`` if given.

    Columns: ``item, model, provider, form, target, repetition, output`` (+ optional
    ``checker``; see the module doc for targets). Every row is validated first and all
    problems are reported together as ``file:line: field: message``; nothing is written
    if any row is invalid. Rows whose key ``(study, item, model, form, target, repetition)``
    is already stored with the same provider and output are skipped (idempotent); a
    different provider or output for a stored key is an error. A named study is created
    if new (its forms: those of the file); otherwise the file's forms must be the study's.
    Returns ``{"rows", "written", "existing"}``.
    """
    require(principal, "manage_wording")
    study = (study or "").strip()
    if len(study) > MAX_LEN["study"]:
        raise ValueError(f"study: longer than {MAX_LEN['study']} characters")
    errors: list[str] = []
    records = read_records(data, filename, errors)
    rows, lines = [], {}
    for line, rec in records:
        row = _generation_row(rec, f"{filename}:{line}", errors)
        if row is None:
            continue
        row["study"] = study
        key = tuple(row[c] for c in repo.GENERATION_KEY)
        if key in lines:
            errors.append(
                f"{filename}:{line}: repetition: duplicate of line {lines[key]} "
                f"(same item, model, form, target, repetition)"
            )
            continue
        lines[key] = line
        rows.append(row)
    if not records and not errors:
        errors.append(f"{filename}: no generations")
    if errors:
        raise ImportFailed(errors)
    with engine.begin() as conn:
        if study:
            ensure_study(conn, study, forms=_forms_of(rows))
        stored = repo.generation_outputs(conn, items=[r["item"] for r in rows], study=study)
        new = []
        for r in rows:
            key = tuple(r[c] for c in repo.GENERATION_KEY)
            if key not in stored:
                new.append(r)
            elif stored[key] != (r["provider"], r["output"]):
                what = "provider" if stored[key][0] != r["provider"] else "output"
                errors.append(
                    f"{filename}:{lines[key]}: {what}: differs from the stored generation with the same "
                    "item, model, form, target and repetition"
                )
        if errors:
            raise ImportFailed(errors)
        repo.insert_generations(conn, rows=new)
    return {"rows": len(rows), "written": len(new), "existing": len(rows) - len(new)}


def _forms_of(rows: list[dict]) -> list[dict]:
    """The forms of generation rows in order of appearance, each with its checker."""
    forms: dict[str, dict] = {}
    for r in rows:
        forms.setdefault(r["form"], {"form": r["form"], "template": "", "checker": parse_target(r["target"])[0]})
    return list(forms.values())


def ensure_study(conn, study: str, *, forms: list[dict], manifest: Optional[dict] = None) -> dict:
    """The WISE study ``study``, created with ``forms`` (``form, template, checker``) if new.

    An existing study must have the same form keys and checkers; a study created without
    templates (from imported generations) takes the manifest's templates. Returns its params.
    """
    stored = repo.get_wise_study(conn, name=study)
    if stored is None:
        keys = [f["form"] for f in forms]
        params = {"reference": DEFAULT_REFERENCE if DEFAULT_REFERENCE in keys else keys[0], "forms": forms}
        if manifest:
            params["manifest"] = manifest
        repo.insert_wise_study(conn, name=study, params=params)
        return params
    params = stored["params"]
    have = {f["form"]: f for f in params.get("forms", [])}
    mine = {f["form"]: f for f in forms}
    if set(mine) - set(have) or any(mine[k]["checker"] != have[k]["checker"] for k in mine):
        raise ValueError(
            f"study: WISE study {study!r} has forms {sorted(have)} "
            f"({', '.join(sorted({f['checker'] for f in have.values()}))}); these are "
            f"{sorted(mine)} ({', '.join(sorted({f['checker'] for f in mine.values()}))})"
        )
    changed = False
    for k, f in mine.items():
        if f.get("template") and not have[k].get("template"):
            have[k]["template"], changed = f["template"], True
    if manifest and params.get("manifest") != manifest:
        params["manifest"], changed = manifest, True
    if changed:
        repo.update_wise_study(conn, name=study, params={**params, "forms": list(have.values())})
    return params
