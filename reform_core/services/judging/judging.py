"""Judging use cases: run a judge over the pending pairs, batch mode, baseline
annotation, the prompt for display (docs/metrics.md#what-a-judge-sees; the
commands in docs/cli.md).

Work is keyed by ``uq_judgment_key`` (judge × response × constraint × prompt version):
pairs with an ``ok`` or ``abstain`` judgment are done and never called again; pairs
with an ``error`` judgment are pending, so a rerun retries them. Results are committed
in small batches as they finish, so a killed run resumes where it stopped.

API keys come from the environment (``OPENAI_API_KEY`` / ``GOOGLE_API_KEY``) or the
settings, are handed to the SDK in memory only, and are redacted from every stored or
returned message; they are never written to the database (judge config holds provider,
model, base URL, limits only).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, Callable, Optional

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo import judging as repo
from reform_core.config import get_settings, judge_endpoint, redact, secret_values
from reform_core.judges import LLM_PROVIDERS, PROVIDERS, make_llm_judge
from reform_core.judges import batch as batch_mod
from reform_core.judges import prompt as prompt_mod
from reform_core.judges.base import (
    TASK_PRESENCE,
    ConstraintSpec,
    JudgeItem,
    JudgeResult,
)
from reform_core.judges.cache import MemoryCache
from reform_core.judges.ratelimit import RateLimits
from reform_core.judges.replay import ReplayJudge
from reform_core.judges.retry import RetryPolicy
from reform_core.judges.rule_judge import MODES as RULE_MODES
from reform_core.judges.rule_judge import RuleJudge, feature_verifier, rules_model
from reform_core.judges.runner import RunStats, run_items
from reform_core.services.platform import jobs
from reform_core.services.platform.uow import unit_of_work

Progress = Callable[[int, int], None]
KEY_ENV = {"openai": "OPENAI_API_KEY", "gemini": "GOOGLE_API_KEY"}


# --- helpers -------------------------------------------------------------------------


def api_key_for(provider: str) -> str:
    """The provider's key from the environment, else the settings ('' if none)."""
    env = KEY_ENV[provider]
    val = os.environ.get(env) or (os.environ.get("GEMINI_API_KEY") if provider == "gemini" else None)
    if val:
        return val
    s = get_settings()
    secret = s.openai_api_key if provider == "openai" else s.google_api_key
    return secret.get_secret_value() if secret is not None else ""


def _secrets(extra: str = "") -> list[str]:
    return sorted({*secret_values(), *([extra] if extra else [])}, key=len, reverse=True)


def _check(provider: str, concurrency: int, limit: Optional[int]) -> None:
    if provider not in PROVIDERS:
        raise ValueError(f"provider: expected one of {PROVIDERS}, got {provider!r}")
    if concurrency < 1:
        raise ValueError(f"concurrency: must be >= 1, got {concurrency}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit: must be >= 0, got {limit}")


def items_from_pairs(df: pd.DataFrame) -> list[JudgeItem]:
    """Group pending pairs (``repo.PENDING_COLUMNS``, ordered by response) into one item
    per response."""
    groups: dict[int, list[tuple]] = {}
    for row in df[repo.PENDING_COLUMNS].itertuples(index=False, name=None):
        groups.setdefault(int(row[0]), []).append(row)
    items = []
    for rid, rows in groups.items():
        specs = tuple(
            ConstraintSpec(int(cid), int(pos), feature, mode, text or "", acceptance or "", dict(params or {}))
            for _, _, _, cid, pos, feature, mode, text, acceptance, params in rows
        )
        items.append(JudgeItem(rid, rows[0][2] or "", rows[0][1] or "", specs))
    return items


def _open_batch_keys(config: dict) -> set[str]:
    return {k for b in (config or {}).get("batches", []) if not b.get("ingested") for k in b.get("keys", [])}


def _judgment_rows(result: JudgeResult, *, judge_id: int, prompt_version: str, secrets: list[str]) -> list[dict]:
    """One row per verdict; the call's tokens and cost are split evenly across them."""
    n = len(result.verdicts)
    rows = []
    for k, v in enumerate(result.verdicts):
        rows.append(
            {
                "judge_id": judge_id,
                "response_id": result.item.response_id,
                "constraint_id": v.constraint_id,
                "prompt_version": prompt_version,
                "label": v.label if v.status == "ok" else None,
                "rationale": redact(v.rationale, secrets),
                "status": v.status,
                "error": redact(v.error, secrets),
                "raw": redact(result.raw, secrets),
                "input_tokens": result.input_tokens // n + (result.input_tokens % n if k == 0 else 0),
                "output_tokens": result.output_tokens // n + (result.output_tokens % n if k == 0 else 0),
                "cost_usd": result.cost_usd / n,
            }
        )
    return rows


