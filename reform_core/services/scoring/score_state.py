"""The scored state of a project, kept current for the Scores and Explore pages (issue 16).

One :class:`ScoreCache` per process (the app holds it in ``st.cache_resource``). For each
labelling — calibrated stratified / pooled, or one judge's raw labels — it keeps **one**
scored state: the :class:`~reform_core.services.scoring.scoring.ScoreResult` of one data version,
with its frames and unit index, and the intervals of that (or an earlier) version.

* A request for a newer data version where **only decisions changed** (the adjudication
  table's stamp; questions, responses, judgments, judges and the pair the same) is served by
  :func:`~reform_core.services.scoring.scoring.rescore`: the pair's current decisions are re-read (a
  small query) and applied to the kept state — the instances are not loaded again and only
  the models whose decisions changed are recalibrated.
* Any other change rebuilds the state from the database (:func:`scoring.score`); the frames
  are shared by every labelling of the same data version.
* Intervals (a bootstrap: seconds at paper scale) are computed in a background thread when
  the state moved on; meanwhile :meth:`ScoreCache.intervals` returns the last ones with
  ``fresh=False`` (the page says "updating") — never intervals of another labelling.
* Bounded: at most ``max_states`` labellings are kept (least recently used dropped), one
  state each; a state of an older data version is replaced, never kept beside the new one.

The interval function is a parameter, so another estimator's intervals plug in unchanged.
Thread-safe: Streamlit serves sessions from several threads; each state has its own lock and
results are never mutated once published (a new version is a new result object).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Optional

import pandas as pd
from sqlalchemy.engine import Engine

from db.repo.explore import VERSIONED_TABLES
from reform_core.services.accounts.auth import Principal
from reform_core.services.platform.memory import HEAVY_WORK, release_free_memory
from reform_core.services.scoring import scoring

IntervalFn = Callable[[scoring.ScoreResult], pd.DataFrame]
_ADJ = VERSIONED_TABLES.index("adjudication")


def split_version(version: tuple) -> tuple[tuple, tuple]:
    """``(everything but decisions, the decisions' stamp)`` of an ``explore.data_version`` tuple."""
    adj = (2 * _ADJ, 2 * _ADJ + 1)
    return tuple(v for i, v in enumerate(version) if i not in adj), tuple(version[i] for i in adj)


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    version: Optional[tuple] = None
    result: Optional[scoring.ScoreResult] = None
    # intervals: the newest computed, the version they belong to, the one being computed
    ivl: Optional[pd.DataFrame] = None
    ivl_version: Optional[tuple] = None
    ivl_error: Optional[str] = None
    ivl_running: Optional[tuple] = None
    ivl_seconds: float = 0.0  # how long the last interval computation took
    rescored: int = 0  # how many versions were served incrementally (for tests and benchmarks)
    rebuilt: int = 0


@dataclass(frozen=True)
class Intervals:
    """Intervals for the requested state: ``frame`` (None before the first ones are done),
    ``fresh`` (computed for exactly this data version), ``error`` (why there are none)."""

    frame: Optional[pd.DataFrame]
    fresh: bool
    error: Optional[str] = None


class ScoreCache:
    """The process's scored states (module docstring)."""

    def __init__(self, max_states: int = 2):
        self.max_states = max_states
        self._states: "OrderedDict[tuple, _State]" = OrderedDict()
        self._lock = threading.Lock()
        self._frames: Optional[tuple[tuple, scoring.ProjectFrames]] = None  # (base version, frames), shared

    # ------------------------------------------------------------------ states
    def _state(self, key: tuple) -> _State:
        with self._lock:
            st = self._states.pop(key, None) or _State()
            self._states[key] = st  # most recently used last
            while len(self._states) > self.max_states:
                self._states.popitem(last=False)
            return st

    def states(self) -> int:
        return len(self._states)

    def _load_frames(self, engine: Engine, base: tuple, need_pair: bool) -> scoring.ProjectFrames:
        with self._lock:
            cached = self._frames
        if cached is not None and cached[0] == base and (cached[1].judge_a is not None or not need_pair):
            return cached[1]
        frames = scoring.load_project(engine, need_pair=need_pair)
        with self._lock:
            self._frames = (base, frames)
        return frames

    def result(
        self,
        engine: Engine,
        principal: Principal,
        version: tuple,
        *,
        calibration: str = "stratified",
        judge: Optional[str] = None,
    ) -> scoring.ScoreResult:
        """The scored state of ``version`` for this labelling (ScoringError as ``score``)."""
        st = self._state((str(engine.url), calibration, judge))
        with st.lock:
            if st.version == version and st.result is not None:
                return st.result
            base, _ = split_version(version)
            old = st.result
            if (
                old is not None
                and st.version is not None
                and split_version(st.version)[0] == base
                and old.index is not None
                and old.pair is not None
            ):
                from reform_core.services.data.instances import load_adjudications

                adj = load_adjudications(engine, old.pair[0], old.pair[1])
                result = scoring.rescore(engine, principal, old, adj)
                st.rescored += 1
            else:
                st.result = None  # drop the old state before building the new one (bounded memory)
                frames = self._load_frames(engine, base, need_pair=judge is None)
                result = scoring.score(engine, principal, judge=judge, calibration=calibration, frames=frames)
                st.rebuilt += 1
            st.result, st.version = result, version
            return result

    # ------------------------------------------------------------------ intervals
    def intervals(
        self,
        engine: Engine,
        principal: Principal,
        version: tuple,
        fn: IntervalFn,
        *,
        calibration: str = "stratified",
        judge: Optional[str] = None,
        block_first: bool = True,
        start: bool = True,
    ) -> Intervals:
        """Intervals of this labelling: fresh if computed for ``version``, else the last ones
        (``fresh=False``) while a background thread computes the new ones (one at a time; when
        it ends on an older state it starts again on the newest). The very first intervals of a
        labelling are computed in the call (``block_first``): there is nothing older to show.
        ``start=False`` only looks: a page reads the intervals early and starts their
        recomputation at its end, so the thread does not compete (2 cores, one GIL) with the
        rest of the page's rerun."""
        result = self.result(engine, principal, version, calibration=calibration, judge=judge)
        st = self._state((str(engine.url), calibration, judge))
        with st.lock:
            if st.ivl_version == version:
                return Intervals(st.ivl, True, st.ivl_error)
            first = st.ivl_version is None and st.ivl_running is None and block_first
            if not first:
                if st.ivl_running is None and start:
                    self._start(st, fn)
                return Intervals(st.ivl, False, st.ivl_error if st.ivl is None else None)
        # the first intervals of this labelling: nothing older to show, compute them here
        self._compute(st, version, result, fn, restart=False)
        with st.lock:
            return Intervals(st.ivl, st.ivl_version == version, st.ivl_error)

    def start_intervals(
        self, engine: Engine, fn: IntervalFn, *, calibration: str = "stratified", judge: Optional[str] = None
    ) -> None:
        """Start recomputing the intervals of this labelling's current state if they are stale
        and none runs (the page's end, after an :meth:`intervals` call with ``start=False``)."""
        st = self._state((str(engine.url), calibration, judge))
        with st.lock:
            if st.result is not None and st.ivl_version != st.version and st.ivl_running is None:
                self._start(st, fn)

    def _start(self, st: _State, fn: IntervalFn) -> None:
        """Start the background computation for the state's current result (``st.lock`` held)."""
        st.ivl_running = st.version
        threading.Thread(
            target=self._compute, args=(st, st.version, st.result, fn), daemon=True, name="reform-intervals"
        ).start()

    def _compute(
        self, st: _State, version: tuple, result: scoring.ScoreResult, fn: IntervalFn, *, restart: bool = True
    ) -> None:
        t0 = time.perf_counter()
        try:
            with HEAVY_WORK:  # one heavy recomputation at a time (reform_core.services.platform.memory)
                frame, error = fn(result), None
        except ValueError as exc:
            frame, error = None, str(exc)
        except Exception as exc:  # noqa: BLE001 - a background thread must not die silently
            frame, error = None, f"{type(exc).__name__}: {exc}"
        release_free_memory()  # the bootstrap's temporaries, freed in this thread's arena
        with st.lock:
            st.ivl_seconds = time.perf_counter() - t0
            st.ivl_running = None
            if st.ivl_version != st.version:  # never replace fresh intervals by older ones
                st.ivl, st.ivl_version, st.ivl_error = frame, version, error
            if restart and st.version != version and st.result is not None:
                self._start(st, fn)  # the state moved on meanwhile

    def wait_intervals(
        self, engine: Engine, calibration: str = "stratified", judge: Optional[str] = None, timeout: float = 600.0
    ) -> bool:
        """Block until no interval computation of this labelling runs (benchmarks, tests)."""
        st = self._state((str(engine.url), calibration, judge))
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with st.lock:
                if st.ivl_running is None:
                    return True
            time.sleep(0.05)
        return False

    def stats(self, engine: Engine, calibration: str = "stratified", judge: Optional[str] = None) -> dict:
        st = self._states.get((str(engine.url), calibration, judge))
        return {"rescored": st.rescored, "rebuilt": st.rebuilt} if st else {"rescored": 0, "rebuilt": 0}

    def interval_seconds(self, engine: Engine, calibration: str = "stratified", judge: Optional[str] = None) -> float:
        """How long the last interval computation of this labelling took (benchmarks)."""
        st = self._states.get((str(engine.url), calibration, judge))
        return st.ivl_seconds if st else 0.0
