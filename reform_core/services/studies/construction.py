"""Construction use cases: build variants, screen them, extract baseline features, write
MOSAIC and WISE manifests (ReFormBench, arXiv:2610.19693, §3.3, App. A.4, A.7; the WISE
paper, *When Verifiable Counts Depend on Wording*, §4; MOSAIC, arXiv:2601.18554, §3.1).

The pure work lives in :mod:`reform_core.construction`; this module reads the database,
calls LLMs through :mod:`reform_core.services.judging.collection` and writes through the bundle
importer (validated, one transaction, idempotent).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import data as repo
from reform_core.catalog import load_catalog
from reform_core.construction import extraction, mosaic_gen, prompts, variants, wise_gen
from reform_core.metrics.coverage import catalog_coverage
from reform_core.safe_csv import write_csv
from reform_core.services.data.importer import frames_bundle, import_bundle_obj
from reform_core.services.judging import collection


def _questions(engine: Engine) -> pd.DataFrame:
    with engine.connect() as conn:
        return repo.read_frame(conn, "question", ["id", "key", "text"])


def _catalog(engine: Engine, catalog: Optional[str]):
    """``catalog`` (a bundled or stored name, or a file), else the project's meta catalog."""
    from reform_core.services.data.catalogs import catalog_named

    with engine.connect() as conn:
        name = catalog or repo.get_meta(conn).get("catalog", "reformbench") or "reformbench"
        try:
            return catalog_named(conn, name)
        except ValueError:
            return load_catalog(name)  # a file path (or the loader's own message)


def _questions_without_variants(engine: Engine) -> pd.DataFrame:
    """The questions with no main instruction yet, by key (a ValueError when there are none)."""
    qs = _questions(engine)
    with engine.connect() as conn:
        ins_db = repo.read_frame(conn, "instruction", ["question_id", "condition"])
    done = set(ins_db.loc[ins_db["condition"] == "main", "question_id"])
    todo = qs[~qs["id"].isin(done)].sort_values("key")
    if todo.empty:
        raise ValueError("questions: every question already has main variants (import questions first)")
    return todo


