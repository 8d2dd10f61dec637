"""The MOSAIC and WISE part of ``export`` (docs/formats.md#exports): per-output rows and metric tables.

Called by :func:`reform_core.services.project.export.export` with its table writer (CSV, Parquet
and JSON per table, hashed into the manifest). Every file is written even when the
project has no study, so an export always has the same file list.

* ``mosaic_checks`` — ``study, model, prompt, position, constraint, followed`` (+ ``score,
  category, checker``): every checked (output, constraint);
* ``mosaic_pa``, ``mosaic_scc``, ``mosaic_poscc``, ``mosaic_pcc`` — the metrics of
  ``mosaic-score`` per study and model (shares in [0, 1]) with their intervals;
* ``wise_outputs`` — ``study, model, item, form, target, repetition, compliant`` (+
  ``provider, direction, words, checker``): every checked generation of a WISE study;
* ``wise_forms``, ``wise_summary``, ``wise_model_compliance`` — the metrics of
  ``wise-score`` per study (shares; differences of shares).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

import pandas as pd
from sqlalchemy.engine import Engine

from reform_core.services.accounts.auth import Principal

Writer = Callable[[pd.DataFrame, Path, str, list], None]

MOSAIC_COLUMNS = {
    "mosaic_pa": [
        "study",
        "model",
        "n",
        "pa",
        "pa_low",
        "pa_high",
        "all_followed",
        "all_followed_low",
        "all_followed_high",
        "outputs",
        "checked",
        "unchecked",
    ],
    "mosaic_scc": ["study", "model", "constraint", "n", "scc", "ci_low", "ci_high"],
    "mosaic_poscc": ["study", "model", "position", "n", "poscc", "ci_low", "ci_high"],
    "mosaic_pcc": ["study", "model", "constraint_i", "constraint_j", "n", "pcc", "ci_low", "ci_high", "r", "p_value"],
}
WISE_FORM_COLUMNS = [
    "study",
    "form",
    "compliance",
    "compliance_low",
    "compliance_high",
    "delta",
    "delta_low",
    "delta_high",
    "p_value",
    "p_holm",
    "tau_b",
    "tau_b_low",
    "tau_b_high",
    "reversal_rate",
    "reversal_rate_low",
    "reversal_rate_high",
    "top3_jaccard",
    "top3_jaccard_low",
    "top3_jaccard_high",
    "max_rank_shift",
    "max_rank_shift_low",
    "max_rank_shift_high",
    "tau_b_undefined",
    "reversal_rate_undefined",
    "top3_jaccard_undefined",
    "max_rank_shift_undefined",
]
WISE_SUMMARY_COLUMNS = [
    "study",
    "reference",
    "checker",
    "scheme",
    "models",
    "outputs",
    "c_mean",
    "c_mean_low",
    "c_mean_high",
    "c_worst",
    "c_worst_low",
    "c_worst_high",
    "worst_form",
    "g_wording",
    "g_wording_low",
    "g_wording_high",
    "best_form",
]


CHECK_COLUMNS = ["study", "model", "prompt", "position", "constraint", "followed", "score", "category", "checker"]
OUTPUT_COLUMNS = [
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
]  # of services.mosaic.check_rows / services.wise.outputs (a test holds them equal)


def _mosaic_tables(engine: Engine, principal: Principal, *, n_boot: int, seed: int, notes: list) -> dict:
    from reform_core.services.studies import mosaic

    tables = {k: [] for k in MOSAIC_COLUMNS}
    for name in mosaic.list_studies(engine, principal)["name"]:
        res = mosaic.results(engine, principal, study=name, n_boot=n_boot, seed=seed)
        notes += [f"MOSAIC {name}: {n}" for n in res.notes]
        pa = res.pa.join(res.counts, on="model")
        for key, df in (
            ("mosaic_pa", pa),
            ("mosaic_scc", res.scc),
            ("mosaic_poscc", res.poscc),
            ("mosaic_pcc", res.pcc),
        ):
            tables[key].append(df.assign(study=name))
    return {
        k: (pd.concat(v, ignore_index=True) if v else pd.DataFrame(columns=MOSAIC_COLUMNS[k]))[MOSAIC_COLUMNS[k]]
        for k, v in tables.items()
    }


def _wise_tables(engine: Engine, principal: Principal, *, n_boot: int, seed: int, notes: list) -> dict:
    from reform_core.services.studies import wise

    forms, summary, comp = [], [], []
    for name in wise.list_studies(engine, principal)["name"]:
        try:
            res = wise.results(engine, principal, study=name, n_boot=n_boot, seed=seed)
        except ValueError as exc:  # e.g. a study without generations yet
            notes.append(f"WISE {name}: not scored: {exc}")
            continue
        notes += [f"WISE {name}: {n}" for n in res.notes]
        forms.append(res.forms.rename_axis("form").reset_index().assign(study=name))
        summary.append(
            {
                "study": name,
                "reference": res.reference,
                "checker": res.checker,
                "scheme": res.scheme,
                "models": len(res.compliance),
                "outputs": res.outputs,
                **res.summary,
            }
        )
        comp.append(
            res.compliance.rename_axis("model")
            .reset_index()
            .melt("model", var_name="form", value_name="compliance")
            .assign(study=name)
        )
    return _wise_frames(forms, summary, comp)


def _wise_frames(forms: list, summary: list, comp: list) -> dict:
    return {
        "wise_forms": (pd.concat(forms, ignore_index=True) if forms else pd.DataFrame(columns=WISE_FORM_COLUMNS))[
            WISE_FORM_COLUMNS
        ],
        "wise_summary": pd.DataFrame(summary, columns=WISE_SUMMARY_COLUMNS),
        "wise_model_compliance": (
            pd.concat(comp, ignore_index=True)
            if comp
            else pd.DataFrame(columns=["study", "model", "form", "compliance"])
        )[["study", "model", "form", "compliance"]],
    }


def write_study_tables(
    engine: Engine,
    principal: Principal,
    out: Path,
    files: list[str],
    *,
    write: Writer,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict:
    """Write the study files into ``out`` (appending their names to ``files``); returns the
    manifest's ``studies`` entry."""
    notes: list[str] = []
    if has_studies(engine):
        from reform_core.services.studies import mosaic, wise

        checks, outputs = mosaic.check_rows(engine, principal), wise.outputs(engine, principal)
        mosaic_tables = _mosaic_tables(engine, principal, n_boot=n_boot, seed=seed, notes=notes)
        wise_tables = _wise_tables(engine, principal, n_boot=n_boot, seed=seed, notes=notes)
    else:  # no study: the same (empty) files, without loading the study services
        checks, outputs = pd.DataFrame(columns=CHECK_COLUMNS), pd.DataFrame(columns=OUTPUT_COLUMNS)
        mosaic_tables = {k: pd.DataFrame(columns=cols)[cols] for k, cols in MOSAIC_COLUMNS.items()}
        wise_tables = _wise_frames([], [], [])
    write(checks, out, "mosaic_checks", files)
    for stem, df in mosaic_tables.items():
        write(df, out, stem, files)
    write(outputs, out, "wise_outputs", files)
    for stem, df in wise_tables.items():
        write(df, out, stem, files)
    return {
        "mosaic": {
            "rows": "mosaic_checks.csv (followed = score >= 0.5, docs/metrics.md#mosaic; unchecked pairs absent)",
            "intervals": "percentile bootstrap over prompts, one draw for every model",
            "recompute": "python -m reform_core mosaic-score --study NAME --json",
        },
        "wise": {
            "rows": "wise_outputs.csv (compliant = the wise:* checker on the complete output)",
            "intervals": "per study the paper's scheme for its checker (provider-model-item for exact counts "
            "and JSON, item for keywords, model-item for ranges); ranking: task bootstrap; "
            "Holm over the study's contrasts",
            "recompute": "python -m reform_core wise-score --study NAME --json",
        },
        "replicates": n_boot,
        "seed": seed,
        "level": 0.95,
        "notes": notes,
        "inputs_sha256": inputs_sha256(engine),
    }


