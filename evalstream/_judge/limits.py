"""Staying within a provider's limits: token buckets for ``--rpm``/``--tpm``, a concurrency
limit that halves when the server is congested and grows back one by one (AIMD, as TCP
does), and the pace the server's own rate-limit headers set (``Pacer``).

What counts as congestion (issue 31). A 429 used to halve the limit, once a second, whatever
it said: against a server that refuses the first attempt of a fifth of the requests with
``Retry-After: 1`` (a busy provider's isolated 429s), 32 and 128 connections fell to 2 and a
2,000-state run took 74-94 s; now 6-7 s, against 5 s at a fault-free copy (50 ms a request,
``python -m benchmarks judge-faults``, figures in benchmarks/README.md). A 429 that names
its wait speaks of that request: it is waited out (the transport) and is not read as the
whole server being full. The limit halves when the server is congested by one of these
signs:

- most of the last ``WINDOW`` attempts that ended (answers and 429s) were 429s;
- the server's rate-limit headers, as last said, leave less than the requests in flight
  could take (``Pacer.spent``): the account is at its limit, and the 429 says so;
- the 429 names no wait: the server gives the client nothing but the refusal to go by, and
  the old rule (halve) stands.

Rate-limit headers near zero without a 429 cut nothing: ``Pacer`` holds the requests then,
and a cut on top would slow the run long after the quota came back.

A request waiting out a 429's ``Retry-After`` is not in flight: it gives its slot up while it
waits (``Concurrency.rest``) and takes one again ahead of requests not yet sent. Holding the
slot, 20% of requests waiting 1 s each kept 32 connections to 123 requests a second at
most, at 50 ms a request. At most ``RESTING`` requests a connection rest so; beyond that a
request waits holding its slot, as before, so that a server asking every request to wait
long cannot make the run hold more than ``(1 + RESTING) * --max-connections`` requests.
A failed attempt (a 5xx, a timeout, a cut connection, a 200 that is not JSON) makes the
same distinction. An isolated failure is not an outage: its request gives its slot up for
its backoff (0.5 s, doubling), as a 429's wait does, within the same ``RESTING`` bound.
With a fifth of first attempts a 429 and 2% a 500, at 50 ms a request, 8 / 32 / 128
connections ran at 0.75 / 0.70 / 0.67x of a fault-free run holding it, 0.81 / 0.84 / 0.88x
without. The server is failing (an outage) when at least a quarter (``OUTAGE_SHARE``) of
the last ``WINDOW`` attempts that ended (answers, 429s and failures; of all of them, before
there are ``WINDOW``) failed: then a failed request backs off holding its slot, so that
``--max-connections`` requests use up their attempts at a time, not five times as many,
each to end unscored. A run's first attempts decide on few: the first attempt of a run that
fails holds its slot (as every failure did before). A 503's ``Retry-After`` (the server
says it is unavailable) is waited out holding the slot, always, and so is the backoff after
a 429 that names no wait (congestion, not a failure of its request)."""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from datetime import datetime
from typing import Any


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
    a ``cooldown``) when the server is congested (the module's rule), and grows by one after
    every ``limit`` answers, back up to ``maximum``."""

    # Attempts whose share of 429s says congestion: most of 32. A fifth of attempts refused
    # at random gives 17 of 32 once in 30,000 windows (binomial); 16 would give it once in
    # 700, so a long run of isolated 429s would still be cut now and then.
    WINDOW = 32
    # Requests a connection that may wait out a Retry-After without a slot: keeping every
    # connection busy while a fifth of requests wait 1 s at 50 ms a request takes
    # 0.2 * (C / 0.05 s) * 1 s = 4C of them.
    RESTING = 4
    # Failed attempts whose share of the last WINDOW says an outage: a quarter, 8 of 32.
    # 2% of attempts failing at random gives 8 of 32 once in 5.7 million windows (binomial);
    # 10%, once in 86; a server failing every request, from the first failure on.
    OUTAGE_SHARE = 0.25

    def __init__(self, maximum: int, cooldown: float = 1.0) -> None:
        self.maximum = maximum
        self.limit = maximum
        self.lowest = maximum
        self.held = 0
        self.most_held = 0
        self.resting = 0  # requests waiting out a Retry-After without a slot
        self.cooldown = cooldown
        self._last_cut = -1e9
        self._successes = 0
        self._recent: deque[int] = deque()  # how the last attempts ended (_ANSWERED...)
        self._refusals = 0  # of them, 429s
        self._failures = 0  # of them, failures
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

    async def rest(self, seconds: float) -> None:
        """Wait ``seconds`` (a 429's ``Retry-After``) without holding the caller's slot, then
        take one again ahead of requests not yet sent; with ``RESTING * maximum`` requests
        resting already, wait holding it. The caller holds a slot before and after, even
        when cancelled."""
        if self.resting >= self.RESTING * self.maximum:
            await asyncio.sleep(seconds)
            return
        self.resting += 1
        self.release()
        try:
            await asyncio.sleep(seconds)
        except BaseException:
            self._hold()  # cancelled: held again at once, for the caller to give back
            raise
        finally:
            self.resting -= 1
        if self.held < self.limit:  # first in line, before the requests not yet sent
            self._hold()
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.appendleft(waiter)
        try:
            await waiter
        except BaseException:
            if not waiter.done() or waiter.cancelled():
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                self._hold()  # as above: the caller gives it back
            raise

    def rate_limited(self, wait_named: bool = False, quota_spent: bool = False) -> None:
        """The server answered 429: halve the limit (not below 1, once per cooldown) if that
        says congestion: no wait named (``wait_named``), the quota the server's headers said
        is spent (``quota_spent``), or most of the last ``WINDOW`` attempts refused."""
        self._ended(_REFUSED)
        crowded = len(self._recent) == self.WINDOW and 2 * self._refusals > self.WINDOW
        if wait_named and not quota_spent and not crowded:
            return  # an isolated 429: its request waits as told, the rest go on
        now = time.monotonic()
        if now - self._last_cut < self.cooldown:
            return
        self._last_cut = now
        self.limit = max(1, self.limit // 2)
        self.lowest = min(self.lowest, self.limit)
        self._successes = 0
        self._recent.clear()  # the next cut is judged on attempts made at the new limit
        self._refusals = self._failures = 0

    def succeeded(self) -> None:
        """An answer arrived: after ``limit`` of them in a row, allow one more in flight."""
        self._ended(_ANSWERED)
        if self.limit >= self.maximum:
            return
        self._successes += 1
        if self._successes >= self.limit:
            self._successes = 0
            self.limit += 1
            self._wake()

    def failed(self) -> bool:
        """An attempt failed (a 5xx, a timeout, a cut connection, a 200 that is not JSON):
        whether the server is failing, an outage (the module's rule), and its request should
        back off holding its slot; False: an isolated failure, whose backoff gives it up."""
        self._ended(_FAILED)
        return self._failures >= self.OUTAGE_SHARE * len(self._recent)

    def _ended(self, how: int) -> None:
        """Count an attempt's end in the window of the last ``WINDOW``."""
        if len(self._recent) == self.WINDOW:
            gone = self._recent.popleft()
            self._refusals -= gone == _REFUSED
            self._failures -= gone == _FAILED
        self._recent.append(how)
        self._refusals += how == _REFUSED
        self._failures += how == _FAILED


_ANSWERED, _REFUSED, _FAILED = 0, 1, 2  # how an attempt ended, in Concurrency's window


class Pacer:
    """Paces requests by the quota the server says it has left (issue 27): the rate-limit
    headers of every answer (a refusal's wait is its ``Retry-After``), OpenAI's
    (``x-ratelimit-remaining-requests``, ``-limit-``, ``-reset-``: durations such as ``1s``,
    ``6m0s``, ``20ms``; the same for ``tokens``, which Azure, LiteLLM, vLLM and most
    compatible servers copy) and Anthropic's
    (``anthropic-ratelimit-requests-remaining``, ``-limit``, ``-reset``: an RFC 3339 time).

    Without it a run learnt its quota from 429s only: under a real quota (60 requests a
    minute) 16 requests in flight met a wall of refusals, each a failed attempt. Now the
    first request goes alone (its answer says the quota; one round trip, once a run), and
    a request is held while the server said it has less than one request (or fewer tokens
    than the request's estimate) left: for as long as the quota takes to grow back by what
    is missing (the reset time over what was used: a quota refilled continuously, as
    OpenAI's and Anthropic's are, gives that back exactly; a fixed window is paced by its
    429's ``Retry-After`` instead). What the server said is taken less the requests in
    flight, which its count may not hold yet, and forgotten once the reset it gave has passed
    (the quota is whole again; answers may stop saying). A wait is never longer than
    ``longest``."""

    def __init__(self, longest: float = 120.0) -> None:
        self.longest = longest
        self.quota: dict[str, float] = {}  # "requests"/"tokens" -> units left, as we count
        self.per_unit: dict[str, float] = {}  # seconds the quota takes to grow back by one
        self.until: dict[str, float] = {}  # when the server said the quota is whole again
        self.in_flight = 0
        self.waited = 0.0  # seconds held, in all (the report)
        self._heard = asyncio.Event()  # the first answer's headers (or its failure) came
        self._probing = False
        self._lock = asyncio.Lock()

    async def before(self, tokens: int) -> None:
        """Wait until the server's quota, as last said, has room for one request of
        ``tokens``; count it as sent."""
        if not self._heard.is_set():
            if self._probing:
                await self._heard.wait()
            else:
                self._probing = True  # this one goes alone: its answer says the quota
        async with self._lock:
            now = time.monotonic()
            for kind, units in (("requests", 1), ("tokens", tokens)):
                if self.until.get(kind, now) < now:
                    del self.quota[kind], self.until[kind]  # whole again: what was said is old
                left = self.quota.get(kind)
                if left is None or not units:
                    continue
                if left < units:
                    wait = min(self.per_unit[kind] * (units - left), self.longest)
                    self.waited += wait
                    await asyncio.sleep(wait)
                    left = units
                self.quota[kind] = left - units
            self.in_flight += 1

    def spent(self, tokens: int) -> bool:
        """Whether the quota the server last said (its reset not passed) leaves less than one
        request, or fewer tokens than ``tokens``, once the requests in flight and those sent
        since are counted: the account is at its limit."""
        now = time.monotonic()
        need = {"requests": 1, "tokens": tokens}
        return any(self.until.get(kind, now) >= now and left < need[kind]
                   for kind, left in self.quota.items())

    def after(self, headers: Any) -> None:
        """An attempt ended: ``headers`` of its answer, or None (no answer, or a refusal)."""
        self.in_flight -= 1
        if headers is not None:
            for kind in ("requests", "tokens"):
                said = quota_said(headers, kind)
                if said is not None:
                    left, per_unit, reset = said
                    self.quota[kind] = left - self.in_flight
                    self.per_unit[kind] = per_unit
                    self.until[kind] = time.monotonic() + reset
        self._heard.set()


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def quota_said(headers: Any, kind: str) -> tuple[float, float, float] | None:
    """(units left, seconds a unit takes to grow back, seconds until the quota is whole) that
    the rate-limit headers of an answer say of ``kind`` (``requests`` or ``tokens``), or None
    when they say nothing that can be read."""
    for remaining_name, limit_name, reset_name in (
            (f"x-ratelimit-remaining-{kind}", f"x-ratelimit-limit-{kind}",
             f"x-ratelimit-reset-{kind}"),
            (f"anthropic-ratelimit-{kind}-remaining", f"anthropic-ratelimit-{kind}-limit",
             f"anthropic-ratelimit-{kind}-reset")):
        remaining = _number(headers.get(remaining_name))
        reset = _reset_seconds(headers.get(reset_name))
        if remaining is None or reset is None:
            continue
        limit = _number(headers.get(limit_name))
        used = (limit - remaining) if limit is not None and limit > remaining else 1.0
        return remaining, reset / used, reset
    return None


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) and number >= 0 else None


def _reset_seconds(value: str | None) -> float | None:
    """A reset as OpenAI writes it (``1s``, ``6m0s``, ``20ms``, or plain seconds) or as
    Anthropic does (an RFC 3339 time): seconds from now, or None."""
    if not value:
        return None
    value = value.strip()
    plain = _number(value)
    if plain is not None:
        return plain
    parts = _DURATION.findall(value)
    if parts and "".join(n + u for n, u in parts) == value:
        return sum(float(n) * _SECONDS[u] for n, u in parts)
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())