def _make_llm(
    provider: str,
    *,
    model: str,
    base_url: Optional[str],
    rpm,
    tpm,
    timeout: float,
    retry: Optional[RetryPolicy],
    api_key: Optional[str],
):
    key = api_key if api_key is not None else api_key_for(provider)
    if not key:
        raise ValueError(f"{KEY_ENV[provider]}: no API key for provider {provider!r} (set it in the environment)")
    limits = RateLimits(rpm=rpm, tpm=tpm) if (rpm or tpm) else None
    judge = make_llm_judge(
        provider,
        model=model,
        api_key=key,
        base_url=base_url,
        timeout=timeout,
        limits=limits,
        retry=retry,
        cache=MemoryCache(),
    )
    return judge, key


def _summary(stats: RunStats, written: int, secrets: list[str]) -> dict:
    """The run's report. ``written`` counts every judgment row written; each row is exactly
    one of a label, an abstention or an error (``labels + abstentions + errors``).
    ``all_failed``: calls were made and every verdict is an error (e.g. a wrong base URL)."""
    return {
        "calls": stats.items,
        "written": written,
        "errors": stats.errors,
        "labels": stats.labels,
        "abstentions": stats.abstained,
        "requests": stats.requests,
        "input_tokens": stats.input_tokens,
        "output_tokens": stats.output_tokens,
        "cost_usd": round(stats.cost_usd, 6),
        "cancelled": stats.cancelled,
        "all_failed": stats.items > 0 and stats.errors == stats.verdicts,
        "first_error": redact(stats.first_error, secrets)[:500],
    }


def run_report(out: dict) -> str:
    """One line saying what a judge run did, labels, abstentions and errors apart (the
    CLI's and the Judges page's wording)."""
    line = (
        f"{out['calls']:,} calls: {out['labels']:,} labels, {out['abstentions']:,} abstentions, "
        f"{out['errors']:,} errors ({out['written']:,} judgment rows written), "
        f"{out['input_tokens']:,}+{out['output_tokens']:,} tokens, ${out['cost_usd']:.4f}"
    )
    return line + (" (cancelled)" if out.get("cancelled") else "")


async def _aclose(judge) -> None:
    close = getattr(judge, "aclose", None)
    if close is not None:
        await close()


# --- online judging ------------------------------------------------------------------


def judge_lock_key(name: str) -> str:
    """The run lock shared by online runs and batch submit/poll of judge ``name``."""
    return f"judge:{name}"


@dataclass(frozen=True)
class JudgeRun:
    """What a judge run does, validated; no secret (stored as the job's params)."""

    provider: str
    model: str
    name: str
    base_url: Optional[str] = None  # CLI only; the app names an endpoint instead
    endpoint: Optional[str] = None  # a configured endpoint's name (see reform_core.config)
    concurrency: int = 16
    rpm: Optional[int] = None
    tpm: Optional[int] = None
    limit: Optional[int] = None
    source: Optional[str] = None
    timeout: float = 120.0
    mode: Optional[str] = None  # rules only: strict | loose

    @property
    def lock_key(self) -> str:
        return judge_lock_key(self.name)

    def params(self, secrets: list[str]) -> dict:
        """The job's params: an endpoint run records the endpoint's name, not its URL."""
        out = {k: v for k, v in self.__dict__.items() if v is not None}
        if self.endpoint:
            out.pop("base_url", None)
        elif self.base_url:
            out["base_url"] = redact(self.base_url, secrets)
        return out


class _AnyFlag:
    """Set when any of the given flags (objects with ``is_set()``) is set."""

    def __init__(self, *flags):
        self.flags = [f for f in flags if f is not None]

    def is_set(self) -> bool:
        return any(f.is_set() for f in self.flags)


def _progress_to(job: jobs.JobHandle, progress: Optional[Progress]) -> Progress:
    """A progress callback recording on the job and forwarding to ``progress``."""

    def on_progress(done: int, total: int) -> None:
        job.progress(done, total)
        if progress is not None:
            progress(done, total)

    return on_progress


def _judge_run(
    engine: Engine,
    *,
    provider: str,
    model: str,
    name: Optional[str],
    base_url: Optional[str],
    endpoint: Optional[str],
    concurrency: int,
    rpm,
    tpm,
    limit: Optional[int],
    source: Optional[str],
    timeout: float,
    mode: str = "strict",
) -> JudgeRun:
    """Validate a run before anything is claimed or called."""
    _check(provider, concurrency, limit)
    if provider in LLM_PROVIDERS and not model:
        raise ValueError(f"model: required for provider {provider!r}")
    if provider != "rules" and mode != "strict":
        raise ValueError(f"mode: only the rules judge has strict / loose modes (provider {provider!r})")
    if provider == "rules" and mode not in RULE_MODES:
        raise ValueError(f"mode: expected one of {RULE_MODES}, got {mode!r}")
    if provider == "replay" and not source:
        raise ValueError("source: the judge whose labels to replay is required for provider 'replay'")
    judge_model = {"rules": rules_model(mode, model), "replay": source}.get(provider, model)
    name = name or (judge_model if provider != "replay" else f"replay:{source}")
    with unit_of_work(engine) as s:
        existing = repo.get_judge(s, name=name)
    if existing is not None and (existing["provider"], existing["model"]) != (provider, judge_model):
        raise ValueError(
            f"judge {name!r} exists with provider={existing['provider']!r}, "
            f"model={existing['model']!r}; got provider={provider!r}, model={judge_model!r} "
            "(choose another --name)"
        )
    return JudgeRun(
        provider,
        judge_model,
        name,
        base_url or None,
        endpoint,
        concurrency,
        rpm,
        tpm,
        limit,
        source,
        timeout,
        mode if provider == "rules" else None,
    )


