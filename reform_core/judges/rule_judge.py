"""Rule judge: deterministic verifiers instead of an LLM (docs/metrics.md#judging-and-calibration; the verifiers registry).

For a constraint on feature ``f`` of the project's catalog:

1. If the catalog names a **constraint verifier** for ``f`` (its ``verifier`` field, e.g.
   ``ifeval:punctuation:no_comma``), that verifier checks the instantiated constraint with
   the constraint's parameters and decides pass/fail directly; verifiers that know IFEval's
   ``strict`` / ``loose`` rules run in the judge's mode.
2. Otherwise the **presence detector** ``feature:<f>`` decides whether ``f`` is present in
   the response: ``forbid`` passes iff the feature is absent; ``require`` passes iff it is
   present — except that a present feature whose constraint carries concrete parameters
   (counts, names, positions) cannot be decided by presence alone, so the rule judge
   abstains there.

The rationale is the verifier's evidence alone: no verifier id, mode or judge name, which
would tell annotators comparing two blinded judgments which judge wrote it.

Constraints with no verifier at all, or whose verifier raises, are abstentions
(``status="abstain"``, ``label=None``), never guesses. For presence items (baseline
annotation) the verdict's label is the presence itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Callable, Optional

from reform_core.judges.base import TASK_PRESENCE, ConstraintSpec, JudgeItem, JudgeResult, Verdict
from reform_core.verifiers import base as verifiers

# v3: the IFEval checks decide exactly as IFEval's reference checker (Punkt sentences, NLTK
# word tokens, keywords as regular expressions, line endings as given); v2 verdicts differ.
RULES_VERSION = "rules-v3"
MODES = ("strict", "loose")
DEFAULT_MODEL = "verifiers"


def feature_verifier(feature: str) -> Optional[Callable]:
    """The presence detector registered as ``feature:<feature>``, or None."""
    try:
        return verifiers.get(f"feature:{feature}")
    except KeyError:
        return None


def catalog_verifiers(catalogs: Iterable) -> dict[str, str]:
    """``{feature key: verifier id}`` of every feature of ``catalogs`` (catalogs, or names of
    bundled ones) that names a registered constraint verifier. A name that cannot be loaded
    contributes none: its features fall back to the presence detectors."""
    from reform_core.catalog import Catalog, load_catalog

    out: dict[str, str] = {}
    for name in catalogs:
        try:
            cat = name if isinstance(name, Catalog) else load_catalog(name)
        except ValueError:
            continue
        out.update({f.key: f.verifier for f in cat.features if f.verifier and f.verifier in verifiers.registered_ids()})
    return out


@lru_cache(maxsize=None)
def _takes_mode(fn: Callable) -> bool:
    try:
        return "mode" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _constraint_verdict(vid: str, text: str, c: ConstraintSpec, mode: str) -> Verdict:
    fn = verifiers.get(vid)
    try:
        result = fn(text, mode=mode, **c.params) if _takes_mode(fn) else fn(text, **c.params)
    except Exception as exc:  # noqa: BLE001 - a verifier bug or bad parameters must not become a label
        return Verdict(c.id, None, f"verifier {vid} failed: {type(exc).__name__}: {exc}", "abstain")
    # the evidence alone: a "[verifier, mode]" suffix would tell blinded annotators which judge wrote it
    evidence = result.evidence or ("followed" if result.passed else "not followed")
    return Verdict(c.id, int(bool(result.passed)), evidence)


def decide(
    text: str,
    c: ConstraintSpec,
    *,
    task: str,
    mode: str = "strict",
    constraint_verifiers: Optional[Mapping[str, str]] = None,
) -> Verdict:
    """The rule verdict on one constraint (or presence question); see the module docstring."""
    vid = (constraint_verifiers or {}).get(c.feature)
    if vid is not None and task != TASK_PRESENCE:
        return _constraint_verdict(vid, text, c, mode)
    fn = feature_verifier(c.feature)
    if fn is None:
        return Verdict(c.id, None, f"no rule verifier for feature {c.feature!r}", "abstain")
    try:
        result = fn(text)
    except Exception as exc:  # noqa: BLE001 - a detector bug must not become a label
        return Verdict(c.id, None, f"verifier feature:{c.feature} failed: {type(exc).__name__}: {exc}", "abstain")
    present = bool(result.passed)
    evidence = result.evidence or ("present" if present else "absent")
    if task == TASK_PRESENCE:
        return Verdict(c.id, int(present), evidence)
    if c.mode == "forbid":
        return Verdict(c.id, int(not present), evidence)
    if c.mode != "require":
        return Verdict(c.id, None, f"unknown mode {c.mode!r}", "abstain")
    if present and c.params:
        return Verdict(c.id, None, f"{evidence}; parameters {sorted(c.params)} need a judge", "abstain")
    return Verdict(c.id, int(present), evidence)


def rules_model(mode: str = "strict", model: str = "") -> str:
    """The judge model name of a rules judge in ``mode`` (the default judge name): loose
    judges carry ``-loose`` so one judge never mixes strict and loose verdicts."""
    base = model or DEFAULT_MODEL
    return base if mode == "strict" or base.endswith("-loose") else f"{base}-loose"


class RuleJudge:
    """The rules judge. ``mode``: IFEval's strict or loose rules (verifiers without modes
    ignore it); ``catalogs``: the project's catalogs (or bundled names), whose constraint verifiers it runs."""

    provider = "rules"

    def __init__(self, model: str = "", *, mode: str = "strict", catalogs: Iterable = ()):
        if mode not in MODES:
            raise ValueError(f"mode: expected one of {MODES}, got {mode!r}")
        self.mode = mode
        self.model = rules_model(mode, model)
        self.prompt_version = f"{RULES_VERSION}-{mode}"
        self.constraint_verifiers = catalog_verifiers(catalogs)

    async def judge(self, item: JudgeItem) -> JudgeResult:
        return JudgeResult(
            item,
            [
                decide(item.response, c, task=item.task, mode=self.mode, constraint_verifiers=self.constraint_verifiers)
                for c in item.constraints
            ],
        )
