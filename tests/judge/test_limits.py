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


def test_an_isolated_429_that_names_its_wait_does_not_lower_the_limit() -> None:
    # Issue 31: every 429 halved the limit, once a second; a server refusing a fifth of first
    # attempts with Retry-After took 128 connections down to 2.
    limit = Concurrency(16, cooldown=0.0)
    for _ in range(100):
        for _ in range(4):
            limit.succeeded()
        limit.rate_limited(wait_named=True)
    assert limit.limit == 16 and limit.lowest == 16


def test_most_attempts_refused_is_congestion() -> None:
    limit = Concurrency(16, cooldown=0.0)
    for _ in range(Concurrency.WINDOW // 2):
        limit.succeeded()
        limit.rate_limited(wait_named=True)
    assert limit.limit == 16  # half refused is not most
    limit.rate_limited(wait_named=True)
    assert limit.limit == 8
    # The next cut is judged on attempts made at the new limit: a fresh window.
    for _ in range(Concurrency.WINDOW // 2):
        limit.rate_limited(wait_named=True)
    assert limit.limit == 8
    for _ in range(Concurrency.WINDOW // 2):
        limit.rate_limited(wait_named=True)
    assert limit.limit == 4 and limit.lowest == 4


def test_a_failure_among_answers_is_isolated_and_a_quarter_failing_is_an_outage() -> None:
    # Issue 31: every failed attempt's backoff held its slot, as if the server were down.
    limit = Concurrency(16)
    assert limit.failed()  # a run's first attempt failing: nothing says otherwise
    for _ in range(Concurrency.WINDOW):
        limit.succeeded()
    assert not limit.failed()  # 1 of 32
    for _ in range(6):
        assert not limit.failed()  # 7 of 32
    assert limit.failed()  # 8 of 32: a quarter
    for _ in range(Concurrency.WINDOW):  # answers again: the failures leave the window
        limit.succeeded()
    assert not limit.failed()
    limit.rate_limited(wait_named=True)  # a 429 is no failure
    assert not limit.failed() and limit.limit == 16  # and a failure no congestion


def test_a_429_when_the_quota_is_spent_is_congestion() -> None:
    limit = Concurrency(16, cooldown=0.0)
    limit.rate_limited(wait_named=True, quota_spent=True)
    assert limit.limit == 8


def test_congestion_halves_once_per_cooldown() -> None:
    limit = Concurrency(16, cooldown=60.0)
    for _ in range(3 * Concurrency.WINDOW):
        limit.rate_limited(wait_named=True)  # a wall of refusals, 96 attempts running
    assert limit.limit == 8


def test_the_pacer_says_when_the_quota_is_spent() -> None:
    from evalstream._judge.limits import Pacer

    def said(**left: str) -> dict[str, str]:
        return {f"x-ratelimit-{part}-{kind}": value for kind, n in left.items()
                for part, value in (("remaining", n), ("limit", "10000"), ("reset", "50ms"))}

    async def go() -> list[bool]:
        pacer = Pacer()
        spent = []
        for left in ("2", "1", "0"):
            await pacer.before(100)
            pacer.after(said(requests=left))
            spent.append(pacer.spent(100))
        await asyncio.sleep(0.06)  # the reset it gave has passed: the quota is whole again
        spent.append(pacer.spent(100))
        await pacer.before(100)
        pacer.after(said(requests="9", tokens="900"))
        return [*spent, pacer.spent(100), pacer.spent(1000)]

    assert asyncio.run(go()) == [False, False, True, False, False, True]


def test_a_request_waiting_out_a_429_gives_its_slot_up_and_comes_back_first() -> None:
    async def go() -> list[str]:
        limit = Concurrency(1)
        order: list[str] = []

        async def resting() -> None:
            await limit.acquire()
            await limit.rest(0.05)  # the slot is free meanwhile
            order.append("rested")
            limit.release()

        async def other(name: str, hold: float) -> None:
            await limit.acquire()
            order.append(name)
            await asyncio.sleep(hold)
            limit.release()

        first = asyncio.create_task(resting())
        await asyncio.sleep(0)
        # b takes the free slot and holds it past the rest; c queues behind it, then the
        # rested request comes back ahead of c.
        await asyncio.gather(first, other("b", 0.1), other("c", 0))
        assert limit.held == 0 and limit.most_held == 1
        return order

    assert asyncio.run(go()) == ["b", "rested", "c"]


def test_past_the_bound_a_request_rests_holding_its_slot() -> None:
    async def go() -> list[str]:
        limit = Concurrency(1)
        limit.RESTING = 0
        order: list[str] = []

        async def resting() -> None:
            await limit.acquire()
            await limit.rest(0.05)
            order.append("rested")
            limit.release()

        async def other() -> None:
            await limit.acquire()
            order.append("other")
            limit.release()

        first = asyncio.create_task(resting())
        await asyncio.sleep(0)
        await asyncio.gather(first, other())
        return order

    assert asyncio.run(go()) == ["rested", "other"]


@pytest.mark.parametrize("when", ["resting", "waiting for a slot"])
def test_a_request_cancelled_while_resting_keeps_the_count(when: str) -> None:
    async def go() -> None:
        limit = Concurrency(1)

        async def resting() -> None:  # as live._ask does: the slot is released at the end
            await limit.acquire()
            try:
                await limit.rest(0.02)
            finally:
                limit.release()

        task = asyncio.create_task(resting())
        await asyncio.sleep(0)
        assert limit.held == 0 and limit.resting == 1
        await limit.acquire()  # another request takes the free slot
        if when == "waiting for a slot":
            await asyncio.sleep(0.05)  # the rest is over: it waits in line
            assert limit.resting == 0 and limit.held == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert limit.held == 1 and limit.resting == 0
        limit.release()
        assert limit.held == 0
        await asyncio.wait_for(limit.acquire(), 1.0)

    asyncio.run(go())