def _provider_key(run: JudgeRun, api_key: Optional[str], key_env: Optional[str] = None) -> str:
    """The run's API key ('' for rules/replay); a clear error when an LLM run has none."""
    if run.provider not in LLM_PROVIDERS:
        return ""
    env = key_env or KEY_ENV[run.provider]
    key = api_key if api_key is not None else (os.environ.get(key_env, "") if key_env else api_key_for(run.provider))
    if not key:
        raise ValueError(f"{env}: no API key for provider {run.provider!r} (set it in the environment)")
    return key


def _judge_for_run(engine: Engine, run: JudgeRun, key: str, retry: Optional[RetryPolicy]):
    """The judge a run calls: an LLM client, the rule judge, or a replay of stored labels."""
    if run.provider in LLM_PROVIDERS:
        judge, _ = _make_llm(
            run.provider,
            model=run.model,
            base_url=run.base_url,
            rpm=run.rpm,
            tpm=run.tpm,
            timeout=run.timeout,
            retry=retry,
            api_key=key,
        )
        return judge
    if run.provider == "rules":
        from reform_core.services.data.catalogs import project_catalogs

        with engine.connect() as conn:
            catalogs = project_catalogs(conn)  # bundled or stored with the project: no file needed
        return RuleJudge(run.model, mode=run.mode, catalogs=catalogs)
    with unit_of_work(engine) as s:
        return ReplayJudge(repo.judgment_labels(s, judge_name=run.source), source=run.source)


def _run_config(run: JudgeRun, secrets: list[str]) -> dict:
    """The judge config stored for a run (base URL redacted; no key)."""
    config = {
        "base_url": redact(run.base_url or "", secrets),
        "concurrency": run.concurrency,
        "rpm": run.rpm,
        "tpm": run.tpm,
    }
    if run.endpoint:
        config["endpoint"] = run.endpoint
    if run.mode:
        config["mode"] = run.mode
    return config


def _pending_items(engine: Engine, run: JudgeRun, judge, config: dict) -> tuple[int, list[JudgeItem]]:
    """Register the run's judge; its id and the pending items (not in an open batch, up to the limit)."""
    with unit_of_work(engine) as s:
        judge_id = repo.ensure_judge(
            s,
            name=run.name,
            provider=run.provider,
            model=judge.model,
            prompt_version=judge.prompt_version,
            config=config,
        )
        cfg = repo.get_judge(s, name=run.name)["config"]
        df = repo.pending_pairs(s, judge_id=judge_id, prompt_version=judge.prompt_version)
    items = [i for i in items_from_pairs(df) if batch_mod.item_key(i) not in _open_batch_keys(cfg)]
    if run.limit is not None:
        items = items[: run.limit]
    return judge_id, items


def _judge_items(
    engine: Engine,
    run: JudgeRun,
    judge,
    judge_id: int,
    items: list[JudgeItem],
    job: jobs.JobHandle,
    secrets: list[str],
    *,
    progress: Optional[Progress],
    cancel: Any,
    commit_every: int,
) -> tuple[RunStats, int]:
    """Call the judge on the items, committing their judgments as they finish; the stats and rows written."""
    written = 0

    def on_results(results: list[JudgeResult]) -> None:
        nonlocal written
        rows = [
            r
            for res in results
            for r in _judgment_rows(res, judge_id=judge_id, prompt_version=judge.prompt_version, secrets=secrets)
        ]
        with unit_of_work(engine) as s2:
            written += repo.upsert_judgments(s2, rows=rows)
        statuses = [r["status"] for r in rows]
        job.count(labels=statuses.count("ok"), abstentions=statuses.count("abstain"), errors=statuses.count("error"))

    async def go() -> RunStats:
        try:
            return await run_items(
                judge,
                items,
                on_results=on_results,
                concurrency=run.concurrency,
                progress=_progress_to(job, progress),
                cancel=_AnyFlag(cancel, job.cancel),
                commit_every=commit_every,
            )
        finally:
            await _aclose(judge)

    stats = asyncio.run(go())
    return stats, written


