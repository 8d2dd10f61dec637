"""Gemini judge on the official ``google-genai`` SDK.

``client.aio.models.generate_content`` with ``response_mime_type="application/json"``
and ``response_json_schema``, temperature 0, the SDK's retries off
(``HttpRetryOptions(attempts=1)``: :mod:`retry` decides). Gemini API key or Vertex AI
(``vertexai=True`` with project/location and application-default credentials).
``base_url`` / ``api_version`` point the client at a proxy or a test server; the API
version defaults to ``v1beta`` (JSON-schema structured output). The batch helpers drive
Gemini batch mode with inline requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from reform_core.judges.base import Completion, LLMJudge
from reform_core.judges.batch import generation_config
from reform_core.judges.retry import ProviderError, parse_retry_after

DEFAULT_API_VERSION = "v1beta"


def provider_error(exc: Exception) -> Exception:
    if isinstance(exc, genai_errors.APIError):
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return ProviderError(
            f"HTTP {exc.code}: {exc.message or exc.status}",
            status=exc.code,
            retry_after=parse_retry_after(dict(headers) if headers else None),
        )
    if isinstance(exc, httpx2.TimeoutException):
        return ProviderError(f"timeout: {exc}", kind="timeout")
    if isinstance(exc, httpx2.TransportError):
        return ProviderError(f"connection error: {exc}", kind="connection")
    return exc


def make_client(
    *,
    api_key: Optional[str] = None,
    base_url: Optional[str] = None,
    api_version: str = DEFAULT_API_VERSION,
    timeout: float = 120.0,
    vertexai: bool = False,
    project: Optional[str] = None,
    location: Optional[str] = None,
) -> genai.Client:
    if not vertexai and not api_key:
        raise ValueError("GOOGLE_API_KEY: no API key given (set it in the environment or settings)")
    http_options = types.HttpOptions(
        base_url=base_url or None,
        api_version=api_version,
        timeout=int(timeout * 1000),
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    if vertexai:
        return genai.Client(vertexai=True, project=project, location=location, http_options=http_options)
    return genai.Client(api_key=api_key, http_options=http_options)


def completion_from_response(resp: Any) -> Completion:
    """Text and usage of a ``GenerateContentResponse``; a blocked/empty answer raises."""
    text = resp.text
    if not text:
        reason = resp.prompt_feedback.block_reason if resp.prompt_feedback else None
        finish = resp.candidates[0].finish_reason if resp.candidates else None
        raise ValueError(f"the answer has no text (block_reason={reason}, finish_reason={finish})")
    u = resp.usage_metadata
    tokens_in = (u.prompt_token_count or 0) if u else 0
    tokens_out = ((u.candidates_token_count or 0) + (u.thoughts_token_count or 0)) if u else 0
    return Completion(text, tokens_in, tokens_out)


class GeminiJudge(LLMJudge):
    provider = "gemini"

    def __init__(
        self,
        *,
        model: str,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        api_version: str = DEFAULT_API_VERSION,
        timeout: float = 120.0,
        vertexai: bool = False,
        project: Optional[str] = None,
        location: Optional[str] = None,
        **kw,
    ):
        super().__init__(model=model, secrets=(api_key or "",), **kw)
        self.client = make_client(
            api_key=api_key,
            base_url=base_url,
            api_version=api_version,
            timeout=timeout,
            vertexai=vertexai,
            project=project,
            location=location,
        )

    async def _complete(self, messages: list[dict], schema: dict) -> Completion:
        req = generation_config(messages, schema, self.max_output_tokens)
        try:
            resp = await self.client.aio.models.generate_content(
                model=self.model, contents=req["contents"], config=types.GenerateContentConfig(**req["config"])
            )
        except (genai_errors.APIError, httpx2.TransportError) as exc:
            raise provider_error(exc) from None
        return completion_from_response(resp)

    async def aclose(self) -> None:
        await self.client.aio.aclose()


# --- batch mode ------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchStatus:
    state: str  # JOB_STATE_PENDING | JOB_STATE_RUNNING | JOB_STATE_SUCCEEDED | ...
    done: bool
    # (key, Completion or None, error message) per inline response, when done
    rows: list[tuple[str, Optional[Completion], str]] = field(default_factory=list)
    message: str = ""


TERMINAL = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"}


async def submit_batch(client: genai.Client, model: str, requests: list[dict], *, display_name: str = "") -> str:
    """Create a batch job from inline requests (see :func:`reform_core.judges.batch.gemini_requests`)."""
    inlined = [
        types.InlinedRequest(
            contents=r["contents"], config=types.GenerateContentConfig(**r["config"]), metadata=r["metadata"]
        )
        for r in requests
    ]
    try:
        job = await client.aio.batches.create(
            model=model, src=inlined, config=types.CreateBatchJobConfig(display_name=display_name or None)
        )
    except (genai_errors.APIError, httpx2.TransportError) as exc:
        raise provider_error(exc) from None
    return job.name


async def poll_batch(client: genai.Client, name: str) -> BatchStatus:
    """The job's state; once terminal, one row per inline response (keyed by metadata)."""
    try:
        job = await client.aio.batches.get(name=name)
    except (genai_errors.APIError, httpx2.TransportError) as exc:
        raise provider_error(exc) from None
    state = job.state.value if hasattr(job.state, "value") else str(job.state)
    if state not in TERMINAL:
        return BatchStatus(state, False)
    rows = []
    for r in job.dest.inlined_responses if job.dest and job.dest.inlined_responses else []:
        key = (r.metadata or {}).get("key", "")
        if r.error is not None:
            rows.append((key, None, f"{r.error.code}: {r.error.message}"))
            continue
        try:
            rows.append((key, completion_from_response(r.response), ""))
        except ValueError as exc:
            rows.append((key, None, str(exc)))
    message = f"{job.error.code}: {job.error.message}" if job.error else ""
    return BatchStatus(state, True, rows, message)
