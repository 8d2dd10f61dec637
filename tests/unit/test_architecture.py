"""Rules of the house enforced: import-linter contracts and thin pages (DESIGN.md rules 1–2)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold():
    r = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def test_pages_reach_only_services():
    forbidden = re.compile(r"^\s*(from|import)\s+(db|sqlmodel|sqlalchemy|openai|google\.genai)\b", re.M)
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "pages").rglob("*.py") if forbidden.search(p.read_text())]
    offenders += [p for p in ["app.py"] if forbidden.search((ROOT / p).read_text())]
    assert offenders == []


def test_sdk_clients_live_in_judge_adapters():
    sdk = re.compile(r"^\s*(from|import)\s+(openai|google\.genai|google\s+import\s+genai)\b", re.M)
    users = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "reform_core").rglob("*.py") if sdk.search(p.read_text()))
    assert all(u.endswith("_judge.py") for u in users), users
