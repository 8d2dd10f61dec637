"""Evaluate IFEval-format files with the ``ifeval:*`` verifiers (pure, no db).

Files (Zhou et al. 2023, arXiv 2311.07911; google-research ``instruction_following_eval``):

* inputs: JSONL, one object per prompt with ``key`` (int), ``prompt`` (str),
  ``instruction_id_list`` (list of str) and ``kwargs`` (list of dicts, one per instruction);
* responses: JSONL, one object per response with ``prompt`` and ``response`` (str),
  joined to the inputs by exact prompt text.

Malformed lines raise ValueError as ``file:line: field: message``. A prompt without a
response is listed in :attr:`IFEvalRun.missing`, not an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from reform_core.verifiers import ifeval

VERDICT_COLUMNS = ("key", "instruction_id", "passed", "evidence")


@dataclass(frozen=True)
class IFEvalPrompt:
    """One line of IFEval's ``input_data.jsonl``."""

    key: int
    prompt: str
    instruction_id_list: tuple[str, ...]
    kwargs: tuple[dict, ...]


@dataclass(frozen=True)
class IFEvalRun:
    """Result of :func:`evaluate`.

    verdicts: one row per (key, instruction_id) with columns ``key, instruction_id,
              passed, evidence`` (passed is bool), in input order.
    missing:  keys of prompts that have no response (not evaluated).
    """

    verdicts: pd.DataFrame
    missing: list[int] = field(default_factory=list)


def _json_lines(path: str | Path):
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror}") from None
    with handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: line: invalid JSON: {exc.msg}") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{lineno}: line: expected a JSON object, got {type(obj).__name__}")
            yield path, lineno, obj


def _field(obj: dict, name: str, kind: type, where: str):
    if name not in obj:
        raise ValueError(f"{where}: {name}: missing")
    value = obj[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{where}: {name}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def read_inputs(path: str | Path) -> list[IFEvalPrompt]:
    """Read and validate IFEval's ``input_data.jsonl``.

    Raises ValueError ``file:line: field: message`` on a malformed line, an unknown
    instruction id, kwargs of the wrong length or with missing / unexpected arguments,
    or a repeated key.
    """
    out, seen = [], {}
    for path_, lineno, obj in _json_lines(path):
        where = f"{path_}:{lineno}"
        key = _field(obj, "key", int, where)
        prompt = _field(obj, "prompt", str, where)
        ids = _field(obj, "instruction_id_list", list, where)
        kwargs = _field(obj, "kwargs", list, where)
        if key in seen:
            raise ValueError(f"{where}: key: {key} repeats line {seen[key]}")
        seen[key] = lineno
        for iid in ids:
            if iid not in ifeval.INSTRUCTION_IDS:
                raise ValueError(f"{where}: instruction_id_list: unknown instruction {iid!r}")
        if len(kwargs) != len(ids) or not all(isinstance(k, dict) for k in kwargs):
            raise ValueError(f"{where}: kwargs: expected {len(ids)} objects (one per instruction), got {kwargs!r}")
        for iid, kw in zip(ids, kwargs):
            try:
                ifeval.clean_kwargs(iid, kw)
            except ValueError as exc:
                raise ValueError(f"{where}: kwargs: {exc}") from None
        out.append(IFEvalPrompt(key, prompt, tuple(ids), tuple(kwargs)))
    return out


def read_responses(path: str | Path) -> dict[str, str]:
    """Read a ``{prompt, response}`` JSONL into ``{prompt: response}``.

    A prompt given twice with different responses is an error (which one would count?).
    """
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for path_, lineno, obj in _json_lines(path):
        where = f"{path_}:{lineno}"
        prompt = _field(obj, "prompt", str, where)
        response = _field(obj, "response", str, where)
        if prompt in out and out[prompt] != response:
            raise ValueError(f"{where}: prompt: repeats line {first[prompt]} with a different response")
        out[prompt] = response
        first.setdefault(prompt, lineno)
    return out


def evaluate(prompts: list[IFEvalPrompt], responses: dict[str, str], *, mode: str = "strict") -> IFEvalRun:
    """Run every (key, instruction_id) of ``prompts`` on its response.

    Parameters
    ----------
    prompts : list of IFEvalPrompt
        From :func:`read_inputs`.
    responses : dict
        ``{prompt text: response}`` from :func:`read_responses`; joined by exact text.
    mode : {"strict", "loose"}
        IFEval's strict or loose accuracy (Zhou et al. 2023, §3).

    Returns
    -------
    IFEvalRun
        Verdicts frame and the keys of prompts without a response.
    """
    if mode not in ifeval.MODES:
        raise ValueError(f"mode: must be one of {ifeval.MODES}, got {mode!r}")
    rows, missing = [], []
    for p in prompts:
        if p.prompt not in responses:
            missing.append(p.key)
            continue
        text = responses[p.prompt]
        for iid, kw in zip(p.instruction_id_list, p.kwargs):
            try:
                res = ifeval.check(iid, text, kw, mode=mode)
            except ValueError as exc:
                raise ValueError(f"key {p.key}: {exc}") from None
            rows.append((p.key, iid, res.passed, res.evidence))
    verdicts = pd.DataFrame(rows, columns=list(VERDICT_COLUMNS)).astype({"key": "int64", "passed": bool})
    return IFEvalRun(verdicts=verdicts, missing=missing)


def accuracy(verdicts: pd.DataFrame) -> dict[str, float]:
    """IFEval's prompt-level and instruction-level accuracy (Zhou et al. 2023, §3).

    Prompt level: share of keys whose instructions all pass; instruction level: share of
    passing (key, instruction_id) rows. Both NaN for an empty frame.
    """
    if verdicts.empty:
        return {"prompt_level": float("nan"), "instruction_level": float("nan")}
    passed = verdicts["passed"].astype(bool)
    return {
        "prompt_level": float(passed.groupby(verdicts["key"]).all().mean()),
        "instruction_level": float(passed.mean()),
    }
