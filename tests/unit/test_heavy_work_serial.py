"""The Scores page's two background recomputations (intervals: ScoreCache; auxiliary analyses:
Refresher) run one at a time in the process (reform_core.services.platform.memory.HEAVY_WORK, issue 16:
at 10× they overlapped and the app's peak memory crossed 2 GB); a page's own first computation
is not queued behind them."""

from __future__ import annotations

import threading
import time

from reform_core.services.platform import memory
from reform_core.services.platform.background import Refresher


def test_background_refreshes_never_overlap():
    spans, lock = [], threading.Lock()

    def work(tag):
        def fn():
            t0 = time.monotonic()
            time.sleep(0.15)
            with lock:
                spans.append((tag, t0, time.monotonic()))
            return tag

        return fn

    a, b = Refresher(), Refresher()
    a.get((0,), work("a0"))  # first values: computed in the call
    b.get((0,), work("b0"))
    a.get((1,), work("a1"))  # both recomputed in the background, started together
    b.get((1,), work("b1"))
    end = time.monotonic() + 5
    while (a.busy() or b.busy()) and time.monotonic() < end:
        time.sleep(0.01)
    bg = sorted((s for s in spans if s[0] in ("a1", "b1")), key=lambda s: s[1])
    assert [s[0] for s in bg] in (["a1", "b1"], ["b1", "a1"])
    assert bg[1][1] >= bg[0][2]  # the second began after the first had ended


def test_a_first_value_is_not_queued_behind_background_work():
    r = Refresher()
    with memory.HEAVY_WORK:  # a background job holds it
        t0 = time.monotonic()
        got = r.get((0,), lambda: 42)
        assert got.value == 42 and got.fresh and time.monotonic() - t0 < 1.0
