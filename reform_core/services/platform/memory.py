"""Give freed heap memory back to the operating system (issue 16: app memory flat over cycles).

The Scores page's background computations (intervals, auxiliary analyses) run in threads;
glibc gives each thread its own malloc arena and keeps what Python and numpy free there, so
the process's resident size ratchets up with every recomputation although the live data do
not grow. ``malloc_trim(0)`` returns the free pages of every arena. Elsewhere (another C
library, another OS) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from functools import lru_cache

# One heavy background recomputation at a time in the process (the Scores page's intervals and its
# auxiliary analyses): at 10× the paper each takes ~150 MB of temporaries; started together after a
# decision they overlapped with each other and with the page's rescoring, and the app's peak crossed
# 2 GB in some cycles (bench/bench_scores.py). Serialised, the second waits for the first; on 2 cores
# they also leave the page's rerun a core. Only background threads take it (never a page's own call).
HEAVY_WORK = threading.Lock()


@lru_cache(maxsize=1)
def _trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, …)
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


def release_free_memory() -> bool:
    """Return the heap's free pages to the OS; True where the C library can (glibc)."""
    fn = _trim()
    if fn is None:
        return False
    fn(0)
    return True