def _judge_pending(
    engine: Engine,
    run: JudgeRun,
    key: str,
    job: jobs.JobHandle,
    *,
    progress: Optional[Progress] = None,
    cancel: Any = None,
    retry: Optional[RetryPolicy] = None,
    commit_every: int = 32,
) -> dict:
    """The work of a judge run, holding its job (the run lock): judge what is pending."""
    judge = _judge_for_run(engine, run, key, retry)
    secrets = _secrets(key)
    judge_id, items = _pending_items(engine, run, judge, _run_config(run, secrets))
    job.progress(0, len(items))
    stats, written = _judge_items(
        engine, run, judge, judge_id, items, job, secrets, progress=progress, cancel=cancel, commit_every=commit_every
    )
    out = _summary(stats, written, secrets)
    if out["all_failed"]:
        job.fail(f"all {out['calls']} calls failed; first error: {out['first_error']}")
    return out


def run_judge(
    engine: Engine,
    *,
    provider: str,
    model: str = "",
    name: Optional[str] = None,
    base_url: Optional[str] = None,
    concurrency: int = 16,
    rpm: Optional[int] = None,
    tpm: Optional[int] = None,
    limit: Optional[int] = None,
    progress: Optional[Progress] = None,
    cancel: Any = None,
    source: Optional[str] = None,
    api_key: Optional[str] = None,
    timeout: float = 120.0,
    retry: Optional[RetryPolicy] = None,
    commit_every: int = 32,
    mode: str = "strict",
    created_by: str = "",
    endpoint: Optional[str] = None,
) -> dict:
    """Judge every pending (response, constraint) pair, in this thread, as a job holding
    the judge's run lock (a second run of the same judge name raises
    :class:`~reform_core.services.platform.jobs.JobBusy`; a run whose process died is taken over).
    Return ``{"calls", "written", "errors", "labels", "abstentions", ...}`` (calls =
    responses judged, one prompt each; written = judgment rows written, each one a label,
    an abstention or an error; plus requests, tokens, cost_usd, cancelled, ``all_failed``
    and ``first_error``; see :func:`_summary`).

    provider: ``openai`` | ``gemini`` (needs ``model`` and a key) | ``rules`` (every
    verifier of the project's catalog, in ``mode`` strict or loose; see
    :mod:`reform_core.judges.rule_judge`) | ``replay`` (copies the labels of judge ``source``). ``limit`` caps the
    number of responses judged in this run. ``cancel``: an object with ``is_set()``; the
    job can also be cancelled from anywhere (:func:`reform_core.services.platform.jobs.cancel`).
    ``endpoint`` names a configured endpoint (``REFORM_JUDGE_ENDPOINTS``) instead of a
    ``base_url``.
    """
    key_env = None
    if endpoint:
        if base_url:
            raise ValueError("endpoint: give a configured endpoint name or a base URL, not both")
        ep = judge_endpoint(endpoint, provider)
        base_url, key_env = ep.base_url, ep.key_env
    run = _judge_run(
        engine,
        provider=provider,
        model=model,
        name=name,
        base_url=base_url,
        endpoint=endpoint,
        concurrency=concurrency,
        rpm=rpm,
        tpm=tpm,
        limit=limit,
        source=source,
        timeout=timeout,
        mode=mode,
    )
    key = _provider_key(run, api_key, key_env)
    return jobs.run(
        engine,
        kind="judge",
        lock_key=run.lock_key,
        params=run.params(_secrets(key)),
        created_by=created_by,
        fn=lambda job: _judge_pending(
            engine, run, key, job, progress=progress, cancel=cancel, retry=retry, commit_every=commit_every
        ),
    )


# --- background runs (the Judges page) --------------------------------------------------

OFFICIAL = "official API"  # the endpoint choice meaning: the provider's own API (or its SDK's *_BASE_URL)
RESUMABLE = ("stale", "failed", "cancelled")
JOB_KINDS = ("judge", "judge-batch", "annotate-baseline")  # the jobs of this module


def endpoint_choices(provider: str) -> list[str]:
    """What the Judges page offers as endpoints for ``provider``: the provider's official
    API and the endpoints a lead configured for it (never a typed URL)."""
    if provider not in LLM_PROVIDERS:
        return []
    return [OFFICIAL, *sorted(n for n, e in get_settings().judge_endpoints.items() if e.provider == provider)]


def start_judge_job(
    engine: Engine,
    principal,
    *,
    provider: str,
    model: str = "",
    name: Optional[str] = None,
    endpoint: Optional[str] = None,
    concurrency: int = 16,
    limit: Optional[int] = None,
    source: Optional[str] = None,
    mode: str = "strict",
) -> int:
    """Start a judge run in the background (a job of this process) and return its id at
    once; progress, cancel and the outcome live in the job table (:mod:`jobs`). Requests
    go to the provider's official API or to a configured endpoint named ``endpoint`` —
    there is deliberately no base-URL parameter. Raises ValueError (unknown endpoint,
    missing key or model) or :class:`~reform_core.services.platform.jobs.JobBusy` before anything runs."""
    from reform_core.services.accounts.auth import require

    require(principal, "run_judges")
    ep = judge_endpoint(endpoint, provider) if endpoint and endpoint != OFFICIAL else None
    run = _judge_run(
        engine,
        provider=provider,
        model=model,
        name=name,
        base_url=ep.base_url if ep else None,
        endpoint=endpoint if ep else None,
        concurrency=concurrency,
        rpm=None,
        tpm=None,
        limit=limit,
        source=source,
        timeout=120.0,
        mode=mode,
    )
    key = _provider_key(run, None, ep.key_env if ep else None)
    return jobs.start(
        engine,
        kind="judge",
        lock_key=run.lock_key,
        params=run.params(_secrets(key)),
        created_by=principal.username,
        fn=lambda job: _judge_pending(engine, run, key, job),
    )


