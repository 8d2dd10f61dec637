"""WISE wording-robustness studies end to end (docs/metrics.md#wording-robustness; the WISE
paper, *When Verifiable Counts Depend on Wording*; formats in
docs/formats.md#mosaic-and-wise-studies).

A WISE study is a named set of generations in ``wise_generation`` with its forms, checker
and reference form (``wise_study.params``). Generations come from :func:`collect` (the
matched items of a ``wise-generate`` manifest answered through the evaluated-model runner,
:func:`reform_core.services.judging.collection.generate`; resumable, rate-limited, settings
recorded) or from ``wording-import-generations FILE --study NAME``.

:func:`results` checks every output with its ``wise:*`` checker and computes, per form,
pooled compliance (equal weight per model), Δ to the reference form with a bootstrap
interval and Holm-adjusted bootstrap p-values (one family per study), C_mean, C_worst,
G_wording, and ranking stability against the reference (Kendall τ_b, strict reversal rate,
top-3 Jaccard, largest rank shift) with task-bootstrap intervals (WISE paper §4, §5.4, App.
F, G, P). The default bootstrap follows the paper per checker: provider–model–item for
exact counts (and JSON), item clusters for the keyword panel, model–item for the range
panel.

Only complete matched cells enter the metrics: a (model, item) lacking an output under
some form is left out and counted in the notes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import wording as repo
from reform_core.agreement import percentile_interval
from reform_core.metrics import wise as W
from reform_core.safe_csv import restore_cell
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.data.reading import ImportFailed, read_records
from reform_core.services.judging import collection
from reform_core.services.studies.generations import DEFAULT_REFERENCE, check_generations, ensure_study, parse_target

N_BOOT = 2000
SCHEME_OF_CHECKER = {
    "wise:exact_words": "provider-model-item",
    "wise:json_keys": "provider-model-item",
    "wise:keyword_once": "item",
    "wise:word_range": "model-item",
}
MANIFEST_FILES = ("forms.csv", "items.jsonl")
SCHEMES = W.SCHEMES
MANAGE, VIEW = "manage_wording", "view_scores"
Progress = Optional[Callable[[int, int], None]]


# ----------------------------------------------------------------------------- studies


def _name(study: str) -> str:
    study = (study or "").strip()
    if not study or len(study) > 200:
        raise ValueError("study: needs a name of 1–200 characters")
    return study


def list_studies(engine: Engine, principal: Principal) -> pd.DataFrame:
    """Every WISE study: ``id, name, params, models, outputs``."""
    require(principal, VIEW)
    with engine.connect() as conn:
        return repo.list_wise_studies(conn)


def read_manifest(manifest: str | Path) -> tuple[pd.DataFrame, list[dict], dict]:
    """(matched items, forms, manifest summary) of a ``wise-generate`` directory.

    Items: ``item, form, target, repetition, prompt`` (target canonical). Every problem is
    reported as ``file:line: field: message`` (:class:`ImportFailed`).
    """
    d = Path(manifest)
    if not d.is_dir():
        raise ValueError(f"--manifest: {d} is not a directory written by wise-generate")
    missing = [f for f in MANIFEST_FILES if not (d / f).is_file()]
    if missing:
        raise ValueError(f"--manifest: {d} lacks {', '.join(missing)} (write it with wise-generate)")
    errors: list[str] = []
    forms: dict[str, dict] = {}
    fname = str(d / "forms.csv")
    from reform_core.services.data.reading import read_file

    try:  # regular files only; a link out of the directory is refused (issue 15 item 6)
        forms_raw, raw = read_file(d / "forms.csv", d), read_file(d / "items.jsonl", d)
    except OSError as exc:
        raise ValueError(f"--manifest: {d}: {exc}") from exc
    for line, rec in read_records(forms_raw, fname, errors):
        rec = {k: restore_cell(v) for k, v in rec.items()}  # wise-generate writes forms.csv formula-neutralised
        form, checker = str(rec.get("form") or "").strip(), str(rec.get("checker") or "").strip()
        if not form or len(form) > 100:
            errors.append(f"{fname}:{line}: form: must be 1–100 characters")
        elif form in forms:
            errors.append(f"{fname}:{line}: form: {form!r} given twice")
        elif checker not in SCHEME_OF_CHECKER:
            errors.append(f"{fname}:{line}: checker: {checker!r} is not one of {', '.join(SCHEME_OF_CHECKER)}")
        else:
            forms[form] = {"form": form, "template": str(rec.get("template") or ""), "checker": checker}
    if not forms and not errors:
        errors.append(f"{fname}: no forms")
    iname = str(d / "items.jsonl")
    rows, seen = [], {}
    for line, rec in read_records(raw, iname, errors):
        loc, before = f"{iname}:{line}", len(errors)
        item, form = str(rec.get("item") or "").strip(), str(rec.get("form") or "").strip()
        prompt, rep = rec.get("prompt"), rec.get("repetition")
        if not item or len(item) > 200:
            errors.append(f"{loc}: item: must be 1–200 characters")
        if form not in forms:
            errors.append(f"{loc}: form: {form!r} is not in forms.csv")
        if not isinstance(prompt, str) or not prompt.strip():
            errors.append(f"{loc}: prompt: missing or empty")
        if isinstance(rep, bool) or not isinstance(rep, int) or rep < 0:
            errors.append(f"{loc}: repetition: must be a non-negative integer, got {rep!r}")
        try:
            target = str(rec.get("target", "")).strip()
            checker, _ = parse_target(target)
            if form in forms and checker != forms[form]["checker"]:
                errors.append(
                    f"{loc}: target: {target!r} is checked by {checker}, form {form!r} by {forms[form]['checker']}"
                )
        except ValueError as exc:
            errors.append(f"{loc}: {exc}")
        if len(errors) > before:
            continue
        key = (item, form, target, rep)
        if key in seen:
            errors.append(f"{loc}: repetition: duplicate of line {seen[key]} (same item, form, target, repetition)")
            continue
        seen[key] = line
        rows.append({"item": item, "form": form, "target": target, "repetition": rep, "prompt": prompt})
    if not rows and not errors:
        errors.append(f"{iname}: no items")
    if errors:
        raise ImportFailed(errors)
    items = pd.DataFrame(rows)
    summary = {
        "items_sha256": hashlib.sha256(raw).hexdigest(),
        "items": len(items),
        "tasks": int(items["item"].nunique()),
    }
    return items, list(forms.values()), summary


# ----------------------------------------------------------------------------- collection


def _model_name(model: str) -> str:
    """The evaluated model's name, stripped (1–200 characters)."""
    model = (model or "").strip()
    if not model or len(model) > 200:
        raise ValueError("model: the evaluated model needs a name of 1–200 characters")
    return model


