"""CLI commands of the wording area: wording-create, wording-import-generations, wording-results,
and for outside raters wording-tasks, wording-import-ratings.

The CLI acts as the lead ``cli`` (``reform_core.services.accounts.users.cli_principal``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from reform_core.commands.common import DbOption, engine_and_principal, fail, print_json, read_bytes


def _coefficient(e: dict) -> str:
    """κ, α or an ICC with its interval, to the places the interval supports (docs/display.md)."""
    from reform_core import display

    d = display.decimals_for(e["ci_low"], e["ci_high"], coarsest=1, finest=3, default=3)
    return (
        f"{display.number_text(e['value'], d):>6}  [{display.interval_text(e['ci_low'], e['ci_high'], d, sep=', ')}]"
        + (f"  {e['note']}" if e.get("note") else "")
    )


def register(app: typer.Typer) -> None:
    @app.command("wording-create")
    def create_cmd(
        db: Optional[str] = DbOption,
        name: str = typer.Option(..., "--name", help="Study name (unique)."),
        forms: Optional[Path] = typer.Option(
            None, "--forms", help="CSV/JSONL with columns key, template (one {N}-style placeholder)."
        ),
        targets: Optional[str] = typer.Option(None, "--targets", help="Comma-separated target values, e.g. 5,8,10,12."),
        items: Optional[Path] = typer.Option(
            None, "--items", help="Instead of --forms/--targets: CSV/JSONL with form, target, text."
        ),
        question: str = typer.Option(
            "Does this require exactly {target} words?",
            "--question",
            help="Question shown with each item; must contain {target}.",
        ),
        checker: str = typer.Option("wise:exact_words", "--checker", help="Checker of the matching WISE generations."),
        reference: str = typer.Option("POS", "--reference", help="Reference form for Δ and gaps."),
        wise_study: Optional[str] = typer.Option(
            None,
            "--wise-study",
            help="Link to a WISE study: compare with its generations; without --forms, rate its forms.",
        ),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Create a wording study: items = forms × targets, or imported items."""
        from reform_core.services.data.reading import read_records
        from reform_core.services.studies.wording import ImportFailed, create_study, import_study_items

        if items is not None and forms is not None or items is None and forms is None and not wise_study:
            fail("give either --forms with --targets, or --items (or --wise-study with --targets)")
        engine, principal = engine_and_principal(db)
        try:
            if items is not None:
                out = import_study_items(
                    engine,
                    principal,
                    name=name,
                    data=read_bytes(items),
                    filename=str(items),
                    question=question,
                    checker=checker,
                    reference=reference,
                    wise_study=wise_study,
                )
            else:
                if not targets:
                    fail("--targets: give the target values, e.g. --targets 5,8,10,12")
                rows = [rec for _, rec in read_records(read_bytes(forms), str(forms))] if forms is not None else None
                out = create_study(
                    engine,
                    principal,
                    name=name,
                    forms=rows,
                    targets=[t.strip() for t in targets.split(",")],
                    question=question,
                    checker=checker,
                    reference=reference,
                    wise_study=wise_study,
                )
        except (ImportFailed, ValueError) as exc:
            fail(str(exc))
        print_json(out) if json_out else typer.echo(
            f"study {out['study']!r} created: {out['forms']} forms, {out['items']} items"
        )

    @app.command("wording-import-generations")
    def import_cmd(
        file: Path = typer.Argument(
            ..., help="CSV or JSONL: item, model, provider, form, target, repetition, output [, checker]."
        ),
        db: Optional[str] = DbOption,
        study: str = typer.Option("", "--study", help="WISE study to import into (created if new)."),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Import WISE generations; nothing is written unless every row is valid; re-imports are idempotent."""
        from reform_core.services.studies.generations import ImportFailed, import_generations

        engine, principal = engine_and_principal(db)
        try:
            out = import_generations(engine, principal, data=read_bytes(file), filename=str(file), study=study)
        except (ImportFailed, ValueError) as exc:
            fail(str(exc))
        print_json(out) if json_out else typer.echo(
            f"{out['rows']} rows: {out['written']} written, {out['existing']} already stored"
        )

    @app.command("wording-results")
    def results_cmd(
        db: Optional[str] = DbOption,
        study: str = typer.Option(..., "--study", help="Study name."),
        n_boot: int = typer.Option(2000, "--n-boot", help="Item-bootstrap replicates."),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Fleiss' κ, ICC(2,1) / ICC(2,k) with 95 % item-bootstrap intervals, yes-rates, model compliance."""
        from reform_core.services.studies.wording import study_results

        engine, principal = engine_and_principal(db)
        try:
            out = study_results(engine, principal, study=study, n_boot=n_boot, seed=seed).to_json()
        except ValueError as exc:
            fail(str(exc))
        if json_out:
            print_json(out)
            return
        typer.echo(f"study {out['study']}: {out['items']} items, annotators {', '.join(out['annotators']) or '—'}")
        k = out["kappa"]
        typer.echo(f"{'Fleiss kappa (exact answer)':<30}{_coefficient(k)}")
        for rating, kinds in out["icc"].items():
            for kind, e in kinds.items():
                typer.echo(f"{f'ICC({kind}) {rating}':<30}{_coefficient(e)}")
        for note in out["notes"]:
            typer.echo(f"note: {note}")

    register_outside_raters(app)


def register_outside_raters(app: typer.Typer) -> None:
    """wording-tasks and wording-import-ratings: a study rated outside the app."""

    @app.command("wording-tasks")
    def tasks_cmd(
        db: Optional[str] = DbOption,
        study: str = typer.Option(..., "--study", help="Wording study whose items to write."),
        out: Path = typer.Option(..., "--out", help="JSON Lines file to write (replaced if it exists)."),
        json_out: bool = typer.Option(False, "--json", help='Print {"tasks": n, "out": FILE}.'),
    ):
        """Write a wording study's rating tasks for outside raters, one JSON line per item.

        Each line: study, item (its id), form, target, text and questions (requires_exact,
        clarity, naturalness, ambiguity, complexity: what to ask). Show raters the text and
        the questions only; the form comes back with each rating as a check. Ratings come back
        through wording-import-ratings."""
        from reform_core.services.studies.outside_raters import write_rating_tasks

        engine, principal = engine_and_principal(db)
        try:
            n = write_rating_tasks(engine, principal, study=study, out=out)
        except (OSError, ValueError) as exc:
            fail(str(exc))
        print_json({"tasks": n, "out": str(out)}) if json_out else typer.echo(f"{n} rating tasks written to {out}")

    @app.command("wording-import-ratings")
    def import_ratings_cmd(
        file: Path = typer.Argument(..., help="CSV or JSONL: item, form, annotator, question, value."),
        db: Optional[str] = DbOption,
        study: str = typer.Option(..., "--study", help="Wording study the ratings belong to."),
        json_out: bool = typer.Option(False, "--json", help='Print {"written", "superseded"}.'),
    ):
        """Import ratings made outside the app, one line per answer.

        question: requires_exact (value yes / no) or clarity, naturalness, ambiguity,
        complexity (an integer 1-5). Problems are reported as file:line: field: message and
        nothing is written unless every line is valid. A rater is an existing annotator
        account of that name, else an outside name kept as text (no account is created or
        changed; local, cli and lead/analyst names are refused). One rater's lines on one
        item supersede their current rating, as a save in the app does; re-importing a file
        changes nothing."""
        from reform_core.services.studies.outside_raters import import_ratings
        from reform_core.services.studies.wording import ImportFailed

        engine, principal = engine_and_principal(db)
        try:
            out = import_ratings(engine, principal, study=study, data=read_bytes(file), filename=str(file))
        except (ImportFailed, ValueError) as exc:
            fail(str(exc))
        print_json(out) if json_out else typer.echo(
            f"{out['written']} rating rows written, {out['superseded']} of them superseding an earlier rating"
        )
