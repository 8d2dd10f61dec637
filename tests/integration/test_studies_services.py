"""MOSAIC / WISE study services on SQLite and PostgreSQL: located import errors that leave
the database unchanged, idempotent re-imports, roles, and hostile text stored verbatim."""

from __future__ import annotations

import json

import numpy as np
import pytest

from db.repo.data import count_rows
from reform_core.construction import mosaic_gen
from reform_core.services.accounts.auth import AccessDenied, Principal
from reform_core.services.accounts.users import cli_principal
from reform_core.services.data.reading import ImportFailed
from reform_core.services.platform.uow import get_engine
from reform_core.services.studies import generations, mosaic, wise

HOSTILE = "<script>alert('x')</script> [a](javascript:alert(1)) \u202e"


def _prompts(n: int = 6, seed: int = 0) -> list[dict]:
    return mosaic_gen.generate(n, np.random.default_rng(seed), sizes=range(1, 4))


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _counts(engine) -> dict:
    with engine.connect() as conn:
        return {
            t: count_rows(conn, t)
            for t in (
                "mosaic_study",
                "mosaic_prompt",
                "mosaic_constraint",
                "mosaic_output",
                "mosaic_check",
                "wise_study",
                "wise_generation",
            )
        }


@pytest.fixture
def engine(any_db_url):
    return get_engine(any_db_url)


def test_prompt_import_reports_every_problem_located_and_writes_nothing(engine):
    lead = cli_principal(engine)
    good = _prompts()
    bad = [
        dict(good[0], id=""),
        dict(good[1], checks=[dict(good[1]["checks"][0], verifier="mosaic:nope")]),
        dict(good[2], checks=[dict(good[2]["checks"][0], params={"bogus": 1}, verifier="mosaic:json")]),
        dict(good[3], checks=[dict(c, position=c["position"] + 1) for c in good[3]["checks"]]),
        dict(good[4], checks=[dict(good[4]["checks"][0], verifier="judge", rubric="")]),
        dict(good[5], system="nul \x00 inside"),
        dict(good[0]),
        dict(good[0], id="dup"),
        dict(good[1], id="dup"),
    ]
    with pytest.raises(ImportFailed) as err:
        mosaic.import_prompts(engine, lead, study="s", data=_jsonl(bad), filename="p.jsonl")
    text = str(err.value)
    for expected in (
        "p.jsonl:1: id: missing or empty",
        "p.jsonl:2: checks.0.verifier: unknown checker 'mosaic:nope'",
        "p.jsonl:3: checks.0.params: not valid for mosaic:json",
        "p.jsonl:4: checks: positions must run 1..",
        "p.jsonl:5: checks.0.rubric: a judge constraint needs the rubric",
        "p.jsonl:6: system: must not contain a NUL character",
        "p.jsonl:9: id: 'dup' already given on line 8",
    ):
        assert expected in text, text
    with pytest.raises(ImportFailed, match="p.jsonl:2: \\(line\\): invalid JSON"):
        mosaic.import_prompts(engine, lead, study="s", data=_jsonl(good[:1]) + b"{not json\n", filename="p.jsonl")
    assert _counts(engine)["mosaic_study"] == 0


