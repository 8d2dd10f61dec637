"""reform_core.services.platform.background.Refresher: the first value computed in the call, later
versions in the background with the last value shown meanwhile, one computation at a time,
the newest version always wins, errors reported and recoverable."""

from __future__ import annotations

import threading
import time

from reform_core.services.platform.background import Refresher, Refreshers


def _wait(r: Refresher, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while r.running():
        assert time.monotonic() < end
        time.sleep(0.01)


def test_first_value_in_the_call_then_background_with_the_last_value_meanwhile():
    r = Refresher()
    got = r.get((1,), lambda: "v1")
    assert (got.value, got.fresh) == ("v1", True)
    gate, calls = threading.Event(), []

    def slow(v):
        def fn():
            calls.append(v)
            assert gate.wait(10)
            return v

        return fn

    got = r.get((2,), slow("v2"), start=False)
    assert (got.value, got.fresh) == ("v1", False) and not r.running() and calls == []  # only remembered
    r.start()
    got = r.get((3,), slow("v3"))  # asked for a newer version while v2 runs: v3 waits its turn
    assert (got.value, got.fresh) == ("v1", False)
    gate.set()
    _wait(r)
    time.sleep(0.05)
    _wait(r)
    assert calls == ["v2", "v3"]  # one at a time, the newest last
    got = r.get((3,), slow("never"))
    assert (got.value, got.fresh) == ("v3", True) and calls == ["v2", "v3"]


def test_an_error_is_reported_and_the_next_version_recovers():
    r = Refresher()
    got = r.get((1,), lambda: 1 / 0)
    assert got.value is None and got.fresh and "ZeroDivisionError" in got.error  # fresh: tried for (1,)
    r.get((2,), lambda: "ok")
    _wait(r)
    got = r.get((2,), lambda: "again")
    assert (got.value, got.fresh, got.error) == ("ok", True, None)


def test_refreshers_are_bounded():
    rs = Refreshers(max_keys=2)
    a = rs("a")
    rs("b")
    assert rs("a") is a
    rs("c")  # drops the least recently used: b
    assert rs("a") is a and rs("b") is not None and len(rs._items) == 2
