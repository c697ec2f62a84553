"""Staying within a provider's limits: token buckets for ``--rpm``/``--tpm``, and a concurrency
limit that halves on rate-limit answers and grows back one by one (AIMD, as TCP does)."""

from __future__ import annotations

import asyncio
import time
from collections import deque


class TokenBucket:
    """``per_minute`` units a minute, refilled continuously, holding at most ten seconds'
    worth: a burst never takes more than a sixth of the minute's limit at once (providers may
    enforce their per-minute limits over shorter windows).

    A request takes its units before it is sent; one larger than the bucket waits for a full
    bucket and leaves it in debt (the next ones wait until it is paid back).
    """

    BURST_SECONDS = 10.0

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = self.rate * self.BURST_SECONDS
        self.level = self.capacity
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()  # first come, first served

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def take(self, units: float) -> None:
        async with self._lock:
            need = min(units, self.capacity)
            self._refill()
            while self.level < need:
                await asyncio.sleep((need - self.level) / self.rate)
                self._refill()
            self.level -= units  # may go below zero for an oversized request: later ones wait


class Concurrency:
    """At most ``limit`` holders at once; ``limit`` starts at ``maximum``, halves (at most once
    a ``cooldown``) when the server says it is rate limited, and grows by one after every
    ``limit`` successes, back up to ``maximum``."""

    def __init__(self, maximum: int, cooldown: float = 1.0) -> None:
        self.maximum = maximum
        self.limit = maximum
        self.lowest = maximum
        self.held = 0
        self.most_held = 0
        self.cooldown = cooldown
        self._last_cut = -1e9
        self._successes = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self.held < self.limit and not self._waiters:
            self._hold()
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # it was handed a slot it will not use
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def _hold(self) -> None:
        self.held += 1
        self.most_held = max(self.most_held, self.held)

    def release(self) -> None:
        self.held -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.held < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._hold()
                waiter.set_result(None)

    def rate_limited(self) -> None:
        """The server answered 429: halve the limit (not below 1), once per cooldown."""
        now = time.monotonic()
        if now - self._last_cut < self.cooldown:
            return
        self._last_cut = now
        self.limit = max(1, self.limit // 2)
        self.lowest = min(self.lowest, self.limit)
        self._successes = 0

    def succeeded(self) -> None:
        """An answer arrived: after ``limit`` of them in a row, allow one more in flight."""
        if self.limit >= self.maximum:
            return
        self._successes += 1
        if self._successes >= self.limit:
            self._successes = 0
            self.limit += 1
            self._wake()
