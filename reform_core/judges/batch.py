"""Batch mode, pure part: request lines and result ingestion (no SDK, no I/O).

Also the providers' wire formats (request bodies, answer extraction), which the online
adapters share.

Each item becomes one request whose key (``custom_id`` for OpenAI, ``metadata.key`` for
Gemini) is :func:`item_key`. Ingestion turns the provider's results back into
:class:`~reform_core.judges.base.JudgeResult` objects with the same strict parser as the
online path:

* a successful line whose answer parses: ok verdicts;
* a successful line whose answer does not parse, or a failed line (error file / inline
  error): every constraint of the item becomes an error verdict (``status="error"``);
  error judgments are pending again, so the next run (online or batch) retries them —
  the batch path makes no repair call;
* an item with no line at all (expired or cancelled batch): no result; it stays pending;
* a line whose key is unknown: ignored and counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable, Optional

from reform_core.judges import prompt as prompt_mod
from reform_core.judges.base import Completion, JudgeItem, JudgeResult, Verdict
from reform_core.judges.parsing import ParseError, parse_verdicts
from reform_core.judges.pricing import cost_usd
from reform_core.judges.prompt import TEMPERATURE

# --- wire formats (shared with the online adapters) ---------------------------------


def request_body(model: str, messages: list[dict], schema: dict, max_tokens: int) -> dict:
    """The chat-completions body (also one line of a batch input file)."""
    return {
        "model": model,
        "messages": messages,
        "temperature": TEMPERATURE,
        "max_completion_tokens": max_tokens,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "verdicts", "strict": True, "schema": schema},
        },
    }


def completion_from_dict(body: dict) -> Completion:
    """Text and usage of a chat-completion JSON body; a refusal or empty answer raises."""
    choices = body.get("choices") or []
    if not choices:
        raise ValueError("the answer has no choices")
    message = choices[0].get("message") or {}
    if message.get("refusal"):
        raise ValueError(f"the model refused: {message['refusal']}")
    text = message.get("content")
    if text is None:
        raise ValueError(f"the answer has no content (finish_reason={choices[0].get('finish_reason')!r})")
    usage = body.get("usage") or {}
    return Completion(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))


def generation_config(messages: list[dict], schema: dict, max_tokens: int) -> dict:
    """``contents`` and ``config`` of one request (also one inline batch request)."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    contents = [
        {"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
        for m in messages
        if m["role"] != "system"
    ]
    config = {
        "system_instruction": system,
        "temperature": TEMPERATURE,
        "max_output_tokens": max_tokens,
        "response_mime_type": "application/json",
        "response_json_schema": schema,
    }
    return {"contents": contents, "config": config}


# --- batch requests and ingestion ------------------------------------------------------


def item_key(item: JudgeItem) -> str:
    return f"{item.task}:{item.response_id}"


def openai_lines(items: Iterable[JudgeItem], *, model: str, max_tokens: int = 2048) -> str:
    """The Batch API input file: one ``/v1/chat/completions`` request per item (JSONL)."""
    lines = []
    for item in items:
        body = request_body(model, prompt_mod.build_messages(item), prompt_mod.response_schema(item), max_tokens)
        lines.append(
            json.dumps(
                {"custom_id": item_key(item), "method": "POST", "url": "/v1/chat/completions", "body": body},
                ensure_ascii=False,
            )
        )
    return "\n".join(lines) + "\n"


def gemini_requests(items: Iterable[JudgeItem], *, max_tokens: int = 2048) -> list[dict]:
    """Inline batch requests: ``contents``, ``config`` and ``metadata.key`` per item."""
    out = []
    for item in items:
        req = generation_config(prompt_mod.build_messages(item), prompt_mod.response_schema(item), max_tokens)
        out.append({**req, "metadata": {"key": item_key(item)}})
    return out


@dataclass(frozen=True)
class BatchRow:
    """One result line: the answer, or an error message."""

    key: str
    completion: Optional[Completion] = None
    error: str = ""


def openai_rows(output_jsonl: str, errors_jsonl: str = "") -> list[BatchRow]:
    """Rows of an OpenAI batch's output and error files."""
    rows = []
    for n, line in enumerate((output_jsonl + "\n" + errors_jsonl).splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"batch result line {n}: malformed JSON ({exc})") from None
        key = obj.get("custom_id") or ""
        resp = obj.get("response") or {}
        status = resp.get("status_code")
        if obj.get("error") or status != 200:
            err = obj.get("error") or (resp.get("body") or {}).get("error") or {}
            msg = err.get("message", "") if isinstance(err, dict) else str(err)
            rows.append(BatchRow(key, None, f"batch line failed (HTTP {status}): {msg}".strip()))
            continue
        try:
            rows.append(BatchRow(key, completion_from_dict(resp.get("body") or {})))
        except ValueError as exc:
            rows.append(BatchRow(key, None, str(exc)))
    return rows


@dataclass
class Ingested:
    results: list[JudgeResult] = field(default_factory=list)
    unknown_keys: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # items with no line (left pending)


def ingest(
    rows: Iterable[BatchRow], items: Iterable[JudgeItem], *, model: str, prices: Optional[dict] = None
) -> Ingested:
    """Results of a finished batch for the submitted ``items`` (see module docstring)."""
    by_key = {item_key(i): i for i in items}
    out = Ingested()
    seen = set()
    for row in rows:
        item = by_key.get(row.key)
        if item is None or row.key in seen:
            out.unknown_keys.append(row.key)
            continue
        seen.add(row.key)
        c = row.completion
        tin, tout = (c.input_tokens, c.output_tokens) if c else (0, 0)
        acct = dict(
            input_tokens=tin,
            output_tokens=tout,
            requests=1,
            cost_usd=cost_usd(model, tin, tout, prices=prices, batch=True),
        )
        if c is None:
            out.results.append(JudgeResult.failed(item, row.error or "batch line failed", **acct))
            continue
        ids = [s.prompt_id for s in item.constraints]
        try:
            parsed = parse_verdicts(c.text, ids)
        except ParseError as exc:
            out.results.append(JudgeResult.failed(item, f"ParseError: {exc}", raw=c.text, **acct))
            continue
        spec = {s.prompt_id: s for s in item.constraints}
        verdicts = [Verdict(spec[pid].id, label, why) for pid, (label, why) in parsed.items()]
        out.results.append(JudgeResult(item, verdicts, raw=c.text, **acct))
    out.missing = [k for k in by_key if k not in seen]
    return out
