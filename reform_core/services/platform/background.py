"""The newest value of a slow function of the data version, recomputed in a background
thread while the last value is shown as "updating" (the Scores page's auxiliary analyses;
its intervals use :mod:`reform_core.services.scoring.score_state`, which also applies decisions
incrementally). One computation at a time; a value computed for an older version never
replaces a newer one; the very first value is computed in the call (nothing older to show).
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable, Generic, Optional, TypeVar

from reform_core.services.platform.memory import HEAVY_WORK, release_free_memory

T = TypeVar("T")


@dataclass(frozen=True)
class Latest(Generic[T]):
    value: Optional[T]
    fresh: bool  # computed for exactly the asked version
    error: Optional[str] = None  # why there is no value (the last computation failed)


class Refresher(Generic[T]):
    """Keeps the newest value of ``fn`` for one key (module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: Optional[tuple] = None
        self._value: Optional[T] = None
        self._error: Optional[str] = None
        self._running: Optional[tuple] = None
        self._pending: Optional[tuple[tuple, Callable[[], T]]] = None

    def get(self, version: tuple, fn: Callable[[], T], *, start: bool = True) -> Latest[T]:
        """The value for ``version``: fresh if computed for it; else the last one while ``fn``
        runs in the background (``start=False``: only remember it; :meth:`start` begins it)."""
        with self._lock:
            if self._version == version:
                return Latest(self._value, True, self._error)
            first = self._version is None and self._running is None
            if not first:
                self._pending = (version, fn)
                if start:
                    self._start_locked()
                return Latest(self._value, False, self._error if self._value is None else None)
            self._running = version  # computed here, one at a time as in the background
        self._compute(version, fn, serial=False)  # the caller's own thread: not queued behind background work
        with self._lock:
            return Latest(self._value, self._version == version, self._error)

    def start(self) -> None:
        """Begin the remembered computation, if any and none runs."""
        with self._lock:
            self._start_locked()

    def running(self) -> bool:
        with self._lock:
            return self._running is not None

    def busy(self) -> bool:
        """Running, or a newer version remembered to be computed."""
        with self._lock:
            return self._running is not None or self._pending is not None

    def _start_locked(self) -> None:
        if self._running is not None or self._pending is None:
            return
        version, fn = self._pending
        self._pending, self._running = None, version
        threading.Thread(target=self._compute, args=(version, fn), daemon=True, name="reform-refresh").start()

    def _compute(self, version: tuple, fn: Callable[[], T], serial: bool = True) -> None:
        """Run ``fn`` (``_running`` set by the caller) and store its value: computations run one
        at a time and each starts from the newest remembered version, so a stored value is never
        older than the one it replaces. ``serial``: in the background, one heavy computation of
        the process at a time (:data:`reform_core.services.platform.memory.HEAVY_WORK`)."""
        try:
            with HEAVY_WORK if serial else nullcontext():
                value, error = fn(), None
        except Exception as exc:  # noqa: BLE001 - a background thread must not die silently
            value, error = None, f"{type(exc).__name__}: {exc}"
        release_free_memory()  # the computation's temporaries, freed in this thread's arena
        with self._lock:
            self._running = None
            self._value, self._version, self._error = value, version, error
            if self._pending is not None and self._pending[0] == version:
                self._pending = None  # asked again for what was just computed
            self._start_locked()  # the state moved on meanwhile


class Refreshers:
    """A bounded set of :class:`Refresher` by key (least recently used dropped)."""

    def __init__(self, max_keys: int = 4) -> None:
        self.max_keys = max_keys
        self._lock = threading.Lock()
        self._items: dict[Any, Refresher] = {}

    def __call__(self, key: Any) -> Refresher:
        with self._lock:
            r = self._items.pop(key, None) or Refresher()
            self._items[key] = r
            while len(self._items) > self.max_keys:
                self._items.pop(next(iter(self._items)))
            return r
