"""CLI commands of the adjudication area: ``plan``, ``plan-size``, ``plan-close``, ``plan-extend`` and
``tasks``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from reform_core.commands.common import DbOption, fail, open_engine, print_json


def _check_plan_options(
    judges: str, design: str, metric: str, target_half_width: Optional[float], audit_share: Optional[float], audit: int
) -> list[str]:
    """``plan``'s options checked (an error exit names the option); the judge pair."""
    from reform_core.services.adjudication.planning import DESIGNS

    pair = [j.strip() for j in judges.split(",")]
    if len(pair) != 2 or not all(pair):
        fail(f"--judges {judges!r}: expected two judge names, A,B")
    if design not in DESIGNS:
        fail(f"--design must be one of {', '.join(DESIGNS)}, got {design!r}")
    if metric not in ("tcpr", "emcr"):
        fail(f"--metric must be tcpr or emcr, got {metric!r}")
    if target_half_width is not None and not target_half_width > 0:
        fail(f"--target-half-width must be > 0 percentage points, got {target_half_width!r}")
    if design == "stratified" and (target_half_width is not None or audit_share is not None):
        fail(
            "--target-half-width and --audit-share size the cluster design; the stratified design uses "
            "--confidence/--p/--margin and --audit N"
        )
    if design == "cluster" and audit:
        fail("--audit N sizes the stratified design's audit; the cluster design audits a share (--audit-share)")
    return pair


def _print_cluster_plan(made, json_out: bool) -> None:
    """``plan``'s output for a question-cluster plan (JSON or lines)."""
    models = {r["model"]: {k: v for k, v in r.items() if k != "model"} for r in made.models.to_dict("records")}
    if json_out:
        print_json(
            {
                "plan": made.name,
                "design": made.params["design"],
                "tasks": made.tasks,
                "target": made.params.get("target"),
                "double_fraction": made.params["double_fraction"],
                "second_opinion": made.params.get("second_opinion"),
                "audit_opinions": made.params.get("audit_opinions"),
                "audit_unit": made.params.get("audit_unit"),
                "models": models,
                "explanation": made.explanation,
            }
        )
        return
    typer.echo(f"plan {made.name!r} (id {made.plan_id}, question-cluster design): {made.tasks} tasks")
    typer.echo(f"  {made.explanation}")
    for model, d in models.items():
        typer.echo(
            f"  {model}: {d['questions_sampled']} of {d['questions']} questions, "
            f"{d['disagreement_tasks']} of {d['disagreements']} disagreements, {d['audit_tasks']} audits, "
            f"{d['decisions_needed']} decisions (plus second opinions)"
        )
    t = made.params.get("target") or {}
    if t:
        typer.echo(f"  target: ±{t['half_width']:g} pp on {t['metric'].upper()} (measurement interval)")


def _plan_cluster(engine, pair: list[str], sizing: dict, json_out: bool, **design) -> None:
    """``plan`` with the question-cluster design: draw and store the plan as the lead 'cli',
    print it (an error exit on a ValueError)."""
    from reform_core.services.accounts.users import cli_principal
    from reform_core.services.adjudication.planning import create_cluster_plan

    lead = cli_principal(engine)  # the CLI acts as the lead 'cli'
    try:
        made = create_cluster_plan(engine, lead, judge_a=pair[0], judge_b=pair[1], **sizing, **design)
    except ValueError as exc:
        fail(str(exc))
    _print_cluster_plan(made, json_out)


def _plan_stratified(engine, pair: list[str], sizing: dict, json_out: bool, **design) -> None:
    """``plan --design stratified``: draw and store the paper's stratified sample as the lead
    'cli', print it (an error exit on a ValueError)."""
    from reform_core.services.accounts.users import cli_principal
    from reform_core.services.adjudication.adjudication import create_plan

    lead = cli_principal(engine)  # the CLI acts as the lead 'cli'
    try:
        out = create_plan(engine, lead, judge_a=pair[0], judge_b=pair[1], **sizing, **design)
    except ValueError as exc:
        fail(str(exc))
    models = {
        r.model: {"disagreements": int(r.disagreements), "planned": int(r.planned), "strata": int(r.strata)}
        for r in out.models.itertuples()
    }
    if json_out:
        print_json({"plan": out.name, "design": "stratified", "tasks": out.tasks, "models": models})
        return
    typer.echo(f"plan {out.name!r} (id {out.plan_id}): {out.tasks} tasks")
    for model, d in models.items():
        typer.echo(f"  {model}: {d['planned']} of {d['disagreements']} disagreements in {d['strata']} strata")