def resume_judge_job(engine: Engine, principal, job_id: int) -> int:
    """Start a new background run with the parameters of judge job ``job_id`` (stale,
    failed or cancelled); it judges only what is still pending."""
    from reform_core.services.accounts.auth import require

    require(principal, "run_judges")
    job = jobs.get(engine, job_id)
    if job is None or job.kind != "judge":
        raise ValueError(f"job {job_id}: no such judge run")
    if job.state not in RESUMABLE:
        raise ValueError(f"job {job_id} is {job.state}; only a stale, failed or cancelled run can be resumed")
    p = job.params
    if p.get("base_url"):
        raise ValueError(f"job {job_id} was started from the command line with --base-url; resume it there")
    return start_judge_job(
        engine,
        principal,
        provider=p["provider"],
        model=p.get("model", ""),
        name=p["name"],
        endpoint=p.get("endpoint"),
        concurrency=int(p.get("concurrency", 16)),
        limit=p.get("limit"),
        source=p.get("source"),
        mode=p.get("mode") or "strict",
    )


def cancel_job(engine: Engine, principal, job_id: int) -> bool:
    """Ask a running job to stop (calls in flight finish and are written)."""
    from reform_core.services.accounts.auth import require

    require(principal, "run_judges")
    return jobs.cancel(engine, job_id)


def recent_jobs(engine: Engine, principal, *, limit: int = 10) -> list[jobs.JobView]:
    """The newest judging jobs (online runs, batch, baseline annotation), newest first."""
    from reform_core.services.accounts.auth import require

    require(principal, "run_judges")
    return jobs.recent(engine, kinds=JOB_KINDS, limit=limit)


def summary_version(engine: Engine) -> tuple:
    """Changes whenever what :func:`judges_summary` shows may have changed: judgment and
    judge rows added, and every job start, heartbeat and end (an error row overwritten by
    a rerun keeps the row count and max id, but only a job does that)."""
    with unit_of_work(engine) as s:
        written = repo.judgment_version(s)
    return (*written, *jobs.version(engine))


def prompt_for_display(engine: Optional[Engine] = None, *, response_id: Optional[int] = None) -> dict:
    """``{"version", "text"}``: the grading prompt, filled for ``response_id`` (or the first
    constrained response) when a database is given, else for a placeholder item."""
    item = None
    if engine is not None:
        with unit_of_work(engine) as s:
            df = repo.pending_pairs(
                s,
                judge_id=None,
                prompt_version="",
                include_done=True,
                response_ids=[response_id] if response_id is not None else None,
            )
        if response_id is None and len(df):
            df = df[df["response_id"] == df["response_id"].iloc[0]]
        found = items_from_pairs(df)
        if response_id is not None and not found:
            raise ValueError(f"response_id: no constrained response with id {response_id}")
        item = found[0] if found else None
    if item is None:
        item = JudgeItem(
            0,
            "{instruction}",
            "{response}",
            (ConstraintSpec(0, 1, "{feature}", "require", "{constraint text}", "{acceptance criteria}"),),
        )
    return {"version": prompt_mod.PROMPT_VERSION, "text": prompt_mod.prompt_text(item)}


# --- batch mode ----------------------------------------------------------------------


def _batch_client(provider: str, base_url: Optional[str], api_key: Optional[str], timeout: float):
    key = api_key if api_key is not None else api_key_for(provider)
    if not key:
        raise ValueError(f"{KEY_ENV[provider]}: no API key for provider {provider!r} (set it in the environment)")
    if provider == "openai":
        from reform_core.judges import openai_judge

        return openai_judge, openai_judge.make_client(api_key=key, base_url=base_url, timeout=timeout), key
    from reform_core.judges import gemini_judge

    return gemini_judge, gemini_judge.make_client(api_key=key, base_url=base_url, timeout=timeout), key


async def _close_client(client) -> None:
    if hasattr(client, "aio"):
        await client.aio.aclose()
    else:
        await client.close()


