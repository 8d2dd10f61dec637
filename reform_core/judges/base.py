"""The judge contract: items in, verdicts out (docs/metrics.md#what-a-judge-sees, DESIGN rule 5).

A :class:`JudgeItem` is one response together with every constraint of its instruction
(or, for baseline annotation, every catalog feature to look for). A judge returns one
:class:`JudgeResult` holding a :class:`Verdict` per constraint. A judge never raises for
a bad model answer: errors become verdicts with ``status="error"`` and ``label=None``.

:class:`LLMJudge` holds the provider-independent part of the LLM adapters (prompt,
strict parsing with one repair retry, transport retries, rate limits, cache, cost);
the SDK-specific ``*_judge.py`` modules only implement :meth:`LLMJudge._complete`.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, runtime_checkable

from reform_core.judges import prompt as prompt_mod
from reform_core.judges.cache import MemoryCache, cache_key
from reform_core.judges.constants import PROMPT_VERSION, TASK_CONSTRAINTS, TASK_PRESENCE
from reform_core.judges.parsing import ParseError, parse_verdicts
from reform_core.judges.pricing import cost_usd
from reform_core.judges.ratelimit import RateLimits
from reform_core.judges.retry import RetryPolicy, call_with_retry

__all__ = [
    "TASK_CONSTRAINTS",
    "TASK_PRESENCE",
    "ConstraintSpec",
    "JudgeItem",
    "Verdict",
    "JudgeResult",
    "Judge",
    "Completion",
    "LLMJudge",
]


@dataclass(frozen=True)
class ConstraintSpec:
    """One thing to decide about the response.

    ``id`` is the database id (constraint id, or the feature key for presence items);
    ``position`` gives the id shown to the judge (``c1``, ``c2`` …), never a database id.
    """

    id: Any
    position: int
    feature: str
    mode: str = "require"
    text: str = ""
    acceptance: str = ""
    params: dict = field(default_factory=dict)
    name: str = ""  # presence items: the catalog feature's display name

    @property
    def prompt_id(self) -> str:
        return f"c{self.position}"


@dataclass(frozen=True)
class JudgeItem:
    """One response and all constraints of its instruction (never the model's identity)."""

    response_id: int
    instruction: str
    response: str
    constraints: tuple[ConstraintSpec, ...]
    task: str = TASK_CONSTRAINTS

    def __post_init__(self):
        if not self.constraints:
            raise ValueError(f"response {self.response_id}: item has no constraints")
        ids = [c.prompt_id for c in self.constraints]
        if len(set(ids)) != len(ids):
            raise ValueError(f"response {self.response_id}: duplicate constraint positions {ids}")
        if self.task not in (TASK_CONSTRAINTS, TASK_PRESENCE):
            raise ValueError(f"task: unknown value {self.task!r}")


@dataclass(frozen=True)
class Verdict:
    """The judge's decision on one constraint: ``label`` 1 pass / 0 fail / None."""

    constraint_id: Any
    label: Optional[int]
    rationale: str = ""
    status: str = "ok"  # ok | error | abstain
    error: str = ""


@dataclass
class JudgeResult:
    """All verdicts for one item, with the raw output and the accounting of its calls."""

    item: JudgeItem
    verdicts: list[Verdict]
    raw: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    requests: int = 0  # HTTP requests made (retries and the repair included)
    cached: bool = False

    @property
    def error(self) -> str:
        return next((v.error for v in self.verdicts if v.status == "error"), "")

    @classmethod
    def failed(cls, item: JudgeItem, message: str, **kw) -> "JudgeResult":
        """Every constraint of ``item`` recorded as an error with ``message``."""
        verdicts = [Verdict(c.id, None, "", "error", message) for c in item.constraints]
        return cls(item, verdicts, **kw)


@runtime_checkable
class Judge(Protocol):
    provider: str
    model: str
    prompt_version: str

    async def judge(self, item: JudgeItem) -> JudgeResult: ...


@dataclass(frozen=True)
class Completion:
    """What one provider call returned: the text and its token usage."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class LLMJudge:
    """Provider-independent LLM judge; subclasses implement :meth:`_complete`.

    Parameters
    ----------
    model : the provider's model name.
    retry : the transport retry policy (429 / 5xx / timeouts / connection errors).
    limits : client-side requests/tokens per minute (shared by all concurrent calls).
    cache : a ``get``/``put`` mapping of cache key -> :class:`Completion` (None: off).
    prices : per-model token prices overriding :data:`pricing.DEFAULT_PRICES`.
    secrets : strings to redact from error messages (API keys).
    """

    provider = "llm"

    def __init__(
        self,
        *,
        model: str,
        retry: Optional[RetryPolicy] = None,
        limits: Optional[RateLimits] = None,
        cache: Optional[MemoryCache] = None,
        prices: Optional[dict] = None,
        secrets: tuple[str, ...] = (),
        max_output_tokens: int = 2048,
        rng: Optional[random.Random] = None,
    ):
        if not model or not model.strip():
            raise ValueError("model: must be a non-empty model name")
        self.model = model
        self.retry = retry or RetryPolicy()
        self.limits = limits
        self.cache = cache
        self.prices = prices
        self.secrets = tuple(s for s in secrets if s)
        self.max_output_tokens = max_output_tokens
        self.rng = rng or random.Random()

    @property
    def prompt_version(self) -> str:
        return PROMPT_VERSION

    async def _complete(self, messages: list[dict], schema: dict) -> Completion:
        raise NotImplementedError

    def _redact(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, "***")
        return text

    async def _call(self, messages: list[dict], schema: dict, counter: list[int]) -> tuple[Completion, bool]:
        """One logical call: cache, rate limits and transport retries (``counter[0]``
        counts the requests sent)."""
        key = cache_key(self.provider, self.model, messages, schema)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit, True

        async def once() -> Completion:
            counter[0] += 1
            if self.limits is not None:
                await self.limits.acquire(prompt_mod.estimate_tokens(messages) + self.max_output_tokens)
            return await self._complete(messages, schema)

        completion = await call_with_retry(once, self.retry, rng=self.rng)
        if self.cache is not None:
            self.cache.put(key, completion)
        return completion, False

    async def judge(self, item: JudgeItem) -> JudgeResult:
        messages = prompt_mod.build_messages(item)
        schema = prompt_mod.response_schema(item)
        expected = [c.prompt_id for c in item.constraints]
        tokens_in = tokens_out = 0
        counter = [0]
        raw = ""
        cached = True
        try:
            for attempt in range(2):  # the answer, then at most one repair
                completion, hit = await self._call(messages, schema, counter)
                cached = cached and hit
                tokens_in += completion.input_tokens
                tokens_out += completion.output_tokens
                raw = completion.text
                try:
                    parsed = parse_verdicts(completion.text, expected)
                    break
                except ParseError as exc:
                    if attempt == 1:
                        raise
                    messages = prompt_mod.repair_messages(messages, completion.text, str(exc), expected)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded on the judgments, never raised
            return JudgeResult.failed(
                item,
                self._redact(f"{type(exc).__name__}: {exc}")[:2000],
                raw=self._redact(raw),
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cost_usd=cost_usd(self.model, tokens_in, tokens_out, prices=self.prices),
                requests=counter[0],
            )
        by_id = {c.prompt_id: c for c in item.constraints}
        verdicts = [Verdict(by_id[pid].id, label, rationale) for pid, (label, rationale) in parsed.items()]
        return JudgeResult(
            item,
            verdicts,
            raw=self._redact(raw),
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=cost_usd(self.model, tokens_in, tokens_out, prices=self.prices),
            requests=counter[0],
            cached=cached,
        )
