"""Response collection: run an evaluated model on baselines, variants, single-constraint
and prompted instructions (ReFormBench, arXiv:2610.19693, §3.1, §4.3, §4.4, App. A.10,
Table A13).

Each input is one user message (no system prompt unless the settings give one); the
``prompted`` condition appends the meta-prompt (:func:`reform_core.construction.prompts.user_message`).
Calls go through the judges' machinery: :func:`reform_core.judges.runner.run_items`
(bounded concurrency, cancel, progress, results committed in small batches),
:func:`reform_core.judges.retry.call_with_retry` (429 / 5xx / timeouts retried, other
4xx fail) and :class:`reform_core.judges.ratelimit.RateLimits`. The OpenAI(-compatible)
and Gemini clients and their error translation come from ``judges/*_judge.py``.

Every stored response records in ``meta``: provider, the generation settings
(temperature, top_p, max_tokens, reasoning effort / thinking budget), ``finish_reason``,
``truncated`` (finish reason ``length`` / ``MAX_TOKENS``), tokens and the condition.
Resume: a (model, question, instruction) that already has a response is never asked
again; a failed call writes nothing, so a rerun retries it.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable, Optional

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import data as repo
from reform_core.config import judge_endpoint
from reform_core.construction.prompts import user_message
from reform_core.judges.generation_judge import (  # noqa: F401  (GenerationSettings re-exported for callers)
    PROVIDERS,
    GenerationSettings,
    Generator,
    GenItem,
    GenResult,
)
from reform_core.judges.pricing import cost_usd
from reform_core.judges.ratelimit import RateLimits
from reform_core.judges.retry import RetryPolicy
from reform_core.judges.runner import run_items
from reform_core.services.data.importer import frames_bundle, import_bundle_obj
from reform_core.services.judging.judging import KEY_ENV, OFFICIAL, api_key_for

CONDITIONS = ("baseline", "main", "single", "prompted")
Progress = Callable[[int, int], None]


# --- what is pending ----------------------------------------------------------------------


def _check_conditions(conditions) -> tuple[str, ...]:
    conditions = tuple(conditions)
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad or not conditions:
        raise ValueError(f"conditions: expected some of {CONDITIONS}, got {list(conditions)}")
    return conditions


def pending_items(engine: Engine, *, model: str, conditions=("baseline",)) -> list[GenItem]:
    """Generations still missing for ``model`` under ``conditions`` (existing responses skipped)."""
    conditions = _check_conditions(conditions)
    if not model or not model.strip():
        raise ValueError("model: the evaluated model's name is required")
    with engine.connect() as conn:
        q = repo.read_frame(conn, "question", ["id", "key", "text"])
        ins = repo.read_frame(conn, "instruction", ["id", "key", "question_id", "condition", "text"])
        models = repo.read_frame(conn, "eval_model", ["id", "name"])
        resp = repo.read_frame(conn, "response", ["model_id", "question_id", "variant"])
    mid = models.loc[models["name"] == model, "id"]
    have = set()
    if len(mid):
        mine = resp[resp["model_id"] == int(mid.iloc[0])]
        have = set(zip(mine["question_id"], mine["variant"]))
    items = []
    if "baseline" in conditions:
        for r in q.itertuples(index=False):
            if (r.id, "") not in have:
                items.append(GenItem(model, r.key, None, "baseline", r.text or ""))
    qkey = dict(zip(q["id"], q["key"]))
    for r in ins[ins["condition"].isin(conditions)].sort_values("key").itertuples(index=False):
        if (r.question_id, r.key) not in have:
            items.append(
                GenItem(model, qkey[r.question_id], r.key, r.condition, user_message(r.text or "", r.condition))
            )
    return items


def estimate(
    engine: Engine,
    *,
    model: str,
    conditions=("baseline",),
    settings: Optional[GenerationSettings] = None,
    provider_model: Optional[str] = None,
) -> dict:
    """Calls and an upper-bound cost before launch: prompt tokens ≈ characters / 4, output
    tokens = ``max_tokens`` per call; priced with :mod:`reform_core.judges.pricing`
    (0 for a model without a price). Returns ``{"calls", "by_condition", "input_tokens",
    "max_output_tokens", "max_cost_usd"}``."""
    settings = settings or GenerationSettings()
    items = pending_items(engine, model=model, conditions=conditions)
    tin = sum(len(i.prompt) // 4 + 1 for i in items)
    tout = len(items) * (settings.max_tokens or 0)
    by = pd.Series([i.condition for i in items], dtype=object).value_counts().to_dict()
    return {
        "calls": len(items),
        "by_condition": {k: int(v) for k, v in by.items()},
        "input_tokens": tin,
        "max_output_tokens": tout,
        "max_cost_usd": round(cost_usd(provider_model or model, tin, tout), 6),
    }


def run_prompts(
    items: list[GenItem],
    *,
    provider: str,
    model: str,
    api_key: Optional[str] = None,
    settings: Optional[GenerationSettings] = None,
    base_url: Optional[str] = None,
    concurrency: int = 8,
    timeout: float = 300.0,
    retry: Optional[RetryPolicy] = None,
    progress: Optional[Progress] = None,
) -> list[GenResult]:
    """Run construction prompts (integration, extraction) through the same machinery and
    return their results in the order of ``items`` (nothing is stored)."""
    got: dict[int, GenResult] = {}

    def on_results(results: list[GenResult]) -> None:
        for r in results:
            got[id(r.item)] = r

    generate(
        items,
        provider=provider,
        model=model,
        on_results=on_results,
        settings=settings,
        base_url=base_url,
        api_key=api_key,
        concurrency=concurrency,
        timeout=timeout,
        retry=retry,
        progress=progress,
    )
    return [got.get(id(i), GenResult(i, error="not run")) for i in items]


# --- collection -------------------------------------------------------------------------------


def _response_rows(results: list[GenResult], provider: str, settings: GenerationSettings) -> list[dict]:
    rows = []
    for r in results:
        if r.error:
            continue
        rows.append(
            {
                "model": r.item.model,
                "question": r.item.question,
                "instruction": r.item.instruction or "",
                "kind": "baseline" if r.item.instruction is None else "constrained",
                "text": r.text,
                "meta": {**generation_meta(r, provider, settings), "condition": r.item.condition},
            }
        )
    return rows


def generate(
    items: list[GenItem],
    *,
    provider: str,
    model: str,
    on_results: Callable[[list[GenResult]], None],
    settings: Optional[GenerationSettings] = None,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    concurrency: int = 8,
    rpm: Optional[int] = None,
    tpm: Optional[int] = None,
    timeout: float = 300.0,
    retry: Optional[RetryPolicy] = None,
    progress: Optional[Progress] = None,
    cancel: Any = None,
    commit_every: int = 16,
) -> dict:
    """Run ``items`` on endpoint model ``model`` and hand the results to ``on_results`` in
    small batches (called in a worker thread; it persists them, so a killed run loses at most
    a batch). A failed call arrives as a :class:`GenResult` with ``error`` set.

    Returns the run's ``{"requests", "input_tokens", "output_tokens", "cost_usd", "cancelled"}``.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"provider: expected one of {PROVIDERS}, got {provider!r}")
    if concurrency < 1:
        raise ValueError(f"concurrency: must be >= 1, got {concurrency}")
    key = api_key if api_key is not None else api_key_for(provider)
    if not key:
        raise ValueError(f"{KEY_ENV[provider]}: no API key for provider {provider!r} (set it in the environment)")
    limits = RateLimits(rpm=rpm, tpm=tpm) if (rpm or tpm) else None
    gen = Generator(
        provider,
        model=model,
        api_key=key,
        settings=settings or GenerationSettings(),
        base_url=base_url,
        timeout=timeout,
        retry=retry,
        limits=limits,
    )

    def handle(results: list) -> None:  # a runner-caught bug arrives as a judge result: make it a failed call
        on_results(
            [
                r if isinstance(r, GenResult) else GenResult(r.item, error=getattr(r, "error", "") or "failed")
                for r in results
            ]
        )

    async def go():
        try:
            return await run_items(
                gen,
                items,
                on_results=handle,
                concurrency=concurrency,
                progress=progress,
                cancel=cancel,
                commit_every=commit_every,
            )
        finally:
            await gen.aclose()

    stats = asyncio.run(go())
    return {
        "requests": stats.requests,
        "input_tokens": stats.input_tokens,
        "output_tokens": stats.output_tokens,
        "cost_usd": round(stats.cost_usd, 6),
        "cancelled": stats.cancelled,
    }


