"""OpenAI (and any OpenAI-compatible server) judge on the official ``openai`` SDK.

Chat completions with structured output (``response_format`` ``json_schema``, strict),
temperature 0, the SDK's own retries off (``max_retries=0``: :mod:`retry` decides).
``base_url`` points the client at Azure's OpenAI-compatible endpoint, vLLM, Ollama or
a test server. The batch helpers drive the OpenAI Batch API (files + batches).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

import openai
from openai import AsyncOpenAI

from reform_core.judges.base import Completion, LLMJudge
from reform_core.judges.batch import completion_from_dict, request_body
from reform_core.judges.retry import ProviderError, parse_retry_after


def provider_error(exc: Exception) -> Exception:
    """The SDK's exception as a :class:`ProviderError` (others unchanged)."""
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError(f"timeout: {exc}", kind="timeout")
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError(f"connection error: {exc}", kind="connection")
    if isinstance(exc, openai.APIStatusError):
        return ProviderError(
            f"HTTP {exc.status_code}: {exc.message}",
            status=exc.status_code,
            retry_after=parse_retry_after(exc.response.headers),
        )
    return exc


def make_client(*, api_key: str, base_url: Optional[str] = None, timeout: float = 120.0) -> AsyncOpenAI:
    if not api_key:
        raise ValueError("OPENAI_API_KEY: no API key given (set it in the environment or settings)")
    return AsyncOpenAI(api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=0)


class OpenAIJudge(LLMJudge):
    provider = "openai"

    def __init__(self, *, model: str, api_key: str, base_url: Optional[str] = None, timeout: float = 120.0, **kw):
        super().__init__(model=model, secrets=(api_key,), **kw)
        self.client = make_client(api_key=api_key, base_url=base_url, timeout=timeout)

    async def _complete(self, messages: list[dict], schema: dict) -> Completion:
        body = request_body(self.model, messages, schema, self.max_output_tokens)
        try:
            # the raw response skips building the pydantic ChatCompletion: the JSON body
            # goes through the same extractor as batch result lines
            raw = await self.client.chat.completions.with_raw_response.create(**body)
        except openai.OpenAIError as exc:
            raise provider_error(exc) from None
        try:
            data = json.loads(raw.content)
        except ValueError as exc:
            raise ValueError(f"the server's answer is not JSON: {exc}") from None
        return completion_from_dict(data)

    async def aclose(self) -> None:
        await self.client.close()


# --- Batch API -------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchStatus:
    state: str  # the provider's status, e.g. validating | in_progress | completed | failed
    done: bool
    output: str = ""  # JSONL of successful lines (when done)
    errors: str = ""  # JSONL of failed lines (when done)
    message: str = ""


TERMINAL = {"completed", "failed", "expired", "cancelled"}


async def submit_batch(client: AsyncOpenAI, jsonl: str, *, metadata: Optional[dict] = None) -> str:
    """Upload ``jsonl`` (see :func:`reform_core.judges.batch.openai_lines`) and create a
    24 h batch on ``/v1/chat/completions``; return the batch id."""
    try:
        f = await client.files.create(file=("judge-requests.jsonl", jsonl.encode("utf-8")), purpose="batch")
        batch = await client.batches.create(
            input_file_id=f.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata=metadata or None,
        )
    except openai.OpenAIError as exc:
        raise provider_error(exc) from None
    return batch.id


async def poll_batch(client: AsyncOpenAI, batch_id: str) -> BatchStatus:
    """The batch's state; once terminal, the contents of its output and error files."""
    try:
        batch = await client.batches.retrieve(batch_id)
        if batch.status not in TERMINAL:
            return BatchStatus(batch.status, False)
        output = (await client.files.content(batch.output_file_id)).text if batch.output_file_id else ""
        errors = (await client.files.content(batch.error_file_id)).text if batch.error_file_id else ""
    except openai.OpenAIError as exc:
        raise provider_error(exc) from None
    message = ""
    if batch.errors and batch.errors.data:
        message = "; ".join(f"{e.code}: {e.message}" for e in batch.errors.data)
    return BatchStatus(batch.status, True, output, errors, message)