def test_prompts_outputs_checks_roundtrip_idempotent_and_hostile_text_verbatim(engine):
    lead = cli_principal(engine)
    rows = _prompts()
    rows[0]["user"] = HOSTILE
    out = mosaic.import_prompts(engine, lead, study="s", data=_jsonl(rows), filename="p.jsonl")
    assert (out["written"], out["constraints"]) == (6, sum(len(r["checks"]) for r in rows))
    before = _counts(engine)
    assert mosaic.import_prompts(engine, lead, study="s", data=_jsonl(rows), filename="p.jsonl")["existing"] == 6
    changed = [dict(rows[0], user="other")] + rows[1:]
    with pytest.raises(ImportFailed, match="p.jsonl:1: id: prompt 'mosaic-00001' differs"):
        mosaic.import_prompts(engine, lead, study="s", data=_jsonl(changed), filename="p.jsonl")
    assert _counts(engine) == before
    outs = [{"prompt": r["id"], "model": "<b>m</b>", "output": HOSTILE + "\n\n{{FirstName}}"} for r in rows]
    assert mosaic.import_outputs(engine, lead, study="s", data=_jsonl(outs), filename="o.jsonl")["written"] == 6
    res = mosaic.run_checks(engine, lead, study="s")
    assert res["checked"] > 0 and res["errors"] == 0
    assert res["unchecked"] == sum(c["verifier"] == "judge" for r in rows for c in r["checks"])
    detail = mosaic.output_detail(engine, lead, study="s", prompt=rows[0]["id"], model="<b>m</b>")
    assert detail["user"] == HOSTILE and detail["output"].startswith(HOSTILE)
    assert detail["meta"] == {"source": "import", "file": "o.jsonl"}
    checks = detail["checks"]
    assert checks["position"].tolist() == list(range(1, len(rows[0]["checks"]) + 1))
    judged = checks["verifier"] == "judge"
    assert checks.loc[judged, "followed"].isna().all() and checks.loc[~judged, "followed"].notna().all()
    summary = mosaic.output_summary(engine, lead, study="s", model="<b>m</b>")
    assert len(summary) == 6 and (summary["checked"] <= summary["constraints"]).all()
    score = mosaic.score(engine, lead, study="s", n_boot=20)
    assert score["models"]["<b>m</b>"]["unchecked"] == res["unchecked"]


def test_roles_analysts_read_annotators_do_not(engine):
    lead = cli_principal(engine)
    mosaic.import_prompts(engine, lead, study="s", data=_jsonl(_prompts(3)), filename="p.jsonl")
    analyst, annotator = Principal(900, "ana", "analyst"), Principal(901, "ann", "annotator")
    assert len(mosaic.list_studies(engine, analyst)) == 1
    with pytest.raises(AccessDenied):
        mosaic.import_prompts(engine, analyst, study="t", data=_jsonl(_prompts(3)), filename="p.jsonl")
    with pytest.raises(AccessDenied):
        mosaic.score(engine, annotator, study="s")
    with pytest.raises(AccessDenied):
        wise.list_studies(engine, annotator)


def test_wise_manifest_errors_are_located(engine, tmp_path):
    lead = cli_principal(engine)
    d = tmp_path / "wise"
    d.mkdir()
    (d / "forms.csv").write_text(
        "form,template,checker\nPOS,Answer using exactly {N} words.,wise:exact_words\n"
        "NEG,Do not use more or fewer than {N} words.,wise:nope\n"
    )
    (d / "items.jsonl").write_text(
        json.dumps({"item": "i1", "form": "POS", "target": "5", "repetition": 0, "prompt": "Say hi. Answer."})
        + "\n"
        + json.dumps({"item": "i1", "form": "POS", "target": "keyword:x", "repetition": 0, "prompt": "p"})
        + "\n"
        + json.dumps({"item": "i2", "form": "POS", "target": "5", "repetition": -1, "prompt": ""})
        + "\n"
    )
    with pytest.raises(ImportFailed) as err:
        wise.collect(engine, lead, manifest=d, study="w", model="m", provider="openai", api_key="k")
    text = str(err.value)
    assert "forms.csv:3: checker: 'wise:nope'" in text
    assert "items.jsonl:2: target: 'keyword:x' is checked by wise:keyword_once, form 'POS' by wise:exact_words" in text
    assert "items.jsonl:3: prompt: missing or empty" in text and "items.jsonl:3: repetition" in text
    assert _counts(engine)["wise_study"] == 0
    with pytest.raises(ValueError, match="lacks forms.csv"):
        wise.collect(engine, lead, manifest=tmp_path, study="w", model="m", provider="openai", api_key="k")
    with pytest.raises(ValueError, match="no WISE study 'w'"):
        wise.score(engine, lead, study="w")


