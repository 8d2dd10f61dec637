"""CLI commands of the MOSAIC and WISE studies (docs/cli.md; formats: docs/formats.md).

``mosaic-import``, ``mosaic-collect``, ``mosaic-import-outputs``, ``mosaic-check``,
``mosaic-score``; ``wise-collect``, ``wise-score``. API keys come from ``OPENAI_API_KEY`` /
``GOOGLE_API_KEY`` only. The CLI acts as the lead ``cli``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import typer

from reform_core.commands.common import DbOption, engine_and_principal, fail, print_json, read_bytes, stderr_is_tty
from reform_core.commands.common import progress_bar as _progress
from reform_core.commands.common import run_or_fail as _run

StudyOption = typer.Option(..., "--study", help="Study name.")


def _run_import(fn: Callable[[], dict]) -> dict:
    """``run_or_fail`` that prints an import's located problems without the exception's name."""
    from reform_core.services.data.reading import ImportFailed

    def guarded() -> dict:
        try:
            return fn()
        except ImportFailed as exc:
            raise ValueError(str(exc)) from None

    return _run(guarded)


def _settings(temperature, top_p, max_tokens, reasoning_effort, thinking_budget):
    from reform_core.services.judging.collection import GenerationSettings

    return GenerationSettings(
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        reasoning_effort=reasoning_effort,
        thinking_budget=thinking_budget,
    )


def _report_collection(out: dict, as_json: bool, what: str) -> None:
    if as_json:
        print_json(out)
    else:
        typer.echo(
            f"{out['written']} of {out['pending']} {what} written, {out['errors']} errors, {out['truncated']} truncated"
        )
    if out.get("errors") and not out.get("written"):
        fail(f"every call failed, e.g. {out['first_error']}")


def register(app: typer.Typer) -> None:
    """Add this area's commands to app."""

    @app.command("mosaic-import")
    def mosaic_import(
        file: Path = typer.Argument(..., help="The JSONL file mosaic-generate writes."),
        db: Optional[str] = DbOption,
        study: str = StudyOption,
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Import MOSAIC prompts as (or into) a named study; re-imports are idempotent.

        Checks positions 1..n, distinct constraints, known checkers and their params, and that
        `size` and `constraints` (when given) match the checks; every problem is located."""
        from reform_core.services.studies import mosaic

        data = read_bytes(file)
        engine, principal = engine_and_principal(db)
        out = _run_import(lambda: mosaic.import_prompts(engine, principal, study=study, data=data, filename=str(file)))
        print_json(out) if as_json else typer.echo(
            f"study {out['study']!r}: {out['written']} prompts written, {out['existing']} already stored"
        )

    @app.command("mosaic-collect")
    def mosaic_collect(
        db: Optional[str] = DbOption,
        study: str = StudyOption,
        model: str = typer.Option(..., "--model", help="Evaluated model name (as stored)."),
        provider: str = typer.Option("openai", "--provider", help="openai (any OpenAI-compatible server) | gemini"),
        provider_model: Optional[str] = typer.Option(
            None, "--provider-model", help="Endpoint model id (default: --model)."
        ),
        base_url: Optional[str] = typer.Option(None, "--base-url"),
        temperature: Optional[float] = typer.Option(0.0, "--temperature"),
        top_p: Optional[float] = typer.Option(None, "--top-p"),
        max_tokens: Optional[int] = typer.Option(4096, "--max-tokens"),
        reasoning_effort: Optional[str] = typer.Option(None, "--reasoning-effort"),
        thinking_budget: Optional[int] = typer.Option(None, "--thinking-budget"),
        concurrency: int = typer.Option(8, "--concurrency", min=1),
        rpm: Optional[int] = typer.Option(None, "--rpm", min=1, help="Requests per minute."),
        tpm: Optional[int] = typer.Option(None, "--tpm", min=1, help="Tokens per minute."),
        limit: Optional[int] = typer.Option(None, "--limit", min=0, help="At most N prompts this run."),
        timeout: float = typer.Option(300.0, "--timeout"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Collect a model's missing outputs for the study's prompts (resumable)."""
        from reform_core.services.studies import mosaic

        engine, principal = engine_and_principal(db)

        def go() -> dict:
            settings = _settings(temperature, top_p, max_tokens, reasoning_effort, thinking_budget)
            with _progress("collecting", stderr_is_tty()) as progress:
                return mosaic.collect(
                    engine,
                    principal,
                    study=study,
                    model=model,
                    provider=provider,
                    provider_model=provider_model,
                    settings=settings,
                    base_url=base_url,
                    concurrency=concurrency,
                    rpm=rpm,
                    tpm=tpm,
                    limit=limit,
                    timeout=timeout,
                    progress=progress,
                )

        _report_collection(_run(go), as_json, "outputs")

    @app.command("mosaic-import-outputs")
    def mosaic_import_outputs(
        file: Path = typer.Argument(..., help="JSONL or CSV with prompt, model, output."),
        db: Optional[str] = DbOption,
        study: str = StudyOption,
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Import outputs produced elsewhere; nothing is written unless every row is valid."""
        from reform_core.services.studies import mosaic

        data = read_bytes(file)
        engine, principal = engine_and_principal(db)
        out = _run_import(lambda: mosaic.import_outputs(engine, principal, study=study, data=data, filename=str(file)))
        print_json(out) if as_json else typer.echo(
            f"{out['rows']} outputs: {out['written']} written, {out['existing']} already stored"
        )

    @app.command("mosaic-check")
    def mosaic_check(
        db: Optional[str] = DbOption,
        study: str = StudyOption,
        judge_provider: Optional[str] = typer.Option(
            None, "--judge-provider", help="openai | gemini: also score the judge constraints."
        ),
        judge_model: str = typer.Option("", "--judge-model", help="The judge's model (the paper: gpt-4o-mini)."),
        judge_base_url: Optional[str] = typer.Option(None, "--judge-base-url"),
        judge_concurrency: int = typer.Option(8, "--judge-concurrency", min=1),
        rpm: Optional[int] = typer.Option(None, "--rpm", min=1),
        tpm: Optional[int] = typer.Option(None, "--tpm", min=1),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Run the App. D checks on every unchecked (output, constraint); optionally the LLM judge."""
        from reform_core.services.studies import mosaic

        engine, principal = engine_and_principal(db)
        judge = None
        if judge_provider:
            if not judge_model:
                fail("--judge-model: name the judge's model")
            judge = {
                "provider": judge_provider,
                "model": judge_model,
                "base_url": judge_base_url,
                "concurrency": judge_concurrency,
                "rpm": rpm,
                "tpm": tpm,
            }

        def go() -> dict:
            with _progress("judging", stderr_is_tty() and judge is not None) as progress:
                return mosaic.run_checks(engine, principal, study=study, judge=judge, progress=progress)

        out = _run(go)
        if as_json:
            print_json(out)
        else:
            typer.echo(
                f"{out['checked']} checks, {out['judged']} judge scores written, {out['errors']} errors; "
                f"{out['unchecked']} (output, constraint) pairs still unchecked"
            )
        if out["errors"] and not (out["checked"] or out["judged"]):
            fail(f"every check failed, e.g. {out['first_error']}")

    @app.command("mosaic-score")
    def mosaic_score(
        db: Optional[str] = DbOption,
        study: str = StudyOption,
        n_boot: int = typer.Option(2000, "--n-boot", min=0, help="Bootstrap replicates over prompts (0: none)."),
        seed: int = typer.Option(0, "--seed"),
        level: float = typer.Option(0.95, "--level"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """PA, SCC, PosCC and PCC (with Pearson r, p) per model, with bootstrap intervals over prompts."""
        from reform_core.services.studies import mosaic

        engine, principal = engine_and_principal(db)
        out = _run(lambda: mosaic.score(engine, principal, study=study, n_boot=n_boot, seed=seed, level=level))
        if as_json:
            print_json(out)
            return

        _print_mosaic(out)

    @app.command("wise-collect")
    def wise_collect(
        db: Optional[str] = DbOption,
        manifest: Path = typer.Option(..., "--manifest", help="Directory written by wise-generate."),
        study: str = StudyOption,
        model: str = typer.Option(..., "--model", help="Evaluated model name (as stored)."),
        provider: str = typer.Option("openai", "--provider", help="openai (any OpenAI-compatible server) | gemini"),
        provider_model: Optional[str] = typer.Option(
            None, "--provider-model", help="Endpoint model id (default: --model)."
        ),
        vendor: Optional[str] = typer.Option(
            None,
            "--vendor",
            help="The model's maker, the top level of the provider–model–item bootstrap (default: --provider).",
        ),
        base_url: Optional[str] = typer.Option(None, "--base-url"),
        temperature: Optional[float] = typer.Option(0.2, "--temperature", help="The WISE paper uses 0.2."),
        top_p: Optional[float] = typer.Option(None, "--top-p"),
        max_tokens: Optional[int] = typer.Option(
            120, "--max-tokens", help="The WISE paper caps outputs at 120 tokens."
        ),
        reasoning_effort: Optional[str] = typer.Option(None, "--reasoning-effort"),
        thinking_budget: Optional[int] = typer.Option(None, "--thinking-budget"),
        concurrency: int = typer.Option(8, "--concurrency", min=1),
        rpm: Optional[int] = typer.Option(None, "--rpm", min=1),
        tpm: Optional[int] = typer.Option(None, "--tpm", min=1),
        limit: Optional[int] = typer.Option(None, "--limit", min=0, help="At most N generations this run."),
        timeout: float = typer.Option(300.0, "--timeout"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Collect a model's missing generations for a WISE manifest into a study (resumable)."""
        from reform_core.services.studies import wise

        engine, principal = engine_and_principal(db)

        def go() -> dict:
            settings = _settings(temperature, top_p, max_tokens, reasoning_effort, thinking_budget)
            with _progress("collecting", stderr_is_tty()) as progress:
                return wise.collect(
                    engine,
                    principal,
                    manifest=manifest,
                    study=study,
                    model=model,
                    provider=provider,
                    provider_model=provider_model,
                    vendor=vendor,
                    settings=settings,
                    base_url=base_url,
                    concurrency=concurrency,
                    rpm=rpm,
                    tpm=tpm,
                    limit=limit,
                    timeout=timeout,
                    progress=progress,
                )

        _report_collection(_run_import(go), as_json, "generations")

    @app.command("wise-score")
    def wise_score(
        db: Optional[str] = DbOption,
        study: str = StudyOption,
        reference: Optional[str] = typer.Option(
            None, "--reference", help="Reference form (default: the study's, POS)."
        ),
        scheme: Optional[str] = typer.Option(
            None,
            "--scheme",
            help="provider-model-item | model-item | equal-model-item | item (default: the paper's for the checker).",
        ),
        n_boot: int = typer.Option(2000, "--n-boot", min=2),
        seed: int = typer.Option(0, "--seed"),
        level: float = typer.Option(0.95, "--level"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Per-form compliance, Δ to the reference with bootstrap intervals and Holm p-values,
        C_mean, C_worst, G_wording and ranking stability (τ_b, reversals, top-3 Jaccard, rank shift)."""
        from reform_core.services.studies import wise

        engine, principal = engine_and_principal(db)
        out = _run(
            lambda: wise.score(
                engine,
                principal,
                study=study,
                reference=reference,
                scheme=scheme,
                n_boot=n_boot,
                seed=seed,
                level=level,
            )
        )
        if as_json:
            print_json(out)
            return

        _print_wise(out)


# ----------------------------------------------------------------------------- text reports


def _num(x, width: int = 6, digits: int = 1) -> str:
    return f"{'n/a':>{width}}" if x is None else f"{x:{width}.{digits}f}"


def _est(x, pair, unit: str = " %", *, coefficient: bool = False) -> str:
    """A point with its interval, both to the places the interval supports (docs/display.md); a
    share whose interval is wider than 50 pp says so instead of its interval."""
    from reform_core import display

    lo, hi = pair if pair and pair[0] is not None and pair[1] is not None else (None, None)
    rule = dict(coarsest=1, finest=3, default=3, max_width=float("inf")) if coefficient else {}
    s = display.show(x, lo, hi, None, **rule)
    if x is None:
        return "n/a"
    interval = (
        s.interval
        if s.greyed
        else ("[n/a]" if lo is None else f"[{display.interval_text(lo, hi, s.decimals, sep=', ')}]")
    )
    return f"{s.point}{unit} {interval}"


def _p(p, n_boot: int) -> str:
    """A bootstrap p-value; 0 (no replicate on the other side of 0) is shown as < 1/B."""
    from reform_core import display

    if p is None:
        return "n/a"
    return f"<{1 / n_boot:.2g}" if p == 0 else display.p_value_text(p, replicates=n_boot)


def _print_mosaic(out: dict) -> None:
    """Every number of ``mosaic-score --json`` as text: PA and all-followed, SCC, PosCC and PCC
    (with Pearson r and p) per model, each with its interval."""
    level = round(100 * out["level"])
    typer.echo(
        f"study {out['study']}: {len(out['models'])} models; {level} % intervals: {out['interval']} "
        f"({out['n_boot']} replicates, seed {out['seed']})"
    )
    for name, m in out["models"].items():
        iv = m["intervals"]
        typer.echo(
            f"{name}: PA {_est(m['pa'], iv['pa'])}  all followed {_est(m['all_followed'], iv['all_followed'])}  "
            f"({m['outputs']} outputs, {m['checked']} checks, "
            f"{m['unchecked']} unchecked pairs)"
        )
        for c, v in m["scc"].items():
            typer.echo(f"  SCC   {c:<28}{_est(v, iv['scc'][c])}  n={m['n']['scc'][c]}")
        for pos, v in m["poscc"].items():
            typer.echo(f"  PosCC {'position ' + pos:<28}{_est(v, iv['poscc'][pos])}  n={m['n']['poscc'][pos]}")
        for p in m["pcc"]:
            pair = f"{p['constraint_i']} & {p['constraint_j']}"
            r = "n/a" if p["r"] is None else f"{p['r']:+.3f}"
            pv = "n/a" if p["p_value"] is None else _p(p["p_value"], 1)
            typer.echo(f"  PCC   {pair:<28}{_est(p['pcc'], p['interval'])}  n={p['n']}  r={r}  p={pv}")
    for note in out["notes"]:
        typer.echo(f"note: {note}")


def _print_wise(out: dict) -> None:
    """Every number of ``wise-score --json`` as text: per form compliance and Δ with intervals,
    raw and Holm p, the four ranking metrics with intervals; C_mean, C_worst, G_wording."""
    n_boot, level = out["n_boot"], round(100 * out["level"])
    typer.echo(
        f"study {out['study']}: {len(out['models'])} models, {out['outputs']} outputs, checker "
        f"{out['checker']}, reference {out['reference']}; {level} % intervals: {out['scheme']} bootstrap "
        f"({n_boot} replicates, seed {out['seed']}); ranking intervals: task bootstrap"
    )
    for form, f in out["forms"].items():
        typer.echo(f"{form}: compliance {_est(f['compliance'], f['compliance_interval'])}")
        if form == out["reference"]:
            continue
        typer.echo(
            f"  Δ vs {out['reference']} {_est(f['delta'], f['delta_interval'], ' pp')}  "
            f"p {_p(f['p_value'], n_boot)}  Holm p {_p(f['p_holm'], n_boot)}"
        )
        typer.echo(
            "  "
            + "  ".join(
                f"{k} {_est(f[k], f[f'{k}_interval'], '', coefficient=True)}"
                for k in ("tau_b", "reversal_rate", "top3_jaccard", "max_rank_shift")
            )
        )
    typer.echo(
        f"C_mean {_est(out['c_mean'], out['c_mean_interval'])}  "
        f"C_worst {_est(out['c_worst'], out['c_worst_interval'])} ({out['worst_form']})  "
        f"G_wording {_est(out['g_wording'], out['g_wording_interval'], ' pp')}"
    )
    for model, row in out["model_compliance"].items():
        typer.echo(f"  {model}: " + "  ".join(f"{k} {_num(v, 0)}" for k, v in row.items()))
    for note in out["notes"]:
        typer.echo(f"note: {note}")
