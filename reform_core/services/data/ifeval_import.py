"""IFEval-format data imported into a project (``import-ifeval``): prompts with their
instruction ids and kwargs, and model responses; every problem located, nothing written
unless the whole input is valid."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sqlalchemy.engine import Engine

from reform_core.records import storage_problem
from reform_core.services.data.importer import Progress, field_label, frames_bundle, import_bundle_obj, read_lines
from reform_core.services.data.reading import ImportFailed, one_line

MAX_IFEVAL_KEY = 200 - len("ifeval-")  # question/instruction keys are at most 200 characters


def _json_objects(path: Path, errors: list[str]) -> list[tuple[int, dict]]:
    """The ``(line number, object)`` lines of a JSON Lines file; problems go to ``errors``."""
    from reform_core.records import DuplicateKeyError, loads_unique

    out = []
    for lineno, line in read_lines(path, errors):
        try:
            d = loads_unique(line)
        except DuplicateKeyError as exc:
            errors += [
                one_line(
                    f"{path.name}:{lineno}: {field_label(k)}: given twice in this line (JSON would keep "
                    "only the last value)"
                )
                for k in exc.keys
            ]
            continue
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, too many digits, too deep
            errors.append(one_line(f"{path.name}:{lineno}: (line): invalid JSON: {getattr(exc, 'msg', None) or exc}"))
            continue
        if not isinstance(d, dict):
            errors.append(f"{path.name}:{lineno}: (line): expected a JSON object, got {type(d).__name__}")
            continue
        bad = [(k, p) for k, p in ((k, storage_problem(v)) for k, v in d.items()) if p]
        errors += [one_line(f"{path.name}:{lineno}: {field_label(k)}: {p}") for k, p in bad]
        if not bad:
            out.append((lineno, d))
    return out


def param_problems(feature, kw: dict, *, ifeval: bool = True) -> list[str]:
    """Problems of one constraint's params (IFEval: kwargs) against its catalog feature: names
    (IFEval: also the required ones, from the reference checker), types and choices."""
    from reform_core.catalog.loader import BOOL_OK, PARAM_TYPES
    from reform_core.verifiers import ifeval as ifeval_verifiers

    given = {k: v for k, v in kw.items() if v is not None}
    if ifeval:
        try:
            ifeval_verifiers.clean_kwargs(feature.key, given)
        except ValueError as exc:
            return [str(exc)]
    else:
        declared = {p.name for p in feature.params}
        unknown = sorted(set(given) - declared)
        if unknown:
            return [f"{feature.key}: unknown param(s) {unknown}; declared: {sorted(declared)}"]
    out = []
    for p in feature.params:
        v = given.get(p.name)
        if v is not None and (not isinstance(v, PARAM_TYPES[p.type]) or isinstance(v, bool) and p.type not in BOOL_OK):
            out.append(f"{feature.key}: {p.name} must be of type {p.type}, got {type(v).__name__}")
        elif p.choices and v is not None and v not in p.choices:
            out.append(f"{feature.key}: {p.name} must be one of {list(p.choices)}, got {v!r}")
    return out


def _ifeval_problems(d: dict, cat) -> list[tuple[str, str]]:
    """``(field, message)`` for each problem of one IFEval input record."""
    missing = [(f, "field required") for f in ("key", "prompt", "instruction_id_list", "kwargs") if f not in d]
    if missing:
        return missing
    key, ids, kwargs = d["key"], d["instruction_id_list"], d["kwargs"]
    out = []
    if (
        isinstance(key, bool)
        or not isinstance(key, (int, str))
        or not str(key).strip()
        or len(str(key)) > MAX_IFEVAL_KEY
    ):
        out.append(("key", f"must be an integer or a non-empty string of at most {MAX_IFEVAL_KEY} characters"))
    if not isinstance(d["prompt"], str):
        out.append(("prompt", f"must be a string, got {type(d['prompt']).__name__}"))
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return out + [("instruction_id_list", "must be a list of strings")]
    if not isinstance(kwargs, list) or not all(isinstance(k, dict) for k in kwargs):
        return out + [("kwargs", "must be a list of objects")]
    if len(kwargs) != len(ids):
        out.append(("kwargs", f"{len(kwargs)} entries for {len(ids)} instruction ids"))
    out += [("instruction_id_list", f"unknown IFEval instruction id {i!r}") for i in ids if i not in cat]
    if not out:
        out += [("kwargs", msg) for i, kw in zip(ids, kwargs) for msg in param_problems(cat[i], kw)]
    return out


def _key_order(key: str):
    """Numeric keys in numeric order, then the others."""
    return (not key.isdecimal(), len(key) if key.isdecimal() else 0, key)


def import_ifeval(
    engine: Engine,
    *,
    input_path: str | Path,
    responses: dict[str, str | Path],
    replace: bool = False,
    progress: Progress = None,
) -> dict:
    """Import IFEval-format data: prompts with instruction ids/kwargs and per-model responses.

    Each prompt becomes a question and one main instruction whose constraints are its
    instruction ids (catalog ``ifeval``), each with its text and acceptance criteria rendered
    from the catalog template with the prompt's kwargs (judges and annotators read "Answer
    with at least 300 words.", never a bare id). Responses join on exact prompt text; prompts
    without a response are reported by key in ``missing_responses`` and response lines
    whose prompt matches no input prompt in ``unmatched_responses`` (neither is an error).
    Problems are reported against the given files, ``file:line: field: message``.
    """
    from reform_core.catalog import load_catalog

    cat = load_catalog("ifeval")
    errors: list[str] = []
    input_path = Path(input_path)
    src = input_path.name
    prompts = _valid_prompts(input_path, cat, errors)
    by_prompt = {d["prompt"]: str(d["key"]) for _, d in prompts}
    resp_rows, missing, unmatched = [], {}, []
    for model, path in responses.items():
        rows, missing[model] = _model_responses(model, Path(path), by_prompt, src, errors, unmatched)
        resp_rows += rows
    if errors:
        raise ImportFailed(errors)
    frames = {
        "questions": _question_frame(prompts, src),
        "instructions": _instruction_frame(prompts, src),
        "constraints": pd.DataFrame(_constraint_rows(prompts, cat, src)),
        "responses": pd.DataFrame(resp_rows),
    }
    bundle = frames_bundle(frames, source=str(input_path), catalog="ifeval")
    counts = import_bundle_obj(engine, bundle, replace=replace, progress=progress)
    return {**counts, "missing_responses": missing, "unmatched_responses": unmatched}


def _valid_prompts(input_path: Path, cat, errors: list[str]) -> list[tuple[int, dict]]:
    """The ``(line number, record)`` prompts of the input file without problems; problems go to ``errors``."""
    src = input_path.name
    prompts = []
    for lineno, d in _json_objects(input_path, errors):
        problems = _ifeval_problems(d, cat)
        errors += [one_line(f"{src}:{lineno}: {fld}: {msg}") for fld, msg in problems]
        if not problems:
            prompts.append((lineno, d))
    return prompts


def _model_responses(
    model: str, path: Path, by_prompt: dict[str, str], src: str, errors: list[str], unmatched: list[str]
) -> tuple[list[dict], list[str]]:
    """One model's response rows (the first per prompt) and the keys of the prompts it did not answer;
    problems go to ``errors``, lines whose prompt matches no input prompt to ``unmatched``."""
    seen = set()
    rows = []
    if not 0 < len(model) <= 200:
        errors.append(f"{path.name}:0: model: the model name must have 1 to 200 characters")
    for lineno, d in _json_objects(path, errors):
        bad = [fld for fld in ("prompt", "response") if not isinstance(d.get(fld), str)]
        errors += [f"{path.name}:{lineno}: {fld}: field required (a string)" for fld in bad]
        if bad:
            continue
        key = by_prompt.get(d["prompt"])
        if key is None:
            unmatched.append(f"{path.name}:{lineno}: prompt: matches no prompt of {src}")
            continue
        if key in seen:
            continue
        seen.add(key)
        rows.append(
            {
                "model": model,
                "question": f"ifeval-{key}",
                "instruction": f"ifeval-{key}",
                "text": d["response"],
                "_line": lineno,
                "_file": path.name,
            }
        )
    return rows, sorted((k for k in by_prompt.values() if k not in seen), key=_key_order)


def _question_frame(prompts: list[tuple[int, dict]], src: str) -> pd.DataFrame:
    """One question per prompt."""
    return pd.DataFrame(
        [
            {
                "key": f"ifeval-{d['key']}",
                "text": d["prompt"],
                "task_type": "ifeval",
                "source": "IFEval",
                "_line": n,
                "_file": src,
            }
            for n, d in prompts
        ]
    )


def _instruction_frame(prompts: list[tuple[int, dict]], src: str) -> pd.DataFrame:
    """One main instruction per prompt, with the prompt as its text."""
    return pd.DataFrame(
        [
            {
                "key": f"ifeval-{d['key']}",
                "question": f"ifeval-{d['key']}",
                "condition": "main",
                "pair_group": f"ifeval-{d['key']}",
                "text": d["prompt"],
                "_line": n,
                "_file": src,
            }
            for n, d in prompts
        ]
    )


def _constraint_rows(prompts: list[tuple[int, dict]], cat, src: str) -> list[dict]:
    """One constraint per instruction id of each prompt, its text and acceptance rendered with its kwargs."""
    cons = []
    for n, d in prompts:
        for pos, (iid, kw) in enumerate(zip(d["instruction_id_list"], d["kwargs"]), start=1):
            kw = {k: v for k, v in kw.items() if v is not None}
            feat = cat[iid]
            mode = feat.modes[0]
            cons.append(
                {
                    "instruction": f"ifeval-{d['key']}",
                    "position": pos,
                    "feature": iid,
                    "mode": mode,
                    "text": feat.render(mode, **kw),
                    "acceptance": feat.render_acceptance(mode, **kw),
                    "params": kw,
                    "_line": n,
                    "_file": src,
                }
            )
    return cons
