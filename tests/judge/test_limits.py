"""Token buckets and the adaptive concurrency limit."""

from __future__ import annotations

import asyncio
import time

import pytest

from evalstream._judge.limits import Concurrency, TokenBucket


@pytest.mark.slow
def test_bucket_waits_for_refill() -> None:
    async def go() -> float:
        bucket = TokenBucket(600)  # 10 a second, 100 at most (ten seconds' worth)
        await bucket.take(100)  # the full bucket at once
        started = time.monotonic()
        await bucket.take(5)  # half a second of refill
        return time.monotonic() - started

    waited = asyncio.run(go())
    assert 0.4 <= waited < 2.0


def test_bucket_lets_an_oversized_request_through_a_full_bucket() -> None:
    async def go() -> None:
        bucket = TokenBucket(60)
        await asyncio.wait_for(bucket.take(1000), 1.0)  # more than the bucket holds
        assert bucket.level < 0

    asyncio.run(go())


def test_concurrency_never_exceeds_its_limit() -> None:
    async def go() -> int:
        limit = Concurrency(4)
        now = most = 0

        async def one() -> None:
            nonlocal now, most
            await limit.acquire()
            now += 1
            most = max(most, now)
            await asyncio.sleep(0.001)
            now -= 1
            limit.release()

        await asyncio.gather(*(one() for _ in range(100)))
        assert limit.held == 0 and limit.most_held == most
        return most

    assert asyncio.run(go()) == 4


def test_halves_on_429_and_grows_back() -> None:
    limit = Concurrency(16, cooldown=0.0)
    limit.rate_limited()
    assert limit.limit == 8
    limit.rate_limited()
    limit.rate_limited()
    limit.rate_limited()
    limit.rate_limited()
    assert limit.limit == 1 and limit.lowest == 1  # never below one
    for _ in range(1):
        limit.succeeded()
    assert limit.limit == 2
    for _ in range(2 + 3 + 4):
        limit.succeeded()
    assert limit.limit == 5
    for _ in range(1000):
        limit.succeeded()
    assert limit.limit == 16  # back to the maximum, not past it


def test_cooldown_halves_once_per_burst() -> None:
    limit = Concurrency(16, cooldown=60.0)
    for _ in range(10):
        limit.rate_limited()  # one burst of 429s from requests sent together
    assert limit.limit == 8


def test_a_cancelled_waiter_gives_its_slot_back() -> None:
    async def go() -> None:
        limit = Concurrency(1)
        await limit.acquire()
        waiter = asyncio.create_task(limit.acquire())
        await asyncio.sleep(0)
        waiter.cancel()
        limit.release()
        await asyncio.sleep(0)
        assert limit.held == 0
        await asyncio.wait_for(limit.acquire(), 1.0)

    asyncio.run(go())