def test_wise_generations_keyed_by_study_on_any_db(engine):
    """The same generation keys live in two studies side by side (natural key includes the
    study); each study scores its own rows; re-imports are idempotent; a file with other forms
    than the study's is refused before anything is written."""
    lead = cli_principal(engine)
    rows = [
        {
            "item": f"t{i}",
            "model": m,
            "provider": "p",
            "form": f,
            "target": "3",
            "repetition": 0,
            "output": "a b c" if (i + len(m) + len(f)) % 3 else "a b",
        }
        for i in range(4)
        for m in ("m1", "m22")
        for f in ("POS", "NEG")
    ]
    data = _jsonl(rows)
    for study in ("one", "two"):
        assert generations.import_generations(engine, lead, data=data, filename="g.jsonl", study=study)["written"] == 16
    assert generations.import_generations(engine, lead, data=data, filename="g.jsonl", study="one")["existing"] == 16
    assert (
        wise.score(engine, lead, study="one", n_boot=20)["forms"]
        == wise.score(engine, lead, study="two", n_boot=20)["forms"]
    )
    other = _jsonl([dict(rows[0], form="AVOID9")])
    before = _counts(engine)
    with pytest.raises(ValueError, match="WISE study 'one' has forms"):
        generations.import_generations(engine, lead, data=other, filename="g2.jsonl", study="one")
    assert _counts(engine) == before
    out = wise.outputs(engine, lead, study="two")
    assert len(out) == 16 and set(out["study"]) == {"two"} and out["compliant"].dtype == bool


def test_joint_item_bootstrap_leaves_out_items_not_every_model_answered(engine):
    """The keyword panel's item bootstrap and the ranking intervals resample items jointly
    across models: an item one model lacks is left out of them and counted, not a crash."""
    lead = cli_principal(engine)
    rows = [
        {
            "item": f"t{i}",
            "model": m,
            "provider": "p",
            "form": f,
            "target": "keyword:harbor",
            "repetition": 0,
            "output": "the harbor" if (i * len(m) + len(f)) % 3 else "no",
        }
        for i in range(6)
        for m in ("m1", "m22", "m333")
        for f in ("POS", "NEG")
        if not (m == "m1" and i == 5)
    ]
    generations.import_generations(engine, lead, data=_jsonl(rows), filename="k.jsonl", study="kw")
    out = wise.score(engine, lead, study="kw", n_boot=50)
    assert out["scheme"] == "item"  # the paper's scheme for the keyword panel
    assert "item bootstrap: 1 item(s) not answered by every model are left out" in out["notes"]
    assert "ranking intervals: 1 item(s) not answered by every model are left out" in out["notes"]
    assert out["forms"]["NEG"]["delta_interval"] is not None and out["forms"]["NEG"]["tau_b_interval"] is not None


def test_export_manifest_hashes_each_studys_inputs(engine, tmp_path):
    """The manifest's studies.inputs_sha256 names each study's inputs: equal on a re-export,
    changed by one more output or generation, and only for the study that changed."""
    from reform_core.services.project.study_export import inputs_sha256

    lead = cli_principal(engine)
    rows = _prompts()
    for name in ("a", "b"):
        mosaic.import_prompts(engine, lead, study=name, data=_jsonl(rows), filename="p.jsonl")
        mosaic.import_outputs(
            engine,
            lead,
            study=name,
            data=_jsonl([{"prompt": r["id"], "model": "m", "output": "text"} for r in rows]),
            filename="o.jsonl",
        )
    gens = [
        {
            "item": f"t{i}",
            "model": "m",
            "provider": "p",
            "form": f,
            "target": "3",
            "repetition": 0,
            "output": "one two three",
        }
        for i in range(3)
        for f in ("POS", "NEG")
    ]
    generations.import_generations(engine, lead, data=_jsonl(gens), filename="g.jsonl", study="w")
    first = inputs_sha256(engine)
    assert set(first["mosaic"]) == {"a", "b"} and set(first["wise"]) == {"w"}
    assert first["mosaic"]["a"] == first["mosaic"]["b"] and inputs_sha256(engine) == first
    mosaic.run_checks(engine, lead, study="a")
    mosaic.import_outputs(
        engine,
        lead,
        study="b",
        data=_jsonl([{"prompt": rows[0]["id"], "model": "m2", "output": "x"}]),
        filename="o2.jsonl",
    )
    generations.import_generations(
        engine, lead, data=_jsonl([dict(gens[0], repetition=1)]), filename="g2.jsonl", study="w"
    )
    second = inputs_sha256(engine)
    assert all(second[k][n] != first[k][n] for k, n in (("mosaic", "a"), ("mosaic", "b"), ("wise", "w")))
    from reform_core.services.project.study_export import export_studies_only

    manifest = export_studies_only(engine, tmp_path, principal=lead, n_boot=2)
    assert manifest["studies"]["inputs_sha256"] == second
