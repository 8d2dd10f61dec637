"""Judges: the protocol, the versioned prompt, strict parsing, provider adapters (OpenAI,
Gemini — SDK code only in ``*_judge.py``, imported lazily), the rule and replay judges,
the async runner and batch mode. Pure: no ``db``, no ``streamlit``."""

from __future__ import annotations

from typing import Optional

from reform_core.judges.base import (
    TASK_CONSTRAINTS,
    TASK_PRESENCE,
    ConstraintSpec,
    Judge,
    JudgeItem,
    JudgeResult,
    LLMJudge,
    Verdict,
)
from reform_core.judges.constants import PROMPT_VERSION

PROVIDERS = ("openai", "gemini", "rules", "replay")
LLM_PROVIDERS = ("openai", "gemini")


def make_llm_judge(
    provider: str, *, model: str, api_key: Optional[str], base_url: Optional[str] = None, timeout: float = 120.0, **kw
) -> LLMJudge:
    """An OpenAI or Gemini judge (the SDK module is imported only here)."""
    if provider == "openai":
        from reform_core.judges.openai_judge import OpenAIJudge

        return OpenAIJudge(model=model, api_key=api_key or "", base_url=base_url, timeout=timeout, **kw)
    if provider == "gemini":
        from reform_core.judges.gemini_judge import GeminiJudge

        return GeminiJudge(model=model, api_key=api_key, base_url=base_url, timeout=timeout, **kw)
    raise ValueError(f"provider: expected one of {LLM_PROVIDERS}, got {provider!r}")


__all__ = [
    "PROMPT_VERSION",
    "PROVIDERS",
    "LLM_PROVIDERS",
    "TASK_CONSTRAINTS",
    "TASK_PRESENCE",
    "ConstraintSpec",
    "Judge",
    "JudgeItem",
    "JudgeResult",
    "LLMJudge",
    "Verdict",
    "make_llm_judge",
]