def _pending_generations(
    engine: Engine, manifest: str | Path, *, study: str, model: str, limit: Optional[int]
) -> tuple[list[collection.GenItem], dict[int, Any]]:
    """The missing calls of ``model`` (at most ``limit``) and each one's manifest row; creates the study if new."""
    items, forms, summary = read_manifest(manifest)
    with engine.begin() as conn:
        ensure_study(conn, study, forms=forms, manifest=summary)
        have = repo.generation_keys(conn, study=study, model=model)
    todo = [r for r in items.itertuples(index=False) if (r.item, r.form, r.target, r.repetition) not in have]
    if limit is not None:
        todo = todo[:limit]
    gen_items, row_of = [], {}
    for r in todo:
        g = collection.GenItem(model, r.item, None, "wise", r.prompt)
        gen_items.append(g)
        row_of[id(g)] = r
    return gen_items, row_of


def _generation_rows(
    results: list,
    out: dict,
    row_of: dict[int, Any],
    study: str,
    model: str,
    vendor: str,
    provider: str,
    provider_model: Optional[str],
    settings: collection.GenerationSettings,
) -> list[dict]:
    """Count a batch of results into ``out`` and return the ``wise_generation`` rows of the successful ones."""
    rows = []
    for res in results:
        if res.error:
            out["errors"] += 1
            out["first_error"] = out["first_error"] or res.error
            continue
        out["truncated"] += bool(res.truncated)
        r = row_of[id(res.item)]
        rows.append(
            {
                "study": study,
                "item": r.item,
                "model": model,
                "provider": vendor,
                "form": r.form,
                "target": r.target,
                "repetition": int(r.repetition),
                "output": (res.text or "").replace("\x00", "\ufffd"),
                "meta": collection.generation_meta(res, provider, settings, provider_model or model),
            }
        )
    return rows


