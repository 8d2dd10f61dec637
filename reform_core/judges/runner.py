"""The async judging runner: bounded concurrency, cancel, progress, committed results.

``concurrency`` workers pull items and await ``judge.judge(item)``; rate limits and
transport retries live in the judge (:class:`~reform_core.judges.base.LLMJudge`).
Finished results go through a queue to one writer task that hands them, in small
batches, to the service's ``on_results`` callback in a worker thread (so database
commits never block the event loop); a killed run loses at most the batch in flight,
and because the service skips finished work, a rerun resumes without repeating calls.

``cancel`` (anything with ``is_set()``: ``asyncio.Event`` or ``threading.Event``) is
checked before each item: no new call starts once it is set, calls in flight finish and
are written.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Protocol

from reform_core.judges.base import Judge, JudgeItem, JudgeResult


class _Flag(Protocol):
    def is_set(self) -> bool: ...


@dataclass
class RunStats:
    """What a run did. Every verdict is exactly one of a label (status ok), an
    abstention or an error: ``verdicts == labels + abstained + errors``."""

    items: int = 0  # items judged (calls of judge.judge)
    requests: int = 0  # provider requests (retries, repairs included)
    verdicts: int = 0
    errors: int = 0
    abstained: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cancelled: bool = False
    first_error: str = ""  # the first error message seen (already redacted by the judge)

    @property
    def labels(self) -> int:
        """Verdicts that carry a 0/1 label."""
        return self.verdicts - self.errors - self.abstained

    def add(self, r: JudgeResult) -> None:
        self.items += 1
        self.requests += r.requests
        self.verdicts += len(r.verdicts)
        self.errors += sum(v.status == "error" for v in r.verdicts)
        self.abstained += sum(v.status == "abstain" for v in r.verdicts)
        if not self.first_error:
            self.first_error = r.error
        self.input_tokens += r.input_tokens
        self.output_tokens += r.output_tokens
        self.cost_usd += r.cost_usd


async def run_items(
    judge: Judge,
    items: Iterable[JudgeItem],
    *,
    on_results: Callable[[list[JudgeResult]], None],
    concurrency: int = 16,
    total: Optional[int] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    cancel: Optional[_Flag] = None,
    commit_every: int = 32,
) -> RunStats:
    """Judge ``items``; ``on_results`` (run in a thread) persists each batch of results;
    ``progress(done, total)`` is called after each item."""
    if concurrency < 1:
        raise ValueError(f"concurrency: must be >= 1, got {concurrency}")
    if commit_every < 1:
        raise ValueError(f"commit_every: must be >= 1, got {commit_every}")
    items = list(items)
    total = len(items) if total is None else total
    stats = RunStats()
    queue: asyncio.Queue = asyncio.Queue()
    it = iter(items)
    done = 0

    async def worker() -> None:
        nonlocal done
        for item in it:
            if writer_task.done():  # the writer failed: stop calling, its error is raised below
                return
            if cancel is not None and cancel.is_set():
                stats.cancelled = True
                return
            try:
                result = await judge.judge(item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a judge bug becomes error verdicts
                result = JudgeResult.failed(item, f"{type(exc).__name__}: {exc}")
            stats.add(result)
            await queue.put(result)
            done += 1
            if progress is not None:
                progress(done, total)

    async def writer() -> None:
        while True:
            first = await queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < commit_every and not queue.empty():
                nxt = queue.get_nowait()
                if nxt is None:
                    await asyncio.to_thread(on_results, batch)
                    return
                batch.append(nxt)
            await asyncio.to_thread(on_results, batch)

    writer_task = asyncio.create_task(writer())
    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, len(items))))))
    finally:
        await queue.put(None)
        await writer_task
    return stats
