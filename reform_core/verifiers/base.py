"""The verifier contract and registry.

A verifier is a pure function ``fn(text: str, **params) -> CheckResult``. Verifiers are
registered under a string id in a namespace, e.g. ``feature:bullet_list``,
``ifeval:punctuation:no_comma``, ``mosaic:paragraph_count``, ``wise:exact_words``.
Modules that define verifiers register them at import time; ``get`` imports the known
verifier modules lazily so callers never depend on import order.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

# Modules that register verifiers; imported on first lookup.
_VERIFIER_MODULES = (
    "reform_core.verifiers.features",
    "reform_core.verifiers.ifeval",
    "reform_core.verifiers.mosaic",
    "reform_core.verifiers.wise",
)


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check.

    passed:   the binary verdict (for fractional checks: ``score >= 0.5``)
    score:    a value in [0, 1] (1.0 / 0.0 for binary checks)
    evidence: human-readable reasons, e.g. ``"line 3: '## Intro' is a heading"``
    lines:    1-based line numbers that decided the verdict
    detail:   extra machine-readable facts (counts, failure direction, ...)
    """

    passed: bool
    score: float = float("nan")
    evidence: str = ""
    lines: tuple[int, ...] = ()
    detail: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.score != self.score:  # NaN: default the score from the verdict
            object.__setattr__(self, "score", 1.0 if self.passed else 0.0)


Verifier = Callable[..., CheckResult]

_REGISTRY: dict[str, Verifier] = {}
_loaded = False


def register(verifier_id: str) -> Callable[[Verifier], Verifier]:
    """Decorator: register ``fn`` under ``verifier_id`` (ids must be unique)."""

    def deco(fn: Verifier) -> Verifier:
        if verifier_id in _REGISTRY and _REGISTRY[verifier_id] is not fn:
            raise ValueError(f"verifier id registered twice: {verifier_id}")
        _REGISTRY[verifier_id] = fn
        return fn

    return deco


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    for mod in _VERIFIER_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:  # a module not written yet
            if exc.name != mod:
                raise
    _loaded = True


def get(verifier_id: str) -> Verifier:
    """Return the verifier registered under ``verifier_id`` (KeyError if unknown)."""
    _load_all()
    try:
        return _REGISTRY[verifier_id]
    except KeyError:
        raise KeyError(f"unknown verifier id: {verifier_id!r}") from None


def registered_ids(prefix: str = "") -> list[str]:
    """All registered ids starting with ``prefix``, sorted."""
    _load_all()
    return sorted(k for k in _REGISTRY if k.startswith(prefix))
