"""Exports with provenance: every table as CSV, Parquet and JSON, per-instance p_u,
adjudication and rating records, and a manifest that lets anyone recompute the numbers.

``recompute(dir)`` rebuilds Table 2 from the exported ``instances.csv`` alone (pure), so an
export can be checked against its own files.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Engine

import reform_core
from reform_core.safe_csv import read_csv, write_csv
from reform_core.score_text import summary_text
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.project.export_files import dataset_hash_started, sha256_file, write_table
from reform_core.services.project.study_export import export_studies_only, has_scores, has_studies, write_study_tables
from reform_core.services.scoring import estimates
from reform_core.services.scoring.analyses import N_BOOT as ANALYSIS_BOOT
from reform_core.services.scoring.analyses import AnalysesResult, analyses, analyses_json
from reform_core.services.scoring.numbers import json_number
from reform_core.services.scoring.scoring import DEFAULT_CALIBRATION, ScoreResult, score, score_json

INSTANCE_COLUMNS = [
    "model",
    "question",
    "instruction",
    "condition",
    "pair_group",
    "task_type",
    "position",
    "feature",
    "category",
    "mode",
    "baseline_opposed",
    "p",
]
# the auxiliary analyses' files (services/scoring/analyses.py); Table 3 is recomputable from instances.csv
ANALYSIS_FILES = {
    "table3_composition": "table3_composition",
    "composition_targets": "figure4_composition_targets",
    "prompting": "prompting",
    "table_a4_coverage": "table_a4_coverage",
    "table4_frequency": "table4_frequency",
    "table4_correlation": "table4_correlation",
}
TABLE_FILES = {
    "table2": "table2",
    "a2": "table_a2_violation_spread",
    "a3": "table_a3_judge_agreement",
    "a5": "table_a5_task_summary",
    "a6_a7": "table_a6_a7_tasks",
    "a8": "table_a8_units",
    "ranks": "rank_comparison",
}


def instances_frame(result: ScoreResult, p_auxiliary: pd.Series | None = None) -> pd.DataFrame:
    """``instances.csv`` (docs/formats.md#exports): one row per (model, instruction, constraint) + ``label_<judge>``;
    ``p_auxiliary`` (p under the auxiliary analyses' rule, by iid) when given."""
    inst = result.instances
    judges = result.frames.judges if result.frames else []
    cols = INSTANCE_COLUMNS + [f"label_{j}" for j in judges if f"label_{j}" in inst.columns]
    out = inst[cols].copy()
    for extra in ("source", "provisional", "stratum"):
        if extra in inst.columns:
            out[extra] = inst[extra]
    if p_auxiliary is not None:
        out["p_auxiliary"] = inst["iid"].map(p_auxiliary).to_numpy()
    return out.sort_values(["model", "instruction", "position"]).reset_index(drop=True)


def _write_summary(out: Path, scored: dict, analyses: dict) -> str:
    """``summary.txt``: the scores, intervals and analyses as a person reads them (rounded to what
    each interval supports, docs/display.md); the CSV, Parquet and JSON files keep full precision."""
    (out / "summary.txt").write_text(summary_text(scored, analyses), encoding="utf-8")
    return "summary.txt"


def _records(engine: Engine) -> dict:
    with engine.connect() as conn:

        def frame(sql):
            res = conn.execute(text(sql))
            return pd.DataFrame(res.all(), columns=list(res.keys()))

        return {
            "adjudications": frame(
                "SELECT a.id, p.name AS plan, m.name AS model, i.key AS instruction, c.position, t.stratum, "
                "a.choice, a.label, COALESCE(u.username, a.annotator) AS annotator, a.note, a.seconds, a.supersedes_id, a.created_at "
                "FROM adjudication a JOIN adjudication_task t ON t.id = a.task_id JOIN sample_plan p ON p.id = t.plan_id "
                "JOIN response r ON r.id = t.response_id JOIN eval_model m ON m.id = r.model_id "
                "JOIN constraint_item c ON c.id = t.constraint_id JOIN instruction i ON i.id = c.instruction_id "
                "LEFT JOIN app_user u ON u.id = a.user_id ORDER BY a.id"
            ),
            "ratings": frame(
                "SELECT w.id, s.name AS study, f.key AS form, it.target, u.username AS annotator, w.requires_exact, "
                "w.clarity, w.naturalness, w.ambiguity, w.complexity, w.supersedes_id, w.created_at "
                "FROM wording_rating w JOIN wording_item it ON it.id = w.item_id JOIN wording_study s ON s.id = it.study_id "
                "JOIN wording_form f ON f.id = it.form_id LEFT JOIN app_user u ON u.id = w.user_id ORDER BY w.id"
            ),
            "plans": frame(
                "SELECT p.name, ja.name AS judge_a, jb.name AS judge_b, p.params, p.created_at FROM sample_plan p "
                "JOIN judge ja ON ja.id = p.judge_a_id JOIN judge jb ON jb.id = p.judge_b_id ORDER BY p.id"
            ),
            "judges": frame("SELECT name, provider, model, prompt_version, config FROM judge ORDER BY id"),
            "catalogs": catalog_entries(conn),
        }


def catalog_entries(conn) -> list[dict]:
    """The manifest's ``catalogs``: every catalog of the project (name, version, features,
    used, source, sha256); a team's own catalog's text is written beside the manifest
    (``file``), so the export names exactly the catalog it was scored with."""
    from reform_core.services.data.catalogs import manifest_entries

    out = []
    for e in manifest_entries(conn):
        text = e.pop("text", None)
        if text is not None:
            suffix = (
                Path(e["source"]).suffix.lower() if Path(e["source"]).suffix.lower() in (".json", ".yml") else ".yaml"
            )
            e["file"] = "catalog_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", e["name"])[:80] + suffix
            e["_text"] = text
        out.append(e)
    return out


def export(
    engine: Engine,
    out_dir: str | Path,
    *,
    principal: Principal,
    calibration: str = DEFAULT_CALIBRATION,
    n_boot: int = 2000,
    seed: int = 0,
    judges: tuple[str, str] | None = None,
) -> dict:
    """Write every export file and the manifest into ``out_dir``; return the manifest.

    Scores come from the project's scoring pair (``judges`` overrides it); the manifest
    records the pair, the applicable metrics and, per model, what was left out and why."""
    require(principal, "export")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not has_scores(engine) and has_studies(engine):  # a project of MOSAIC / WISE studies only
        return export_studies_only(engine, out, principal=principal, n_boot=n_boot, seed=seed)
    hashed = dataset_hash_started(engine)
    result = score(
        engine, principal, calibration=calibration, judges=judges, with_intervals=True, reps=n_boot, seed=seed
    )
    scored = score_json(result)
    files: list[str] = []
    aux = analyses(engine, principal, judges=judges, n_boot=min(n_boot, ANALYSIS_BOOT), seed=seed, frames=result.frames)
    _write_score_files(out, result, aux, principal, files)
    rec = _records(engine)
    _write_record_tables(rec, out, files)
    studies = write_study_tables(engine, principal, out, files, write=write_table, n_boot=n_boot, seed=seed)
    for c in rec["catalogs"]:
        if "_text" in c:
            (out / c["file"]).write_text(c["_text"], encoding="utf-8")
            files.append(c["file"])
    files.append(_write_summary(out, scored, aux.tables))
    manifest = _manifest(result, scored, aux, rec, principal, hashed=hashed, n_boot=n_boot, seed=seed, studies=studies)
    manifest["files"] = {f: sha256_file(out / f) for f in files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str), encoding="utf-8")
    return manifest


