"""``release_free_memory`` gives a thread's freed heap back to the OS (issue 16: the app's
memory stays flat over background recomputations)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from reform_core.services.platform.memory import release_free_memory


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_of_a_thread_is_returned():
    kept = []

    def work():
        # 64 KiB blocks: below glibc's mmap threshold, so they live in this thread's arena
        blocks = [bytearray(64 * 1024) for _ in range(4000)]
        for b in blocks:
            b[::4096] = b"x" * len(b[::4096])  # touch every page
        kept.append(blocks[-1])  # the arena's top stays in use: free() alone cannot shrink it
        del blocks

    t = threading.Thread(target=work)
    t.start()
    t.join()
    before = _rss_mb()
    assert release_free_memory() is True
    after = _rss_mb()
    assert before - after > 150, (before, after)  # ~250 MB were freed inside the arena
