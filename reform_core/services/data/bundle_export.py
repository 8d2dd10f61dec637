"""Write the project back out as a bundle (the inverse of ``importer``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Engine

from db.repo import catalogs as catalog_repo
from db.repo import data as repo

_QUERIES = {
    "questions.jsonl": ("SELECT key, text, task_type, domain, language, source FROM question ORDER BY id"),
    "models.jsonl": "SELECT name, provider, settings FROM eval_model ORDER BY id",
    "responses.jsonl": (
        "SELECT m.name AS model, q.key AS question, i.key AS instruction, r.text, r.meta "
        "FROM response r JOIN eval_model m ON m.id = r.model_id JOIN question q ON q.id = r.question_id "
        "LEFT JOIN instruction i ON i.id = r.instruction_id ORDER BY r.id"
    ),
    "baseline_features.jsonl": (
        "SELECT m.name AS model, q.key AS question, b.feature, b.present, b.source, b.evidence "
        "FROM baseline_feature b JOIN response r ON r.id = b.response_id "
        "JOIN eval_model m ON m.id = r.model_id JOIN question q ON q.id = r.question_id ORDER BY b.id"
    ),
    "judges.jsonl": "SELECT name, provider, model, prompt_version, config FROM judge ORDER BY id",
    "judgments.jsonl": (
        "SELECT j.name AS judge, m.name AS model, i.key AS instruction, c.position, g.label, "
        "g.rationale, g.status, g.error, g.prompt_version FROM judgment g "
        "JOIN judge j ON j.id = g.judge_id JOIN response r ON r.id = g.response_id "
        "JOIN eval_model m ON m.id = r.model_id JOIN constraint_item c ON c.id = g.constraint_id "
        "JOIN instruction i ON i.id = c.instruction_id ORDER BY g.id"
    ),
    "adjudications.jsonl": (
        "SELECT ja.name AS judge_a, jb.name AS judge_b, m.name AS model, i.key AS instruction, "
        "c.position, a.choice, "
        # outside annotators by their name; the built-in leads under a name an import accepts
        "CASE WHEN a.user_id IS NULL THEN a.annotator WHEN u.username IN ('local', 'cli') "
        "THEN u.username || ' (built-in lead)' ELSE u.username END AS annotator, a.note, a.seconds, p.name AS plan "
        "FROM adjudication a JOIN adjudication_task t ON t.id = a.task_id "
        "JOIN sample_plan p ON p.id = t.plan_id JOIN judge ja ON ja.id = p.judge_a_id "
        "JOIN judge jb ON jb.id = p.judge_b_id JOIN response r ON r.id = t.response_id "
        "JOIN eval_model m ON m.id = r.model_id JOIN constraint_item c ON c.id = t.constraint_id "
        "JOIN instruction i ON i.id = c.instruction_id LEFT JOIN app_user u ON u.id = a.user_id "
        "WHERE a.choice <> 'retracted' AND NOT EXISTS (SELECT 1 FROM adjudication s WHERE s.supersedes_id = a.id) ORDER BY a.id"
    ),
    "extractions.jsonl": (
        "SELECT m.name AS model, q.key AS question, x.label, x.feature, x.mapping AS match, x.source "
        "FROM feature_extraction x JOIN response r ON r.id = x.response_id "
        "JOIN eval_model m ON m.id = r.model_id JOIN question q ON q.id = r.question_id ORDER BY x.id"
    ),
}

_JSON_COLS = {"settings", "meta", "config", "params"}


def _clean(rec: dict) -> dict:
    out = {}
    for k, v in rec.items():
        if k in _JSON_COLS and isinstance(v, str):
            v = json.loads(v) if v else {}
        if isinstance(v, float) and pd.isna(v):
            v = None
        out[k] = v
    return out


def _write_jsonl(path: Path, records) -> int:
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=False) + "\n")
            n += 1
    return n


def export_bundle(engine: Engine, out_dir: str | Path) -> dict[str, int]:
    """Write every bundle file for the project in ``out_dir``; return lines per file (a team's
    own catalog, stored with the project, as ``catalog.yaml`` / ``catalog.json``: 1)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    with engine.connect() as conn:
        meta = repo.get_meta(conn)
        catalogs = repo.project_catalogs(conn) or [
            r[0] for r in conn.execute(text("SELECT DISTINCT catalog FROM catalog_feature ORDER BY catalog"))
        ]
        manifest = {
            "format": "reform-bundle",
            "version": 1,
            "name": meta.get("project_name", ""),
            "catalog": catalogs[0] if catalogs else "reformbench",
        }
        own = catalog_repo.catalog_document(conn, manifest["catalog"])
        if own is not None:  # a team's own catalog travels with the bundle (read back by the importer)
            fname = "catalog.json" if own["filename"].lower().endswith(".json") else "catalog.yaml"
            (out / fname).write_text(own["content"], encoding="utf-8")
            counts[fname] = 1
        construction = json.loads(meta.get("construction_models") or "[]")
        if construction:
            manifest["construction_models"] = construction
        (out / "bundle.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        for fname, sql in _QUERIES.items():
            res = conn.execute(text(sql))
            cols = list(res.keys())
            recs = []
            for row in res:
                rec = _clean(dict(zip(cols, row)))
                if fname == "baseline_features.jsonl":
                    rec["present"] = bool(rec["present"])
                if fname == "responses.jsonl" and rec["instruction"] is None:
                    rec.pop("instruction")
                recs.append(rec)
            counts[fname] = _write_jsonl(out / fname, recs)
        # instructions with nested constraints
        ins = (
            conn.execute(
                text(
                    "SELECT i.id, i.key, q.key AS question, i.condition, i.pair_group, i.text "
                    "FROM instruction i JOIN question q ON q.id = i.question_id ORDER BY i.id"
                )
            )
            .mappings()
            .all()
        )
        cons = (
            conn.execute(
                text(
                    "SELECT instruction_id, position, feature, category, mode, text, acceptance, params "
                    "FROM constraint_item ORDER BY instruction_id, position"
                )
            )
            .mappings()
            .all()
        )
        by_ins: dict[int, list] = {}
        for c in cons:
            c = _clean(dict(c))
            by_ins.setdefault(c.pop("instruction_id"), []).append(c)
        recs = []
        for i in ins:
            d = dict(i)
            d["constraints"] = by_ins.get(d.pop("id"), [])
            recs.append(d)
        counts["instructions.jsonl"] = _write_jsonl(out / "instructions.jsonl", recs)
    return counts