def submit_batch(
    engine: Engine,
    *,
    provider: str,
    model: str,
    name: Optional[str] = None,
    base_url: Optional[str] = None,
    limit: Optional[int] = None,
    api_key: Optional[str] = None,
    timeout: float = 300.0,
    created_by: str = "",
) -> dict:
    """Write the pending items (not already in an open batch) as one provider batch and
    submit it; the batch id is kept in the judge's config. Returns ``{"batch_id", "items"}``
    (``batch_id`` None when nothing is pending). Holds the judge's run lock."""
    if provider not in LLM_PROVIDERS:
        raise ValueError(f"provider: batch mode needs one of {LLM_PROVIDERS}, got {provider!r}")
    _check(provider, 1, limit)
    if not model:
        raise ValueError("model: required for batch mode")
    name = name or model
    params = {"action": "submit", "provider": provider, "model": model, "name": name, "limit": limit}
    return jobs.run(
        engine,
        kind="judge-batch",
        lock_key=judge_lock_key(name),
        params=params,
        created_by=created_by,
        fn=lambda job: _submit_batch(
            engine,
            provider=provider,
            model=model,
            name=name,
            base_url=base_url,
            limit=limit,
            api_key=api_key,
            timeout=timeout,
        ),
    )


def _submit_batch(
    engine: Engine,
    *,
    provider: str,
    model: str,
    name: str,
    base_url: Optional[str],
    limit: Optional[int],
    api_key: Optional[str],
    timeout: float,
) -> dict:
    mod, client, key = _batch_client(provider, base_url, api_key, timeout)
    secrets = _secrets(key)
    with unit_of_work(engine) as s:
        judge_id = repo.ensure_judge(
            s,
            name=name,
            provider=provider,
            model=model,
            prompt_version=prompt_mod.PROMPT_VERSION,
            config={"base_url": redact(base_url or "", secrets)},
        )
        cfg = repo.get_judge(s, name=name)["config"]
        df = repo.pending_pairs(s, judge_id=judge_id, prompt_version=prompt_mod.PROMPT_VERSION)
    items = [i for i in items_from_pairs(df) if batch_mod.item_key(i) not in _open_batch_keys(cfg)]
    if limit is not None:
        items = items[:limit]
    if not items:
        asyncio.run(_close_client(client))
        return {"batch_id": None, "items": 0}

    async def go() -> str:
        try:
            if provider == "openai":
                return await mod.submit_batch(
                    client, batch_mod.openai_lines(items, model=model), metadata={"reform_judge": name}
                )
            return await mod.submit_batch(client, model, batch_mod.gemini_requests(items), display_name=name)
        finally:
            await _close_client(client)

    batch_id = asyncio.run(go())
    with unit_of_work(engine) as s:
        cfg = repo.get_judge(s, name=name)["config"]
        entry = {
            "id": batch_id,
            "provider": provider,
            "prompt_version": prompt_mod.PROMPT_VERSION,
            "keys": [batch_mod.item_key(i) for i in items],
            "state": "submitted",
            "ingested": False,
        }
        repo.set_judge_config(s, judge_id=judge_id, config={**cfg, "batches": [*cfg.get("batches", []), entry]})
    return {"batch_id": batch_id, "items": len(items)}


def poll_batches(
    engine: Engine,
    *,
    name: str,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    ingest: bool = False,
    timeout: float = 300.0,
    created_by: str = "",
) -> dict:
    """Poll every open batch of judge ``name``; with ``ingest`` write the results of the
    finished ones (idempotent: ok judgments are never overwritten, an ingested batch is
    not read again). Returns ``{"batches": [{"id", "state", "done"}], "written", "errors",
    "missing", "unknown"}`` — ``missing`` items (no result line) stay pending. Holds the
    judge's run lock."""
    with unit_of_work(engine) as s:
        j = repo.get_judge(s, name=name)
    if j is None:
        raise ValueError(f"judge {name!r} does not exist")
    provider = j["provider"]
    if provider not in LLM_PROVIDERS:
        raise ValueError(f"judge {name!r} has provider {provider!r}; batch mode needs one of {LLM_PROVIDERS}")
    params = {"action": "ingest" if ingest else "poll", "name": name}
    return jobs.run(
        engine,
        kind="judge-batch",
        lock_key=judge_lock_key(name),
        params=params,
        created_by=created_by,
        fn=lambda job: _poll_batches(
            engine, name=name, base_url=base_url, api_key=api_key, ingest=ingest, timeout=timeout
        ),
    )