def _write_score_files(
    out: Path, result: ScoreResult, aux: AnalysesResult, principal: Principal, files: list[str]
) -> None:
    """Write ``instances.csv``/``.parquet``, the score tables, the intervals, the auxiliary
    analyses' tables and the estimator's reports (annotators' accuracy for leads only)."""
    inst = instances_frame(result, aux.p_auxiliary)
    write_csv(inst, out / "instances.csv")
    files.append("instances.csv")
    inst.to_parquet(out / "instances.parquet", index=False)
    files.append("instances.parquet")
    for key, stem in TABLE_FILES.items():
        if key in result.tables:
            write_table(result.tables[key], out, stem, files)
    write_table(result.intervals, out, "intervals", files)
    for key, stem in ANALYSIS_FILES.items():
        if key in aux.tables:
            write_table(aux.tables[key], out, stem, files)
    write_table(aux.exclusions, out, "analysis_exclusions", files)
    if result.rates is not None:
        write_table(result.rates, out, "strata", files)
    est = result.estimate
    if est is not None and est.design is not None:  # the default estimator's reports
        write_table(est.totals, out, "estimator_clusters", files)
        write_table(est.both_wrong, out, "both_wrong", files)
        if principal.can("plan_sampling"):  # annotators' estimated accuracy: leads only (as on the Scores page)
            write_table(est.annotators, out, "annotators", files)


