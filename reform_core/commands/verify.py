"""CLI commands of the verify area (registered into ``reform_core.cli.app``).

``verify-ifeval`` runs the ``ifeval:*`` verifiers over IFEval-format files (docs/formats.md#ifeval-files). It
needs no database: it reads two JSONL files and writes one CSV.
"""

from __future__ import annotations

from pathlib import Path

import typer

from reform_core.commands.common import fail


def verify_ifeval(
    input: Path = typer.Option(
        ..., "--input", help="IFEval input_data.jsonl (key, prompt, instruction_id_list, kwargs)."
    ),
    responses: Path = typer.Option(
        ..., "--responses", help="JSONL of {prompt, response}, joined by exact prompt text."
    ),
    mode: str = typer.Option("strict", "--mode", help="strict | loose (IFEval's loose variants)."),
    out: Path = typer.Option(..., "--out", help="CSV to write: key, instruction_id, passed (0/1)."),
) -> None:
    """Check every (key, instruction_id) of IFEval-format files; write a verdict CSV."""
    from reform_core import ifeval_eval

    if mode not in ("strict", "loose"):
        fail(f"--mode: must be strict or loose, got {mode!r}")
    try:
        prompts = ifeval_eval.read_inputs(input)
        answers = ifeval_eval.read_responses(responses)
        run = ifeval_eval.evaluate(prompts, answers, mode=mode)
    except ValueError as exc:
        fail(str(exc))
    table = run.verdicts[["key", "instruction_id", "passed"]].astype({"passed": int})
    from reform_core.safe_csv import write_csv

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_csv(table, out)
    except OSError as exc:
        fail(f"--out: cannot write {out}: {exc.strerror}")
    acc = ifeval_eval.accuracy(run.verdicts)
    evaluated = len(prompts) - len(run.missing)
    typer.echo(
        f"{mode}: {evaluated} of {len(prompts)} prompts evaluated, {len(table)} instructions; "
        f"prompt-level accuracy {acc['prompt_level']:.2%}, "
        f"instruction-level accuracy {acc['instruction_level']:.2%}; wrote {out}",
        err=True,
    )
    if run.missing:
        keys = ", ".join(str(k) for k in run.missing)
        typer.echo(f"{len(run.missing)} prompt(s) without a response (keys): {keys}", err=True)


def register(app: typer.Typer) -> None:
    """Add this area's commands to app."""
    app.command("verify-ifeval")(verify_ifeval)
