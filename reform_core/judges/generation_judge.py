"""Evaluated-model adapter: generate answers through the OpenAI(-compatible) and Gemini SDKs.

It reuses the judge adapters' clients and error translation (``openai_judge.make_client``,
``gemini_judge.make_client``) and follows the same protocol as a judge (``judge(item)``),
so the judges' runner can drive it. Request building is pure and tested offline.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from reform_core.config import redact
from reform_core.judges.pricing import cost_usd
from reform_core.judges.ratelimit import RateLimits
from reform_core.judges.retry import RetryPolicy, call_with_retry

PROVIDERS = ("openai", "gemini")
TRUNCATED = {"length", "max_tokens", "MAX_TOKENS"}


@dataclass(frozen=True)
class GenerationSettings:
    """Per-model generation settings (Table A13); ``None`` leaves a parameter to the server."""

    temperature: Optional[float] = 0.0
    top_p: Optional[float] = None
    max_tokens: Optional[int] = 4096
    reasoning_effort: Optional[str] = None  # OpenAI reasoning models: low | medium | high
    thinking_budget: Optional[int] = None  # Gemini thinking budget in tokens
    system: Optional[str] = None  # an optional system prompt (the paper uses none)

    def __post_init__(self):
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ValueError(f"temperature: must lie in [0, 2], got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p: must lie in (0, 1], got {self.top_p}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens: must be >= 1, got {self.max_tokens}")
        if self.thinking_budget is not None and self.thinking_budget < 0:
            raise ValueError(f"thinking_budget: must be >= 0, got {self.thinking_budget}")

    def to_meta(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class GenItem:
    """One generation: who answers what (``instruction`` None for a baseline)."""

    model: str
    question: str
    instruction: Optional[str]
    condition: str
    prompt: str
    messages: tuple = ()  # explicit messages (construction prompts) instead of ``prompt``
    constraints: tuple = ()  # the runner's failure path builds verdicts from this


@dataclass
class GenResult:
    """A generation outcome, shaped for :class:`reform_core.judges.runner.RunStats`."""

    item: GenItem
    text: str = ""
    finish_reason: str = ""
    error: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    requests: int = 0
    verdicts: list = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return self.finish_reason in TRUNCATED


def messages_for(item: GenItem, settings: GenerationSettings) -> list[dict]:
    if item.messages:
        return list(item.messages)
    system = [{"role": "system", "content": settings.system}] if settings.system else []
    return [*system, {"role": "user", "content": item.prompt}]


def openai_request(model: str, messages: list[dict], s: GenerationSettings) -> dict:
    """The chat-completions body for these settings (pure)."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    for key, value in (
        ("temperature", s.temperature),
        ("top_p", s.top_p),
        ("max_tokens", s.max_tokens),
        ("reasoning_effort", s.reasoning_effort),
    ):
        if value is not None:
            body[key] = value
    return body


def gemini_config(messages: list[dict], s: GenerationSettings) -> dict:
    """``contents`` and ``config`` keyword arguments for ``generate_content`` (pure)."""
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    contents = [
        {"role": "user" if m["role"] == "user" else "model", "parts": [{"text": m["content"]}]}
        for m in messages
        if m["role"] != "system"
    ]
    config: dict[str, Any] = {}
    for key, value in (("temperature", s.temperature), ("top_p", s.top_p), ("max_output_tokens", s.max_tokens)):
        if value is not None:
            config[key] = value
    if system:
        config["system_instruction"] = system
    if s.thinking_budget is not None:
        config["thinking_config"] = {"thinking_budget": s.thinking_budget}
    return {"contents": contents, "config": config}


class Generator:
    """An evaluated model behind an OpenAI-compatible or Gemini endpoint.

    ``judge(item)`` (the runner's entry point) never raises: a failed call becomes a
    :class:`GenResult` with ``error`` set.
    """

    def __init__(
        self,
        provider: str,
        *,
        model: str,
        api_key: str,
        settings: GenerationSettings,
        base_url: Optional[str] = None,
        timeout: float = 300.0,
        retry: Optional[RetryPolicy] = None,
        limits: Optional[RateLimits] = None,
        rng: Optional[random.Random] = None,
    ):
        if provider not in PROVIDERS:
            raise ValueError(f"provider: expected one of {PROVIDERS}, got {provider!r}")
        if not model:
            raise ValueError("model: the provider's model name is required")
        self.provider, self.model, self.settings = provider, model, settings
        self.retry, self.limits, self.rng = retry or RetryPolicy(), limits, rng or random.Random()
        self.secrets = [api_key] if api_key else []
        if provider == "openai":
            from reform_core.judges import openai_judge as mod

            self.client = mod.make_client(api_key=api_key, base_url=base_url, timeout=timeout)
        else:
            from reform_core.judges import gemini_judge as mod

            self.client = mod.make_client(api_key=api_key, base_url=base_url, timeout=timeout)
        self._mod = mod

    async def _complete(self, messages: list[dict]) -> tuple[str, str, int, int]:
        mod = self._mod
        if self.provider == "openai":
            try:
                resp = await self.client.chat.completions.create(**openai_request(self.model, messages, self.settings))
            except Exception as exc:  # noqa: BLE001 - translated for the retry policy
                raise mod.provider_error(exc) from None
            choice = resp.choices[0]
            u = resp.usage
            return (
                choice.message.content or "",
                str(choice.finish_reason or ""),
                (u.prompt_tokens or 0) if u else 0,
                (u.completion_tokens or 0) if u else 0,
            )
        from google.genai import types

        req = gemini_config(messages, self.settings)
        cfg = dict(req["config"])
        if "thinking_config" in cfg:
            cfg["thinking_config"] = types.ThinkingConfig(**cfg["thinking_config"])
        try:
            resp = await self.client.aio.models.generate_content(
                model=self.model, contents=req["contents"], config=types.GenerateContentConfig(**cfg)
            )
        except Exception as exc:  # noqa: BLE001
            raise mod.provider_error(exc) from None
        finish = resp.candidates[0].finish_reason if resp.candidates else None
        finish = getattr(finish, "name", None) or str(finish or "")
        u = resp.usage_metadata
        out = ((u.candidates_token_count or 0) + (u.thoughts_token_count or 0)) if u else 0
        return resp.text or "", finish, (u.prompt_token_count or 0) if u else 0, out

    async def judge(self, item: GenItem) -> GenResult:
        messages = messages_for(item, self.settings)
        result = GenResult(item)

        async def once():
            result.requests += 1
            if self.limits is not None:
                await self.limits.acquire(len(item.prompt) // 4 + (self.settings.max_tokens or 0))
            return await self._complete(messages)

        try:
            text, finish, tin, tout = await call_with_retry(once, self.retry, rng=self.rng)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded, never raised
            result.error = redact(f"{type(exc).__name__}: {exc}", self.secrets)[:2000]
            return result
        if not text.strip() and finish not in TRUNCATED:
            result.error = f"empty answer (finish_reason={finish or 'unknown'})"
        result.text, result.finish_reason, result.input_tokens, result.output_tokens = text, finish, tin, tout
        result.cost_usd = cost_usd(self.model, tin, tout)
        return result

    async def aclose(self) -> None:
        if self.provider == "openai":
            await self.client.close()
        else:
            await self.client.aio.aclose()
