"""Retry classification, Retry-After parsing, backoff and the retry loop."""

import asyncio
import email.utils
import random

import pytest

from reform_core.judges.ratelimit import RateLimits
from reform_core.judges.retry import (
    ProviderError,
    RetryPolicy,
    call_with_retry,
    classify,
    parse_retry_after,
)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_transient_statuses_are_retried(status):
    d = classify(ProviderError("x", status=status, retry_after=2.0))
    assert d.retry and d.retry_after == 2.0


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_other_4xx_fail_at_once(status):
    assert not classify(ProviderError("x", status=status)).retry


@pytest.mark.parametrize(
    "exc, retry",
    [
        (ProviderError("t", kind="timeout"), True),
        (ProviderError("c", kind="connection"), True),
        (asyncio.TimeoutError(), True),
        (TimeoutError(), True),
        (ConnectionResetError(), True),
        (ValueError("parse"), False),
        (KeyError("x"), False),
    ],
)
def test_exception_kinds(exc, retry):
    assert classify(exc).retry is retry


def test_provider_error_kind_is_checked():
    with pytest.raises(ValueError, match="kind"):
        ProviderError("x", kind="weird")


def test_parse_retry_after_forms():
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
    assert parse_retry_after({"Retry-After": "-3"}) == 0.0


def test_delay_honours_retry_after_and_caps_backoff():
    p = RetryPolicy(base_delay=1.0, max_delay=5.0)
    rng = random.Random(0)
    for _ in range(200):
        d = p.delay(1, 3.0, rng)
        assert 3.0 <= d <= 3.3
        assert 0.0 <= p.delay(10, None, rng) <= 5.0  # capped
        assert 0.0 <= p.delay(2, None, rng) <= 2.0  # base * 2**(2-1)
    assert RetryPolicy(max_retry_after=10).delay(1, 1000.0, random.Random(1)) <= 11.0


def test_policy_validation():
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


def _flaky(errors):
    calls = []

    async def fn():
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return "ok"

    return fn, calls


def test_call_with_retry_retries_transient_then_succeeds():
    fn, calls = _flaky([ProviderError("429", status=429, retry_after=4.0), ProviderError("t", kind="timeout")])
    slept = []

    async def sleep(s):
        slept.append(s)

    assert asyncio.run(call_with_retry(fn, RetryPolicy(base_delay=0.5), rng=random.Random(0), sleep=sleep)) == "ok"
    assert len(calls) == 3
    assert 4.0 <= slept[0] <= 4.4 and 0 <= slept[1] <= 1.0


def test_call_with_retry_does_not_retry_4xx():
    fn, calls = _flaky([ProviderError("bad", status=400)])

    async def sleep(s):
        raise AssertionError("must not sleep")

    with pytest.raises(ProviderError, match="bad"):
        asyncio.run(call_with_retry(fn, RetryPolicy(), sleep=sleep))
    assert len(calls) == 1


def test_call_with_retry_gives_up_after_max_attempts():
    fn, calls = _flaky([ProviderError("x", status=503)] * 10)

    async def sleep(s):
        pass

    with pytest.raises(ProviderError):
        asyncio.run(call_with_retry(fn, RetryPolicy(max_attempts=3), sleep=sleep))
    assert len(calls) == 3


def test_rate_limits_validate_and_cap_token_requests():
    with pytest.raises(ValueError, match="rpm"):
        RateLimits(rpm=0)
    with pytest.raises(ValueError, match="tpm"):
        RateLimits(tpm=-5)
    lim = RateLimits(rpm=1000, tpm=100)
    asyncio.run(lim.acquire(10_000))  # larger than tpm: capped, does not raise
