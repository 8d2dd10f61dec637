"""Rule judge: deterministic verifiers instead of an LLM (SPEC §4, verifiers registry).

For a constraint on feature ``f`` the verifier ``feature:<f>`` decides whether ``f`` is
present in the response. ``forbid`` passes iff the feature is absent. ``require`` passes
iff it is present — except that a present feature whose constraint carries concrete
parameters (counts, names, positions) cannot be decided by presence alone, so the rule
judge abstains there. Constraints with no registered verifier, or whose verifier raises,
are also abstentions (``status="abstain"``, ``label=None``), never guesses.

For presence items (baseline annotation) the verdict's label is the presence itself.
"""

from __future__ import annotations

from typing import Callable, Optional

from reform_core.judges.base import TASK_PRESENCE, ConstraintSpec, JudgeItem, JudgeResult, Verdict
from reform_core.verifiers import base as verifiers

RULES_VERSION = "rules-v1"


def feature_verifier(feature: str) -> Optional[Callable]:
    """The presence detector registered as ``feature:<feature>``, or None."""
    try:
        return verifiers.get(f"feature:{feature}")
    except KeyError:
        return None


def decide(text: str, c: ConstraintSpec, *, task: str) -> Verdict:
    """The rule verdict on one constraint (or presence question)."""
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


class RuleJudge:
    provider = "rules"
    prompt_version = RULES_VERSION

    def __init__(self, model: str = "verifiers"):
        self.model = model

    async def judge(self, item: JudgeItem) -> JudgeResult:
        return JudgeResult(item, [decide(item.response, c, task=item.task) for c in item.constraints])