def register(app: typer.Typer) -> None:
    """Add this area's commands to app."""

    @app.command("plan-size")
    def plan_size_cmd(
        population: int = typer.Option(..., "--population", help="N: disagreements of one model."),
        confidence: float = typer.Option(0.95, "--confidence"),
        p: float = typer.Option(0.5, "--p", help="Anticipated proportion."),
        margin: float = typer.Option(0.03, "--margin", help="Margin of error e."),
    ):
        """Cochran sample size with finite-population correction (prints the integer)."""
        from reform_core.sample_size import cochran_size

        try:
            typer.echo(str(cochran_size(population, confidence=confidence, p=p, margin=margin)))
        except ValueError as exc:
            fail(str(exc))

    @app.command("plan")
    def plan_cmd(
        db: Optional[str] = DbOption,
        judges: str = typer.Option(..., "--judges", help="The judge pair A,B (direction A1B0 = A passes)."),
        design: str = typer.Option(
            "cluster",
            "--design",
            help="cluster (default: question-cluster sample + agreement audit by "
            "target + second opinions, for the default estimator) | stratified "
            "(the paper's Cochran/FPC sample of disagreements).",
        ),
        confidence: float = typer.Option(0.95, "--confidence"),
        p: float = typer.Option(0.5, "--p"),
        margin: float = typer.Option(0.03, "--margin"),
        seed: int = typer.Option(0, "--seed"),
        target_half_width: Optional[float] = typer.Option(
            None, "--target-half-width", help="cluster: size for this measurement half-width (pp)."
        ),
        metric: str = typer.Option("tcpr", "--metric", help="cluster: metric of the target (tcpr | emcr)."),
        audit_share: Optional[float] = typer.Option(
            None,
            "--audit-share",
            help="cluster: share of a sampled question's agreements audited (default "
            "0.3, spread by Neyman allocation over targets).",
        ),
        audit: int = typer.Option(0, "--audit", help="stratified: extra random sample of judge agreements."),
        overlap: Optional[float] = typer.Option(
            None,
            "--overlap",
            help="Share of items two annotators decide from the start (default: cluster "
            "0.1, stratified 0); a cluster plan also asks a second annotator wherever "
            "a first decision goes against the plan's reference label.",
        ),
        name: Optional[str] = typer.Option(None, "--name", help="Plan name (default: 'A vs B #k')."),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Draw and store an adjudication plan: by default the question-cluster design the
        default estimator needs; --design stratified for the paper's stratified sample.

        The design is described in docs/estimator.md. Its precision target is
        --target-half-width, else ±100·margin pp on TCPR; the Scores page's verdict says
        "precise enough" once every model's measurement half-width meets it."""
        pair = _check_plan_options(judges, design, metric, target_half_width, audit_share, audit)
        engine = open_engine(db)
        sizing = {"confidence": confidence, "p": p, "margin": margin, "seed": seed, "name": name}
        if design == "cluster":
            _plan_cluster(
                engine,
                pair,
                sizing,
                json_out,
                target_half_width=target_half_width,
                metric=metric,
                audit_pi=audit_share,
                double_fraction=overlap,
            )
        else:
            _plan_stratified(engine, pair, sizing, json_out, audit=audit, overlap_fraction=overlap or 0.0)

    @app.command("plan-close")
    def plan_close_cmd(
        name: str = typer.Argument(..., help="The plan's name."),
        db: Optional[str] = DbOption,
        reason: Optional[str] = typer.Option(
            None, "--reason", help="Why the plan stops here (recorded with it and in the export's manifest)."
        ),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Close a plan where it stands ("stop here"): its remaining open tasks are withdrawn and
        the estimate is final for the sample reached; the reason is recorded. Leads only."""
        from reform_core.services.accounts.users import cli_principal
        from reform_core.services.adjudication.plan_lifecycle import close_plan

        engine = open_engine(db)
        try:
            out = close_plan(engine, cli_principal(engine), name, reason=reason)
        except ValueError as exc:
            fail(str(exc))
        if json_out:
            print_json({"plan": out.plan, "withdrawn": out.withdrawn})
        else:
            typer.echo(f"plan {out.plan!r} closed: {out.withdrawn} open task(s) withdrawn")

    @app.command("plan-extend")
    def plan_extend_cmd(
        name: str = typer.Argument(..., help="The plan's name (a question-cluster plan)."),
        db: Optional[str] = DbOption,
        questions: int = typer.Option(
            ...,
            "--questions",
            help="More questions per model expected (drawn with the plan's design; earlier draws and decisions kept).",
        ),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Extend a question-cluster plan: about N more questions per model drawn with the same
        design (a question sampled before stays sampled), their tasks added behind the others."""
        from reform_core.services.accounts.users import cli_principal
        from reform_core.services.adjudication.plan_lifecycle import extend_plan

        engine = open_engine(db)
        try:
            out = extend_plan(engine, cli_principal(engine), name, questions=questions)
        except ValueError as exc:
            fail(str(exc))
        if json_out:
            print_json({"plan": out.plan, "tasks": out.tasks})
            return
        typer.echo(f"plan {out.plan!r} extended: {out.tasks} task(s) added")
        for r in out.models.itertuples(index=False):
            typer.echo(
                f"  {r.model}: {r.sampled_before} → {r.sampled_now} of {r.questions} questions, "
                f"{r.tasks_added} task(s) added"
            )

    @app.command("tasks")
    def tasks_cmd(
        db: Optional[str] = DbOption,
        plan: Optional[str] = typer.Option(None, "--plan", help="Plan name (default: every active plan)."),
        out: Path = typer.Option(..., "--out", help="JSON Lines file to write."),
        json_out: bool = typer.Option(False, "--json"),
    ):
        """Write the plan's undecided tasks as JSON Lines for an outside annotation team
        ({plan, kind, required, judge_a, judge_b, model, instruction, position, answer}; required =
        distinct annotators still needed; answer = the field a decision gives: choice A|B|neither on
        a disagreement, verdict pass|fail on an audit, asked without showing the judges' label).
        Their decisions come back through `import DIR` (adjudications.jsonl)."""
        from reform_core.services.accounts.users import cli_principal
        from reform_core.services.adjudication.adjudication import write_tasks

        engine = open_engine(db)
        try:
            n = write_tasks(engine, cli_principal(engine), out, plan=plan)
        except (ValueError, OSError) as exc:
            fail(str(exc))
        if json_out:
            print_json({"tasks": n, "out": str(out)})
        else:
            typer.echo(f"{n} task line(s) written to {out}")
