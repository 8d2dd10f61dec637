"""MOSAIC studies end to end (MOSAIC, arXiv:2601.18554; docs/metrics.md#mosaic; formats in
docs/formats.md#mosaic-and-wise-studies).

1. :func:`import_prompts` — the JSONL that ``mosaic-generate`` writes becomes a named study
   (prompts, their ordered constraint lists and each constraint's checker).
2. :func:`collect` — each evaluated model answers every prompt through the evaluated-model
   runner (:func:`reform_core.services.judging.collection.generate`: OpenAI-compatible or Gemini
   wire format, bounded concurrency, rate limits, retries, results committed in small
   batches, resumable); every output records its provider and generation settings.
   :func:`import_outputs` takes outputs produced elsewhere (``prompt, model, output``).
3. :func:`run_checks` — App. D's deterministic checks (``mosaic:*`` verifiers) on every
   unchecked (output, constraint); optionally App. D.4's LLM judge for the constraints
   without a deterministic check (score 0–10 divided by 10). Every score is binarised at
   ≥ 0.5 (MOSAIC §3.3).
4. :func:`results` / :func:`score` — per model PA, SCC per constraint, PosCC per position,
   PCC per constraint pair with Pearson r and p-value, each with a percentile bootstrap
   interval over prompts (:func:`reform_core.metrics.mosaic.study_metrics`).

A (output, constraint) without a check is left out of every metric and counted
(``unchecked``), never taken as followed.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import mosaic as repo
from reform_core.judges import mosaic_rubric
from reform_core.metrics import mosaic as M
from reform_core.records import storage_problem
from reform_core.services.accounts.auth import Principal, require
from reform_core.services.data.reading import ImportFailed, one_line, read_records
from reform_core.services.judging import collection
from reform_core.verifiers.base import get as get_verifier

JUDGE = "judge"  # the verifier field of constraints scored by the LLM judge
N_BOOT = 2000
MAX_LEN = {
    "id": 200,
    "task": 200,
    "product": 200,
    "constraint": 100,
    "category": 100,
    "verifier": 100,
    "model": 200,
    "study": 200,
}
MANAGE, VIEW = "manage_studies", "view_scores"
Progress = Optional[Callable[[int, int], None]]

__all__ = [
    "ImportFailed",
    "MosaicResults",
    "collect",
    "import_outputs",
    "import_prompts",
    "list_studies",
    "output_detail",
    "output_summary",
    "check_rows",
    "results",
    "run_checks",
    "score",
]


# ----------------------------------------------------------------------------- helpers


def _name(study: str) -> str:
    study = (study or "").strip()
    if not study or len(study) > MAX_LEN["study"]:
        raise ValueError(f"study: needs a name of 1–{MAX_LEN['study']} characters")
    return study


def _study(conn, study: str) -> dict:
    s = repo.get_study(conn, name=study)
    if s is None:
        raise ValueError(f"study: no MOSAIC study {study!r} (create it with mosaic-import)")
    return s


def _storable(text: str) -> str:
    """Provider text made storable (NUL and lone surrogates replaced by U+FFFD)."""
    text = (text or "").replace("\x00", "\ufffd")
    return text.encode("utf-8", "replace").decode("utf-8") if storage_problem(text) else text


def _text(rec: dict, key: str, loc: str, errors: list, *, required: bool = True, limit: int | None = None) -> str:
    v = rec.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        if required:
            errors.append(f"{loc}: {key}: missing or empty")
        return ""
    if not isinstance(v, str):
        errors.append(f"{loc}: {key}: must be text, got {type(v).__name__}")
        return ""
    problem = storage_problem(v)
    if problem:
        errors.append(f"{loc}: {key}: {problem}")
    elif limit is not None and len(v.strip()) > limit:
        errors.append(f"{loc}: {key}: longer than {limit} characters")
    return v.strip() if limit is not None else v


# ----------------------------------------------------------------------------- prompts


def _check_row(c: Any, n: int, loc: str, errors: list) -> dict | None:
    where = f"{loc}: checks.{n}"
    if not isinstance(c, dict):
        errors.append(f"{where}: expected an object, got {type(c).__name__}")
        return None
    before = len(errors)
    out = {
        "position": c.get("position"),
        "key": _text(c, "constraint", where, errors, limit=MAX_LEN["constraint"]),
        "category": _text(c, "category", where, errors, required=False, limit=MAX_LEN["category"]),
        "text": _text(c, "text", where, errors, required=False),
        "verifier": _text(c, "verifier", where, errors, limit=MAX_LEN["verifier"]),
        "rubric": _text(c, "rubric", where, errors, required=False),
        "params": c.get("params") if c.get("params") is not None else {},
    }
    if isinstance(out["position"], bool) or not isinstance(out["position"], int):
        errors.append(f"{where}.position: must be an integer, got {c.get('position')!r}")
    if not isinstance(out["params"], dict):
        errors.append(f"{where}.params: must be an object, got {type(out['params']).__name__}")
    elif storage_problem(out["params"]):
        errors.append(f"{where}.params: {storage_problem(out['params'])}")
    if len(errors) > before:
        return None
    if out["verifier"] == JUDGE:
        if not out["rubric"].strip():
            errors.append(f"{where}.rubric: a judge constraint needs the rubric the judge scores against")
        return out
    try:
        fn = get_verifier(out["verifier"])
    except KeyError:
        errors.append(f"{where}.verifier: unknown checker {out['verifier']!r} (a mosaic:* verifier or 'judge')")
        return None
    try:  # the parameters must be the checker's before anything is stored (values are checked when it runs)
        inspect.signature(fn).bind("", **out["params"])
    except TypeError as exc:
        errors.append(one_line(f"{where}.params: not valid for {out['verifier']}: {exc}"))
        return None
    return out


def _prompt_row(rec: dict, loc: str, errors: list) -> dict | None:
    before = len(errors)
    row = {
        "key": _text(rec, "id", loc, errors, limit=MAX_LEN["id"]),
        "task": _text(rec, "task", loc, errors, required=False, limit=MAX_LEN["task"]),
        "product": _text(rec, "product", loc, errors, required=False, limit=MAX_LEN["product"]),
        "system_prompt": _text(rec, "system", loc, errors, required=False),
        "user_prompt": _text(rec, "user", loc, errors, required=False),
    }
    if not row["system_prompt"].strip() and not row["user_prompt"].strip() and len(errors) == before:
        errors.append(f"{loc}: user: the prompt has neither a system nor a user message")
    checks = rec.get("checks")
    if not isinstance(checks, list) or not checks:
        errors.append(f"{loc}: checks: need a non-empty list of constraints")
        return None
    cons = [_check_row(c, n, loc, errors) for n, c in enumerate(checks)]
    if len(errors) > before:
        return None
    positions = [c["position"] for c in cons]
    if positions != list(range(1, len(cons) + 1)):
        errors.append(f"{loc}: checks: positions must run 1..{len(cons)} in list order, got {positions}")
    keys = [c["key"] for c in cons]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        errors.append(f"{loc}: checks: constraint(s) {dup} occur more than once")
    listed = rec.get("constraints")
    if listed is not None and listed != keys:
        errors.append(f"{loc}: constraints: {listed!r} differs from the checks' constraints {keys!r}")
    size = rec.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
        errors.append(f"{loc}: size: must be an integer, got {size!r}")
    elif size is not None and size != len(cons):
        errors.append(f"{loc}: size: {size} does not match the {len(cons)} constraint(s) of the prompt's checks")
    if len(errors) > before:
        return None
    return {**row, "checks": cons}


def _same_prompt(new: dict, stored: dict, stored_cons: pd.DataFrame) -> bool:
    if any(new[k] != stored[k] for k in ("task", "product", "system_prompt", "user_prompt")):
        return False
    mine = [
        {k: c[k] for k in ("position", "key", "category", "text", "verifier", "params", "rubric")}
        for c in new["checks"]
    ]
    theirs = [
        {
            "position": int(r.position),
            "key": r.constraint,
            "category": r.category,
            "text": r.text,
            "verifier": r.verifier,
            "params": r.params,
            "rubric": r.rubric,
        }
        for r in stored_cons.itertuples()
    ]
    return mine == theirs


def import_prompts(engine: Engine, principal: Principal, *, study: str, data: bytes, filename: str) -> dict:
    """Import the prompts of a ``mosaic-generate`` JSONL file into study ``study`` (created if new).

    Every line is validated first (``id``, ``system``/``user``, and ``checks``: positions
    1..n, distinct constraints, a known checker whose ``params`` it accepts, a rubric for
    ``judge`` constraints; ``size`` and ``constraints``, when given, must match the checks; a
    key given twice in a line is an error); all problems are reported together as ``file:line: field:
    message`` and nothing is written unless every line is valid. A prompt already stored
    identically is skipped; a different prompt under a stored id is an error. Returns
    ``{"study", "prompts", "written", "existing", "constraints"}``.
    """
    require(principal, MANAGE)
    study = _name(study)
    errors: list[str] = []
    records = read_records(data, filename, errors)
    rows, seen = [], {}
    for line, rec in records:
        row = _prompt_row(rec, f"{filename}:{line}", errors)
        if row is None:
            continue
        if row["key"] in seen:
            errors.append(f"{filename}:{line}: id: {row['key']!r} already given on line {seen[row['key']]}")
            continue
        seen[row["key"]] = line
        rows.append(row)
    if not records and not errors:
        errors.append(f"{filename}: no prompts")
    if errors:
        raise ImportFailed(errors)
    with engine.begin() as conn:
        s = repo.get_study(conn, name=study)
        sid = s["id"] if s else repo.insert_study(conn, name=study, params={"source": Path(filename).name})
        stored = repo.prompts(conn, study_id=sid).set_index("key")
        stored_cons = repo.constraints(conn, study_id=sid)
        by_prompt = dict(tuple(stored_cons.groupby("prompt"))) if len(stored_cons) else {}
        new = []
        for r in rows:
            if r["key"] not in stored.index:
                new.append(r)
            elif not _same_prompt(r, stored.loc[r["key"]], by_prompt.get(r["key"], stored_cons.iloc[0:0])):
                errors.append(
                    f"{filename}:{seen[r['key']]}: id: prompt {r['key']!r} differs from the one stored "
                    f"in study {study!r}"
                )
        if errors:
            raise ImportFailed(errors)
        ids = repo.insert_prompts(
            conn,
            study_id=sid,
            rows=[{k: r[k] for k in ("key", "task", "product", "system_prompt", "user_prompt")} for r in new],
        )
        cons = [{"prompt_id": ids[r["key"]], **c} for r in new for c in r["checks"]]
        repo.insert_constraints(conn, rows=cons)
    return {
        "study": study,
        "prompts": len(rows),
        "written": len(new),
        "existing": len(rows) - len(new),
        "constraints": len(cons),
    }


# ----------------------------------------------------------------------------- outputs


def import_outputs(engine: Engine, principal: Principal, *, study: str, data: bytes, filename: str) -> dict:
    """Import outputs produced elsewhere (JSONL or CSV with ``prompt, model, output``).

    ``prompt`` is a prompt id of the study. Validated first, all problems reported
    together, nothing written unless all is valid; an identical stored output is skipped,
    a different one for the same (prompt, model) is an error. Returns ``{"study", "rows",
    "written", "existing"}``.
    """
    require(principal, MANAGE)
    study = _name(study)
    errors: list[str] = []
    records = read_records(data, filename, errors)
    with engine.connect() as conn:
        sid = _study(conn, study)["id"]
        stored_prompts = repo.prompts(conn, study_id=sid)
    prompt_ids = {k: int(i) for k, i in zip(stored_prompts["key"], stored_prompts["id"])}
    rows, seen = [], {}
    for line, rec in records:
        loc, before = f"{filename}:{line}", len(errors)
        prompt = _text(rec, "prompt", loc, errors, limit=MAX_LEN["id"])
        model = _text(rec, "model", loc, errors, limit=MAX_LEN["model"])
        if "output" not in rec or rec["output"] is None:
            errors.append(f"{loc}: output: missing (an empty answer is the empty string)")
        elif not isinstance(rec["output"], str):
            errors.append(f"{loc}: output: must be text, got {type(rec['output']).__name__}")
        elif storage_problem(rec["output"]):
            errors.append(f"{loc}: output: {storage_problem(rec['output'])}")
        if prompt and prompt not in prompt_ids:
            errors.append(f"{loc}: prompt: {prompt!r} is not a prompt of study {study!r}")
        if len(errors) > before:
            continue
        key = (prompt, model)
        if key in seen:
            errors.append(f"{loc}: model: output of {model!r} for prompt {prompt!r} already given on line {seen[key]}")
            continue
        seen[key] = line
        rows.append(
            {
                "prompt_id": prompt_ids[prompt],
                "model": model,
                "output": rec["output"],
                "meta": {"source": "import", "file": Path(filename).name},
            }
        )
    if not records and not errors:
        errors.append(f"{filename}: no outputs")
    if errors:
        raise ImportFailed(errors)
    with engine.begin() as conn:
        stored = repo.outputs(conn, study_id=sid)
        have = {(int(p), m): o for p, m, o in zip(stored["prompt_id"], stored["model"], stored["output"])}
        inv = {int(v): k for k, v in prompt_ids.items()}
        new = []
        for r in rows:
            key = (r["prompt_id"], r["model"])
            if key not in have:
                new.append(r)
            elif have[key] != r["output"]:
                line = seen[(inv[r["prompt_id"]], r["model"])]
                errors.append(
                    f"{filename}:{line}: output: differs from the stored output of {r['model']!r} for "
                    f"prompt {inv[r['prompt_id']]!r}"
                )
        if errors:
            raise ImportFailed(errors)
        repo.insert_outputs(conn, rows=new)
    return {"study": study, "rows": len(rows), "written": len(new), "existing": len(rows) - len(new)}


def _unanswered_prompts(engine: Engine, study: str, model: str, limit: Optional[int]) -> tuple[int, pd.DataFrame]:
    """(study id, the study's prompts without an output of ``model``, at most ``limit`` of them)."""
    with engine.connect() as conn:
        sid = _study(conn, study)["id"]
        prompts = repo.prompts(conn, study_id=sid)
        done = set(repo.outputs(conn, study_id=sid, model=model, with_text=False)["prompt_id"])
    todo = prompts[~prompts["id"].isin(done)]
    if limit is not None:
        todo = todo.iloc[:limit]
    return sid, todo


def _prompt_items(todo: pd.DataFrame, model: str) -> tuple[list[collection.GenItem], dict[int, int]]:
    """One call per prompt (system + user message, the empty ones left out) and its prompt id, by ``id`` of the item."""
    items, prompt_of = [], {}
    for r in todo.itertuples(index=False):
        msgs = tuple(
            m
            for m in ({"role": "system", "content": r.system_prompt}, {"role": "user", "content": r.user_prompt})
            if m["content"]
        )
        item = collection.GenItem(model, r.key, None, "mosaic", r.user_prompt, messages=msgs)
        items.append(item)
        prompt_of[id(item)] = int(r.id)
    return items, prompt_of


def _output_rows(
    results: list,
    out: dict,
    prompt_of: dict[int, int],
    model: str,
    provider: str,
    provider_model: Optional[str],
    settings: collection.GenerationSettings,
) -> list[dict]:
    """Count a batch of results into ``out`` and return the output rows of the successful ones."""
    rows = []
    for r in results:
        if r.error:
            out["errors"] += 1
            out["first_error"] = out["first_error"] or r.error
            continue
        out["truncated"] += bool(r.truncated)
        meta = {"source": "collected", **collection.generation_meta(r, provider, settings, provider_model or model)}
        rows.append({"prompt_id": prompt_of[id(r.item)], "model": model, "output": _storable(r.text), "meta": meta})
    return rows


def _insert_new_outputs(engine: Engine, rows: list[dict], *, sid: int, model: str) -> int:
    """Insert the rows a concurrent run has not stored meanwhile; return how many."""
    with engine.begin() as conn:
        have = set(repo.outputs(conn, study_id=sid, model=model, with_text=False)["prompt_id"])
        rows = [r for r in rows if r["prompt_id"] not in have]
        repo.insert_outputs(conn, rows=rows)
    return len(rows)


def collect(
    engine: Engine,
    principal: Principal,
    *,
    study: str,
    model: str,
    provider: str,
    provider_model: Optional[str] = None,
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
    """Collect ``model``'s missing outputs for the study's prompts (system + user message).

    Resumable: a prompt that already has an output of ``model`` is never asked again; a
    failed call writes nothing, so a rerun retries it. Returns ``{"pending", "written",
    "errors", "truncated", "first_error", "requests", "input_tokens", "output_tokens",
    "cost_usd", "cancelled"}``.
    """
    require(principal, MANAGE)
    study = _name(study)
    model = (model or "").strip()
    if not model or len(model) > MAX_LEN["model"]:
        raise ValueError(f"model: the evaluated model needs a name of 1–{MAX_LEN['model']} characters")
    if limit is not None and limit < 0:
        raise ValueError(f"limit: must be >= 0, got {limit}")
    settings = settings or collection.GenerationSettings()
    sid, todo = _unanswered_prompts(engine, study, model, limit)
    items, prompt_of = _prompt_items(todo, model)
    out = {"pending": len(items), "written": 0, "errors": 0, "truncated": 0, "first_error": ""}
    if not items:
        return out

    def on_results(results: list) -> None:
        rows = _output_rows(results, out, prompt_of, model, provider, provider_model, settings)
        if rows:
            out["written"] += _insert_new_outputs(engine, rows, sid=sid, model=model)

    out.update(
        collection.generate(
            items,
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


# ----------------------------------------------------------------------------- checks


def _unchecked(conn, sid: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(outputs with text, their constraints still without a check) of a study."""
    outs = repo.outputs(conn, study_id=sid)
    cons = repo.constraints(conn, study_id=sid)
    done = repo.checks(conn, study_id=sid)[["output_id", "constraint_id"]]
    pairs = (
        outs[["id", "prompt_id"]]
        .rename(columns={"id": "output_id"})
        .merge(cons.rename(columns={"id": "constraint_id"}), on="prompt_id")
    )
    pairs = pairs.merge(done.assign(_done=True), on=["output_id", "constraint_id"], how="left")
    return outs.set_index("id"), pairs[pairs["_done"].isna()].drop(columns="_done")


def _insert_checks(engine: Engine, rows: list[dict]) -> int:
    if not rows:
        return 0
    with engine.begin() as conn:
        repo.insert_checks(conn, rows=rows)
    return len(rows)


def run_checks(
    engine: Engine,
    principal: Principal,
    *,
    study: str,
    judge: Optional[dict] = None,
    progress: Progress = None,
    cancel: Any = None,
    batch: int = 2000,
) -> dict:
    """Score every unchecked (output, constraint) of the study.

    Deterministic constraints run their ``mosaic:*`` verifier (App. D.1–D.3). With
    ``judge = {"provider", "model", "base_url"?, "api_key"?, "concurrency"?, "rpm"?,
    "tpm"?}``, constraints whose checker is ``judge`` are scored by that LLM with App. D.4's
    prompt (temperature 0); its 0–10 score is divided by 10. Without a judge they stay
    unchecked (and out of the metrics). A judge answer that cannot be parsed writes
    nothing and is counted in ``errors`` (a rerun retries it). Returns ``{"outputs",
    "checked", "judged", "errors", "first_error", "unchecked"}``.
    """
    require(principal, MANAGE)
    study = _name(study)
    with engine.connect() as conn:
        sid = _study(conn, study)["id"]
        outs, todo = _unchecked(conn, sid)
    out = {"outputs": int(len(outs)), "checked": 0, "judged": 0, "errors": 0, "first_error": ""}
    rule = todo[todo["verifier"] != JUDGE]
    rows = []
    for r in rule.itertuples(index=False):
        try:
            res = get_verifier(r.verifier)(outs.at[r.output_id, "output"], **(r.params or {}))
        except Exception as exc:  # noqa: BLE001 - one bad check must not stop the run
            out["errors"] += 1
            out["first_error"] = out["first_error"] or one_line(f"{r.prompt} position {r.position}: {exc}")
            continue
        score = min(1.0, max(0.0, float(res.score)))
        rows.append(
            {
                "output_id": int(r.output_id),
                "constraint_id": int(r.constraint_id),
                "checker": r.verifier,
                "score": score,
                "followed": score >= M.THRESHOLD,
                "evidence": res.evidence[:2000],
            }
        )
        if len(rows) >= batch:
            out["checked"] += _insert_checks(engine, rows)
            rows = []
    out["checked"] += _insert_checks(engine, rows)
    judged = todo[todo["verifier"] == JUDGE]
    if judge and len(judged):
        out.update(_judge(engine, outs, judged, judge, out, progress=progress, cancel=cancel))
    with engine.connect() as conn:
        out["unchecked"] = int(len(_unchecked(conn, sid)[1]))
    return out


def _judge(
    engine: Engine, outs: pd.DataFrame, todo: pd.DataFrame, judge: dict, out: dict, *, progress: Progress, cancel: Any
) -> dict:
    provider, model = judge.get("provider"), (judge.get("model") or "").strip()
    if not model:
        raise ValueError("judge model: name the judge's model (e.g. gpt-4o-mini)")
    checker = f"{JUDGE}:{model}"[:300]
    settings = collection.GenerationSettings(temperature=0.0, max_tokens=int(judge.get("max_tokens") or 1024))
    items, pair_of = [], {}
    for r in todo.itertuples(index=False):
        item = collection.GenItem(
            model,
            r.prompt,
            None,
            "mosaic-judge",
            "",
            messages=tuple(mosaic_rubric.messages(outs.at[r.output_id, "output"], r.rubric)),
        )
        items.append(item)
        pair_of[id(item)] = (int(r.output_id), int(r.constraint_id))

    def on_results(results: list) -> None:
        rows = []
        for r in results:
            try:
                if r.error:
                    raise ValueError(r.error)
                score, reasoning = mosaic_rubric.parse_score(r.text)
            except ValueError as exc:
                out["errors"] += 1
                out["first_error"] = out["first_error"] or one_line(f"judge on {r.item.question}: {exc}")[:500]
                continue
            output_id, constraint_id = pair_of[id(r.item)]
            rows.append(
                {
                    "output_id": output_id,
                    "constraint_id": constraint_id,
                    "checker": checker,
                    "score": score,
                    "followed": score >= M.THRESHOLD,
                    "evidence": _storable(reasoning),
                }
            )
        out["judged"] += _insert_checks(engine, rows)

    stats = collection.generate(
        items,
        provider=provider,
        model=model,
        on_results=on_results,
        settings=settings,
        base_url=judge.get("base_url"),
        api_key=judge.get("api_key"),
        concurrency=int(judge.get("concurrency") or 8),
        rpm=judge.get("rpm"),
        tpm=judge.get("tpm"),
        progress=progress,
        cancel=cancel,
    )
    return {"judge_requests": stats["requests"], "judge_cost_usd": stats["cost_usd"]}


# ----------------------------------------------------------------------------- results


def check_rows(engine: Engine, principal: Principal, *, study: Optional[str] = None) -> pd.DataFrame:
    """Checked (output, constraint) rows: ``study, model, prompt, position, constraint,
    followed, score, category, checker`` (one study, or every study)."""
    require(principal, VIEW)
    cols = ["study", "model", "prompt", "position", "constraint", "followed", "score", "category", "checker"]
    with engine.connect() as conn:
        names = [_study(conn, _name(study))["name"]] if study is not None else list(repo.list_studies(conn)["name"])
        parts = [repo.checks(conn, study_id=repo.get_study(conn, name=n)["id"]).assign(study=n) for n in names]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]


@dataclass
class MosaicResults:
    """The metrics of one study (shares in [0, 1]); ``counts`` per model: ``outputs``,
    ``pairs`` (output × constraint), ``checked``, ``unchecked``."""

    study: str
    pa: pd.DataFrame
    scc: pd.DataFrame
    poscc: pd.DataFrame
    pcc: pd.DataFrame
    counts: pd.DataFrame
    n_boot: int
    seed: int
    level: float
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The ``mosaic-score --json`` shape: percentages, intervals beside the stable keys
        (docs/formats.md#mosaic-and-wise)."""

        def pct(x):
            return None if pd.isna(x) else round(100 * float(x), 6)

        def ci(lo, hi):
            return [pct(lo), pct(hi)]

        def num(x):
            return None if pd.isna(x) else float(x)

        models = {}
        for r in self.pa.itertuples(index=False):
            m = r.model
            scc, poscc = self.scc[self.scc["model"] == m], self.poscc[self.poscc["model"] == m]
            pcc = self.pcc[self.pcc["model"] == m]
            c = self.counts.loc[m]
            models[str(m)] = {
                "pa": pct(r.pa),
                "scc": {str(x.constraint): pct(x.scc) for x in scc.itertuples(index=False)},
                "poscc": {str(int(x.position)): pct(x.poscc) for x in poscc.itertuples(index=False)},
                "all_followed": pct(r.all_followed),
                "outputs": int(c["outputs"]),
                "checked": int(c["checked"]),
                "unchecked": int(c["unchecked"]),
                "intervals": {
                    "pa": ci(r.pa_low, r.pa_high),
                    "all_followed": ci(r.all_followed_low, r.all_followed_high),
                    "scc": {str(x.constraint): ci(x.ci_low, x.ci_high) for x in scc.itertuples(index=False)},
                    "poscc": {str(int(x.position)): ci(x.ci_low, x.ci_high) for x in poscc.itertuples(index=False)},
                },
                "n": {
                    "scc": {str(x.constraint): int(x.n) for x in scc.itertuples(index=False)},
                    "poscc": {str(int(x.position)): int(x.n) for x in poscc.itertuples(index=False)},
                },
                "pcc": [
                    {
                        "constraint_i": str(x.constraint_i),
                        "constraint_j": str(x.constraint_j),
                        "n": int(x.n),
                        "pcc": pct(x.pcc),
                        "interval": ci(x.ci_low, x.ci_high),
                        "r": num(x.r),
                        "p_value": num(x.p_value),
                    }
                    for x in pcc.itertuples(index=False)
                ],
            }
        return {
            "study": self.study,
            "models": models,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "level": self.level,
            "interval": "percentile bootstrap over prompts (one draw for every model)",
            "notes": self.notes,
        }


def results(
    engine: Engine, principal: Principal, *, study: str, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
) -> MosaicResults:
    """PA, SCC, PosCC, PCC (+ Pearson r, p) per model with bootstrap intervals over prompts."""
    require(principal, VIEW)
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0 or n_boot == 1:
        raise ValueError(f"n_boot: must be 0 (no intervals) or an integer >= 2, got {n_boot!r}")
    study = _name(study)
    with engine.connect() as conn:
        sid = _study(conn, study)["id"]
        checked = repo.checks(conn, study_id=sid)
        outs = repo.outputs(conn, study_id=sid, with_text=False)
        cons = repo.constraints(conn, study_id=sid)
    sizes = cons.groupby("prompt_id").size()
    counts = (
        outs.assign(pairs=outs["prompt_id"].map(sizes).fillna(0))
        .groupby("model")
        .agg(outputs=("id", "size"), pairs=("pairs", "sum"))
    )
    counts["checked"] = checked.groupby("model").size().reindex(counts.index).fillna(0).astype(int)
    counts["unchecked"] = (counts["pairs"] - counts["checked"]).astype(int)
    notes = []
    if outs.empty:
        notes.append("no outputs yet: run mosaic-collect or mosaic-import-outputs")
    elif checked.empty:
        notes.append("no checks yet: run mosaic-check")
    missing = int(counts["unchecked"].sum()) if len(counts) else 0
    if missing:
        judge_pairs = int(outs.merge(cons[cons["verifier"] == JUDGE], on="prompt_id").shape[0]) - int(
            (checked["verifier"] == JUDGE).sum()
        )
        notes.append(
            f"{missing} (output, constraint) pair(s) have no check and are left out of every metric"
            + (f"; {judge_pairs} of them need the LLM judge (mosaic-check --judge-provider …)" if judge_pairs else "")
        )
    frame = checked[["model", "prompt", "constraint", "position", "score"]]
    m = M.study_metrics(frame, by="model", n_boot=n_boot, level=level, rng=np.random.default_rng(seed))
    corr = (
        M.constraint_correlations(frame, response="prompt", by="model")
        if len(frame)
        else pd.DataFrame(columns=["model", "constraint_i", "constraint_j", "n", "r", "p_value"])
    )
    pcc = m["pcc"].merge(corr.drop(columns="n"), on=["model", "constraint_i", "constraint_j"], how="left")
    return MosaicResults(
        study=study,
        pa=m["pa"],
        scc=m["scc"],
        poscc=m["poscc"],
        pcc=pcc,
        counts=counts[["outputs", "pairs", "checked", "unchecked"]],
        n_boot=int(n_boot),
        seed=seed,
        level=level,
        notes=notes,
    )


def score(
    engine: Engine, principal: Principal, *, study: str, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
) -> dict:
    """The ``mosaic-score --json`` object (docs/formats.md#mosaic-and-wise)."""
    return results(engine, principal, study=study, n_boot=n_boot, seed=seed, level=level).to_json()


# ----------------------------------------------------------------------------- browsing


def list_studies(engine: Engine, principal: Principal) -> pd.DataFrame:
    """Every MOSAIC study: ``id, name, prompts, models, outputs, checks``."""
    require(principal, VIEW)
    with engine.connect() as conn:
        return repo.list_studies(conn)


def output_summary(engine: Engine, principal: Principal, *, study: str, model: str) -> pd.DataFrame:
    """Per prompt answered by ``model``: ``prompt, task, product, constraints, checked,
    followed, pa, failing`` (the failing constraints' keys, in list order)."""
    require(principal, VIEW)
    with engine.connect() as conn:
        sid = _study(conn, _name(study))["id"]
        prompts = repo.prompts(conn, study_id=sid)
        cons = repo.constraints(conn, study_id=sid)
        outs = repo.outputs(conn, study_id=sid, model=model, with_text=False)
        checked = repo.checks(conn, study_id=sid)
    checked = checked[checked["model"] == model]
    size = cons.groupby("prompt").size()
    agg = checked.groupby("prompt").agg(checked=("followed", "size"), followed=("followed", "sum"))
    failing = checked[~checked["followed"]].groupby("prompt")["constraint"].agg(", ".join)
    df = prompts[prompts["id"].isin(outs["prompt_id"])][["key", "task", "product"]].rename(columns={"key": "prompt"})
    df["constraints"] = df["prompt"].map(size).fillna(0).astype(int)
    df = df.join(agg, on="prompt")
    df[["checked", "followed"]] = df[["checked", "followed"]].fillna(0).astype(int)
    df["pa"] = (df["followed"] / df["checked"]).where(df["checked"] > 0)
    df["failing"] = df["prompt"].map(failing).fillna("")
    return df.reset_index(drop=True)


def output_detail(engine: Engine, principal: Principal, *, study: str, prompt: str, model: str) -> dict:
    """One output with its prompt and every constraint's check: ``{"prompt", "model", "task",
    "product", "system", "user", "output", "meta", "checks"}``; ``checks`` has ``position,
    constraint, category, text, verifier, checker, score, followed, evidence`` (NaN/None
    where unchecked)."""
    require(principal, VIEW)
    with engine.connect() as conn:
        sid = _study(conn, _name(study))["id"]
        prompts = repo.prompts(conn, study_id=sid).set_index("key")
        if prompt not in prompts.index:
            raise ValueError(f"prompt: {prompt!r} is not a prompt of study {study!r}")
        outs = repo.outputs(conn, study_id=sid, model=model)
        cons = repo.constraints(conn, study_id=sid)
        checked = repo.checks(conn, study_id=sid)
    outs = outs[outs["prompt"] == prompt]
    if outs.empty:
        raise ValueError(f"model: {model!r} has no output for prompt {prompt!r}")
    o = outs.iloc[0]
    cons = cons[cons["prompt"] == prompt][["id", "position", "constraint", "category", "text", "verifier"]]
    mine = checked[checked["output_id"] == o["id"]][["constraint_id", "checker", "score", "followed", "evidence"]]
    detail = cons.merge(mine, left_on="id", right_on="constraint_id", how="left").drop(columns=["id", "constraint_id"])
    detail["followed"] = detail["followed"].astype(object).where(detail["followed"].notna(), None)
    p = prompts.loc[prompt]
    return {
        "prompt": prompt,
        "model": model,
        "task": p["task"],
        "product": p["product"],
        "system": p["system_prompt"],
        "user": p["user_prompt"],
        "output": o["output"],
        "meta": o["meta"] if isinstance(o["meta"], dict) else json.loads(o["meta"] or "{}"),
        "checks": detail.reset_index(drop=True),
    }
