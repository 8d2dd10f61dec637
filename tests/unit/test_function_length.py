"""No product function over 80 lines (issue 35 item 5): long functions are split into named steps.

Product modules are ``reform_core/``, ``db/`` (migrations aside), ``pages/`` and ``app.py``.
A function's length runs from its ``def`` line to its last line (decorators not counted, its
docstring and nested functions counted); nested functions and methods are measured too.
Exempt: the declarative ``register`` functions of ``reform_core/commands/`` (Typer command
registration; the commands defined inside them are still measured).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 80
COMMANDS = "reform_core/commands/"


def product_modules() -> list[Path]:
    """Every product module, as a path relative to the repository root."""
    paths = [ROOT / "app.py"]
    for top in ("reform_core", "db", "pages"):
        paths += [p for p in (ROOT / top).rglob("*.py") if "migrations" not in p.relative_to(ROOT).parts]
    return sorted(p.relative_to(ROOT) for p in paths)


def function_lengths(source: str, relpath: str) -> dict[str, int]:
    """``{"path::Outer.inner": lines}`` for every function and method of a module's source."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    out[f"{relpath}::{name}"] = child.end_lineno - child.lineno + 1
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source, filename=relpath), "")
    return out


def exempt(qualified: str) -> bool:
    """Typer registration in reform_core/commands/ (the ``register`` function itself only)."""
    path, name = qualified.split("::")
    return path.startswith(COMMANDS) and name == "register"


def too_long(lengths: dict[str, int]) -> list[str]:
    """The functions over :data:`MAX_LINES` that are not exempt, longest first."""
    over = [(n, q) for q, n in lengths.items() if n > MAX_LINES and not exempt(q)]
    return [f"{q} ({n} lines)" for n, q in sorted(over, key=lambda x: (-x[0], x[1]))]


def all_lengths() -> dict[str, int]:
    lengths: dict[str, int] = {}
    for rel in product_modules():
        lengths |= function_lengths((ROOT / rel).read_text(encoding="utf-8"), rel.as_posix())
    return lengths


def test_no_product_function_over_80_lines():
    lengths = all_lengths()
    assert len(lengths) > 1000, f"only {len(lengths)} functions found: is the product tree where it should be?"
    offenders = too_long(lengths)
    assert not offenders, (
        f"{len(offenders)} product function(s) over {MAX_LINES} lines; split each into named steps "
        "(a function per step, each under 60 lines):\n  " + "\n  ".join(offenders)
    )


def test_the_measure_counts_def_to_last_line_and_nested_functions():
    body = "\n".join(f"    x{i} = {i}" for i in range(79))
    src = (
        f"import typer\n\n@decorator\ndef long_one():\n{body}\n    return 0\n\n"  # def + 79 + return = 81 lines
        f"def just_80():\n{body}\n\n"  # def + 79 = 80 lines
        f"class Writer:\n    def run(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n        return 1\n\n"
        f"def register(app):\n    @app.command('x')\n    def cmd():\n    {body.replace(chr(10), chr(10) + '    ')}\n"
        f"        return 2\n"
    )
    lengths = function_lengths(src, "reform_core/commands/x.py")
    assert lengths["reform_core/commands/x.py::long_one"] == 81
    assert lengths["reform_core/commands/x.py::just_80"] == 80
    assert lengths["reform_core/commands/x.py::Writer.run"] == 81
    assert lengths["reform_core/commands/x.py::register.cmd"] == 81
    assert lengths["reform_core/commands/x.py::register"] == 83
    assert too_long(lengths) == [
        "reform_core/commands/x.py::Writer.run (81 lines)",
        "reform_core/commands/x.py::long_one (81 lines)",
        "reform_core/commands/x.py::register.cmd (81 lines)",
    ]
    # register is exempt only in reform_core/commands/
    elsewhere = function_lengths(src, "reform_core/services/x.py")
    assert "reform_core/services/x.py::register (83 lines)" in too_long(elsewhere)


def test_product_modules_cover_the_product_and_skip_migrations():
    mods = {p.as_posix() for p in product_modules()}
    assert {"app.py", "reform_core/simulate.py", "db/engine.py", "reform_core/commands/adjudication.py"} <= mods
    assert any(m.startswith("pages/") for m in mods)
    assert not any("migrations" in m or m.startswith("tests/") or m.startswith("bench/") for m in mods)
