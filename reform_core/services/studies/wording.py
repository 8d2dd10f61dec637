"""Wording studies end to end: design, blinded rating and agreement results.

Definitions: docs/metrics.md (wording studies); background in the WISE paper (section 5.7,
appendix Q, Tables 24 and 25). Roles: a lead designs studies and
imports generations (``manage_wording``), annotators rate (``rate_wording``), analysts and
leads read results (``view_scores``).

Items and blinding
    A study has wording *forms* (key + template with one placeholder, e.g. ``{N}``) and
    *targets*; its items are forms × targets with the placeholder filled, or imported from
    a CSV/JSONL file with columns ``form, target, text``. Annotators never see the form:
    :func:`annotator_queue` returns items without it, in a per-annotator random order seeded
    by ``(study id, user id)`` (stable across sessions).

Ratings
    Each answer (the yes/no "does this require exactly the stated target?" and the 1–5
    clarity, naturalness, ambiguity, complexity ratings) is saved as an append-only row that
    supersedes the annotator's previous row for the item; the newest row is current.

Results
    Per-form and per-annotator yes-rates (Table 24) over every current answer; Fleiss' κ of
    the yes/no answer and ICC(2,1), ICC(2,k) of each rating (Table 25) over the annotators
    who answered every item, each with a 95 % percentile interval from ``n_boot`` item
    bootstrap replicates that keep all annotators. Every statistic draws its replicates
    from a fresh ``numpy.random.default_rng(seed)``, so all of them use the same item
    resamples and each can be reproduced on its own with the library functions.

WISE generations
    Imported and checked by :mod:`reform_core.services.studies.generations`; a study's
    ``params["checker"]`` (default ``wise:exact_words``) selects the generations compared
    with its human judgments, matched by form key.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import wording as repo
from reform_core import agreement as A
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.data.reading import ImportFailed, read_records
from reform_core.services.studies.generations import (  # noqa: F401 - CHECKERS re-exported for the pages
    CHECKERS,
    DEFAULT_CHECKER,
    DEFAULT_REFERENCE,
    checker_id,
    generation_compliance,
)

ANSWER = "requires_exact"
RATINGS = ("clarity", "naturalness", "ambiguity", "complexity")
RATING_HELP = {  # what the ends of each 1–5 scale mean (the Rate wordings page, wording-tasks)
    "clarity": "1 = very unclear … 5 = very clear",
    "naturalness": "1 = very unnatural … 5 = very natural",
    "ambiguity": "1 = not ambiguous … 5 = very ambiguous",
    "complexity": "1 = very simple … 5 = very complex",
}
FIELDS = (ANSWER, *RATINGS)
ICC_KINDS = ("2,1", "2,k")
N_BOOT = 2000
DEFAULT_QUESTION = "Does this require exactly {target} words?"

__all__ = [
    "ImportFailed",
    "StudyResults",
    "annotator_queue",
    "create_study",
    "import_study_items",
    "list_studies",
    "rating_history",
    "save_rating",
    "study_items",
    "study_progress",
    "study_results",
]


# ----------------------------------------------------------------------------- helpers


def _require_any(principal: Principal | None, actions: tuple[str, ...]) -> Principal:
    if principal is not None and any(principal.can(a) for a in actions):
        return principal
    return require(principal, actions[0])


def _study(conn, name: str | None = None, study_id: int | None = None) -> dict:
    s = repo.get_study(conn, name=name, study_id=study_id)
    if s is None:
        raise ValueError(f"study: no wording study {name if study_id is None else study_id!r}")
    return s


def _placeholders(template: str, what: str) -> set[str]:
    try:
        names = {n for _, n, _, _ in string.Formatter().parse(template) if n is not None}
    except ValueError as exc:
        raise ValueError(f"{what}: malformed braces in {template!r}: {exc}") from None
    if "" in names or any(not n.isidentifier() for n in names):
        raise ValueError(f"{what}: placeholders must be named, e.g. {{N}}; got {template!r}")
    return names


def fill_template(template: str, value: str, *, what: str = "template") -> str:
    """Fill the one named placeholder of ``template`` (``{N}``, ``{K}``, …) with ``value``."""
    names = _placeholders(template, what)
    if len(names) != 1:
        raise ValueError(f"{what}: needs exactly one placeholder such as {{N}}, found {sorted(names)} in {template!r}")
    try:
        return template.format(**{names.pop(): value})
    except (ValueError, IndexError) as exc:
        raise ValueError(f"{what}: cannot fill {template!r} with {value!r}: {exc}") from None


def _check_question(question: str) -> str:
    question = (question or "").strip()
    if _placeholders(question, "question") != {"target"}:
        raise ValueError(f"question: must contain the placeholder {{target}} and no other, got {question!r}")
    if len(question) > 500:
        raise ValueError("question: at most 500 characters")
    return question


def _check_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise ValueError("name: the study needs a name of 1–200 characters")
    return name


def _check_params(checker: str, reference: str) -> dict:
    checker = checker_id(checker)
    if checker is None:
        raise ValueError(f"checker: must be one of {', '.join(CHECKERS)}")
    return {"checker": checker, "reference": (reference or DEFAULT_REFERENCE).strip()}


def _wise_forms(conn, wise_study: str) -> list[dict]:
    """The forms (``form, template, checker``) of a WISE study, or a ValueError."""
    ws = repo.get_wise_study(conn, name=wise_study)
    if ws is None:
        raise ValueError(f"wise_study: no WISE study {wise_study!r}")
    return list(ws["params"].get("forms", []))


def _adopt_wise_settings(conn, params: dict) -> None:
    """A study linked to a WISE study compares with its generations under that study's checker
    and reference form: the defaults give way to them, a different explicit choice is an error."""
    ws = repo.get_wise_study(conn, name=params["wise_study"])["params"]
    checkers = sorted({f["checker"] for f in ws.get("forms", []) if f.get("checker")})
    for key, mine, theirs, default in (
        ("checker", params["checker"], checkers[0] if len(checkers) == 1 else None, DEFAULT_CHECKER),
        ("reference", params["reference"], ws.get("reference"), DEFAULT_REFERENCE),
    ):
        if theirs is None or mine == theirs:
            continue
        if mine != default:
            raise ValueError(f"{key}: {mine!r} differs from WISE study {params['wise_study']!r}'s {theirs!r}")
        params[key] = theirs


def _insert_study(engine, name, question, params, forms: list[dict], items: list[dict]) -> dict:
    with engine.begin() as conn:
        if repo.get_study(conn, name=name) is not None:
            raise ValueError(f"name: a wording study named {name!r} already exists")
        if params.get("wise_study"):  # the human study rates the WISE study's own forms
            known = {f["form"] for f in _wise_forms(conn, params["wise_study"])}
            stray = [f["key"] for f in forms if f["key"] not in known]
            if stray:
                raise ValueError(
                    f"forms: {stray} are not forms of WISE study {params['wise_study']!r} (its forms: {sorted(known)})"
                )
            _adopt_wise_settings(conn, params)
        sid = repo.insert_study(conn, name=name, question=question, params=params)
        ids = repo.insert_forms(conn, study_id=sid, forms=forms)
        repo.insert_items(
            conn,
            study_id=sid,
            items=[{"form_id": ids[it["form"]], "target": it["target"], "text": it["text"]} for it in items],
        )
    return {"study": name, "id": sid, "forms": len(forms), "items": len(items)}


# ----------------------------------------------------------------------------- design


def create_study(
    engine: Engine,
    principal: Principal,
    *,
    name: str,
    forms: list[dict] | None,
    targets: list,
    question: str = DEFAULT_QUESTION,
    checker: str = DEFAULT_CHECKER,
    reference: str = DEFAULT_REFERENCE,
    wise_study: str | None = None,
) -> dict:
    """Create a study whose items are ``forms × targets`` (leads).

    ``forms``: ``[{"key": "POS", "template": "Answer using exactly {N} words."}, …]``;
    ``targets``: e.g. ``[5, 8, 10, 12]`` (stored as text). ``wise_study`` links the study to
    a WISE study: its results then compare the human answers with that study's generations,
    and without ``forms`` the study rates that study's forms (templates from its manifest).
    Returns ``{"study", "id", "forms", "items"}``.
    """
    require(principal, "manage_wording")
    name, question = _check_name(name), _check_question(question)
    params = _check_params(checker, reference)
    if wise_study:
        params["wise_study"] = wise_study.strip()
        if not forms:
            with engine.connect() as conn:
                forms = [{"key": f["form"], "template": f["template"]} for f in _wise_forms(conn, params["wise_study"])]
    if not forms:
        raise ValueError("forms: a study needs at least one form")
    clean, seen = [], set()
    for n, f in enumerate(forms, 1):
        key = str(f.get("key") or "").strip()
        template = str(f.get("template") or "").strip()
        if not key or len(key) > 100:
            raise ValueError(f"forms[{n}].key: must be 1–100 characters, got {key!r}")
        if key in seen:
            raise ValueError(f"forms[{n}].key: duplicate form {key!r}")
        fill_template(template, "1", what=f"forms[{n}].template ({key})")
        seen.add(key)
        clean.append({"key": key, "template": template})
    tgts = [str(t).strip() for t in targets]
    if not tgts:
        raise ValueError("targets: a study needs at least one target value")
    for t in tgts:
        if not t or len(t) > 100:
            raise ValueError(f"targets: each target must be 1–100 characters, got {t!r}")
    dup = sorted({t for t in tgts if tgts.count(t) > 1})
    if dup:
        raise ValueError(f"targets: duplicate target(s) {dup}")
    items = [{"form": f["key"], "target": t, "text": fill_template(f["template"], t)} for f in clean for t in tgts]
    return _insert_study(engine, name, question, params, clean, items)


def import_study_items(
    engine: Engine,
    principal: Principal,
    *,
    name: str,
    data: bytes,
    filename: str,
    question: str = DEFAULT_QUESTION,
    checker: str = DEFAULT_CHECKER,
    reference: str = DEFAULT_REFERENCE,
    wise_study: str | None = None,
) -> dict:
    """Create a study from an item file (CSV or JSONL with ``form, target, text``; leads).

    Nothing is written unless every row is valid; problems are reported together as
    ``file:line: field: message`` (:class:`ImportFailed`).
    """
    require(principal, "manage_wording")
    name, question = _check_name(name), _check_question(question)
    params = _check_params(checker, reference)
    if wise_study:
        params["wise_study"] = wise_study.strip()
    errors: list[str] = []
    records = read_records(data, filename, errors)
    items, forms, seen = [], {}, {}
    for line, rec in records:
        row = {}
        for col in ("form", "target", "text"):
            v = rec.get(col)
            v = "" if v is None else str(v).strip()
            if not v:
                errors.append(f"{filename}:{line}: {col}: missing or empty")
            elif col != "text" and len(v) > 100:
                errors.append(f"{filename}:{line}: {col}: longer than 100 characters")
            row[col] = v
        key = (row["form"], row["target"])
        if all(row.values()):
            if key in seen:
                errors.append(
                    f"{filename}:{line}: target: form {key[0]!r} with target {key[1]!r} "
                    f"already given on line {seen[key]}"
                )
                continue
            seen[key] = line
            forms.setdefault(row["form"], {"key": row["form"], "template": ""})
            items.append(row)
    if not records and not errors:
        errors.append(f"{filename}: no items")
    if errors:
        raise ImportFailed(errors)
    return _insert_study(engine, name, question, params, list(forms.values()), items)


def list_studies(engine: Engine, principal: Principal) -> pd.DataFrame:
    """Every study (``id, name, question, params, forms, items``) for anyone taking part."""
    _require_any(principal, ("rate_wording", "manage_wording", "view_scores"))
    with engine.connect() as conn:
        return repo.list_studies(conn)


def study_items(engine: Engine, principal: Principal, *, study_id: int) -> pd.DataFrame:
    """The unblinded items (``item_id, form, target, text``) of a study (leads and analysts)."""
    _require_any(principal, ("manage_wording", "view_scores"))
    with engine.connect() as conn:
        _study(conn, study_id=study_id)
        return repo.study_items(conn, study_id=study_id)


def study_progress(engine: Engine, principal: Principal, *, study_id: int) -> pd.DataFrame:
    """Per annotator: ``annotator, answered`` (items with every field given) and ``total``."""
    _require_any(principal, ("manage_wording", "view_scores"))
    with engine.connect() as conn:
        _study(conn, study_id=study_id)
        total = len(repo.study_items(conn, study_id=study_id))
        cur = repo.current_ratings(conn, study_id=study_id)
    done = cur.assign(_done=cur[list(FIELDS)].notna().all(axis=1)).groupby("username")["_done"].sum()
    return pd.DataFrame({"annotator": done.index, "answered": done.to_numpy(dtype=int), "total": total})


# ----------------------------------------------------------------------------- rating


def annotator_queue(engine: Engine, principal: Principal, *, study_id: int) -> pd.DataFrame:
    """The signed-in annotator's blinded items in their own stable random order.

    Columns: ``position`` (1-based, the neutral identifier shown), ``item_id``,
    ``target``, ``text``, ``question`` (the study question for this target), the five
    answer fields of the annotator's current rating (NaN/None when not given) and
    ``answered`` (every field given). The form is deliberately absent.
    """
    require(principal, "rate_wording")
    with engine.connect() as conn:
        study = _study(conn, study_id=study_id)
        items = repo.study_items(conn, study_id=study_id)
        cur = repo.current_ratings(conn, study_id=study_id, user_id=principal.user_id)
    order = np.random.default_rng([int(study_id), int(principal.user_id)]).permutation(len(items))
    q = items.iloc[order].drop(columns=["form"]).reset_index(drop=True)
    q.insert(0, "position", np.arange(1, len(q) + 1))
    q["question"] = [study["question"].format(target=t) for t in q["target"]]
    q = q.merge(cur[["item_id", *FIELDS]], on="item_id", how="left")
    q[ANSWER] = q[ANSWER].astype(object).where(q[ANSWER].notna(), None)
    q["answered"] = q[list(FIELDS)].notna().all(axis=1)
    return q


def _check_value(name: str, value):
    if name == ANSWER:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise ValueError(f"{ANSWER}: must be True (yes) or False (no), got {value!r}")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 1 <= value <= 5:
        raise ValueError(f"{name}: must be an integer rating from 1 to 5, got {value!r}")
    return int(value)


def save_rating(engine: Engine, principal: Principal, *, item_id: int, **values) -> bool:
    """Record the signed-in annotator's answer(s) for one item as a new append-only row.

    ``values``: any of ``requires_exact`` (bool) and ``clarity``, ``naturalness``,
    ``ambiguity``, ``complexity`` (1–5); a value of None leaves that field as it was. The
    new row carries the annotator's other current fields and supersedes their previous
    row. Returns False (and writes nothing) when nothing changes.
    """
    require(principal, "rate_wording")
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise ValueError(f"rating: unknown field(s) {unknown}; expected {list(FIELDS)}")
    given = {k: _check_value(k, v) for k, v in values.items() if v is not None}
    with engine.begin() as conn:
        if repo.item_study_id(conn, item_id=item_id) is None:
            raise ValueError(f"item_id: no wording item {item_id!r}")
        cur = repo.current_rating(conn, item_id=item_id, user_id=principal.user_id)
        before = {k: (cur or {}).get(k) for k in FIELDS}
        after = {**before, **given}
        if cur is not None and after == before:
            return False
        if cur is None and not given:
            return False
        repo.insert_rating(
            conn,
            item_id=item_id,
            user_id=principal.user_id,
            values=after,
            supersedes_id=None if cur is None else int(cur["id"]),
        )
    return True


# ----------------------------------------------------------------------------- results


@dataclass
class StudyResults:
    """Everything the results page and ``wording-results`` show for one study.

    ``ratings``: current ratings (``item, form, target, rater, requires_exact, clarity,
    naturalness, ambiguity, complexity``); ``complete``: annotators who answered every item
    (the agreement statistics use them); ``yes_rates``: forms × annotators (+ ``all``) as
    returned by :func:`reform_core.agreement.yes_rates`, None without answers;
    ``agreement``: one row per statistic (``measure, statistic, value, ci_low, ci_high,
    note``; NaN with the reason in ``note`` when undefined); ``recognition``: per form the
    human yes-rate next to pooled model compliance and Δ vs the reference form;
    ``model_gaps``: per model reference-to-worst-form gap; ``directions``: failure
    direction shares per form (equal weight per model).
    """

    study: dict
    items: int
    annotators: list[str]
    complete: list[str]
    ratings: pd.DataFrame
    yes_rates: pd.DataFrame | None
    agreement: pd.DataFrame
    recognition: pd.DataFrame
    model_gaps: pd.DataFrame
    directions: pd.DataFrame
    n_boot: int
    seed: int
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The ``wording-results --json`` shape (shares in [0, 1]; NaN as null)."""

        def num(x):
            return None if x is None or pd.isna(x) else float(x)

        def est(row):
            out = {"value": num(row["value"]), "ci_low": num(row["ci_low"]), "ci_high": num(row["ci_high"])}
            if row["note"]:
                out["note"] = row["note"]
            return out

        ag = self.agreement
        kappa = ag[ag["measure"] == ANSWER].iloc[0]
        icc = {
            r: {k: est(ag[(ag["measure"] == r) & (ag["statistic"] == f"ICC({k})")].iloc[0]) for k in ICC_KINDS}
            for r in RATINGS
        }
        yes = (
            {}
            if self.yes_rates is None
            else {str(f): {str(c): num(v) for c, v in row.items()} for f, row in self.yes_rates.iterrows()}
        )
        rec = {str(f): {c: num(v) for c, v in row.items()} for f, row in self.recognition.iterrows()}
        return {
            "study": self.study["name"],
            "items": self.items,
            "annotators": self.annotators,
            "complete_annotators": self.complete,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "kappa": est(kappa),
            "alpha": est(ag[ag["statistic"] == ALPHA_STATISTIC].iloc[0]),
            "icc": icc,
            "yes_rates": yes,
            "recognition": rec,
            "notes": self.notes,
        }


