"""The one retry policy of the judges (DESIGN rule 5).

Adapters translate their SDK's exceptions into :class:`ProviderError`; :func:`classify`
decides: HTTP 408, 409, 429 and 5xx, timeouts and connection errors are retried with
exponential backoff and full jitter, honouring ``Retry-After`` / ``retry-after-ms``;
every other 4xx (and any other exception) fails at once. SDK-internal retries are off.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Mapping, Optional, TypeVar

T = TypeVar("T")
RETRY_STATUS = frozenset({408, 409, 429})


class ProviderError(Exception):
    """A provider call failed.

    kind: ``"http"`` (``status`` set), ``"timeout"`` or ``"connection"``.
    """

    def __init__(
        self, message: str, *, kind: str = "http", status: Optional[int] = None, retry_after: Optional[float] = None
    ):
        super().__init__(message)
        if kind not in ("http", "timeout", "connection"):
            raise ValueError(f"kind: unknown value {kind!r}")
        self.kind = kind
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class Decision:
    retry: bool
    retry_after: Optional[float] = None
    reason: str = ""


def classify(exc: BaseException) -> Decision:
    """Whether ``exc`` is worth retrying (and after how long the server asked)."""
    if isinstance(exc, ProviderError):
        if exc.kind in ("timeout", "connection"):
            return Decision(True, exc.retry_after, exc.kind)
        status = exc.status or 0
        if status in RETRY_STATUS or 500 <= status <= 599:
            return Decision(True, exc.retry_after, f"HTTP {status}")
        return Decision(False, None, f"HTTP {status}")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Decision(True, None, "timeout")
    if isinstance(exc, ConnectionError):
        return Decision(True, None, "connection")
    return Decision(False, None, type(exc).__name__)


def parse_retry_after(headers: Optional[Mapping[str, str]], *, now: Optional[float] = None) -> Optional[float]:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    if not headers:
        return None
    lower = {str(k).lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` includes the first call; delays in seconds."""

    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 300.0

    def __post_init__(self):
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts: must be >= 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("base_delay, max_delay: must be >= 0")

    def delay(self, attempt: int, retry_after: Optional[float], rng: random.Random) -> float:
        """Wait before retry number ``attempt`` (1-based): Retry-After if given (plus up to
        10 % jitter), else full jitter over ``base * 2**(attempt-1)`` capped at ``max_delay``."""
        if retry_after is not None:
            ra = min(retry_after, self.max_retry_after)
            return ra + rng.uniform(0, 0.1 * ra)
        cap = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return rng.uniform(0, cap)


async def call_with_retry(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    rng: Optional[random.Random] = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Await ``fn()``, retrying what :func:`classify` allows; re-raise the last error."""
    rng = rng or random.Random()
    for attempt in range(1, policy.max_attempts + 1):
        try:
            return await fn()
        except Exception as exc:  # noqa: BLE001 - classified below
            decision = classify(exc)
            if not decision.retry or attempt == policy.max_attempts:
                raise
            await sleep(policy.delay(attempt, decision.retry_after, rng))
    raise AssertionError("unreachable")  # pragma: no cover
