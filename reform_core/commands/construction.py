"""CLI commands of the construction area (registered into ``reform_core.cli.app``).

``collect`` (evaluated-model responses), ``build-variants``, ``screen-variants``,
``extract-features``, ``mosaic-generate``, ``wise-generate``. API keys come from
``OPENAI_API_KEY`` / ``GOOGLE_API_KEY`` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from reform_core.commands.common import DbOption, fail, print_json, stderr_is_tty
from reform_core.commands.common import open_engine as _engine
from reform_core.commands.common import progress_bar as _progress
from reform_core.commands.common import run_or_fail as _run


def register(app: typer.Typer) -> None:
    """Add this area's commands to app."""

    @app.command("collect")
    def collect(
        db: Optional[str] = DbOption,
        model: str = typer.Option(..., "--model", help="Evaluated model name as stored in the project."),
        provider: str = typer.Option("openai", "--provider", help="openai (any OpenAI-compatible server) | gemini"),
        provider_model: Optional[str] = typer.Option(
            None, "--provider-model", help="Endpoint model id (default: --model)."
        ),
        condition: list[str] = typer.Option(
            ["baseline"], "--condition", help="baseline | main | single | prompted (repeatable)."
        ),
        base_url: Optional[str] = typer.Option(None, "--base-url"),
        temperature: Optional[float] = typer.Option(0.0, "--temperature"),
        top_p: Optional[float] = typer.Option(None, "--top-p"),
        max_tokens: Optional[int] = typer.Option(4096, "--max-tokens"),
        reasoning_effort: Optional[str] = typer.Option(None, "--reasoning-effort", help="OpenAI reasoning models."),
        thinking_budget: Optional[int] = typer.Option(None, "--thinking-budget", help="Gemini thinking budget."),
        concurrency: int = typer.Option(8, "--concurrency", min=1),
        rpm: Optional[int] = typer.Option(None, "--rpm", min=1),
        tpm: Optional[int] = typer.Option(None, "--tpm", min=1),
        limit: Optional[int] = typer.Option(None, "--limit", min=0, help="At most N generations this run."),
        timeout: float = typer.Option(300.0, "--timeout"),
        estimate_only: bool = typer.Option(False, "--estimate", help="Only print calls and the cost bound."),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Collect the missing responses of one evaluated model (resumable)."""
        from reform_core.services.judging import collection as svc

        def go() -> dict:
            settings = svc.GenerationSettings(
                temperature=temperature,
                top_p=top_p,
                max_tokens=max_tokens,
                reasoning_effort=reasoning_effort,
                thinking_budget=thinking_budget,
            )
            eng = _engine(db)
            if estimate_only:
                return svc.estimate(
                    eng, model=model, conditions=condition, settings=settings, provider_model=provider_model
                )
            with _progress("collecting", stderr_is_tty()) as progress:
                return svc.collect(
                    eng,
                    model=model,
                    provider=provider,
                    provider_model=provider_model,
                    conditions=condition,
                    settings=settings,
                    base_url=base_url,
                    concurrency=concurrency,
                    rpm=rpm,
                    tpm=tpm,
                    limit=limit,
                    timeout=timeout,
                    progress=progress,
                )

        out = _run(go)
        if as_json or estimate_only:
            print_json(out)
        else:
            typer.echo(
                f"{out['written']} of {out['pending']} responses written, {out['errors']} errors, "
                f"{out['truncated']} truncated"
            )
        if not estimate_only and out.get("errors") and not out.get("written"):
            fail(f"every call failed, e.g. {out['first_error']}")

    @app.command("build-variants")
    def build_variants(
        db: Optional[str] = DbOption,
        per_question: int = typer.Option(5, "--per-question", min=1),
        pool_size: int = typer.Option(6, "--pool-size", min=3, help="Targets per question to combine."),
        seed: int = typer.Option(0, "--seed"),
        catalog: Optional[str] = typer.Option(None, "--catalog"),
        single: bool = typer.Option(False, "--single", help="Also write single-constraint versions."),
        prompted: bool = typer.Option(False, "--prompted", help="Also write prompted (meta-prompt) copies."),
        integrate_provider: Optional[str] = typer.Option(None, "--integrate-provider", help="openai | gemini"),
        integrate_model: str = typer.Option("", "--integrate-model"),
        base_url: Optional[str] = typer.Option(None, "--base-url"),
        dry_run: bool = typer.Option(False, "--dry-run"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Compose, check and import three-constraint variants for questions without any."""
        from reform_core.services.studies import construction as svc

        integrate = (
            {"provider": integrate_provider, "model": integrate_model, "base_url": base_url}
            if integrate_provider
            else None
        )
        out = _run(
            lambda: svc.build_variants(
                _engine(db),
                per_question=per_question,
                seed=seed,
                pool_size=pool_size,
                catalog=catalog,
                single=single,
                prompted=prompted,
                integrate=integrate,
                dry_run=dry_run,
            )
        )
        if as_json:
            print_json(out)
        else:
            typer.echo(
                f"{out['instructions']} instructions, {out['constraints']} constraints for {out['questions']} questions"
            )

    @app.command("screen-variants")
    def screen_variants(
        db: Optional[str] = DbOption,
        keep: int = typer.Option(..., "--keep", min=0),
        calibration: str = typer.Option("stratified", "--calibration"),
        out: Optional[Path] = typer.Option(None, "--out", help="CSV of the ranking."),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Rank main variants by calibrated all-pass probability; keep the hardest N."""
        from reform_core.services.studies import construction as svc

        df = _run(lambda: svc.screen_variants(_engine(db), keep=keep, calibration=calibration))
        if out is not None:
            from reform_core.safe_csv import write_csv

            write_csv(df, out)
        kept = df.loc[df["kept"], "instruction"].tolist()
        if as_json:
            print_json({"candidates": len(df), "kept": kept})
        else:
            typer.echo(f"kept {len(kept)} of {len(df)} candidates")

    @app.command("extract-features")
    def extract_features(
        db: Optional[str] = DbOption,
        provider: str = typer.Option("rules", "--provider", help="rules | openai | gemini"),
        model: str = typer.Option("", "--model"),
        base_url: Optional[str] = typer.Option(None, "--base-url"),
        open_ended: bool = typer.Option(False, "--open-ended", help="Also run open-ended extraction + coverage."),
        out: Optional[Path] = typer.Option(None, "--out", help="CSV of the mapped open-ended instances."),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Annotate baseline responses with catalog features (and optionally coverage)."""
        from reform_core.services.studies import construction as svc

        res = _run(
            lambda: svc.extract_features(
                _engine(db), provider=provider, model=model, base_url=base_url, open_ended=open_ended, out=out
            )
        )
        if as_json:
            print_json(res)
        else:
            a = res["annotation"]
            typer.echo(f"{a['written']} baseline annotations ({a['rule']} rule, {a['llm']} llm), {a['errors']} errors")

    @app.command("mosaic-generate")
    def mosaic_generate(
        out: Path = typer.Option(..., "--out", help="JSONL file of prompts."),
        n: int = typer.Option(4000, "--n", min=1),
        seed: int = typer.Option(0, "--seed"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Write a balanced MOSAIC prompt set (the MOSAIC paper, arXiv:2601.18554, section 3.1)."""
        from reform_core.services.studies import construction as svc

        res = _run(lambda: svc.write_mosaic(out, n=n, seed=seed))
        print_json(res) if as_json else typer.echo(f"{res['prompts']} prompts written to {res['file']}")

    @app.command("wise-generate")
    def wise_generate(
        tasks: Path = typer.Option(..., "--tasks", help="Text file, one base task per line."),
        out: Path = typer.Option(..., "--out", help="Output directory."),
        target: list[str] = typer.Option(["5", "8", "10", "12"], "--target", help="Target (repeatable)."),
        panel: str = typer.Option("exact_count", "--panel"),
        repetitions: int = typer.Option(3, "--repetitions", min=1),
        seed: int = typer.Option(0, "--seed"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Write WISE task/form manifests and matched items (the WISE paper, section 4)."""
        from reform_core.services.studies import construction as svc

        if not tasks.is_file():
            fail(f"--tasks: no such file {tasks}")
        lines = [ln.strip() for ln in tasks.read_text(encoding="utf-8").splitlines() if ln.strip()]
        res = _run(
            lambda: svc.write_wise(out, tasks=lines, targets=target, panel=panel, repetitions=repetitions, seed=seed)
        )
        print_json(res) if as_json else typer.echo(f"{res['items']} items written to {res['dir']}")
