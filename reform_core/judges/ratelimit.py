"""Client-side rate limits: requests and tokens per minute (aiolimiter leaky buckets)."""

from __future__ import annotations

from typing import Optional

from aiolimiter import AsyncLimiter


class RateLimits:
    """Shared by every concurrent call of one run; ``None`` means unlimited.

    Parameters
    ----------
    rpm : requests per minute.
    tpm : tokens per minute (each request reserves its estimated prompt tokens plus the
        maximum output, capped at ``tpm`` so one large request can still pass).
    """

    def __init__(self, *, rpm: Optional[int] = None, tpm: Optional[int] = None):
        for name, v in (("rpm", rpm), ("tpm", tpm)):
            if v is not None and v <= 0:
                raise ValueError(f"{name}: must be a positive integer, got {v}")
        self.rpm, self.tpm = rpm, tpm
        self._requests = AsyncLimiter(rpm, 60) if rpm else None
        self._tokens = AsyncLimiter(tpm, 60) if tpm else None

    async def acquire(self, tokens: int = 0) -> None:
        if self._requests is not None:
            await self._requests.acquire()
        if self._tokens is not None and tokens > 0:
            await self._tokens.acquire(min(tokens, self.tpm))
