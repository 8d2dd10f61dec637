"""CLI commands of the judging area (registered into ``reform_core.cli.app``).

``judge`` (a stable interface: docs/cli.md), ``judge-batch submit|poll|ingest``, ``annotate-baseline`` and
``judge-prompt``. API keys come from ``OPENAI_API_KEY`` / ``GOOGLE_API_KEY`` only (never
options, so they stay out of shell history); every error message is redacted.
"""

from __future__ import annotations

from typing import Optional

import typer

from reform_core.commands.common import DbOption, db_url, fail, print_json, stderr_is_tty
from reform_core.commands.common import progress_bar as _progress
from reform_core.commands.common import run_or_fail as _run


def register(app: typer.Typer) -> None:
    """Add this area's commands to app."""

    @app.command("judge")
    def judge(
        db: Optional[str] = DbOption,
        provider: str = typer.Option(..., "--provider", help="openai | gemini | rules | replay"),
        model: str = typer.Option("", "--model", help="Provider model name (openai/gemini)."),
        name: Optional[str] = typer.Option(None, "--name", help="Judge name (default: the model)."),
        base_url: Optional[str] = typer.Option(
            None,
            "--base-url",
            help="OpenAI-compatible / Gemini endpoint (your key from the environment is sent there).",
        ),
        endpoint: Optional[str] = typer.Option(
            None, "--endpoint", help="A configured endpoint's name (REFORM_JUDGE_ENDPOINTS)."
        ),
        concurrency: int = typer.Option(16, "--concurrency", min=1),
        rpm: Optional[int] = typer.Option(None, "--rpm", min=1, help="Requests per minute."),
        tpm: Optional[int] = typer.Option(None, "--tpm", min=1, help="Tokens per minute."),
        limit: Optional[int] = typer.Option(None, "--limit", min=0, help="At most N responses this run."),
        source: Optional[str] = typer.Option(None, "--source", help="replay: the judge whose labels to copy."),
        timeout: float = typer.Option(120.0, "--timeout", help="Seconds per request."),
        mode: str = typer.Option("strict", "--mode", help="rules: IFEval's strict or loose rules (strict | loose)."),
        as_json: bool = typer.Option(
            False, "--json", help="Print {calls, written, errors, labels, abstentions} as JSON."
        ),
    ) -> None:
        """Judge every not-yet-judged (response, constraint) pair; resumable. Exits 1 when
        every call failed (e.g. a base URL without /v1).

        Keys come from OPENAI_API_KEY / GOOGLE_API_KEY (or the endpoint's key_env); every row
        written is a label, an abstention or an error. --provider rules runs offline every
        registered verifier of the project's catalog (IFEval: its 25 checkers under IFEval's
        strict or loose rules; ReFormBench: the presence detectors, abstaining where parameters
        need a judge); its default names are `verifiers` (strict) and `verifiers-loose`, and a
        strict and a loose rules judge can form a scoring pair."""
        from reform_core.services.judging import judging as svc
        from reform_core.services.platform.uow import get_engine

        with _progress("judging", stderr_is_tty()) as progress:
            out = _run(
                lambda: svc.run_judge(
                    get_engine(db_url(db)),
                    provider=provider,
                    model=model,
                    name=name,
                    base_url=base_url,
                    concurrency=concurrency,
                    rpm=rpm,
                    tpm=tpm,
                    limit=limit,
                    progress=progress,
                    source=source,
                    timeout=timeout,
                    mode=mode,
                    created_by="cli",
                    endpoint=endpoint,
                )
            )
        if as_json:
            print_json({k: out[k] for k in ("calls", "written", "errors", "labels", "abstentions")})
        else:
            typer.echo(svc.run_report(out))
        if out["all_failed"]:
            fail(f"all {out['calls']} calls failed; first error: {out['first_error']}")

    @app.command("judge-batch")
    def judge_batch(
        action: str = typer.Argument(..., help="submit | poll | ingest"),
        db: Optional[str] = DbOption,
        provider: str = typer.Option("openai", "--provider", help="openai | gemini (submit)"),
        model: str = typer.Option("", "--model", help="Model name (submit)."),
        name: Optional[str] = typer.Option(None, "--name", help="Judge name (default: the model)."),
        base_url: Optional[str] = typer.Option(None, "--base-url"),
        limit: Optional[int] = typer.Option(None, "--limit", min=0),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Batch mode: submit the pending items, poll the open batches, ingest finished ones."""
        from reform_core.services.judging import judging as svc
        from reform_core.services.platform.uow import get_engine

        if action not in ("submit", "poll", "ingest"):
            fail(f"action: expected submit, poll or ingest, got {action!r}")
        engine = get_engine(db_url(db))
        if action == "submit":
            out = _run(
                lambda: svc.submit_batch(
                    engine, provider=provider, model=model, name=name, base_url=base_url, limit=limit
                )
            )
        else:
            if not (name or model):
                fail("--name (or --model): which judge's batches to poll")
            out = _run(
                lambda: svc.poll_batches(engine, name=name or model, base_url=base_url, ingest=action == "ingest")
            )
        if as_json:
            print_json(out)
        else:
            typer.echo(str(out))

    @app.command("annotate-baseline")
    def annotate_baseline(
        db: Optional[str] = DbOption,
        provider: str = typer.Option("rules", "--provider", help="rules | openai | gemini"),
        model: str = typer.Option("", "--model"),
        base_url: Optional[str] = typer.Option(None, "--base-url"),
        concurrency: int = typer.Option(16, "--concurrency", min=1),
        rpm: Optional[int] = typer.Option(None, "--rpm", min=1),
        tpm: Optional[int] = typer.Option(None, "--tpm", min=1),
        limit: Optional[int] = typer.Option(None, "--limit", min=0),
        catalog: Optional[str] = typer.Option(None, "--catalog"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Label the catalog features present in each baseline response (rules, then LLM)."""
        from reform_core.services.judging import judging as svc
        from reform_core.services.platform.uow import get_engine

        with _progress("annotating", stderr_is_tty()) as progress:
            out = _run(
                lambda: svc.annotate_baseline(
                    get_engine(db_url(db)),
                    provider=provider,
                    model=model,
                    base_url=base_url,
                    concurrency=concurrency,
                    rpm=rpm,
                    tpm=tpm,
                    limit=limit,
                    catalog=catalog,
                    progress=progress,
                )
            )
        if as_json:
            print_json(out)
        else:
            typer.echo(str(out))

    @app.command("judge-prompt")
    def judge_prompt(
        db: Optional[str] = DbOption,
        response_id: Optional[int] = typer.Option(None, "--response-id"),
        template: bool = typer.Option(False, "--template", help="The template, without a database."),
    ) -> None:
        """Print the versioned grading prompt (filled for one response)."""
        from reform_core.services.judging import judging as svc
        from reform_core.services.platform.uow import get_engine

        out = _run(
            lambda: svc.prompt_for_display(None if template else get_engine(db_url(db)), response_id=response_id)
        )
        typer.echo(f"# prompt version {out['version']}\n\n{out['text']}")