def _digest(frame: pd.DataFrame, columns: list[str], order: list[str]) -> str:
    """sha256 of ``columns`` row by row, sorted by ``order`` in code-point order (the same on any database)."""
    h = hashlib.sha256()
    for row in frame.sort_values(order, kind="stable")[columns].itertuples(index=False):
        h.update(json.dumps(list(row), sort_keys=True, default=str, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def inputs_sha256(engine: Engine) -> dict:
    """Per study, a hash of what its numbers are computed from (``{"mosaic": {NAME: sha256},
    "wise": {NAME: sha256}}``): MOSAIC prompts, constraint lists with their checkers and
    parameters, outputs and check scores; WISE generations. The project's ``dataset_sha256``
    covers the benchmark only; two exports with equal hashes here scored the same inputs."""
    from db.repo import mosaic as mosaic_repo
    from db.repo import wording as wording_repo

    out: dict[str, dict[str, str]] = {"mosaic": {}, "wise": {}}
    with engine.connect() as conn:
        for sid, name in mosaic_repo.list_studies(conn)[["id", "name"]].itertuples(index=False):
            sid = int(sid)
            parts = [
                _digest(
                    mosaic_repo.prompts(conn, study_id=sid),
                    ["key", "task", "product", "system_prompt", "user_prompt"],
                    ["key"],
                ),
                _digest(
                    mosaic_repo.constraints(conn, study_id=sid),
                    ["prompt", "position", "constraint", "category", "text", "verifier", "params", "rubric"],
                    ["prompt", "position"],
                ),
                _digest(mosaic_repo.outputs(conn, study_id=sid), ["prompt", "model", "output"], ["prompt", "model"]),
                _digest(
                    mosaic_repo.checks(conn, study_id=sid),
                    ["model", "prompt", "position", "checker", "score"],
                    ["model", "prompt", "position", "checker"],
                ),
            ]
            out["mosaic"][str(name)] = hashlib.sha256("".join(parts).encode()).hexdigest()
        for name in wording_repo.list_wise_studies(conn)["name"]:
            out["wise"][str(name)] = _digest(
                wording_repo.generations(conn, study=name),
                list(wording_repo.GENERATION_COLUMNS),
                list(wording_repo.GENERATION_KEY),
            )
    return out


def has_scores(engine: Engine) -> bool:
    """Whether the project has judgments (so the benchmark tables can be scored)."""
    from db.repo.data import count_rows

    with engine.connect() as conn:
        return count_rows(conn, "judgment") > 0


def has_studies(engine: Engine) -> bool:
    from db.repo.data import count_rows

    with engine.connect() as conn:
        return count_rows(conn, "mosaic_study") + count_rows(conn, "wise_study") > 0


def export_studies_only(engine: Engine, out: Path, *, principal: Principal, n_boot: int = 2000, seed: int = 0) -> dict:
    """The export of a project that holds MOSAIC / WISE studies but no judged benchmark:
    the study files and a manifest (no benchmark tables, which need judgments)."""
    from datetime import datetime, timezone

    import reform_core
    from reform_core.services.project.export_files import dataset_hash, sha256_file, write_table

    files: list[str] = []
    studies = write_study_tables(engine, principal, out, files, write=write_table, n_boot=n_boot, seed=seed)
    manifest = {
        "app": "ReForm",
        "app_version": reform_core.__version__,
        "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "dataset_sha256": dataset_hash(engine),
        "scores_from": "no judgments in this project: only the study files are written",
        "studies": studies,
        "files": {f: sha256_file(out / f) for f in files},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str), encoding="utf-8")
    return manifest