def _insert_new_generations(engine: Engine, rows: list[dict], *, study: str, model: str) -> int:
    """Insert the rows a concurrent run has not stored meanwhile; return how many."""
    with engine.begin() as conn:
        stored = repo.generation_keys(conn, study=study, model=model)
        rows = [r for r in rows if (r["item"], r["form"], r["target"], r["repetition"]) not in stored]
        repo.insert_generations(conn, rows=rows)
    return len(rows)


def collect(
    engine: Engine,
    principal: Principal,
    *,
    manifest: str | Path,
    study: str,
    model: str,
    provider: str,
    provider_model: Optional[str] = None,
    vendor: Optional[str] = None,
    settings: Optional[collection.GenerationSettings] = None,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    concurrency: int = 8,
    rpm: Optional[int] = None,
    tpm: Optional[int] = None,
    limit: Optional[int] = None,
    timeout: float = 300.0,
    retry=None,
    progress: Progress = None,
    cancel: Any = None,
    commit_every: int = 16,
) -> dict:
    """Collect ``model``'s missing generations for the matched items of ``manifest`` into ``study``.

    The study is created from the manifest's forms if new. Resumable: an (item, form,
    target, repetition) already stored for ``model`` is never asked again; a failed call
    writes nothing. ``vendor`` (default: ``provider``) is stored as the generation's
    provider, the top level of the provider–model–item bootstrap. Returns ``{"pending",
    "written", "errors", "truncated", "first_error", "requests", "input_tokens",
    "output_tokens", "cost_usd", "cancelled"}``.
    """
    require(principal, MANAGE)
    study = _name(study)
    model = _model_name(model)
    if limit is not None and limit < 0:
        raise ValueError(f"limit: must be >= 0, got {limit}")
    vendor = (vendor or provider or "").strip()[:100]
    settings = settings or collection.GenerationSettings(temperature=0.2, max_tokens=120)
    gen_items, row_of = _pending_generations(engine, manifest, study=study, model=model, limit=limit)
    out = {"pending": len(gen_items), "written": 0, "errors": 0, "truncated": 0, "first_error": ""}
    if not gen_items:
        return out

    def on_results(results: list) -> None:
        rows = _generation_rows(results, out, row_of, study, model, vendor, provider, provider_model, settings)
        if rows:
            out["written"] += _insert_new_generations(engine, rows, study=study, model=model)

    out.update(
        collection.generate(
            gen_items,
            provider=provider,
            model=provider_model or model,
            on_results=on_results,
            settings=settings,
            base_url=base_url,
            api_key=api_key,
            concurrency=concurrency,
            rpm=rpm,
            tpm=tpm,
            timeout=timeout,
            retry=retry,
            progress=progress,
            cancel=cancel,
            commit_every=commit_every,
        )
    )
    return out


# ----------------------------------------------------------------------------- outputs and results


def outputs(engine: Engine, principal: Principal, *, study: Optional[str] = None) -> pd.DataFrame:
    """Checked generations of one study (or of every study): ``study, model, item, form,
    target, repetition, compliant, provider, direction, words, checker``."""
    require(principal, VIEW)
    cols = [
        "study",
        "model",
        "item",
        "form",
        "target",
        "repetition",
        "compliant",
        "provider",
        "direction",
        "words",
        "checker",
    ]
    with engine.connect() as conn:
        if study is not None and repo.get_wise_study(conn, name=_name(study)) is None:
            raise ValueError(f"study: no WISE study {study!r}")
        names = [study] if study is not None else list(repo.list_wise_studies(conn)["name"])
        gens = pd.concat([repo.generations(conn, study=n) for n in names], ignore_index=True) if names else None
    if gens is None or gens.empty:
        return pd.DataFrame(columns=cols)
    checked = check_generations(gens).rename(columns={"passed": "compliant"})
    return checked[cols].sort_values(["study", "model", "item", "form", "repetition"]).reset_index(drop=True)


