"""The one versioned grading prompt (docs/metrics.md#what-a-judge-sees; ReFormBench,
arXiv:2610.19693, §3.5, App. A.3).

The judge sees the full instruction, every constraint with its id, text and acceptance
criteria, and the response — never the evaluated model's identity (nothing about the
model is part of :class:`~reform_core.judges.base.JudgeItem`). It answers with JSON
matching :func:`response_schema`: one binary label and a rationale per constraint id.
Decoding is deterministic (temperature 0, set by the adapters).

Changing any text here changes the judgments' meaning: bump ``PROMPT_VERSION`` in
:mod:`~reform_core.judges.constants` (judgments are keyed by prompt version, so a new
version is judged afresh).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from reform_core.judges.base import JudgeItem

from reform_core.judges.constants import PROMPT_VERSION, TASK_PRESENCE, TEMPERATURE  # noqa: F401 (re-exported)

SYSTEM_CONSTRAINTS = """\
You are a strict, impartial grader of format-following. You receive an instruction given \
to an assistant, the formatting constraints it contains (each with an id, its text and \
acceptance criteria) and the assistant's response. For EVERY constraint decide whether \
the response satisfies it, judging only the visible response against that constraint's \
acceptance criteria; ignore content quality and the other constraints.

Answer with JSON only: {"verdicts": [{"constraint_id": "<id>", "rationale": "<one or two \
sentences citing the evidence>", "label": 1 or 0}, ...]} with exactly one entry per \
constraint id, label 1 = satisfied (pass), 0 = not satisfied (fail)."""

SYSTEM_PRESENCE = """\
You are a careful annotator of response formats. You receive a question, the assistant's \
response and a list of format features, each with an id, a name and a definition. For \
EVERY feature decide whether it is present in the response according to its definition.

Answer with JSON only: {"verdicts": [{"constraint_id": "<id>", "rationale": "<one or two \
sentences citing the evidence>", "label": 1 or 0}, ...]} with exactly one entry per \
feature id, label 1 = present, 0 = absent."""

REPAIR = """\
Your previous answer could not be used: {error}
Answer again with JSON only, exactly one entry per id ({ids}), labels 0 or 1."""


def _constraint_block(item: "JudgeItem") -> str:
    parts = []
    for c in item.constraints:
        lines = [f"[{c.prompt_id}] ({c.mode}) {c.text.strip() or c.feature}"]
        if c.acceptance.strip():
            lines.append(f"Acceptance criteria: {c.acceptance.strip()}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _feature_block(item: "JudgeItem") -> str:
    parts = []
    for c in item.constraints:
        title = c.name.strip() or c.feature
        parts.append(f"[{c.prompt_id}] {title}\nDefinition: {c.text.strip() or c.feature}")
    return "\n\n".join(parts)


def build_messages(item: "JudgeItem") -> list[dict]:
    """Chat messages (``role``/``content``) for ``item``: a system and a user message."""
    if item.task == TASK_PRESENCE:
        user = (
            f"## Question\n{item.instruction}\n\n## Features\n{_feature_block(item)}\n\n"
            f"## Response\n<<<RESPONSE\n{item.response}\nRESPONSE>>>"
        )
        return [{"role": "system", "content": SYSTEM_PRESENCE}, {"role": "user", "content": user}]
    user = (
        f"## Instruction\n{item.instruction}\n\n## Constraints\n{_constraint_block(item)}\n\n"
        f"## Response\n<<<RESPONSE\n{item.response}\nRESPONSE>>>"
    )
    return [{"role": "system", "content": SYSTEM_CONSTRAINTS}, {"role": "user", "content": user}]


def response_schema(item: "JudgeItem") -> dict:
    """The JSON schema of the answer (strict-mode compatible: closed objects, all required)."""
    ids = [c.prompt_id for c in item.constraints]
    verdict = {
        "type": "object",
        "properties": {
            "constraint_id": {"type": "string", "enum": ids},
            "rationale": {"type": "string"},
            "label": {"type": "integer", "enum": [0, 1]},
        },
        "required": ["constraint_id", "rationale", "label"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"verdicts": {"type": "array", "items": verdict, "minItems": len(ids), "maxItems": len(ids)}},
        "required": ["verdicts"],
        "additionalProperties": False,
    }


def repair_messages(messages: list[dict], answer: str, error: str, ids: list[str]) -> list[dict]:
    """``messages`` plus the unusable answer and a request to answer again (one repair)."""
    return [
        *messages,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": REPAIR.format(error=error, ids=", ".join(ids))},
    ]


def estimate_tokens(messages: list[dict]) -> int:
    """A rough prompt size for client-side token limits (about 4 characters a token)."""
    return sum(len(m["content"]) for m in messages) // 4 + 8 * len(messages)


def prompt_text(item: "JudgeItem") -> str:
    """The full prompt as one readable text (for display in the app)."""
    return "\n\n".join(f"### {m['role']}\n{m['content']}" for m in build_messages(item))
