"""CLI commands of the adjudication area: ``plan``, ``plan-size`` and ``tasks`` (SPEC §8)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from reform_core.commands.common import DbOption, fail, open_engine, print_json


def register(app: typer.Typer) -> None:
    """Add this area's commands to app."""

    @app.command("plan-size")
    def plan_size_cmd(population: int = typer.Option(..., "--population", help="N: disagreements of one model."),
                      confidence: float = typer.Option(0.95, "--confidence"),
                      p: float = typer.Option(0.5, "--p", help="Anticipated proportion."),
                      margin: float = typer.Option(0.03, "--margin", help="Margin of error e.")):
        """Cochran sample size with finite-population correction (prints the integer)."""
        from reform_core.sample_size import cochran_size

        try:
            typer.echo(str(cochran_size(population, confidence=confidence, p=p, margin=margin)))
        except ValueError as exc:
            fail(str(exc))

    @app.command("plan")
    def plan_cmd(db: Optional[str] = DbOption,
                 judges: str = typer.Option(..., "--judges", help="The judge pair A,B (direction A1B0 = A passes)."),
                 confidence: float = typer.Option(0.95, "--confidence"),
                 p: float = typer.Option(0.5, "--p"),
                 margin: float = typer.Option(0.03, "--margin"),
                 seed: int = typer.Option(0, "--seed"),
                 audit: int = typer.Option(0, "--audit", help="Extra random sample of judge agreements."),
                 overlap: float = typer.Option(0.0, "--overlap", help="Share of items two annotators decide."),
                 name: Optional[str] = typer.Option(None, "--name", help="Plan name (default: 'A vs B #k')."),
                 json_out: bool = typer.Option(False, "--json")):
        """Draw and store a stratified sample plan of the judges' disagreements."""
        from reform_core.services.adjudication import create_plan
        from reform_core.services.users import cli_principal

        pair = [j.strip() for j in judges.split(",")]
        if len(pair) != 2 or not all(pair):
            fail(f"--judges {judges!r}: expected two judge names, A,B")
        engine = open_engine(db)
        lead = cli_principal(engine)  # the CLI acts as the lead 'cli'

        try:
            out = create_plan(engine, lead, judge_a=pair[0], judge_b=pair[1], confidence=confidence, p=p,
                              margin=margin, seed=seed, audit=audit, overlap_fraction=overlap, name=name)
        except ValueError as exc:
            fail(str(exc))
        models = {r.model: {"disagreements": int(r.disagreements), "planned": int(r.planned), "strata": int(r.strata)}
                  for r in out.models.itertuples()}
        if json_out:
            print_json({"models": models})
            return
        typer.echo(f"plan {out.name!r} (id {out.plan_id}): {out.tasks} tasks")
        for model, d in models.items():
            typer.echo(f"  {model}: {d['planned']} of {d['disagreements']} disagreements in {d['strata']} strata")

    @app.command("tasks")
    def tasks_cmd(db: Optional[str] = DbOption,
                  plan: Optional[str] = typer.Option(None, "--plan", help="Plan name (default: every active plan)."),
                  out: Path = typer.Option(..., "--out", help="JSON Lines file to write."),
                  json_out: bool = typer.Option(False, "--json")):
        """Write the plan's undecided tasks as JSON Lines for an outside annotation team
        ({plan, kind, required, judge_a, judge_b, model, instruction, position}; required = distinct
        annotators still needed). Their decisions come back through `import DIR` (adjudications.jsonl)."""
        from reform_core.services.adjudication import write_tasks
        from reform_core.services.users import cli_principal

        engine = open_engine(db)
        try:
            n = write_tasks(engine, cli_principal(engine), out, plan=plan)
        except (ValueError, OSError) as exc:
            fail(str(exc))
        if json_out:
            print_json({"tasks": n, "out": str(out)})
        else:
            typer.echo(f"{n} task line(s) written to {out}")