@dataclass
class WiseResults:
    """Everything ``wise-score`` prints and the Wording results page shows (shares in [0, 1]).

    ``forms``: indexed by form, ``compliance``, ``compliance_low/high``, ``delta``,
    ``delta_low/high``, ``p_value``, ``p_holm`` and the four ranking metrics with
    ``_low/_high`` and ``_undefined`` (replicates without a value); ``summary``: ``c_mean, c_worst, worst_form, c_best, best_form,
    g_wording`` with ``_low/_high`` for the three numbers; ``compliance``: models × forms.
    """

    study: str
    reference: str
    checker: str
    scheme: str
    n_boot: int
    seed: int
    level: float
    outputs: int
    forms: pd.DataFrame
    summary: dict
    compliance: pd.DataFrame
    directions: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The ``wise-score --json`` shape: percentages / pp, intervals beside the stable keys
        (docs/formats.md#mosaic-and-wise)."""

        def num(x, scale=1.0):
            return None if x is None or pd.isna(x) else round(scale * float(x), 9)

        def ci(row, name, scale=1.0):
            lo, hi = row.get(f"{name}_low"), row.get(f"{name}_high")
            return None if lo is None or pd.isna(lo) else [num(lo, scale), num(hi, scale)]

        forms = {}
        for form, row in self.forms.iterrows():
            r = row.to_dict()
            forms[str(form)] = {
                "compliance": num(r["compliance"], 100),
                "delta": num(r["delta"], 100),
                **{k: num(r.get(k)) for k in W.RANKING_COLUMNS},
                "compliance_interval": ci(r, "compliance", 100),
                "delta_interval": ci(r, "delta", 100),
                "p_value": num(r.get("p_value")),
                "p_holm": num(r.get("p_holm")),
                **{f"{k}_interval": ci(r, k) for k in W.RANKING_COLUMNS},
                **{
                    f"{k}_undefined": (None if pd.isna(r.get(f"{k}_undefined")) else int(r[f"{k}_undefined"]))
                    for k in W.RANKING_COLUMNS
                },
                "directions": (
                    {str(d): num(v, 100) for d, v in self.directions.loc[form].items()}
                    if form in self.directions.index
                    else {}
                ),
            }
        s = self.summary
        return {
            "study": self.study,
            "reference": self.reference,
            "checker": self.checker,
            "scheme": self.scheme,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "level": self.level,
            "models": list(map(str, self.compliance.index)),
            "outputs": self.outputs,
            "forms": forms,
            "c_mean": num(s["c_mean"], 100),
            "c_worst": num(s["c_worst"], 100),
            "g_wording": num(s["g_wording"], 100),
            "worst_form": s["worst_form"],
            "best_form": s["best_form"],
            "c_mean_interval": ci(s, "c_mean", 100),
            "c_worst_interval": ci(s, "c_worst", 100),
            "g_wording_interval": ci(s, "g_wording", 100),
            "model_compliance": {
                str(m): {str(f): num(v, 100) for f, v in row.items()} for m, row in self.compliance.iterrows()
            },
            "notes": self.notes,
        }


def _complete_cells(out: pd.DataFrame, forms: list[str], notes: list[str]) -> pd.DataFrame:
    """Keep the (model, item) cells that have outputs under every form; count the rest."""
    have = out.groupby(["model", "item"])["form"].nunique()
    full = have[have == len(forms)].index
    dropped = len(have) - len(full)
    if dropped:
        notes.append(
            f"{dropped} (model, item) cell(s) lack an output under some form and are left out "
            "(the matched design compares every form on the same items)"
        )
    keep = pd.MultiIndex.from_frame(out[["model", "item"]]).isin(full)
    return out[keep]


def _common_items(out: pd.DataFrame, notes: list[str], what: str) -> pd.DataFrame:
    """The rows of the items every model answered (a joint item bootstrap needs them); count the rest."""
    per_item = out.groupby("item")["model"].nunique()
    common = per_item.index[per_item == out["model"].nunique()]
    if len(common) < len(per_item):
        notes.append(f"{what}: {len(per_item) - len(common)} item(s) not answered by every model are left out")
    return out[out["item"].isin(common)]


def _study_generations(engine: Engine, study: str) -> tuple[dict, pd.DataFrame]:
    """(params, generations) of a stored WISE study."""
    with engine.connect() as conn:
        s = repo.get_wise_study(conn, name=study)
        if s is None:
            raise ValueError(
                f"study: no WISE study {study!r} (create it with wise-collect or wording-import-generations --study)"
            )
        gens = repo.generations(conn, study=study)
    return s["params"], gens


class _Design(NamedTuple):
    """A study's checked outputs, its one checker, its forms in order, the reference form and the scheme."""

    out: pd.DataFrame
    checker: str
    forms: list[str]
    reference: str
    scheme: str


def _design(study: str, params: dict, gens: pd.DataFrame, reference: Optional[str], scheme: Optional[str]) -> _Design:
    """Check the generations and settle the forms, the reference form and the bootstrap scheme."""
    order = [f["form"] for f in params.get("forms", [])]
    if gens.empty:
        raise ValueError(f"study: WISE study {study!r} has no generations yet (run wise-collect)")
    out = check_generations(gens)
    checkers = sorted(set(out["checker"]))
    if len(checkers) > 1:
        raise ValueError(f"study: {study!r} mixes checkers {checkers}; a WISE study compares wordings of one target")
    forms = [f for f in order if f in set(out["form"])] + sorted(set(out["form"]) - set(order))
    reference = (reference or params.get("reference") or DEFAULT_REFERENCE).strip()
    if reference not in forms:
        raise ValueError(f"reference: form {reference!r} has no generations; forms are {forms}")
    scheme = scheme or SCHEME_OF_CHECKER[checkers[0]]
    if scheme not in W.SCHEMES:
        raise ValueError(f"scheme: must be one of {', '.join(W.SCHEMES)}, got {scheme!r}")
    return _Design(out, checkers[0], forms, reference, scheme)


def _forms_table(
    comp: pd.DataFrame, out: pd.DataFrame, notes: list[str], d: _Design, *, n_boot: int, level: float, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-form table with intervals, p-values and ranking stability, bootstrap replicates of pooled compliance)."""
    forms, reference = d.forms, d.reference
    boot = _common_items(out, notes, "item bootstrap") if d.scheme == "item" else out
    con = W.contrast_intervals(
        boot, reference=reference, scheme=d.scheme, n_boot=n_boot, level=level, rng=np.random.default_rng(seed)
    )
    # the same draws again (same seed): intervals of compliance, C_mean, C_worst and G_wording
    reps = W.bootstrap_pooled(boot, scheme=d.scheme, n_boot=n_boot, rng=np.random.default_rng(seed))[forms]
    table = W.wording_contrasts(comp, reference=reference)
    for name, series in (("compliance", reps), ("delta", reps.sub(reps[reference], axis=0))):
        for f in forms:
            lo, hi = (np.nan, np.nan) if (name == "delta" and f == reference) else _pct_interval(series[f], level)
            table.loc[f, f"{name}_low"], table.loc[f, f"{name}_high"] = lo, hi
    table = _with_ranking(
        table.join(con[["p_value", "p_holm"]]),
        comp,
        out,
        notes,
        reference=reference,
        n_boot=n_boot,
        level=level,
        seed=seed,
    )
    return table, reps


def _robustness_summary(comp: pd.DataFrame, reps: pd.DataFrame, *, reference: str, level: float) -> dict:
    """C_mean, C_worst, G_wording (and best / worst form) with the intervals of the three numbers."""
    rob = W.robustness(comp, reference=reference).to_dict()
    summary = {k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in rob.items()}
    for name, series in (
        ("c_mean", reps.mean(axis=1)),
        ("c_worst", reps.min(axis=1)),
        ("g_wording", reps.max(axis=1) - reps.min(axis=1)),
    ):
        summary[f"{name}_low"], summary[f"{name}_high"] = _pct_interval(series, level)
    return summary


def results(
    engine: Engine,
    principal: Principal,
    *,
    study: str,
    reference: Optional[str] = None,
    scheme: Optional[str] = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> WiseResults:
    """The WISE metrics of one study with the paper's bootstrap intervals (module doc)."""
    require(principal, VIEW)
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 2:
        raise ValueError(f"n_boot: must be an integer >= 2, got {n_boot!r}")
    study = _name(study)
    params, gens = _study_generations(engine, study)
    d = _design(study, params, gens, reference, scheme)
    notes: list[str] = []
    out = _complete_cells(d.out, d.forms, notes)
    if out.empty:
        raise ValueError(f"study: no (model, item) of {study!r} has outputs under every form yet")
    comp = W.model_compliance(out)[d.forms]
    table, reps = _forms_table(comp, out, notes, d, n_boot=n_boot, level=level, seed=seed)
    return WiseResults(
        study=study,
        reference=d.reference,
        checker=d.checker,
        scheme=d.scheme,
        n_boot=int(n_boot),
        seed=seed,
        level=level,
        outputs=int(len(out)),
        forms=table.loc[d.forms],
        summary=_robustness_summary(comp, reps, reference=d.reference, level=level),
        compliance=comp,
        directions=W.failure_directions(out).reindex(d.forms),
        notes=notes,
    )


RANKING_NAMES = {
    "tau_b": "τ_b",
    "reversal_rate": "the reversal rate",
    "top3_jaccard": "the top-3 Jaccard",
    "max_rank_shift": "the maximum rank shift",
}


def _with_ranking(
    table: pd.DataFrame,
    comp: pd.DataFrame,
    out: pd.DataFrame,
    notes: list[str],
    *,
    reference: str,
    n_boot: int,
    level: float,
    seed: int,
) -> pd.DataFrame:
    """``table`` with the ranking-stability statistics, their task-bootstrap intervals (each over
    the replicates where it is defined) and the count of undefined replicates, which the notes
    report per statistic and form."""
    for k in W.RANKING_COLUMNS:
        table[k] = table[f"{k}_low"] = table[f"{k}_high"] = table[f"{k}_undefined"] = np.nan
    if len(comp) < 2:
        notes.append("ranking stability needs at least 2 models")
        return table
    rank = W.ranking_stability(comp, reference=reference)
    table.loc[rank.index, list(W.RANKING_COLUMNS)] = rank.to_numpy()
    try:
        ri = W.ranking_stability_intervals(
            _common_items(out, notes, "ranking intervals"),
            reference=reference,
            n_boot=n_boot,
            level=level,
            rng=np.random.default_rng(seed),
        )
    except ValueError as exc:
        notes.append(f"no ranking intervals: {exc}")
        return table
    table.loc[ri.index, list(ri.columns)] = ri.to_numpy()
    for form, r in ri.iterrows():
        for k, name in RANKING_NAMES.items():
            undefined = int(r[f"{k}_undefined"])
            if undefined:
                shown = (
                    "no interval"
                    if np.isnan(r[f"{k}_low"])
                    else f"its interval is over the other {n_boot - undefined:,}"
                )
                notes.append(
                    f"form {form}: {name} is undefined in {undefined:,} of {n_boot:,} ranking replicates "
                    f"(every model tied); {shown}"
                )
    return table


def _pct_interval(values: pd.Series, level: float) -> tuple[float, float]:
    return percentile_interval(np.asarray(values, dtype=float), level=level)


def score(
    engine: Engine,
    principal: Principal,
    *,
    study: str,
    reference: Optional[str] = None,
    scheme: Optional[str] = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """The ``wise-score --json`` object (docs/formats.md#mosaic-and-wise)."""
    return results(
        engine, principal, study=study, reference=reference, scheme=scheme, n_boot=n_boot, seed=seed, level=level
    ).to_json()
