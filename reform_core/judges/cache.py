"""Content-hash cache of provider answers (DESIGN rule 5).

The key covers what determines the answer — provider, model, prompt version, the
messages, the response schema and the temperature — and nothing that does not
(timeouts, retry settings, API keys, base URLs).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Optional

from reform_core.judges.constants import PROMPT_VERSION, TEMPERATURE


def cache_key(
    provider: str,
    model: str,
    messages: list[dict],
    schema: dict,
    *,
    prompt_version: str = PROMPT_VERSION,
    temperature: float = TEMPERATURE,
) -> str:
    """SHA-256 hex digest of the canonical JSON of the call's inputs."""
    payload = {
        "provider": provider,
        "model": model,
        "prompt_version": prompt_version,
        "temperature": temperature,
        "messages": messages,
        "schema": schema,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class MemoryCache:
    """An in-process cache (one per run); anything with ``get``/``put`` will do."""

    def __init__(self):
        self._data: dict[str, Any] = {}

    def get(self, key: str) -> Optional[Any]:
        return self._data.get(key)

    def put(self, key: str, value: Any) -> None:
        self._data[key] = value

    def __len__(self) -> int:
        return len(self._data)