def _checked_variants(
    todo: pd.DataFrame, cat, *, per_question: int, seed: int, k: int, pool_size: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(instructions, constraints) of the proposed variants; a ValueError naming the first failed check."""
    rng = np.random.default_rng(seed)
    ins, con = variants.propose_variants(todo, cat, per_question=per_question, rng=rng, k=k, pool_size=pool_size)
    issues = variants.check_variants(ins, con, cat, k=k, verbatim=True)
    if len(issues):
        first = issues.iloc[0]
        raise ValueError(
            f"{len(issues)} variant check(s) failed, e.g. {first['instruction']} "
            f"position {first['position']}: {first['field']}: {first['message']}"
        )
    return ins, con


def _integrated_texts(
    ins: pd.DataFrame, con: pd.DataFrame, todo: pd.DataFrame, integrate: dict
) -> tuple[list[str], int, int]:
    """(instruction texts after LLM integration, integrated, failed); a failure keeps the template text."""
    qtext = dict(zip(todo["key"], todo["text"]))
    by_ins = {key: g.sort_values("position") for key, g in con.groupby("instruction")}
    items = [
        collection.GenItem(
            "integration",
            r.question,
            r.key,
            "integration",
            "",
            messages=tuple(
                prompts.integration_messages(
                    qtext[r.question], by_ins[r.key][["text", "acceptance"]].to_dict("records")
                )
            ),
        )
        for r in ins.itertuples(index=False)
    ]
    results = collection.run_prompts(
        items,
        provider=integrate["provider"],
        model=integrate["model"],
        base_url=integrate.get("base_url"),
        api_key=integrate.get("api_key"),
    )
    texts, integrated, errors = [], 0, 0
    for r, old in zip(results, ins["text"]):
        try:
            if r.error:
                raise ValueError(r.error)
            texts.append(prompts.parse_integration(r.text))
            integrated += 1
        except ValueError:
            texts.append(old)
            errors += 1
    return texts, integrated, errors


def build_variants(
    engine: Engine,
    *,
    per_question: int,
    seed: int = 0,
    pool_size: int = 6,
    k: int = 3,
    catalog: Optional[str] = None,
    single: bool = False,
    prompted: bool = False,
    integrate: Optional[dict] = None,
    dry_run: bool = False,
) -> dict:
    """Compose candidate variants for every question that has no main instruction yet,
    check them, optionally let an LLM integrate the constraints into the question
    (``integrate = {"provider", "model", "base_url"?, "api_key"?}``; a failed integration
    keeps the template text and is counted), add single / prompted copies, and import.

    Returns ``{"questions", "instructions", "constraints", "integrated", "integration_errors",
    "multiplicity"}`` (Table A11 rows as records). ``dry_run`` writes nothing.
    """
    cat = _catalog(engine, catalog)
    todo = _questions_without_variants(engine)
    ins, con = _checked_variants(todo, cat, per_question=per_question, seed=seed, k=k, pool_size=pool_size)
    integrated = errors = 0
    if integrate:
        texts, integrated, errors = _integrated_texts(ins, con, todo, integrate)
        ins["text"] = texts
    extra_i, extra_c = variants.derive_conditions(ins, con, todo, single=single, prompted=prompted)
    all_i, all_c = pd.concat([ins, extra_i], ignore_index=True), pd.concat([con, extra_c], ignore_index=True)
    table = variants.multiplicity_table(ins, con)
    if not dry_run:
        import_bundle_obj(
            engine,
            frames_bundle({"instructions": all_i, "constraints": all_c}, source="<build-variants>", catalog=cat.name),
        )
    return {
        "questions": int(len(todo)),
        "instructions": int(len(all_i)),
        "constraints": int(len(all_c)),
        "integrated": integrated,
        "integration_errors": errors,
        "multiplicity": table.to_dict("records"),
    }


def screen_variants(
    engine: Engine, *, keep: int, calibration: str = "stratified", judges: Optional[tuple[str, str]] = None
) -> pd.DataFrame:
    """Difficulty screening of the main variants over every evaluated (screening) model that
    answered all of them: :func:`reform_core.construction.variants.screen_difficulty` on
    calibrated probabilities (ReFormBench App. A.7.5)."""
    from reform_core.services.scoring.scoring import calibrated_instances, load_project

    frames = load_project(engine, judges=judges)
    inst, _ = calibrated_instances(frames, calibration)
    inst = inst[(inst["condition"] == "main") & inst["p"].notna()]
    if inst.empty:
        raise ValueError("no calibrated main instances to screen (collect, judge and plan first)")
    return variants.screen_difficulty(inst, keep=keep)


def extract_features(
    engine: Engine,
    *,
    provider: str = "rules",
    model: str = "",
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    open_ended: bool = False,
    out: Optional[str | Path] = None,
    concurrency: int = 8,
) -> dict:
    """Annotate baseline responses with catalog features (rule detectors, plus the LLM for
    the others when ``provider`` is openai/gemini: :func:`reform_core.services.judging.judging.annotate_baseline`).

    With ``open_ended`` (an LLM provider), also run open-ended extraction on every baseline
    response, map the features to the catalog and return the coverage table (App. A.4);
    ``out`` writes the mapped instances as CSV. Returns ``{"annotation": {...},
    "extracted": n, "coverage": [rows]}``.
    """
    from reform_core.services.judging.judging import annotate_baseline

    if open_ended and provider not in collection.PROVIDERS:
        raise ValueError(f"open_ended: needs an LLM provider {collection.PROVIDERS}, got {provider!r}")
    annotation = annotate_baseline(
        engine, provider=provider, model=model, base_url=base_url, api_key=api_key, concurrency=concurrency
    )
    result = {"annotation": annotation, "extracted": 0, "coverage": []}
    if not open_ended:
        return result
    cat = _catalog(engine, None)
    rows = [{"key": f.key, "name": f.name, "definition": f.definition} for f in cat]
    with engine.connect() as conn:
        resp = repo.read_frame(conn, "response", ["model_id", "question_id", "kind", "text"])
        models = repo.read_frame(conn, "eval_model", ["id", "name"])
        qs = repo.read_frame(conn, "question", ["id", "key"])
    base = resp[resp["kind"] == "baseline"]
    mname, qkey = dict(zip(models["id"], models["name"])), dict(zip(qs["id"], qs["key"]))
    items = [
        collection.GenItem(
            mname[r.model_id],
            qkey[r.question_id],
            None,
            "extraction",
            "",
            messages=tuple(prompts.extraction_messages(r.text or "", rows)),
        )
        for r in base.itertuples(index=False)
    ]
    results = collection.run_prompts(
        items, provider=provider, model=model, base_url=base_url, api_key=api_key, concurrency=concurrency
    )
    records, failed = [], 0
    for r in results:
        try:
            if r.error:
                raise ValueError(r.error)
            for f in prompts.parse_extraction(r.text):
                records.append({"model": r.item.model, "question": r.item.question, **f})
        except ValueError:
            failed += 1
    ext = pd.DataFrame(records, columns=["model", "question", "name", "description", "mapping", "catalog_features"])
    mapped = extraction.map_extracted(ext, cat)
    if out is not None:
        write_csv(
            mapped.assign(features=mapped["features"].map(",".join), dropped=mapped["dropped"].map(",".join)), out
        )
    cov = catalog_coverage(mapped) if len(mapped) else pd.DataFrame()
    stored = _store_extractions(engine, mapped, source=f"llm:{provider}")
    result.update(extracted=int(len(mapped)), failed=failed, coverage=cov.to_dict("records"), stored=stored)
    return result


def _store_extractions(engine: Engine, mapped: pd.DataFrame, *, source: str) -> int:
    """Keep the mapped open-ended extractions in the project (``feature_extraction``, the
    bundle's ``extractions.jsonl``) so ``analyses`` and the Scores page show Table A4; a rerun
    replaces the labels it extracts again. Returns the rows written."""
    from reform_core.services.data.importer import frames_bundle, import_bundle_obj

    if mapped.empty:
        return 0
    feats = mapped["features"].map(lambda f: f[0] if len(f) else "")
    ext = pd.DataFrame(
        {
            "model": mapped["model"].astype(str),
            "question": mapped["question"].astype(str),
            "label": mapped["name"].astype(str).str.slice(0, 200),
            "feature": np.where(mapped["mapping"].isin(["uncovered", "not_format"]), "", feats),
            "match": mapped["mapping"].astype(str),
            "source": source,
        }
    )
    ext = ext[ext["label"].str.strip() != ""].drop_duplicates(["model", "question", "label"])
    counts = import_bundle_obj(engine, frames_bundle({"extractions": ext}), replace=True)
    return int(counts.get("extractions", 0))


def mosaic_prompts(*, n: int = 4000, seed: int = 0) -> tuple[list[dict], dict[str, pd.DataFrame]]:
    """``n`` balanced MOSAIC prompts and their constraint × size / × rank count tables."""
    prompts_ = mosaic_gen.generate(n, np.random.default_rng(seed))
    return prompts_, mosaic_gen.balance_counts(prompts_)


def write_mosaic(out: str | Path, *, n: int = 4000, seed: int = 0) -> dict:
    """Write ``n`` balanced MOSAIC prompts as JSONL and the balance tables as CSV next to it."""
    prompts_, counts = mosaic_prompts(n=n, seed=seed)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for p in prompts_:
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
    for kind, tab in counts.items():
        write_csv(tab, out.with_name(f"{out.stem}_balance_{kind}.csv"), index=True)
    spread = {kind: _spread(tab) for kind, tab in counts.items()}
    return {"prompts": len(prompts_), "file": str(out), "max_deviation": spread}


def _spread(tab: pd.DataFrame) -> float:
    """Largest relative deviation of a cell from the uniform count of its column."""
    expected = tab.sum(axis=0) / len(tab)
    return round(float((tab / expected - 1).abs().max().max()), 4)


WISE_PANELS = tuple(wise_gen.PANELS)


def wise_items(
    *, tasks: list[str], targets: list, panel: str = "exact_count", repetitions: int = 3, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(task manifest, form manifest, matched items) of a WISE panel (WISE paper §4, App. R)."""
    manifest = wise_gen.task_manifest(tasks, targets, np.random.default_rng(seed))
    forms = wise_gen.form_manifest(panel)
    return manifest, forms, wise_gen.matched_items(manifest, forms, repetitions=repetitions)


def write_wise(
    out_dir: str | Path,
    *,
    tasks: list[str],
    targets: list,
    panel: str = "exact_count",
    repetitions: int = 3,
    seed: int = 0,
) -> dict:
    """Write ``tasks.csv`` (item, task, target), ``forms.csv`` (form, template, checker) and
    ``items.jsonl`` (every task × form × repetition with its prompt) to ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest, forms, items = wise_items(tasks=tasks, targets=targets, panel=panel, repetitions=repetitions, seed=seed)
    write_csv(manifest, out_dir / "tasks.csv")
    write_csv(forms, out_dir / "forms.csv")
    items.to_json(out_dir / "items.jsonl", orient="records", lines=True, force_ascii=False)
    return {"tasks": int(len(manifest)), "forms": int(len(forms)), "items": int(len(items)), "dir": str(out_dir)}
