"""The demo project's MOSAIC and WISE studies (:mod:`reform_core.demo.studies`), loaded with
the demo through the same services a user calls (idempotent)."""

from __future__ import annotations

import json

from sqlalchemy.engine import Engine


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def load_demo_studies(engine: Engine) -> dict:
    """Import ``demo-mosaic`` (prompts, outputs, deterministic checks) and ``demo-wise``
    (forms and generations). Returns the counts written."""
    from reform_core.demo import studies as demo
    from reform_core.services.accounts.users import local_principal
    from reform_core.services.studies import generations, mosaic

    lead = local_principal(engine)
    prompts = demo.mosaic_prompts()
    mosaic.import_prompts(engine, lead, study=demo.MOSAIC_STUDY, data=_jsonl(prompts), filename="demo-mosaic.jsonl")
    outs = mosaic.import_outputs(
        engine,
        lead,
        study=demo.MOSAIC_STUDY,
        data=_jsonl(demo.mosaic_outputs(prompts)),
        filename="demo-mosaic-outputs.jsonl",
    )
    checks = mosaic.run_checks(engine, lead, study=demo.MOSAIC_STUDY)
    with engine.begin() as conn:
        generations.ensure_study(conn, demo.WISE_STUDY, forms=demo.wise_forms())
    gens = generations.import_generations(
        engine, lead, data=_jsonl(demo.wise_generations()), filename="demo-wise.jsonl", study=demo.WISE_STUDY
    )
    return {"mosaic_outputs": outs["written"], "mosaic_checks": checks["checked"], "wise_generations": gens["written"]}
