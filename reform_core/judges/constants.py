"""Constants every judge module shares: the grading prompt's version and decoding
temperature, and the two judging tasks.

They live here, not in :mod:`~reform_core.judges.prompt` or :mod:`~reform_core.judges.base`,
so that ``base``, ``cache`` and ``prompt`` import this leaf module instead of each other.
Changing the prompt's text means bumping :data:`PROMPT_VERSION` (judgments are keyed by it).
"""

from __future__ import annotations

PROMPT_VERSION = "reform-judge-v1"
TEMPERATURE = 0.0

TASK_CONSTRAINTS = "constraints"  # label 1 = the constraint is satisfied
TASK_PRESENCE = "presence"  # label 1 = the catalog feature is present (baseline annotation)