def _write_record_tables(rec: dict, out: Path, files: list[str]) -> None:
    """Write the adjudication and rating records (text cells as strings, missing ones empty)."""
    for name in ("adjudications", "ratings"):
        df = rec[name].copy()
        for c in df.columns:
            if df[c].dtype == object:
                df[c] = df[c].astype(str).where(df[c].notna(), None)
        write_table(df, out, name, files)


def _manifest(
    result: ScoreResult,
    scored: dict,
    aux: AnalysesResult,
    rec: dict,
    principal: Principal,
    *,
    hashed: Callable[[], str],
    n_boot: int,
    seed: int,
    studies: dict,
) -> dict:
    """The manifest's entries but ``files``: provenance (``hashed`` gives the dataset's hash),
    judges, metrics, per-model notes, the estimator and its plan, calibration and interval
    methods, analyses and studies."""
    est = result.estimate
    plans = [
        {
            **r,
            "params": json.loads(r["params"]) if isinstance(r["params"], str) else r["params"],
            "created_at": str(r["created_at"]),
        }
        for r in rec["plans"].to_dict("records")
    ]
    judge_rows = [
        {**r, "config": json.loads(r["config"]) if isinstance(r["config"], str) else r["config"]}
        for r in rec["judges"].to_dict("records")
    ]
    return {
        "app": "ReForm",
        "app_version": reform_core.__version__,
        "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "dataset_sha256": hashed(),
        "judges": judge_rows,
        "judge_pair": list(result.pair) if result.pair else [],
        "judge_pair_source": result.pair_source,
        "catalogs": [{k: v for k, v in c.items() if k != "_text"} for c in rec["catalogs"]],
        "metrics": result.metrics,
        "metric_definitions": scored["metric_definitions"],
        "models": {
            m: {
                "instructions": r["instructions"],
                "excluded": r["excluded"],
                "notes": r["notes"],
                **{k: r[k] for k in ("intervals", "both_wrong") if k in r},
            }
            for m, r in scored["models"].items()
        },
        "estimator": result.estimator,
        **({"estimator_plan": scored["plan"], "verdict": scored["verdict"]} if est is not None else {}),
        **({"plan_closure": scored["verdict"]["closed"]} if (scored.get("verdict") or {}).get("closed") else {}),
        **({"annotators": scored["annotators"]} if est is not None and principal.can("plan_sampling") else {}),
        "notes": scored["notes"],
        "other_pair_decisions": result.other_pair_decisions,
        "sample_plans": plans,
        "calibration": {
            "rule": result.method,
            "provisional": result.provisional,
            "description": CALIBRATION_DESCRIPTIONS.get(result.method, result.method),
        },
        "intervals": {
            "measurement": estimates.MEASUREMENT_TEXT,
            "population": estimates.POPULATION_TEXT,
            "method": INTERVAL_METHODS.get(result.method, INTERVAL_METHODS["raw"]),
            "replicates": n_boot,
            "seed": seed,
            "level": 0.95,
            "file": "intervals.csv",
        },
        "scores_from": (
            "estimator_clusters.csv (per model × question totals of the estimator; recompute: python -m "
            "reform_core score-export DIR --json); instances.csv p = each instance's point estimate, for the "
            "breakdown tables"
            if est is not None
            else "instances.csv (recompute: python -m reform_core score-export DIR --json)"
        ),
        "analyses": {k: v for k, v in analyses_json(aux).items() if k not in ("tables", "exclusions")}
        | {"files": {k: ANALYSIS_FILES[k] for k in aux.tables}, "p_auxiliary": "instances.csv column p_auxiliary"},
        "studies": studies,
    }