def _poll_batches(
    engine: Engine, *, name: str, base_url: Optional[str], api_key: Optional[str], ingest: bool, timeout: float
) -> dict:
    with unit_of_work(engine) as s:
        j = repo.get_judge(s, name=name)  # read again under the lock
    provider, model = j["provider"], j["model"]
    mod, client, key = _batch_client(provider, base_url, api_key, timeout)
    secrets = _secrets(key)
    open_batches = [b for b in j["config"].get("batches", []) if not b.get("ingested")]

    async def go() -> list:
        try:
            return [await mod.poll_batch(client, b["id"]) for b in open_batches]
        finally:
            await _close_client(client)

    statuses = asyncio.run(go())
    out = {"batches": [], "written": 0, "errors": 0, "missing": 0, "unknown": 0}
    for b, st in zip(open_batches, statuses):
        b["state"] = st.state
        out["batches"].append({"id": b["id"], "state": st.state, "done": st.done})
        if not (ingest and st.done):
            continue
        rows = (
            batch_mod.openai_rows(st.output, st.errors)
            if provider == "openai"
            else [batch_mod.BatchRow(k, c, e) for k, c, e in st.rows]
        )
        rids = [int(k.split(":", 1)[1]) for k in b["keys"]]
        with unit_of_work(engine) as s:
            df = repo.pending_pairs(
                s, judge_id=j["id"], prompt_version=b["prompt_version"], response_ids=rids, include_done=True
            )
        got = batch_mod.ingest(rows, items_from_pairs(df), model=model)
        db_rows = [
            r
            for res in got.results
            for r in _judgment_rows(res, judge_id=j["id"], prompt_version=b["prompt_version"], secrets=secrets)
        ]
        with unit_of_work(engine) as s:
            out["written"] += repo.upsert_judgments(s, rows=db_rows)
        out["errors"] += sum(r["status"] == "error" for r in db_rows)
        out["missing"] += len(got.missing)
        out["unknown"] += len(got.unknown_keys)
        b["ingested"] = True
    with unit_of_work(engine) as s:
        cfg = repo.get_judge(s, name=name)["config"]
        by_id = {b["id"]: b for b in open_batches}
        cfg["batches"] = [by_id.get(b["id"], b) for b in cfg.get("batches", [])]
        repo.set_judge_config(s, judge_id=j["id"], config=cfg)
    return out


# --- baseline annotation -------------------------------------------------------------


def annotate_baseline(
    engine: Engine,
    *,
    provider: str = "rules",
    model: str = "",
    base_url: Optional[str] = None,
    concurrency: int = 16,
    rpm: Optional[int] = None,
    tpm: Optional[int] = None,
    limit: Optional[int] = None,
    catalog: Optional[str] = None,
    progress: Optional[Progress] = None,
    cancel: Any = None,
    api_key: Optional[str] = None,
    timeout: float = 120.0,
    retry: Optional[RetryPolicy] = None,
    created_by: str = "",
) -> dict:
    """Label which catalog features are present in each baseline response: features with
    a rule detector (``feature:<key>`` verifier) by rule (source "rule"), the others by
    the LLM judge when ``provider`` is openai/gemini (source "llm"). Existing rows
    (e.g. imported) are kept. Returns ``{"responses", "written", "rule", "llm", "errors"}``.
    One annotation run at a time (a job holding the lock ``annotate-baseline``).
    """
    if provider not in ("rules", *LLM_PROVIDERS):
        raise ValueError(f"provider: expected rules, openai or gemini, got {provider!r}")
    _check(provider, concurrency, limit)
    kw = dict(
        provider=provider,
        model=model,
        base_url=base_url,
        concurrency=concurrency,
        rpm=rpm,
        tpm=tpm,
        limit=limit,
        catalog=catalog,
        api_key=api_key,
        timeout=timeout,
        retry=retry,
    )
    params = {"provider": provider, "model": model, "limit": limit, "catalog": catalog}

    return jobs.run(
        engine,
        kind="annotate-baseline",
        lock_key="annotate-baseline",
        params=params,
        created_by=created_by,
        fn=lambda job: _annotate_baseline(
            engine, progress=_progress_to(job, progress), cancel=_AnyFlag(cancel, job.cancel), **kw
        ),
    )


def _baseline_items(feats: pd.DataFrame, base: pd.DataFrame) -> tuple[list[JudgeItem], list[JudgeItem]]:
    """The presence items of the baseline responses' unannotated features: (rule-verifiable, for the LLM)."""
    rule_keys = {k for k in feats["key"] if feature_verifier(k) is not None}
    rule_items, llm_items = [], []
    for r in base.itertuples(index=False):
        todo = feats[~feats["key"].isin(r.annotated)]
        for keys, bucket in ((rule_keys, rule_items), (None, llm_items)):
            sel = todo[todo["key"].isin(rule_keys)] if keys is not None else todo[~todo["key"].isin(rule_keys)]
            if sel.empty:
                continue
            specs = tuple(
                ConstraintSpec(f.key, n, f.key, "require", f.definition or "", name=f.name or "")
                for n, f in enumerate(sel.itertuples(index=False), 1)
            )
            bucket.append(
                JudgeItem(int(r.response_id), r.question_text or "", r.response_text or "", specs, task=TASK_PRESENCE)
            )
    return rule_items, llm_items


