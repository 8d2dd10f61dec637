"""The ``[auth]`` snippets of docs/operations.md ("Single sign-on (OIDC)"), so that the tests
check and use exactly what the documentation tells a team to write."""

from __future__ import annotations

import re
from pathlib import Path

OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
PROVIDERS = ("generic", "google", "entra", "keycloak")


def snippet(name: str) -> str:
    """The TOML of the snippet marked ``<!-- sso-snippet: NAME -->``."""
    found = re.search(rf"<!-- sso-snippet: {name} -->\n```toml\n(.*?)```", OPERATIONS.read_text(encoding="utf-8"), re.S)
    assert found, f"docs/operations.md has no [auth] snippet {name!r}"
    return found.group(1)


def filled(name: str, **values: str) -> str:
    """The snippet with those of its placeholders (``REFORM_HOST``, ``CLIENT_SECRET``, …) that
    ``values`` names replaced; an AssertionError if one is left."""
    text = snippet(name)
    for placeholder, value in sorted(values.items(), key=lambda kv: -len(kv[0])):  # longest first
        text = text.replace(placeholder, value)
    left = re.findall(r"\b[A-Z][A-Z0-9_-]{3,}[A-Z0-9]\b", text)
    assert not left, f"snippet {name!r}: placeholders left {left}"
    return text