def _ratings_frame(items: pd.DataFrame, cur: pd.DataFrame) -> pd.DataFrame:
    d = cur.merge(items, on="item_id", how="inner").rename(columns={"item_id": "item", "username": "rater"})
    return d[["item", "form", "target", "rater", *FIELDS]].reset_index(drop=True)


def _estimate_row(measure: str, statistic: str, value_fn, ci_fn) -> dict:
    row = {"measure": measure, "statistic": statistic, "value": np.nan, "ci_low": np.nan, "ci_high": np.nan, "note": ""}
    try:
        row["value"] = float(value_fn())
    except ValueError as exc:
        row["note"] = str(exc)
        return row
    try:
        est = ci_fn()
        row["ci_low"], row["ci_high"] = est.ci_low, est.ci_high
    except ValueError as exc:
        row["note"] = f"no interval: {exc}"
    return row


def agreement_table(df: pd.DataFrame, *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Fleiss' κ of the answer and ICC(2,1), ICC(2,k) of each rating with item-bootstrap CIs.

    ``df``: complete ratings (every rater every item) with columns ``item, rater`` and the
    five answer fields. Each statistic uses ``numpy.random.default_rng(seed)`` afresh.
    """
    d = df.assign(**{ANSWER: df[ANSWER].astype(int)}, **{r: df[r].astype(float) for r in RATINGS})
    rows = [
        _estimate_row(
            ANSWER,
            "Fleiss' kappa",
            lambda: A.fleiss_kappa(d, item="item", rater="rater", label=ANSWER),
            lambda: A.fleiss_kappa_ci(
                d, item="item", rater="rater", label=ANSWER, n_boot=n_boot, rng=np.random.default_rng(seed)
            ),
        )
    ]
    for r in RATINGS:
        for k in ICC_KINDS:
            rows.append(
                _estimate_row(
                    r,
                    f"ICC({k})",
                    lambda r=r, k=k: A.icc(d, target="item", rater="rater", rating=r, kind=k).value,
                    lambda r=r, k=k: A.icc(
                        d,
                        target="item",
                        rater="rater",
                        rating=r,
                        kind=k,
                        bootstrap=n_boot,
                        rng=np.random.default_rng(seed),
                    ),
                )
            )
    return pd.DataFrame(rows)


ALPHA_STATISTIC = "Krippendorff's alpha"


def _with_alpha(agreement: pd.DataFrame, answered: pd.DataFrame, *, n_boot: int, seed: int) -> pd.DataFrame:
    """Insert Krippendorff's α (nominal) of the yes/no answer right after Fleiss' κ.

    Unlike κ, α allows missing ratings, so it uses every annotator's current answers, not only
    those of annotators who answered every item (Krippendorff 2011); same item bootstrap.
    """
    d = answered[["item", "rater", ANSWER]].assign(**{ANSWER: answered[ANSWER].astype(int)})
    if d["rater"].nunique() < 2:
        row = {
            "measure": ANSWER,
            "statistic": ALPHA_STATISTIC,
            "value": np.nan,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "note": "α needs answers from at least 2 annotators on some item",
        }
    else:
        row = _estimate_row(
            ANSWER,
            ALPHA_STATISTIC,
            lambda: A.krippendorff_alpha(d, item="item", rater="rater", label=ANSWER, level="nominal"),
            lambda: A.krippendorff_alpha_ci(
                d,
                item="item",
                rater="rater",
                label=ANSWER,
                level="nominal",
                n_boot=n_boot,
                rng=np.random.default_rng(seed),
            ),
        )
    at = int(np.flatnonzero(agreement["measure"].to_numpy() == ANSWER)[-1]) + 1
    return pd.concat([agreement.iloc[:at], pd.DataFrame([row]), agreement.iloc[at:]], ignore_index=True)


def _undefined_table(reason: str) -> pd.DataFrame:
    rows = [(ANSWER, "Fleiss' kappa")] + [(r, f"ICC({k})") for r in RATINGS for k in ICC_KINDS]
    return pd.DataFrame(
        [
            {"measure": m, "statistic": s, "value": np.nan, "ci_low": np.nan, "ci_high": np.nan, "note": reason}
            for m, s in rows
        ]
    )


def study_results(
    engine: Engine,
    principal: Principal,
    *,
    study: str | None = None,
    study_id: int | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> StudyResults:
    """Yes-rates, agreement with intervals and model compliance of one study (analysts, leads)."""
    require(principal, "view_scores")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 2:
        raise ValueError(f"n_boot: must be an integer >= 2, got {n_boot!r}")
    with engine.connect() as conn:
        s = _study(conn, name=study, study_id=study_id)
        forms = list(repo.study_forms(conn, study_id=s["id"])["form"])
        items = repo.study_items(conn, study_id=s["id"])
        cur = repo.current_ratings(conn, study_id=s["id"])
        gens = repo.generations(conn, forms=forms, study=s["params"].get("wise_study"))
    ratings = _ratings_frame(items, cur)
    notes = []
    full = ratings[ratings[list(FIELDS)].notna().all(axis=1)]
    per_rater = full.groupby("rater")["item"].nunique()
    complete = sorted(per_rater.index[per_rater == len(items)])
    partial = sorted(set(ratings["rater"]) - set(complete))
    if partial:
        notes.append(
            f"agreement uses the {len(complete)} annotator(s) who answered every item; "
            f"not yet complete: {', '.join(partial)}"
        )
    if len(complete) < 2 or len(items) < 2:
        agreement = _undefined_table(
            f"agreement needs at least 2 annotators who answered all {len(items)} items "
            f"(and 2 items); {len(complete)} have so far"
        )
    else:
        agreement = agreement_table(full[full["rater"].isin(complete)], n_boot=n_boot, seed=seed)
    answered = ratings[ratings[ANSWER].notna()]
    agreement = _with_alpha(agreement, answered, n_boot=n_boot, seed=seed)
    yes = None
    if len(answered):
        yes = A.yes_rates(
            answered.assign(**{ANSWER: answered[ANSWER].astype(bool)}), by="form", rater="rater", label=ANSWER
        )
        yes = yes.loc[[f for f in forms if f in yes.index] + [A.ALL]]
    comp = generation_compliance(
        gens,
        checker=s["params"].get("checker", DEFAULT_CHECKER),
        forms=forms,
        reference=s["params"].get("reference", DEFAULT_REFERENCE),
    )
    notes += comp["notes"]
    recognition = pd.DataFrame(index=pd.Index(forms, name="form"))
    if yes is not None:
        recognition["human_yes"] = yes[A.ALL].reindex(forms)
        recognition["human_n"] = answered.groupby("form").size().reindex(forms).fillna(0).astype(int)
    if comp["pooled"] is not None:
        recognition = recognition.join(comp["pooled"], how="left")
    return StudyResults(
        study=s,
        items=len(items),
        annotators=sorted(set(ratings["rater"])),
        complete=complete,
        ratings=ratings,
        yes_rates=yes,
        agreement=agreement,
        recognition=recognition,
        model_gaps=comp["model_gaps"],
        directions=comp["directions"],
        n_boot=n_boot,
        seed=seed,
        notes=notes,
    )


# ----------------------------------------------------------------------------- WISE generations


def rating_history(engine: Engine, principal: Principal, *, item_id: int) -> pd.DataFrame:
    """The signed-in annotator's rows for one item, oldest first (old rows stay, superseded)."""
    require(principal, "rate_wording")
    with engine.connect() as conn:
        return repo.rating_history(conn, item_id=item_id, user_id=principal.user_id)