def _annotate_with(
    engine: Engine,
    judge,
    items: list[JudgeItem],
    source: str,
    *,
    counts: dict,
    secrets: list[str],
    concurrency: int,
    progress: Progress,
    offset: int,
    total: int,
    cancel: Any,
) -> None:
    """Run one annotator over its items, storing the features found and adding to ``counts``."""

    def on_results(results: list[JudgeResult]) -> None:
        rows = [
            {
                "response_id": res.item.response_id,
                "feature": v.constraint_id,
                "present": bool(v.label),
                "source": source,
                "evidence": redact(v.rationale, secrets)[:2000],
            }
            for res in results
            for v in res.verdicts
            if v.status == "ok"
        ]
        counts["errors"] += sum(v.status == "error" for res in results for v in res.verdicts)
        with unit_of_work(engine) as s2:
            n = repo.insert_baseline_features(s2, rows=rows)
        counts["written"] += n
        counts[source] += n

    def prog(done: int, _total: int) -> None:
        if progress is not None:
            progress(offset + done, total)

    async def go() -> RunStats:
        try:
            return await run_items(
                judge, items, on_results=on_results, concurrency=concurrency, progress=prog, cancel=cancel
            )
        finally:
            await _aclose(judge)

    asyncio.run(go())


def _annotate_baseline(
    engine: Engine,
    *,
    provider: str,
    model: str,
    base_url: Optional[str],
    concurrency: int,
    rpm,
    tpm,
    limit: Optional[int],
    catalog: Optional[str],
    progress: Progress,
    cancel: Any,
    api_key: Optional[str],
    timeout: float,
    retry: Optional[RetryPolicy],
) -> dict:
    with unit_of_work(engine) as s:
        feats = repo.catalog_features(s, catalog=catalog or repo.project_catalog(s))
        base = repo.baseline_responses(s)
    if feats.empty:
        raise ValueError("catalog_feature: no catalog features in this database (import a catalog first)")
    if limit is not None:
        base = base.head(limit)
    rule_items, llm_items = _baseline_items(feats, base)
    counts = {"responses": int(len(base)), "written": 0, "rule": 0, "llm": 0, "errors": 0}
    key = ""
    judges: list[tuple[Any, list[JudgeItem], str]] = [(RuleJudge(), rule_items, "rule")]
    if provider in LLM_PROVIDERS and llm_items:
        llm, key = _make_llm(
            provider, model=model, base_url=base_url, rpm=rpm, tpm=tpm, timeout=timeout, retry=retry, api_key=api_key
        )
        judges.append((llm, llm_items, "llm"))
    secrets = _secrets(key)
    total = sum(len(items) for _, items, _ in judges)
    offset = 0
    for judge, items, source in judges:
        _annotate_with(
            engine,
            judge,
            items,
            source,
            counts=counts,
            secrets=secrets,
            concurrency=concurrency,
            progress=progress,
            offset=offset,
            total=total,
            cancel=cancel,
        )
        offset += len(items)
    return counts


@dataclass(frozen=True)
class JudgeHealth:
    """A judge's current verdicts (the newest judgment of each pair, as scoring reads them)."""

    name: str
    labels: int
    abstentions: int
    errors: int

    @property
    def scoreable(self) -> bool:
        """Whether the judge has any 0/1 label at all (a judge of only errors or
        abstentions can never be one side of a scoring pair)."""
        return self.labels > 0

    @property
    def state(self) -> str:
        """``"ok"``, ``"no judgments"``, ``"errors only"`` or ``"no labels"`` (abstentions, maybe errors)."""
        if self.labels:
            return "ok"
        if not (self.abstentions or self.errors):
            return "no judgments"
        return "errors only" if not self.abstentions else "no labels"


def _health(df: pd.DataFrame) -> list[JudgeHealth]:
    return [JudgeHealth(r.name, int(r.labels), int(r.abstentions), int(r.errors)) for r in df.itertuples(index=False)]


def judge_health(engine: Engine) -> dict[str, JudgeHealth]:
    """Per judge name (creation order): its counts of labels, abstentions and errors."""
    with unit_of_work(engine) as s:
        df = repo.judges_summary(s)
    return {h.name: h for h in _health(df)}


SUMMARY_COLUMNS = [
    "judge",
    "provider",
    "model",
    "prompt version",
    "labels",
    "abstentions",
    "errors",
    "state",
    "tokens",
    "cost (USD)",
]


def judges_summary(engine: Engine, principal=None) -> pd.DataFrame:
    """One display row per judge: :data:`SUMMARY_COLUMNS` (counts as in :func:`judge_health`,
    ``state`` in words, tokens and cost over every row the judge wrote)."""
    if principal is not None:
        from reform_core.services.accounts.auth import require

        require(principal, "run_judges")
    with unit_of_work(engine) as s:
        df = repo.judges_summary(s)
    out = pd.DataFrame(
        {
            "judge": df["name"],
            "provider": df["provider"],
            "model": df["model"],
            "prompt version": df["prompt_version"],
            "labels": df["labels"],
            "abstentions": df["abstentions"],
            "errors": df["errors"],
            "state": [h.state for h in _health(df)],
            "tokens": df["tokens"],
            "cost (USD)": df["cost_usd"].round(4),
        }
    )
    return out[SUMMARY_COLUMNS]