CLUSTER_DESCRIPTION = (
    "question-cluster difference estimator (reform_core.estimators.cluster): per model × question "
    "the judges' prediction plus the adjudicated questions' inverse-probability-weighted correction, "
    "audited agreements correcting errors of both judges, decisions debiased for adjudicator error; "
    "Table 2 = sum of the cluster totals / denominators (estimator_clusters.csv)"
)
CALIBRATION_DESCRIPTIONS = {  # the manifest's calibration.description per rule
    "stratified": "p = agreed label; else adjudicated label; else the stratum's reviewed pass "
    "rate (docs/metrics.md#stratified-calibration)",
    "pooled": "p = agreed label; else W_A*label_A + (1-W_A)*label_B with W from the decisions "
    "on disagreements (docs/metrics.md#pooled-calibration)",
    "cluster": CLUSTER_DESCRIPTION,
}
INTERVAL_METHODS = {
    "cluster": "measurement: linearised two-stage variance (cluster sample, agreement audit, adjudicator-error refits), "
    "t quantile; population: cluster bootstrap over questions of the estimator's totals",
    "stratified": "measurement: stratum pass rates drawn from their Jeffreys posteriors; population: plus a cluster "
    "bootstrap over questions (reform_core.estimators.paper)",
    "pooled": "measurement: W_A drawn from its Jeffreys posterior; population: plus a cluster bootstrap over questions "
    "(reform_core.estimators.paper)",
    "raw": "one judge's raw labels: no measurement interval (nothing is estimated); population: cluster bootstrap over "
    "questions",
}


def _recompute_clusters(path: Path) -> dict:
    """Table 2 from the default estimator's per-cluster totals: rate = 100 Σ_q T / Σ_q D,
    clipped to [0, 100] as ``score`` shows it."""
    t = read_csv(path, dtype={"model": str, "question": str})
    g = t.groupby("model").sum(numeric_only=True)
    out = {}
    for model, r in g.iterrows():
        rate = {
            k: (100 * r[f"t_{num}"] / r[f"d_{num}"] if r[f"d_{num}"] > 0 else None)
            for k, num in (("tcpr", "allpass"), ("r1", "joint1"), ("r2", "joint2"), ("r3", "joint3"))
        }
        rs = [rate[f"r{k}"] for k in (1, 2, 3)]
        rate["emcr"] = sum(rs) / 3 if all(v is not None for v in rs) else None
        rate = {k: (None if v is None else min(max(v, 0.0), 100.0)) for k, v in rate.items()}
        out[str(model)] = {
            **{k: json_number(rate[k]) for k in ("tcpr", "emcr", "r1", "r2", "r3")},
            "units": [int(r[f"d_joint{k}"]) for k in (1, 2, 3)],
        }
    return {"models": out}


def recompute(export_dir: str | Path) -> dict:
    """Table 2 recomputed from an export's own files (the ``score --json`` shape,
    docs/formats.md#adjudication-and-scores): from the
    default estimator's ``estimator_clusters.csv`` when present, else from ``instances.csv``
    alone (the paper's rules and raw judges: a plug-in of ``p``)."""
    from reform_core.metrics.reform import table2

    clusters = Path(export_dir) / "estimator_clusters.csv"
    if clusters.exists():
        return _recompute_clusters(clusters)
    path = Path(export_dir) / "instances.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path}: not found (is this a ReForm export directory?)")
    inst = read_csv(path, dtype={"model": str, "question": str, "instruction": str, "task_type": str})
    inst = inst[inst["condition"] == "main"].copy()
    inst["iid"] = range(len(inst))
    inst["baseline_opposed"] = inst["baseline_opposed"].astype("boolean")  # empty cell = unknown, never True
    t2 = table2(inst)
    out = {
        "models": {
            str(r["model"]): {
                **{k: json_number(r[k]) for k in ("tcpr", "emcr", "r1", "r2", "r3")},
                "units": [int(r["n1"]), int(r["n2"]), int(r["n3"])],
            }
            for _, r in t2.iterrows()
        }
    }
    table3 = recompute_table3(export_dir)
    if table3 is not None:
        out["table3"] = json.loads(table3.to_json(orient="records", double_precision=10))
    return out


def recompute_table3(export_dir: str | Path) -> pd.DataFrame | None:
    """Table 3 from an export's ``instances.csv`` alone: its ``p_auxiliary`` column (the
    auxiliary rule's p) over the complete, consistent single-constraint groups; None when the
    export has no single-constraint rows or no ``p_auxiliary``."""
    from reform_core.metrics.analyses import composition_pairs
    from reform_core.metrics.composition import composition_table

    inst = read_csv(
        Path(export_dir) / "instances.csv",
        dtype={"model": str, "question": str, "instruction": str, "pair_group": str, "task_type": str},
    )
    if (
        "p_auxiliary" not in inst.columns
        or "pair_group" not in inst.columns
        or not (inst["condition"] == "single").any()
    ):
        return None
    inst["pair_group"] = inst["pair_group"].fillna("")
    inst["baseline_opposed"] = inst["baseline_opposed"].astype("boolean")
    clean, _ = composition_pairs(inst.assign(p=inst["p_auxiliary"]))
    return composition_table(clean) if len(clean) else None