def generation_meta(
    result: GenResult, provider: str, settings: GenerationSettings, provider_model: Optional[str] = None
) -> dict:
    """What a stored generation records about how it was made (never the key)."""
    meta = {
        "provider": provider,
        "settings": settings.to_meta(),
        "finish_reason": result.finish_reason,
        "truncated": result.truncated,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
    }
    if provider_model:
        meta["provider_model"] = provider_model
    return meta


def endpoint_target(provider: str, endpoint: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """(base URL, API key) of a configured endpoint ``endpoint`` (``REFORM_JUDGE_ENDPOINTS``)
    for ``provider``; (None, None) — the provider's official API and its own key — for no
    endpoint or :data:`~reform_core.services.judging.judging.OFFICIAL`. The key of an endpoint with a
    ``key_env`` is that variable's (a clear ValueError when it is unset)."""
    if not endpoint or endpoint == OFFICIAL:
        return None, None
    ep = judge_endpoint(endpoint, provider)
    if not ep.key_env:
        return ep.base_url, None
    key = os.environ.get(ep.key_env, "")
    if not key:
        raise ValueError(f"{ep.key_env}: no API key for endpoint {endpoint!r} (set it in the environment)")
    return ep.base_url, key


def _check_collect_args(provider: str, concurrency: int, limit: Optional[int]) -> None:
    """Refuse an unknown provider, a concurrency below 1 and a negative limit."""
    if provider not in PROVIDERS:
        raise ValueError(f"provider: expected one of {PROVIDERS}, got {provider!r}")
    if concurrency < 1:
        raise ValueError(f"concurrency: must be >= 1, got {concurrency}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit: must be >= 0, got {limit}")


def _endpoint_url_and_key(
    provider: str, endpoint: Optional[str], base_url: Optional[str], api_key: Optional[str]
) -> tuple[Optional[str], Optional[str]]:
    """(base URL, API key) to call: a named endpoint's own (a given key still wins), else those given."""
    if not endpoint:
        return base_url, api_key
    if base_url:
        raise ValueError("endpoint: give a configured endpoint name or a base URL, not both")
    base_url, configured_key = endpoint_target(provider, endpoint)
    return base_url, (configured_key if api_key is None else api_key)


def _collect_tally(pending: int) -> dict:
    """The counters of a collection run before any call."""
    return {
        "pending": pending,
        "written": 0,
        "errors": 0,
        "truncated": 0,
        "requests": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "cancelled": False,
        "first_error": "",
    }


def _known_models(engine: Engine) -> set:
    """Names of the evaluated models already in the project."""
    with engine.connect() as conn:
        return set(repo.read_frame(conn, "eval_model", ["name"])["name"])


def _store_results(
    engine: Engine,
    results: list[GenResult],
    out: dict,
    known: set,
    model: str,
    provider: str,
    provider_model: Optional[str],
    settings: GenerationSettings,
) -> None:
    """Count a batch of results into ``out`` and import its responses (the model too, when new)."""
    for r in results:
        out["errors"] += bool(r.error)
        out["truncated"] += bool(not r.error and r.truncated)
        out["first_error"] = out["first_error"] or r.error
    rows = _response_rows(results, provider, settings)
    if not rows:
        return
    frames = {"responses": pd.DataFrame(rows)}
    if model not in known:
        frames["models"] = pd.DataFrame(
            [
                {
                    "name": model,
                    "provider": provider,
                    "settings": {"provider_model": provider_model or model, **settings.to_meta()},
                }
            ]
        )
        known.add(model)
    import_bundle_obj(engine, frames_bundle(frames, source="<collection>"))
    out["written"] += len(rows)


def collect(
    engine: Engine,
    *,
    model: str,
    provider: str,
    provider_model: Optional[str] = None,
    conditions=("baseline",),
    settings: Optional[GenerationSettings] = None,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    concurrency: int = 8,
    rpm: Optional[int] = None,
    tpm: Optional[int] = None,
    limit: Optional[int] = None,
    timeout: float = 300.0,
    retry: Optional[RetryPolicy] = None,
    progress: Optional[Progress] = None,
    cancel: Any = None,
    commit_every: int = 16,
    endpoint: Optional[str] = None,
) -> dict:
    """Collect the missing responses of evaluated model ``model`` (stored under this name;
    ``provider_model`` is the endpoint's model id, default the same).

    ``endpoint`` names an endpoint a lead configured (``REFORM_JUDGE_ENDPOINTS``, see
    :mod:`reform_core.config`): its URL and the key of its ``key_env``. The app passes only
    such names, never a typed ``base_url`` (the CLI's ``--base-url`` stays).

    Returns ``{"pending", "written", "errors", "truncated", "requests", "input_tokens",
    "output_tokens", "cost_usd", "cancelled", "first_error"}``.
    """
    settings = settings or GenerationSettings()
    _check_collect_args(provider, concurrency, limit)
    base_url, api_key = _endpoint_url_and_key(provider, endpoint, base_url, api_key)
    items = pending_items(engine, model=model, conditions=conditions)
    if limit is not None:
        items = items[:limit]
    out = _collect_tally(len(items))
    if not items:
        return out
    known = _known_models(engine)

    def on_results(results: list[GenResult]) -> None:
        _store_results(engine, results, out, known, model, provider, provider_model, settings)

    out.update(
        generate(
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
